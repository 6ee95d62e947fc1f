// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_concurrency.c - exactness across CPUs: two threads pinned to CPUs 0
 * and 1 hammering one key, in one window, across turnovers, and with two
 * layers. (The source table under two CPUs is in test_table.c.)
 */
#include <pthread.h>
#include <stdio.h>

#include "harness.h"

/* One window: exactly `limit` of `offered` pass, none lost or doubled. */
UNIT_TEST(exact_one_window)
{
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.6.1" });
	const __u32 repeat = 20000, rounds = 10;
	const __u64 offered = 2ULL * repeat * rounds, limit = 123457;
	struct xdp_rl_stats before;
	__u64 passed, dropped;
	long long count;
	struct env e;
	char desc[160];
	int r;

	if (need_two_cpus() || env_open(&e, &(struct load_opts){ 0 }, "exact: load"))
		return;
	env_set(&e, limit, 3600 * SEC_NS, 0);
	e.skel->bss->fake_now_ns += 7200 * SEC_NS;
	stats(&e, &before);
	r = hammer2(&e, &p, repeat, rounds, NULL);
	passed = stat_delta(&e, &before, XDP_RL_STAT_PASSED);
	dropped = stat_delta(&e, &before, XDP_RL_STAT_DROPPED);
	count = count4(&e, "198.18.6.1");
	snprintf(desc, sizeof(desc),
		 "exact: 2 CPUs x %u on one key, limit %llu: passed %llu, dropped %llu, count %lld",
		 repeat * rounds, (unsigned long long)limit, (unsigned long long)passed,
		 (unsigned long long)dropped, count);
	ASSERT_EQ(r, 0, "%s [both threads ran]", desc);
	ASSERT_EQ(passed, limit, "%s [passed]", desc);
	ASSERT_EQ(dropped, offered - limit, "%s [dropped]", desc);
	ASSERT_EQ(count, (long long)offered, "%s [count]", desc);
	env_free(&e);
}

/*
 * Windows turning over while both CPUs hit the key. The clock moves on
 * only once a window is over its limit (between rounds of CPU 0), so every
 * window but the last passes exactly `limit`:
 * passed == limit * (windows - 1) + min(last, limit).
 */
UNIT_TEST(exact_turnover)
{
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.6.1" });
	const __u32 repeat = 20000, rounds = 10;
	/*
	 * The test clock jumps a whole window at once, which real time never does;
	 * a short window keeps the jump far below XDP_RL_SHORTEN_SLACK_NS.
	 */
	struct ticker t = { .limit = 1000, .window_ns = 1000000, .ticked_gen = ~0ULL };
	struct xdp_rl_stats before;
	__u64 passed, opened, final;
	struct env e;
	char desc[160];
	int r;

	if (need_two_cpus() || env_open(&e, &(struct load_opts){ 0 }, "exact: load"))
		return;
	t.e = &e;
	env_set(&e, t.limit, t.window_ns, 0);
	e.skel->bss->fake_now_ns += 7200 * SEC_NS;
	run(&e, &p, 1); /* open the first window before the race */
	stats(&e, &before);
	r = hammer2(&e, &p, repeat / 10, rounds * 10, &t);
	passed = stat_delta(&e, &before, XDP_RL_STAT_PASSED) + 1; /* + the opener */
	opened = stat_delta(&e, &before, XDP_RL_STAT_NEW_WINDOWS) + 1;
	final = count4(&e, "198.18.6.1");
	snprintf(desc, sizeof(desc),
		 "exact: turnover under 2 CPUs: %llu windows, passed %llu == %llu x %llu + "
		 "min(%llu, %llu)",
		 (unsigned long long)opened, (unsigned long long)passed,
		 (unsigned long long)t.limit, (unsigned long long)(opened - 1),
		 (unsigned long long) final, (unsigned long long)t.limit);
	ASSERT_EQ(r, 0, "%s [both threads ran]", desc);
	ASSERT_EQ(opened, t.ticks + 1, "%s [one window per tick]", desc);
	ASSERT_GT(opened, 2, "%s [windows turned over]", desc);
	ASSERT_EQ(passed, t.limit * (opened - 1) + (final < t.limit ? final : t.limit),
		  "%s [passed]", desc);
	env_free(&e);
}

/* Two CPUs, two layers, the first turning over: no layer passes more than its limit. */
UNIT_TEST(exact_layers)
{
	static const struct xdp_rl_layer two[] = { { 1000, 1000000 }, { 25000, 3600 * SEC_NS } };
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.6.1" });
	struct ticker t = { .limit = 1000, .window_ns = 1000000, .ticked_gen = ~0ULL };
	struct xdp_rl_live live = live_of(2, two);
	struct xdp_rl_stats before;
	__u64 passed, opened;
	struct env e;
	char desc[160];
	int r;

	if (need_two_cpus() ||
	    env_open(&e, &(struct load_opts){ .layers = 2 }, "layers: load with room for 2"))
		return;
	t.e = &e;
	env_live(&e, &live);
	stats(&e, &before);
	r = hammer2(&e, &p, 2000, 100, &t);
	passed = stat_delta(&e, &before, XDP_RL_STAT_PASSED);
	opened = stat_delta(&e, &before, XDP_RL_STAT_NEW_WINDOWS);
	/* opened - 1: the hour's one window; the rest are the 1ms layer's. */
	snprintf(desc, sizeof(desc),
		 "exact: 2 CPUs, layers 1000/1ms + 25000/1h: passed %llu <= 25000 and "
		 "<= 1000 x %llu windows of 1ms",
		 (unsigned long long)passed, (unsigned long long)(opened - 1));
	ASSERT_EQ(r, 0, "%s [both threads ran]", desc);
	ASSERT_LE(passed, 25000, "%s [the hour's limit]", desc);
	ASSERT_LE(passed, 1000 * (opened - 1), "%s [the 1ms windows' limits]", desc);
	ASSERT_GT(passed, 20000, "%s [most of the hour's limit passed]", desc);
	env_free(&e);
}

struct flood {
	struct env *e;
	const struct pkt *p;
	__u32 repeat, rounds;
	volatile int done;
	int err;
};

static void *flood_fn(void *arg)
{
	struct flood *f = arg;

	f->err = hammer2(f->e, f->p, f->repeat, f->rounds, NULL);
	f->done = 1;
	return NULL;
}

/*
 * A window with no budget left counts its drops per CPU (bpf/hot.h): what
 * `get` reads while two CPUs flood it is off by at most XDP_RL_HOT_FLUSH
 * packets per CPU, and exact once the flood stops. The packets are decided
 * as before: exactly the limit passes.
 */
UNIT_TEST(exact_hot_counts)
{
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.6.2" });
	struct flood f = { .p = &p, .repeat = 5000, .rounds = 40 };
	const __u64 offered = 2ULL * 5000 * 40, limit = 1000, bound = 2 * XDP_RL_HOT_FLUSH;
	long long count, prev = 0, worst_drop = 0, reads = 0, over = 0;
	struct xdp_rl_stats before;
	pthread_t th;
	struct env e;

	if (need_two_cpus() || env_open(&e, &(struct load_opts){ 0 }, "hot counts: load"))
		return;
	f.e = &e;
	env_set(&e, limit, 3600 * SEC_NS, 0);
	stats(&e, &before);
	pthread_create(&th, NULL, flood_fn, &f);
	while (!f.done) {
		count = count4(&e, "198.18.6.2");
		if (count < 0)
			continue;
		reads++;
		/* Never more than was offered, nor much less than read before. */
		if (count > (long long)(offered + bound))
			over++;
		if (prev - count > worst_drop)
			worst_drop = prev - count;
		prev = count;
	}
	pthread_join(th, NULL);
	ASSERT_EQ(f.err, 0, "hot counts: both threads ran");
	ASSERT_GE(reads, 10, "hot counts: %lld reads during the flood", reads);
	ASSERT_EQ(over, 0, "hot counts: no read above what was offered plus the bound");
	ASSERT_LE(worst_drop, (long long)bound,
		  "hot counts: a read is never more than %llu below the one before (worst %lld)",
		  (unsigned long long)bound, worst_drop);
	ASSERT_EQ(count4(&e, "198.18.6.2"), (long long)offered,
		  "hot counts: exact once the flood stops (%llu)", (unsigned long long)offered);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_PASSED), limit, "hot counts: passed");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DROPPED), offered - limit,
		  "hot counts: dropped");
	/* Both CPUs may add once more as the count reaches the limit. */
	ASSERT_LE(xdp_rl_count(windows4(&e, "198.18.6.2")->count_gen), limit + 2,
		  "hot counts: the shared count stopped at the limit (drops counted apart)");
	env_free(&e);
}
