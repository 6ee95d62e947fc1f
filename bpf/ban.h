/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * ban.h - a key that goes over its limit is refused everything for a time
 * (--ban DUR).
 *
 * A ban is a word per window (include/xdp_rl.h: when it ends, and the
 * generation of the window it holds): the `bans` map's, laid out as
 * `drops`, for the bucket table; the element's for an LRU table. It holds
 * while that window is the state's window now and its end is ahead, so a
 * window that is reset, or a slot that passes to another key (both move the
 * generation on: window.h, I2), lifts it. While any ban may hold
 * (XDP_RL_F_BANS), every charge looks at the key's ban words first, and a
 * key under a ban is refused without a charge (ban_holds): its windows do
 * not move, so the ban keeps naming the window it was made in. Three
 * invariants:
 *
 * B1. A ban per violation. Exactly one packet takes a window over its
 *     limit (events.h): that packet makes the ban (ban_record), from its
 *     own reading of the clock, with a compare-and-swap that writes the
 *     word only while the window is still the state's and the word does not
 *     already hold a ban of it. Whoever writes a ban first counts it
 *     (bans).
 *
 * B2. Nothing passes after the violation. A packet that looked at the ban
 *     word before the crossing packet wrote it, and then found the window
 *     over, opens the next window (window.h) while the ban is not yet
 *     there. So whoever opens a window after one that went over its limit
 *     (the swap says what the window held: struct window_charge's prev)
 *     makes sure of the ban (ban_turnover): carries the crossing packet's
 *     ban to the window it opened, or makes it, if not there yet, from the
 *     window's end at the latest; then, if the ban holds, it takes its
 *     charges back and the packet is refused. The crossing packet's own
 *     swap then finds the window moved on, and writes nothing.
 *
 * B3. A stale ban never holds. A ban names one generation of one state;
 *     the generation comes round again only after 65 536 of the state's
 *     windows (an LRU table: of the limiter's), and a ban older than that
 *     ended long before (a ban is at most XDP_RL_BAN_MAX_NS, and a ban on
 *     another clock, further ahead than that, is taken as over).
 *
 * --ban 0 (off) stops new bans; those in force run out. Turning bans off
 * leaves XDP_RL_F_BANS set (user space keeps it while a ban may hold), so
 * the look costs one more word per packet until the next load.
 */
#ifndef XDP_RL_BAN_H
#define XDP_RL_BAN_H

#include "maps.h"
#include "window.h"

/* Swaps of a ban word before giving up (B1: another CPU made it; B2: refuse). */
#define BAN_TRIES 4

/* The ban word of layer @layer of slot @index of table @t in the `bans` map (the bucket table). */
static __always_inline __u64 *ban_word_at(__u32 t, __u32 index, __u32 layer)
{
	__u32 k = drops_index(t, index, layer, cfg_layers);

	return bpf_map_lookup_elem(&bans, &k);
}

/* One more ban (B1: the one that wrote it counts it). */
static __always_inline void ban_count(void)
{
	__u32 zero = 0;
	struct xdp_rl_stats *st = bpf_map_lookup_elem(&stats, &zero);

	if (st)
		st->c[XDP_RL_STAT_BANS]++;
}

/*
 * ban_record - this packet's charge took window @gen of @s over its limit
 * (B1): ban it for @ban_ns from @now, in @word. Returns 1 if it made the
 * ban; 0 if the window moved on (reset, or opened again by a packet that
 * made sure of the ban: B2) or a ban of it is there already. Global: the
 * verifier checks it once.
 */
__noinline int ban_record(__u64 *word, struct xdp_rl_state *s, __u64 gen, __u64 now, __u64 ban_ns)
{
	__u64 b;
	int i;

	if (!word || !s || !ban_ns)
		return 0;
	for (i = 0; i < BAN_TRIES; i++) {
		b = READ_ONCE(*word);
		if (xdp_rl_gen_of_count(READ_ONCE(s->count_gen)) != gen)
			return 0;
		if (xdp_rl_gen_of_start(b) == gen && xdp_rl_start_ns(b) > now)
			return 0;
		if (__sync_val_compare_and_swap(word, b, xdp_rl_ban_word(now + ban_ns, gen)) == b) {
			ban_count();
			return 1;
		}
	}
	return 0;
}

/*
 * ban_turnover - this packet opened window @gen after the window @prev_gen,
 * which went over its limit and ended at @prev_end (B2): make sure the ban
 * of that violation names @gen in @word, and say whether it holds at @now
 * (the packet is then refused). The ban is the crossing packet's if it made
 * it, else one of @ban_ns from @prev_end or @now, whichever is earlier.
 * Returns 1 if the key is banned, also when the word kept changing under
 * every swap (refusing, never passing).
 */
__noinline int ban_turnover(__u64 *word, __u64 gen, __u64 prev_end_gen, __u64 now, __u64 ban_ns)
{
	__u64 b, until, prev_gen = prev_end_gen & XDP_RL_GEN_MASK,
			prev_end = xdp_rl_start_ns(prev_end_gen);
	int i, made;

	if (!word)
		return 0;
	for (i = 0; i < BAN_TRIES; i++) {
		b = READ_ONCE(*word);
		made = 0;
		until = xdp_rl_start_ns(b);
		if (xdp_rl_gen_of_start(b) == (gen & XDP_RL_GEN_MASK) && until)
			return until > now; /* carried here already */
		if (xdp_rl_gen_of_start(b) != prev_gen || !until) {
			/* The crossing packet has not made it yet: make it. */
			until = (prev_end < now ? prev_end : now) + ban_ns;
			made = 1;
		}
		if (until <= now)
			return 0; /* served already */
		if (__sync_val_compare_and_swap(word, b, xdp_rl_ban_word(until, gen)) == b) {
			if (made)
				ban_count();
			return 1;
		}
	}
	return 1;
}

#endif /* XDP_RL_BAN_H */
