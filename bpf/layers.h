/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * layers.h - several fixed windows per key (e.g. 100/s and 3000/min and
 * 50000/h): a packet passes only if every layer admits it.
 *
 * Layers are charged in order. When one refuses the packet, the charges
 * already made to the layers before it are taken back (window_undo): a flood
 * held back by the per-second layer does not use up the hourly budget. The
 * refusing layer keeps its charge, as a single window counts its drops; the
 * layers after it are not charged at all.
 *
 * No layer ever passes more than its limit in one of its windows: a packet
 * that passes is never taken back while its key keeps its slot (table.h),
 * so when it passes, the layer's count (at least the number of packets it
 * has passed in this window) is within the limit. Under concurrency a packet may be refused that could have passed:
 * it may see a count that includes another CPU's charge which that CPU is
 * about to take back. That errs on the side of the limit, never past it.
 */
#ifndef XDP_RL_LAYERS_H
#define XDP_RL_LAYERS_H

#include "maps.h"
#include "window.h"
#include "events.h"
#include "ban.h"
#include "rate.h"

/*
 * Where a key's windows are (for their drops and the fleet's share), and
 * whether the fleet's share counts (XDP_RL_F_FLEET).
 */
struct where {
	__u32 t;     /* enum xdp_rl_table */
	__u32 index; /* the slot's index, or the --shared rule's id; LRU: its hot index */
	__u32 fleet;
	__u32 pad;
	__u64 *remote; /* LRU: the element's fleet words (table.h); NULL: the `remote` map's */
	__u64 *drops;  /* LRU: the element's drops words; NULL: the `drops` map's */
	__u64 *fresh;  /* LRU: the key's fresh windows, start_gen and count_gen; NULL: none */
};

/*
 * A window of generation @gen was just opened (this CPU gave it its
 * start): its drops word and its fleet word must count nothing of an
 * older window that carries the same 16-bit generation, which the bucket
 * table's slot reaches again after 65 536 of its windows, and an LRU
 * element whenever the limiter's generation counter comes round to it. A
 * word still tagged @gen with something in it is from such a window, and
 * starts again empty; a word tagged otherwise counts nothing for @gen
 * already. Every opening of every generation does this, so no stale word
 * outlives the next window of its generation: no probabilistic hole, only
 * the instant between the start and this swap, when a packet may read the
 * stale share (refused, never passed) and a flush or the agent may write
 * a word this swap then empties (drops not shown; a share missing until
 * the agent's next round).
 */
static __always_inline void words_open(const struct where *wh, __u32 layer, __u64 gen)
{
	__u64 *w[2], v, tag = (gen & 0xffff) << XDP_RL_DROPS_BITS;
	__u32 k, t = wh->t;
	int i;

	_Static_assert(XDP_RL_DROPS_BITS == XDP_RL_REMOTE_BITS, "one tag for both words");
	if (gen > XDP_RL_GEN_MASK || t > T_SHARED)
		return;
	if (wh->remote && wh->drops) {
		w[0] = wh->drops + (layer & (XDP_RL_MAX_LAYERS - 1));
		w[1] = wh->remote + (layer & (XDP_RL_MAX_LAYERS - 1));
	} else {
		k = drops_index(t, wh->index, layer,
				t == T_SHARED ? XDP_RL_MAX_LAYERS : cfg_layers);
		w[0] = bpf_map_lookup_elem(&drops, &k);
		w[1] = bpf_map_lookup_elem(&remote, &k);
	}
#pragma unroll
	for (i = 0; i < 2; i++) {
		if (!w[i])
			continue;
		v = READ_ONCE(*w[i]);
		if ((v & ~XDP_RL_DROPS_MASK) == tag && (v & XDP_RL_DROPS_MASK))
			__sync_val_compare_and_swap(w[i], v, tag);
	}
}

/*
 * What the other servers of a fleet counted in window @gen of layer @layer
 * (include/xdp_rl.h): 0 unless in fleet mode and the agent wrote this
 * window's share.
 */
static __always_inline __u64 remote_count(const struct where *wh, __u32 layer, __u64 gen)
{
	__u32 k, t = wh->t;
	__u64 *w, v;

	if (!wh->fleet || t > T_SHARED)
		return 0;
	if (wh->remote) {
		v = READ_ONCE(wh->remote[layer & (XDP_RL_MAX_LAYERS - 1)]);
		return (v >> XDP_RL_REMOTE_BITS) == (gen & 0xffff) ? v & XDP_RL_REMOTE_MASK : 0;
	}
	k = drops_index(t, wh->index, layer, t == T_SHARED ? XDP_RL_MAX_LAYERS : cfg_layers);
	w = bpf_map_lookup_elem(&remote, &k);
	if (!w)
		return 0;
	v = READ_ONCE(*w);
	return (v >> XDP_RL_REMOTE_BITS) == (gen & 0xffff) ? v & XDP_RL_REMOTE_MASK : 0;
}

/* What a packet's charge did to a key's layers. */
struct charge {
	__u64 gens[XDP_RL_MAX_LAYERS]; /* window generation charged, per layer */
	int refused;		       /* the layer that refused, or -1 */
	int held_from, held_to;	       /* the layers still holding the charge */
	int lost;	  /* a window was fresh for another key: the element is not the key's */
	int over;	  /* the layer this charge took over its limit (events.h), or -1 */
	__u64 over_count; /* ... its count then, the fleet's share included */
	int banned;	  /* refused by a ban found on opening a window (ban.h, B2) */
	__u32 rates;	  /* bit i: layer i is a rate (rate.h) */
	union {
		__u64 prev[2];	    /* the window before the one charged (struct window_charge) */
		struct rate_io rio; /* a rate's (rate.h) */
	};
	__u64 ban_ns; /* in: the limits' --ban, 0: none (not on the stack: check-stack.py) */
	__u64 rate_word
		[XDP_RL_MAX_LAYERS]; /* a rate layer's pass: the count_gen it wrote (rate.h, R3) */
};

/*
 * The ban word of layer @i of the key @wh is at (ban.h): an LRU element's
 * follow its fleet words (include/xdp_rl.h), the bucket table's are in `bans`.
 */
static __always_inline __u64 *where_ban(const struct where *wh, __u32 i)
{
	return wh->remote && wh->drops ? wh->remote + cfg_layers + (i & (XDP_RL_MAX_LAYERS - 1)) :
					 ban_word_at(wh->t, wh->index, i);
}

/* Whether a ban holds on the first @n layers of @st (room for @room), the key @wh's, at @now (ban.h). */
static __always_inline int layers_banned(const struct xdp_rl_state *st, __u32 n, __u32 room,
					 const struct where *wh, __u64 now)
{
	__u64 *w;
	int i;

	for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
		if ((__u32)i >= n || (__u32)i >= room)
			break;
		w = where_ban(wh, i);
		if (w && xdp_rl_ban_holds(READ_ONCE(*w), READ_ONCE(st[i].count_gen), now))
			return 1;
	}
	return 0;
}

/*
 * Layer @i opened window @gen after the window @ch->prev, over: ban.h's
 * ban_turnover on the key's ban word, with @ban_ns for a ban to make (0:
 * only carry one).
 */
static __always_inline int ban_after(const struct where *wh, __u32 i, const struct charge *ch,
				     __u64 gen, __u64 window_ns, __u64 now, __u64 ban_ns)
{
	return ban_turnover(where_ban(wh, i), gen,
			    xdp_rl_ban_word(xdp_rl_start_ns(ch->prev[1]) + window_ns,
					    xdp_rl_gen_of_count(ch->prev[0])),
			    now, ban_ns);
}

/*
 * B2 (ban.h): the charge of layer @i opened window @gen after the window
 * @ch->prev, over: if that window went over its limit @limit, whether a ban
 * holds now. A --shared budget is never banned.
 */
static __always_inline int layer_banned(const struct where *wh, __u32 i, const struct charge *ch,
					__u64 gen, __u64 limit, __u64 window_ns,
					const struct window_clock *clk)
{
	if (!(clk->flags & XDP_RL_F_BANS) || !ch->prev[0] || wh->t >= T_SHARED)
		return 0;
	if (xdp_rl_count(ch->prev[0]) + remote_count(wh, i, xdp_rl_gen_of_count(ch->prev[0])) <=
	    limit)
		return 0;
	return ban_after(wh, i, ch, gen, window_ns, clk->now, ch->ban_ns);
}

/*
 * `charge` (admin.h) opened window @gen of layer @i after the window
 * @ch->prev, over: a ban that window holds goes on in this one (ban.h), as
 * no packet could have opened it. Nothing is banned anew.
 */
static __always_inline void ban_carry(const struct where *wh, __u32 i, const struct charge *ch,
				      __u64 gen, __u64 window_ns, __u64 now)
{
	if (ch->prev[0] && wh->t < T_SHARED)
		ban_after(wh, i, ch, gen, window_ns, now, 0);
}

/*
 * Take back the charges of layers [@from, @to) of @st, which has room for
 * @room, under the layers @lay (NULL: windows only, as `charge` makes).
 */
static __always_inline void layers_undo(struct xdp_rl_state *st, const struct charge *ch, int from,
					int to, __u64 inc, __u32 room,
					const struct xdp_rl_layer *lay)
{
	int i;

	for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
		if (i >= to || (__u32)i >= room)
			break;
		if (i < from)
			continue;
		if (lay && (ch->rates & (1U << i)))
			rate_undo(&st[i], &lay[i], ch->rate_word[i], inc);
		else
			window_undo(&st[i], ch->gens[i], inc);
	}
}

/*
 * Charge @inc to the rate layer @i of @st (rate.h) as window_hit_prev charges
 * a window: returns the "count" layers_charge decides on, 0 to pass and
 * XDP_RL_COUNT_SAT (over any limit) to refuse; the generation in
 * ch->gens[i], and for an episode's first refusal ch->over. No ban is made
 * at an episode's start: a banned key is refused before its charge.
 */
static __always_inline __u64 rate_layer_hit(struct xdp_rl_state *st, __u32 i,
					    const struct xdp_rl_layer *lay,
					    const struct window_clock *clk, __u64 inc, int *op,
					    struct charge *ch, const struct where *wh)
{
	int pass, k;

	i &= XDP_RL_MAX_LAYERS - 1;
	ch->rio.next = 0;
	for (k = 0; k < 2; k++) {
		ch->rio.word = wh->fresh ? wh->fresh[0] : 0;
		ch->rio.how = wh->fresh ? wh->fresh[1] : 0;
		pass = rate_hit(&st[i], clk, &lay[i], inc, &ch->rio);
		if (!(ch->rio.how & RATE_NEED_GEN))
			break;
		/* An LRU table's episode begins with the counter's next generation (rate.h). */
		ch->rio.next = (ch->rio.how & XDP_RL_GEN_MASK) << 16 |
			       window_next_gen(ch->rio.how & XDP_RL_GEN_MASK);
	}
	/* Asked twice (the state moved under it): refused, as a lost swap is. */
	if (ch->rio.how & RATE_NEED_GEN)
		ch->rio.how = RATE_NO_GEN;
	ch->rates |= 1U << i;
	*op = !!(ch->rio.how & RATE_OPENED);
	ch->gens[i] = ch->rio.how & RATE_LOST		? WINDOW_LOST :
		      (__u32)ch->rio.how == RATE_NO_GEN ? WINDOW_NOT_CHARGED :
							  (__u32)ch->rio.how;
	ch->rate_word[i] = ch->rio.word;
	if (!pass && (ch->rio.how & RATE_FIRST) && ch->over < 0) {
		ch->over = i;
		ch->over_count = lay[i].burst | EV_COUNT_RATE;
	}
	ch->prev[0] = ch->prev[1] = 0;
	return pass ? 0 : XDP_RL_COUNT_SAT;
}

/*
 * layers_exhausted - the layer at which charging @inc would refuse the
 * packet and change no count but that layer's own: the first whose window
 * is open and over its limit already (count > limit), every layer before it open
 * and able to admit the packet (so the full charge would reach it, be
 * refused there, and take back every charge before it). The packet is
 * refused at once. Its drop is counted in that window's count while the
 * window has few (window_drop, window.h and hot.h; not in a fleet, whose agent shares
 * the count), and *counted is set; else the caller counts it apart
 * (hot_drop). Returns the layer, with its window's generation in *gen, or
 * -1 for the full charge.
 */
static __always_inline int layers_exhausted(struct xdp_rl_state *st, __u32 room,
					    const struct xdp_rl_layer *lay, __u32 n,
					    const struct window_clock *clk, __u64 inc, __u64 *gen,
					    int *counted, const struct where *wh)
{
	__u64 e, c, count;
	int i;

	for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
		if ((__u32)i >= n || (__u32)i >= room)
			break;
		if (xdp_rl_is_rate(&lay[i])) {
			/* A rate refuses on a read once its episode's first refusal is made (rate.h, R2). */
			if (rate_exhausted(&st[i], &lay[i], clk->now, inc, gen))
				return i;
			/* Whether it would pass: the full charge finds out. */
			return -1;
		}
		e = READ_ONCE(st[i].start_gen);
		if (xdp_rl_window_over(e, clk->now, lay[i].window_ns))
			return -1;
		c = READ_ONCE(st[i].count_gen);
		if (xdp_rl_gen_of_count(c) != xdp_rl_gen_of_start(e))
			return -1;
		count = xdp_rl_count(c) + remote_count(wh, i, xdp_rl_gen_of_count(c));
		/* At the limit exactly: the full charge takes it over (events.h). */
		if (count > lay[i].limit) {
			*gen = xdp_rl_gen_of_count(c);
			*counted = !wh->fleet && window_drop(&st[i], c, lay[i].limit, inc);
			return i;
		}
		if (count + inc > lay[i].limit)
			return -1;
	}
	return -1;
}

/*
 * layers_charge - charge @inc to the first @n layers of @st (which has room
 * for @room) with the limits in @lay, and take back the charges of the
 * layers before one that refuses. Returns whether the packet passes; @ch
 * says which layers hold its charge, for layers_undo should the key turn
 * out to have lost its slot meanwhile (table.h). *opened counts the windows
 * opened.
 */
static __always_inline int layers_charge(struct xdp_rl_state *st, __u32 room,
					 const struct xdp_rl_layer *lay, __u32 n,
					 const struct window_clock *clk, __u64 inc, __u64 *opened,
					 struct charge *ch, const struct where *wh)
{
	int i, op;
	__u64 count;

	ch->refused = -1;
	ch->held_from = 0;
	ch->lost = 0;
	ch->over = -1;
	ch->banned = 0;
	ch->rates = 0;
	if (room == 1) {
		/* One window per key (the default): no loop, nothing to take back. */
		op = 0;
		ch->rate_word[0] = 0;
		if (xdp_rl_is_rate(&lay[0]))
			count = rate_layer_hit(st, 0, lay, clk, inc, &op, ch, wh);
		else
			count = window_hit_prev(&st[0], clk, lay[0].window_ns, inc, &op,
						&ch->gens[0], wh->fresh, ch->prev);
		if (op)
			words_open(wh, 0, ch->gens[0]);
		*opened += op;
		ch->held_to = 1;
		ch->lost = ch->gens[0] == WINDOW_LOST;
		if (layer_banned(wh, 0, ch, ch->gens[0], lay[0].limit, lay[0].window_ns, clk)) {
			/* B2: refused by a ban, nothing kept. */
			window_undo(&st[0], ch->gens[0], inc);
			ch->banned = 1;
			ch->refused = 0;
			ch->held_to = 0;
			return 0;
		}
		/* The fleet's share of the window counts as if charged here (a rate has none). */
		if (count < XDP_RL_COUNT_SAT && !ch->rates)
			count += remote_count(wh, 0, ch->gens[0]);
		if (count > lay[0].limit)
			ch->refused = 0;
		if (event_crossed(count, inc, lay[0].limit)) {
			ch->over = 0;
			ch->over_count = count;
		}
		return ch->refused < 0;
	}

	for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
		if ((__u32)i >= n || (__u32)i >= room)
			break;
		op = 0;
		ch->rate_word[i] = 0;
		if (xdp_rl_is_rate(&lay[i]))
			count = rate_layer_hit(st, i, lay, clk, inc, &op, ch, wh);
		else
			count = window_hit_prev(&st[i], clk, lay[i].window_ns, inc, &op,
						&ch->gens[i], wh->fresh, ch->prev);
		if (op)
			words_open(wh, i, ch->gens[i]);
		*opened += op;
		if (layer_banned(wh, i, ch, ch->gens[i], lay[i].limit, lay[i].window_ns, clk)) {
			/* B2: refused by a ban; every charge comes back, this layer's too. */
			layers_undo(st, ch, 0, i + 1, inc, room, lay);
			ch->banned = 1;
			ch->refused = i;
			ch->held_to = 0;
			return 0;
		}
		if (count < XDP_RL_COUNT_SAT && !(ch->rates & (1U << i)))
			count += remote_count(wh, i, ch->gens[i]);
		if (count > lay[i].limit) {
			ch->refused = i;
			ch->lost = ch->gens[i] == WINDOW_LOST;
			/* Refused here, kept here: the crossing is this layer's (events.h). */
			if (event_crossed(count, inc, lay[i].limit)) {
				ch->over = i;
				ch->over_count = count;
			}
			break;
		}
	}
	ch->held_to = i + (ch->refused >= 0);
	if (ch->refused > 0) {
		layers_undo(st, ch, 0, ch->refused, inc, room, lay);
		ch->held_from = ch->refused;
	}
	return ch->refused < 0;
}

#endif /* XDP_RL_LAYERS_H */
