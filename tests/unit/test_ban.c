// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_ban.c - bans (--ban DUR, bpf/ban.h): the packet that takes a window
 * over its limit bans its key for DUR, every packet refused and counted
 * banned, the ban outlasting the window and ending on time; one ban per
 * violation; per layer and per rule, none for a --shared budget; a raised
 * limit does not lift it, a reset does; and under two CPUs nothing passes
 * once the key is banned.
 */
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "harness.h"
#include "admin.h"

/* One layer of @limit per @window_ns, banning for @ban_ns. */
static void set_ban(struct env *e, __u64 limit, __u64 window_ns, __u64 ban_ns)
{
	struct xdp_rl_layer l = { limit, window_ns };
	struct xdp_rl_live live = live_of(1, &l);

	live.ban_ns = ban_ns;
	live.flags |= XDP_RL_F_BANS;
	env_live(e, &live);
}

/* 3/1s, ban 10 s: the 4th packet bans; the ban outlasts the window, ends on time. */
UNIT_TEST(ban_basic)
{
	static const char desc[] = "ban: 3/1s --ban 10s";
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.40.1" });
	struct pkt q = build(&(struct pkt_spec){ V4, "198.18.40.2" });
	struct xdp_rl_stats before;
	__u64 t0;
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "ban: load"))
		return;
	set_ban(&e, 3, SEC_NS, 10 * SEC_NS);
	stats(&e, &before);
	t0 = e.skel->bss->fake_now_ns;
	ASSERT_EQ(send_n(&e, &p, 10), 3, "%s [3 of 10 pass]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_BANS), 1, "%s [one ban]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DROPS_BANNED), 6,
		  "%s [after the 4th (over the limit), 6 banned]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DROPS_LIMIT), 1, "%s [the 4th: the limit]",
		  desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DROPPED), 7, "%s [dropped: all 7]", desc);
	ASSERT_EQ(send_n(&e, &q, 3), 3, "%s [another source is not banned]", desc);
	/* Windows later, still banned; nothing is charged meanwhile. */
	e.skel->bss->fake_now_ns = t0 + 5 * SEC_NS;
	ASSERT_EQ(send_n(&e, &p, 5), 0, "%s [5 s on, a window later: banned]", desc);
	e.skel->bss->fake_now_ns = t0 + 10 * SEC_NS - XDP_RL_GRAIN;
	ASSERT_EQ(send_n(&e, &p, 1), 0, "%s [just before the end: banned]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DROPS_BANNED), 12, "%s [banned: 12]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_BANS), 1, "%s [still one ban]", desc);
	/* Over: a new window, its limit, and a second violation bans again. */
	e.skel->bss->fake_now_ns = t0 + 10 * SEC_NS + XDP_RL_GRAIN;
	ASSERT_EQ(send_n(&e, &p, 5), 3, "%s [after the ban: 3 of 5]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_BANS), 2, "%s [a second ban]", desc);
	env_free(&e);
}

/* No --ban: nothing is banned, whatever XDP_RL_F_BANS says. */
UNIT_TEST(ban_off)
{
	static const char desc[] = "ban: off";
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.40.3" });
	struct xdp_rl_stats before;
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "ban: load"))
		return;
	set_ban(&e, 3, SEC_NS, 0);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &p, 10), 3, "%s [3 of 10]", desc);
	e.skel->bss->fake_now_ns += SEC_NS + XDP_RL_GRAIN;
	ASSERT_EQ(send_n(&e, &p, 10), 3, "%s [next window: 3 of 10]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_BANS), 0, "%s [no ban]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DROPS_BANNED), 0, "%s [none banned]", desc);
	env_free(&e);
}

/* A limit raised under a ban does not lift it; a reset does; set --ban changes new bans only. */
UNIT_TEST(ban_raise_reset)
{
	static const char desc[] = "ban: raise and reset";
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.40.4" });
	__u32 k[4] = { addr4("198.18.40.4") };
	struct xdp_rl_stats before;
	struct env e;

	if (env_open(&e, &(struct load_opts){ .admin = 1 }, "ban: load"))
		return;
	set_ban(&e, 3, 60 * SEC_NS, 30 * SEC_NS);
	ASSERT_EQ(send_n(&e, &p, 5), 3, "%s [3 of 5, banned]", desc);
	set_ban(&e, 100, 60 * SEC_NS, 1 * SEC_NS);
	ASSERT_EQ(send_n(&e, &p, 5), 0, "%s [limit raised to 100 in the window: still banned]",
		  desc);
	e.skel->bss->fake_now_ns += 2 * SEC_NS;
	ASSERT_EQ(send_n(&e, &p, 1), 0, "%s [--ban 1s set: the ban in force keeps its 30 s]", desc);
	ASSERT_EQ(admin_reset(&e.lim, PIN_SRC4, k, TEST_LSID, 0, 1, 0, NULL), 1, "%s [reset]",
		  desc);
	ASSERT_EQ(send_n(&e, &p, 200), 100, "%s [after reset: the limit, 100 of 200]", desc);
	e.skel->bss->fake_now_ns += 1 * SEC_NS + XDP_RL_GRAIN;
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &p, 1), 0, "%s [1 s on: refused ...]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DROPS_LIMIT), 1,
		  "%s [... by the limit: the new ban lasted 1 s]", desc);
	env_free(&e);
}

/* Layers: the hourly layer's crossing bans; the per-second layer's too. */
UNIT_TEST(ban_layers)
{
	static const char desc[] = "ban: 2/1s and 5/1h, --ban 30s";
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.40.5" });
	struct xdp_rl_layer l[2] = { { 2, SEC_NS }, { 5, 3600 * SEC_NS } };
	struct xdp_rl_live live = live_of(2, l);
	struct xdp_rl_stats before;
	__u64 t0;
	struct env e;
	int i, n = 0;

	if (env_open(&e, &(struct load_opts){ .layers = 2 }, "ban: load"))
		return;
	live.ban_ns = 30 * SEC_NS;
	live.flags |= XDP_RL_F_BANS;
	/* The per-second layer first: it bans at its 3rd packet. */
	env_live(&e, &live);
	stats(&e, &before);
	t0 = e.skel->bss->fake_now_ns;
	ASSERT_EQ(send_n(&e, &p, 4), 2, "%s [2 of 4]", desc);
	e.skel->bss->fake_now_ns = t0 + 2 * SEC_NS;
	ASSERT_EQ(send_n(&e, &p, 4), 0, "%s [a second later: banned by the 1 s layer]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_BANS), 1, "%s [one ban]", desc);
	/* After it, the hourly layer (2 used) bans at its 6th packet. */
	e.skel->bss->fake_now_ns = t0 + 31 * SEC_NS;
	for (i = 0; i < 3; i++) {
		n += send_n(&e, &p, 2);
		e.skel->bss->fake_now_ns += SEC_NS + XDP_RL_GRAIN;
	}
	ASSERT_EQ(n, 3, "%s [the hour's 3 left pass]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_BANS), 2, "%s [the hour's layer bans]", desc);
	ASSERT_EQ(send_n(&e, &p, 3), 0, "%s [banned]", desc);
	e.skel->bss->fake_now_ns += 30 * SEC_NS;
	ASSERT_EQ(send_n(&e, &p, 3), 0, "%s [ban over, the hour still full]", desc);
	env_free(&e);
}

/* A per-source rule's ban; a --shared budget is never banned; the global limits' have none. */
UNIT_TEST(ban_rules)
{
	static const char desc[] = "ban: rules";
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.41.1" });
	struct pkt s = build(&(struct pkt_spec){ V4, "198.18.42.1" });
	struct pkt g = build(&(struct pkt_spec){ V4, "198.18.43.1" });
	struct xdp_rl_rule per = {
		.id = 1, .nlayers = 1, .layer = { { 2, SEC_NS } }, .ban_ns = 20 * SEC_NS
	};
	struct xdp_rl_rule shared = { .id = 2,
				      .nlayers = 1,
				      .layer = { { 2, SEC_NS } },
				      .flags = XDP_RL_RULE_F_SHARED,
				      .ban_ns = 20 * SEC_NS };
	struct xdp_rl_layer l = { 2, SEC_NS };
	struct xdp_rl_live live = live_of(1, &l);
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "ban: load"))
		return;
	ASSERT_EQ(rule4(&e, "198.18.41.0", 24, &per), 0, "%s [rule]", desc);
	ASSERT_EQ(rule4(&e, "198.18.42.0", 24, &shared), 0, "%s [shared rule]", desc);
	live.nrules4 = 2;
	live.flags |= XDP_RL_F_BANS;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &a, 5), 2, "%s [per source: 2 of 5]", desc);
	ASSERT_EQ(send_n(&e, &s, 5), 2, "%s [shared: 2 of 5]", desc);
	ASSERT_EQ(send_n(&e, &g, 5), 2, "%s [global: 2 of 5]", desc);
	e.skel->bss->fake_now_ns += SEC_NS + XDP_RL_GRAIN;
	ASSERT_EQ(send_n(&e, &a, 5), 0, "%s [per-source rule's ban holds]", desc);
	ASSERT_EQ(send_n(&e, &s, 5), 2, "%s [the shared budget is not banned]", desc);
	ASSERT_EQ(send_n(&e, &g, 5), 2, "%s [the global limits have no ban]", desc);
	env_free(&e);
}

/*
 * Two CPUs on one key, the clock moved a window on each time its count
 * reaches the limit: every window passes exactly its limit until one goes
 * over, which bans the key for the rest of the test (if none did by the
 * end, one CPU sends until one does). So what passed is a multiple of the
 * limit, one window went over and one ban was made, and the key stays
 * banned: a packet that found the window over while the crossing packet
 * had not yet made the ban (B2) must not pass, which would let a window
 * after it go over too.
 */
UNIT_TEST(ban_two_cpus)
{
	static const char desc[] = "ban: 2 CPUs";
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.6.1" });
	struct ticker t = { .limit = 50, .window_ns = 1000000, .ticked_gen = ~0ULL };
	struct xdp_rl_stats before;
	__u64 passed, bans, over;
	struct env e;
	int r, round, i;

	if (need_two_cpus() || env_open(&e, &(struct load_opts){ .admin = 1 }, "ban: load"))
		return;
	for (round = 0; round < 20; round++) {
		t.e = &e;
		t.ticked_gen = ~0ULL;
		set_ban(&e, t.limit, t.window_ns, 3600 * SEC_NS);
		e.skel->bss->fake_now_ns += 7200 * SEC_NS;
		stats(&e, &before);
		r = hammer2(&e, &p, 20, 50, &t);
		for (i = 0; i < 2 * (int)t.limit + 2; i++)
			if (!stat_delta(&e, &before, XDP_RL_STAT_BANS))
				run(&e, &p, 1);
		passed = stat_delta(&e, &before, XDP_RL_STAT_PASSED);
		bans = stat_delta(&e, &before, XDP_RL_STAT_BANS);
		over = stat_delta(&e, &before, XDP_RL_STAT_OVER_LIMIT);
		ASSERT_EQ(r, 0, "%s [both threads ran]", desc);
		ASSERT_EQ(bans, 1, "%s, round %d: one ban (passed %llu)", desc, round,
			  (unsigned long long)passed);
		ASSERT_EQ(over, 1, "%s, round %d: one window went over", desc, round);
		ASSERT_EQ(passed % t.limit, 0, "%s, round %d: whole windows passed (%llu)", desc,
			  round, (unsigned long long)passed);
		ASSERT_EQ(run(&e, &p, 1), XDP_DROP, "%s, round %d: banned at the end", desc, round);
		e.skel->bss->fake_now_ns += 1800 * SEC_NS;
		ASSERT_EQ(run(&e, &p, 1), XDP_DROP, "%s, round %d: banned half an hour on", desc,
			  round);
		/* A new key for the next round: reset lifts the ban. */
		ASSERT_EQ(admin_reset(&e.lim, PIN_SRC4, (__u32[4]){ addr4("198.18.6.1") },
				      TEST_LSID, 0, 1, 0, NULL),
			  1, "%s [reset]", desc);
	}
	env_free(&e);
}

/*
 * B2 on one CPU: a window over its limit with no ban made for it (what a
 * packet sees that finds it over before the crossing packet made its ban;
 * here `charge` took it over) makes the ban when it turns over, from the
 * window's end, and refuses the packet that opened the next window.
 */
UNIT_TEST(ban_made_at_turnover)
{
	static const char desc[] = "ban: over its limit, no ban made, then over";
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.40.6" });
	struct xdp_rl_layer l = { 3, SEC_NS };
	__u32 k[4] = { addr4("198.18.40.6") };
	struct xdp_rl_stats before;
	struct xdp_rl_state *w;
	__u64 end;
	struct env e;

	if (env_open(&e, &(struct load_opts){ .admin = 1 }, "ban: load"))
		return;
	set_ban(&e, 3, SEC_NS, 10 * SEC_NS);
	stats(&e, &before);
	ASSERT_EQ(admin_charge(&e.lim, PIN_SRC4, k, TEST_LSID, 0, 1, 5, &l), 1, "%s [charge 5]",
		  desc);
	ASSERT_EQ(send_n(&e, &p, 2), 0, "%s [refused in the window ...]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_BANS), 0, "%s [... by the limit, no ban]",
		  desc);
	w = windows4(&e, "198.18.40.6");
	ASSERT_TRUE(w != NULL, "%s [its window]", desc);
	if (!w)
		goto out;
	end = xdp_rl_start_ns(w->start_gen) + SEC_NS;
	e.skel->bss->fake_now_ns = end + 3 * SEC_NS;
	ASSERT_EQ(send_n(&e, &p, 1), 0, "%s [the window over: the next opens, banned]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_BANS), 1, "%s [the ban made then]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DROPS_BANNED), 1, "%s [banned: 1]", desc);
	e.skel->bss->fake_now_ns = end + 10 * SEC_NS - XDP_RL_GRAIN;
	ASSERT_EQ(send_n(&e, &p, 1), 0, "%s [10 s from the window's end: banned]", desc);
	e.skel->bss->fake_now_ns = end + 10 * SEC_NS + 2 * XDP_RL_GRAIN;
	ASSERT_EQ(send_n(&e, &p, 4), 3, "%s [then the limit again]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_BANS), 2, "%s [and a ban again]", desc);
out:
	env_free(&e);
}

/*
 * The bucket table keeps a banned key's slot while its ban may hold: its
 * window over, it is not taken as a stale slot when new sources come
 * (bpf/buckets.h), as a slot whose windows are all over would be.
 */
UNIT_TEST(ban_slot_kept)
{
	static const char desc[] = "ban: a banned key's slot outlives its window";
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.44.1" });
	struct xdp_rl_layer l = { 2, SEC_NS };
	struct xdp_rl_live live = live_of(1, &l);
	char src[32];
	struct env e;
	int i, n = 0;

	if (env_open(&e, &(struct load_opts){ .table = TABLE_BUCKETS, .sources = 16 }, "ban: load"))
		return;
	live.ban_ns = 3600 * SEC_NS;
	live.max_ban_ns = live.ban_ns;
	live.flags |= XDP_RL_F_BANS;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &p, 4), 2, "%s [banned]", desc);
	e.skel->bss->fake_now_ns += 10 * SEC_NS;
	/*
	 * Its window over, new sources fill the table's 32 slots and more,
	 * while the banned key keeps sending: its slot is not taken as one
	 * whose windows are over (the first to go), and it is the source seen
	 * last (the last to go).
	 */
	for (i = 0; i < 64; i++) {
		snprintf(src, sizeof(src), "198.18.46.%d", i + 1);
		struct pkt q = build(&(struct pkt_spec){ V4, src });
		send_n(&e, &q, 1);
		n += send_n(&e, &p, 1);
		e.skel->bss->fake_now_ns += TICK_NS;
	}
	ASSERT_EQ(n, 0, "%s [nothing of the banned key passed]", desc);
	ASSERT_TRUE(windows4(&e, "198.18.44.1") != NULL, "%s [the banned key kept its slot]", desc);
	ASSERT_EQ(send_n(&e, &p, 3), 0, "%s [and its ban]", desc);
	env_free(&e);
}

/* `charge` on a banned key whose window is over opens the next window: the ban goes on. */
UNIT_TEST(ban_survives_charge)
{
	static const char desc[] = "ban: charge after the window";
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.40.7" });
	struct xdp_rl_layer l = { 3, SEC_NS };
	__u32 k[4] = { addr4("198.18.40.7") };
	struct env e;

	if (env_open(&e, &(struct load_opts){ .admin = 1 }, "ban: load"))
		return;
	set_ban(&e, 3, SEC_NS, 60 * SEC_NS);
	ASSERT_EQ(send_n(&e, &p, 5), 3, "%s [banned]", desc);
	e.skel->bss->fake_now_ns += 5 * SEC_NS;
	ASSERT_EQ(admin_charge(&e.lim, PIN_SRC4, k, TEST_LSID, 0, 1, 1, &l), 1, "%s [charge 1]",
		  desc);
	ASSERT_EQ(send_n(&e, &p, 3), 0, "%s [still banned]", desc);
	e.skel->bss->fake_now_ns += 60 * SEC_NS;
	ASSERT_EQ(send_n(&e, &p, 5), 3, "%s [after the ban: the limit]", desc);
	env_free(&e);
}
