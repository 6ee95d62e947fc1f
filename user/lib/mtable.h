/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * mtable.h - a source table read from user space, either kind: the bucket
 * table mapped in place (it is an mmapable array) and read without
 * copying; an LRU table (an LRU hash, which cannot be mapped) read through
 * the kernel, a key at a time or in batches. Never written from user
 * space: the program changes an entry for xdp-rl (bpf/admin.h,
 * user/admin.h). Bottom layer: depends on nothing else of xdp-rl but the
 * shared header.
 */
#ifndef XDP_RL_MTABLE_H
#define XDP_RL_MTABLE_H

#include <stddef.h>
#include "xdp_rl.h"

struct mtable {
	int lru; /* an LRU table: the fields below mem..slot_size are unused */
	int fd;
	void *mem;
	size_t len; /* mapped bytes */
	__u32 nbuckets;
	__u32 bucket_size; /* XDP_RL_BUCKET_SLOTS slots */
	__u32 slot_size;
	__u32 layers; /* windows per entry */
	int wide;     /* 16-byte keys (xdp_rl_wide): IPv6, or keys with a port */
	__u32 table;  /* enum xdp_rl_table */
	__u64 seed;
	__u32 entries;	  /* LRU: the most elements it holds */
	__u32 value_size; /* LRU */
};

/*
 * Open the table in @fd, table @table (enum xdp_rl_table: src6 and agg6
 * hold IPv6 keys) whose entries have room for @layers windows, hashed with
 * @seed, keyed as @key says (enum xdp_rl_key_kind): a bucket table is
 * mapped, an LRU table checked. Returns 0, or -1 with errno set (EPROTO:
 * not a table this xdp-rl made).
 */
int mt_map(struct mtable *t, int fd, __u32 table, __u32 layers, __u64 seed, __u32 key);
void mt_unmap(struct mtable *t);

/* One key's entry, copied out of the table. */
struct mt_entry {
	__u32 k[4]; /* the key as the datapath keys it (k[0], and k[1] if wide, for IPv4) */
	__u32 lsid; /* the limit set it is charged under */
	struct xdp_rl_state w[XDP_RL_MAX_LAYERS]; /* t->layers of them */
	__u64 seen; /* struct xdp_rl_slot's seen: the tick << 16, ... */
	/*
	 * What the program calls its windows in hot ids and drop words: the
	 * slot's index (bucket * XDP_RL_BUCKET_SLOTS + slot), or for an LRU
	 * element its hot index (include/xdp_rl.h).
	 */
	__u64 id;
	/* LRU: the element's own drop, fleet and ban words (the bucket table's are in maps). */
	int has_words;
	__u64 drops[XDP_RL_MAX_LAYERS];
	__u64 remote[XDP_RL_MAX_LAYERS];
	__u64 bans[XDP_RL_MAX_LAYERS];
};

/*
 * Call @fn for each key in the table (each read once, a bucket table's
 * slots in order, an LRU table's elements as the kernel walks them). 0, 1
 * if @fn asked to stop (returned non-zero), -1 if the table could not be
 * read (errno).
 */
typedef int (*mt_fn)(const struct mt_entry *e, void *ctx);
int mt_foreach(const struct mtable *t, mt_fn fn, void *ctx);

/* The entry of @k under limit set @lsid (as the datapath keys it) into @e: 1, 0 if none. */
int mt_get(const struct mtable *t, const __u32 k[4], __u32 lsid, struct mt_entry *e);

/* How many keys the table holds at most: its slots, or its elements. */
__u64 mt_capacity(const struct mtable *t);

/* ---- The bucket table's slots, in place ------------------------------------------- */

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
