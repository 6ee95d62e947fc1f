// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bench_e2e.c - the end-to-end part: the in-kernel load generator and a bare
 * XDP program to attach to the receiving veth.
 *
 * The generator (gen.bpf.c) runs under BPF_PROG_TEST_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES from inside the sender namespace, a thread
 * pinned to each CPU asked for (--cpu 1, or 0,1): each frame is redirected
 * into the sender's veth and lands in the receiver's veth ring, in the
 * queue of the CPU that sent it (veth picks the peer's RX queue by CPU), so
 * with two threads the receiver's XDP runs on both CPUs at once. At the end of each batch of frames the kernel
 * re-enables bottom halves, and the receiver's NAPI poll (its XDP program,
 * the skb, netfilter hooks, the stack) runs right there, in softirq context
 * on the same CPU, charged to this thread (this kernel has no
 * IRQ_TIME_ACCOUNTING); if softirq work overflows, ksoftirqd takes it.
 *
 * So the CPU the flood costs is measured as: the threads' CPU time
 * (CLOCK_THREAD_CPUTIME_ID, from the scheduler's runtime, which excludes
 * steal time) plus the runtime of every ksoftirqd thread, over the frames
 * generated. /proc/stat busy time (user + nice + system + irq + softirq;
 * steal apart) of the generators' CPUs and of all CPUs, and the kernel's own
 * test_run duration, are recorded as cross-checks: the first should match
 * (nothing else of ours runs there); the second also holds whatever else
 * the shared machine runs.
 */
#include <errno.h>
#include <dirent.h>
#include <getopt.h>
#include <net/if.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench_user.h"
#include "gen.skel.h"
#include "bare.skel.h"
#include "plain.skel.h"

#define MAX_KSOFTIRQD BENCH_MAX_CPUS
/*
 * Frames per test run call: the first call sends GEN_CHUNK_MIN, later ones
 * about GEN_CALL_MS worth at the rate seen so far. Each call sets up and
 * tears down a page pool (which sleeps), so calls must not be too short.
 */
#define GEN_CHUNK_MIN (1U << 16)
#define GEN_CHUNK_MAX (1U << 23)
#define GEN_CALL_MS   100
#define GEN_MAX_CALLS 10000 /* a bound on the loop besides the time */

struct cpu_times {
	__u64 busy, steal;	   /* USER_HZ ticks, all CPUs */
	__u64 busy_own, steal_own; /* the generators' CPUs */
	__u64 softirqd_ns;	   /* runtime of all ksoftirqd threads */
};

static int softirqd_pids[MAX_KSOFTIRQD], n_softirqd;

static void find_softirqd(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	char path[300], comm[64];
	FILE *f;

	if (!d)
		die("cannot list /proc: %s", strerror(errno));
	while ((e = readdir(d)) && n_softirqd < MAX_KSOFTIRQD) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, "ksoftirqd/", 10))
			softirqd_pids[n_softirqd++] = atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
}

static void cpu_times(struct cpu_times *t, __u64 own)
{
	unsigned long long v[8];
	char path[64], line[512], name[16];
	FILE *f;
	int i;

	memset(t, 0, sizeof(*t));
	f = fopen("/proc/stat", "r");
	while (f && fgets(line, sizeof(line), f)) {
		/* cpuN user nice system idle iowait irq softirq steal ... */
		if (sscanf(line, "%15s %llu %llu %llu %llu %llu %llu %llu %llu", name, &v[0], &v[1],
			   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9 ||
		    strncmp(name, "cpu", 3))
			continue;
		if (!strcmp(name, "cpu")) {
			t->busy = v[0] + v[1] + v[2] + v[5] + v[6];
			t->steal = v[7];
		} else if (atoi(name + 3) < BENCH_MAX_CPUS && (own >> atoi(name + 3) & 1)) {
			t->busy_own += v[0] + v[1] + v[2] + v[5] + v[6];
			t->steal_own += v[7];
		}
	}
	if (f)
		fclose(f);
	for (i = 0; i < n_softirqd; i++) {
		unsigned long long run = 0;

		snprintf(path, sizeof(path), "/proc/%d/schedstat", softirqd_pids[i]);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &run) == 1)
			t->softirqd_ns += run;
		fclose(f);
	}
}

static int if_mac(const char *dev, __u8 mac[6])
{
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	r = ioctl(fd, SIOCGIFHWADDR, &ifr) ? -errno : 0;
	close(fd);
	if (!r)
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	return r;
}

/*
 * Ask for the CPU ahead of the shared machine's other tasks: a session (and
 * so a scheduler autogroup) of its own, niced to -20, since nice within
 * one autogroup does not count against other sessions' tasks. Two
 * generators load two CPUs at once only while both run. Best effort: the
 * JSON line says how much of the time each spent in its test runs.
 */
static void boost(void)
{
	FILE *f;

	if (setsid() < 0)
		return;
	f = fopen("/proc/self/autogroup", "w");
	if (f) {
		fputs("-20", f);
		fclose(f);
	}
}

/* One generator thread: its CPU, and what it did. */
struct gen_thread {
	int cpu, fd;
	const struct frame *f;
	__u64 ms;
	pthread_barrier_t *bar;
	__u64 frames, kern_ns, cpu_ns, wall_ns, calls;
	int err;
};

static void *gen_thread_fn(void *arg)
{
	struct gen_thread *g = arg;
	__u64 t0, t1, c0, chunk = GEN_CHUNK_MIN;

	if (pin_cpu(g->cpu)) {
		g->err = EINVAL;
		pthread_barrier_wait(g->bar);
		return NULL;
	}
	pthread_barrier_wait(g->bar);
	c0 = thread_cpu_ns();
	t0 = mono_ns();
	do {
		LIBBPF_OPTS(bpf_test_run_opts, ro, .data_in = g->f->b, .data_size_in = g->f->len,
			    .repeat = chunk, .flags = BPF_F_TEST_XDP_LIVE_FRAMES);
		__u64 left;

		if (bpf_prog_test_run_opts(g->fd, &ro)) {
			g->err = errno;
			break;
		}
		g->frames += chunk;
		g->kern_ns += (__u64)ro.duration * chunk;
		t1 = mono_ns();
		/* Next: GEN_CALL_MS at the rate so far, and not past the end. */
		left = g->ms * 1000000ULL > t1 - t0 ? g->ms * 1000000ULL - (t1 - t0) : 0;
		if (left > GEN_CALL_MS * 1000000ULL)
			left = GEN_CALL_MS * 1000000ULL;
		chunk = (double)g->frames / (t1 - t0) * left;
		chunk = chunk < GEN_CHUNK_MIN ? GEN_CHUNK_MIN :
			chunk > GEN_CHUNK_MAX ? GEN_CHUNK_MAX :
						chunk;
	} while (t1 - t0 < g->ms * 1000000ULL && ++g->calls < GEN_MAX_CALLS);
	g->cpu_ns = thread_cpu_ns() - c0;
	g->wall_ns = mono_ns() - t0;
	return NULL;
}

/* "1" or "0,1": the CPUs to run a generator thread on, as a bit mask. */
static __u64 parse_cpus(const char *s)
{
	__u64 mask = 0, c;
	char buf[64], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (parse_u64(tok, &c) || c >= BENCH_MAX_CPUS)
			die("gen: bad --cpu '%s'", s);
		mask |= 1ULL << c;
	}
	if (!mask)
		die("gen: bad --cpu '%s'", s);
	return mask;
}

int cmd_gen(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "netns", required_argument, NULL, 'n' },
		{ "dev", required_argument, NULL, 'd' },
		{ "dst-mac", required_argument, NULL, 'm' },
		{ "dst", required_argument, NULL, 'D' },
		{ "sources", required_argument, NULL, 's' },
		{ "base", required_argument, NULL, 'b' },
		{ "seconds", required_argument, NULL, 't' },
		{ "cpu", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	const char *netns = NULL, *dev = NULL, *dst = "198.18.0.2", *base = "198.19.0.0";
	__u64 sources = 4096, cpus = 1ULL << 1, ms = 1000, hi;
	__u64 frames = 0, kern_ns = 0, cpu_ns = 0, wall_ns = 0;
	struct gen_thread g[BENCH_MAX_CPUS];
	pthread_t th[BENCH_MAX_CPUS];
	pthread_barrier_t bar;
	struct cpu_times s0, s1;
	__u8 dst_mac[6], src_mac[6];
	int have_mac = 0, o, r, ifindex, n = 0, i, c;
	struct bench_gen *skel;
	struct in_addr b;
	struct frame f;
	char *end;
	double secs;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'n': netns = optarg; break;
		case 'd': dev = optarg; break;
		case 'D': dst = optarg; break;
		case 'b': base = optarg; break;
		case 'm':
			if (parse_mac(optarg, dst_mac))
				die("gen: bad --dst-mac '%s'", optarg);
			have_mac = 1;
			break;
		case 's':
			if (parse_u64(optarg, &sources) || !sources || sources > (1 << 20))
				die("gen: --sources must be 1..1048576");
			break;
		case 'c': cpus = parse_cpus(optarg); break;
		case 't':
			secs = strtod(optarg, &end);
			if (*end || !(secs > 0 && secs <= 30))
				die("gen: --seconds must be in (0, 30]");
			ms = secs * 1000;
			break;
		default: return 2;
		}
	}
	if (!netns || !dev || !have_mac)
		die("gen: need --netns, --dev and --dst-mac");
	if (inet_pton(AF_INET, base, &b) != 1)
		die("gen: bad --base '%s'", base);
	/* Test traffic stays in 198.18.0.0/15. */
	hi = ntohl(b.s_addr) + sources - 1;
	if ((ntohl(b.s_addr) & 0xfffe0000) != 0xc6120000 || (hi & 0xfffe0000) != 0xc6120000)
		die("gen: sources %s + %llu leave 198.18.0.0/15", base,
		    (unsigned long long)sources);

	find_softirqd();
	boost();
	/* The threads made after this are in the namespace too. */
	r = netns_enter(netns);
	if (r)
		die("gen: cannot enter netns '%s': %s", netns, strerror(-r));
	ifindex = if_nametoindex(dev);
	if (!ifindex || if_mac(dev, src_mac))
		die("gen: no interface '%s' in netns '%s'", dev, netns);

	skel = bench_gen__open();
	if (!skel)
		die("gen: cannot open the generator: %s", strerror(errno));
	skel->rodata->tx_ifindex = ifindex;
	skel->rodata->nsrc = sources;
	skel->rodata->base = ntohl(b.s_addr);
	if (bench_gen__load(skel))
		die("gen: cannot load the generator: %s", strerror(errno));
	frame_build(&f, 0, dst_mac, src_mac, base, dst);

	for (c = 0; c < BENCH_MAX_CPUS; c++)
		if (cpus & (1ULL << c))
			g[n++] = (struct gen_thread){ .cpu = c,
						      .fd = bpf_program__fd(skel->progs.gen),
						      .f = &f,
						      .ms = ms,
						      .bar = &bar };
	pthread_barrier_init(&bar, NULL, n + 1);
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, gen_thread_fn, &g[i]))
			die("gen: pthread_create failed");
	cpu_times(&s0, cpus);
	pthread_barrier_wait(&bar);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	cpu_times(&s1, cpus);
	pthread_barrier_destroy(&bar);
	for (i = 0; i < n; i++) {
		if (g[i].err)
			die("gen: CPU %d: test run with live frames: %s", g[i].cpu,
			    strerror(g[i].err));
		frames += g[i].frames;
		kern_ns += g[i].kern_ns;
		cpu_ns += g[i].cpu_ns;
		if (g[i].wall_ns > wall_ns)
			wall_ns = g[i].wall_ns;
	}

	printf("{\"frames\": %llu, \"wall_ns\": %llu, \"thread_cpu_ns\": %llu, "
	       "\"softirqd_ns\": %llu, \"stat_busy_ticks\": %llu, \"stat_steal_ticks\": %llu, "
	       "\"stat_busy_own_ticks\": %llu, \"stat_steal_own_ticks\": %llu, "
	       "\"tick_hz\": %ld, \"kernel_ns\": %llu, \"sources\": %llu, \"cpu\": %d, "
	       "\"threads\": [",
	       (unsigned long long)frames, (unsigned long long)wall_ns, (unsigned long long)cpu_ns,
	       (unsigned long long)(s1.softirqd_ns - s0.softirqd_ns),
	       (unsigned long long)(s1.busy - s0.busy), (unsigned long long)(s1.steal - s0.steal),
	       (unsigned long long)(s1.busy_own - s0.busy_own),
	       (unsigned long long)(s1.steal_own - s0.steal_own), sysconf(_SC_CLK_TCK),
	       (unsigned long long)kern_ns, (unsigned long long)sources, g[0].cpu);
	for (i = 0; i < n; i++)
		printf("%s{\"cpu\": %d, \"frames\": %llu, \"thread_cpu_ns\": %llu, "
		       "\"wall_ns\": %llu, \"kernel_ns\": %llu}",
		       i ? ", " : "", g[i].cpu, (unsigned long long)g[i].frames,
		       (unsigned long long)g[i].cpu_ns, (unsigned long long)g[i].wall_ns,
		       (unsigned long long)g[i].kern_ns);
	printf("]}\n");
	bench_gen__destroy(skel);
	return 0;
}

/*
 * The plain reference limiter (plain.bpf.c: the kernel's LRU hash, a window
 * of 1 s) with @limit packets per source and @entries IPv4 sources,
 * attached to @ifindex: the floor of --table lru end to end.
 */
static void attach_plain(int ifindex, const char *dev, const char *limit, const char *entries)
{
	struct bench_plain *skel = bench_plain__open();
	char *end;
	unsigned long long l = strtoull(limit, &end, 10), n;
	int r;

	if (!skel || *end || !*limit)
		die("xdp: plain LIMIT ENTRIES: cannot open the plain reference, or LIMIT '%s' is not a number",
		    limit);
	n = strtoull(entries, &end, 10);
	if (*end || !n || n > (1ULL << 24))
		die("xdp: plain LIMIT ENTRIES: ENTRIES '%s' is not 1 .. 16777216", entries);
	skel->rodata->limit = l;
	skel->rodata->window_ns = 1000000000ULL;
	if (bpf_map__set_max_entries(skel->maps.plain4, (__u32)n) ||
	    bpf_map__set_max_entries(skel->maps.plain6, 1024) || bench_plain__load(skel))
		die("xdp: cannot load the plain reference: %s", strerror(errno));
	r = bpf_xdp_attach(ifindex, bpf_program__fd(skel->progs.plain), XDP_FLAGS_DRV_MODE, NULL);
	if (r)
		die("xdp: cannot attach the plain reference to '%s': %s", dev, strerror(-r));
	bench_plain__destroy(skel);
}

/*
 * The floor of a per-source limiter (bare.bpf.c bare_line): one 64-byte line
 * per source in an array of @entries (a power of two), @limit packets per
 * source, attached to @ifindex.
 */
static void attach_line(int ifindex, const char *dev, const char *limit, const char *entries)
{
	struct bench_bare *skel = bench_bare__open();
	__u64 l, n;
	int r;

	if (!skel || parse_u64(limit, &l))
		die("xdp: line LIMIT ENTRIES: cannot open the bare programs, or LIMIT '%s' is not a number",
		    limit);
	if (parse_u64(entries, &n) || !n || n > (1ULL << 24) || (n & (n - 1)))
		die("xdp: line LIMIT ENTRIES: ENTRIES '%s' is not a power of two up to 16777216",
		    entries);
	skel->rodata->line_limit = l;
	skel->rodata->line_shift = 32 - __builtin_ctzll(n);
	if (bpf_map__set_max_entries(skel->maps.lines, (__u32)n) || bench_bare__load(skel))
		die("xdp: cannot load the one-line-per-source floor: %s", strerror(errno));
	r = bpf_xdp_attach(ifindex, bpf_program__fd(skel->progs.bare_line), XDP_FLAGS_DRV_MODE,
			   NULL);
	if (r)
		die("xdp: cannot attach the one-line-per-source floor to '%s': %s", dev,
		    strerror(-r));
	bench_bare__destroy(skel);
}

int cmd_xdp(int argc, char **argv)
{
	const char *netns, *dev, *what;
	struct bench_bare *skel;
	int ifindex, r, fd;

	if ((argc != 6 &&
	     !(argc == 8 && (!strcmp(argv[5], "plain") || !strcmp(argv[5], "line")))) ||
	    strcmp(argv[1], "--netns") || strcmp(argv[3], "--dev"))
		die("usage: bench_prog xdp --netns NS --dev IF drop|pass|off|plain LIMIT ENTRIES|line LIMIT ENTRIES");
	netns = argv[2];
	dev = argv[4];
	what = argv[5];
	r = netns_enter(netns);
	if (r)
		die("xdp: cannot enter netns '%s': %s", netns, strerror(-r));
	ifindex = if_nametoindex(dev);
	if (!ifindex)
		die("xdp: no interface '%s' in netns '%s'", dev, netns);
	if (!strcmp(what, "off")) {
		r = bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);
		if (r)
			die("xdp: cannot detach from '%s': %s", dev, strerror(-r));
		return 0;
	}
	if (!strcmp(what, "plain")) {
		attach_plain(ifindex, dev, argv[6], argv[7]);
		return 0;
	}
	if (!strcmp(what, "line")) {
		attach_line(ifindex, dev, argv[6], argv[7]);
		return 0;
	}
	if (strcmp(what, "drop") && strcmp(what, "pass"))
		die("xdp: drop, pass, plain, line or off, not '%s'", what);
	skel = bench_bare__open_and_load();
	if (!skel)
		die("xdp: cannot load the bare programs: %s", strerror(errno));
	fd = bpf_program__fd(!strcmp(what, "drop") ? skel->progs.bare_drop : skel->progs.bare_pass);
	/* Attached through netlink: it stays after we exit, until 'off'. */
	r = bpf_xdp_attach(ifindex, fd, XDP_FLAGS_DRV_MODE, NULL);
	if (r)
		die("xdp: cannot attach to '%s': %s", dev, strerror(-r));
	bench_bare__destroy(skel);
	return 0;
}
