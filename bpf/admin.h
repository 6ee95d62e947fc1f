/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * admin.h - what user space asks of the program: `reset`, `reset --count`,
 * `charge`, and closing windows that no limit uses any more. User space
 * never writes a window or a slot itself: it runs the program's `admin`
 * entry point with BPF_PROG_TEST_RUN, one request per run (struct
 * xdp_rl_admin, in the frame), so that every change goes through the same
 * atomic steps as a packet's, in the kernel, where it cannot be preempted
 * half way.
 *
 * A key's windows are changed only under a proof that the slot still holds
 * that key, made in the same atomic step as taking it: under the key's
 * insert lock (no other CPU inserts the key meanwhile), the slot's tag is
 * swapped from the key's to BUSY (table.h's step 1). While it is BUSY no
 * insert can take the slot, and a packet of the key that charged it
 * meanwhile sees the tag changed and takes its charge back; packets of the
 * key that look for it then wait on the insert lock and find it again once
 * the tag is back. The windows move to their next generation (window.h's
 * I2), so a charge prepared on an earlier read lands in none of them.
 * (With --new-sources exhausted, a packet of the key that finds it BUSY in
 * those microseconds is handled as a new source would be: by the policy.)
 *
 * An LRU table's element cannot be claimed (lru.h). A reset moves each
 * window on from the word it holds, read (with a full barrier) before the
 * element's key is read again: if that is still the key's, so was the word,
 * and the swap lands only while it still is (an element the kernel gave to
 * another key since holds words of generations this key's never had, lru.h
 * E1); a fresh window has nothing to reset, and to hold a count is opened
 * as a charge is. A charge is a packet's charge without the limit check,
 * read again after as a packet's is. `reset --all` closes every opened
 * window in place, as the bucket table's close does (whoever holds an
 * element, it is reset).
 */
#ifndef XDP_RL_ADMIN_H
#define XDP_RL_ADMIN_H

#include "maps.h"
#include "window.h"
#include "table.h"
#include "layers.h"

/*
 * Start window @s afresh holding @count from now (window.h's I2 and I5):
 * its count moves to the next generation, then it is given a start read
 * after that swap. Outside the insert lock (the clock is a helper call).
 */
static __always_inline int window_reset_to(struct xdp_rl_state *s, const struct window_clock *clk,
					   __u64 window_ns, __u64 count)
{
	__u64 e, c, g;
	int i;

	for (i = 0; i < ADMIN_TRIES; i++) {
		e = READ_ONCE(s->start_gen);
		c = READ_ONCE(s->count_gen);
		g = window_next_gen(xdp_rl_gen_of_count(c));
		if (__sync_val_compare_and_swap(&s->count_gen, c,
						(g << XDP_RL_COUNT_BITS) | count) != c)
			continue;
		__sync_val_compare_and_swap(&s->start_gen, e, window_start_now(clk, window_ns, g));
		return 0;
	}
	return -1;
}

/*
 * Why a charge of @inc to @s charged nothing (window_hit returned
 * XDP_RL_COUNT_SAT): its count is at its ceiling, or it kept changing.
 */
static __always_inline int admin_hit_failed(struct xdp_rl_state *s, __u64 inc)
{
	return xdp_rl_count(READ_ONCE(s->count_gen)) + inc >= XDP_RL_COUNT_SAT ?
		       XDP_RL_ADMIN_ESATURATED :
		       XDP_RL_ADMIN_EBUSY;
}

/*
 * Move window @s, whose count word was read as @c, to its next generation
 * holding @count (I2), and, if @count, give it a start read after that swap
 * (I4): from the start read before the swap, so that a start written since
 * (another key's fresh one, if the kernel gave an LRU element away
 * meanwhile, bpf/lru.h) is left alone. Returns the new generation, or 0 if
 * the count changed meanwhile (nothing was written). Global, so that the
 * admin program's own stack stays within the verifier's bound.
 */
__noinline __u64 window_move_on(struct xdp_rl_state *s, __u64 c, __u64 count,
				const struct window_clock *clk, __u64 window_ns)
{
	__u64 e, g;

	if (!s || !clk)
		return 0;
	e = READ_ONCE(s->start_gen);
	g = window_next_gen(xdp_rl_gen_of_count(c));
	if (__sync_val_compare_and_swap(&s->count_gen, c, (g << XDP_RL_COUNT_BITS) | count) != c)
		return 0;
	if (count)
		__sync_val_compare_and_swap(&s->start_gen, e, window_start_now(clk, window_ns, g));
	return g;
}

/* The layers [@from, @to) of a request, cut to what a slot has room for. */
static __always_inline int admin_layer(const struct xdp_rl_admin *rq, int i, __u32 room)
{
	return (__u32)i >= rq->from && (__u32)i < rq->to && (__u32)i < room;
}

/*
 * Under the key's insert lock, claim the slot of @key in buckets @bk1/@bk2
 * (BUSY), close the windows of the request's layers (count 0) or move them
 * to their next generation holding rq->count, and give the slot back.
 * Returns the slot (for the starts to be set after the lock), or NULL if
 * the key has none; *@busy set if a window kept changing (only packets
 * that matched the slot before the claim can, one per CPU).
 */
static __always_inline struct xdp_rl_slot *
admin_close_key(void *bk1, void *bk2, struct xdp_rl_lock *lk, const int v6,
		const struct table_key *key, const struct table_pos *pos,
		const struct xdp_rl_admin *rq, int *busy_out)
{
	const __u32 size = xdp_rl_slot_size(v6, cfg_layers);
	struct xdp_rl_slot *s = NULL;
	struct xdp_rl_state *st;
	__u64 busy;
	__u32 at;
	int i;

	busy = (pos->tag & ~XDP_RL_TAG_FLAGS) | XDP_RL_TAG_BUSY;
	bpf_spin_lock(&lk->lock);
	if (bucket_match(bk1, v6, key, pos->tag, &at))
		s = bucket_slot(bk1, at % XDP_RL_BUCKET_SLOTS, size);
	else if (bucket_match(bk2, v6, key, pos->tag, &at))
		s = bucket_slot(bk2, at % XDP_RL_BUCKET_SLOTS, size);
	if (s && __sync_val_compare_and_swap(&s->tag, pos->tag, busy) == pos->tag) {
		st = slot_states(s, v6);
#pragma unroll
		for (i = 0; i < XDP_RL_MAX_LAYERS; i++)
			if (admin_layer(rq, i, cfg_layers) && window_close(&st[i], rq->count))
				*busy_out = 1;
		__sync_val_compare_and_swap(&s->tag, busy, pos->tag);
	} else {
		s = NULL;
	}
	bpf_spin_unlock(&lk->lock);
	return s;
}

/*
 * A slot given by a request counts in the --new-sources window as a
 * packet's insert does, so that the window counts every slot given; it is
 * never refused by it (an operator asked for it).
 */
static __always_inline void admin_new_source(const struct window_clock *clk)
{
	const struct xdp_rl_live *live;
	struct xdp_rl_config *cfg;
	struct xdp_rl_state *w;
	__u32 zero = 0;
	__u64 gen;
	int op = 0;

	cfg = bpf_map_lookup_elem(&config, &zero);
	w = bpf_map_lookup_elem(&newsrc, &zero);
	if (!cfg || !w)
		return;
	live = live_of(cfg);
	if (live->new_sources.limit)
		window_hit(w, clk, live->new_sources.window_ns, 1, &op, &gen, NULL);
}

/* admin_key: the key's slot went to another key under the request: look again. */
#define ADMIN_AGAIN 2

/* Whether request @rq gives its key a slot when it has none: a charge, a reset to a count. */
static __always_inline int admin_inserts(const struct xdp_rl_admin *rq)
{
	return rq->op == XDP_RL_ADMIN_CHARGE || rq->count;
}

/*
 * RESET and CHARGE of a key in table @t of the bucket table (@map, @v6
 * constants), once its slot was given (admin_slot). Returns the request's
 * result, or ADMIN_AGAIN if the key has no slot (now) where the request
 * gives it one, or its slot went to another key under the request.
 */
static __always_inline int admin_key(struct xdp_rl_admin *rq, void *map, const int t, const int v6,
				     const struct window_clock *clk, struct xdp_rl_stats *st)
{
	struct table_key key = { { rq->key[0], rq->key[1], rq->key[2], rq->key[3] } };
	struct xdp_rl_state *w;
	struct xdp_rl_slot *s;
	struct xdp_rl_lock *lk;
	struct table_pos pos;
	struct where wh = {};
	struct charge ch;
	void *bk1, *bk2;
	__u64 opened = 0, gen, e;
	int i, op, failed = 0, busy = 0;
	long at;

	pos.tick = clock_ticks();
	pos.now = clk->now;
	pos.pad = 0;
	table_pos(&pos, &key, v6, rq->lsid, t);
	at = table_find(map, v6, &key, &pos);
	if (at < 0)
		return admin_inserts(rq) ? ADMIN_AGAIN : 0;
	s = buckets_slot(map, v6, at);
	if (!s)
		return -1;
	w = slot_states(s, v6);
	wh.t = t;
	wh.index = at_index(at);
	if (rq->op == XDP_RL_ADMIN_CHARGE) {
		/* As a packet charges, without the limit check (layers.h). */
		ch.held_from = 0;
		ch.held_to = 0;
#pragma unroll
		for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
			if (!admin_layer(rq, i, cfg_layers) || failed)
				continue;
			op = 0;
			if (window_hit_prev(&w[i], clk, rq->window_ns[i], rq->count, &op,
					    &ch.gens[i], NULL, ch.prev) == XDP_RL_COUNT_SAT) {
				/* Nothing charged there: the layers before give theirs back. */
				failed = admin_hit_failed(&w[i], rq->count);
				continue;
			}
			if (op)
				words_open(&wh, i, ch.gens[i]);
			ban_carry(&wh, i, &ch, ch.gens[i], rq->window_ns[i], clk->now);
			opened += op;
			ch.held_to = i + 1;
		}
		st->c[XDP_RL_STAT_NEW_WINDOWS] += opened;
		if (failed || READ_ONCE(s->tag) != pos.tag) {
			layers_undo(w, &ch, rq->from, ch.held_to, rq->count, cfg_layers, NULL);
			/* Its slot passed to another key under the charge: again. */
			return failed ? failed : ADMIN_AGAIN;
		}
		slot_touch(s, pos.tick);
		return 1;
	}
	bk1 = bpf_map_lookup_elem(map, &pos.b1);
	bk2 = bpf_map_lookup_elem(map, &pos.b2);
	lk = bpf_map_lookup_elem(&locks, &pos.lock);
	if (!bk1 || !bk2 || !lk)
		return -1;
	s = admin_close_key(bk1, bk2, lk, v6, &key, &pos, rq, &busy);
	if (!s)
		return ADMIN_AGAIN; /* it lost its slot meanwhile */
	if (busy)
		return XDP_RL_ADMIN_EBUSY;
	if (rq->count) {
		w = slot_states(s, v6);
#pragma unroll
		for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
			if (!admin_layer(rq, i, cfg_layers))
				continue;
			/* Its start, now: as a turnover's, read after the swap. */
			gen = xdp_rl_gen_of_count(READ_ONCE(w[i].count_gen));
			e = READ_ONCE(w[i].start_gen);
			if (__sync_val_compare_and_swap(&w[i].start_gen, e,
							window_start_now(clk, rq->window_ns[i],
									 gen)) == e)
				words_open(&wh, i, gen);
		}
		slot_touch(s, pos.tick);
	}
	return 1;
}

/*
 * Give the key of request @rq a slot in table @t of the bucket table
 * (@map, @v6 constants) unless it has one: 0, or -1 if none could be had.
 * In the admin program itself, whose frame is small, not in admin_key:
 * that one's frame and table_insert's would pass the 512 bytes of stack a
 * call chain may hold (scripts/check-stack.py).
 */
static __always_inline int admin_slot(const struct xdp_rl_admin *rq, void *map, const int t,
				      const int v6, const struct window_clock *clk,
				      struct xdp_rl_stats *st)
{
	struct table_key key = { { rq->key[0], rq->key[1], rq->key[2], rq->key[3] } };
	struct table_pos pos;
	long at;

	pos.tick = clock_ticks();
	pos.now = clk->now;
	pos.pad = 0;
	table_pos(&pos, &key, v6, rq->lsid, t);
	if (table_find(map, v6, &key, &pos) >= 0)
		return 0;
	at = table_insert(t, &key, &pos, st);
	if (at < 0)
		return XDP_RL_ADMIN_ENOSLOT;
	if (at_inserted(at))
		admin_new_source(clk);
	return 0;
}

/*
 * An LRU table: charge rq->count to the request's layers of the key at
 * @pos's element @e without the limit check, as a packet charges (lru.h);
 * for a RESET, start them afresh holding rq->count instead. 1, or 0 if the
 * element was not the key's (nothing is left changed that is not the
 * key's). A charge's opened windows count as opened, a reset's do not.
 */
static __always_inline int admin_lru_change(struct xdp_rl_admin *rq, void *e, const int t,
					    const int v6, const struct table_pos *pos,
					    const struct window_clock *clk, struct xdp_rl_stats *st)
{
	struct xdp_rl_state *w = lru_states(e, v6);
	struct where wh = { .t = t, .remote = lru_remote(e, v6), .drops = lru_drops(e, v6, 0) };
	__u64 opened = 0, fresh[2], c, gen;
	struct charge ch;
	int i, op, lost = 0, failed = 0;

	lru_fresh(pos, v6, t, fresh);
	ch.held_to = 0;
#pragma unroll
	for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
		if (!admin_layer(rq, i, cfg_layers))
			continue;
		ch.gens[i] = WINDOW_NOT_CHARGED;
		ch.held_to = i + 1;
		/*
		 * A reset of a window opened: from the word it holds, read with a
		 * full barrier, then the key read again, so that the word is the
		 * key's (a word of an element given to another key since has a
		 * generation no window of this one had, lru.h's E1: the swap misses
		 * it); a fresh window has nothing to reset, and opens as a charge.
		 */
		c = __sync_fetch_and_add(&w[i].count_gen, 0);
		if (rq->op == XDP_RL_ADMIN_RESET && xdp_rl_gen_of_count(c)) {
			if (!lru_holds(e, v6, pos)) {
				lost = 1;
				break;
			}
			gen = window_move_on(&w[i], c, rq->count, clk, rq->window_ns[i]);
			if (!gen) {
				lost = 1; /* changed meanwhile: looked at again */
				break;
			}
			if (rq->count)
				words_open(&wh, i, gen);
			continue;
		}
		if (rq->op == XDP_RL_ADMIN_RESET && !rq->count)
			continue;
		op = 0;
		if (window_hit_prev(&w[i], clk, rq->window_ns[i], rq->count, &op, &ch.gens[i],
				    fresh, ch.prev) == XDP_RL_COUNT_SAT) {
			/* Nothing charged: the element went to another key, or the window is full or busy. */
			if (ch.gens[i] == WINDOW_LOST)
				lost = 1;
			else
				failed = admin_hit_failed(&w[i], rq->count);
			break;
		}
		if (op)
			words_open(&wh, i, ch.gens[i]);
		ban_carry(&wh, i, &ch, ch.gens[i], rq->window_ns[i], clk->now);
		opened += op;
	}
	if (rq->op == XDP_RL_ADMIN_CHARGE)
		st->c[XDP_RL_STAT_NEW_WINDOWS] += opened;
	if (failed || lost || !lru_holds(e, v6, pos)) {
		layers_undo(w, &ch, rq->from, ch.held_to, rq->count, cfg_layers, NULL);
		return failed ? failed : ADMIN_AGAIN;
	}
	lru_touch(e, v6, pos->tick);
	return 1;
}

/*
 * RESET and CHARGE of a key in an LRU table @t (@map, @v6 constants), and
 * REMOTE. Returns the request's result.
 */
static __always_inline int admin_lru_key(struct xdp_rl_admin *rq, void *map, const int t,
					 const int v6, const struct window_clock *clk,
					 struct xdp_rl_stats *st)
{
	struct table_key key = { { rq->key[0], rq->key[1], rq->key[2], rq->key[3] } };
	struct table_pos pos;
	__u64 *word, w;
	__u32 layer;
	int try;
	void *e;
	long r;

	pos.tick = clock_ticks();
	pos.now = clk->now;
	table_pos(&pos, &key, v6, rq->lsid, t);
	if (rq->op == XDP_RL_ADMIN_REMOTE) {
		layer = rq->from;
		e = bpf_map_lookup_elem(map, pos.lkey);
		if (!e || layer >= cfg_layers)
			return 0;
		/*
		 * A word of the key's window generation: on another key's
		 * windows it counts nothing. Written only while the element
		 * holds the key, by a swap from the word read before that check:
		 * if the kernel gives the element away meanwhile, its copy
		 * rewrites the word, and the swap fails (or, on a word the copy
		 * left as it was, lands tagged with a generation the new key's
		 * windows never have: E1).
		 */
		word = lru_remote(e, v6) + (layer & (XDP_RL_MAX_LAYERS - 1));
		w = READ_ONCE(*word);
		if (!lru_holds(e, v6, &pos))
			return 0;
		__sync_val_compare_and_swap(word, w, rq->count);
		return 1;
	}
	for (try = 0; try < 2; try++) {
		e = bpf_map_lookup_elem(map, pos.lkey);
		if (!e && rq->op == XDP_RL_ADMIN_RESET && !rq->count)
			return 0;
		if (!e) {
			r = lru_insert(map, v6, t, &pos, 1);
			if (r < 0)
				return XDP_RL_ADMIN_ENOSLOT;
			if (at_inserted(r))
				admin_new_source(clk);
			e = bpf_map_lookup_elem(map, pos.lkey);
			if (!e)
				continue;
		}
		r = admin_lru_change(rq, e, t, v6, &pos, clk, st);
		if (r != ADMIN_AGAIN)
			return r;
	}
	/* The element kept going to other keys, or its windows kept changing. */
	return XDP_RL_ADMIN_EBUSY;
}

/* RESET and CHARGE of a --shared rule's budget (no slot, no tag). */
static __always_inline int admin_shared(struct xdp_rl_admin *rq, const struct window_clock *clk,
					struct xdp_rl_stats *st)
{
	struct where wh = { .t = T_SHARED, .index = rq->index };
	struct xdp_rl_state *w;
	__u32 id = rq->index;
	__u64 opened = 0;
	struct charge ch;
	int i, op, failed = 0;

	w = bpf_map_lookup_elem(&shared, &id);
	if (!w)
		return XDP_RL_ADMIN_EFAIL;
	ch.held_to = 0;
#pragma unroll
	for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
		if (!admin_layer(rq, i, XDP_RL_MAX_LAYERS) || failed)
			continue;
		op = 0;
		/*
		 * A budget every source of the prefix charges: under a flood its
		 * words change all the time, and a swap may keep losing. What
		 * cannot be done is said (EBUSY), and asked again by xdp-rl.
		 */
		if (rq->op == XDP_RL_ADMIN_CHARGE) {
			if (window_hit(&w[i], clk, rq->window_ns[i], rq->count, &op, &ch.gens[i],
				       NULL) == XDP_RL_COUNT_SAT)
				failed = admin_hit_failed(&w[i], rq->count);
			else
				ch.held_to = i + 1;
		} else if (rq->count ? window_reset_to(&w[i], clk, rq->window_ns[i], rq->count) :
				       window_close(&w[i], 0)) {
			failed = XDP_RL_ADMIN_EBUSY;
		} else if (rq->count) {
			op = 1; /* a window started holding the count */
		}
		if (op)
			words_open(&wh, i, xdp_rl_gen_of_count(READ_ONCE(w[i].count_gen)));
		opened += rq->op == XDP_RL_ADMIN_CHARGE ? op : 0;
	}
	if (failed && rq->op == XDP_RL_ADMIN_CHARGE)
		layers_undo(w, &ch, rq->from, ch.held_to, rq->count, XDP_RL_MAX_LAYERS, NULL);
	/* As a key's charge (admin_key): the windows it opened are counted. */
	st->c[XDP_RL_STAT_NEW_WINDOWS] += opened;
	return failed ? failed : 1;
}

/*
 * Close the request's layers of every key in bucket rq->index of table @t
 * (`reset --all`, and the layers a limit stopped using), each under its
 * own key's lock. Returns how many live slots it closed.
 */
static __always_inline int admin_bucket(struct xdp_rl_admin *rq, void *map, const int t,
					const int v6)
{
	const __u32 size = xdp_rl_slot_size(v6, cfg_layers);
	struct xdp_rl_key6 *k6;
	struct table_key key;
	struct xdp_rl_lock *lk;
	struct xdp_rl_slot *s;
	struct xdp_rl_state *st;
	__u64 tag, h, busy;
	__u32 b = rq->index, j, lock;
	int i, n = 0, failed = 0;
	void *bk;

	bk = bpf_map_lookup_elem(map, &b);
	if (!bk)
		return -1;
#pragma unroll
	for (j = 0; j < XDP_RL_BUCKET_SLOTS; j++) {
		s = bk + j * size;
		tag = READ_ONCE(s->tag);
		if ((tag & XDP_RL_TAG_FLAGS) != XDP_RL_TAG_LIVE)
			continue;
		key.k[0] = tag >> 32;
		key.k[1] = key.k[2] = key.k[3] = 0;
		if (v6) {
			k6 = (void *)(s + 1);
			key.k[0] = k6->addr[0];
			key.k[1] = k6->addr[1];
			key.k[2] = k6->addr[2];
			key.k[3] = k6->addr[3];
		}
		h = xdp_rl_hash(key.k, v6, xdp_rl_tag_lsid(tag), cfg_seed);
		lock = xdp_rl_lock_of(h);
		lk = bpf_map_lookup_elem(&locks, &lock);
		if (!lk)
			continue;
		busy = (tag & ~XDP_RL_TAG_FLAGS) | XDP_RL_TAG_BUSY;
		bpf_spin_lock(&lk->lock);
		/* The tag names the key (IPv6: with its half hash; the key is checked too). */
		if ((!v6 || (k6 = (void *)(s + 1),
			     k6->addr[0] == key.k[0] && k6->addr[1] == key.k[1] &&
				     k6->addr[2] == key.k[2] && k6->addr[3] == key.k[3])) &&
		    __sync_val_compare_and_swap(&s->tag, tag, busy) == tag) {
			st = slot_states(s, v6);
#pragma unroll
			for (i = 0; i < XDP_RL_MAX_LAYERS; i++)
				if (admin_layer(rq, i, cfg_layers) && window_close(&st[i], 0))
					failed = 1;
			__sync_val_compare_and_swap(&s->tag, busy, tag);
			n++;
		}
		bpf_spin_unlock(&lk->lock);
	}
	/* Closing a window again is harmless: asking again finishes the bucket. */
	return failed ? XDP_RL_ADMIN_EBUSY : n;
}

/* What admin_lru_close's callbacks do across the elements they are given. */
struct lru_close {
	__u32 from, to; /* the request's layers */
	__u32 n;	/* elements with a window closed */
	__u32 pad;
};

/*
 * Close the windows of layers [from, to) of element @value (its windows
 * at @head bytes), as the bucket table's close does in place: whoever holds
 * the element, its windows are to be reset. A fresh window (generation 0,
 * lru.h) has nothing to close, and stays as it is.
 */
static __always_inline long lru_close_one(void *value, struct lru_close *c, const __u32 head)
{
	struct xdp_rl_state *st = value + head;
	int i, closed = 0;

#pragma unroll
	for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
		if ((__u32)i >= cfg_layers || (__u32)i < c->from || (__u32)i >= c->to)
			continue;
		if (!xdp_rl_gen_of_count(READ_ONCE(st[i].count_gen)))
			continue;
		window_close(&st[i], 0);
		closed = 1;
	}
	c->n += closed;
	return 0;
}

/* The callbacks' types as the kernel's are (Linux 6.1 checks the first: a map). */
struct bpf_map;

static long lru_close4(struct bpf_map *map, const void *key, void *value, void *ctx)
{
	return lru_close_one(value, ctx, xdp_rl_lru_head(0));
}

static long lru_close6(struct bpf_map *map, const void *key, void *value, void *ctx)
{
	return lru_close_one(value, ctx, xdp_rl_lru_head(1));
}

/*
 * CLOSE_BUCKET of an LRU table: close the request's layers of every key's
 * windows in table @t (@map, @v6 constants). Returns how many keys had a
 * window closed. Out of line, one function per table (ADMIN_OPS below):
 * the verifier of Linux 6.1 refuses a bpf_for_each_map_elem call that
 * several maps reach ("tail_call abusing map_ptr").
 */
static __always_inline int admin_lru_close(struct xdp_rl_admin *rq, void *map, const int t,
					   const int v6)
{
	struct lru_close c = { rq->from, rq->to, 0, 0 };

	bpf_for_each_map_elem(map, v6 ? lru_close6 : lru_close4, &c, 0);
	return c.n;
}

/* REMOTE of a key of the bucket table: its word in the `remote` map. */
static __always_inline int admin_remote(struct xdp_rl_admin *rq, void *map, const int t,
					const int v6)
{
	struct table_key key = { { rq->key[0], rq->key[1], rq->key[2], rq->key[3] } };
	struct table_pos pos = {};
	__u64 *word;
	__u32 k;
	long at;

	table_pos(&pos, &key, v6, rq->lsid, t);
	at = table_find(map, v6, &key, &pos);
	if (at < 0 || rq->from >= cfg_layers)
		return 0;
	k = drops_index(t, at_index(at), rq->from, cfg_layers);
	word = bpf_map_lookup_elem(&remote, &k);
	if (!word)
		return -1;
	/* A word of the key's window generation: on another key's windows it counts nothing. */
	WRITE_ONCE(*word, rq->count);
	return 1;
}

/*
 * Each request's work, out of line, one global function per request kind
 * and table (the maps constants in each, for the verifier): the admin
 * program only dispatches, and gives a key a slot (admin_slot) before
 * admin_key changes it, so that no chain of calls holds both admin_key's
 * frame and table_insert's (the 512 bytes of stack a chain may hold:
 * scripts/check-stack.py). Each reads the request from the frame again (a
 * global function takes the context, not a pointer into the packet), and
 * reads the clock itself.
 */
#define ADMIN_OP(name, table, wide4, call)                          \
	__noinline int name(struct xdp_md *ctx)                     \
	{                                                           \
		struct xdp_rl_admin *rq = (void *)(long)ctx->data;  \
		struct window_clock clk;                            \
		struct xdp_rl_config *cfg;                          \
		struct xdp_rl_stats *st;                            \
		__u32 zero = 0;                                     \
                                                                    \
		if (!ADMIN_FOR(table) || WIDE(0) != (wide4))        \
			return -1;                                  \
		if ((void *)(rq + 1) > (void *)(long)ctx->data_end) \
			return -1;                                  \
		cfg = bpf_map_lookup_elem(&config, &zero);          \
		st = bpf_map_lookup_elem(&stats, &zero);            \
		if (!cfg || !st)                                    \
			return -1;                                  \
		clock_setup(&clk, clock_ticks(), live_of(cfg));     \
		return call;                                        \
	}
/*
 * Whether the loaded table is one a request kind's work is for: @table
 * BUCKETS, LRU, or ANY. The verifier checks every global function, called
 * or not (before Linux 6.8), so the other table's work must end at once,
 * where cfg_table (a constant) prunes it: its maps are of the other kind.
 */
#define ADMIN_FOR(table)  ADMIN_FOR_##table
#define ADMIN_FOR_ANY	  1
#define ADMIN_FOR_BUCKETS (!table_lru())
#define ADMIN_FOR_LRU	  table_lru()
/*
 * The four tables' versions of a request kind's work, the IPv4 tables' in
 * each layout (WIDE), each with its layout a constant: one function for
 * both would hold both's stack.
 */
#define ADMIN_OPS(kind, table, ...)                                                      \
	ADMIN_OP(kind##_src4, table, 0, kind(rq, &src4, T_SRC4, 0, ##__VA_ARGS__))       \
	ADMIN_OP(kind##_src4w, table, 1, kind(rq, &src4, T_SRC4, 1, ##__VA_ARGS__))      \
	ADMIN_OP(kind##_src6, table, WIDE(0), kind(rq, &src6, T_SRC6, 1, ##__VA_ARGS__)) \
	ADMIN_OP(kind##_agg4, table, 0, kind(rq, &agg4, T_AGG4, 0, ##__VA_ARGS__))       \
	ADMIN_OP(kind##_agg4w, table, 1, kind(rq, &agg4, T_AGG4, 1, ##__VA_ARGS__))      \
	ADMIN_OP(kind##_agg6, table, WIDE(0), kind(rq, &agg6, T_AGG6, 1, ##__VA_ARGS__))
ADMIN_OPS(admin_slot, BUCKETS, &clk, st)
ADMIN_OPS(admin_key, BUCKETS, &clk, st)
ADMIN_OPS(admin_bucket, BUCKETS)
ADMIN_OPS(admin_remote, BUCKETS)
ADMIN_OPS(admin_lru_key, LRU, &clk, st)
ADMIN_OPS(admin_lru_close, LRU)
ADMIN_OP(admin_shared_op, ANY, WIDE(0), admin_shared(rq, &clk, st))
#undef ADMIN_OPS
#undef ADMIN_OP

/* One request kind's work on the request's table: r, or -1 for a table it does not take. */
#define ADMIN_ON_TABLE(kind, r)                                                 \
	switch (rq->table) {                                                    \
	case T_SRC4: r = WIDE(0) ? kind##_src4w(ctx) : kind##_src4(ctx); break; \
	case T_SRC6: r = kind##_src6(ctx); break;                               \
	case T_AGG4: r = WIDE(0) ? kind##_agg4w(ctx) : kind##_agg4(ctx); break; \
	case T_AGG6: r = kind##_agg6(ctx); break;                               \
	default: r = -1;                                                        \
	}

SEC("xdp")
int admin(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct xdp_rl_admin *rq = data;
	int r = -1, try;

	/* The request is read in place, in the frame: a copy would not fit the stack. */
	if ((void *)(rq + 1) > data_end)
		return XDP_ABORTED;
	switch (rq->op) {
	case XDP_RL_ADMIN_CLOSE_BUCKET:
		if (table_lru()) {
			ADMIN_ON_TABLE(admin_lru_close, r);
		} else {
			ADMIN_ON_TABLE(admin_bucket, r);
		}
		break;
	case XDP_RL_ADMIN_REMOTE:
		if (table_lru()) {
			ADMIN_ON_TABLE(admin_lru_key, r);
		} else {
			ADMIN_ON_TABLE(admin_remote, r);
		}
		break;
	case XDP_RL_ADMIN_RESET:
	case XDP_RL_ADMIN_CHARGE:
		if (rq->table == T_SHARED) {
			r = admin_shared_op(ctx);
			break;
		}
		if (table_lru()) {
			ADMIN_ON_TABLE(admin_lru_key, r);
			break;
		}
		/* The bucket table: a slot given if the request gives one, then the change. */
		for (try = 0; try < 2; try++) {
			if (admin_inserts(rq)) {
				ADMIN_ON_TABLE(admin_slot, r);
				if (r < 0)
					goto done;
			}
			ADMIN_ON_TABLE(admin_key, r);
			if (r != ADMIN_AGAIN)
				goto done;
		}
		/* Its slot went to other keys under each try: asked again (user/admin.c). */
		r = XDP_RL_ADMIN_EBUSY;
		break;
	}
done:
	rq->result = r;
	return XDP_PASS;
}
#undef ADMIN_ON_TABLE

#endif /* XDP_RL_ADMIN_H */
