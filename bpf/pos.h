/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * pos.h - what both source tables (buckets.h, lru.h) and their interface
 * (table.h) say of a key: the key, where it goes, and where its entry is.
 */
#ifndef XDP_RL_POS_H
#define XDP_RL_POS_H

#include "maps.h"

/* A key as the tables take it: k[0] in IPv4 tables, as in the packet. */
struct table_key {
	__u32 k[4];
};

/* Where a key goes in a table, and the time of the packet looking. */
struct table_pos {
	union {
		struct {	      /* the bucket table */
			__u64 tag;    /* the key's tag, LIVE */
			__u32 b1, b2; /* its buckets */
			__u32 lock;   /* its insert lock */
			__u32 pad;    /* 0: a global function's argument is read whole */
		};
		/* An LRU table: the key (struct xdp_rl_lru_key4 or 6), then 0. */
		__u32 lkey[6];
	};
	__u64 now;  /* the window clock */
	__u64 tick; /* jiffies, for when the source was seen */
};

/*
 * Where a key's entry is, as table_find and table_insert give it (a number,
 * so that the paths that find an entry join with one verifier state): the
 * bucket table's slot index, bucket * XDP_RL_BUCKET_SLOTS + slot, in the
 * low 32 bits (0 for an LRU table, whose elements the kernel finds by
 * key), and above them what an insert did; -1 if the key has no entry.
 * Read it with the accessors below.
 */
#define INSERT_NEW     (1L << 40) /* the key was given an entry */
#define INSERT_EVICTED (1L << 41) /* ... that held an open window of another */
#define INSERT_WHERE   0xffffffffL

/* The slot's index in its table. */
static __always_inline __u32 at_index(long at)
{
	return at & INSERT_WHERE;
}

/* Whether the insert gave the key an entry of its own (it had none). */
static __always_inline int at_inserted(long at)
{
	return !!(at & INSERT_NEW);
}

/* Whether that entry held another key (an eviction). */
static __always_inline int at_evicted(long at)
{
	return !!(at & INSERT_EVICTED);
}

/* The insert flags of @at, to carry over to another index. */
static __always_inline long at_flags(long at)
{
	return at & ~INSERT_WHERE;
}

#endif /* XDP_RL_POS_H */
