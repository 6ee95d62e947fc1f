/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * table.h - the source tables from user space: mapped in place (they are
 * mmapable arrays), read without copying, and changed only with the same
 * atomic steps the datapath takes (bpf/table.h, bpf/window.h).
 */
#ifndef XDP_RL_USER_TABLE_H
#define XDP_RL_USER_TABLE_H

#include <stddef.h>
#include "xdp_rl.h"

struct table {
	void *mem;
	size_t len;		/* mapped bytes */
	__u32 nbuckets;
	__u32 bucket_size;	/* XDP_RL_BUCKET_SLOTS slots */
	__u32 slot_size;
	__u32 layers;		/* windows per slot */
	int v6;
	__u64 seed;
};

/*
 * Map the table in @fd (an IPv6 one if @v6) whose slots have room for
 * @layers windows, hashed with @seed. Returns 0, or -1 with errno set.
 */
int table_map(struct table *t, int fd, int v6, __u32 layers, __u64 seed);
void table_unmap(struct table *t);

/* Slot @i (0 .. nbuckets * XDP_RL_BUCKET_SLOTS - 1). */
struct xdp_rl_slot *table_slot(const struct table *t, __u64 i);
__u64 table_nslots(const struct table *t);
/* The key a live slot holds: k[0] for IPv4 tables; 0 if the slot is not live. */
int slot_key(const struct table *t, const struct xdp_rl_slot *s, __u32 k[4]);
struct xdp_rl_state *slot_windows(const struct table *t, struct xdp_rl_slot *s);

/* The live slot of @k (as the datapath keys it), or NULL. */
struct xdp_rl_slot *table_find(const struct table *t, const __u32 k[4]);

/* End every window of @s now, as the datapath does when a slot changes hands. */
void slot_close_windows(const struct table *t, struct xdp_rl_slot *s);
/* ... or those of layers [@from, @to) only. */
void slot_close_layers(const struct table *t, struct xdp_rl_slot *s, __u32 from, __u32 to);

#endif
