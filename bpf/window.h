/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * window.h - an exact fixed-window counter shared by every CPU.
 *
 * A window's state is two words (include/xdp_rl.h): count_gen, the window's
 * generation and count; start_gen, when it began and the generation of the
 * window that start belongs to. Every change to either is one atomic
 * instruction. The protocol keeps five invariants:
 *
 * I1. A count belongs to one window. Every charge is one fetch-and-add on
 *     count_gen, and the packet is decided on the value it returned: each
 *     packet sees a distinct running total, so no two take the last unit of
 *     budget. A charge is kept only if it landed in the window whose start
 *     the charging CPU judged open (the generation it returned is that
 *     start's); otherwise it is taken back and the CPU looks again.
 *
 * I2. Generations only move forward. A window ends by one compare-and-swap
 *     of count_gen from the exact word read to (generation + 1, what the
 *     new window holds): a turnover (the first packet after a window is
 *     over), a reset, or a slot passing to another key (table.h). Nothing
 *     ever writes a generation back, so a swap or a take-back prepared on
 *     an old read can only match the window it was read from. Generations
 *     wrap after 2^16 windows: a CPU would have to stall for 65 536 of a
 *     key's windows between a read and its swap, and find the same count
 *     there, to alias; a take-back checks the generation it charged.
 *
 * I3. One window length per state. A key is charged under one set of limits
 *     only (its limit set is part of the key, include/xdp_rl.h), so a
 *     state's window length changes only when `set --window` changes it for
 *     every packet at once; a window then lasts the new length from its
 *     start.
 *
 * I4. A stale reading of the clock may refuse a packet, never admit one. A
 *     window is over when now >= start + length: a reading older than the
 *     truth can only find an open window open (and join it, refusing more)
 *     or an over window open (same); it never ends a window early. The
 *     start of a new window is read from the clock *after* the swap that
 *     opened it, so however stale the reading that found the old one over,
 *     the new window begins no earlier than it really did, and lasts at
 *     least its length. A start further ahead of a reading than
 *     XDP_RL_AHEAD_MAX_NS (an hour) is taken to be on another clock (after
 *     --per-key and --aligned trade places) and is over: no reading is that
 *     stale.
 *
 * I5. Between a turnover's swap of count_gen and its write of start_gen,
 *     the new window has no start (start_gen names the generation before).
 *     Whoever sees that, the winner or a reader, gives it one, with a
 *     compare-and-swap from the start_gen it read, from a clock read after
 *     it saw the new generation; the others join. So a window is started
 *     once, and a stray start (a slot that changed hands) is repaired by
 *     the next reader instead of leaving the window "being opened" for ever.
 *
 * So in each generation the count is exactly the sum of the charges kept in
 * it, and a packet passes iff that sum including it is within the limit:
 * min(offered, limit) packets pass in a window, whatever CPUs they come on.
 *
 * With an LRU table (bpf/lru.h) a window's next generation is not its
 * generation + 1 but the next one a counter hands out to every window of
 * the limiter (window_next_gen), and a window of an element no packet has
 * charged yet is *fresh* (include/xdp_rl.h): only the key it was made for
 * opens it. I2 then reads: a state never takes again a generation it left
 * until the counter has handed out 65 535 others, whatever the kernel
 * copied into its element meanwhile.
 */
#ifndef XDP_RL_WINDOW_H
#define XDP_RL_WINDOW_H

#include "maps.h"

#ifndef READ_ONCE
#define READ_ONCE(x)	 (*(volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile typeof(x) *)&(x) = (v))
#endif

/* Rounds of look, charge or turn over before a packet is refused. */
#define WINDOW_TRIES 4
/* Attempts to take back a charge before leaving it (which only refuses more). */
#define WINDOW_UNDO_TRIES 4
/* A charge's generation when nothing was charged. */
#define WINDOW_NOT_CHARGED (~0ULL)
/* ... because the window is fresh for another key: the element is not the key's (bpf/lru.h). */
#define WINDOW_LOST (~1ULL)

/* How to read the window clock, and how a window opened now is placed. */
struct window_clock {
	__u64 now;	       /* read when the packet came in */
	__s64 tai_to_unix_ns;  /* aligned windows: CLOCK_TAI to Unix time */
	__s64 jiffies_base_ns; /* the tick clock: jiffies * tick_ns + this */
	__u32 tick_ns;
	__u32 flags; /* XDP_RL_F_ALIGNED, XDP_RL_F_COARSE_CLOCK */
};

/*
 * The window clock now: TAI for aligned windows, the tick clock for per-key
 * windows of a second and more, else CLOCK_MONOTONIC; the test clock when
 * loaded with cfg_fake_clock.
 */
static __always_inline __u64 clock_read(__u64 jiffies, __u32 flags, __u32 tick_ns,
					__s64 jiffies_base_ns)
{
	if (cfg_fake_clock)
		return fake_now_ns;
	if (flags & XDP_RL_F_ALIGNED)
		return bpf_ktime_get_tai_ns();
	if (flags & XDP_RL_F_COARSE_CLOCK)
		return jiffies * tick_ns + jiffies_base_ns;
	return bpf_ktime_get_ns();
}

/* How to read the clock under @live, and its reading now. */
static __always_inline void clock_setup(struct window_clock *clk, __u64 jiffies,
					const struct xdp_rl_live *live)
{
	clk->flags = live->flags &
		     (XDP_RL_F_ALIGNED | XDP_RL_F_COARSE_CLOCK | XDP_RL_F_FLEET | XDP_RL_F_BANS);
	clk->tick_ns = live->tick_ns;
	clk->jiffies_base_ns = live->jiffies_base_ns;
	clk->tai_to_unix_ns = live->tai_to_unix_ns;
	clk->now = clock_read(jiffies, live->flags, live->tick_ns, live->jiffies_base_ns);
}

/* The tick count (jiffies); the test clock stands for it too, as if HZ were 250. */
static __always_inline __u64 clock_ticks(void)
{
	return cfg_fake_clock ? fake_now_ns / 4000000 : bpf_jiffies64();
}

/* The clock read again, now (I4: after a swap, for the start of a window). */
static __always_inline __u64 clock_fresh(const struct window_clock *clk)
{
	return clock_read(clock_ticks(), clk->flags, clk->tick_ns, clk->jiffies_base_ns);
}

/* The start_gen of window @gen if it starts now. */
static __always_inline __u64 window_start_now(const struct window_clock *clk, __u64 window_ns,
					      __u64 gen)
{
	return xdp_rl_window_start(clock_fresh(clk), window_ns, clk->flags & XDP_RL_F_ALIGNED,
				   clk->tai_to_unix_ns) |
	       gen;
}

/*
 * The generation of the window that follows generation @g in a state (I2):
 * @g + 1 with the bucket table; with an LRU table the next the counter
 * hands out (1 .. 65 535, never 0: the generation of fresh windows), so
 * that no state takes a generation again before 65 535 other windows have
 * opened anywhere, even an element the kernel gave to another key and
 * filled with fresh windows meanwhile (bpf/lru.h).
 */
__noinline __u64 lru_next_gen(__u64 g)
{
	__u32 k = XDP_RL_LRU_GEN;
	__u64 *ctr, n;

	ctr = bpf_map_lookup_elem(&lru, &k);
	if (!ctr)
		return (g + 1) % XDP_RL_GEN_MASK + 1;
	n = __sync_fetch_and_add(ctr, 1) % XDP_RL_GEN_MASK + 1;
	/* The counter came round to @g: the one after it (I2: never @g itself). */
	return n != g ? n : n % XDP_RL_GEN_MASK + 1;
}

/*
 * The same in a table of kind @lru: a constant where the caller knows the
 * table (the bucket table's inserts), so that its code holds no call to
 * lru_next_gen, whose frame would add to the chain's stack (check-stack.py).
 */
static __always_inline __u64 window_next_gen_in(__u64 g, const int lru)
{
	if (!lru)
		return (g + 1) & XDP_RL_GEN_MASK;
	/* Out of line: what it keeps across the lookup stays off its callers' stacks. */
	return lru_next_gen(g);
}

static __always_inline __u64 window_next_gen(__u64 g)
{
	return window_next_gen_in(g, cfg_table == XDP_RL_TABLE_LRU);
}

/*
 * window_undo - take back a charge of @inc made in window generation @gen.
 * If that window has ended since, there is nothing to take back: the
 * decrement must not land in the next window, where it would admit a
 * packet over the limit (I2). A compare-and-swap that keeps losing gives
 * up, which can only refuse a packet later, never admit one.
 *
 * Global, as window_hit_slow: the verifier checks it once.
 */
__noinline int window_undo(struct xdp_rl_state *s, __u64 gen, __u64 inc)
{
	__u64 c;
	int i;

	if (!s || gen > XDP_RL_GEN_MASK) /* WINDOW_NOT_CHARGED, WINDOW_LOST */
		return 0;
	for (i = 0; i < WINDOW_UNDO_TRIES; i++) {
		c = READ_ONCE(s->count_gen);
		if (xdp_rl_gen_of_count(c) != gen || xdp_rl_count(c) < inc)
			return 0;
		if (__sync_val_compare_and_swap(&s->count_gen, c, c - inc) == c)
			return 0;
	}
	return 0;
}

/*
 * window_close - end the window in @s now, whatever it holds (I2): the
 * count moves to the next generation, empty, with no start, so the next
 * charge starts that window then (I5). Used when a slot passes to another
 * key (table.h) and by `xdp-rl reset` (admin.h). @count: what the next
 * window holds (`reset --count`), 0 otherwise. Returns 0, or -1 if the
 * word changed under each of @tries swaps (charges landing meanwhile):
 * then nothing was written.
 */
static __always_inline int window_close_in(struct xdp_rl_state *s, __u64 count, const int lru,
					   const int tries)
{
	__u64 c;
	int i;

	for (i = 0; i < tries; i++) {
		c = READ_ONCE(s->count_gen);
		if (__sync_val_compare_and_swap(&s->count_gen, c,
						(window_next_gen_in(xdp_rl_gen_of_count(c), lru)
						 << XDP_RL_COUNT_BITS) |
							count) == c)
			return 0;
	}
	return -1;
}

/*
 * Swaps a change asked by user space (admin.h) tries before it says the
 * window is busy, which the command then asks again (user/admin.c).
 */
#define ADMIN_TRIES 32

static __always_inline int window_close(struct xdp_rl_state *s, __u64 count)
{
	return window_close_in(s, count, cfg_table == XDP_RL_TABLE_LRU, ADMIN_TRIES);
}

/*
 * What window_hit_slow did, beside the count it returns; and, in, the fresh
 * windows of the key charged (an LRU table's element: include/xdp_rl.h), or
 * 0 and 0 for any other window.
 */
struct window_charge {
	__u64 gen;    /* the generation charged, WINDOW_NOT_CHARGED or WINDOW_LOST */
	__u32 opened; /* 1 if the charge opened the window */
	__u32 pad;
	union {
		struct {
			__u64 fresh_start, fresh_count; /* in */
		};
		/*
		 * Out, over the same words (the chain's stack has no room for
		 * more): a charge that opened its window because the one before
		 * was over, that window's count_gen and start_gen as the swap
		 * found them (bpf/ban.h: a window that went over its limit bans
		 * its key); 0 and 0 for any other charge.
		 */
		struct {
			__u64 prev_count, prev_start;
		};
	};
};

/*
 * window_drop - count a drop of @inc in the count of @s itself, while that
 * count is at most cfg_hot_after drops past @limit. @c: the count_gen the
 * packet was refused on (its count > @limit), read by the caller. The add
 * is kept only if it landed in that window (I1); one that lands in the
 * next is taken back, and the drop, of a window over, counts nowhere, as
 * hot_flush would leave it (bpf/hot.h). Returns 1 if the drop is dealt
 * with, 0 to count it apart (hot_drop).
 */
static __always_inline int window_drop(struct xdp_rl_state *s, __u64 c, __u64 limit, __u64 inc)
{
	__u64 r;

	/* A u32 times a frame's length: no overflow. */
	if (xdp_rl_count(c) - limit > (__u64)cfg_hot_after * inc)
		return 0;
	r = __sync_fetch_and_add(&s->count_gen, inc) + inc;
	if (xdp_rl_gen_of_count(r) != xdp_rl_gen_of_count(c))
		window_undo(s, xdp_rl_gen_of_count(r), inc);
	return 1;
}

/*
 * window_hit_slow - window_hit for every case but a charge to an open
 * window that lands in it: open a new window, give one that has no start
 * its start, take back a charge that landed in a window other than the one
 * judged open, or a count at saturation. Returns the count including the
 * charge, or XDP_RL_COUNT_SAT if nothing could be charged (the packet is
 * refused). Out of line, and global: the verifier checks it once.
 */
__noinline __u64 window_hit_slow(struct xdp_rl_state *s, const struct window_clock *clk,
				 __u64 window_ns, __u64 inc, struct window_charge *out)
{
	__u64 e, c, g, r, fs, fc;
	int i;

	if (!s || !clk || !out)
		return XDP_RL_COUNT_SAT;
	fs = out->fresh_start;
	fc = out->fresh_count;
	out->opened = 0;
	out->gen = WINDOW_NOT_CHARGED;
	out->prev_count = 0;
	out->prev_start = 0;
	for (i = 0; i < WINDOW_TRIES; i++) {
		e = READ_ONCE(s->start_gen);
		c = READ_ONCE(s->count_gen);
		g = xdp_rl_gen_of_count(c);
		if (fc && (!g ? c != fc : (e & XDP_RL_FRESH_TOP) && e != fs)) {
			/*
			 * In an LRU element (bpf/lru.h): a fresh count that is
			 * not the key's, or a fresh start that is not the key's
			 * beside an opened count (the kernel is copying another
			 * key's fresh windows in): the element went to another
			 * key under this packet. Nothing is charged or written;
			 * the caller looks again.
			 */
			out->gen = WINDOW_LOST;
			return XDP_RL_COUNT_SAT;
		}
		if (!g && fc) {
			/*
			 * The key's own fresh window (E2: its count is the key's
			 * tag): open it whatever its start holds, so that a start
			 * a CPU of another key wrote there while the kernel copied
			 * the element in can never keep it from opening.
			 */
			g = window_next_gen(g);
			if (__sync_val_compare_and_swap(&s->count_gen, c,
							(g << XDP_RL_COUNT_BITS) | inc) != c)
				continue;
			if (__sync_val_compare_and_swap(&s->start_gen, e,
							window_start_now(clk, window_ns, g)) == e)
				out->opened = 1;
			out->gen = g;
			return inc;
		}
		if (g != xdp_rl_gen_of_start(e)) {
			/*
			 * I5: window g has no start yet: give it one, then look
			 * again. Whoever starts a window counts it as opened.
			 */
			if (__sync_val_compare_and_swap(&s->start_gen, e,
							window_start_now(clk, window_ns, g)) == e)
				out->opened = 1;
			continue;
		}
		if (xdp_rl_window_over(e, clk->now, window_ns)) {
			/* I2: open window g + 1 (LRU: the counter's next) with this charge, if no CPU did first. */
			g = window_next_gen(g);
			if (__sync_val_compare_and_swap(&s->count_gen, c,
							(g << XDP_RL_COUNT_BITS) | inc) != c)
				continue;
			/* I4: its start from a clock read after the swap. */
			if (__sync_val_compare_and_swap(&s->start_gen, e,
							window_start_now(clk, window_ns, g)) == e)
				out->opened = 1;
			out->gen = g;
			out->prev_count = c;
			out->prev_start = e;
			return inc;
		}
		r = __sync_fetch_and_add(&s->count_gen, inc) + inc;
		if (xdp_rl_gen_of_count(r) != g) {
			/* I1: it landed in a window after the one judged open. */
			window_undo(s, xdp_rl_gen_of_count(r), inc);
			continue;
		}
		if (xdp_rl_count(r) >= XDP_RL_COUNT_SAT) {
			/*
			 * Saturated: take the add back, so that the count, which has
			 * XDP_RL_COUNT_SAT of headroom left, can never carry into the
			 * generation bits.
			 */
			window_undo(s, g, inc);
			return XDP_RL_COUNT_SAT;
		}
		out->gen = g;
		return xdp_rl_count(r);
	}
	return XDP_RL_COUNT_SAT;
}

/*
 * window_hit - charge @inc to @s and return the window's count including
 * this charge (XDP_RL_COUNT_SAT: refused, nothing charged). If the window
 * was over, a new one opens with this charge and *opened is set. *gen is
 * the generation charged, for window_undo(). @fresh: the fresh windows of
 * the key charged (an LRU element's: start_gen and count_gen), or NULL.
 * @prev, if not NULL: the window before, if this charge opened a window
 * because it was over (struct window_charge's prev_count and prev_start),
 * else 0 and 0.
 */
static __always_inline __u64 window_hit_prev(struct xdp_rl_state *s, const struct window_clock *clk,
					     __u64 window_ns, __u64 inc, int *opened, __u64 *gen,
					     const __u64 *fresh, __u64 *prev)
{
	struct window_charge out = {};
	__u64 e, r;

	/*
	 * The steady state, a window still open: one add, decided on the
	 * count it returned, if it landed in that window (I1).
	 */
	e = READ_ONCE(s->start_gen);
	if (!xdp_rl_window_over(e, clk->now, window_ns)) {
		r = __sync_fetch_and_add(&s->count_gen, inc) + inc;
		if (xdp_rl_gen_of_count(r) == xdp_rl_gen_of_start(e) &&
		    xdp_rl_count(r) < XDP_RL_COUNT_SAT) {
			*gen = xdp_rl_gen_of_count(r);
			if (prev)
				prev[0] = prev[1] = 0;
			return xdp_rl_count(r);
		}
		window_undo(s, xdp_rl_gen_of_count(r), inc);
	}
	if (fresh) {
		out.fresh_start = fresh[0];
		out.fresh_count = fresh[1];
	}
	r = window_hit_slow(s, clk, window_ns, inc, &out);
	*opened |= out.opened;
	*gen = out.gen;
	if (prev) {
		prev[0] = out.prev_count;
		prev[1] = out.prev_start;
	}
	return r;
}

static __always_inline __u64 window_hit(struct xdp_rl_state *s, const struct window_clock *clk,
					__u64 window_ns, __u64 inc, int *opened, __u64 *gen,
					const __u64 *fresh)
{
	return window_hit_prev(s, clk, window_ns, inc, opened, gen, fresh, NULL);
}

#endif /* XDP_RL_WINDOW_H */
