/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * hot.h - drops of a window with no budget left, counted without a write to
 * memory that other CPUs write.
 *
 * Once a window's count has passed its limit, no packet can pass in it any
 * more, whatever is added: so the packet is dropped on a read of the count
 * alone (window_exhausted, layers_exhausted), and only where its drop is
 * counted is left to choose. What each packet decides is what the full
 * charge would have decided (the count only grows, until the window ends).
 * The packet that finds the count at the limit exactly is charged in full:
 * it takes the window over its limit, the one packet that does (events.h).
 *
 * The first cfg_hot_after drops (include/xdp_rl.h) are added to the count
 * itself (window_drop): the atomic add a pass makes, on the line the read
 * brought in, so that with many sources dropping a drop touches no line a
 * pass does not. A raised limit then finds them in the count, as a window
 * that counts every packet offered would (Redis's INCR before the test).
 *
 * Past that the window is a flood, and a flood from one source comes in on
 * every RX queue: every CPU adding to one cache line, which bounces between
 * them on every packet. Its drops are counted in this CPU's entry of the
 * `hot` array instead (hot_drop). The entry moves them to the window's word
 * in `drops` (one atomic add) every XDP_RL_HOT_FLUSH drops, or when a drop
 * of another window needs it. `get` and `top` add the three together
 * (user/sources.c).
 *
 * With an LRU table (lru.h) a key's drops word is in its element, and its
 * windows are called by a hash of the key in the hot entries (entry_hot):
 * `hot_key` keeps the key beside each entry, for the flush to look the
 * element up.
 *
 * A flush adds to the word only while the window it counts for is still
 * the one open (its generation is the window's now), on either table, and
 * drops the drops of a window over: an entry may sit idle on a CPU for
 * any number of windows. What remains: an entry idle until its slot's
 * window comes round to the same 16-bit generation (65 536 windows later)
 * adds its drops (fewer than XDP_RL_HOT_FLUSH) to that window's; only the
 * drops shown, never a verdict.
 */
#ifndef XDP_RL_HOT_H
#define XDP_RL_HOT_H

#include "maps.h"
#include "window.h"
#include "table.h"

/*
 * LRU tables: the drops word of layer @layer of the element of the key
 * that hot_key entry @e keeps, in @map, and the generation of its window
 * now in *cur; NULL if the key has no element.
 */
static __always_inline __u64 *hot_lru_word(void *map, const int v6, __u32 e, __u32 layer,
					   __u64 *cur)
{
	struct xdp_rl_hot_key *hk = bpf_map_lookup_elem(&hot_key, &e);
	void *el;

	if (!hk || layer >= cfg_layers)
		return NULL;
	el = bpf_map_lookup_elem(map, hk->key);
	if (!el)
		return NULL;
	*cur = xdp_rl_gen_of_count(READ_ONCE(lru_states(el, v6)[layer & 3].count_gen));
	return lru_drops(el, v6, layer);
}

/*
 * Add @n drops of window generation @gen to @word while that window is the
 * one open (@cur, its generation now); else they are of a window over, and
 * dropped. A word of another generation starts again with them.
 */
static __always_inline int hot_flush_now(__u64 *word, __u64 gen, __u64 cur, __u64 n)
{
	__u64 w, next;
	int i;

	if (!word || cur != gen)
		return 0;
	for (i = 0; i < WINDOW_TRIES; i++) {
		w = READ_ONCE(*word);
		if (w >> XDP_RL_DROPS_BITS == gen) {
			next = w + n;
			if ((next & XDP_RL_DROPS_MASK) < (w & XDP_RL_DROPS_MASK))
				return 0; /* never wraps into the generation */
		} else {
			next = (gen << XDP_RL_DROPS_BITS) | (n & XDP_RL_DROPS_MASK);
		}
		if (__sync_val_compare_and_swap(word, w, next) == w)
			return 0;
	}
	return 0;
}

/*
 * The bucket table: the window of layer @layer of slot @index in @map (a
 * constant at each call site, so that the lookup is inlined), its
 * generation now in *cur.
 */
static __always_inline void hot_slot_gen(void *map, const int v6, __u32 index, __u32 layer,
					 __u64 *cur)
{
	struct xdp_rl_slot *s = buckets_slot(map, v6, index);

	if (s && layer < cfg_layers)
		*cur = xdp_rl_gen_of_count(READ_ONCE(slot_states(s, v6)[layer & 3].count_gen));
}

/*
 * Add @n drops of window @id to its word: while that window is the one
 * open in its state (its generation now); else they are of a window over,
 * and dropped, however long the entry kept them (an idle entry flushed
 * thousands of windows later must not overwrite the window open then).
 * The word of an LRU key is in its element, the bucket table's and the
 * shared budgets' in `drops`. @e: the hot entry they were counted in (an
 * LRU table's key is in hot_key there). Global, so that the verifier
 * checks it once.
 */
__noinline int hot_flush(__u64 id, __u64 n, __u32 e)
{
	__u32 kind = (id >> 48) - 1, t = kind / XDP_RL_MAX_LAYERS, layer = kind % XDP_RL_MAX_LAYERS;
	__u32 index = (id >> 16) & 0xffffffff, k;
	__u64 gen = id & 0xffff, cur = ~0ULL;
	struct xdp_rl_state *sh;
	__u64 *word = NULL;

	if (!id || t > T_SHARED)
		return 0;
	if (t == T_SHARED) {
		k = drops_index(t, index, layer, XDP_RL_MAX_LAYERS);
		word = bpf_map_lookup_elem(&drops, &k);
		sh = bpf_map_lookup_elem(&shared, &index);
		if (sh)
			cur = xdp_rl_gen_of_count(READ_ONCE(sh[layer & 3].count_gen));
	} else if (cfg_table == XDP_RL_TABLE_LRU) {
		switch (t) {
		case T_SRC4: word = hot_lru_word(&src4, WIDE(0), e, layer, &cur); break;
		case T_SRC6: word = hot_lru_word(&src6, 1, e, layer, &cur); break;
		case T_AGG4: word = hot_lru_word(&agg4, WIDE(0), e, layer, &cur); break;
		case T_AGG6: word = hot_lru_word(&agg6, 1, e, layer, &cur); break;
		}
	} else {
		k = drops_index(t, index, layer, cfg_layers);
		word = bpf_map_lookup_elem(&drops, &k);
		switch (t) {
		case T_SRC4: hot_slot_gen(&src4, WIDE(0), index, layer, &cur); break;
		case T_SRC6: hot_slot_gen(&src6, 1, index, layer, &cur); break;
		case T_AGG4: hot_slot_gen(&agg4, WIDE(0), index, layer, &cur); break;
		case T_AGG6: hot_slot_gen(&agg6, 1, index, layer, &cur); break;
		}
	}
	return hot_flush_now(word, gen, cur, n);
}

/*
 * A drop of @inc (a packet, or its bytes) of window @id, counted in this
 * CPU's entry. @pos: the key's position in an LRU table (its key goes to
 * hot_key beside the entry), or NULL.
 */
static __always_inline void hot_drop(__u64 id, __u64 inc, const struct table_pos *pos)
{
	__u32 e = xdp_rl_hot_entry(id, cfg_hot_mask);
	struct xdp_rl_hot *h = bpf_map_lookup_elem(&hot, &e);
	struct xdp_rl_hot_key *hk;
	int i;

	if (!h)
		return;
	if (h->id == id) {
		h->drops += inc;
		if (++h->n < XDP_RL_HOT_FLUSH)
			return;
		hot_flush(id, h->drops, e);
		h->drops = 0;
		h->n = 0;
		return;
	}
	if (h->id && h->drops)
		hot_flush(h->id, h->drops, e);
	if (pos) {
		hk = bpf_map_lookup_elem(&hot_key, &e);
		if (hk)
			for (i = 0; i < 6; i++)
				hk->key[i] = pos->lkey[i];
	}
	h->id = id;
	h->drops = inc;
	h->n = 1;
}

/*
 * Whether the window in @s is open and over @limit already: its
 * generation in *gen if so (the packet is refused; nothing is written).
 * A window that is over, being opened, or under its limit: 0.
 */
static __always_inline int window_exhausted(struct xdp_rl_state *s, __u64 now, __u64 window_ns,
					    __u64 limit, __u64 *gen)
{
	__u64 e = READ_ONCE(s->start_gen), c;

	if (xdp_rl_window_over(e, now, window_ns))
		return 0;
	c = READ_ONCE(s->count_gen);
	if (xdp_rl_gen_of_count(c) != xdp_rl_gen_of_start(e) || xdp_rl_count(c) <= limit)
		return 0;
	*gen = xdp_rl_gen_of_count(c);
	return 1;
}

#endif /* XDP_RL_HOT_H */
