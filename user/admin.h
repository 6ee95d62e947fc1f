/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * admin.h - changes to a limiter's windows, made by its program: user space
 * never writes a window or a slot, it asks the program's admin entry point
 * (bpf/admin.h), which proves in the same atomic step that a slot still
 * holds the key it means, and moves windows only forward.
 */
#ifndef XDP_RL_ADMIN_H
#define XDP_RL_ADMIN_H

#include "limiter.h"

/* Run one request (struct xdp_rl_admin); its answer is in rq->result. 0, or -1 with errno. */
int admin_run(const struct limiter *l, struct xdp_rl_admin *rq);

/*
 * Times a request the program found busy (XDP_RL_ADMIN_EBUSY: a window
 * kept changing under traffic) is asked, a millisecond apart.
 */
#define ADMIN_ASKS 200

/*
 * The requests below fail with errno EBUSY (still busy after ADMIN_ASKS),
 * EOVERFLOW (a charge past a count's ceiling), ENOSPC (no slot could be had)
 * or what the kernel said; nothing is left changed. admin_strerror() says
 * which in words.
 */
const char *admin_strerror(int e);

/*
 * The windows of layers [@from, @to) of key @k under limit set @lsid in the
 * table pinned as @id (PIN_SRC4 .. PIN_AGG6), or of the --shared rule @id
 * when @id is -1 - @rule_id: start them afresh, empty (@count 0) or
 * holding @count from now (@lay: the layers' lengths). Returns 1 done, 0
 * no such key, -1 failed (errno).
 */
int admin_reset(const struct limiter *l, int id, const __u32 k[4], __u32 lsid, __u32 from, __u32 to,
		__u64 count, const struct xdp_rl_layer *lay);
/* The same, for the budget of --shared rule @rule_id. */
int admin_reset_shared(const struct limiter *l, __u32 rule_id, __u32 from, __u32 to, __u64 count,
		       const struct xdp_rl_layer *lay);
/* Charge @count to those windows without a limit check (a key without a slot gets one). */
int admin_charge(const struct limiter *l, int id, const __u32 k[4], __u32 lsid, __u32 from,
		 __u32 to, __u64 count, const struct xdp_rl_layer *lay);
int admin_charge_shared(const struct limiter *l, __u32 rule_id, __u32 from, __u32 to, __u64 count,
			const struct xdp_rl_layer *lay);
/*
 * Close layers [@from, @to) of every key in the table pinned as @id; adds the
 * live slots it closed to *closed. 0, or -1 with errno.
 */
int admin_close_table(const struct limiter *l, int id, __u32 from, __u32 to, __u64 *closed);
/*
 * The fleet's share of window layer @layer of key @k under limit set @lsid
 * in the table pinned as @id: set to @word, a word as include/xdp_rl.h's
 * `remote` words are (the window's generation on top, the count below).
 * Either table: the bucket table's word in the `remote` map, an LRU
 * element's own word. Returns 1 done, 0 no such key, -1 failed (errno).
 */
int admin_remote(const struct limiter *l, int id, const __u32 k[4], __u32 lsid, __u32 layer,
		 __u64 word);

#endif
