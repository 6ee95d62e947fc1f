// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_rate.c - rates (--rate N/DUR --burst B, bpf/rate.h): on the test
 * clock the passes are exactly a reference GCRA's, packet by packet, over
 * random traffic (random gaps, random frames with --bytes), and keep the
 * bound (at most B + N * t / DUR units in any interval of length t);
 * under two CPUs on the real clock the bound holds; a burst of B packets
 * passes whole; an episode reports and bans once; a rate beside a window
 * gets back the charge the window refused (R3); reset lifts what a key
 * owes; rules, --shared budgets and aggregates take rates; and the bucket
 * table keeps the slot of a key that owes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "admin.h"
#include "harness.h"

/* ---- The reference ------------------------------------------------------------ */

/*
 * GCRA in plain C with the datapath's rounding (include/xdp_rl.h): a packet
 * of @inc units at @now costs xdp_rl_rate_cost; it passes iff max(TAT, now)
 * + cost - now <= tau, and then the TAT moves there.
 */
struct gcra {
	__u64 tat;
};

static int gcra_pass(struct gcra *g, const struct xdp_rl_layer *l, __u64 now, __u64 inc, int bytes)
{
	__u64 cost = xdp_rl_rate_cost(l->per_fp, inc), from = g->tat > now ? g->tat : now;

	if (from + cost - now > xdp_rl_rate_tau(l, bytes))
		return 0;
	g->tat = from + cost;
	return 1;
}

struct rng {
	__u64 s;
};

static __u64 below(struct rng *r, __u64 n)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return n ? xdp_rl_mix(r->s) % n : 0;
}

/* One layer, a rate; with --ban @ban_ns if not 0. */
static void set_rate(struct env *e, const struct xdp_rl_layer *l, __u64 ban_ns)
{
	struct xdp_rl_live live = live_of(1, l);

	if (ban_ns) {
		live.ban_ns = ban_ns;
		live.max_ban_ns = ban_ns;
		live.flags |= XDP_RL_F_BANS;
	}
	env_live(e, &live);
}

static __u64 *now_of(struct env *e)
{
	return &e->skel->bss->fake_now_ns;
}

/* The TAT of layer @layer of an IPv4 key under the global limits (0: owes nothing, or no slot). */
static __u64 tat4(struct env *e, const char *key, int layer)
{
	struct xdp_rl_state *w = windows4(e, key);

	return w ? xdp_rl_rate_tat(w[layer].start_gen, w[layer].count_gen) : 0;
}

/* ---- Random traffic --------------------------------------------------------------- */

/* Rates to drive: packets, then bytes (frames of 60 .. 256 bytes). */
struct rate_case {
	__u64 n, dur, burst;
	int bytes;
};

static const struct rate_case cases[] = {
	{ 3, SEC_NS, 3, 0 }, /* DUR / N not a whole ns */
	{ 3, SEC_NS, 8, 0 },
	{ 10, SEC_NS, 1, 0 },
	{ 7, SEC_NS, 2, 0 },
	{ 100, 3 * SEC_NS, 40, 0 },
	{ 6000, 60 * SEC_NS, 300, 0 },
	{ 1, 4 * SEC_NS, 1, 0 },
	{ 1000000, SEC_NS, 50, 0 },
	{ 3000, SEC_NS, 1000, 1 },
	{ 100000, SEC_NS, 4000, 1 },
	{ 7777, 3 * SEC_NS, 777, 1 },
	{ 1000000000, SEC_NS, 1500, 1 },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* What a run of traffic passed: when, and how many units, in order. */
struct passes {
	__u64 *t, *units;
	int n;
};

/*
 * A gap before the next packet: now and then (about once in four bursts'
 * worth of packets) longer than the burst takes to earn back, so that the
 * key owes nothing; else none, a ns, less than a unit's cost, about one, or
 * up to three: on average about half a unit's cost, so that the key spends
 * its burst and is refused.
 */
static __u64 gap(struct rng *r, const struct xdp_rl_layer *l, __u64 cost1)
{
	__u64 k = below(r, 100), burst = l->tau_ns / (cost1 ? cost1 : 1);

	if (!below(r, 4 * burst + 10))
		return l->tau_ns + below(r, 2 * l->tau_ns + 1);
	return k < 35 ? 0 :
	       k < 40 ? 1 :
	       k < 65 ? below(r, cost1 + 1) :
	       k < 85 ? (cost1 > 2 ? cost1 - 2 : 0) + below(r, 5) :
			below(r, 3 * cost1 + 1);
}

/*
 * Send @npk frames from @src under the rate @l (published already), with
 * random gaps (and sizes, @bytes), each verdict compared with the
 * reference's. Returns the index of the first that differs, or -1; @out
 * gets what the program passed.
 */
static int drive(struct env *e, const char *src, const struct xdp_rl_layer *l, int bytes,
		 __u64 seed, int npk, struct passes *out, int *passed)
{
	struct rng r = { seed };
	struct gcra g = { 0 };
	struct pkt p;
	__u64 cost1 = xdp_rl_rate_cost(l->per_fp, bytes ? 158 : 1), inc;
	int i, got, want, first = -1;

	*passed = 0;
	out->n = 0;
	for (i = 0; i < npk; i++) {
		p = build(&(struct pkt_spec){ V4, src, 0, bytes ? 60 + (__u32)below(&r, 197) : 0 });
		inc = bytes ? p.len : 1;
		*now_of(e) += gap(&r, l, cost1);
		want = gcra_pass(&g, l, *now_of(e), inc, bytes);
		got = run(e, &p, 1) == XDP_PASS;
		if (got != want && first < 0)
			first = i;
		if (!got)
			continue;
		++*passed;
		out->t[out->n] = *now_of(e);
		out->units[out->n++] = inc;
	}
	return first;
}

/*
 * The first pair of passes i <= j of @ps that carry more than B + N * (t_j
 * - t_i) / DUR units (in integers: units * DUR > B * DUR + N * (t_j - t_i)),
 * as i * npasses + j; or -1.
 */
static long long over_bound(const struct passes *ps, const struct xdp_rl_layer *l)
{
	unsigned __int128 units, allowed;
	int i, j;

	for (i = 0; i < ps->n; i++) {
		units = 0;
		for (j = i; j < ps->n; j++) {
			units += ps->units[j];
			allowed = (unsigned __int128)l->burst * l->window_ns +
				  (unsigned __int128)l->limit * (ps->t[j] - ps->t[i]);
			if (units * l->window_ns > allowed)
				return (long long)i * ps->n + j;
		}
	}
	return -1;
}

enum { TRAFFIC = 2500 };

/*
 * Every case of @bytes on its own key, random traffic: each verdict the
 * reference's (@exact), or every interval within the bound.
 */
static void run_cases(int bytes, int exact)
{
	struct passes ps = { calloc(TRAFFIC, sizeof(__u64)), calloc(TRAFFIC, sizeof(__u64)), 0 };
	struct xdp_rl_layer l;
	struct env e;
	char src[32], desc[160];
	long long bad;
	int c, first, passed, seed;

	if (!ps.t || !ps.units || env_open(&e, &(struct load_opts){ .bytes = bytes }, "rate: load"))
		goto out;
	for (c = 0; c < (int)NCASES; c++) {
		if (cases[c].bytes != bytes)
			continue;
		l = rate_layer(cases[c].n, cases[c].dur, cases[c].burst);
		set_rate(&e, &l, 0);
		for (seed = 1; seed <= 3; seed++) {
			snprintf(src, sizeof(src), "198.18.50.%d", c * 4 + seed);
			snprintf(desc, sizeof(desc),
				 "rate %llu/%lluns burst %llu%s (per unit %lluns, tau %lluns), "
				 "seed %d, %s",
				 (unsigned long long)l.limit, (unsigned long long)l.window_ns,
				 (unsigned long long)l.burst, bytes ? " --bytes" : "",
				 (unsigned long long)xdp_rl_rate_cost(l.per_fp, 1),
				 (unsigned long long)l.tau_ns, seed, table_kind_name(e.table));
			first = drive(&e, src, &l, bytes, seed * 7919 + c, TRAFFIC, &ps, &passed);
			if (exact) {
				ASSERT_EQ(first, -1, "%s: every verdict the reference's", desc);
			} else {
				bad = over_bound(&ps, &l);
				ASSERT_EQ(bad, -1,
					  "%s: %d passes, every interval within B + N*t/DUR "
					  "(-1: none over; else i * passes + j)",
					  desc, ps.n);
			}
			/* Traffic that both passes and is refused, or the test proves little. */
			ASSERT_GT(passed, 0, "%s [some passed]", desc);
			ASSERT_LT(passed, TRAFFIC, "%s [some refused]", desc);
		}
	}
	env_free(&e);
out:
	free(ps.t);
	free(ps.units);
}

/* Exact: the passes are the reference GCRA's, packet by packet. */
UNIT_TEST(rate_exact)
{
	run_cases(0, 1);
}

UNIT_TEST(rate_exact_bytes)
{
	run_cases(1, 1);
}

/* R1: between any two passes t0 <= t1, at most B + N * (t1 - t0) / DUR units passed. */
UNIT_TEST(rate_bound)
{
	run_cases(0, 0);
}

UNIT_TEST(rate_bound_bytes)
{
	run_cases(1, 0);
}

/*
 * A key that owes nothing passes a burst of B packets at once, whether or
 * not DUR / N is a whole number of ns: --burst 1 passes one packet; 3/1s
 * passes 3; and then one packet a unit's cost later.
 */
UNIT_TEST(rate_burst_whole)
{
	static const struct rate_case bursts[] = {
		{ 4, SEC_NS, 4, 0 }, { 3, SEC_NS, 3, 0 },	{ 3, SEC_NS, 1, 0 },
		{ 7, SEC_NS, 5, 0 }, { 10, 3 * SEC_NS, 10, 0 },
	};
	struct xdp_rl_layer l;
	struct env e;
	char src[32];
	__u64 i, per;

	if (env_open(&e, &(struct load_opts){ 0 }, "rate: load"))
		return;
	for (i = 0; i < sizeof(bursts) / sizeof(bursts[0]); i++) {
		struct pkt p;

		snprintf(src, sizeof(src), "198.18.51.%llu", (unsigned long long)i + 1);
		p = build(&(struct pkt_spec){ V4, src });
		l = rate_layer(bursts[i].n, bursts[i].dur, bursts[i].burst);
		set_rate(&e, &l, 0);
		per = (bursts[i].dur + bursts[i].n - 1) / bursts[i].n;
		ASSERT_EQ(send_n(&e, &p, (int)bursts[i].burst + 3), (int)bursts[i].burst,
			  "rate %llu/%lluns burst %llu: an idle key passes its burst at once",
			  (unsigned long long)bursts[i].n, (unsigned long long)bursts[i].dur,
			  (unsigned long long)bursts[i].burst);
		*now_of(&e) += per;
		ASSERT_EQ(send_n(&e, &p, 3), 1,
			  "rate %llu/%lluns burst %llu: one more a unit's cost (%lluns) later",
			  (unsigned long long)bursts[i].n, (unsigned long long)bursts[i].dur,
			  (unsigned long long)bursts[i].burst, (unsigned long long)per);
	}
	env_free(&e);
}

/*
 * What xdp_rl_rate_fill makes of N/DUR/B, for rates from a unit a ns to one
 * a quarter hour (XDP_RL_RATE_PER_MAX is about 18 minutes): a charge of inc
 * units costs inc * DUR / N rounded up, or at most a ns more (the 32.32
 * fixed point rounds up); tau is B * DUR / N rounded down.
 */
UNIT_TEST(rate_cost)
{
	static const __u64 durs[] = { 1000000, SEC_NS, 3 * SEC_NS, 60 * SEC_NS, 3600 * SEC_NS };
	static const __u64 ns[] = { 1, 3, 4, 7, 10, 60, 1000, 30000, 1000000, 3000000000ULL };
	static const __u64 incs[] = { 1, 2, 3, 60, 1500, 9000, 65535 };
	unsigned __int128 exact;
	struct xdp_rl_layer l;
	__u64 cost;
	int bad = 0;
	size_t d, n, i;

	for (d = 0; d < sizeof(durs) / sizeof(durs[0]); d++) {
		for (n = 0; n < sizeof(ns) / sizeof(ns[0]); n++) {
			memset(&l, 0, sizeof(l));
			if (durs[d] / ns[n] > 900 * SEC_NS ||
			    xdp_rl_rate_fill(&l, ns[n], durs[d], ns[n]))
				continue; /* slower than a unit a quarter hour; or refused */
			ASSERT_EQ(l.tau_ns, durs[d], "rate %llu/%lluns: tau of B = N is DUR",
				  (unsigned long long)ns[n], (unsigned long long)durs[d]);
			for (i = 0; i < sizeof(incs) / sizeof(incs[0]) && bad < 5; i++) {
				exact = ((unsigned __int128)incs[i] * durs[d] + ns[n] - 1) / ns[n];
				cost = xdp_rl_rate_cost(l.per_fp, incs[i]);
				if (cost >= exact && cost <= exact + 1)
					continue;
				bad++;
				ASSERT_EQ(cost, (__u64)exact,
					  "rate %llu/%lluns: %llu units cost inc * DUR / N, "
					  "rounded up (or 1 ns more)",
					  (unsigned long long)ns[n], (unsigned long long)durs[d],
					  (unsigned long long)incs[i]);
			}
		}
	}
	ASSERT_EQ(bad, 0, "rate: every cost as DUR / N says");
}

/* A slow rate (a unit every 10 s, a minute): one passes, the next only a unit's cost later. */
UNIT_TEST(rate_slow)
{
	static const __u64 durs[] = { 4 * SEC_NS, 10 * SEC_NS, 60 * SEC_NS, 600 * SEC_NS };
	struct xdp_rl_layer l;
	struct env e;
	char src[32];
	size_t i;

	if (env_open(&e, &(struct load_opts){ 0 }, "rate: load"))
		return;
	for (i = 0; i < sizeof(durs) / sizeof(durs[0]); i++) {
		struct pkt p;

		snprintf(src, sizeof(src), "198.18.62.%zu", i + 1);
		p = build(&(struct pkt_spec){ V4, src });
		l = rate_layer(1, durs[i], 1);
		set_rate(&e, &l, 0);
		ASSERT_EQ(send_n(&e, &p, 3), 1, "rate 1/%llus burst 1: one passes",
			  (unsigned long long)(durs[i] / SEC_NS));
		*now_of(&e) += durs[i] - 1;
		ASSERT_EQ(send_n(&e, &p, 1), 0, "rate 1/%llus: refused 1 ns before its cost",
			  (unsigned long long)(durs[i] / SEC_NS));
		*now_of(&e) += 1;
		ASSERT_EQ(send_n(&e, &p, 2), 1, "rate 1/%llus: one more at its cost",
			  (unsigned long long)(durs[i] / SEC_NS));
	}
	env_free(&e);
}

/* ---- Two CPUs, the real clock ------------------------------------------------------ */

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * SEC_NS + ts.tv_nsec;
}

/*
 * Two CPUs flood one key on the real clock (CLOCK_MONOTONIC, which the
 * program reads): what passed in the run is at most B + N * elapsed / DUR,
 * every pass's reading being in [t0, t1].
 */
UNIT_TEST(rate_two_cpus)
{
	static const struct rate_case two[] = {
		{ 200000, SEC_NS, 2000, 0 }, /* 5 us a packet */
		{ 250000, SEC_NS, 1, 0 },    /* 4 us a packet, no burst */
		{ 30000, SEC_NS, 30000, 0 }, /* a burst of a second */
	};
	struct pkt p;
	struct xdp_rl_stats before;
	struct xdp_rl_layer l;
	__u64 t0, t1, passed;
	unsigned __int128 allowed;
	struct env e;
	char src[32];
	int r, i;

	if (need_two_cpus() ||
	    env_open(&e, &(struct load_opts){ .real_clock = 1 }, "rate: load, real clock"))
		return;
	for (i = 0; i < (int)(sizeof(two) / sizeof(two[0])); i++) {
		snprintf(src, sizeof(src), "198.18.52.%d", i + 1);
		p = build(&(struct pkt_spec){ V4, src });
		l = rate_layer(two[i].n, two[i].dur, two[i].burst);
		set_rate(&e, &l, 0);
		stats(&e, &before);
		t0 = mono_ns();
		r = hammer2(&e, &p, 20000, 20, NULL);
		t1 = mono_ns();
		passed = stat_delta(&e, &before, XDP_RL_STAT_PASSED);
		allowed = (unsigned __int128)l.burst * l.window_ns +
			  (unsigned __int128)l.limit * (t1 - t0);
		ASSERT_EQ(r, 0, "rate: 2 CPUs [both threads ran]");
		ASSERT_TRUE((unsigned __int128)passed * l.window_ns <= allowed,
			    "rate %llu/1s burst %llu, 2 CPUs x 400000 in %.3f s (%s): passed %llu "
			    "<= B + N * elapsed / DUR = %.1f",
			    (unsigned long long)l.limit, (unsigned long long)l.burst,
			    (t1 - t0) / 1e9, table_kind_name(e.table), (unsigned long long)passed,
			    (double)allowed / l.window_ns);
		ASSERT_GT(passed, l.burst, "rate: 2 CPUs: more than the burst passed (%llu)",
			  (unsigned long long)passed);
	}
	env_free(&e);
}

/* ---- Episodes -------------------------------------------------------------------- */

#define EVS_MAX 64

struct evs {
	struct xdp_rl_event ev[EVS_MAX];
	int n;
};

static int ev_add(void *ctx, void *data, size_t size)
{
	struct evs *s = ctx;

	if (size >= sizeof(struct xdp_rl_event) && s->n < EVS_MAX)
		memcpy(&s->ev[s->n], data, sizeof(struct xdp_rl_event));
	s->n++;
	return 0;
}

/* The over-limit records in the ring now (consumed): how many, or -1. */
static int events_take(struct env *e, struct evs *s)
{
	struct ring_buffer *rb;

	s->n = 0;
	rb = ring_buffer__new(bpf_map__fd(e->skel->maps.events), ev_add, s, NULL);
	if (!rb)
		return -1;
	ring_buffer__consume(rb);
	ring_buffer__free(rb);
	return s->n;
}

/* A reader's lease that never runs out. */
static void lease(struct env *e)
{
	struct xdp_rl_ev_lease l = { .until_ns = ~0ULL, .pid = 1 };
	__u32 zero = 0;

	bpf_map_update_elem(bpf_map__fd(e->skel->maps.ev_lease), &zero, &l, 0);
}

/*
 * 4/1s burst 4: the 5th packet is the episode's first refusal: it sets
 * REFUSING, makes one record and (with --ban) the ban; the refusals after
 * it write nothing; a pass in the episode keeps it (and its flag), so the
 * next refusal reports nothing; once the key owes nothing, the next packet
 * begins an episode of a new generation, which reports again.
 */
static void episode(int ban)
{
	static const char key[] = "198.18.53.1";
	struct xdp_rl_layer l = rate_layer(4, SEC_NS, 4);
	struct pkt p = build(&(struct pkt_spec){ V4, key });
	struct xdp_rl_state *w, st;
	struct xdp_rl_stats before;
	__u64 gen, cost = xdp_rl_rate_cost(l.per_fp, 1);
	char desc[64];
	struct evs s;
	struct env e;

	snprintf(desc, sizeof(desc), "rate: episode%s", ban ? ", --ban 3s" : "");
	if (env_open(&e, &(struct load_opts){ 0 }, "rate: load"))
		return;
	set_rate(&e, &l, ban ? 3 * SEC_NS : 0);
	lease(&e);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &p, 4), 4, "%s [the burst passes]", desc);
	w = windows4(&e, key);
	if (!ASSERT_TRUE(w, "%s [its state]", desc))
		goto out;
	gen = xdp_rl_gen_of_count(w[0].count_gen);
	ASSERT_FALSE(w[0].count_gen & XDP_RL_RATE_REFUSING, "%s [not refusing yet]", desc);
	ASSERT_EQ(xdp_rl_rate_tat(w[0].start_gen, w[0].count_gen), *now_of(&e) + 4 * cost,
		  "%s [TAT: now + 4 costs]", desc);
	ASSERT_EQ(events_take(&e, &s), 0, "%s [no record yet]", desc);
	ASSERT_EQ(send_n(&e, &p, 1), 0, "%s [the 5th is refused]", desc);
	w = windows4(&e, key);
	st = w[0];
	ASSERT_TRUE(st.count_gen & XDP_RL_RATE_REFUSING, "%s [the first refusal sets REFUSING]",
		    desc);
	ASSERT_EQ(xdp_rl_gen_of_count(st.count_gen), gen, "%s [same generation]", desc);
	ASSERT_EQ(events_take(&e, &s), 1, "%s [one record]", desc);
	if (s.n == 1) {
		ASSERT_EQ(s.ev[0].key[0], addr4(key), "%s [its key]", desc);
		ASSERT_EQ(s.ev[0].layer, 0, "%s [layer]", desc);
		ASSERT_EQ(s.ev[0].limit, 4, "%s [limit: N]", desc);
		ASSERT_EQ(s.ev[0].window_ns, SEC_NS, "%s [window: DUR]", desc);
	}
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_OVER_LIMIT), 1, "%s [over_limit]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_BANS), ban, "%s [bans]", desc);
	/* Later refusals: nothing written, nothing reported (banned, if --ban). */
	*now_of(&e) += cost / 2;
	ASSERT_EQ(send_n(&e, &p, 5), 0, "%s [5 more refused]", desc);
	w = windows4(&e, key);
	ASSERT_EQ(w[0].count_gen, st.count_gen, "%s [count_gen unchanged]", desc);
	ASSERT_EQ(w[0].start_gen, st.start_gen, "%s [start_gen unchanged]", desc);
	ASSERT_EQ(events_take(&e, &s), 0, "%s [no record]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DROPPED), 6, "%s [dropped 6]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DROPS_BANNED), ban ? 5 : 0,
		  "%s [banned: the 5 after the first refusal]", desc);
	ASSERT_EQ(drops4_layer(&e, key, TEST_LSID, 0), ban ? 1 : 6,
		  "%s [the episode's drops (a banned packet is not the rate's)]", desc);
	if (ban) {
		*now_of(&e) += 3 * SEC_NS;
		ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_BANS), 1, "%s [one ban]", desc);
		/* The key owes nothing now (4 costs = 1 s < 3 s): a new episode. */
		ASSERT_EQ(send_n(&e, &p, 1), 1, "%s [the ban over: passes]", desc);
	} else {
		/* In the episode: a unit's cost on, one passes; the next refusal reports nothing. */
		*now_of(&e) += cost;
		ASSERT_EQ(send_n(&e, &p, 2), 1, "%s [a cost later: one passes]", desc);
		w = windows4(&e, key);
		ASSERT_EQ(xdp_rl_gen_of_count(w[0].count_gen), gen, "%s [same episode]", desc);
		ASSERT_TRUE(w[0].count_gen & XDP_RL_RATE_REFUSING, "%s [still refusing]", desc);
		ASSERT_EQ(events_take(&e, &s), 0, "%s [once per episode: no record]", desc);
		ASSERT_EQ(drops4_layer(&e, key, TEST_LSID, 0), 7, "%s [the episode's drops: 7]",
			  desc);
		/* Idle past the TAT: the key owes nothing; the next packet begins an episode. */
		*now_of(&e) = tat4(&e, key, 0);
		ASSERT_EQ(send_n(&e, &p, 1), 1, "%s [owes nothing at its TAT: passes]", desc);
	}
	w = windows4(&e, key);
	ASSERT_NE(xdp_rl_gen_of_count(w[0].count_gen), gen, "%s [a new generation]", desc);
	ASSERT_FALSE(w[0].count_gen & XDP_RL_RATE_REFUSING, "%s [not refusing]", desc);
	ASSERT_EQ(drops4_layer(&e, key, TEST_LSID, 0), 0, "%s [its drops: none]", desc);
	ASSERT_EQ(send_n(&e, &p, 5), 3, "%s [3 more of the burst]", desc);
	ASSERT_EQ(events_take(&e, &s), 1, "%s [the new episode's record]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_BANS), ban ? 2 : 0, "%s [bans]", desc);
out:
	env_free(&e);
}

UNIT_TEST(rate_episode)
{
	episode(0);
}

UNIT_TEST(rate_episode_ban)
{
	episode(1);
}

/*
 * A ban shorter than a unit's cost: once it is over the key still owes
 * too much, and its packets are refused by the rate; those refusals are
 * not the episode's first, and write nothing: no second ban (R2).
 */
UNIT_TEST(rate_ban_once_per_episode)
{
	static const char key[] = "198.18.53.2", desc[] = "rate: 1/4s, --ban 1s";
	struct xdp_rl_layer l = rate_layer(1, 4 * SEC_NS, 1);
	struct pkt p = build(&(struct pkt_spec){ V4, key });
	struct xdp_rl_stats before;
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "rate: load"))
		return;
	set_rate(&e, &l, SEC_NS);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &p, 2), 1, "%s [one passes, the next bans]", desc);
	*now_of(&e) += 2 * SEC_NS;
	ASSERT_EQ(send_n(&e, &p, 3), 0, "%s [the ban over: refused by the rate]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DROPS_BANNED), 0, "%s [... not banned again]",
		  desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_BANS), 1, "%s [one ban in the episode]",
		  desc);
	env_free(&e);
}

/* ---- Layers, reset ----------------------------------------------------------------- */

/*
 * A rate at layer 0 and a window of 3/10s at layer 1: the window refuses
 * the 4th .. 10th packet, and each takes the rate's charge back (R3), so
 * the rate is charged 3 packets, not 10: with the window raised, 7 more
 * of its burst of 10 pass.
 */
UNIT_TEST(rate_beside_window)
{
	static const char key[] = "198.18.54.1", desc[] = "rate: 10/1s burst 10, then 3/10s";
	struct xdp_rl_layer lay[2] = { rate_layer(10, SEC_NS, 10), { 3, 10 * SEC_NS } };
	struct xdp_rl_live live = live_of(2, lay);
	struct pkt p = build(&(struct pkt_spec){ V4, key });
	__u64 cost = xdp_rl_rate_cost(lay[0].per_fp, 1);
	struct env e;

	if (env_open(&e, &(struct load_opts){ .layers = 2 }, "rate: load with room for 2"))
		return;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &p, 10), 3, "%s [the window passes 3]", desc);
	ASSERT_EQ(tat4(&e, key, 0), *now_of(&e) + 3 * cost, "%s [the rate holds 3 charges]", desc);
	ASSERT_EQ(count4_layer(&e, key, 1), 10, "%s [the window counted 10]", desc);
	lay[1].limit = 100;
	live = live_of(2, lay);
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &p, 10), 7, "%s [window raised: the rate's 7 left pass]", desc);
	env_free(&e);
}

/* A window at layer 0 and a rate of 2/1s at layer 1: the rate's refusal takes the window's charge back. */
UNIT_TEST(rate_after_window)
{
	static const char key[] = "198.18.54.2", desc[] = "rate: 100/10s, then 2/1s burst 2";
	struct xdp_rl_layer lay[2] = { { 100, 10 * SEC_NS }, rate_layer(2, SEC_NS, 2) };
	struct xdp_rl_live live = live_of(2, lay);
	struct pkt p = build(&(struct pkt_spec){ V4, key });
	struct env e;

	if (env_open(&e, &(struct load_opts){ .layers = 2 }, "rate: load with room for 2"))
		return;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &p, 10), 2, "%s [the rate passes 2]", desc);
	ASSERT_EQ(count4_layer(&e, key, 0), 2, "%s [the window holds the 2 passed]", desc);
	*now_of(&e) += SEC_NS;
	ASSERT_EQ(send_n(&e, &p, 10), 2, "%s [a second on: 2 more]", desc);
	ASSERT_EQ(count4_layer(&e, key, 0), 4, "%s [the window holds 4]", desc);
	env_free(&e);
}

/* Plain reset: the key owes nothing, its ban is lifted, and its burst passes again. */
UNIT_TEST(rate_reset)
{
	static const char key[] = "198.18.55.1", desc[] = "rate: reset";
	struct xdp_rl_layer l = rate_layer(5, 10 * SEC_NS, 5);
	struct pkt p = build(&(struct pkt_spec){ V4, key });
	__u32 k[4] = { addr4(key) };
	struct xdp_rl_state *w;
	struct env e;
	int ban;

	if (env_open(&e, &(struct load_opts){ .admin = 1 }, "rate: load"))
		return;
	for (ban = 0; ban < 2; ban++) {
		set_rate(&e, &l, ban ? 3600 * SEC_NS : 0);
		ASSERT_EQ(send_n(&e, &p, 8), 5, "%s%s [the burst]", desc, ban ? ", --ban" : "");
		ASSERT_GT(tat4(&e, key, 0), *now_of(&e), "%s [it owes]", desc);
		ASSERT_EQ(admin_reset(&e.lim, PIN_SRC4, k, TEST_LSID, 0, 1, 0, NULL), 1,
			  "%s [reset]", desc);
		w = windows4(&e, key);
		if (ASSERT_TRUE(w, "%s [its state]", desc))
			ASSERT_LE(xdp_rl_rate_tat(w[0].start_gen, w[0].count_gen), *now_of(&e),
				  "%s [it owes nothing]", desc);
		ASSERT_EQ(send_n(&e, &p, 8), 5, "%s%s [the burst again, at once]", desc,
			  ban ? ", the ban lifted" : "");
		*now_of(&e) += 20 * SEC_NS;
	}
	env_free(&e);
}

/* ---- Rules, --shared, aggregates ------------------------------------------------------ */

/*
 * A per-source rule with a rate (each source its own), a --shared rule with
 * a rate (one budget for the prefix), and the global limits a rate too.
 */
UNIT_TEST(rate_rules)
{
	struct xdp_rl_rule per = { .id = 1, .action = XDP_RL_RULE_LIMIT, .nlayers = 1 };
	struct xdp_rl_rule shared = {
		.id = 2, .action = XDP_RL_RULE_LIMIT, .nlayers = 1, .flags = XDP_RL_RULE_F_SHARED
	};
	struct pkt a1 = build(&(struct pkt_spec){ V4, "198.18.56.1" });
	struct pkt a2 = build(&(struct pkt_spec){ V4, "198.18.56.2" });
	struct pkt s1 = build(&(struct pkt_spec){ V4, "198.18.57.1" });
	struct pkt s2 = build(&(struct pkt_spec){ V4, "198.18.57.2" });
	struct pkt g = build(&(struct pkt_spec){ V4, "198.18.58.1" });
	struct xdp_rl_layer l = rate_layer(2, SEC_NS, 2);
	struct xdp_rl_live live = live_of(1, &l);
	struct env e;
	int i;

	if (env_open(&e, &(struct load_opts){ 0 }, "rate: load"))
		return;
	per.layer[0] = rate_layer(4, SEC_NS, 4);
	shared.layer[0] = rate_layer(5, SEC_NS, 3);
	if (rule4(&e, "198.18.56.0", 24, &per) || rule4(&e, "198.18.57.0", 24, &shared)) {
		UNIT_FAIL("rate: rules: insert: %s", strerror(errno));
		env_free(&e);
		return;
	}
	live.nrules4 = 2;
	env_live(&e, &live);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(send_n(&e, &a1, 6), 4, "rate: per-source rule 4/1s [first source]");
		ASSERT_EQ(send_n(&e, &a2, 6), 4, "rate: per-source rule 4/1s [second: its own]");
		ASSERT_EQ(send_n(&e, &s1, 2), 2, "rate: --shared 5/1s burst 3 [first source]");
		ASSERT_EQ(send_n(&e, &s2, 4), 1, "rate: --shared [the second shares what is left]");
		ASSERT_EQ(send_n(&e, &g, 4), 2, "rate: global 2/1s");
		/* 200 ms: the shared budget earns 1 (a unit per 200 ms), the rest nothing whole. */
		*now_of(&e) += 200 * 1000000ULL;
		ASSERT_EQ(send_n(&e, &s2, 3), 1, "rate: --shared [200 ms on: 1]");
		ASSERT_EQ(send_n(&e, &a1, 3), 0, "rate: per-source rule [200 ms on: 0]");
		*now_of(&e) += 10 * SEC_NS;
	}
	env_free(&e);
}

/* --on-table-full aggregate: the sources a --new-sources cap turns away share their /24's rate. */
UNIT_TEST(rate_aggregate)
{
	struct xdp_rl_layer l = rate_layer(4, SEC_NS, 4);
	struct xdp_rl_live live = live_of(1, &l);
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.59.1" });
	struct pkt b = build(&(struct pkt_spec){ V4, "198.18.59.2" });
	struct pkt c = build(&(struct pkt_spec){ V4, "198.18.59.3" });
	struct xdp_rl_stats before;
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "rate: load"))
		return;
	live.new_sources = (struct xdp_rl_layer){ 1, 3600 * SEC_NS };
	live.on_full = XDP_RL_FULL_AGGREGATE;
	env_live(&e, &live);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &a, 6), 4, "rate: aggregate [the first source, its own slot]");
	ASSERT_EQ(send_n(&e, &b, 3), 3, "rate: aggregate [the second: its /24's rate]");
	ASSERT_EQ(send_n(&e, &c, 3), 1, "rate: aggregate [the third shares it: 1 left]");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_AGGREGATED), 6, "rate: aggregate [counted]");
	*now_of(&e) += 500 * 1000000ULL;
	ASSERT_EQ(send_n(&e, &c, 3), 2, "rate: aggregate [500 ms on: 2]");
	env_free(&e);
}

/* ---- The bucket table's choice of a slot --------------------------------------------- */

/*
 * A key that owes (its TAT ahead) keeps its slot however long ago its
 * episode began: it is not taken as a stale slot (bpf/buckets.h), the
 * first to go, while new sources fill the table, each owing a unit's cost
 * (500 ms) all along; the key, seen last, is the last to go of those that
 * owe.
 */
UNIT_TEST(rate_slot_kept)
{
	static const char key[] = "198.18.60.1", desc[] = "rate: a key that owes keeps its slot";
	struct xdp_rl_layer l = rate_layer(2, SEC_NS, 2);
	struct pkt p = build(&(struct pkt_spec){ V4, key });
	__u64 gen, began;
	struct xdp_rl_state *w;
	char src[32];
	struct env e;
	int i, lost = 0;

	if (env_open(&e, &(struct load_opts){ .table = TABLE_BUCKETS, .sources = 16 },
		     "rate: load"))
		return;
	set_rate(&e, &l, 0);
	/* 20 s of a flood: one episode, begun 20 s (20 DURs) ago, its TAT about a second ahead. */
	for (i = 0; i < 200; i++) {
		send_n(&e, &p, 3);
		*now_of(&e) += 100 * 1000000ULL;
	}
	w = windows4(&e, key);
	if (!ASSERT_TRUE(w, "%s [its slot]", desc))
		goto out;
	gen = xdp_rl_gen_of_count(w[0].count_gen);
	began = xdp_rl_start_ns(w[0].start_gen);
	ASSERT_LT(began + 10 * SEC_NS, *now_of(&e), "%s [the episode began long ago]", desc);
	ASSERT_GE(tat4(&e, key, 0), *now_of(&e) + SEC_NS / 2, "%s [it owes]", desc);
	/* New sources, one a tick (64 in 256 ms), each owing 500 ms; the key goes on sending. */
	for (i = 0; i < 64; i++) {
		snprintf(src, sizeof(src), "198.18.61.%d", i + 1);
		struct pkt q = build(&(struct pkt_spec){ V4, src });

		send_n(&e, &q, 1);
		/* (Its next packet would give it a slot again: looked at before it.) */
		lost += !windows4(&e, key);
		send_n(&e, &p, 1);
		*now_of(&e) += TICK_NS;
	}
	ASSERT_EQ(lost, 0, "%s [never evicted by a new source]", desc);
	w = windows4(&e, key);
	ASSERT_TRUE(w != NULL, "%s [the slot is still the key's]", desc);
	if (w) {
		ASSERT_EQ(xdp_rl_gen_of_count(w[0].count_gen), gen, "%s [its episode goes on]",
			  desc);
		ASSERT_EQ(xdp_rl_start_ns(w[0].start_gen), began, "%s [begun when it was]", desc);
	}
	ASSERT_GT(tat4(&e, key, 0), *now_of(&e), "%s [it owes still]", desc);
out:
	env_free(&e);
}

/*
 * A key banned late in a long episode keeps its slot while its ban holds,
 * after its TAT is behind (bpf/buckets.h): the ban began at a refusal up
 * to its TAT, and lasts up to the longest ban after it. Here the episode's
 * offset (TAT - start, 51 s) has every bit of DUR + the longest ban (2^35
 * ns), so that a slot judged open while now < start + ((DUR + longest ban)
 * | offset) is stale from the TAT on, 33 s before the ban ends.
 */
UNIT_TEST(rate_slot_kept_banned)
{
	static const char key[] = "198.18.63.1", desc[] = "rate: a banned key keeps its slot";
	struct xdp_rl_layer l = rate_layer(10, SEC_NS, 10);
	const __u64 ban_ns = (1ULL << 35) - SEC_NS;
	struct pkt p = build(&(struct pkt_spec){ V4, key });
	struct xdp_rl_state *w;
	__u64 tat, off;
	char src[32];
	struct env e;
	int i, lost = 0, passed = 0;

	if (env_open(&e, &(struct load_opts){ .table = TABLE_BUCKETS, .sources = 16 },
		     "rate: load"))
		return;
	set_rate(&e, &l, ban_ns);
	/* Its burst, then a packet every 100 ms for 50 s: all pass, one episode. */
	passed += send_n(&e, &p, 10);
	for (i = 0; i < 500; i++) {
		*now_of(&e) += 100 * 1000000ULL;
		passed += send_n(&e, &p, 1);
	}
	ASSERT_EQ(passed, 510, "%s [the rate passed all]", desc);
	ASSERT_EQ(send_n(&e, &p, 2), 0, "%s [then over it: banned]", desc);
	w = windows4(&e, key);
	if (!ASSERT_TRUE(w, "%s [its slot]", desc))
		goto out;
	tat = xdp_rl_rate_tat(w[0].start_gen, w[0].count_gen);
	off = tat - xdp_rl_start_ns(w[0].start_gen);
	ASSERT_EQ((SEC_NS + ban_ns) & ~off, 0, "%s [offset %llu ns has the bits of DUR + ban]",
		  desc, (unsigned long long)off);
	/* Past its TAT, its ban holding 32 s more: new sources fill the table. */
	*now_of(&e) = tat + SEC_NS;
	for (i = 0; i < 64; i++) {
		snprintf(src, sizeof(src), "198.18.64.%d", i + 1);
		struct pkt q = build(&(struct pkt_spec){ V4, src });

		send_n(&e, &q, 1);
		lost += !windows4(&e, key);
		send_n(&e, &p, 1);
		*now_of(&e) += TICK_NS;
	}
	ASSERT_EQ(lost, 0, "%s [never evicted by a new source]", desc);
	ASSERT_EQ(send_n(&e, &p, 3), 0, "%s [still banned]", desc);
out:
	env_free(&e);
}
