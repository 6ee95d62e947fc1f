/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * rate.h - a rate with a hard burst bound (--rate N/DUR --burst B): the
 * generic cell rate algorithm (GCRA), one theoretical arrival time (TAT) per
 * key, moved by a compare-and-swap per passed packet.
 *
 * A unit (a packet, or a byte with --bytes) costs cost = DUR / N ns, rounded
 * up (xdp_rl_rate_cost). A packet of @inc units read the clock at now; it
 * passes iff
 *
 *     max(TAT, now) + cost(inc) - now <= tau,
 *
 * tau, the burst in time: B * cost(1) for packets, floor(B * DUR / N) for
 * bytes (xdp_rl_rate_tau), *
 * and then the TAT becomes max(TAT, now) + cost(inc). The state is a
 * window's two words (include/xdp_rl.h): the episode's start and
 * generation, and TAT - start. Four invariants:
 *
 * R1. The bound. In any interval [t0, t0 + t] of clock readings, the packets
 *     passed with readings in it carry at most B + N * t / DUR units. Every
 *     pass is one compare-and-swap of count_gen from the exact word its
 *     decision was made on, so the passes are in one order and each moves
 *     the TAT from the value it read: the first of them sets TAT >= its now
 *     + its cost >= t0 + its cost, every later one adds at least its cost,
 *     and the last leaves TAT <= its now + tau <= t0 + t + tau. So the costs
 *     sum to at most t + tau, and as each cost is at least its units * DUR /
 *     N, the units to at most N * t / DUR + B. Nothing else lowers a TAT but
 *     a take-back (R3), a reset, or a key's state given to another key.
 *
 * R2. Refusals write nothing but, once per episode, the REFUSING flag: a
 *     refused packet costs a read (the drop is counted in `hot`, hot.h), and
 *     the first refusal of an episode is the one that reports it (events.h)
 *     and bans (ban.h's B1 with its compare-and-swap of the flag).
 *
 * R3. A take-back only goes back to where that pass found the TAT (or
 *     later): it swaps the word it wrote for the same less its cost, and
 *     only while the word is unchanged (no pass was decided on it since).
 *     A take-back that loses leaves the charge, which only refuses more.
 *
 * R4. Episodes and generations. A charge of a key that owes nothing (TAT
 *     <= now), or whose offset would outgrow its bits, begins an episode: a
 *     new generation (window.h's I2), its start the charging CPU's reading
 *     rounded down to a grain, the offset exact from it. As a window's, the
 *     count word moves first; whoever sees a count of a generation whose
 *     start is not there yet (I5) gives it one from its own reading, taken
 *     after it saw the count, rounded down: never earlier than the opener's
 *     start, so a TAT read from it is never earlier than the opener's: R1
 *     holds with it. A reset or a slot given to another key moves the
 *     generation on with an offset of 0: the TAT is then the start, which
 *     owes nothing.
 *
 * A rate reads the window clock, which user space keeps precise for rates
 * (neither aligned nor the tick clock: user/live.c).
 */
#ifndef XDP_RL_RATE_H
#define XDP_RL_RATE_H

#include "maps.h"
#include "window.h"

/*
 * What rate_hit is given and gives back, in two words (the struct charge's,
 * not the stack: check-stack.py). In: the key's fresh windows (an LRU
 * element's, window.h: start_gen in @word, count_gen in @how), or 0 and 0.
 * Out: @word, the count_gen a pass wrote
 * (rate_undo), 0 if refused; @how, the generation (RATE_NO_GEN if none)
 * and the RATE_* bits below.
 */
struct rate_io {
	__u64 word;
	__u64 how;
	/*
	 * In, an LRU table: 0, or the generation to begin an episode with
	 * after generation g, as (g << 16) | next: rate_hit asks for it
	 * (RATE_NEED_GEN) and its caller takes it from lru_next_gen, out of
	 * line, so that rate_hit calls nothing (check-stack.py) and the
	 * verifier walks no lookup in its loop.
	 */
	__u64 next;
};

#define RATE_NO_GEN   0xffffffffULL
#define RATE_OPENED   (1ULL << 32) /* it began an episode */
#define RATE_FIRST    (1ULL << 33) /* refused: the first refusal of its episode (R2) */
#define RATE_LOST     (1ULL << 34) /* an LRU element that went to another key: nothing done */
#define RATE_NEED_GEN (1ULL << 35) /* an episode to begin after generation how & 0xffff: io->next */

/* A reading of the clock for a rate: never below a grain, so that an episode's start is never 0. */
static __always_inline __u64 rate_now(__u64 now)
{
	return now < XDP_RL_GRAIN ? XDP_RL_GRAIN : now;
}

/*
 * rate_hit - charge @inc units to the rate @lay in @s (R1..R4), @io as
 * struct rate_io says. Returns 1 if the packet passes, 0 if it is refused
 * (also when the word kept changing under every swap: refusing, never
 * passing). Global: the verifier checks it once.
 */
__noinline int rate_hit(struct xdp_rl_state *s, const struct window_clock *clk,
			const struct xdp_rl_layer *lay, __u64 inc, struct rate_io *io)
{
	__u64 e, c, g, now, start, tat, w, cost, tau;
	int i;

	if (!s || !clk || !lay || !io)
		return 0;
	tau = xdp_rl_rate_tau(lay, cfg_bytes);
	now = rate_now(clk->now);
	cost = xdp_rl_rate_cost(lay->per_fp, inc);
	/*
	 * A frame larger than the burst (--bytes) never passes: refused as is,
	 * nothing written (an LRU element's fresh state takes no flag).
	 */
	for (i = 0; i < WINDOW_TRIES && cost <= tau; i++) {
		e = READ_ONCE(s->start_gen);
		c = READ_ONCE(s->count_gen);
		g = xdp_rl_gen_of_count(c);
		/* io holds the key's fresh windows until the end (struct rate_io). */
		if (io->how && (!g ? c != io->how : (e & XDP_RL_FRESH_TOP) && e != io->word)) {
			/* An LRU element that went to another key under this packet (window.h). */
			io->word = 0;
			io->how = RATE_LOST | RATE_NO_GEN;
			return 0;
		}
		start = xdp_rl_start_ns(e);
		if (!(io->how && !g) && g != xdp_rl_gen_of_start(e)) {
			/* R4 (I5): generation g has no start yet: give it one, then look again. */
			__sync_val_compare_and_swap(
				&s->start_gen, e,
				(rate_now(clock_fresh(clk)) & ~XDP_RL_GEN_MASK) | g);
			continue;
		}
		/*
		 * The TAT; 0 (owes nothing) for the key's own fresh state (an LRU
		 * element's), one never charged, or one begun on another clock.
		 */
		tat = start + (c & XDP_RL_RATE_OFF_MASK);
		if ((io->how && !g) || !start || start > now + XDP_RL_AHEAD_MAX_NS)
			tat = 0;
		w = (tat > now ? tat : now) + cost; /* the TAT after this packet */
		if (w - now > tau) {
			/* Refused (R2): the episode's first refusal sets the flag. */
			io->word = 0;
			io->how = g;
			if (!(c & XDP_RL_RATE_REFUSING) &&
			    __sync_val_compare_and_swap(&s->count_gen, c,
							c | XDP_RL_RATE_REFUSING) == c)
				io->how |= RATE_FIRST;
			return 0;
		}
		if (tat > now && w - start <= XDP_RL_RATE_OFF_MASK) {
			/* The episode goes on, and its flag with it. */
			w = (g << XDP_RL_COUNT_BITS) | (c & XDP_RL_RATE_REFUSING) | (w - start);
			if (__sync_val_compare_and_swap(&s->count_gen, c, w) != c)
				continue;
			io->word = w;
			io->how = g;
			return 1;
		}
		/* R4: a new episode (or a new offset, the flag kept), from this reading rounded down. */
		if (cfg_table == XDP_RL_TABLE_LRU) {
			if (!io->next || io->next >> 16 != g) {
				io->word = 0;
				io->how = g | RATE_NEED_GEN;
				return 0;
			}
			g = io->next & XDP_RL_GEN_MASK;
		} else {
			g = (g + 1) & XDP_RL_GEN_MASK;
		}
		w = (g << XDP_RL_COUNT_BITS) | (tat > now ? c & XDP_RL_RATE_REFUSING : 0) |
		    (w - (now & ~XDP_RL_GEN_MASK));
		if (__sync_val_compare_and_swap(&s->count_gen, c, w) != c)
			continue;
		__sync_val_compare_and_swap(&s->start_gen, e, (now & ~XDP_RL_GEN_MASK) | g);
		io->word = w;
		io->how = g | RATE_OPENED;
		return 1;
	}
	io->word = 0;
	io->how = RATE_NO_GEN;
	return 0;
}

/* R3: take back a pass of @inc units under @lay that wrote @written, if nothing moved since. */
static __always_inline void rate_undo(struct xdp_rl_state *s, const struct xdp_rl_layer *lay,
				      __u64 written, __u64 inc)
{
	__u64 cost = xdp_rl_rate_cost(lay->per_fp, inc);

	if (!written || (written & XDP_RL_RATE_OFF_MASK) < cost)
		return;
	__sync_val_compare_and_swap(&s->count_gen, written, written - cost);
}

/*
 * Whether the rate @lay in @s refuses a packet of @inc units on a read,
 * the episode's first refusal made already (R2): its generation in *gen.
 * Anything else (it would pass, the first refusal is still to make, the
 * state is being begun): 0, for rate_hit.
 */
static __always_inline int rate_exhausted(struct xdp_rl_state *s, const struct xdp_rl_layer *lay,
					  __u64 now, __u64 inc, __u64 *gen)
{
	__u64 e = READ_ONCE(s->start_gen), c = READ_ONCE(s->count_gen), tat;

	if (!(c & XDP_RL_RATE_REFUSING))
		return 0;
	tat = xdp_rl_rate_tat(e, c);
	now = rate_now(now);
	if (!xdp_rl_gen_of_count(c) || tat <= now || xdp_rl_start_ns(e) > now + XDP_RL_AHEAD_MAX_NS)
		return 0;
	if (tat + xdp_rl_rate_cost(lay->per_fp, inc) - now <= xdp_rl_rate_tau(lay, cfg_bytes))
		return 0;
	*gen = xdp_rl_gen_of_count(c);
	return 1;
}

#endif /* XDP_RL_RATE_H */
