/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * window.h - an exact fixed-window counter shared by every CPU.
 *
 * Why it is exact. A source's state is two words (include/xdp_rl.h):
 * count_gen holds the window generation and the count; expires_gen holds the
 * window end and the generation of the window it describes. Every change to
 * count_gen is a single atomic instruction:
 *
 *   - a hit in the current window is one fetch-and-add, and the decision is
 *     taken on the value that add returned, so each packet sees a distinct
 *     running total and no two packets can both take the last unit of budget;
 *   - a window turnover is one compare-and-swap from the exact word that was
 *     read (old generation, old count) to (generation + 1, this increment).
 *     Only one CPU can win it; a CPU that loses re-reads and joins the
 *     window the winner opened. An add that lands just before the swap makes
 *     the swap fail (the word changed), so it is never wiped out unseen; an
 *     add that lands after it is counted in the new window;
 *   - taking a charge back (a refused layer, a saturated count) is a
 *     compare-and-swap that succeeds only while the word still holds the
 *     generation that was charged, so it never lands in a newer window.
 *
 * So in each window generation the count is exactly the sum of the increments
 * applied to it, and a packet passes iff the total including it is within the
 * limit: min(offered, limit) packets pass, whatever CPUs they arrive on.
 *
 * The winner of a turnover then sets expires_gen to the new window's end and
 * generation. Between the two, readers see expires_gen describe an older
 * generation than count_gen holds: the new window has no end yet. They give
 * it one themselves, with a compare-and-swap from the expires_gen they read
 * (whoever is first, the winner or a reader, sets it; the end is "now plus
 * a window" either way), and then add to that window: they never turn it
 * over a second time. The winner's own write is that same compare-and-swap,
 * so it cannot land on a slot that has meanwhile passed to another key
 * (table.h); and should such a stray end ever land, the next reader
 * after it sees the mismatch and repairs it the same way, rather than
 * treating the window as "being opened" for ever. Readers load expires_gen
 * before count_gen; the writer's swap of count_gen (a full barrier) comes
 * before its write of expires_gen.
 */
#ifndef XDP_RL_WINDOW_H
#define XDP_RL_WINDOW_H

#include "maps.h"

#ifndef READ_ONCE
#define READ_ONCE(x)		(*(volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile typeof(x) *)&(x) = (v))
#endif

/* Turnover attempts before a packet simply joins whatever window is there. */
#define WINDOW_TURNOVER_TRIES	4
/* Attempts to take back a charge before leaving it (which only refuses more). */
#define WINDOW_UNDO_TRIES	4
/* window_hit's *gen when it charged nothing (the count is saturated). */
#define WINDOW_NOT_CHARGED	(~0ULL)

/* The time, and how a window opened now ends. */
struct window_clock {
	__u64 now;		/* CLOCK_MONOTONIC(_COARSE), or CLOCK_TAI if aligned */
	__s64 tai_to_unix_ns;
	__u32 aligned;
	__u32 pad;		/* 0: a global function's argument is read whole */
};

static __always_inline __u64 gen_of_count(__u64 count_gen)
{
	return count_gen >> XDP_RL_COUNT_BITS;
}

/*
 * The end of a window opened now, rounded up to the grain of expires_gen.
 * Per key: one window length from now. Aligned: the next multiple of the
 * window length since the Unix epoch, on the TAI clock @now comes from.
 * Only a turnover pays for the division.
 */
static __always_inline __u64 window_end(const struct window_clock *clk, __u64 window_ns)
{
	__u64 end, unix_ns;

	if (clk->aligned) {
		unix_ns = clk->now + clk->tai_to_unix_ns;
		end = (unix_ns / window_ns + 1) * window_ns - clk->tai_to_unix_ns;
	} else {
		end = clk->now + window_ns;
	}
	return (end + XDP_RL_EXP_GRAIN - 1) & ~XDP_RL_GEN_MASK;
}

/*
 * window_undo - take back a charge of @inc made by window_hit() in window
 * generation @gen. If that window has ended since, there is nothing to take
 * back: the decrement must not land in the next window, where it would
 * admit a packet over the limit. A compare-and-swap that keeps losing gives
 * up, which can only refuse a packet later, never admit one.
 *
 * Global, as window_hit_slow: the verifier checks it once.
 */
__noinline int window_undo(struct xdp_rl_state *s, __u64 gen, __u64 inc)
{
	__u64 c;
	int i;

	if (!s || gen == WINDOW_NOT_CHARGED)
		return 0;
	for (i = 0; i < WINDOW_UNDO_TRIES; i++) {
		c = READ_ONCE(s->count_gen);
		if (gen_of_count(c) != gen || xdp_rl_count(c) < inc)
			return 0;
		if (__sync_val_compare_and_swap(&s->count_gen, c, c - inc) == c)
			return 0;
	}
	return 0;
}

/*
 * window_close - end the window in @s now, whatever it holds: the next
 * charge opens a new one, as after a window that ran out. Used when a slot
 * passes to another key (table.h); `xdp-rl reset` does the same from user
 * space. The end it writes (0) carries the generation of the count it read,
 * so the window reads as over, not as "being opened"; a turnover that
 * slips in between changes expires_gen and makes the swap fail and retry.
 */
static __always_inline void window_close(struct xdp_rl_state *s)
{
	__u64 e, c;
	int i;

	for (i = 0; i < WINDOW_TURNOVER_TRIES; i++) {
		e = READ_ONCE(s->expires_gen);
		c = READ_ONCE(s->count_gen);
		if (__sync_val_compare_and_swap(&s->expires_gen, e, gen_of_count(c)) == e)
			return;
	}
}

/* What window_hit_slow did, beside the count it returns. */
struct window_charge {
	__u64 gen;		/* the generation charged, or WINDOW_NOT_CHARGED */
	__u32 opened;		/* 1 if the charge opened the window */
	__u32 pad;
};

/*
 * window_hit_slow - window_hit for a window that is over (open a new one,
 * or join the one another CPU just opened) or a count that saturated. Out
 * of line: these happen once a window, and inlined at every charge they
 * multiplied the paths the verifier walks; as a global function it is
 * checked once.
 */
__noinline __u64 window_hit_slow(struct xdp_rl_state *s, const struct window_clock *clk,
				 __u64 window_ns, __u64 inc, struct window_charge *out)
{
	__u64 e, c, g, next, r;
	int i;

	if (!s || !clk || !out)
		return XDP_RL_COUNT_SAT;
	out->opened = 0;
	e = READ_ONCE(s->expires_gen);
	for (i = 0; i < WINDOW_TURNOVER_TRIES; i++) {
		if (!xdp_rl_window_over(e, clk->now, window_ns))
			break;	/* a current window: join it */
		c = READ_ONCE(s->count_gen);
		g = gen_of_count(c);
		if (g != (e & XDP_RL_GEN_MASK)) {
			/* Window g has no end yet: give it one, then join it. */
			__sync_val_compare_and_swap(&s->expires_gen, e,
						    window_end(clk, window_ns) | g);
		} else {
			g = (g + 1) & XDP_RL_GEN_MASK;
			next = (g << XDP_RL_COUNT_BITS) | inc;
			if (__sync_val_compare_and_swap(&s->count_gen, c, next) == c) {
				__sync_val_compare_and_swap(&s->expires_gen, e,
							    window_end(clk, window_ns) | g);
				out->opened = 1;
				out->gen = g;
				return inc;
			}
		}
		e = READ_ONCE(s->expires_gen);
	}
	r = __sync_fetch_and_add(&s->count_gen, inc) + inc;
	if (xdp_rl_count(r) >= XDP_RL_COUNT_SAT) {
		/*
		 * Saturated: take the add back, so that the count, which has
		 * XDP_RL_COUNT_SAT of headroom left, can never carry into the
		 * generation bits.
		 */
		window_undo(s, gen_of_count(r), inc);
		out->gen = WINDOW_NOT_CHARGED;
		return XDP_RL_COUNT_SAT;
	}
	out->gen = gen_of_count(r);
	return xdp_rl_count(r);
}

/*
 * window_hit - charge @inc to @s and return the window's count including
 * this charge (saturated at XDP_RL_COUNT_SAT). If the window is over, a new
 * one opens with this charge and *opened is set. *gen is the generation of
 * the window charged, for window_undo().
 */
static __always_inline __u64 window_hit(struct xdp_rl_state *s,
					const struct window_clock *clk,
					__u64 window_ns, __u64 inc,
					int *opened, __u64 *gen)
{
	struct window_charge out = {};
	__u64 r;

	/*
	 * The steady state, a window still open: one add. Its return value says
	 * which window it landed in (a turnover may have happened since e was
	 * read), and the packet is decided on that window's count.
	 */
	if (!xdp_rl_window_over(READ_ONCE(s->expires_gen), clk->now, window_ns)) {
		r = __sync_fetch_and_add(&s->count_gen, inc) + inc;
		if (xdp_rl_count(r) < XDP_RL_COUNT_SAT) {
			*gen = gen_of_count(r);
			return xdp_rl_count(r);
		}
		window_undo(s, gen_of_count(r), inc);	/* saturated: see window_hit_slow */
		*gen = WINDOW_NOT_CHARGED;
		return XDP_RL_COUNT_SAT;
	}
	r = window_hit_slow(s, clk, window_ns, inc, &out);
	*opened |= out.opened;
	*gen = out.gen;
	return r;
}

#endif /* XDP_RL_WINDOW_H */
