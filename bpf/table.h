/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * table.h - the source tables, as the datapath sees them: where a key's
 * windows are, whether it has any, giving it some, and reading again after
 * a charge that they are still its own. Two tables are behind it, picked
 * at load (cfg_table, a constant: the verifier prunes the other):
 *
 *   buckets.h  xdp-rl's bucket table (the default): a key lives in a slot
 *              of one of two buckets of an array, found with one bucket
 *              read; a slot changes hands under an insert lock, in steps;
 *   lru.h      the kernel's LRU hash: a key lives in an element of its own,
 *              found by the kernel's lookup; the kernel gives an element to
 *              another key when the table is full.
 *
 * Both hold the same state (include/xdp_rl.h): a key, when its source was
 * last seen, and a window per layer; and both keep the same promise,
 * argued beside each: a packet passes only on a charge counted in a window
 * of its own key. The interface:
 *
 *   table_pos    where a key goes (its tag and buckets; its LRU key)
 *   table_find   whether it has an entry (a slot, an element): a position
 *   table_insert give it one (xdp_rl.bpf.c, a global function)
 *   table_entry  the entry at a position, as a pointer
 *   entry_states its windows
 *   entry_holds  whether it still holds the key (after a charge)
 *   entry_touch  note that its source was seen
 *   entry_remote where its fleet words are (NULL: the `remote` map's)
 *   entry_fresh  its fresh windows (LRU), for window_hit_slow
 *   entry_hot    what the per-CPU `hot` entries call its windows (hot.h)
 */
#ifndef XDP_RL_TABLE_H
#define XDP_RL_TABLE_H

#include "maps.h"
#include "window.h"
#include "pos.h"
#include "buckets.h"
#include "lru.h"

/*
 * Give @key a slot in table @t, unless it has one. Returns where (the slot
 * index with its insert flags, pos.h), or -1. Global, defined in
 * xdp_rl.bpf.c, so that the verifier checks it once, not once for every
 * path that reaches an insert; one per layout of the IPv4 tables (WIDE).
 */
__noinline long table_insert_narrow(__u32 t, const struct table_key *key,
				    const struct table_pos *pos, const struct xdp_rl_stats *st);
__noinline long table_insert_wide(__u32 t, const struct table_key *key, const struct table_pos *pos,
				  const struct xdp_rl_stats *st);

static __always_inline long table_insert(__u32 t, const struct table_key *key,
					 const struct table_pos *pos, const struct xdp_rl_stats *st)
{
	return WIDE(0) ? table_insert_wide(t, key, pos, st) : table_insert_narrow(t, key, pos, st);
}

static __always_inline int table_lru(void)
{
	return cfg_table == XDP_RL_TABLE_LRU;
}

/* Where @key, charged under limit set @lsid, goes in table @t (@v6: an IPv6 table). */
static __always_inline void table_pos(struct table_pos *pos, const struct table_key *key,
				      const int v6, __u32 lsid, __u32 t)
{
	if (table_lru())
		lru_pos(pos, key, v6, lsid);
	else
		buckets_pos(pos, key, v6, lsid, cfg_buckets[t & 3], cfg_seed);
}

/* Whether @key (at @pos) has an entry in @map: its position, or -1. */
static __always_inline long table_find(void *map, const int v6, const struct table_key *key,
				       const struct table_pos *pos)
{
	if (table_lru())
		return bpf_map_lookup_elem(map, pos->lkey) ? 0 : -1;
	return buckets_find(map, v6, key, pos);
}

/*
 * The entries, for a table kind @lru known where they are compiled (a
 * constant: charge() is compiled once per table, so that each copy holds
 * on the stack only what its table needs), or table_lru().
 */

/* The entry at position @at of the key at @pos in @map, or NULL (LRU: none now). */
static __always_inline void *table_entry(void *map, const int v6, const struct table_pos *pos,
					 long at, const int lru)
{
	if (lru)
		return bpf_map_lookup_elem(map, pos->lkey);
	return buckets_slot(map, v6, at);
}

static __always_inline struct xdp_rl_state *entry_states(void *e, const int v6, const int lru)
{
	return lru ? lru_states(e, v6) : slot_states(e, v6);
}

/* Whether entry @e still holds the key at @pos: read again after a charge. */
static __always_inline int entry_holds(void *e, const int v6, const struct table_pos *pos,
				       const int lru)
{
	if (lru)
		return lru_holds(e, v6, pos);
	return READ_ONCE(((struct xdp_rl_slot *)e)->tag) == pos->tag;
}

static __always_inline void entry_touch(void *e, const int v6, __u64 tick, const int lru)
{
	if (lru)
		lru_touch(e, v6, tick);
	else
		slot_touch(e, tick);
}

static __always_inline __u64 *entry_remote(void *e, const int v6, const int lru)
{
	return lru ? lru_remote(e, v6) : NULL;
}

/* The fresh windows of the key at @pos in table @t into @fresh: LRU only (NULL otherwise). */
static __always_inline __u64 *entry_fresh(const struct table_pos *pos, const int v6, __u32 t,
					  __u64 *fresh)
{
	if (!table_lru())
		return NULL;
	lru_fresh(pos, v6, t, fresh);
	return fresh;
}

/*
 * What the `hot` entries call the key's windows (xdp_rl_hot_id's index):
 * its slot index, or (LRU) 32 bits of its fresh windows' tag.
 */
static __always_inline __u32 entry_hot(long at, const __u64 *fresh, const int lru)
{
	return lru && fresh ? xdp_rl_lru_hot_index(fresh[1]) : at_index(at);
}

#endif /* XDP_RL_TABLE_H */
