// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bench_kern.c - in-kernel cost per packet, through BPF_PROG_TEST_RUN.
 *
 * Every program is run the same way: the wrapper (wrap.bpf.c) gives the
 * frame the next of N source addresses and tail-calls the program under
 * test; BPF_PROG_TEST_RUN with repeat R runs that R times in a loop and
 * reports the mean time per run on the kernel's clock (`duration`). A bare
 * XDP_DROP program measured in the same run, through the same wrapper, is
 * the floor; every other figure is also given as its difference to it.
 *
 * Programs: bare XDP_DROP and XDP_PASS (bare.bpf.c), xdp-rl's program from
 * its skeleton, loaded as `xdp-rl load` loads it (user/skel.c; limit 1: the
 * steady-state packet is dropped; limit max: it passes), and the plain
 * reference (plain.bpf.c). Windows are an hour long, on the tick clock as
 * `xdp-rl load --window 1h` runs them, so a steady-state packet is a hit in
 * an open window, never a turnover.
 *
 * Scenarios: N distinct sources per CPU, one thread on CPU 0, or two threads
 * on CPUs 0 and 1 started together (one hot key shared, or disjoint keys);
 * "insert" runs N fresh sources once through freshly loaded (empty) tables,
 * every packet an insert, then the same N again (the first revisit).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xdp_rl.h"
#include "bench_user.h"
#include "skel.h"
#include "xdp_rl.skel.h"
#include "bare.skel.h"
#include "wrap.skel.h"
#include "plain.skel.h"

#define MAX_RUNS 15
/*
 * Packets per steady-state measurement (or one pass over the sources, if
 * more). Short, so that one run of every program takes well under a second:
 * this VM's speed drifts over seconds (a shared host), and the programs of
 * one run must see the same machine.
 */
#define REPEAT	      250000U
#define DEFAULT_TABLE 262144U  /* xdp-rl's --max-sources default */
#define BIG_TABLE     1048576U /* for 1 000 000 sources */
#define SPARE_TABLE   1024U    /* the family a scenario does not use */
#define WINDOW_NS     (3600 * SEC_NS)
#define BENCH_SEED    0x6265bad5eed1ULL /* any: the tables' hash key */

enum prog_id { P_DROP, P_PASS, P_RL, P_RL_PASS, P_PLAIN, P_MAX };

static const char *const prog_key[P_MAX] = {
	"bare_drop", "bare_pass", "xdp_rl_drop", "xdp_rl_pass", "plain_drop",
};

struct scen {
	const char *name;
	int v6;
	__u32 nsrc;   /* sources per CPU */
	int threads;  /* 1 or 2 */
	int disjoint; /* two threads: each CPU its own sources */
	__u32 table;  /* entries per table; 0: the default, or 2^20 above it */
};

struct kenv {
	struct bench_wrap *wrap;
	struct bench_bare *bare;
	struct xdp_rl *rl;
	struct bench_plain *plain;
	__u32 table;
	int table_v6;
	struct frame f4, f6;
	int runs, runs_insert;
	__u64 walk[P_MAX][2]; /* where each table's walk over the sources stopped */
	FILE *json;
	int json_first;
};

/* One measurement: per-thread mean ns per packet, on two clocks. */
struct sample {
	double kern; /* BPF_PROG_TEST_RUN duration (the kernel's timer) */
	double cpu;  /* the thread's CPU time around the call / repeat */
};

/* ---- Loading ---------------------------------------------------------------- */

static void rl_publish(struct xdp_rl *s, __u64 limit)
{
	int fd = bpf_map__fd(s->maps.config);
	struct xdp_rl_config c;
	__u32 zero = 0, spare;

	if (bpf_map_lookup_elem(fd, &zero, &c))
		die("kern: read xdp-rl config: %s", strerror(errno));
	spare = !(c.active & 1);
	memset(&c.slot[spare], 0, sizeof(c.slot[spare]));
	c.slot[spare].layer[0].limit = limit;
	c.slot[spare].layer[0].window_ns = WINDOW_NS;
	c.slot[spare].nlayers = 1;
	/* What `xdp-rl load --window 1h` chooses: the tick clock, measured once. */
	c.slot[spare].tick_ns = c.slot[!spare].tick_ns;
	c.slot[spare].jiffies_base_ns = c.slot[!spare].jiffies_base_ns;
	if (!c.slot[spare].tick_ns && skel_clock(s, &c.slot[spare]))
		die("kern: measure the tick clock: %s", strerror(errno));
	c.slot[spare].flags = XDP_RL_F_COARSE_CLOCK;
	if (bpf_map_update_elem(fd, &zero, &c, 0))
		die("kern: write xdp-rl config: %s", strerror(errno));
	c.active = spare;
	if (bpf_map_update_elem(fd, &zero, &c, 0))
		die("kern: flip xdp-rl config: %s", strerror(errno));
}

static struct xdp_rl *rl_load(__u32 table)
{
	struct xdp_rl *s = xdp_rl__open();

	if (!s)
		die("kern: open xdp-rl: %s", strerror(errno));
	/* /32 and /128: every address its own key (2001:2::/48 has no 1M /64s). */
	if (skel_prepare(s, &(struct xdp_rl_fixed){ .max_sources = table,
						    .v4_prefix = 32,
						    .v6_prefix = 128,
						    .max_layers = 1,
						    .seed = BENCH_SEED }) ||
	    xdp_rl__load(s))
		die("kern: load xdp-rl (%u sources): %s", table, strerror(errno));
	rl_publish(s, 1);
	return s;
}

static struct bench_plain *plain_load(__u32 table, int v6)
{
	struct bench_plain *s = bench_plain__open();

	if (!s)
		die("kern: open plain reference: %s", strerror(errno));
	s->rodata->limit = 1;
	s->rodata->window_ns = WINDOW_NS;
	if (bpf_map__set_max_entries(s->maps.plain4, v6 ? SPARE_TABLE : table) ||
	    bpf_map__set_max_entries(s->maps.plain6, v6 ? table : SPARE_TABLE) ||
	    bench_plain__load(s))
		die("kern: load plain reference (%u sources): %s", table, strerror(errno));
	return s;
}

static void tables_load(struct kenv *e, __u32 table, int v6, int fresh)
{
	if (!fresh && e->rl && e->table == table && e->table_v6 == v6)
		return;
	xdp_rl__destroy(e->rl);
	bench_plain__destroy(e->plain);
	e->rl = rl_load(table);
	e->plain = plain_load(table, v6);
	e->table = table;
	e->table_v6 = v6;
}

static __u64 rl_new_windows(struct xdp_rl *s)
{
	int n = libbpf_num_possible_cpus(), c;
	struct xdp_rl_stats per[n];
	__u32 zero = 0;
	__u64 sum = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(s->maps.stats), &zero, per))
		return 0;
	for (c = 0; c < n; c++)
		sum += per[c].c[XDP_RL_STAT_NEW_WINDOWS];
	return sum;
}

/* ---- Running ---------------------------------------------------------------- */

static void set_target(struct kenv *e, enum prog_id p)
{
	__u32 slot = BENCH_SLOT_TARGET;
	int fd;

	switch (p) {
	case P_DROP: fd = bpf_program__fd(e->bare->progs.bare_drop); break;
	case P_PASS: fd = bpf_program__fd(e->bare->progs.bare_pass); break;
	case P_RL:
		rl_publish(e->rl, 1);
		fd = bpf_program__fd(e->rl->progs.xdp_rl);
		break;
	case P_RL_PASS:
		rl_publish(e->rl, XDP_RL_LIMIT_MAX);
		fd = bpf_program__fd(e->rl->progs.xdp_rl);
		break;
	default: fd = bpf_program__fd(e->plain->progs.plain); break;
	}
	if (bpf_map_update_elem(bpf_map__fd(e->wrap->maps.progs), &slot, &fd, 0))
		die("kern: set the tail call target: %s", strerror(errno));
}

static __u32 gcd(__u32 a, __u32 b)
{
	while (b) {
		__u32 t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* A step near N times the golden ratio's fraction, coprime with N. */
static __u32 scatter_step(__u32 n)
{
	__u32 s = (__u32)(n * 0.6180339887) | 1;

	while (s > 1 && gcd(s, n) != 1)
		s -= 2;
	return s ? s : 1;
}

/*
 * Sources: IPv4 in 198.18.0.0/15 while they fit (131072), else in
 * 240.0.0.0/4 (reserved, never routed; these frames exist only inside
 * BPF_PROG_TEST_RUN); IPv6 in 2001:2::/96. With @restart, each CPU starts
 * again at its first source; otherwise it goes on where it stopped, so that
 * successive measurements of R packets cover all N sources. @scatter walks
 * them in an order unrelated to the order they were inserted in (wrap.bpf.c).
 */
static void set_sources(struct kenv *e, const struct scen *sc, int restart, int scatter)
{
	__u32 total = sc->nsrc * (sc->threads == 2 && sc->disjoint ? 2 : 1);
	__u32 base = sc->v6 ? 1 : total <= (1U << 17) ? 0xc6120000 : 0xf0000000;
	int i;

	e->wrap->data->nsrc = sc->nsrc;
	e->wrap->data->step = scatter ? scatter_step(sc->nsrc) : 1;
	for (i = 0; i < BENCH_MAX_CPUS; i++) {
		e->wrap->bss->base[i] = base + (sc->disjoint && i == 1 ? sc->nsrc : 0);
		if (restart || e->wrap->bss->ctr[i].n >= sc->nsrc)
			e->wrap->bss->ctr[i].n = 0;
	}
}

struct runner {
	int fd, cpu;
	const struct frame *f;
	__u32 repeat;
	pthread_barrier_t *bar;
	struct sample s;
	int err;
};

static void *runner_fn(void *arg)
{
	struct runner *r = arg;
	__u64 c0, c1;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = r->f->b, .data_size_in = r->f->len,
		    .repeat = r->repeat);

	if (pin_cpu(r->cpu)) {
		r->err = EINVAL;
		return NULL;
	}
	if (r->bar)
		pthread_barrier_wait(r->bar);
	c0 = thread_cpu_ns();
	if (bpf_prog_test_run_opts(r->fd, &o))
		r->err = errno;
	c1 = thread_cpu_ns();
	r->s.kern = o.duration;
	r->s.cpu = (double)(c1 - c0) / r->repeat;
	if (!r->err && o.retval != XDP_DROP && o.retval != XDP_PASS)
		r->err = EPROTO; /* XDP_ABORTED: the tail call failed */
	return NULL;
}

/* Run @fd on @threads CPUs (0, 1) at once; the mean over threads. */
static struct sample run_on(int fd, const struct frame *f, __u32 repeat, int threads)
{
	struct runner r[2] = { { fd, 0, f, repeat, NULL, { 0, 0 }, 0 },
			       { fd, 1, f, repeat, NULL, { 0, 0 }, 0 } };
	pthread_barrier_t bar;
	pthread_t th[2];
	struct sample s = { 0, 0 };
	int i;

	if (threads == 2) {
		pthread_barrier_init(&bar, NULL, 2);
		r[0].bar = r[1].bar = &bar;
	}
	for (i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, runner_fn, &r[i]))
			die("kern: pthread_create failed");
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	if (threads == 2)
		pthread_barrier_destroy(&bar);
	for (i = 0; i < threads; i++) {
		if (r[i].err)
			die("kern: test run on CPU %d: %s", r[i].cpu, strerror(r[i].err));
		s.kern += r[i].s.kern / threads;
		s.cpu += r[i].s.cpu / threads;
	}
	return s;
}

/*
 * Measure @p on @repeat packets. Each table walks the sources on its own: a
 * program goes on where the last packets sent to its table stopped.
 */
static struct sample measure(struct kenv *e, const struct scen *sc, enum prog_id p, __u32 repeat,
			     int restart, int scatter)
{
	/* xdp-rl dropping and passing share one table. */
	__u64 *walk = e->walk[p == P_RL_PASS ? P_RL : p];
	struct sample s;
	int i;

	set_target(e, p);
	for (i = 0; i < 2; i++)
		e->wrap->bss->ctr[i].n = walk[i];
	set_sources(e, sc, restart, scatter);
	s = run_on(bpf_program__fd(e->wrap->progs.wrap), sc->v6 ? &e->f6 : &e->f4, repeat,
		   sc->threads);
	for (i = 0; i < 2; i++)
		walk[i] = e->wrap->bss->ctr[i].n;
	return s;
}

/* ---- Statistics --------------------------------------------------------------- */

struct spread {
	double med, lo, hi;
};

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median and range of @n values, the lowest and highest n/5 trimmed. */
static struct spread spread_of(const double *v, int n)
{
	double s[MAX_RUNS];
	struct spread r;
	int t = n / 5, m;

	/*
	 * Every caller fills v[0..n-1] in a loop of n rounds, n being e->runs or
	 * e->runs_insert, both at least 1; cppcheck assumes that loop may not run.
	 */
	/* cppcheck-suppress uninitvar */
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_dbl);
	m = n - 2 * t;
	r.med = m % 2 ? s[t + m / 2] : (s[t + m / 2 - 1] + s[t + m / 2]) / 2;
	r.lo = s[t];
	r.hi = s[n - 1 - t];
	return r;
}

static const char *fmt_spread(char *buf, size_t len, struct spread s, int sign, int prec)
{
	snprintf(buf, len, sign ? "%+.*f [%+.*f..%+.*f]" : "%.*f [%.*f..%.*f]", prec, s.med, prec,
		 s.lo, prec, s.hi);
	return buf;
}

static void json_spread(struct kenv *e, const char *key, struct spread s)
{
	fprintf(e->json, "\"%s\": {\"median\": %.3f, \"lo\": %.3f, \"hi\": %.3f}", key, s.med, s.lo,
		s.hi);
}

static void json_begin(struct kenv *e, const char *section, const char *name)
{
	if (!e->json)
		return;
	fprintf(e->json, "%s{\"section\": \"%s\", \"scenario\": \"%s\"", e->json_first ? "" : ",\n",
		section, name);
	e->json_first = 0;
}

/* ---- Steady state ------------------------------------------------------------- */

static __u32 table_for(const struct scen *sc)
{
	__u32 total = sc->nsrc * (sc->threads == 2 && sc->disjoint ? 2 : 1);

	if (sc->table)
		return sc->table;
	return total <= DEFAULT_TABLE ? DEFAULT_TABLE : BIG_TABLE;
}

static void print_header(void)
{
	printf("%-30s %-20s %-22s %-22s %-22s %-22s %s\n", "scenario (steady state)",
	       "bare XDP_DROP ns/pkt", "bare XDP_PASS  (d)", "xdp-rl dropping (d)",
	       "xdp-rl passing  (d)", "plain ref       (d)", "plain/xdp-rl (d) | total");
}

static void steady(struct kenv *e, const struct scen *sc)
{
	double v[P_MAX][MAX_RUNS], c[P_MAX][MAX_RUNS], d[MAX_RUNS], q[MAX_RUNS], qt[MAX_RUNS];
	__u64 nw0, nw1, nw_expect = 0;
	char b[P_MAX][64], rb[64], note[96] = "";
	struct spread st;
	int r, i, p;

	tables_load(e, table_for(sc), sc->v6, 0);
	/* Warm up: every source in every table, and the code hot. */
	for (p = 0; p < P_MAX; p++)
		measure(e, sc, p, sc->nsrc, 1, 0);
	nw0 = rl_new_windows(e->rl);
	for (r = 0; r < e->runs; r++) {
		/* Every other run in reverse order, so a drift hits all alike. */
		for (i = 0; i < P_MAX; i++) {
			struct sample s;

			p = r % 2 ? P_MAX - 1 - i : i;
			s = measure(e, sc, p, REPEAT, 0, 1);
			v[p][r] = s.kern;
			c[p][r] = s.cpu;
		}
		/* The plain reference's own cost over xdp-rl's, within this run. */
		q[r] = (v[P_PLAIN][r] - v[P_DROP][r]) / (v[P_RL][r] - v[P_DROP][r]);
		qt[r] = v[P_PLAIN][r] / v[P_RL][r];
	}
	nw1 = rl_new_windows(e->rl);
	if (sc->table && sc->nsrc > sc->table) {
		/* Every packet should evict and insert (bar the warm-up's last few). */
		nw_expect = (__u64)e->runs * 2 * REPEAT * sc->threads;
		snprintf(note, sizeof(note), "  (%.1f%% of xdp-rl's packets opened a window)",
			 100.0 * (nw1 - nw0) / nw_expect);
	} else if (nw1 != nw0) {
		snprintf(note, sizeof(note),
			 "  (!) %llu windows opened while steady: table too small",
			 (unsigned long long)(nw1 - nw0));
	}

	fmt_spread(b[P_DROP], sizeof(b[0]), spread_of(v[P_DROP], e->runs), 0, 0);
	for (p = P_PASS; p < P_MAX; p++) {
		for (r = 0; r < e->runs; r++)
			d[r] = v[p][r] - v[P_DROP][r];
		fmt_spread(b[p], sizeof(b[0]), spread_of(d, e->runs), 1, 0);
	}
	st = spread_of(q, e->runs);
	snprintf(rb, sizeof(rb), "%.2fx [%.2f..%.2f] | %.2fx", st.med, st.lo, st.hi,
		 spread_of(qt, e->runs).med);
	printf("%-30s %-20s %-22s %-22s %-22s %-22s %s%s\n", sc->name, b[P_DROP], b[P_PASS],
	       b[P_RL], b[P_RL_PASS], b[P_PLAIN], rb, note);
	fflush(stdout);

	if (!e->json)
		return;
	json_begin(e, "kern_steady", sc->name);
	fprintf(e->json,
		", \"v6\": %d, \"sources_per_cpu\": %u, \"threads\": %d, \"disjoint\": %d, "
		"\"table\": %u, \"repeat\": %u, \"runs\": %d, \"new_windows_while_steady\": %llu",
		sc->v6, sc->nsrc, sc->threads, sc->disjoint, e->table, REPEAT, e->runs,
		(unsigned long long)(nw1 - nw0));
	for (p = 0; p < P_MAX; p++) {
		char key[64];

		fprintf(e->json, ", ");
		snprintf(key, sizeof(key), "%s_ns", prog_key[p]);
		json_spread(e, key, spread_of(v[p], e->runs));
		fprintf(e->json, ", ");
		snprintf(key, sizeof(key), "%s_cpu_ns", prog_key[p]);
		json_spread(e, key, spread_of(c[p], e->runs));
		if (p == P_DROP)
			continue;
		for (r = 0; r < e->runs; r++)
			d[r] = v[p][r] - v[P_DROP][r];
		fprintf(e->json, ", ");
		snprintf(key, sizeof(key), "%s_over_drop_ns", prog_key[p]);
		json_spread(e, key, spread_of(d, e->runs));
	}
	fprintf(e->json, ", ");
	json_spread(e, "plain_over_xdp_rl_own_cost", spread_of(q, e->runs));
	fprintf(e->json, ", ");
	json_spread(e, "plain_over_xdp_rl_total", spread_of(qt, e->runs));
	fprintf(e->json, ", \"raw_kern_ns\": {");
	for (p = 0; p < P_MAX; p++) {
		fprintf(e->json, "%s\"%s\": [", p ? ", " : "", prog_key[p]);
		for (r = 0; r < e->runs; r++)
			fprintf(e->json, "%s%.0f", r ? ", " : "", v[p][r]);
		fprintf(e->json, "]");
	}
	fprintf(e->json, "}}");
}

/* ---- Insert: the first packet of a new source ------------------------------- */

enum { I_DROP, I_RL, I_RL2, I_PLAIN, I_PLAIN2, I_MAX };

static void insert(struct kenv *e, const struct scen *sc)
{
	double v[I_MAX][MAX_RUNS], d[MAX_RUNS], q[MAX_RUNS];
	char b[I_MAX][64], rb[64];
	__u64 nw, bad = 0;
	struct spread st;
	int r, i;

	for (r = 0; r < e->runs_insert; r++) {
		tables_load(e, table_for(sc), sc->v6, 1);
		v[I_DROP][r] = measure(e, sc, P_DROP, sc->nsrc, 1, 0).kern;
		nw = rl_new_windows(e->rl);
		v[I_RL][r] = measure(e, sc, P_RL, sc->nsrc, 1, 0).kern;
		if (rl_new_windows(e->rl) - nw != sc->nsrc)
			bad++;
		v[I_RL2][r] = measure(e, sc, P_RL, sc->nsrc, 1, 1).kern;
		v[I_PLAIN][r] = measure(e, sc, P_PLAIN, sc->nsrc, 1, 0).kern;
		v[I_PLAIN2][r] = measure(e, sc, P_PLAIN, sc->nsrc, 1, 1).kern;
		q[r] = (v[I_PLAIN][r] - v[I_DROP][r]) / (v[I_RL][r] - v[I_DROP][r]);
	}
	fmt_spread(b[I_DROP], sizeof(b[0]), spread_of(v[I_DROP], e->runs_insert), 0, 0);
	for (i = I_RL; i < I_MAX; i++) {
		for (r = 0; r < e->runs_insert; r++)
			d[r] = v[i][r] - v[I_DROP][r];
		fmt_spread(b[i], sizeof(b[0]), spread_of(d, e->runs_insert), 1, 0);
	}
	st = spread_of(q, e->runs_insert);
	snprintf(rb, sizeof(rb), "%.2fx [%.2f..%.2f]", st.med, st.lo, st.hi);
	printf("%-30s %-20s %-22s %-22s %-22s %-22s %s%s\n", sc->name, b[I_DROP], b[I_RL], b[I_RL2],
	       b[I_PLAIN], b[I_PLAIN2], rb,
	       bad ? "  (!) not every first packet opened a window" : "");
	fflush(stdout);

	if (!e->json)
		return;
	json_begin(e, "kern_insert", sc->name);
	fprintf(e->json, ", \"v6\": %d, \"sources\": %u, \"table\": %u, \"runs\": %d", sc->v6,
		sc->nsrc, e->table, e->runs_insert);
	{
		static const char *const key[I_MAX] = { "bare_drop", "xdp_rl_insert",
							"xdp_rl_second_pass", "plain_insert",
							"plain_second_pass" };
		char k[64];

		for (i = 0; i < I_MAX; i++) {
			fprintf(e->json, ", ");
			snprintf(k, sizeof(k), "%s_ns", key[i]);
			json_spread(e, k, spread_of(v[i], e->runs_insert));
			if (i == I_DROP)
				continue;
			for (r = 0; r < e->runs_insert; r++)
				d[r] = v[i][r] - v[I_DROP][r];
			fprintf(e->json, ", ");
			snprintf(k, sizeof(k), "%s_over_drop_ns", key[i]);
			json_spread(e, k, spread_of(d, e->runs_insert));
		}
	}
	fprintf(e->json, ", ");
	json_spread(e, "plain_over_xdp_rl_own_cost", st);
	fprintf(e->json, "}");
}

/* ---- The hook floor, the wrapper and the clock -------------------------------- */

static double wrapped(struct kenv *e, int fd)
{
	struct scen one = { "floor", 0, 1, 1, 0, 0 };
	__u32 slot = BENCH_SLOT_TARGET;

	if (bpf_map_update_elem(bpf_map__fd(e->wrap->maps.progs), &slot, &fd, 0))
		die("kern: set the tail call target: %s", strerror(errno));
	set_sources(e, &one, 1, 0);
	return run_on(bpf_program__fd(e->wrap->progs.wrap), &e->f4, REPEAT, 1).kern;
}

static void floor_direct(struct kenv *e)
{
	double dd[MAX_RUNS], dw[MAX_RUNS], d1[MAX_RUNS], d2[MAX_RUNS], d3[MAX_RUNS];
	double d4[MAX_RUNS];
	int drop = bpf_program__fd(e->bare->progs.bare_drop);
	int clk = bpf_program__fd(e->bare->progs.bare_clock);
	int coarse = bpf_program__fd(e->bare->progs.bare_coarse);
	int jiffies = bpf_program__fd(e->bare->progs.bare_jiffies);
	char b1[64], b2[64], b3[64], b4[64], b5[64], b6[64];
	int r;

	for (r = 0; r < e->runs; r++) {
		dd[r] = run_on(drop, &e->f4, REPEAT, 1).kern;
		dw[r] = wrapped(e, drop);
		d2[r] = wrapped(e, clk) - dw[r];
		d3[r] = wrapped(e, coarse) - dw[r];
		d4[r] = wrapped(e, jiffies) - dw[r];
		d1[r] = dw[r] - dd[r];
	}
	printf("floor: bare XDP_DROP run directly %s ns/pkt; through the wrapper and a tail call %s "
	       "(%s). Clocks, over that floor: bpf_ktime_get_ns() %s, bpf_ktime_get_coarse_ns() %s, "
	       "bpf_jiffies64() (xdp-rl's tick clock) %s\n",
	       fmt_spread(b1, sizeof(b1), spread_of(dd, e->runs), 0, 0),
	       fmt_spread(b2, sizeof(b2), spread_of(dw, e->runs), 0, 0),
	       fmt_spread(b3, sizeof(b3), spread_of(d1, e->runs), 1, 0),
	       fmt_spread(b4, sizeof(b4), spread_of(d2, e->runs), 1, 0),
	       fmt_spread(b5, sizeof(b5), spread_of(d3, e->runs), 1, 0),
	       fmt_spread(b6, sizeof(b6), spread_of(d4, e->runs), 1, 0));
	if (e->json) {
		json_begin(e, "kern_floor", "bare XDP_DROP");
		fprintf(e->json, ", ");
		json_spread(e, "direct_ns", spread_of(dd, e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "wrapped_ns", spread_of(dw, e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "wrapper_ns", spread_of(d1, e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "ktime_get_ns_ns", spread_of(d2, e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "ktime_get_coarse_ns_ns", spread_of(d3, e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "jiffies64_ns", spread_of(d4, e->runs));
		fprintf(e->json, "}");
	}
}

/* ---- Layers and rules (issue: layered windows, per-prefix rules) -------------- */

#define N_RULES 10000

/*
 * xdp-rl with @layers windows per source, every one admitting (limits at the
 * maximum), so that each packet charges them all; with @rules, N_RULES /24s
 * outside the sources' range plus one /15 --layer rule that every source
 * matches, so each packet also walks the trie.
 */
static struct xdp_rl *rl_load_shape(int layers, int rules)
{
	struct xdp_rl *s = xdp_rl__open();
	struct xdp_rl_rule r = { .action = XDP_RL_RULE_LIMIT, .nlayers = 1 };
	struct xdp_rl_rule_key4 k = { .prefixlen = 24 };
	struct xdp_rl_config c;
	__u32 zero = 0, i;
	int fd;

	if (!s)
		die("kern: open xdp-rl: %s", strerror(errno));
	if (skel_prepare(s, &(struct xdp_rl_fixed){ .max_sources = DEFAULT_TABLE,
						    .v4_prefix = 32,
						    .v6_prefix = 64,
						    .max_layers = layers,
						    .seed = BENCH_SEED }) ||
	    xdp_rl__load(s))
		die("kern: load xdp-rl (%d layers): %s", layers, strerror(errno));
	fd = bpf_map__fd(s->maps.config);
	memset(&c, 0, sizeof(c));
	for (i = 0; i < (__u32)layers; i++) {
		c.slot[0].layer[i].limit = XDP_RL_LIMIT_MAX;
		c.slot[0].layer[i].window_ns = WINDOW_NS << i;
	}
	c.slot[0].nlayers = layers;
	c.slot[0].flags = XDP_RL_F_COARSE_CLOCK;
	if (rules) {
		r.layer[0] = c.slot[0].layer[0];
		for (i = 0; i < N_RULES; i++) {
			r.id = i;
			k.addr = htonl(0xf0000000 | i << 8);
			if (bpf_map_update_elem(bpf_map__fd(s->maps.rules4), &k, &r, 0))
				die("kern: add rule %u: %s", i, strerror(errno));
		}
		k.prefixlen = 15;
		k.addr = htonl(0xc6120000);
		r.id = N_RULES;
		if (bpf_map_update_elem(bpf_map__fd(s->maps.rules4), &k, &r, 0))
			die("kern: add the /15 rule: %s", strerror(errno));
		c.slot[0].nrules4 = N_RULES + 1;
	}
	if (bpf_map_update_elem(fd, &zero, &c, 0))
		die("kern: write xdp-rl config: %s", strerror(errno));
	return s;
}

static void layers_rules(struct kenv *e)
{
	static const struct {
		const char *name;
		int layers, rules;
	} shape[] = {
		{ "1 layer", 1, 0 },
		{ "2 layers", 2, 0 },
		{ "4 layers", 4, 0 },
		{ "1 layer, 10 000 rules", 1, 1 },
	};
	enum { N_SHAPES = sizeof(shape) / sizeof(shape[0]) };
	struct scen sc = { "IPv4 1 000, 1 CPU", 0, 1000, 1, 0, 0 };
	double base[MAX_RUNS], d[N_SHAPES][MAX_RUNS];
	struct xdp_rl *rl[N_SHAPES];
	__u32 slot = BENCH_SLOT_TARGET;
	char b1[64], b2[64];
	int r, k, fd;

	for (k = 0; k < N_SHAPES; k++)
		rl[k] = rl_load_shape(shape[k].layers, shape[k].rules);
	for (r = 0; r < e->runs; r++) {
		for (k = -1; k < N_SHAPES; k++) {
			int kk = r & 1 ? N_SHAPES - 1 - k : k; /* order reversed every other run */

			if (k == -1)
				kk = -1;
			fd = kk < 0 ? bpf_program__fd(e->bare->progs.bare_drop) :
				      bpf_program__fd(rl[kk]->progs.xdp_rl);
			if (bpf_map_update_elem(bpf_map__fd(e->wrap->maps.progs), &slot, &fd, 0))
				die("kern: set the tail call target: %s", strerror(errno));
			set_sources(e, &sc, 1, 1);
			if (kk < 0)
				base[r] = run_on(bpf_program__fd(e->wrap->progs.wrap), &e->f4,
						 REPEAT, 1)
						  .kern;
			else
				d[kk][r] = run_on(bpf_program__fd(e->wrap->progs.wrap), &e->f4,
						  REPEAT, 1)
						   .kern;
		}
		for (k = 0; k < N_SHAPES; k++)
			d[k][r] -= base[r];
	}
	printf("\nlayers and rules: %s, every layer admitting (each packet charges them all); "
	       "rules: %d /24s elsewhere and one /15 --layer rule every source matches\n",
	       sc.name, N_RULES);
	printf("%-30s %-20s %s\n", "xdp-rl shape", "bare XDP_DROP ns/pkt", "xdp-rl (d)");
	for (k = 0; k < N_SHAPES; k++) {
		printf("%-30s %-20s %s\n", shape[k].name,
		       fmt_spread(b1, sizeof(b1), spread_of(base, e->runs), 0, 0),
		       fmt_spread(b2, sizeof(b2), spread_of(d[k], e->runs), 1, 0));
		if (e->json) {
			json_begin(e, "kern_shape", shape[k].name);
			fprintf(e->json, ", ");
			json_spread(e, "xdp_rl_d_ns", spread_of(d[k], e->runs));
			fprintf(e->json, "}");
		}
		xdp_rl__destroy(rl[k]);
	}
}

int cmd_kern(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "json", required_argument, NULL, 'j' },
		{ "quick", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct scen steady_sc[] = {
		{ "IPv4 1 source, 1 CPU", 0, 1, 1, 0, 0 },
		{ "IPv4 1 000, 1 CPU", 0, 1000, 1, 0, 0 },
		{ "IPv4 100 000, 1 CPU", 0, 100000, 1, 0, 0 },
		{ "IPv4 1 000 000, 1 CPU", 0, 1000000, 1, 0, 0 },
		{ "IPv6 1 source, 1 CPU", 1, 1, 1, 0, 0 },
		{ "IPv6 1 000 000, 1 CPU", 1, 1000000, 1, 0, 0 },
		{ "IPv4 2 CPUs, 1 hot key", 0, 1, 2, 0, 0 },
		{ "IPv4 2 CPUs, 1 key each", 0, 1, 2, 1, 0 },
		{ "IPv4 2 CPUs, 500 000 each", 0, 500000, 2, 1, 0 },
		{ "IPv4 1 000 000, table 262 144", 0, 1000000, 1, 0, DEFAULT_TABLE },
	};
	static const struct scen insert_sc[] = {
		{ "IPv4 1 000", 0, 1000, 1, 0, 0 },
		{ "IPv4 100 000", 0, 100000, 1, 0, 0 },
		{ "IPv4 1 000 000", 0, 1000000, 1, 0, 0 },
		{ "IPv6 1 000 000", 1, 1000000, 1, 0, 0 },
	};
	static const __u8 mac_a[6] = { 2, 0, 0, 0, 0, 1 }, mac_b[6] = { 2, 0, 0, 0, 0, 2 };
	struct kenv e = { .runs = 11, .runs_insert = 7, .json_first = 1 };
	size_t i, n_steady = sizeof(steady_sc) / sizeof(steady_sc[0]);
	size_t n_insert = sizeof(insert_sc) / sizeof(insert_sc[0]);
	const char *json = NULL;
	int o, quick = 0;
	__u64 runs;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'r':
			if (parse_u64(optarg, &runs) || runs < 1 || runs > MAX_RUNS)
				die("kern: --runs must be 1..%d", MAX_RUNS);
			e.runs = runs;
			e.runs_insert = runs < 7 ? runs : 7;
			break;
		case 'j': json = optarg; break;
		case 'q': quick = 1; break;
		default: return 2;
		}
	}
	if (json) {
		e.json = fopen(json, "w");
		if (!e.json)
			die("kern: cannot write '%s': %s", json, strerror(errno));
	}
	if (quick) {
		n_steady = 2;
		n_insert = 1;
	}

	frame_build(&e.f4, 0, mac_b, mac_a, "198.18.0.0", "198.18.0.2");
	frame_build(&e.f6, 1, mac_b, mac_a, "2001:2::", "2001:2::2");
	e.bare = bench_bare__open_and_load();
	e.wrap = bench_wrap__open_and_load();
	if (!e.bare || !e.wrap)
		die("kern: cannot load the bench programs: %s (run as root)", strerror(errno));
	if (e.json)
		fprintf(e.json, "[\n");

	floor_direct(&e);
	printf("\n");
	print_header();
	for (i = 0; i < n_steady; i++)
		steady(&e, &steady_sc[i]);

	printf("\n%-30s %-20s %-22s %-22s %-22s %-22s %s\n", "scenario (fresh tables)",
	       "bare XDP_DROP ns/pkt", "xdp-rl insert   (d)", "xdp-rl 2nd pass (d)",
	       "plain insert    (d)", "plain 2nd pass  (d)", "plain/xdp-rl insert (d)");
	for (i = 0; i < n_insert; i++)
		insert(&e, &insert_sc[i]);
	layers_rules(&e);

	if (e.json) {
		fprintf(e.json, "\n]\n");
		fclose(e.json);
	}
	xdp_rl__destroy(e.rl);
	bench_plain__destroy(e.plain);
	bench_wrap__destroy(e.wrap);
	bench_bare__destroy(e.bare);
	return 0;
}
