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
 * its skeleton, loaded as `xdp-rl load` loads it (user/lib/skel.c; limit 1: the
 * steady-state packet is dropped; limit max: it passes), the same with
 * `--table lru` (the kernel's LRU hash, one LRU list: what xdp-rl makes;
 * and, to compare, per-CPU lists, BPF_F_NO_COMMON_LRU), and the plain
 * reference (plain.bpf.c). Windows are an hour long, on the tick clock as
 * `xdp-rl load --window 1h` runs them, so a steady-state packet is a hit in
 * an open window, never a turnover.
 *
 * Scenarios: N distinct sources per CPU, one thread on CPU 0, or two threads
 * on CPUs 0 and 1 started together (one hot key shared, or disjoint keys);
 * "insert" runs N fresh sources once through freshly loaded (empty) tables,
 * every packet an insert, then the same N again (the first revisit).
 *
 * One window every CPU charges (hot()): one source, a --shared budget and
 * the --new-sources cap, on 1 CPU and on 2 at once, dropping and passing,
 * beside a line both CPUs write (bare_atomic), which says whether the two
 * vCPUs' caches were apart at the time. `bench_prog line` measures that
 * line alone, for the end-to-end part.
 *
 * `bench_prog capture`, `bench_prog ban`, `bench_prog rate` and `bench_prog
 * keys`, parts 5 to 8 of make bench: what a capture (capture_cost), --ban
 * (ban_cost), a rate against a fixed window (rate_cost) and a --key beyond
 * the source (key_cost) cost the datapath.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
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

/*
 * P_RL_APART: xdp-rl dropping with every drop counted apart (cfg_hot_after
 * 0), as before a window's first drops went into its count (bpf/hot.h):
 * what that change bought, in the same run.
 */
/*
 * P_LINE: one line per source (bare.bpf.c bare_line), the least an exact
 * per-source limiter touches: what of xdp-rl's cost is its own. P_LINE_LONG:
 * the same, as long as xdp-rl's program (bare_line_long): what one line per
 * source costs a program that cannot overlap one packet's miss with the next's.
 */
enum prog_id {
	P_DROP,
	P_PASS,
	P_RL,
	P_RL_PASS,
	P_PLAIN,
	P_LRU,
	P_LRU_PC,
	P_RL_APART,
	P_LINE,
	P_LINE_LONG,
	P_MAX
};

static const char *const prog_key[P_MAX] = {
	"bare_drop",
	"bare_pass",
	"xdp_rl_drop",
	"xdp_rl_pass",
	"plain_drop",
	"xdp_rl_lru_drop",
	"xdp_rl_lru_pcpu_drop",
	"xdp_rl_apart_drop",
	"line_floor_drop",
	"line_floor_long_drop",
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
	struct xdp_rl *lru, *lru_pc; /* --table lru: one LRU list; per-CPU lists */
	struct xdp_rl *apart;	     /* P_RL_APART's */
	struct bench_plain *plain;
	struct bench_bare *line; /* P_LINE's, its array as large as the table */
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
	/*
	 * The hot windows' section (wrap_stamped), two threads: how long the
	 * two runs' loops ran at once, over the longer loop; and the lower of
	 * the two loops' shares of their time spent running packets (the
	 * kernel's timer stops while a run is preempted). Otherwise 1 and 1.
	 */
	double overlap, oncpu;
};

/* ---- Loading ---------------------------------------------------------------- */

/*
 * The live settings with the one layer @lay, as `xdp-rl set` publishes
 * them, on the clock @flags says (XDP_RL_F_COARSE_CLOCK: the tick clock, as
 * `xdp-rl load --window 1h` chooses; 0: the precise clock, as a rate takes);
 * with @ban_ns, --ban for that long (XDP_RL_F_BANS set, as user space sets
 * it while a ban is configured: bench_prog ban).
 */
static void rl_publish_layer(struct xdp_rl *s, const struct xdp_rl_layer *lay, __u32 flags,
			     __u64 ban_ns)
{
	int fd = bpf_map__fd(s->maps.config);
	struct xdp_rl_config c;
	__u32 zero = 0, spare;

	if (bpf_map_lookup_elem(fd, &zero, &c))
		die("kern: read xdp-rl config: %s", strerror(errno));
	spare = !(c.active & 1);
	memset(&c.slot[spare], 0, sizeof(c.slot[spare]));
	c.slot[spare].layer[0] = *lay;
	c.slot[spare].nlayers = 1;
	/* A rate's slot is open while its TAT is ahead: live_finish sets this. */
	if (xdp_rl_is_rate(lay))
		c.slot[spare].max_window_ns = lay->window_ns;
	/* What `xdp-rl load --window 1h` chooses: the tick clock, measured once. */
	c.slot[spare].tick_ns = c.slot[!spare].tick_ns;
	c.slot[spare].jiffies_base_ns = c.slot[!spare].jiffies_base_ns;
	if (!c.slot[spare].tick_ns && skel_clock(s, &c.slot[spare]))
		die("kern: measure the tick clock: %s", strerror(errno));
	c.slot[spare].flags = flags | (ban_ns ? XDP_RL_F_BANS : 0);
	c.slot[spare].ban_ns = ban_ns;
	c.slot[spare].max_ban_ns = ban_ns;
	if (bpf_map_update_elem(fd, &zero, &c, 0))
		die("kern: write xdp-rl config: %s", strerror(errno));
	c.active = spare;
	if (bpf_map_update_elem(fd, &zero, &c, 0))
		die("kern: flip xdp-rl config: %s", strerror(errno));
}

/* A limit of @limit per hour, on the tick clock; with @ban_ns, --ban for that long. */
static void rl_publish_ban(struct xdp_rl *s, __u64 limit, __u64 ban_ns)
{
	struct xdp_rl_layer l = { .limit = limit, .window_ns = WINDOW_NS };

	rl_publish_layer(s, &l, XDP_RL_F_COARSE_CLOCK, ban_ns);
}

static void rl_publish(struct xdp_rl *s, __u64 limit)
{
	rl_publish_ban(s, limit, 0);
}

/* Set: rl_load_key loads a program that counts every drop apart (P_RL_APART). */
static int rl_all_apart;

/*
 * xdp-rl with --max-sources @table, --table @kind (LRU hashes made with
 * @lru_flags), --key @key and --v6-prefix @v6_prefix.
 */
static struct xdp_rl *rl_load_key(__u32 table, __u32 kind, __u32 lru_flags, __u32 key,
				  __u32 v6_prefix)
{
	struct xdp_rl *s = xdp_rl__open();
	int err;

	if (!s)
		die("kern: open xdp-rl: %s", strerror(errno));
	if (rl_all_apart)
		s->rodata->cfg_hot_after = 0;
	skel_lru_flags = lru_flags;
	err = skel_prepare(s, &(struct xdp_rl_fixed){ .max_sources = table,
						      .v4_prefix = 32,
						      .v6_prefix = v6_prefix,
						      .max_layers = 1,
						      .seed = BENCH_SEED,
						      .table = kind,
						      .key = key }) ||
	      xdp_rl__load(s);
	skel_lru_flags = 0;
	if (err)
		die("kern: load xdp-rl (%u sources, table %u, key %u): %s", table, kind, key,
		    strerror(errno));
	rl_publish(s, 1);
	return s;
}

/* xdp-rl with --max-sources @table and --table @kind (LRU hashes made with @lru_flags). */
static struct xdp_rl *rl_load_table(__u32 table, __u32 kind, __u32 lru_flags)
{
	/* /32 and /128: every address its own key (2001:2::/48 has no 1M /64s). */
	return rl_load_key(table, kind, lru_flags, XDP_RL_KEY_SRC, 128);
}

static struct xdp_rl *rl_load(__u32 table)
{
	return rl_load_table(table, XDP_RL_TABLE_BUCKETS, 0);
}

static struct bench_plain *plain_load(__u32 table, int v6, __u64 limit)
{
	struct bench_plain *s = bench_plain__open();

	if (!s)
		die("kern: open plain reference: %s", strerror(errno));
	s->rodata->limit = limit;
	s->rodata->window_ns = WINDOW_NS;
	if (bpf_map__set_max_entries(s->maps.plain4, v6 ? SPARE_TABLE : table) ||
	    bpf_map__set_max_entries(s->maps.plain6, v6 ? table : SPARE_TABLE) ||
	    bench_plain__load(s))
		die("kern: load plain reference (%u sources): %s", table, strerror(errno));
	return s;
}

/* The one-line-per-source floor (P_LINE): @table lines (a power of two), limit 1. */
static struct bench_bare *line_load(__u32 table)
{
	struct bench_bare *s = bench_bare__open();

	if (!s || (table & (table - 1)))
		die("kern: open the one-line floor (%u lines): %s", table, strerror(errno));
	s->rodata->line_limit = 1;
	s->rodata->line_shift = 32 - __builtin_ctz(table);
	if (bpf_map__set_max_entries(s->maps.lines, table) || bench_bare__load(s))
		die("kern: load the one-line floor (%u lines): %s", table, strerror(errno));
	return s;
}

static void tables_load(struct kenv *e, __u32 table, int v6, int fresh)
{
	if (!fresh && e->rl && e->table == table && e->table_v6 == v6)
		return;
	xdp_rl__destroy(e->rl);
	xdp_rl__destroy(e->lru);
	xdp_rl__destroy(e->lru_pc);
	xdp_rl__destroy(e->apart);
	bench_plain__destroy(e->plain);
	bench_bare__destroy(e->line);
	e->rl = rl_load(table);
	rl_all_apart = 1;
	e->apart = rl_load(table);
	rl_all_apart = 0;
	e->lru = rl_load_table(table, XDP_RL_TABLE_LRU, 0);
	e->lru_pc = rl_load_table(table, XDP_RL_TABLE_LRU, BPF_F_NO_COMMON_LRU);
	e->plain = plain_load(table, v6, 1);
	e->line = line_load(table);
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
	case P_LRU: fd = bpf_program__fd(e->lru->progs.xdp_rl); break;
	case P_LRU_PC: fd = bpf_program__fd(e->lru_pc->progs.xdp_rl); break;
	case P_RL_APART: fd = bpf_program__fd(e->apart->progs.xdp_rl); break;
	case P_LINE: fd = bpf_program__fd(e->line->progs.bare_line); break;
	case P_LINE_LONG: fd = bpf_program__fd(e->line->progs.bare_line_long); break;
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

/*
 * The hot windows' section runs its threads SCHED_FIFO, for the length of
 * one test run (tens of ms): two CPUs contend only while both run, and on a
 * shared machine other tasks (in other autogroups, which nice does not
 * outweigh) would otherwise preempt either run for most of its time.
 */
static int run_rt;

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
	/* Best effort: without it, a run is only more likely to be preempted (struct sample). */
	if (run_rt)
		pthread_setschedparam(pthread_self(), SCHED_FIFO, &(struct sched_param){ 1 });
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

/* Run @fd on @threads CPUs (0, 1) at once, or on CPU @cpu alone; the mean over threads. */
static struct sample run_at(int fd, const struct frame *f, __u32 repeat, int threads, int cpu)
{
	struct runner r[2] = { { .fd = fd, .cpu = threads == 1 ? cpu : 0, .f = f, .repeat = repeat },
			       { .fd = fd, .cpu = 1, .f = f, .repeat = repeat } };
	pthread_barrier_t bar;
	pthread_t th[2];
	struct sample s = { 0, 0, 1, 1 };
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

static struct sample run_on(int fd, const struct frame *f, __u32 repeat, int threads)
{
	return run_at(fd, f, repeat, threads, 0);
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
	printf("%-30s %-20s %-22s %-22s %-22s %-22s %-22s %-22s %-22s %-26s %-22s %-22s %s\n",
	       "scenario (steady state)", "bare XDP_DROP ns/pkt", "bare XDP_PASS  (d)",
	       "xdp-rl dropping (d)", "xdp-rl passing  (d)", "dropping, apart (d)",
	       "1 line/source   (d)", "1 line, long    (d)", "plain ref       (d)",
	       "plain/xdp-rl (d) | total", "lru dropping    (d)", "lru, per-CPU lists (d)",
	       "lru/buckets (d) | total");
}

static void steady(struct kenv *e, const struct scen *sc)
{
	double v[P_MAX][MAX_RUNS], c[P_MAX][MAX_RUNS], d[MAX_RUNS], q[MAX_RUNS], qt[MAX_RUNS];
	double ql[MAX_RUNS], qlt[MAX_RUNS];
	__u64 nw0, nw1, nw_expect = 0, nl0[2], nl1[2];
	char b[P_MAX][64], rb[64], lb[64], note[96] = "", lnote[128] = "";
	struct spread st;
	int r, i, p;

	tables_load(e, table_for(sc), sc->v6, 0);
	/* Warm up: every source in every table, and the code hot. */
	for (p = 0; p < P_MAX; p++)
		measure(e, sc, p, sc->nsrc, 1, 0);
	nw0 = rl_new_windows(e->rl);
	nl0[0] = rl_new_windows(e->lru);
	nl0[1] = rl_new_windows(e->lru_pc);
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
		/* And --table lru's over the bucket table's. */
		ql[r] = (v[P_LRU][r] - v[P_DROP][r]) / (v[P_RL][r] - v[P_DROP][r]);
		qlt[r] = v[P_LRU][r] / v[P_RL][r];
	}
	nw1 = rl_new_windows(e->rl);
	nl1[0] = rl_new_windows(e->lru);
	nl1[1] = rl_new_windows(e->lru_pc);
	/*
	 * An LRU table may evict before it is full (the kernel's lists free
	 * elements in batches, per CPU), and per-CPU lists each hold a CPU's
	 * share of the elements: say when its packets were inserts, not hits.
	 */
	if (!(sc->table && sc->nsrc > sc->table) && (nl1[0] != nl0[0] || nl1[1] != nl0[1]))
		snprintf(lnote, sizeof(lnote),
			 "  (!) windows opened while steady: lru %llu, per-CPU lists %llu",
			 (unsigned long long)(nl1[0] - nl0[0]),
			 (unsigned long long)(nl1[1] - nl0[1]));
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
	st = spread_of(ql, e->runs);
	snprintf(lb, sizeof(lb), "%.2fx [%.2f..%.2f] | %.2fx", st.med, st.lo, st.hi,
		 spread_of(qlt, e->runs).med);
	printf("%-30s %-20s %-22s %-22s %-22s %-22s %-22s %-22s %-22s %-26s %-22s %-22s %s%s%s\n",
	       sc->name, b[P_DROP], b[P_PASS], b[P_RL], b[P_RL_PASS], b[P_RL_APART], b[P_LINE],
	       b[P_LINE_LONG], b[P_PLAIN], rb, b[P_LRU], b[P_LRU_PC], lb, note, lnote);
	fflush(stdout);

	if (!e->json)
		return;
	json_begin(e, "kern_steady", sc->name);
	fprintf(e->json,
		", \"v6\": %d, \"sources_per_cpu\": %u, \"threads\": %d, \"disjoint\": %d, "
		"\"table\": %u, \"repeat\": %u, \"runs\": %d, \"new_windows_while_steady\": %llu, "
		"\"lru_new_windows_while_steady\": %llu, \"lru_pcpu_new_windows_while_steady\": %llu",
		sc->v6, sc->nsrc, sc->threads, sc->disjoint, e->table, REPEAT, e->runs,
		(unsigned long long)(nw1 - nw0), (unsigned long long)(nl1[0] - nl0[0]),
		(unsigned long long)(nl1[1] - nl0[1]));
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
	fprintf(e->json, ", ");
	json_spread(e, "lru_over_buckets_own_cost", spread_of(ql, e->runs));
	fprintf(e->json, ", ");
	json_spread(e, "lru_over_buckets_total", spread_of(qlt, e->runs));
	fprintf(e->json, ", \"raw_kern_ns\": {");
	for (p = 0; p < P_MAX; p++) {
		fprintf(e->json, "%s\"%s\": [", p ? ", " : "", prog_key[p]);
		for (r = 0; r < e->runs; r++)
			fprintf(e->json, "%s%.0f", r ? ", " : "", v[p][r]);
		fprintf(e->json, "]");
	}
	fprintf(e->json, "}}");
}

/* ---- One window every CPU charges: on 1 CPU and on 2 (issue 11) --------------- */

/*
 * A flood from one source arrives on every RX queue, so every CPU charges
 * the same window: a source's own, a --shared rule's budget, or the
 * --new-sources cap. Each is measured on CPU 0 alone and on CPUs 0 and 1 at
 * once (a test_run each, started together), in two states: dropping (a
 * limit of HOT_LIMIT per hour, reached before timing starts) and passing
 * (limit max: every packet is charged with the atomic add). The plain
 * reference is measured the same way (its own 'dropping': its count over
 * its limit; it adds either way). "2/1" is what each of two CPUs pays per
 * packet over bare XDP_DROP (on as many CPUs, same run) over what one CPU
 * alone pays, run by run.
 */
#define HOT_LIMIT     1000ULL
#define HOT_SHARED    32768U	  /* sources per CPU under the /16 of the shared rule */
#define HOT_SPOOFED   65536U	  /* new sources per CPU in the spoofed flood */
#define HOT_CAP_SRC   0xf0000000U /* the sources that used up --new-sources (240.0.0.0) */
#define HOT_RULE_ADDR 0xc6120000U /* 198.18.0.0/16, the --shared rule */

enum hot_id {
	H_RL_DROP,
	H_RL_DROP_OWN, /* each CPU its own source: nothing shared (a control) */
	H_RL_PASS,
	H_RL_PASS_OWN,
	H_PLAIN_DROP,
	H_PLAIN_PASS,
	H_SHARED_DROP,
	H_SHARED_PASS,
	H_NEW_FULL,
	H_LINE, /* bare XDP_DROP and an atomic add to one line: what a line bouncing costs */
	H_BARE, /* bare XDP_DROP, the floor of each run */
	H_MAX,
};

static const struct {
	const char *name, *key;
	__u32 nsrc;    /* sources per CPU */
	__u32 base[2]; /* CPU 0's first source and CPU 1's, host order */
	int rl;	       /* xdp-rl: its stats are checked */
	int dropping;
} hot_def[H_MAX] = {
	{ "xdp-rl, 1 source, dropping", "xdp_rl_drop", 1, { 0xc6120000, 0xc6120000 }, 1, 1 },
	{ "  each CPU its own source", "xdp_rl_drop_own", 1, { 0xc6120000, 0xc6120001 }, 1, 1 },
	{ "xdp-rl, 1 source, passing", "xdp_rl_pass", 1, { 0xc6120000, 0xc6120000 }, 1, 0 },
	{ "  each CPU its own source", "xdp_rl_pass_own", 1, { 0xc6120000, 0xc6120001 }, 1, 0 },
	{ "plain ref, 1 source, dropping", "plain_drop", 1, { 0xc6120000, 0xc6120000 }, 0, 1 },
	{ "plain ref, 1 source, passing", "plain_pass", 1, { 0xc6120000, 0xc6120000 }, 0, 0 },
	{ "--shared /16, dropping", "shared_drop", HOT_SHARED, { 0xc6120000, 0xc6128000 }, 1, 1 },
	{ "--shared /16, passing", "shared_pass", HOT_SHARED, { 0xc6120000, 0xc6128000 }, 1, 0 },
	{ "--new-sources used up, drop",
	  "new_sources_full",
	  HOT_SPOOFED,
	  { 0xc6120000, 0xc6130000 },
	  1,
	  1 },
	{ "a line both write (+1 atomic)", "bare_atomic", 1, { 0xc6120000, 0xc6120000 }, 0, 0 },
	{ "bare XDP_DROP", "bare_drop", 1, { 0xc6120000, 0xc6120000 }, 0, 0 },
};

struct hot_env {
	int fd[H_MAX];
	struct xdp_rl *rl[H_MAX];
	struct bench_plain *plain[H_MAX];
	__u64 walk[H_MAX][2];
};

/*
 * xdp-rl as `xdp-rl load --limit LIMIT --window 1h` (the default table)
 * loads it, with, as asked, `rule add 198.18.0.0/16 --layer SHARED/1h
 * --shared` or `--new-sources HOT_LIMIT/1h --on-table-full drop`.
 */
static struct xdp_rl *rl_hot_load(__u64 limit, __u64 shared, int cap)
{
	struct xdp_rl_rule r = {
		.action = XDP_RL_RULE_LIMIT, .nlayers = 1, .flags = XDP_RL_RULE_F_SHARED, .lsid = 2
	};
	struct xdp_rl_rule_key4 k = { .prefixlen = 16, .addr = htonl(HOT_RULE_ADDR) };
	struct xdp_rl *s = xdp_rl__open();
	struct xdp_rl_live *l;
	struct xdp_rl_config c;
	__u32 zero = 0;
	int fd;

	if (!s)
		die("kern: open xdp-rl: %s", strerror(errno));
	if (skel_prepare(s, &(struct xdp_rl_fixed){ .max_sources = DEFAULT_TABLE,
						    .v4_prefix = 32,
						    .v6_prefix = 64,
						    .max_layers = 1,
						    .seed = BENCH_SEED }) ||
	    xdp_rl__load(s))
		die("kern: load xdp-rl: %s", strerror(errno));
	fd = bpf_map__fd(s->maps.config);
	if (bpf_map_lookup_elem(fd, &zero, &c))
		die("kern: read xdp-rl config: %s", strerror(errno));
	c.active = 0;
	l = &c.slot[0];
	memset(l, 0, sizeof(*l));
	l->layer[0].limit = limit;
	l->layer[0].window_ns = WINDOW_NS;
	l->nlayers = 1;
	l->lsid = 1;
	l->max_window_ns = WINDOW_NS;
	if (skel_clock(s, l))
		die("kern: measure the tick clock: %s", strerror(errno));
	l->flags = XDP_RL_F_COARSE_CLOCK;
	if (shared) {
		r.layer[0].limit = shared;
		r.layer[0].window_ns = WINDOW_NS;
		if (bpf_map_update_elem(bpf_map__fd(s->maps.rules4), &k, &r, 0))
			die("kern: add the --shared rule: %s", strerror(errno));
		l->nrules4 = 1;
	}
	if (cap) {
		l->new_sources.limit = HOT_LIMIT;
		l->new_sources.window_ns = WINDOW_NS;
		l->on_full = XDP_RL_FULL_DROP;
	}
	if (bpf_map_update_elem(fd, &zero, &c, 0))
		die("kern: write xdp-rl config: %s", strerror(errno));
	return s;
}

/* What an xdp-rl instance decided: its counters, and the drops counted apart (bpf/hot.h). */
struct rl_tally {
	__u64 passed, dropped, apart, inserts, refused;
};

static struct rl_tally rl_tally(struct xdp_rl *s)
{
	int ncpu = libbpf_num_possible_cpus(), c;
	struct xdp_rl_stats st[ncpu];
	struct xdp_rl_hot h[ncpu];
	struct rl_tally t = { 0 };
	const struct bpf_map *dm = s->maps.drops;
	size_t len = (size_t)bpf_map__max_entries(dm) * sizeof(__u64), i;
	__u32 zero = 0, k;
	__u64 *w;

	if (bpf_map_lookup_elem(bpf_map__fd(s->maps.stats), &zero, st))
		die("kern: read xdp-rl stats: %s", strerror(errno));
	for (c = 0; c < ncpu; c++) {
		t.passed += st[c].c[XDP_RL_STAT_PASSED];
		t.dropped += st[c].c[XDP_RL_STAT_DROPPED];
		t.inserts += st[c].c[XDP_RL_STAT_INSERTS];
		t.refused += st[c].c[XDP_RL_STAT_REFUSED_INSERTS];
	}
	for (k = 0; k < bpf_map__max_entries(s->maps.hot); k++) {
		if (bpf_map_lookup_elem(bpf_map__fd(s->maps.hot), &k, h))
			die("kern: read xdp-rl hot: %s", strerror(errno));
		for (c = 0; c < ncpu; c++)
			t.apart += h[c].id ? h[c].drops : 0;
	}
	w = mmap(NULL, len, PROT_READ, MAP_SHARED, bpf_map__fd(dm), 0);
	if (w == MAP_FAILED)
		die("kern: map xdp-rl drops: %s", strerror(errno));
	for (i = 0; i < len / sizeof(*w); i++)
		t.apart += w[i] & XDP_RL_DROPS_MASK;
	munmap(w, len);
	return t;
}

static void hot_load(struct hot_env *h, struct kenv *e)
{
	int i;

	memset(h, 0, sizeof(*h));
	h->rl[H_RL_DROP] = rl_hot_load(HOT_LIMIT, 0, 0);
	h->rl[H_RL_DROP_OWN] = rl_hot_load(HOT_LIMIT, 0, 0);
	h->rl[H_RL_PASS] = rl_hot_load(XDP_RL_LIMIT_MAX, 0, 0);
	h->rl[H_RL_PASS_OWN] = rl_hot_load(XDP_RL_LIMIT_MAX, 0, 0);
	h->rl[H_SHARED_DROP] = rl_hot_load(XDP_RL_LIMIT_MAX, HOT_LIMIT, 0);
	h->rl[H_SHARED_PASS] = rl_hot_load(XDP_RL_LIMIT_MAX, XDP_RL_LIMIT_MAX, 0);
	h->rl[H_NEW_FULL] = rl_hot_load(HOT_LIMIT, 0, 1);
	h->plain[H_PLAIN_DROP] = plain_load(DEFAULT_TABLE, 0, HOT_LIMIT);
	h->plain[H_PLAIN_PASS] = plain_load(DEFAULT_TABLE, 0, ~0ULL);
	for (i = 0; i < H_MAX; i++)
		h->fd[i] = h->rl[i]    ? bpf_program__fd(h->rl[i]->progs.xdp_rl) :
			   h->plain[i] ? bpf_program__fd(h->plain[i]->progs.plain) :
			   i == H_LINE ? bpf_program__fd(e->bare->progs.bare_atomic) :
					 bpf_program__fd(e->bare->progs.bare_drop);
}

static void hot_unload(struct hot_env *h)
{
	int i;

	for (i = 0; i < H_MAX; i++) {
		xdp_rl__destroy(h->rl[i]);
		bench_plain__destroy(h->plain[i]);
	}
}

/*
 * Run case @id for @repeat packets, walking @nsrc sources from @base: on CPU
 * @on alone (0 or 1), or on both at once (2).
 */
static struct sample hot_run(struct kenv *e, struct hot_env *h, int id, int on, __u32 repeat,
			     __u32 nsrc, const __u32 *base, int step1)
{
	int threads = on == 2 ? 2 : 1;
	__u32 slot = BENCH_SLOT_TARGET;
	struct sample s;
	int i;

	struct bench_stamp *st = e->wrap->bss->stamp;
	__u64 lo, hi, span, longest = 0;

	if (bpf_map_update_elem(bpf_map__fd(e->wrap->maps.progs), &slot, &h->fd[id], 0))
		die("kern: set the tail call target: %s", strerror(errno));
	e->wrap->data->nsrc = nsrc;
	e->wrap->data->step = step1 ? 1 : scatter_step(nsrc);
	e->wrap->bss->stamp_last = repeat - 1;
	for (i = 0; i < 2; i++) {
		e->wrap->bss->base[i] = base[i];
		e->wrap->bss->ctr[i].n = h->walk[id][i] < nsrc ? h->walk[id][i] : 0;
		memset(&st[i], 0, sizeof(st[i]));
	}
	s = run_at(bpf_program__fd(e->wrap->progs.wrap_stamped), &e->f4, repeat, threads, on);
	for (i = 0; i < 2; i++) {
		if (threads == 1 && i != on)
			continue;
		h->walk[id][i] = e->wrap->bss->ctr[i].n;
		span = st[i].last > st[i].first ? st[i].last - st[i].first : 0;
		if (span > longest)
			longest = span;
		/* s.kern is the mean over threads: close enough for a share. */
		if (span && s.kern * (repeat - 1) / span < s.oncpu)
			s.oncpu = s.kern * (repeat - 1) / span;
	}
	if (threads == 2) {
		lo = st[0].first > st[1].first ? st[0].first : st[1].first;
		hi = st[0].last < st[1].last ? st[0].last : st[1].last;
		s.overlap = hi > lo && longest ? (double)(hi - lo) / longest : 0;
	}
	return s;
}

/*
 * Case @id on @threads CPUs. Two CPUs only contend while both run: a run
 * whose threads overlapped or stayed on their CPUs less than HOT_TOGETHER of
 * the time (another task on one of the CPUs: this machine is shared) is run
 * again, up to HOT_TRIES times in all, and the most concurrent one is kept.
 */
#define HOT_TRIES    5
#define HOT_TOGETHER 0.9
/* A run where a line both CPUs write cost each this much more than on one CPU: it bounced. */
#define HOT_BOUNCE_NS 10

static double together(struct sample s)
{
	return s.overlap < s.oncpu ? s.overlap : s.oncpu;
}

static struct sample hot_measure(struct kenv *e, struct hot_env *h, int id, int on, __u64 *sent,
				 int *tries)
{
	struct sample s, best = { 0 };
	int k;

	for (k = 0; k < HOT_TRIES; k++) {
		s = hot_run(e, h, id, on, REPEAT, hot_def[id].nsrc, hot_def[id].base, 0);
		*sent += (__u64)REPEAT * (on == 2 ? 2 : 1);
		if (!k || together(s) > together(best))
			best = s;
		if (together(s) >= HOT_TOGETHER)
			break;
	}
	if (tries)
		*tries += k < HOT_TRIES ? k + 1 : k;
	return best;
}

/* What xdp-rl decided while timed, as a note: whether the intended path was taken. */
static void hot_note(char *buf, size_t len, int id, struct rl_tally a, struct rl_tally b,
		     __u64 sent)
{
	__u64 p = b.passed - a.passed, d = b.dropped - a.dropped, x = b.apart - a.apart;

	if (!hot_def[id].rl) {
		*buf = 0;
		return;
	}
	if (!hot_def[id].dropping)
		snprintf(buf, len, "passed %.1f%%", 100.0 * p / sent);
	else if (id == H_NEW_FULL)
		snprintf(buf, len, "dropped %.1f%%, refused inserts %.1f%%, inserts %llu",
			 100.0 * d / sent, 100.0 * (b.refused - a.refused) / sent,
			 (unsigned long long)(b.inserts - a.inserts));
	else
		snprintf(buf, len, "dropped %.1f%%, counted apart %.1f%%", 100.0 * d / sent,
			 d ? 100.0 * x / d : 0.0);
}

/* Median of the values @v[i] where @keep[i], or NAN if none; *n: how many. */
static struct spread spread_where(const double *v, const int *keep, int runs, int *n)
{
	double k[MAX_RUNS];
	struct spread s = { NAN, NAN, NAN };
	int i;

	for (*n = 0, i = 0; i < runs; i++)
		if (keep[i])
			k[(*n)++] = v[i];
	return *n ? spread_of(k, *n) : s;
}

static void json_runs(struct kenv *e, const char *key, const double *v, int runs)
{
	int r;

	fprintf(e->json, ", \"%s\": [", key);
	for (r = 0; r < runs; r++)
		fprintf(e->json, "%s%.1f", r ? ", " : "", v[r]);
	fprintf(e->json, "]");
}

static void hot(struct kenv *e)
{
	/* [case][0: 1 CPU, 1: 2 CPUs][run]: ns/pkt */
	static double v[H_MAX][2][MAX_RUNS];
	/* 2 CPUs: how much the two runs overlapped, and the lower on-CPU share */
	static double ov[H_MAX][MAX_RUNS], oc[H_MAX][MAX_RUNS];
	double d1[MAX_RUNS], d2[MAX_RUNS], q[MAX_RUNS], qt[MAX_RUNS], bounce[MAX_RUNS];
	struct rl_tally t0[H_MAX], t1[H_MAX];
	const __u32 cap_base[2] = { HOT_CAP_SRC, HOT_CAP_SRC };
	struct hot_env h;
	char b1[64], b2[64], b3[64], b4[64], note[192];
	__u64 sent[H_MAX] = { 0 }, warm = 0;
	int tries[H_MAX] = { 0 }, bounced[MAX_RUNS], nb;
	struct spread sq;
	int r, i, k, t, id;

	memset(v, 0, sizeof(v));
	hot_load(&h, e);
	run_rt = 1;
	/* --new-sources used up: HOT_LIMIT new sources, each inserted once. */
	hot_run(e, &h, H_NEW_FULL, 0, HOT_LIMIT, HOT_LIMIT, cap_base, 1);
	/* Warm up on each CPU and on both: the dropping windows reach their limit. */
	for (id = 0; id < H_MAX; id++)
		for (t = 0; t <= 2; t++)
			hot_measure(e, &h, id, t, &warm, NULL);
	for (id = 0; id < H_MAX; id++)
		if (hot_def[id].rl)
			t0[id] = rl_tally(h.rl[id]);
	for (r = 0; r < e->runs; r++) {
		/*
		 * CPU 0 alone, CPU 1 alone (1 CPU: their mean, as 2 CPUs' is of
		 * the two), both; every other run in reverse order, cases too.
		 */
		for (k = 0; k < 3; k++) {
			t = r % 2 ? 2 - k : k;
			for (i = 0; i < H_MAX; i++) {
				struct sample sm;

				id = r % 2 ? H_MAX - 1 - i : i;
				sm = hot_measure(e, &h, id, t, &sent[id],
						 t == 2 ? &tries[id] : NULL);
				if (t < 2) {
					v[id][0][r] += sm.kern / 2;
					continue;
				}
				v[id][1][r] = sm.kern;
				ov[id][r] = 100 * sm.overlap;
				oc[id][r] = 100 * sm.oncpu;
			}
		}
		/* What a line both CPUs write cost each of them more than one CPU, this run. */
		bounce[r] =
			(v[H_LINE][1][r] - v[H_BARE][1][r]) - (v[H_LINE][0][r] - v[H_BARE][0][r]);
		bounced[r] = bounce[r] >= HOT_BOUNCE_NS;
	}
	run_rt = 0;
	for (id = 0; id < H_MAX; id++)
		if (hot_def[id].rl)
			t1[id] = rl_tally(h.rl[id]);

	printf("\none window every CPU charges, on 1 CPU (CPU 0 alone and CPU 1 alone: their mean) "
	       "and on 2 CPUs at once (0 and 1, a test_run each, started together; SCHED_FIFO "
	       "throughout); 'dropping': a limit of %llu per 1 h window, reached before timing; "
	       "'passing': limit max, every packet charged by the atomic add.\n"
	       "(d): ns/pkt over bare XDP_DROP on as many CPUs, same run; 2 CPUs: each CPU's. "
	       "2/1: (d) on 2 CPUs over (d) on 1 CPU, per run (| the same for ns/pkt with the "
	       "floor). Sources per CPU: 1 source: the same 198.18.0.0 on both ('each CPU its own "
	       "source': 198.18.0.0 and .1, no window shared: what two CPUs cost each other here "
	       "apart from one); --shared: %u of 198.18.0.0/16 each (one 'rule add 198.18.0.0/16 --layer %llu/1h --shared', or "
	       "max/1h); --new-sources: %u never-seen sources each (198.18/16, 198.19/16), after "
	       "%llu others used up '--new-sources %llu/1h --on-table-full drop'.\n"
	       "A line both CPUs write (bare XDP_DROP + one atomic add) costs each CPU %s ns more "
	       "on 2 CPUs than on 1, run by run: on this VM it depends on where the host runs the "
	       "two vCPUs at the time. 'bounced': the 2/1 of the runs where that was at least "
	       "%d ns (n of %d runs).\n"
	       "checks: what xdp-rl decided while timed, from its counters ('apart': drops "
	       "taken on a read of the count, bpf/hot.h); how long the 2 CPUs' runs overlapped; "
	       "the lower on-CPU share of their loops; test runs made (a run with either below "
	       "%.0f%% is made again, up to %d times).\n",
	       HOT_LIMIT, HOT_SHARED, HOT_LIMIT, HOT_SPOOFED, HOT_LIMIT, HOT_LIMIT,
	       fmt_spread(b1, sizeof(b1), spread_of(bounce, e->runs), 1, 0), HOT_BOUNCE_NS, e->runs,
	       100 * HOT_TOGETHER, HOT_TRIES);
	printf("%-32s %-20s %-20s %-26s %-22s %s\n", "program, state", "1 CPU (d)",
	       "2 CPUs, each (d)", "2 CPUs / 1 CPU (d)|total", "bounced 2/1 (d)", "checks");
	for (r = 0; r < e->runs; r++)
		qt[r] = v[H_BARE][1][r] / v[H_BARE][0][r];
	snprintf(b3, sizeof(b3), "%.2fx", spread_of(qt, e->runs).med);
	printf("%-32s %-20s %-20s %-26s %-22s overlap %.0f%%, on CPU %.0f%%, %d runs\n",
	       "bare XDP_DROP, ns/pkt",
	       fmt_spread(b1, sizeof(b1), spread_of(v[H_BARE][0], e->runs), 0, 0),
	       fmt_spread(b2, sizeof(b2), spread_of(v[H_BARE][1], e->runs), 0, 0), b3, "",
	       spread_of(ov[H_BARE], e->runs).med, spread_of(oc[H_BARE], e->runs).med,
	       tries[H_BARE]);
	for (id = 0; id < H_BARE; id++) {
		for (r = 0; r < e->runs; r++) {
			d1[r] = v[id][0][r] - v[H_BARE][0][r];
			d2[r] = v[id][1][r] - v[H_BARE][1][r];
			q[r] = d2[r] / d1[r];
			qt[r] = v[id][1][r] / v[id][0][r];
		}
		sq = spread_of(q, e->runs);
		snprintf(b3, sizeof(b3), "%.2fx [%.2f..%.2f]|%.2fx", sq.med, sq.lo, sq.hi,
			 spread_of(qt, e->runs).med);
		sq = spread_where(q, bounced, e->runs, &nb);
		if (nb)
			snprintf(b4, sizeof(b4), "%.2fx [%.2f..%.2f] %d", sq.med, sq.lo, sq.hi, nb);
		else
			snprintf(b4, sizeof(b4), "- 0");
		if (id == H_LINE) {
			/* Its own cost on one CPU is about 0: a ratio to it means nothing. */
			snprintf(b3, sizeof(b3), "-");
			snprintf(b4, sizeof(b4), "- %d", nb);
		}
		hot_note(note, sizeof(note), id, t0[id], t1[id], sent[id]);
		snprintf(note + strlen(note), sizeof(note) - strlen(note),
			 "%soverlap %.0f%%, on CPU %.0f%%, %d runs", *note ? "; " : "",
			 spread_of(ov[id], e->runs).med, spread_of(oc[id], e->runs).med, tries[id]);
		printf("%-32s %-20s %-20s %-26s %-22s %s\n", hot_def[id].name,
		       fmt_spread(b1, sizeof(b1), spread_of(d1, e->runs), 1, 0),
		       fmt_spread(b2, sizeof(b2), spread_of(d2, e->runs), 1, 0), b3, b4, note);
		if (!e->json)
			continue;
		json_begin(e, "kern_hot", hot_def[id].name);
		fprintf(e->json,
			", \"case\": \"%s\", \"sources_per_cpu\": %u, \"repeat\": %u, "
			"\"runs\": %d, \"bounce_threshold_ns\": %d, \"bounced_runs\": %d, "
			"\"test_runs_2cpu\": %d, \"checks\": \"%s\", ",
			hot_def[id].key, hot_def[id].nsrc, REPEAT, e->runs, HOT_BOUNCE_NS, nb,
			tries[id], note);
		json_spread(e, "bare_drop_1cpu_ns", spread_of(v[H_BARE][0], e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "bare_drop_2cpu_ns", spread_of(v[H_BARE][1], e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "ns_1cpu", spread_of(v[id][0], e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "ns_2cpu", spread_of(v[id][1], e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "over_drop_ns_1cpu", spread_of(d1, e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "over_drop_ns_2cpu", spread_of(d2, e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "ratio_2cpu_1cpu_total", spread_of(qt, e->runs));
		if (id != H_LINE) {
			fprintf(e->json, ", ");
			json_spread(e, "ratio_2cpu_1cpu_own", spread_of(q, e->runs));
		}
		if (nb && id != H_LINE) {
			fprintf(e->json, ", ");
			json_spread(e, "ratio_2cpu_1cpu_own_bounced", sq);
		}
		json_runs(e, "raw_ns_1cpu", v[id][0], e->runs);
		json_runs(e, "raw_ns_2cpu", v[id][1], e->runs);
		json_runs(e, "raw_bare_ns_1cpu", v[H_BARE][0], e->runs);
		json_runs(e, "raw_bare_ns_2cpu", v[H_BARE][1], e->runs);
		json_runs(e, "raw_line_bounce_ns", bounce, e->runs);
		fprintf(e->json, "}");
	}
	fflush(stdout);
	hot_unload(&h);
}

/* ---- Insert: the first packet of a new source ------------------------------- */

enum { I_DROP, I_RL, I_RL2, I_PLAIN, I_PLAIN2, I_LRU, I_LRU2, I_LRU_PC, I_MAX };

static void insert(struct kenv *e, const struct scen *sc)
{
	double v[I_MAX][MAX_RUNS], d[MAX_RUNS], q[MAX_RUNS], ql[MAX_RUNS];
	char b[I_MAX][64], rb[64], lb[64];
	__u64 nw, bad = 0, want = (__u64)sc->nsrc * (sc->disjoint ? sc->threads : 1);
	struct spread st, sl;
	int r, i;

	for (r = 0; r < e->runs_insert; r++) {
		tables_load(e, table_for(sc), sc->v6, 1);
		v[I_DROP][r] = measure(e, sc, P_DROP, sc->nsrc, 1, 0).kern;
		nw = rl_new_windows(e->rl);
		v[I_RL][r] = measure(e, sc, P_RL, sc->nsrc, 1, 0).kern;
		if (rl_new_windows(e->rl) - nw != want)
			bad++;
		v[I_RL2][r] = measure(e, sc, P_RL, sc->nsrc, 1, 1).kern;
		v[I_PLAIN][r] = measure(e, sc, P_PLAIN, sc->nsrc, 1, 0).kern;
		v[I_PLAIN2][r] = measure(e, sc, P_PLAIN, sc->nsrc, 1, 1).kern;
		nw = rl_new_windows(e->lru);
		v[I_LRU][r] = measure(e, sc, P_LRU, sc->nsrc, 1, 0).kern;
		if (rl_new_windows(e->lru) - nw != want)
			bad++;
		v[I_LRU2][r] = measure(e, sc, P_LRU, sc->nsrc, 1, 1).kern;
		v[I_LRU_PC][r] = measure(e, sc, P_LRU_PC, sc->nsrc, 1, 0).kern;
		q[r] = (v[I_PLAIN][r] - v[I_DROP][r]) / (v[I_RL][r] - v[I_DROP][r]);
		ql[r] = (v[I_LRU][r] - v[I_DROP][r]) / (v[I_RL][r] - v[I_DROP][r]);
	}
	fmt_spread(b[I_DROP], sizeof(b[0]), spread_of(v[I_DROP], e->runs_insert), 0, 0);
	for (i = I_RL; i < I_MAX; i++) {
		for (r = 0; r < e->runs_insert; r++)
			d[r] = v[i][r] - v[I_DROP][r];
		fmt_spread(b[i], sizeof(b[0]), spread_of(d, e->runs_insert), 1, 0);
	}
	st = spread_of(q, e->runs_insert);
	snprintf(rb, sizeof(rb), "%.2fx [%.2f..%.2f]", st.med, st.lo, st.hi);
	sl = spread_of(ql, e->runs_insert);
	snprintf(lb, sizeof(lb), "%.2fx [%.2f..%.2f]", sl.med, sl.lo, sl.hi);
	printf("%-30s %-20s %-22s %-22s %-22s %-22s %-24s %-22s %-22s %-22s %s%s\n", sc->name,
	       b[I_DROP], b[I_RL], b[I_RL2], b[I_PLAIN], b[I_PLAIN2], rb, b[I_LRU], b[I_LRU2],
	       b[I_LRU_PC], lb, bad ? "  (!) not every first packet opened a window" : "");
	fflush(stdout);

	if (!e->json)
		return;
	json_begin(e, "kern_insert", sc->name);
	fprintf(e->json,
		", \"v6\": %d, \"sources\": %u, \"threads\": %d, \"table\": %u, \"runs\": %d",
		sc->v6, sc->nsrc, sc->threads, e->table, e->runs_insert);
	{
		static const char *const key[I_MAX] = {
			"bare_drop",
			"xdp_rl_insert",
			"xdp_rl_second_pass",
			"plain_insert",
			"plain_second_pass",
			"xdp_rl_lru_insert",
			"xdp_rl_lru_second_pass",
			"xdp_rl_lru_pcpu_insert",
		};
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
	fprintf(e->json, ", ");
	json_spread(e, "lru_over_buckets_own_cost", sl);
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
/* Selectors of the shapes: none, one the frames (UDP to port 9) match, one they do not. */
enum { SEL_NONE, SEL_MATCH, SEL_MISS };

/* @rules of rl_load_shape: none, N_RULES rules, or N_LISTED prefixes on the deny list. */
enum { NO_RULES, RULES, LISTED };

#define N_LISTED 1000000

/*
 * A deny list of N_LISTED prefixes none of the sources is on, as `xdp-rl
 * lists` makes it (user/lists.c): the 65 536 IPv4 /32s of 198.19.0.0/16 (the
 * sources are in 198.18.0.0/16) and /112s of 2001:2::/48 for the rest, in
 * one trie put in `lists`.
 */
static void lists_fill(struct xdp_rl *s)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
	struct xdp_rl_rule_key6 k;
	__u32 zero = 0, i, v;
	__u8 *b = (__u8 *)k.addr;
	int fd;

	fd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "bench_lists", sizeof(k), sizeof(v), N_LISTED,
			    &opts);
	if (fd < 0)
		die("kern: make the lists' trie: %s", strerror(errno));
	for (i = 0; i < N_LISTED; i++) {
		memset(&k, 0, sizeof(k));
		if (i < 65536) {
			b[10] = b[11] = 0xff;
			b[12] = 198;
			b[13] = 19;
			b[14] = i >> 8;
			b[15] = i & 255;
			k.prefixlen = 128;
			v = XDP_RL_LIST_ENTRY(XDP_RL_RULE_DENY, 32);
		} else {
			b[0] = 0x20;
			b[1] = 0x01;
			b[3] = 0x02;
			b[6] = (i - 65536) >> 24; /* within 2001:2::/48 */
			b[7] = (i - 65536) >> 16;
			b[8] = (i - 65536) >> 8;
			b[9] = (i - 65536) & 255;
			k.prefixlen = 112;
			v = XDP_RL_LIST_ENTRY(XDP_RL_RULE_DENY, 112);
		}
		if (bpf_map_update_elem(fd, &k, &v, 0))
			die("kern: list prefix %u: %s", i, strerror(errno));
	}
	if (bpf_map_update_elem(bpf_map__fd(s->maps.lists), &zero, &fd, 0))
		die("kern: put the lists in: %s", strerror(errno));
	close(fd);
}

static struct xdp_rl *rl_load_shape(int layers, int rules, int sel)
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
	if (sel != SEL_NONE) {
		/* --proto udp --dport 9,53,443-445, or --dport 53,443-445: the frames go to 9. */
		c.slot[0].flags |= XDP_RL_F_SELECT;
		c.slot[0].select.proto = IPPROTO_UDP;
		c.slot[0].select.nports = 3;
		c.slot[0].select.port_lo[0] = sel == SEL_MATCH ? 9 : 80;
		c.slot[0].select.port_hi[0] = sel == SEL_MATCH ? 9 : 80;
		c.slot[0].select.port_lo[1] = c.slot[0].select.port_hi[1] = 53;
		c.slot[0].select.port_lo[2] = 443;
		c.slot[0].select.port_hi[2] = 445;
	}
	if (rules == RULES) {
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
	if (rules == LISTED) {
		c.slot[0].flags |= XDP_RL_F_LISTS4 | XDP_RL_F_LISTS6;
		lists_fill(s);
	}
	if (bpf_map_update_elem(fd, &zero, &c, 0))
		die("kern: write xdp-rl config: %s", strerror(errno));
	return s;
}

static void layers_rules(struct kenv *e)
{
	static const struct {
		const char *name;
		int layers, rules, sel;
	} shape[] = {
		{ "1 layer", 1, NO_RULES, SEL_NONE },
		{ "2 layers", 2, NO_RULES, SEL_NONE },
		{ "4 layers", 4, NO_RULES, SEL_NONE },
		{ "1 layer, 10 000 rules", 1, RULES, SEL_NONE },
		{ "1 layer, 1 000 000 listed", 1, LISTED, SEL_NONE },
		{ "1 layer, selector, selected", 1, NO_RULES, SEL_MATCH },
		{ "1 layer, selector, passed by", 1, NO_RULES, SEL_MISS },
	};
	enum { N_SHAPES = sizeof(shape) / sizeof(shape[0]) };
	struct scen sc = { "IPv4 1 000, 1 CPU", 0, 1000, 1, 0, 0 };
	double base[MAX_RUNS], d[N_SHAPES][MAX_RUNS];
	struct xdp_rl *rl[N_SHAPES];
	__u32 slot = BENCH_SLOT_TARGET;
	char b1[64], b2[64];
	int r, k, fd;

	for (k = 0; k < N_SHAPES; k++)
		rl[k] = rl_load_shape(shape[k].layers, shape[k].rules, shape[k].sel);
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
	       "rules: %d /24s elsewhere and one /15 --layer rule every source matches; "
	       "listed: a deny list of %d prefixes (65 536 IPv4 /32s, IPv6 /112s) none of "
	       "the sources is on; "
	       "selector: --proto udp --dport 9,53,443-445 (the frames, UDP to port 9, are "
	       "selected: transport parsed, ports matched, charged) or --dport 80,53,443-445 "
	       "(passed by: parsed, matched, passed untouched, no table lookup)\n",
	       sc.name, N_RULES, N_LISTED);
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

/* ---- What a capture costs the datapath (issue 25): bench_prog capture ---------- */

/*
 * xdp-rl's program, loaded as for the steady rows, on their simplest case
 * (IPv4, 1 source, 1 CPU), dropping (limit 1) and passing (limit max), with
 * the `capture` map's lease as `xdp-rl capture` sets it (user/cmd/capture.c
 * lease_take; written here directly): no capture; every reason, the whole
 * frame, --sample 1000; the same with --sample 1. The lease ends an hour
 * from now on CLOCK_MONOTONIC_COARSE (bpf_ktime_get_coarse_ns's clock).
 *
 * Nobody reads `cap_ring` in a bench: it is emptied before each test run,
 * outside the timing, and a run is short enough (CAP_REPEAT frames, a
 * record each at --sample 1) that it never fills within one. One more row
 * runs --sample 1 with the ring full, every record lost, as when a
 * capture's reader has fallen behind. A measurement is CAP_CHUNKS such
 * runs, their mean; every figure is over bare XDP_DROP measured the same
 * way in the same run, as in the other sections.
 */
#define CAP_REPEAT 32768U
#define CAP_CHUNKS 8
#define CAP_LEASE  (3600 * SEC_NS)

enum cap_state { C_OFF, C_S1000, C_S1, C_S1_FULL, C_MAX };

static const struct {
	const char *name, *key;
	__u32 sample; /* 0: no capture */
	int full;     /* the ring left full: every record lost */
} cap_def[C_MAX] = {
	{ "no capture (lease 0)", "off", 0, 0 },
	{ "--sample 1000, ring emptied", "sample_1000", 1000, 0 },
	{ "--sample 1, ring emptied", "sample_1", 1, 0 },
	{ "--sample 1, ring full", "sample_1_ring_full", 1, 1 },
};

struct cap_env {
	struct xdp_rl *rl;
	struct ring_buffer *ring;
	__u32 gen;
	__u64 records; /* read from the ring, in all */
};

static int cap_record(void *ctx, void *data __attribute__((unused)),
		      size_t size __attribute__((unused)))
{
	(*(__u64 *)ctx)++;
	return 0;
}

static __u64 coarse_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return t.tv_sec * SEC_NS + t.tv_nsec;
}

/* The lease as `xdp-rl capture --sample @sample` takes it (0: no capture), its counters zeroed. */
static void cap_set(struct cap_env *c, __u32 sample)
{
	int ncpu = libbpf_num_possible_cpus();
	struct xdp_rl_cap_cpu zeroed[ncpu];
	struct xdp_rl_capture cap;
	__u32 zero = 0;
	int fd = bpf_map__fd(c->rl->maps.capture);

	if (bpf_map_lookup_elem(fd, &zero, &cap))
		die("capture: read the capture map: %s", strerror(errno));
	cap.until_ns = 0;
	if (bpf_map_update_elem(fd, &zero, &cap, 0))
		die("capture: write the capture map: %s", strerror(errno));
	memset(zeroed, 0, sizeof(zeroed));
	if (bpf_map_update_elem(bpf_map__fd(c->rl->maps.cap_cpu), &zero, zeroed, 0))
		die("capture: zero cap_cpu: %s", strerror(errno));
	if (!sample)
		return;
	memset(&cap, 0, sizeof(cap));
	cap.gen = ++c->gen;
	cap.reasons = (1U << XDP_RL_CAP_REASONS) - 1;
	cap.sample = sample;
	cap.snaplen = XDP_RL_CAP_SNAPLEN_MAX;
	cap.until_ns = coarse_ns() + CAP_LEASE;
	if (bpf_map_update_elem(fd, &zero, &cap, 0))
		die("capture: write the capture map: %s", strerror(errno));
}

/* This capture's counters, summed over CPUs. */
static struct xdp_rl_cap_cpu cap_counters(struct cap_env *c)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	struct xdp_rl_cap_cpu per[ncpu], t = { 0 };
	__u32 zero = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(c->rl->maps.cap_cpu), &zero, per))
		die("capture: read cap_cpu: %s", strerror(errno));
	for (i = 0; i < ncpu; i++) {
		t.checked += per[i].checked;
		t.matched += per[i].matched;
		t.sent += per[i].sent;
		t.failed += per[i].failed;
	}
	return t;
}

static void cap_drain(struct cap_env *c)
{
	if (ring_buffer__consume(c->ring) < 0)
		die("capture: read cap_ring: %s", strerror(errno));
}

/* Test runs of @fd on CPU 0 behind the wrapper, one source; the ring emptied before each. */
static double cap_run(struct kenv *e, struct cap_env *c, int fd, int drain)
{
	struct scen one = { "capture", 0, 1, 1, 0, 0 };
	__u32 slot = BENCH_SLOT_TARGET;
	double sum = 0;
	int k;

	if (bpf_map_update_elem(bpf_map__fd(e->wrap->maps.progs), &slot, &fd, 0))
		die("kern: set the tail call target: %s", strerror(errno));
	set_sources(e, &one, 1, 0);
	for (k = 0; k < CAP_CHUNKS; k++) {
		if (drain)
			cap_drain(c);
		sum += run_on(bpf_program__fd(e->wrap->progs.wrap), &e->f4, CAP_REPEAT, 1).kern;
	}
	return sum / CAP_CHUNKS;
}

/*
 * State @st's columns for one verdict, from its runs @v, no capture's @off
 * and bare XDP_DROP's @base: (d), over none (d), x none (d); and its JSON.
 */
static void cap_cols(struct kenv *e, int st, int vd, const double *v, const double *off,
		     const double *base, char cols[3][64])
{
	double d[MAX_RUNS], x[MAX_RUNS], q[MAX_RUNS];
	struct spread sq;
	int r;

	for (r = 0; r < e->runs; r++) {
		d[r] = v[r] - base[r];
		x[r] = d[r] - (off[r] - base[r]);
		q[r] = d[r] / (off[r] - base[r]);
	}
	fmt_spread(cols[0], 64, spread_of(d, e->runs), 1, 0);
	sq = spread_of(q, e->runs);
	if (st == C_OFF) {
		snprintf(cols[1], 64, "-");
		snprintf(cols[2], 64, "-");
	} else {
		fmt_spread(cols[1], 64, spread_of(x, e->runs), 1, 0);
		snprintf(cols[2], 64, "%.2fx [%.2f..%.2f]", sq.med, sq.lo, sq.hi);
	}
	if (!e->json)
		return;
	json_begin(e, "kern_capture", cap_def[st].name);
	fprintf(e->json,
		", \"state\": \"%s\", \"verdict\": \"%s\", \"sample\": %u, \"ring_full\": %d, "
		"\"repeat\": %u, \"chunks\": %d, \"runs\": %d, ",
		cap_def[st].key, vd ? "passing" : "dropping", cap_def[st].sample, cap_def[st].full,
		CAP_REPEAT, CAP_CHUNKS, e->runs);
	json_spread(e, "bare_drop_ns", spread_of(base, e->runs));
	fprintf(e->json, ", ");
	json_spread(e, "ns", spread_of(v, e->runs));
	fprintf(e->json, ", ");
	json_spread(e, "over_drop_ns", spread_of(d, e->runs));
	if (st != C_OFF) {
		fprintf(e->json, ", ");
		json_spread(e, "over_no_capture_ns", spread_of(x, e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "over_no_capture_ratio", sq);
	}
	json_runs(e, "raw_ns", v, e->runs);
	json_runs(e, "raw_bare_ns", base, e->runs);
	fprintf(e->json, "}");
}

static void capture_cost(struct kenv *e)
{
	/* [state][0: dropping, 1: passing][run] */
	static double v[C_MAX][2][MAX_RUNS];
	double base[MAX_RUNS], chk[MAX_RUNS], d[MAX_RUNS];
	struct xdp_rl_cap_cpu t0, t1;
	__u64 sent[C_MAX][2] = { { 0 } }, lost[C_MAX][2] = { { 0 } }, judged[C_MAX][2] = { { 0 } };
	__u64 pkts = (__u64)CAP_REPEAT * CAP_CHUNKS;
	int bare = bpf_program__fd(e->bare->progs.bare_drop);
	int check = bpf_program__fd(e->bare->progs.bare_capcheck);
	struct cap_env c = { 0 };
	char b[6][64], ring[96];
	__u32 rec = (sizeof(struct xdp_rl_cap_meta) + BENCH_FRAME_LEN + 8 + 7) & ~7U;
	int r, i, k, st, vd, fd;

	c.rl = rl_load(DEFAULT_TABLE);
	c.ring = ring_buffer__new(bpf_map__fd(c.rl->maps.cap_ring), cap_record, &c.records, NULL);
	if (!c.ring)
		die("capture: open cap_ring: %s", strerror(errno));
	fd = bpf_program__fd(c.rl->progs.xdp_rl);
	/* Warm up: the source's window open, each state once. */
	for (st = 0; st < C_MAX; st++)
		for (vd = 0; vd < 2; vd++) {
			rl_publish(c.rl, vd ? XDP_RL_LIMIT_MAX : 1);
			cap_set(&c, cap_def[st].sample);
			cap_run(e, &c, fd, 1);
		}
	for (r = 0; r < e->runs; r++) {
		/* bare, the check, then each state dropping and passing; reversed every other run. */
		for (i = 0; i < 2 + 2 * C_MAX; i++) {
			k = r % 2 ? 2 * C_MAX + 1 - i : i;
			if (k == 0) {
				base[r] = cap_run(e, &c, bare, 0);
				continue;
			}
			if (k == 1) {
				chk[r] = cap_run(e, &c, check, 0);
				continue;
			}
			st = (k - 2) / 2;
			vd = (k - 2) % 2;
			rl_publish(c.rl, vd ? XDP_RL_LIMIT_MAX : 1);
			cap_set(&c, cap_def[st].sample);
			if (cap_def[st].full) {
				/* Fill the ring (untimed): more records than it holds. */
				cap_drain(&c);
				cap_run(e, &c, fd, 0);
			}
			t0 = cap_counters(&c);
			v[st][vd][r] = cap_run(e, &c, fd, !cap_def[st].full);
			t1 = cap_counters(&c);
			sent[st][vd] += t1.sent - t0.sent;
			lost[st][vd] += t1.failed - t0.failed;
			judged[st][vd] += t1.checked - t0.checked;
		}
	}
	cap_set(&c, 0);
	cap_drain(&c);

	printf("IPv4 1 source, 1 CPU, the xdp-rl program of the steady rows (limit 1: dropping; limit "
	       "max: passing), with the capture map's lease as 'xdp-rl capture' sets it, written "
	       "directly: no capture (its word 0), or every reason, the whole frame, --sample 1000 "
	       "or 1, the lease an hour ahead on CLOCK_MONOTONIC_COARSE.\n"
	       "Test runs of %u packets (every state and bare XDP_DROP: %d of them, their mean, per "
	       "measurement); %d runs, order reversed every other run; median [range] after "
	       "trimming the lowest and highest fifth. (d): ns/pkt over bare XDP_DROP, same run; "
	       "over none: (d) minus no capture's (d), same run; x none: (d) over no capture's "
	       "(d), same run.\n"
	       "Nobody reads the ring here: 'ring emptied': read out before each test run, untimed "
	       "(it holds %u records of a %d-byte frame, more than a test run makes); 'ring full': "
	       "filled first, every record lost (counted in the capture's 'lost'), as when a "
	       "capture's reader falls behind. ring: of the packets timed, written to the ring "
	       "and lost, from the capture's counters (cap_cpu).\n",
	       CAP_REPEAT, CAP_CHUNKS, e->runs, XDP_RL_CAP_RING_BYTES / rec, BENCH_FRAME_LEN);
	for (r = 0; r < e->runs; r++)
		d[r] = chk[r] - base[r];
	printf("the check every packet makes when no capture runs (bpf/capture.h capture_on: one "
	       "read of the lease word), alone: bare XDP_DROP + that read, %s ns/pkt over bare "
	       "XDP_DROP (%s ns/pkt)\n\n",
	       fmt_spread(b[0], sizeof(b[0]), spread_of(d, e->runs), 1, 1),
	       fmt_spread(b[1], sizeof(b[1]), spread_of(base, e->runs), 0, 1));
	printf("%-30s %-22s %-22s %-22s %-22s %-22s %-22s %s\n", "capture (the lease)",
	       "dropping (d)", "over none (d)", "x none (d)", "passing (d)", "over none (d)",
	       "x none (d)", "ring: written, lost (dropping | passing)");
	for (st = 0; st < C_MAX; st++) {
		char cols[2][3][64];

		for (vd = 0; vd < 2; vd++)
			cap_cols(e, st, vd, v[st][vd], v[C_OFF][vd], base, cols[vd]);
		if (!cap_def[st].sample)
			snprintf(ring, sizeof(ring), "-");
		else
			snprintf(ring, sizeof(ring), "%.2f%%, %.2f%% | %.2f%%, %.2f%%",
				 100.0 * sent[st][0] / (pkts * e->runs),
				 100.0 * lost[st][0] / (pkts * e->runs),
				 100.0 * sent[st][1] / (pkts * e->runs),
				 100.0 * lost[st][1] / (pkts * e->runs));
		printf("%-30s %-22s %-22s %-22s %-22s %-22s %-22s %s\n", cap_def[st].name,
		       cols[0][0], cols[0][1], cols[0][2], cols[1][0], cols[1][1], cols[1][2],
		       ring);
		for (vd = 0; e->json && vd < 2; vd++) {
			json_begin(e, "kern_capture_ring", cap_def[st].name);
			fprintf(e->json,
				", \"state\": \"%s\", \"verdict\": \"%s\", \"packets\": %llu, "
				"\"judged\": %llu, \"written\": %llu, \"lost\": %llu}",
				cap_def[st].key, vd ? "passing" : "dropping",
				(unsigned long long)(pkts * e->runs),
				(unsigned long long)judged[st][vd],
				(unsigned long long)sent[st][vd], (unsigned long long)lost[st][vd]);
		}
	}
	if (e->json) {
		json_begin(e, "kern_capture_check", "capture_on alone");
		fprintf(e->json, ", ");
		for (r = 0; r < e->runs; r++)
			d[r] = chk[r] - base[r];
		json_spread(e, "over_drop_ns", spread_of(d, e->runs));
		fprintf(e->json, "}");
	}
	fflush(stdout);
	ring_buffer__free(c.ring);
	xdp_rl__destroy(c.rl);
}

/* ---- What --ban costs the datapath: bench_prog ban ------------------------------- */

/*
 * xdp-rl's program, loaded as for the steady rows (IPv4, 1 CPU, N sources
 * each with an open window of an hour, walked in scattered order), in five
 * states, each over bare XDP_DROP and over the same verdict without --ban,
 * all in the same run:
 *
 *   passing, no --ban: limit max, the fast path (limit_fast);
 *   passing, --ban 1h: XDP_RL_F_BANS set, so the general path (charge_in)
 *     and the key's ban word read before the charge; no window goes over
 *     its limit, so no ban is made;
 *   dropping, no --ban: limit 1, every window over it (refused on a read of
 *     its count, bpf/hot.h);
 *   dropping, --ban 1h, none banned: the same windows, --ban set after they
 *     went over: the general path, the ban word read (no ban in it), then
 *     refused on the read of the count;
 *   every source banned: a second table under --ban 1h and limit 1 from the
 *     start, each source's window taken over its limit before timing (a
 *     packet to open it, a second to cross it: bpf/ban.h, B1), so every
 *     packet is refused by its ban (layers_banned), without a charge.
 *
 * The first four share one table, as part 1's dropping and passing do; it
 * never holds a ban, so the bench may clear its XDP_RL_F_BANS between
 * states (xdp-rl keeps the flag set once a ban was configured: user/live.h).
 */
#define BAN_NS	   WINDOW_NS /* --ban 1h */
#define BAN_PASSES 4	     /* passes over the sources at most, to ban them all */

enum ban_state { B_PASS, B_PASS_BAN, B_DROP, B_DROP_BAN, B_BANNED, B_MAX };

static const struct {
	const char *name, *key;
	__u64 limit;
	int ban;	  /* --ban 1h (XDP_RL_F_BANS) */
	int table;	  /* 0: the table that holds no ban; 1: every source banned */
	int ref;	  /* the same verdict without --ban */
	int stat;	  /* the counter every packet timed should move */
	const char *what; /* ... said so */
} ban_def[B_MAX] = {
	{ "passing, no --ban (fast path)", "pass", XDP_RL_LIMIT_MAX, 0, 0, B_PASS,
	  XDP_RL_STAT_PASSED, "passed" },
	{ "passing, --ban 1h", "pass_ban", XDP_RL_LIMIT_MAX, 1, 0, B_PASS, XDP_RL_STAT_PASSED,
	  "passed" },
	{ "dropping, no --ban", "drop", 1, 0, 0, B_DROP, XDP_RL_STAT_DROPS_LIMIT,
	  "dropped over the limit" },
	{ "dropping, --ban 1h, none banned", "drop_ban", 1, 1, 0, B_DROP, XDP_RL_STAT_DROPS_LIMIT,
	  "dropped over the limit" },
	{ "dropping, every source banned", "banned", 1, 1, 1, B_DROP, XDP_RL_STAT_DROPS_BANNED,
	  "dropped by a ban" },
};

/* Counter @idx of @s, summed over CPUs. */
static __u64 rl_stat(struct xdp_rl *s, int idx)
{
	int n = libbpf_num_possible_cpus(), c;
	struct xdp_rl_stats per[n];
	__u32 zero = 0;
	__u64 sum = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(s->maps.stats), &zero, per))
		die("ban: read xdp-rl stats: %s", strerror(errno));
	for (c = 0; c < n; c++)
		sum += per[c].c[idx];
	return sum;
}

/*
 * @repeat packets on CPU 0 through @fd behind the wrapper, over @sc's
 * sources, the walk going on where *@walk says (each table walks on its own,
 * as measure() does), scattered or in order; ns/pkt.
 */
static double ban_run(struct kenv *e, const struct scen *sc, int fd, __u64 *walk, __u32 repeat,
		      int scatter)
{
	__u32 slot = BENCH_SLOT_TARGET;
	double t;

	if (bpf_map_update_elem(bpf_map__fd(e->wrap->maps.progs), &slot, &fd, 0))
		die("ban: set the tail call target: %s", strerror(errno));
	e->wrap->bss->ctr[0].n = *walk;
	set_sources(e, sc, 0, scatter);
	t = run_on(bpf_program__fd(e->wrap->progs.wrap), &e->f4, repeat, 1).kern;
	*walk = e->wrap->bss->ctr[0].n;
	return t;
}

static void ban_cost(struct kenv *e, const struct scen *sc)
{
	double base[MAX_RUNS], v[B_MAX][MAX_RUNS], d[MAX_RUNS], x[MAX_RUNS], q[MAX_RUNS];
	__u64 moved[B_MAX] = { 0 }, walk[3] = { 0 }, pkts = (__u64)REPEAT * e->runs;
	__u64 made, bans0[2], bans1[2], nw0[2], nw1[2], c0;
	struct xdp_rl *rl[2];
	int bare = bpf_program__fd(e->bare->progs.bare_drop), fd[2];
	char cols[3][64], chk[96];
	struct spread sq;
	int r, i, k, st, t;

	for (t = 0; t < 2; t++) {
		rl[t] = rl_load(table_for(sc));
		fd[t] = bpf_program__fd(rl[t]->progs.xdp_rl);
	}
	/*
	 * Table 0: every source's window open and already over a limit of 1,
	 * so that no charge under --ban ever takes one over it: it never holds
	 * a ban. Passes over the sources until one opens no window (a source
	 * whose slot went to another, a few in a million, opens it again).
	 */
	rl_publish(rl[0], XDP_RL_LIMIT_MAX);
	i = 0;
	do {
		c0 = rl_stat(rl[0], XDP_RL_STAT_NEW_WINDOWS);
		ban_run(e, sc, fd[0], &walk[0], sc->nsrc, 0);
	} while (rl_stat(rl[0], XDP_RL_STAT_NEW_WINDOWS) != c0 && ++i < BAN_PASSES);
	/*
	 * Table 1, under --ban 1h and limit 1: a packet opens each window, a
	 * second bans its source; a pass more while a source is not banned yet
	 * (one that found no slot at once, and opened its window a pass later).
	 */
	rl_publish_ban(rl[1], 1, BAN_NS);
	for (i = 0; i < BAN_PASSES && (i < 2 || rl_stat(rl[1], XDP_RL_STAT_BANS) < sc->nsrc); i++)
		ban_run(e, sc, fd[1], &walk[1], sc->nsrc, 0);
	made = rl_stat(rl[1], XDP_RL_STAT_BANS);
	/* Warm up: each state once, and the floor. */
	ban_run(e, sc, bare, &walk[2], REPEAT, 1);
	for (st = 0; st < B_MAX; st++) {
		t = ban_def[st].table;
		rl_publish_ban(rl[t], ban_def[st].limit, ban_def[st].ban ? BAN_NS : 0);
		ban_run(e, sc, fd[t], &walk[t], REPEAT, 1);
	}
	for (t = 0; t < 2; t++) {
		bans0[t] = rl_stat(rl[t], XDP_RL_STAT_BANS);
		nw0[t] = rl_stat(rl[t], XDP_RL_STAT_NEW_WINDOWS);
	}
	for (r = 0; r < e->runs; r++) {
		/* Bare XDP_DROP, then each state; reversed every other run. */
		for (i = 0; i <= B_MAX; i++) {
			k = r % 2 ? B_MAX - i : i;
			if (k == 0) {
				base[r] = ban_run(e, sc, bare, &walk[2], REPEAT, 1);
				continue;
			}
			st = k - 1;
			t = ban_def[st].table;
			rl_publish_ban(rl[t], ban_def[st].limit, ban_def[st].ban ? BAN_NS : 0);
			c0 = rl_stat(rl[t], ban_def[st].stat);
			v[st][r] = ban_run(e, sc, fd[t], &walk[t], REPEAT, 1);
			moved[st] += rl_stat(rl[t], ban_def[st].stat) - c0;
		}
	}
	for (t = 0; t < 2; t++) {
		bans1[t] = rl_stat(rl[t], XDP_RL_STAT_BANS);
		nw1[t] = rl_stat(rl[t], XDP_RL_STAT_NEW_WINDOWS);
	}

	printf("%-24s %-34s %s\n", sc->name, "bare XDP_DROP, ns/pkt",
	       fmt_spread(cols[0], sizeof(cols[0]), spread_of(base, e->runs), 0, 0));
	for (st = 0; st < B_MAX; st++) {
		int ref = ban_def[st].ref;

		for (r = 0; r < e->runs; r++) {
			d[r] = v[st][r] - base[r];
			x[r] = d[r] - (v[ref][r] - base[r]);
			q[r] = d[r] / (v[ref][r] - base[r]);
		}
		fmt_spread(cols[0], sizeof(cols[0]), spread_of(d, e->runs), 1, 0);
		sq = spread_of(q, e->runs);
		if (ref == st) {
			snprintf(cols[1], sizeof(cols[1]), "-");
			snprintf(cols[2], sizeof(cols[2]), "-");
		} else {
			fmt_spread(cols[1], sizeof(cols[1]), spread_of(x, e->runs), 1, 0);
			snprintf(cols[2], sizeof(cols[2]), "%.2fx [%.2f..%.2f]", sq.med, sq.lo,
				 sq.hi);
		}
		snprintf(chk, sizeof(chk), "%s %.1f%%", ban_def[st].what, 100.0 * moved[st] / pkts);
		printf("%-24s %-34s %-22s %-22s %-22s %s\n", "", ban_def[st].name, cols[0], cols[1],
		       cols[2], chk);
		if (!e->json)
			continue;
		json_begin(e, "kern_ban", sc->name);
		fprintf(e->json,
			", \"state\": \"%s\", \"sources\": %u, \"table\": %u, \"limit\": %llu, "
			"\"ban_ns\": %llu, \"repeat\": %u, \"runs\": %d, \"packets\": %llu, "
			"\"%s\": %llu, ",
			ban_def[st].key, sc->nsrc, table_for(sc),
			(unsigned long long)ban_def[st].limit,
			(unsigned long long)(ban_def[st].ban ? BAN_NS : 0), REPEAT, e->runs,
			(unsigned long long)pkts, ban_def[st].what[0] == 'p' ? "passed" : "dropped",
			(unsigned long long)moved[st]);
		json_spread(e, "bare_drop_ns", spread_of(base, e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "ns", spread_of(v[st], e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "over_drop_ns", spread_of(d, e->runs));
		if (ref != st) {
			fprintf(e->json, ", \"compared_to\": \"%s\", ", ban_def[ref].key);
			json_spread(e, "over_no_ban_ns", spread_of(x, e->runs));
			fprintf(e->json, ", ");
			json_spread(e, "over_no_ban_ratio", sq);
		}
		json_runs(e, "raw_ns", v[st], e->runs);
		json_runs(e, "raw_bare_ns", base, e->runs);
		fprintf(e->json, "}");
	}
	printf("%-24s checks: the banned table: %llu of %u sources banned before timing, %llu "
	       "bans while timed; the other table: %llu bans; windows opened while timed: %llu "
	       "and %llu\n",
	       "", (unsigned long long)made, sc->nsrc, (unsigned long long)(bans1[1] - bans0[1]),
	       (unsigned long long)bans1[0], (unsigned long long)(nw1[0] - nw0[0]),
	       (unsigned long long)(nw1[1] - nw0[1]));
	if (e->json) {
		json_begin(e, "kern_ban_check", sc->name);
		fprintf(e->json,
			", \"sources\": %u, \"banned_before_timing\": %llu, "
			"\"bans_while_timed\": %llu, \"bans_unbanned_table\": %llu, "
			"\"new_windows_while_timed\": [%llu, %llu]}",
			sc->nsrc, (unsigned long long)made,
			(unsigned long long)(bans1[1] - bans0[1]), (unsigned long long)bans1[0],
			(unsigned long long)(nw1[0] - nw0[0]),
			(unsigned long long)(nw1[1] - nw0[1]));
	}
	fflush(stdout);
	for (t = 0; t < 2; t++)
		xdp_rl__destroy(rl[t]);
}

/* ---- What a rate costs the datapath: bench_prog rate ------------------------------ */

/*
 * xdp-rl's program, loaded as for the steady rows (IPv4, 1 CPU, N sources
 * walked in scattered order), a limit of one layer, each source's state
 * made before timing, in six states, each over bare XDP_DROP and over the
 * same verdict of a fixed window, all in the same run:
 *
 *   window, passing: limit max per 1 h window on the tick clock, as `load
 *     --window 1h` runs it: the fast path (limit_fast);
 *   window, passing, precise clock: the same on bpf_ktime_get_ns(), the
 *     clock a rate needs (user/live.c): what the clock alone costs;
 *   rate, passing, owes nothing: --rate 1000000000/1s --burst 1000 (1 ns a
 *     packet): each source's TAT is long past when its packet comes, so
 *     every packet begins an episode (a new generation, rate.h's R4): a
 *     source sending below its rate;
 *   rate, passing, within its burst: --rate 1/4s --burst 4000, each
 *     source's TAT taken RATE_PRIME costs (40 s) ahead before timing: every
 *     packet finds the TAT ahead of now and moves it on (one
 *     compare-and-swap), however long a scenario takes to come back to a
 *     source: a source sending above its rate, inside its burst;
 *   window, dropping: limit 1, every window over it (refused on a read);
 *   rate, dropping: --rate 1/4s --burst 1, each source's TAT taken
 *     RDROP_PRIME costs (80 s) ahead before timing under a burst that
 *     allows it, then the burst set to 1 in place (the TATs stay) and each
 *     source's first refusal made: every packet is refused on a read
 *     (rate.h's R2, layers_exhausted) for 80 s, longer than a scenario.
 *
 * A rate never takes the fast path (limit_fast): its rows are the general
 * path (charge_in) and the precise clock together. The windows share one
 * table, each rate its own (a state of one kind is not the other's).
 */
#define RATE_PASSES 4  /* passes over the sources at most, to make their states */
#define RATE_PRIME  10 /* passes that take the rate within its burst's TATs ahead */
#define RDROP_PRIME 20 /* passes that take the dropping rate's TATs ahead */

enum rate_state { RT_WPASS, RT_WPASS_NS, RT_RPASS_NEW, RT_RPASS_BURST, RT_WDROP, RT_RDROP, RT_MAX };

static const struct {
	const char *name, *key;
	int table; /* 0: the windows'; 1..3: a rate's own */
	int rate;  /* a rate (--rate N/DUR --burst B), else a window of N per DUR */
	__u64 n, dur_ns, burst;
	__u32 flags; /* XDP_RL_F_COARSE_CLOCK: the tick clock; 0: the precise clock */
	int ref;     /* the same verdict of a window, as `load --window 1h` runs it */
	int pass;    /* every packet timed passes, else every one is dropped over the limit */
} rate_def[RT_MAX] = {
	{ "window, passing (fast path)", "window_pass", 0, 0, XDP_RL_LIMIT_MAX, WINDOW_NS, 0,
	  XDP_RL_F_COARSE_CLOCK, RT_WPASS, 1 },
	{ "window, passing, precise clock", "window_pass_precise", 0, 0, XDP_RL_LIMIT_MAX,
	  WINDOW_NS, 0, 0, RT_WPASS, 1 },
	{ "rate, passing, owes nothing", "rate_pass_new", 1, 1, 1000000000, SEC_NS, 1000, 0,
	  RT_WPASS, 1 },
	{ "rate, passing, within burst", "rate_pass_burst", 2, 1, 1, 4 * SEC_NS, 4000, 0, RT_WPASS,
	  1 },
	{ "window, dropping", "window_drop", 0, 0, 1, WINDOW_NS, 0, XDP_RL_F_COARSE_CLOCK, RT_WDROP,
	  0 },
	{ "rate, dropping", "rate_drop", 3, 1, 1, 4 * SEC_NS, 1, 0, RT_WDROP, 0 },
};

#define RATE_TABLES 4

/* State @st's limit on @s, a rate's burst @burst instead of its own if not 0. */
static void rate_publish_burst(struct xdp_rl *s, int st, __u64 burst)
{
	struct xdp_rl_layer l = { .limit = rate_def[st].n, .window_ns = rate_def[st].dur_ns };

	if (rate_def[st].rate && xdp_rl_rate_fill(&l, rate_def[st].n, rate_def[st].dur_ns,
						  burst ? burst : rate_def[st].burst))
		die("rate: %s: the rate is out of bounds", rate_def[st].name);
	rl_publish_layer(s, &l, rate_def[st].flags, 0);
}

static void rate_publish(struct xdp_rl *s, int st)
{
	rate_publish_burst(s, st, 0);
}

static void rate_cost(struct kenv *e, const struct scen *sc)
{
	double base[MAX_RUNS], v[RT_MAX][MAX_RUNS], d[MAX_RUNS], x[MAX_RUNS], q[MAX_RUNS];
	static const int stat[3] = { XDP_RL_STAT_PASSED, XDP_RL_STAT_DROPS_LIMIT,
				     XDP_RL_STAT_NEW_WINDOWS };
	__u64 moved[RT_MAX][3] = { { 0 } }, walk[RATE_TABLES + 1] = { 0 };
	__u64 pkts = (__u64)REPEAT * e->runs, c0, m0[3], dropped_before;
	struct xdp_rl *rl[RATE_TABLES];
	int bare = bpf_program__fd(e->bare->progs.bare_drop), fd[RATE_TABLES];
	char cols[3][64], chk[128];
	struct spread sq;
	int r, i, k, st, t, m;

	for (t = 0; t < RATE_TABLES; t++) {
		rl[t] = rl_load(table_for(sc));
		fd[t] = bpf_program__fd(rl[t]->progs.xdp_rl);
	}
	/*
	 * Each table's states made, in order: passes over the sources under the
	 * first state on it (limit max for the windows) until one opens nothing
	 * new (a source whose slot went to another, a few in a million, opens
	 * its state again); for the rate that drops, until every source was
	 * refused once (its episode's first refusal), after its TATs were
	 * taken ahead under a burst of RDROP_PRIME; the rate within its burst
	 * after RATE_PRIME passes.
	 */
	for (t = 0; t < RATE_TABLES; t++) {
		for (st = 0; rate_def[st].table != t; st++)
			;
		if (st == RT_RDROP || st == RT_RPASS_BURST) {
			rate_publish_burst(rl[t], st, st == RT_RDROP ? RDROP_PRIME : 0);
			for (i = 0; i < (st == RT_RDROP ? RDROP_PRIME : RATE_PRIME); i++)
				ban_run(e, sc, fd[t], &walk[t], sc->nsrc, 0);
		}
		rate_publish(rl[t], st);
		i = 0;
		do {
			c0 = rl_stat(rl[t], XDP_RL_STAT_NEW_WINDOWS);
			dropped_before = rl_stat(rl[t], XDP_RL_STAT_DROPS_LIMIT);
			ban_run(e, sc, fd[t], &walk[t], sc->nsrc, 0);
		} while ((rl_stat(rl[t], XDP_RL_STAT_NEW_WINDOWS) != c0 ||
			  (st == RT_RDROP &&
			   rl_stat(rl[t], XDP_RL_STAT_DROPS_LIMIT) - dropped_before < sc->nsrc)) &&
			 ++i < RATE_PASSES);
	}
	/* Warm up: each state once, and the floor. */
	ban_run(e, sc, bare, &walk[RATE_TABLES], REPEAT, 1);
	for (st = 0; st < RT_MAX; st++) {
		t = rate_def[st].table;
		rate_publish(rl[t], st);
		ban_run(e, sc, fd[t], &walk[t], REPEAT, 1);
	}
	for (r = 0; r < e->runs; r++) {
		/* Bare XDP_DROP, then each state; reversed every other run. */
		for (i = 0; i <= RT_MAX; i++) {
			k = r % 2 ? RT_MAX - i : i;
			if (k == 0) {
				base[r] = ban_run(e, sc, bare, &walk[RATE_TABLES], REPEAT, 1);
				continue;
			}
			st = k - 1;
			t = rate_def[st].table;
			rate_publish(rl[t], st);
			for (m = 0; m < 3; m++)
				m0[m] = rl_stat(rl[t], stat[m]);
			v[st][r] = ban_run(e, sc, fd[t], &walk[t], REPEAT, 1);
			for (m = 0; m < 3; m++)
				moved[st][m] += rl_stat(rl[t], stat[m]) - m0[m];
		}
	}

	printf("%-24s %-32s %s\n", sc->name, "bare XDP_DROP, ns/pkt",
	       fmt_spread(cols[0], sizeof(cols[0]), spread_of(base, e->runs), 0, 0));
	for (st = 0; st < RT_MAX; st++) {
		int ref = rate_def[st].ref;

		for (r = 0; r < e->runs; r++) {
			d[r] = v[st][r] - base[r];
			x[r] = d[r] - (v[ref][r] - base[r]);
			q[r] = d[r] / (v[ref][r] - base[r]);
		}
		fmt_spread(cols[0], sizeof(cols[0]), spread_of(d, e->runs), 1, 0);
		sq = spread_of(q, e->runs);
		if (ref == st) {
			snprintf(cols[1], sizeof(cols[1]), "-");
			snprintf(cols[2], sizeof(cols[2]), "-");
		} else {
			fmt_spread(cols[1], sizeof(cols[1]), spread_of(x, e->runs), 1, 0);
			snprintf(cols[2], sizeof(cols[2]), "%.2fx [%.2f..%.2f]", sq.med, sq.lo,
				 sq.hi);
		}
		/* (!): not every packet timed had the state's verdict. */
		snprintf(chk, sizeof(chk), "passed %.1f%%, dropped %.1f%%, opened %.1f%%%s",
			 100.0 * moved[st][0] / pkts, 100.0 * moved[st][1] / pkts,
			 100.0 * moved[st][2] / pkts,
			 moved[st][rate_def[st].pass ? 0 : 1] == pkts ? "" : " (!)");
		printf("%-24s %-32s %-22s %-22s %-22s %s\n", "", rate_def[st].name, cols[0],
		       cols[1], cols[2], chk);
		if (!e->json)
			continue;
		json_begin(e, "kern_rate", sc->name);
		fprintf(e->json,
			", \"state\": \"%s\", \"sources\": %u, \"table\": %u, \"rate\": %d, "
			"\"n\": %llu, \"dur_ns\": %llu, \"burst\": %llu, \"precise_clock\": %d, "
			"\"repeat\": %u, \"runs\": %d, \"packets\": %llu, \"passed\": %llu, "
			"\"dropped\": %llu, \"opened\": %llu, ",
			rate_def[st].key, sc->nsrc, table_for(sc), rate_def[st].rate,
			(unsigned long long)rate_def[st].n, (unsigned long long)rate_def[st].dur_ns,
			(unsigned long long)rate_def[st].burst, !rate_def[st].flags, REPEAT,
			e->runs, (unsigned long long)pkts, (unsigned long long)moved[st][0],
			(unsigned long long)moved[st][1], (unsigned long long)moved[st][2]);
		json_spread(e, "bare_drop_ns", spread_of(base, e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "ns", spread_of(v[st], e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "over_drop_ns", spread_of(d, e->runs));
		if (ref != st) {
			fprintf(e->json, ", \"compared_to\": \"%s\", ", rate_def[ref].key);
			json_spread(e, "over_window_ns", spread_of(x, e->runs));
			fprintf(e->json, ", ");
			json_spread(e, "over_window_ratio", sq);
		}
		json_runs(e, "raw_ns", v[st], e->runs);
		json_runs(e, "raw_bare_ns", base, e->runs);
		fprintf(e->json, "}");
	}
	fflush(stdout);
	for (t = 0; t < RATE_TABLES; t++)
		xdp_rl__destroy(rl[t]);
}

/* ---- What a key beyond the source costs: bench_prog keys ---------------------- */

/*
 * xdp-rl's program loaded once per --key kind (src, src,dport, dst,
 * dst,dport: include/xdp_rl.h), as for the steady rows of part 1: 1 CPU, N
 * keys each with an open window of an hour, walked in scattered order. The
 * wrapper is wrap_key: for src keys it walks the source address, for dst
 * keys the destination (the other address fixed); the frames are UDP to
 * port 9, so a key with a port is {address, 9} and classify() parses the
 * UDP header for it. IPv6 keys are /112 in every kind (a port key takes
 * the last 16 bits), the walk in bits 64..95.
 *
 * Passing (limit max) and dropping (limit 1, every window over it before
 * timing, so refused on a read), each over bare XDP_DROP and over --key src
 * of the same verdict, all in the same run. One layer, no rules, no ban, no
 * list: every kind's packet takes limit_fast, wide keys too; what a kind
 * costs beyond src is its parse (the transport header), its key (an IPv4
 * key with a port is wide: hashed, its 16 bytes compared after the tag, its
 * slot 48 bytes rather than 32, a bucket three cache lines rather than two)
 * and nothing else. A second --key src table beside them says how much two
 * tables of the same kind differ.
 */
#define KEY_PASSES 4 /* passes over the keys at most, to open their windows */
/* The four kinds, then --key src again in a table of its own: the control. */
#define KEY_KINDS (XDP_RL_KEY_KINDS + 1)

/*
 * The kinds in the order of the table, src first: the reference. Last,
 * --key src again, in a table of its own: the same work as the first, so
 * what it differs by is what two tables differ by (where their pages fall,
 * how their buckets fill), the noise any other row's difference has.
 */
static const struct {
	const char *name;
	__u32 kind;
} key_def[KEY_KINDS] = {
	{ "src", XDP_RL_KEY_SRC },	 { "src,dport", XDP_RL_KEY_SRC_DPORT },
	{ "dst", XDP_RL_KEY_DST },	 { "dst,dport", XDP_RL_KEY_DST_DPORT },
	{ "src again", XDP_RL_KEY_SRC },
};

/* As ban_run, behind wrap_key, walking destinations if @dst. */
static double key_run(struct kenv *e, const struct scen *sc, int fd, __u64 *walk, __u32 repeat,
		      int scatter, int dst)
{
	__u32 slot = BENCH_SLOT_TARGET;
	double t;

	if (bpf_map_update_elem(bpf_map__fd(e->wrap->maps.progs), &slot, &fd, 0))
		die("keys: set the tail call target: %s", strerror(errno));
	e->wrap->bss->key_dst = dst;
	e->wrap->bss->ctr[0].n = *walk;
	set_sources(e, sc, 0, scatter);
	t = run_on(bpf_program__fd(e->wrap->progs.wrap_key), sc->v6 ? &e->f6 : &e->f4, repeat, 1)
		    .kern;
	*walk = e->wrap->bss->ctr[0].n;
	return t;
}

static void key_cost(struct kenv *e, const struct scen *sc)
{
	/* States: verdict * KEY_KINDS + kind; verdict 0 passing, 1 dropping. */
	enum { K_MAX = 2 * KEY_KINDS };
	double base[MAX_RUNS], v[K_MAX][MAX_RUNS], d[MAX_RUNS], x[MAX_RUNS], q[MAX_RUNS];
	static const int stat[3] = { XDP_RL_STAT_PASSED, XDP_RL_STAT_DROPS_LIMIT,
				     XDP_RL_STAT_NEW_WINDOWS };
	__u64 moved[K_MAX][3] = { { 0 } }, walk[KEY_KINDS + 1] = { 0 }, m0[3], c0;
	__u64 pkts = (__u64)REPEAT * e->runs, mem[KEY_KINDS];
	__u32 table = table_for(sc);
	struct xdp_rl *rl[KEY_KINDS];
	int bare = bpf_program__fd(e->bare->progs.bare_drop), fd[KEY_KINDS];
	char cols[3][64], chk[128], name[48], memline[256];
	struct spread sq;
	int r, i, k, st, t, m, dst, pass;
	size_t ml;

	for (t = 0; t < KEY_KINDS; t++) {
		rl[t] = rl_load_key(table, XDP_RL_TABLE_BUCKETS, 0, key_def[t].kind,
				    sc->v6 ? XDP_RL_KEY6_PORT_PREFIX : 128);
		fd[t] = bpf_program__fd(rl[t]->progs.xdp_rl);
		mem[t] = map_memlock(bpf_map__fd(sc->v6 ? rl[t]->maps.src6 : rl[t]->maps.src4));
	}
	/*
	 * Each key's window opened and taken past a limit of 1 (two packets at
	 * least), so that dropping is a refusal on a read: passes under limit
	 * max until one opens no window (a key whose slot went to another, a
	 * few in a million, opens it again).
	 */
	for (t = 0; t < KEY_KINDS; t++) {
		dst = xdp_rl_key_dst(key_def[t].kind);
		rl_publish(rl[t], XDP_RL_LIMIT_MAX);
		i = 0;
		do {
			c0 = rl_stat(rl[t], XDP_RL_STAT_NEW_WINDOWS);
			key_run(e, sc, fd[t], &walk[t], sc->nsrc, 0, dst);
		} while ((i < 1 || rl_stat(rl[t], XDP_RL_STAT_NEW_WINDOWS) != c0) &&
			 ++i < KEY_PASSES);
	}
	/* Warm up: each state once, and the floor. */
	key_run(e, sc, bare, &walk[KEY_KINDS], REPEAT, 1, 0);
	for (st = 0; st < K_MAX; st++) {
		t = st % KEY_KINDS;
		rl_publish(rl[t], st < KEY_KINDS ? XDP_RL_LIMIT_MAX : 1);
		key_run(e, sc, fd[t], &walk[t], REPEAT, 1, xdp_rl_key_dst(key_def[t].kind));
	}
	for (r = 0; r < e->runs; r++) {
		/* Bare XDP_DROP, then each state; reversed every other run. */
		for (i = 0; i <= K_MAX; i++) {
			k = r % 2 ? K_MAX - i : i;
			if (k == 0) {
				base[r] = key_run(e, sc, bare, &walk[KEY_KINDS], REPEAT, 1, 0);
				continue;
			}
			st = k - 1;
			t = st % KEY_KINDS;
			rl_publish(rl[t], st < KEY_KINDS ? XDP_RL_LIMIT_MAX : 1);
			for (m = 0; m < 3; m++)
				m0[m] = rl_stat(rl[t], stat[m]);
			v[st][r] = key_run(e, sc, fd[t], &walk[t], REPEAT, 1,
					   xdp_rl_key_dst(key_def[t].kind));
			for (m = 0; m < 3; m++)
				moved[st][m] += rl_stat(rl[t], stat[m]) - m0[m];
		}
	}

	printf("%-24s %-30s %s\n", sc->name, "bare XDP_DROP, ns/pkt",
	       fmt_spread(cols[0], sizeof(cols[0]), spread_of(base, e->runs), 0, 0));
	for (st = 0; st < K_MAX; st++) {
		int ref = st - st % KEY_KINDS;

		pass = st < KEY_KINDS;
		t = st % KEY_KINDS;
		for (r = 0; r < e->runs; r++) {
			d[r] = v[st][r] - base[r];
			x[r] = d[r] - (v[ref][r] - base[r]);
			q[r] = d[r] / (v[ref][r] - base[r]);
		}
		fmt_spread(cols[0], sizeof(cols[0]), spread_of(d, e->runs), 1, 0);
		sq = spread_of(q, e->runs);
		if (ref == st) {
			snprintf(cols[1], sizeof(cols[1]), "-");
			snprintf(cols[2], sizeof(cols[2]), "-");
		} else {
			fmt_spread(cols[1], sizeof(cols[1]), spread_of(x, e->runs), 1, 0);
			snprintf(cols[2], sizeof(cols[2]), "%.2fx [%.2f..%.2f]", sq.med, sq.lo,
				 sq.hi);
		}
		snprintf(name, sizeof(name), "--key %s, %s", key_def[t].name,
			 pass ? "passing" : "dropping");
		/* (!): not every packet timed had the state's verdict. */
		snprintf(chk, sizeof(chk), "passed %.1f%%, dropped %.1f%%, opened %.1f%%%s",
			 100.0 * moved[st][0] / pkts, 100.0 * moved[st][1] / pkts,
			 100.0 * moved[st][2] / pkts,
			 moved[st][pass ? 0 : 1] == pkts ? "" : " (!)");
		printf("%-24s %-30s %-22s %-22s %-22s %s\n", "", name, cols[0], cols[1], cols[2],
		       chk);
		if (!e->json)
			continue;
		json_begin(e, "kern_keys", sc->name);
		fprintf(e->json,
			", \"key\": \"%s\", \"state\": \"%s\", \"v6\": %d, \"sources\": %u, "
			"\"table\": %u, \"table_bytes\": %llu, \"repeat\": %u, \"runs\": %d, "
			"\"packets\": %llu, \"passed\": %llu, \"dropped\": %llu, \"opened\": %llu, ",
			key_def[t].name, pass ? "pass" : "drop", sc->v6, sc->nsrc, table,
			(unsigned long long)mem[t], REPEAT, e->runs, (unsigned long long)pkts,
			(unsigned long long)moved[st][0], (unsigned long long)moved[st][1],
			(unsigned long long)moved[st][2]);
		json_spread(e, "bare_drop_ns", spread_of(base, e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "ns", spread_of(v[st], e->runs));
		fprintf(e->json, ", ");
		json_spread(e, "over_drop_ns", spread_of(d, e->runs));
		if (ref != st) {
			fprintf(e->json, ", \"compared_to\": \"src\", ");
			json_spread(e, "over_src_ns", spread_of(x, e->runs));
			fprintf(e->json, ", ");
			json_spread(e, "over_src_ratio", sq);
		}
		json_runs(e, "raw_ns", v[st], e->runs);
		json_runs(e, "raw_bare_ns", base, e->runs);
		fprintf(e->json, "}");
	}
	ml = snprintf(memline, sizeof(memline),
		      "memory: the %s table of --max-sources %u (memlock):",
		      sc->v6 ? "src6" : "src4", table);
	for (t = 0; t < XDP_RL_KEY_KINDS && ml < sizeof(memline); t++)
		ml += snprintf(memline + ml, sizeof(memline) - ml, "%s %s %.1f B/source",
			       t ? "," : "", key_def[t].name, (double)mem[t] / table);
	printf("%-24s %s\n", "", memline);
	fflush(stdout);
	for (t = 0; t < KEY_KINDS; t++)
		xdp_rl__destroy(rl[t]);
}

/*
 * bench_prog line: what a cache line both CPUs write costs each of them
 * now (bare_atomic against bare_drop, on 2 CPUs at once against 1), for the
 * end-to-end part to record beside its 2-CPU cases. One JSON line.
 */
#define LINE_ROUNDS 3

int cmd_line(int argc, char **argv)
{
	static const __u8 mac_a[6] = { 2, 0, 0, 0, 0, 1 }, mac_b[6] = { 2, 0, 0, 0, 0, 2 };
	double b[LINE_ROUNDS], a1[LINE_ROUNDS], a2[LINE_ROUNDS];
	struct bench_bare *bare;
	struct frame f = { 0 };
	int r, drop, atomic;

	if (argc != 1)
		die("usage: bench_prog line (not '%s')", argv[1]);
	frame_build(&f, 0, mac_b, mac_a, "198.18.0.0", "198.18.0.2");
	bare = bench_bare__open_and_load();
	if (!bare)
		die("line: cannot load the bare programs: %s (run as root)", strerror(errno));
	drop = bpf_program__fd(bare->progs.bare_drop);
	atomic = bpf_program__fd(bare->progs.bare_atomic);
	run_rt = 1;
	for (r = 0; r < LINE_ROUNDS; r++) {
		double d1 = run_on(drop, &f, REPEAT, 1).kern, d2 = run_on(drop, &f, REPEAT, 2).kern;

		a1[r] = run_on(atomic, &f, REPEAT, 1).kern - d1;
		a2[r] = run_on(atomic, &f, REPEAT, 2).kern - d2;
		b[r] = a2[r] - a1[r];
	}
	run_rt = 0;
	printf("{\"bounce_ns\": %.1f, \"atomic_1cpu_ns\": %.1f, \"atomic_2cpu_ns\": %.1f}\n",
	       spread_of(b, LINE_ROUNDS).med, spread_of(a1, LINE_ROUNDS).med,
	       spread_of(a2, LINE_ROUNDS).med);
	bench_bare__destroy(bare);
	return 0;
}

int cmd_kern(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "json", required_argument, NULL, 'j' },
		{ "quick", no_argument, NULL, 'q' },
		{ "only", required_argument, NULL, 'o' },
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
		{ "IPv4 2 CPUs, 100 000 each", 0, 100000, 2, 1, 0 },
	};
	static const __u8 mac_a[6] = { 2, 0, 0, 0, 0, 1 }, mac_b[6] = { 2, 0, 0, 0, 0, 2 };
	struct kenv e = { .runs = 11, .runs_insert = 7, .json_first = 1 };
	size_t i, n_steady = sizeof(steady_sc) / sizeof(steady_sc[0]);
	size_t n_insert = sizeof(insert_sc) / sizeof(insert_sc[0]);
	const char *json = NULL, *only = NULL;
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
		case 'o': only = optarg; break;
		default: return 2;
		}
	}
	if (only) {
		for (i = 0; i < n_steady && !strstr(steady_sc[i].name, only); i++)
			;
		if (i == n_steady)
			die("kern: --only '%s' names no steady row", only);
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
		if (!only || strstr(steady_sc[i].name, only))
			steady(&e, &steady_sc[i]);
	if (only)
		goto out; /* an A/B of those rows alone */
	hot(&e);

	printf("\n%-30s %-20s %-22s %-22s %-22s %-22s %-24s %-22s %-22s %-22s %s\n",
	       "scenario (fresh tables)", "bare XDP_DROP ns/pkt", "xdp-rl insert   (d)",
	       "xdp-rl 2nd pass (d)", "plain insert    (d)", "plain 2nd pass  (d)",
	       "plain/xdp-rl insert (d)", "lru insert      (d)", "lru 2nd pass    (d)",
	       "lru per-CPU insert (d)", "lru/buckets insert (d)");
	for (i = 0; i < n_insert; i++)
		insert(&e, &insert_sc[i]);
	layers_rules(&e);
out:
	if (e.json) {
		fprintf(e.json, "\n]\n");
		fclose(e.json);
	}
	xdp_rl__destroy(e.rl);
	xdp_rl__destroy(e.lru);
	xdp_rl__destroy(e.lru_pc);
	xdp_rl__destroy(e.apart);
	bench_plain__destroy(e.plain);
	bench_bare__destroy(e.line);
	bench_wrap__destroy(e.wrap);
	bench_bare__destroy(e.bare);
	return 0;
}

/*
 * bench_prog capture [--runs N] [--json FILE]: what `xdp-rl capture` costs
 * the datapath (capture_cost), alone: make bench's part 5.
 */
int cmd_capture(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "json", required_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	static const __u8 mac_a[6] = { 2, 0, 0, 0, 0, 1 }, mac_b[6] = { 2, 0, 0, 0, 0, 2 };
	struct kenv e = { .runs = 11, .json_first = 1 };
	const char *json = NULL;
	__u64 runs;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'r':
			if (parse_u64(optarg, &runs) || runs < 1 || runs > MAX_RUNS)
				die("capture: --runs must be 1..%d", MAX_RUNS);
			e.runs = runs;
			break;
		case 'j': json = optarg; break;
		default: return 2;
		}
	}
	if (json) {
		e.json = fopen(json, "w");
		if (!e.json)
			die("capture: cannot write '%s': %s", json, strerror(errno));
		fprintf(e.json, "[\n");
	}
	frame_build(&e.f4, 0, mac_b, mac_a, "198.18.0.0", "198.18.0.2");
	e.bare = bench_bare__open_and_load();
	e.wrap = bench_wrap__open_and_load();
	if (!e.bare || !e.wrap)
		die("capture: cannot load the bench programs: %s (run as root)", strerror(errno));
	capture_cost(&e);
	if (e.json) {
		fprintf(e.json, "\n]\n");
		fclose(e.json);
	}
	bench_wrap__destroy(e.wrap);
	bench_bare__destroy(e.bare);
	return 0;
}

/*
 * bench_prog ban [--quick] [--runs N] [--json FILE]: what --ban costs the
 * datapath (ban_cost), with 1 000, 100 000 and 1 000 000 sources (--quick:
 * 1 000): make bench's part 6.
 */
int cmd_ban(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "json", required_argument, NULL, 'j' },
		{ "quick", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct scen ban_sc[] = {
		{ "IPv4 1 000, 1 CPU", 0, 1000, 1, 0, 0 },
		{ "IPv4 100 000, 1 CPU", 0, 100000, 1, 0, 0 },
		{ "IPv4 1 000 000, 1 CPU", 0, 1000000, 1, 0, 0 },
	};
	static const __u8 mac_a[6] = { 2, 0, 0, 0, 0, 1 }, mac_b[6] = { 2, 0, 0, 0, 0, 2 };
	struct kenv e = { .runs = 11, .json_first = 1 };
	size_t i, n = sizeof(ban_sc) / sizeof(ban_sc[0]);
	const char *json = NULL;
	__u64 runs;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'r':
			if (parse_u64(optarg, &runs) || runs < 1 || runs > MAX_RUNS)
				die("ban: --runs must be 1..%d", MAX_RUNS);
			e.runs = runs;
			break;
		case 'j': json = optarg; break;
		case 'q': n = 1; break;
		default: return 2;
		}
	}
	if (json) {
		e.json = fopen(json, "w");
		if (!e.json)
			die("ban: cannot write '%s': %s", json, strerror(errno));
		fprintf(e.json, "[\n");
	}
	frame_build(&e.f4, 0, mac_b, mac_a, "198.18.0.0", "198.18.0.2");
	e.bare = bench_bare__open_and_load();
	e.wrap = bench_wrap__open_and_load();
	if (!e.bare || !e.wrap)
		die("ban: cannot load the bench programs: %s (run as root)", strerror(errno));
	printf("IPv4, 1 CPU, N sources each with an open 1 h window (the steady rows of part 1), "
	       "walked in scattered order; xdp-rl's bucket table (%u sources, %u above that). "
	       "States: limit max (passing) or 1 (dropping), without --ban (XDP_RL_F_BANS clear: "
	       "passing takes the fast path) or with --ban 1h (XDP_RL_F_BANS set: the general "
	       "path, the key's ban word read first); 'none banned': the windows went over "
	       "before --ban was set, so no ban holds; 'every source banned': another table, "
	       "--ban 1h and limit 1 from the start, each source's window taken over its limit "
	       "before timing, so every packet is refused by its ban.\n"
	       "Test runs of %u packets; %d runs, order reversed every other run; median [range] "
	       "after trimming the lowest and highest fifth. (d): ns/pkt over bare XDP_DROP, "
	       "same run; over no --ban: (d) minus the same verdict's (d) without --ban, same "
	       "run; x no --ban: (d) over that (d), same run (the banned drop: over the "
	       "dropping row without --ban). checks: of the packets timed, the share the named "
	       "counter moved by.\n\n",
	       DEFAULT_TABLE, BIG_TABLE, REPEAT, e.runs);
	printf("%-24s %-34s %-22s %-22s %-22s %s\n", "sources", "state", "(d)", "over no --ban (d)",
	       "x no --ban (d)", "checks");
	for (i = 0; i < n; i++)
		ban_cost(&e, &ban_sc[i]);
	if (e.json) {
		fprintf(e.json, "\n]\n");
		fclose(e.json);
	}
	bench_wrap__destroy(e.wrap);
	bench_bare__destroy(e.bare);
	return 0;
}

/*
 * bench_prog rate [--quick] [--runs N] [--json FILE]: what a rate costs the
 * datapath against a fixed window (rate_cost), with 1 000, 100 000 and
 * 1 000 000 sources (--quick: 1 000): make bench's part 7.
 */
int cmd_rate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "json", required_argument, NULL, 'j' },
		{ "quick", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct scen rate_sc[] = {
		{ "IPv4 1 000, 1 CPU", 0, 1000, 1, 0, 0 },
		{ "IPv4 100 000, 1 CPU", 0, 100000, 1, 0, 0 },
		{ "IPv4 1 000 000, 1 CPU", 0, 1000000, 1, 0, 0 },
	};
	static const __u8 mac_a[6] = { 2, 0, 0, 0, 0, 1 }, mac_b[6] = { 2, 0, 0, 0, 0, 2 };
	struct kenv e = { .runs = 11, .json_first = 1 };
	size_t i, n = sizeof(rate_sc) / sizeof(rate_sc[0]);
	const char *json = NULL;
	__u64 runs;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'r':
			if (parse_u64(optarg, &runs) || runs < 1 || runs > MAX_RUNS)
				die("rate: --runs must be 1..%d", MAX_RUNS);
			e.runs = runs;
			break;
		case 'j': json = optarg; break;
		case 'q': n = 1; break;
		default: return 2;
		}
	}
	if (json) {
		e.json = fopen(json, "w");
		if (!e.json)
			die("rate: cannot write '%s': %s", json, strerror(errno));
		fprintf(e.json, "[\n");
	}
	frame_build(&e.f4, 0, mac_b, mac_a, "198.18.0.0", "198.18.0.2");
	e.bare = bench_bare__open_and_load();
	e.wrap = bench_wrap__open_and_load();
	if (!e.bare || !e.wrap)
		die("rate: cannot load the bench programs: %s (run as root)", strerror(errno));
	printf("IPv4, 1 CPU, N sources walked in scattered order, each with its state made before "
	       "timing; xdp-rl's bucket table (%u sources, %u above that), one layer. States: a "
	       "window of limit max (passing) or 1 (dropping) per 1 h on the tick clock, as 'load "
	       "--window 1h' runs it (passing: the fast path), and passing on the precise clock "
	       "(bpf_ktime_get_ns, the clock a rate needs: that row is the clock alone); a rate "
	       "(the general path and the precise clock, always): '--rate 1000000000/1s --burst "
	       "1000' (1 ns a packet: each packet finds its source owing nothing and begins an "
	       "episode, a source below its rate), '--rate 1/4s --burst 4000' (each source's TAT "
	       "taken %d costs ahead before timing: each packet moves a TAT that is ahead, a "
	       "source above its rate, within its burst), '--rate 1/4s "
	       "--burst 1' (dropping: each source's TAT taken %d costs ahead under a larger "
	       "burst, then its first refusal made, before timing: every packet refused on a "
	       "read).\n"
	       "Test runs of %u packets; %d runs, order reversed every other run; median [range] "
	       "after trimming the lowest and highest fifth. (d): ns/pkt over bare XDP_DROP, "
	       "same run; over window: (d) minus the window's (d) of the same verdict (passing: "
	       "the fast path's), same run; x window: (d) over that (d), same run. checks: of the "
	       "packets timed, the share the verdict's counter moved by, and the share that "
	       "opened a window or began an episode.\n\n",
	       DEFAULT_TABLE, BIG_TABLE, RATE_PRIME, RDROP_PRIME, REPEAT, e.runs);
	printf("%-24s %-32s %-22s %-22s %-22s %s\n", "sources", "state", "(d)", "over window (d)",
	       "x window (d)", "checks");
	for (i = 0; i < n; i++)
		rate_cost(&e, &rate_sc[i]);
	if (e.json) {
		fprintf(e.json, "\n]\n");
		fclose(e.json);
	}
	bench_wrap__destroy(e.wrap);
	bench_bare__destroy(e.bare);
	return 0;
}

/*
 * bench_prog keys [--quick] [--runs N] [--json FILE]: what a key beyond the
 * source costs the datapath (key_cost), IPv4 with 1 000, 100 000 and
 * 1 000 000 keys and IPv6 with 1 000 and 1 000 000 (--quick: IPv4 1 000):
 * make bench's part 8.
 */
int cmd_keys(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "json", required_argument, NULL, 'j' },
		{ "quick", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct scen key_sc[] = {
		{ "IPv4 1 000, 1 CPU", 0, 1000, 1, 0, 0 },
		{ "IPv4 100 000, 1 CPU", 0, 100000, 1, 0, 0 },
		{ "IPv4 1 000 000, 1 CPU", 0, 1000000, 1, 0, 0 },
		{ "IPv6 1 000, 1 CPU", 1, 1000, 1, 0, 0 },
		{ "IPv6 1 000 000, 1 CPU", 1, 1000000, 1, 0, 0 },
	};
	static const __u8 mac_a[6] = { 2, 0, 0, 0, 0, 1 }, mac_b[6] = { 2, 0, 0, 0, 0, 2 };
	struct kenv e = { .runs = 11, .json_first = 1 };
	size_t i, n = sizeof(key_sc) / sizeof(key_sc[0]);
	const char *json = NULL;
	__u64 runs;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'r':
			if (parse_u64(optarg, &runs) || runs < 1 || runs > MAX_RUNS)
				die("keys: --runs must be 1..%d", MAX_RUNS);
			e.runs = runs;
			break;
		case 'j': json = optarg; break;
		case 'q': n = 1; break;
		default: return 2;
		}
	}
	if (json) {
		e.json = fopen(json, "w");
		if (!e.json)
			die("keys: cannot write '%s': %s", json, strerror(errno));
		fprintf(e.json, "[\n");
	}
	/* UDP to port 9 (frame_build): the port of every port key. */
	frame_build(&e.f4, 0, mac_b, mac_a, "198.18.0.0", "198.18.0.2");
	frame_build(&e.f6, 1, mac_b, mac_a, "2001:2::", "2001:2::2");
	e.bare = bench_bare__open_and_load();
	e.wrap = bench_wrap__open_and_load();
	if (!e.bare || !e.wrap)
		die("keys: cannot load the bench programs: %s (run as root)", strerror(errno));
	printf("1 CPU, N keys each with an open 1 h window (the steady rows of part 1), walked in "
	       "scattered order; xdp-rl's bucket table (%u sources, %u above that), one layer, no "
	       "rules: passing (limit max) and dropping (limit 1, every window over it before "
	       "timing: refused on a read) both take the fast path (limit_fast) in every kind. "
	       "Frames: UDP to port 9, so a port key is {address, 9} (the UDP header parsed for "
	       "it). --key src and src,dport walk the source address, dst and dst,dport the "
	       "destination, the other address fixed: IPv4 198.18.0.0/15 (240.0.0.0/4 above "
	       "131 072); IPv6 2001:2::/48, /112 keys in every kind (a port key keeps at most "
	       "/112), the walk in bits 64..95. An IPv4 key with a port is wide (16 bytes after "
	       "the slot's header, half its hash in the tag; a 48-byte slot, not 32); IPv6 keys "
	       "are 16 bytes in every kind. 'src again': --key src in a second table, the "
	       "same work as src's: what two tables of one kind differ by.\n"
	       "Test runs of %u packets; %d runs, order reversed every other run; median [range] "
	       "after trimming the lowest and highest fifth. (d): ns/pkt over bare XDP_DROP, "
	       "same run; over src: (d) minus --key src's (d) of the same verdict, same run; "
	       "x src: (d) over that (d), same run. checks: of the packets timed, the share the "
	       "verdict's counter moved by, and the share that opened a window.\n\n",
	       DEFAULT_TABLE, BIG_TABLE, REPEAT, e.runs);
	printf("%-24s %-30s %-22s %-22s %-22s %s\n", "keys", "--key, state", "(d)", "over src (d)",
	       "x src (d)", "checks");
	for (i = 0; i < n; i++)
		key_cost(&e, &key_sc[i]);
	if (e.json) {
		fprintf(e.json, "\n]\n");
		fclose(e.json);
	}
	bench_wrap__destroy(e.wrap);
	bench_bare__destroy(e.bare);
	return 0;
}
