/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * mtable.h - a source table mapped from user space: in place (the tables are
 * mmapable arrays), read without copying. Never written from user space:
 * the program changes a slot for xdp-rl (bpf/admin.h, user/admin.h).
 * Bottom layer: depends on nothing else of xdp-rl but the shared header.
 */
#ifndef XDP_RL_MTABLE_H
#define XDP_RL_MTABLE_H

#include <stddef.h>
#include "xdp_rl.h"

struct mtable {
	void *mem;
	size_t len; /* mapped bytes */
	__u32 nbuckets;
	__u32 bucket_size; /* XDP_RL_BUCKET_SLOTS slots */
	__u32 slot_size;
	__u32 layers; /* windows per slot */
	int v6;
	__u64 seed;
};

/*
 * Map the table in @fd (an IPv6 one if @v6) whose slots have room for
 * @layers windows, hashed with @seed. Returns 0, or -1 with errno set.
 */
int mt_map(struct mtable *t, int fd, int v6, __u32 layers, __u64 seed);
void mt_unmap(struct mtable *t);

/* Slot @i (0 .. nbuckets * XDP_RL_BUCKET_SLOTS - 1). */
struct xdp_rl_slot *mt_slot(const struct mtable *t, __u64 i);
__u64 mt_nslots(const struct mtable *t);
/*
 * The key a live slot holds: k[0] for IPv4 tables, and the limit set it is
 * charged under in *lsid; 0 if the slot is not live.
 */
int mt_key(const struct mtable *t, const struct xdp_rl_slot *s, __u32 k[4], __u32 *lsid);
struct xdp_rl_state *mt_windows(const struct mtable *t, struct xdp_rl_slot *s);

/* The live slot of @k under limit set @lsid (as the datapath keys it), or NULL. */
struct xdp_rl_slot *mt_find(const struct mtable *t, const __u32 k[4], __u32 lsid);
/* The index of slot @s in @t (what the program calls it: bucket * XDP_RL_BUCKET_SLOTS + slot). */
__u64 mt_index(const struct mtable *t, const struct xdp_rl_slot *s);
/* A copy of @s's windows (t->layers of them), read whole, each word atomically. */
void mt_read_windows(const struct mtable *t, struct xdp_rl_slot *s, struct xdp_rl_state *w);

#endif
