// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_concurrency.c - exactness across CPUs: two threads pinned to CPUs 0
 * and 1 hammering one key, in one window, across turnovers, and with two
 * layers. (The source table under two CPUs is in test_table.c.)
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "admin.h"

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
	volatile int stop;
	__u64 runs;
	int err;
};

/* CPU 0: the frame in rounds of 2 000 until told to stop. */
static void *flood_fn(void *arg)
{
	struct flood *f = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set)) {
		f->err = EINVAL;
		return NULL;
	}
	while (!f->stop) {
		if (run(f->e, f->p, 2000) < 0)
			f->err = errno;
		f->runs++;
	}
	return NULL;
}

/*
 * Issue 21: a reset gave up after four lost swaps and said it was done. A
 * --shared budget that a flood charges on CPU 0 is reset to a count from
 * CPU 1, RESETS times: each reset is done (the command asks again while the
 * program finds the window busy), and each moves the window on to a
 * generation of its own, holding at least the count.
 */
enum { RESETS = 1000 };

UNIT_TEST(reset_under_contention)
{
	struct xdp_rl_rule rule = { .id = 0,
				    .action = XDP_RL_RULE_LIMIT,
				    .nlayers = 1,
				    .lsid = 5,
				    .flags = XDP_RL_RULE_F_SHARED,
				    .prefixlen = 24,
				    .layer = { { 1000000000, 3600 * SEC_NS } } };
	struct xdp_rl_layer lay = { 1000000000, 3600 * SEC_NS };
	struct xdp_rl_rule_key4 k = { .prefixlen = 24 };
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.7.1" });
	struct xdp_rl_live live = { .nlayers = 1, .nrules4 = 1 };
	struct xdp_rl_layers zero = {}, w;
	struct flood f = {};
	struct env e;
	pthread_t th;
	cpu_set_t set;
	int i, done = 0, moved = 0, held = 0;
	__u64 gen, last = ~0ULL;

	if (need_two_cpus() ||
	    env_open(&e, &(struct load_opts){ .admin = 1 }, "reset contention: load"))
		return;
	inet_pton(AF_INET, "198.18.7.0", &k.addr);
	bpf_map_update_elem(bpf_map__fd(e.skel->maps.shared), &rule.id, &zero, 0);
	bpf_map_update_elem(bpf_map__fd(e.skel->maps.rules4), &k, &rule, 0);
	live.layer[0] = lay;
	env_live(&e, &live);
	f.e = &e;
	f.p = &p;
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	pthread_create(&th, NULL, flood_fn, &f);
	while (!f.runs && !f.err)
		usleep(100);
	for (i = 0; i < RESETS; i++) {
		done += admin_reset_shared(&e.lim, rule.id, 0, 1, 5, &lay) == 1;
		if (bpf_map_lookup_elem(bpf_map__fd(e.skel->maps.shared), &rule.id, &w))
			continue;
		gen = xdp_rl_gen_of_count(w.layer[0].count_gen);
		moved += gen != last;
		held += xdp_rl_count(w.layer[0].count_gen) >= 5;
		last = gen;
	}
	f.stop = 1;
	pthread_join(th, NULL);
	CPU_SET(0, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	ASSERT_EQ(f.err, 0, "reset contention: the flood ran (%llu rounds of 2000)",
		  (unsigned long long)f.runs);
	ASSERT_EQ(done, RESETS, "reset contention: %d resets under a flood, each done", RESETS);
	ASSERT_EQ(moved, RESETS, "reset contention: each moved the window to a new generation");
	ASSERT_EQ(held, RESETS, "reset contention: after each the window held at least its count");
	env_free(&e);
}
