// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_window.c - the window of one key on the test clock: turnover, live
 * limit changes, dry run, the saturated count, a stray window end, aligned
 * windows; keys by prefix, and limits in bytes.
 */
#include <errno.h>
#include <arpa/inet.h>

#include "admin.h"
#include "harness.h"

UNIT_TEST(window)
{
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.2.1" });
	struct pkt b = build(&(struct pkt_spec){ V4, "198.18.2.2" });
	struct pkt c = build(&(struct pkt_spec){ V4, "198.18.2.3" });
	struct xdp_rl_stats before;
	struct env e;
	__u64 t0;

	if (env_open(&e, &(struct load_opts){ 0 }, "window: load"))
		return;
	env_set(&e, 5, 10 * SEC_NS, 0);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &a, 8), 5, "window: 8 offered, limit 5 -> 5 pass");
	ASSERT_EQ(count4(&e, "198.18.2.1"), 8, "window: the count includes drops (8)");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DROPPED), 3,
		  "window: 3 dropped, 1 window opened [dropped]");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_NEW_WINDOWS), 1,
		  "window: 3 dropped, 1 window opened [opened]");
	ASSERT_EQ(send_n(&e, &b, 2), 2, "window: another source has its own budget");

	/*
	 * Per key: the window ends one length after its first packet, whose
	 * time is rounded up to XDP_RL_GRAIN (65.5 us) for its start.
	 */
	t0 = e.skel->bss->fake_now_ns;
	e.skel->bss->fake_now_ns = t0 + 10 * SEC_NS - 1000;
	ASSERT_EQ(send_n(&e, &a, 1), 0, "window: still closed 1us before the end");
	e.skel->bss->fake_now_ns = t0 + 10 * SEC_NS + XDP_RL_GRAIN;
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &a, 7), 5,
		  "window: turnover at the end -> 5 of 7 pass, count restarts at 7 [passed]");
	ASSERT_EQ(count4(&e, "198.18.2.1"), 7,
		  "window: turnover at the end -> 5 of 7 pass, count restarts at 7 [count]");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_NEW_WINDOWS), 1,
		  "window: turnover counted as a new window");

	/* A live limit applies to the open window at once. */
	env_set(&e, 9, 10 * SEC_NS, 0);
	/*
	 * The window (5 passed of 7) counts all 7: the packet that took it
	 * over is charged (bpf/events.h), and a window's first drops after it
	 * are counted in its count (bpf/hot.h), so raising the limit gives the
	 * difference: 9 - 7.
	 */
	ASSERT_EQ(send_n(&e, &a, 5), 2, "window: limit raised 5 -> 9 mid-window: 2 more pass");
	ASSERT_EQ(send_n(&e, &c, 2), 2, "window: a third source sends 2 of 9");
	env_set(&e, 3, 10 * SEC_NS, 0);
	ASSERT_EQ(send_n(&e, &c, 3), 1,
		  "window: limit lowered 9 -> 3: the source at 2 gets 1 more");

	/* A shorter --window applies to open windows: they end one new length after they began. */
	env_set(&e, 3, 1 * SEC_NS, 0);
	ASSERT_EQ(send_n(&e, &a, 4), 0,
		  "window: window shortened 10s -> 1s: the window, 0s old, keeps its count");
	e.skel->bss->fake_now_ns += SEC_NS + XDP_RL_GRAIN;
	ASSERT_EQ(send_n(&e, &a, 4), 3, "window: ... until 1s after it began: a new window opens");
	e.skel->bss->fake_now_ns += SEC_NS + XDP_RL_GRAIN;
	ASSERT_EQ(send_n(&e, &a, 1), 1, "window: ... and the new window is 1s long");

	/* Dry run: over the limit passes, counted as would-drop. */
	env_set(&e, 3, 10 * SEC_NS, XDP_RL_F_DRY_RUN);
	e.skel->bss->fake_now_ns += 20 * SEC_NS;
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &a, 5), 5,
		  "window: dry run passes all 5, 2 would-drop, 0 dropped [passed]");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_WOULD_DROP), 2,
		  "window: dry run passes all 5, 2 would-drop, 0 dropped [would-drop]");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DROPPED), 0,
		  "window: dry run passes all 5, 2 would-drop, 0 dropped [dropped]");
	env_free(&e);
}

/* A count at saturation stays there: an add never carries into the generation. */
UNIT_TEST(saturation)
{
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.2.9" });
	struct xdp_rl_state *w, sat;
	struct env e;
	__u64 gen;

	if (env_open(&e, &(struct load_opts){ 0 }, "saturation: load"))
		return;
	env_set(&e, 100, 3600 * SEC_NS, 0);
	send_n(&e, &a, 1); /* its slot */
	w = windows4(&e, "198.18.2.9");
	if (ASSERT_TRUE(w, "saturation: the source has a slot")) {
		/* Its window, in the generation it has (an LRU table's are not 0), at saturation. */
		gen = xdp_rl_gen_of_count(w->count_gen);
		sat = (struct xdp_rl_state){
			.start_gen =
				xdp_rl_window_start(e.skel->bss->fake_now_ns, 3600 * SEC_NS, 0, 0) |
				gen,
			.count_gen = gen << XDP_RL_COUNT_BITS | (XDP_RL_COUNT_SAT - 1),
		};
		ASSERT_EQ(windows4_put(&e, "198.18.2.9", 0, &sat), 0, "saturation: window set");
		ASSERT_EQ(send_n(&e, &a, 3), 0,
			  "saturation: a source at the saturated count is dropped");
		w = windows4(&e, "198.18.2.9");
		ASSERT_EQ(w->count_gen, sat.count_gen,
			  "saturation: the count stays below the generation bits (%#llx)",
			  (unsigned long long)w->count_gen);
	}
	env_free(&e);
}

/*
 * A window start written for another key: a slot may pass to another key
 * while a CPU is between its turnover swap and its write of the start, so
 * that start_gen names a generation count_gen never reached. The window
 * must still get a start and end, not stay "being opened" with the source
 * dropped for good: the next packet gives it a start (window.h, I5).
 */
UNIT_TEST(stray_start)
{
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.2.10" });
	struct xdp_rl_state *w, st, stray;
	struct env e;
	__u64 now, gen;

	if (env_open(&e, &(struct load_opts){ 0 }, "stray start: load"))
		return;
	now = e.skel->bss->fake_now_ns;
	env_set(&e, 5, 10 * SEC_NS, 0);
	send_n(&e, &a, 1); /* its slot */
	w = windows4(&e, "198.18.2.10");
	if (ASSERT_TRUE(w, "stray start: the source has a slot")) {
		/* Its window's generation g (an LRU table's is not 0), count 20, and a start of g + 7. */
		gen = xdp_rl_gen_of_count(w->count_gen);
		stray = (struct xdp_rl_state){
			.start_gen = ((now - SEC_NS) & ~XDP_RL_GEN_MASK) | ((gen + 7) & 0xffff),
			.count_gen = gen << XDP_RL_COUNT_BITS | 20, /* over the limit */
		};
		ASSERT_EQ(windows4_put(&e, "198.18.2.10", 0, &stray), 0, "stray start: window set");
		ASSERT_EQ(send_n(&e, &a, 1), 0,
			  "stray start: the count it has (20 of 5) still holds");
		st = *windows4(&e, "198.18.2.10");
		ASSERT_EQ(xdp_rl_gen_of_start(st.start_gen), gen,
			  "stray start: repaired to its generation, starting now [generation]");
		ASSERT_EQ(xdp_rl_start_ns(st.start_gen),
			  xdp_rl_window_start(now, 10 * SEC_NS, 0, 0),
			  "stray start: repaired to its generation, starting now [start]");
		e.skel->bss->fake_now_ns = now + 10 * SEC_NS + XDP_RL_GRAIN;
		ASSERT_EQ(send_n(&e, &a, 7), 5,
			  "stray start: the window then turns over: 5 of 7 pass [passed]");
		ASSERT_EQ(count4(&e, "198.18.2.10"), 7,
			  "stray start: the window then turns over: 5 of 7 pass [count]");
	}
	env_free(&e);
}

UNIT_TEST(aligned)
{
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.3.1" });
	__u64 w = 10 * SEC_NS, boundary = 200 * w;
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "aligned: load"))
		return;
	/* The test clock stands for TAI; tai_to_unix_ns is 0 here. */
	env_set(&e, 4, w, XDP_RL_F_ALIGNED);
	e.skel->bss->fake_now_ns = boundary - 2 * SEC_NS;
	ASSERT_EQ(send_n(&e, &a, 6), 4, "aligned: 4 of 6 pass, 2s before a boundary");
	e.skel->bss->fake_now_ns = boundary - 1;
	ASSERT_EQ(send_n(&e, &a, 1), 0, "aligned: still closed 1ns before the boundary");
	/* A start is rounded up to XDP_RL_GRAIN: the window begins at the multiple, to 65.5 us. */
	e.skel->bss->fake_now_ns = boundary + XDP_RL_GRAIN;
	ASSERT_EQ(send_n(&e, &a, 6), 4, "aligned: a new window at the multiple of 10s");
	e.skel->bss->fake_now_ns = boundary + w - 1;
	ASSERT_EQ(send_n(&e, &a, 1), 0,
		  "aligned: the window ends at the next multiple, not 10s after its first packet");
	env_free(&e);
}

/* --v4-prefix and --v6-prefix: sources in one prefix share one key. */
UNIT_TEST(prefixes)
{
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.4.1" });
	struct pkt b = build(&(struct pkt_spec){ V4, "198.18.4.200" });
	struct pkt c = build(&(struct pkt_spec){ V6, "2001:2:0:1::1" });
	struct pkt d = build(&(struct pkt_spec){ V6, "2001:2:0:1::2" });
	struct env e;

	if (env_open(&e, &(struct load_opts){ .v4_prefix = 24, .v6_prefix = 64 },
		     "prefix: load with /24 and /64"))
		return;
	env_set(&e, 4, 10 * SEC_NS, 0);
	ASSERT_EQ(send_n(&e, &a, 3) + send_n(&e, &b, 3), 4,
		  "prefix: two IPv4 sources in one /24 share one window (key 198.18.4.0) [passed]");
	ASSERT_EQ(count4(&e, "198.18.4.0"), 6,
		  "prefix: two IPv4 sources in one /24 share one window (key 198.18.4.0) [count]");
	ASSERT_EQ(send_n(&e, &c, 3) + send_n(&e, &d, 3), 4,
		  "prefix: two IPv6 sources in one /64 share one window");
	env_free(&e);

	if (env_open(&e, &(struct load_opts){ .v6_prefix = 128 }, "prefix: load with /128"))
		return;
	env_set(&e, 4, 10 * SEC_NS, 0);
	ASSERT_EQ(send_n(&e, &c, 3) + send_n(&e, &d, 3), 6,
		  "prefix: with --v6-prefix 128 they do not");
	env_free(&e);
}

/* --bytes: the limit and the count are in bytes of frame. */
UNIT_TEST(bytes)
{
	struct pkt big = build(&(struct pkt_spec){ V4, "198.18.5.1", 0, 100 });
	struct env e;

	if (env_open(&e, &(struct load_opts){ .bytes = 1 }, "bytes: load"))
		return;
	env_set(&e, 1000, 10 * SEC_NS, 0);
	ASSERT_EQ(send_n(&e, &big, 12), 10,
		  "bytes: limit 1000, 100-byte frames -> 10 pass, count 1200 bytes [passed]");
	ASSERT_EQ(count4(&e, "198.18.5.1"), 1200,
		  "bytes: limit 1000, 100-byte frames -> 10 pass, count 1200 bytes [count]");
	env_free(&e);
}

/*
 * Issue 21: `charge` past a count's ceiling charged nothing and said it was
 * done. Now it fails with EOVERFLOW, and nothing is charged.
 */
UNIT_TEST(charge_saturated)
{
	struct xdp_rl_layer lay = { 5, 3600 * SEC_NS };
	__u32 k[4] = { htonl(0xc6120909) };
	struct env e;
	int r;

	if (env_open(&e, &(struct load_opts){ .admin = 1 }, "charge saturated: load"))
		return;
	env_set(&e, 5, 3600 * SEC_NS, 0);
	ASSERT_EQ(admin_charge(&e.lim, PIN_SRC4, k, TEST_LSID, 0, 1, 7, &lay), 1,
		  "charge saturated: 7 charged");
	r = admin_charge(&e.lim, PIN_SRC4, k, TEST_LSID, 0, 1, XDP_RL_COUNT_SAT, &lay);
	ASSERT_EQ(r, -1, "charge saturated: a charge to the ceiling fails");
	ASSERT_EQ(errno, EOVERFLOW, "charge saturated: ... saying the count would pass it");
	ASSERT_EQ(count4(&e, "198.18.9.9"), 7, "charge saturated: nothing more was charged");
	env_free(&e);
}

/*
 * Where a drop is counted (bpf/hot.h): a window's first drops past its
 * limit in its count, by the add a pass makes; past cfg_hot_after of them,
 * apart (the per-CPU hot entries, then the `drops` word). What get reads,
 * count and apart together, is every packet offered either way; what a
 * raised limit finds is the count.
 */
UNIT_TEST(drops_in_count)
{
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.2.9" });
	struct pkt big = build(&(struct pkt_spec){ V4, "198.18.2.10", 0, 100 });
	struct xdp_rl_live live = { .nlayers = 1, .flags = XDP_RL_F_FLEET };
	struct xdp_rl_state *w;
	struct env e;

	/* Three in the count, then apart. */
	if (env_open(&e, &(struct load_opts){ .hot_after = 3 }, "drops in count: load"))
		return;
	env_set(&e, 5, 10 * SEC_NS, 0);
	ASSERT_EQ(send_n(&e, &a, 13), 5, "drops in count: limit 5, 13 offered -> 5 pass");
	w = windows4(&e, "198.18.2.9");
	if (ASSERT_TRUE(w, "drops in count: the source has a slot"))
		ASSERT_EQ(xdp_rl_count(w->count_gen), 9,
			  "drops in count: 5 passed, the one over, 3 drops in the count");
	ASSERT_EQ(drops4_layer(&e, "198.18.2.9", TEST_LSID, 0), 4,
		  "drops in count: the other 4 drops counted apart");
	ASSERT_EQ(count4(&e, "198.18.2.9"), 13, "drops in count: get reads all 13 offered");
	env_set(&e, 12, 10 * SEC_NS, 0);
	ASSERT_EQ(send_n(&e, &a, 5), 3,
		  "drops in count: limit raised 5 -> 12: the count (9) leaves 3");
	/* The next window counts afresh, in its count first again. */
	e.skel->bss->fake_now_ns += 11 * SEC_NS;
	env_set(&e, 2, 10 * SEC_NS, 0);
	ASSERT_EQ(send_n(&e, &a, 4), 2, "drops in count: a new window, limit 2: 2 of 4 pass");
	w = windows4(&e, "198.18.2.9");
	if (ASSERT_TRUE(w, "drops in count: still there"))
		ASSERT_EQ(xdp_rl_count(w->count_gen), 4,
			  "drops in count: the new window counts its drop in its count");
	ASSERT_EQ(drops4_layer(&e, "198.18.2.9", TEST_LSID, 0), 0,
		  "drops in count: nothing apart in the new window");

	/* In a fleet every drop is apart: the agent shares the count (user/fleet.c). */
	live.layer[0].limit = 5;
	live.layer[0].window_ns = 10 * SEC_NS;
	e.skel->bss->fake_now_ns += 11 * SEC_NS;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &a, 10), 5, "drops in count: fleet, limit 5: 5 of 10 pass");
	w = windows4(&e, "198.18.2.9");
	if (ASSERT_TRUE(w, "drops in count: fleet, a slot"))
		ASSERT_EQ(xdp_rl_count(w->count_gen), 6,
			  "drops in count: fleet: the count stops one past the limit");
	ASSERT_EQ(count4(&e, "198.18.2.9"), 10, "drops in count: fleet: get reads all 10");
	env_free(&e);

	/* With --bytes, the bound is so many drops of the packet's size. */
	if (env_open(&e, &(struct load_opts){ .bytes = 1, .hot_after = 2 },
		     "drops in count: bytes: load"))
		return;
	env_set(&e, 1000, 10 * SEC_NS, 0);
	ASSERT_EQ(send_n(&e, &big, 15), 10, "drops in count: bytes: 10 of 15 100-byte frames pass");
	w = windows4(&e, "198.18.2.10");
	if (ASSERT_TRUE(w, "drops in count: bytes: a slot"))
		ASSERT_EQ(xdp_rl_count(w->count_gen), 1300,
			  "drops in count: bytes: the one over and 2 drops in the count");
	ASSERT_EQ(count4(&e, "198.18.2.10"), 1500, "drops in count: bytes: get reads 1500 bytes");
	env_free(&e);

	/* None in the count: every drop apart, the count one past the limit. */
	if (env_open(&e, &(struct load_opts){ .hot_after = HOT_AFTER_NONE },
		     "drops in count: none: load"))
		return;
	env_set(&e, 5, 10 * SEC_NS, 0);
	ASSERT_EQ(send_n(&e, &a, 9), 5, "drops in count: none: 5 of 9 pass");
	w = windows4(&e, "198.18.2.9");
	if (ASSERT_TRUE(w, "drops in count: none: a slot"))
		ASSERT_EQ(xdp_rl_count(w->count_gen), 6,
			  "drops in count: none: the count stops one past the limit");
	ASSERT_EQ(count4(&e, "198.18.2.9"), 9, "drops in count: none: get reads all 9");
	env_set(&e, 9, 10 * SEC_NS, 0);
	ASSERT_EQ(send_n(&e, &a, 5), 3, "drops in count: none: limit raised 5 -> 9: 3 more");
	env_free(&e);
}
