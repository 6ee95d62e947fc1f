// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cmd/capture.c - `xdp-rl capture`: the frames a limiter judged, with their
 * verdicts, to a pcapng file (capture.h has the lease, bpf/capture.h the
 * datapath's side).
 *
 * Under the state lock: refuse if another capture runs (capture_running),
 * else take the lease over (a stale one included): filters, pid, a new
 * gen, counters zeroed, then the lease. Then read the ring, write each
 * record of this gen as a packet block, renew the lease each second, and
 * stop at a bound, a signal or the limiter's unload: the lease to 0, the
 * programs running let finish, the ring read to its end, the counters
 * said on stderr. Killed, the file ends with whole blocks and the lease
 * runs out by itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "caps.h"
#include "capture.h"
#include "cli.h"
#include "commands.h"
#include "limiter.h"
#include "lock.h"
#include "log.h"
#include "options.h"
#include "pcapng.h"
#include "proc.h"

enum {
	OPT_WRITE = 256,
	OPT_DROPPED,
	OPT_BANNED,
	OPT_DENIED,
	OPT_FULL,
	OPT_MALFORMED,
	OPT_PASSED,
	OPT_SRC,
	OPT_SAMPLE,
	OPT_COUNT,
	OPT_MAX_BYTES,
	OPT_DURATION,
	OPT_SNAPLEN,
};

/* Why a capture stopped. */
enum { RUNNING, STOP_SIGNAL, STOP_COUNT, STOP_BYTES, STOP_DURATION, STOP_PIPE, STOP_FAIL };

static volatile sig_atomic_t signalled;

static void on_signal(int sig)
{
	(void)sig;
	signalled = 1;
}

struct cap_run {
	struct limiter l;
	struct xdp_rl_capture *cap; /* mapped */
	struct pcapng w;
	__u32 gen;
	__s64 mono_to_unix; /* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
	__u64 packets, max_packets, max_bytes;
	__u64 stale, past_bounds; /* records of another capture; past a bound, not written */
	int stop;
};

static const char *const capture_forms[] = {
	"IFACE [--write FILE|-] [--dropped] [--banned] [--denied] [--full]\n"
	"[--malformed] [--passed] [--src PREFIX] [--sample N] [--count PACKETS]\n"
	"[--max-bytes N] [--duration DUR] [--snaplen N]",
	NULL,
};

static const struct opt_spec capture_opts[] = {
	{ "write", OPT_WRITE, "FILE",
	  "write the pcapng file FILE, or standard output with '-' (also -w;\n"
	  "the default when standard output is not a terminal)" },
	{ "dropped", OPT_DROPPED, NULL,
	  "packets over the limit (dropped, or passed by a dry run)" },
	{ "banned", OPT_BANNED, NULL, "packets of a key under a ban, dropped (--ban)" },
	{ "denied", OPT_DENIED, NULL, "packets denied by a rule or the deny list" },
	{ "full", OPT_FULL, NULL, "new sources refused a slot and dropped (--on-table-full drop)" },
	{ "malformed", OPT_MALFORMED, NULL, "malformed packets (bad Ethernet, VLAN or IP header)" },
	{ "passed", OPT_PASSED, NULL,
	  "packets passed: within the limit, allowed, unselected or not IP\n"
	  "(with none of these six, every packet)" },
	{ "src", OPT_SRC, "PREFIX",
	  "only packets from PREFIX (an IPv4 or IPv6 prefix or address)" },
	{ "sample", OPT_SAMPLE, "N", "one packet in N per CPU, of those the filters take (1)" },
	{ "count", OPT_COUNT, "PACKETS", "stop after PACKETS packets (also -c)" },
	{ "max-bytes", OPT_MAX_BYTES, "N", "stop before the file would pass N bytes" },
	{ "duration", OPT_DURATION, "DUR", "stop after DUR (e.g. 30s, 5m)" },
	{ "snaplen", OPT_SNAPLEN, "N",
	  "write at most N bytes of each frame (also -s; 0 or none: the whole\n"
	  "frame, up to 32736)" },
	{ NULL },
};

static int cmd_capture(int argc, char **argv);

const struct cmd_spec cmd_capture_spec = {
	.name = "capture",
	.run = cmd_capture,
	.forms = capture_forms,
	.about = "Write the packets the limiter on IFACE judges to a pcapng file, each with\n"
		 "its verdict and why in the packet's comment (tshark: frame.comment), until\n"
		 "interrupted or a bound is reached; tcpdump and tshark read it ('-w - |\n"
		 "tcpdump -r -'). One capture per limiter at a time; at the end, the packets\n"
		 "captured, lost (the kernel's ring full), sampled out and filtered out go\n"
		 "to standard error.\n",
	.opts = capture_opts,
	.notes = "The comment of each packet:\n"
		 "  xdp-rl verdict=REASON action=pass|drop [dry-run] cpu=N\n"
		 "REASON is dropped, banned, denied, full, malformed, passed, allowed,\n"
		 "unselected or not-ip (see xdp-rl(8)).\n",
};

/* -w, -c and -s as tcpdump has them: the long options' short forms. */
static void short_forms(int argc, char **argv)
{
	static char w[] = "--write", c[] = "--count", s[] = "--snaplen";
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-w"))
			argv[i] = w;
		else if (!strcmp(argv[i], "-c"))
			argv[i] = c;
		else if (!strcmp(argv[i], "-s"))
			argv[i] = s;
	}
}

static __s64 clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (__s64)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A record of this capture: written as a packet block, unless past a bound. */
static void write_record(struct cap_run *r, const struct xdp_rl_cap_meta *m)
{
	char comment[128];
	size_t need;

	/* What was captured before a signal or the duration stopped it is written still. */
	if (r->stop && r->stop != STOP_SIGNAL && r->stop != STOP_DURATION) {
		r->past_bounds++;
		return;
	}
	capture_comment(m, comment, sizeof(comment));
	need = pcapng_packet_size(m->cap_len, comment);
	if (r->max_bytes && r->w.written + r->w.len + need > r->max_bytes) {
		r->stop = STOP_BYTES;
		r->past_bounds++;
		return;
	}
	if (pcapng_packet(&r->w, (__u64)((__s64)m->ts_ns + r->mono_to_unix), m + 1, m->cap_len,
			  m->pkt_len, comment)) {
		log_err("cannot capture on '%s': %m", r->l.ifname);
		r->stop = STOP_FAIL;
		return;
	}
	r->packets++;
	if (r->max_packets && r->packets >= r->max_packets)
		r->stop = STOP_COUNT;
	/* Whole blocks out often: a kill loses little, and never half a block. */
	if (r->w.len >= (1U << 20) && pcapng_flush(&r->w))
		r->stop = errno == EPIPE ? STOP_PIPE : STOP_FAIL;
}

/* A record of the ring: written, if it is this capture's. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct cap_run *r = ctx;
	const struct xdp_rl_cap_meta *m = data;

	if (size < sizeof(*m) || m->gen != r->gen || m->cap_len > size - sizeof(*m)) {
		r->stale++;
		return 0;
	}
	write_record(r, m);
	return 0;
}

/* A CPU's last frame, finished here (capture_pending). */
static void on_pending(void *ctx, const struct xdp_rl_cap_record *rec)
{
	write_record(ctx, &rec->meta);
}

/* Write what was added; a reader gone (EPIPE) is a stop, another error a failure. */
static void flush(struct cap_run *r, const char *out)
{
	if (!pcapng_flush(&r->w))
		return;
	if (errno == EPIPE) {
		r->stop = r->stop ? r->stop : STOP_PIPE;
		return;
	}
	log_err("cannot write the capture to '%s': %m", out);
	r->stop = STOP_FAIL;
}

/*
 * Take the capture map over for this capture, under the state lock: 0, or
 * -1 after saying why (another capture runs).
 */
static int lease_take(struct cap_run *r, const struct xdp_rl_capture *want)
{
	struct xdp_rl_capture *c = r->cap;
	__u32 gen;

	if (capture_running(c)) {
		log_err("cannot capture on '%s': another capture (pid %llu) runs on it (stop it "
			"first: kill %llu)",
			r->l.ifname, (unsigned long long)c->pid, (unsigned long long)c->pid);
		return -1;
	}
	/* A lease whose process is gone, or that ran out: this capture's now. */
	__atomic_store_n(&c->until_ns, 0, __ATOMIC_RELEASE);
	gen = c->gen + 1 ? c->gen + 1 : 1;
	c->reasons = want->reasons;
	c->sample = want->sample;
	c->snaplen = want->snaplen;
	c->src_family = want->src_family;
	c->src_len = want->src_len;
	memcpy(c->src_addr, want->src_addr, sizeof(c->src_addr));
	memcpy(c->src_mask, want->src_mask, sizeof(c->src_mask));
	c->pid = (__u64)getpid();
	c->pid_start = proc_start_ticks(c->pid);
	c->started_unix = (__u64)time(NULL);
	if (capture_counters_zero(&r->l)) {
		log_err("cannot capture on '%s': cannot reset its capture counters: %m",
			r->l.ifname);
		c->pid = 0;
		return -1;
	}
	__atomic_store_n(&c->gen, gen, __ATOMIC_RELEASE);
	r->gen = gen;
	__atomic_store_n(&c->until_ns, capture_now() + CAPTURE_LEASE_NS, __ATOMIC_RELEASE);
	return 0;
}

/* Whether the lease is still this capture's (no other took it over after it ran out). */
static int lease_ours(const struct cap_run *r)
{
	return __atomic_load_n(&r->cap->gen, __ATOMIC_ACQUIRE) == r->gen &&
	       r->cap->pid == (__u64)getpid();
}

static const char *stop_why(int stop)
{
	switch (stop) {
	case STOP_COUNT: return "the packet count reached";
	case STOP_BYTES: return "the byte bound reached";
	case STOP_DURATION: return "the duration reached";
	case STOP_PIPE: return "the reader closed the pipe";
	case STOP_FAIL: return "failed";
	default: return "interrupted";
	}
}

/* The counters (the datapath's, and @more, those of the frames finished here), on stderr. */
static void summary(struct cap_run *r, const struct xdp_rl_cap_cpu *more)
{
	struct xdp_rl_cap_cpu s;

	if (capture_counters(&r->l, &s)) {
		fprintf(stderr,
			"xdp-rl: capture: %llu packets captured (the counters cannot be "
			"read: %s)\n",
			(unsigned long long)r->packets, strerror(errno));
		return;
	}
	s.checked += more->checked;
	s.matched += more->matched;
	s.sent += more->sent;
	fprintf(stderr,
		"xdp-rl: capture: %s: %llu packets captured, %llu lost by the kernel's buffer, "
		"%llu sampled out, %llu filtered out (of %llu judged), %llu past the bounds not "
		"written; %llu bytes written\n",
		stop_why(r->stop), (unsigned long long)r->packets, (unsigned long long)s.failed,
		(unsigned long long)(s.matched - s.sent - s.failed),
		(unsigned long long)(s.checked - s.matched), (unsigned long long)s.checked,
		(unsigned long long)r->past_bounds, (unsigned long long)r->w.written);
}

static int cmd_capture(int argc, char **argv)
{
	struct xdp_rl_capture want = { .reasons = 0,
				       .sample = 1,
				       .snaplen = XDP_RL_CAP_SNAPLEN_MAX };
	struct sigaction sa = { .sa_handler = on_signal };
	const char *ifname, *why, *out = NULL;
	struct ring_buffer *rb = NULL;
	struct xdp_rl_cap_cpu more = {};
	__u64 v, duration = 0, deadline = 0, renewed, now;
	struct cap_run r;
	char desc[192];
	struct ip_addr a;
	unsigned int len;
	int opt, fd = -1, lock, ret = EXIT_FAIL, n, i;

	memset(&r, 0, sizeof(r));
	for (i = 0; i < PIN_MAX; i++)
		r.l.fd[i] = -1;
	short_forms(argc, argv);
	while ((opt = cmd_getopt(argc, argv, &cmd_capture_spec)) != -1) {
		switch (opt) {
		case OPT_WRITE: out = optarg; break;
		case OPT_DROPPED: want.reasons |= 1U << XDP_RL_CAP_DROPPED; break;
		case OPT_BANNED: want.reasons |= 1U << XDP_RL_CAP_BANNED; break;
		case OPT_DENIED: want.reasons |= 1U << XDP_RL_CAP_DENIED; break;
		case OPT_FULL: want.reasons |= 1U << XDP_RL_CAP_FULL; break;
		case OPT_MALFORMED: want.reasons |= 1U << XDP_RL_CAP_MALFORMED; break;
		case OPT_PASSED:
			want.reasons |= 1U << XDP_RL_CAP_PASSED | 1U << XDP_RL_CAP_ALLOWED |
					1U << XDP_RL_CAP_UNSELECTED | 1U << XDP_RL_CAP_NOT_IP;
			break;
		case OPT_SRC:
			why = parse_cidr(optarg, &a, &len);
			if (why)
				return usage_err("capture", "capture: invalid --src '%s': %s",
						 optarg, why);
			want.src_family = a.family == AF_INET6 ? 6 : 4;
			want.src_len = len;
			memcpy(want.src_addr, a.bytes, sizeof(want.src_addr));
			for (i = 0; i < 4; i++) {
				unsigned int bits = len > 32U * i ? len - 32U * i : 0;

				want.src_mask[i] = bits >= 32 ? ~0U :
						   bits	      ? htonl(~0U << (32 - bits)) :
								0;
			}
			break;
		case OPT_SAMPLE:
			why = parse_u64(optarg, 1, 1000000000, &v);
			if (why)
				return usage_err("capture", "capture: invalid --sample '%s': %s",
						 optarg, why);
			want.sample = (__u32)v;
			break;
		case OPT_COUNT:
			why = parse_u64(optarg, 1, ~0ULL, &r.max_packets);
			if (why)
				return usage_err("capture", "capture: invalid --count '%s': %s",
						 optarg, why);
			break;
		case OPT_MAX_BYTES:
			why = parse_u64(optarg, 1, ~0ULL, &r.max_bytes);
			if (why)
				return usage_err("capture", "capture: invalid --max-bytes '%s': %s",
						 optarg, why);
			break;
		case OPT_DURATION:
			why = parse_duration(optarg, 1000000ULL, 366ULL * 86400 * 1000000000ULL,
					     &duration);
			if (why)
				return usage_err("capture", "capture: invalid --duration '%s': %s",
						 optarg, why);
			break;
		case OPT_SNAPLEN:
			why = parse_u64(optarg, 0, XDP_RL_CAP_SNAPLEN_MAX, &v);
			if (why)
				return usage_err("capture", "capture: invalid --snaplen '%s': %s",
						 optarg, why);
			want.snaplen = v ? (__u32)v : XDP_RL_CAP_SNAPLEN_MAX;
			break;
		default: return EXIT_USAGE;
		}
	}
	if (cmd_positional(argc, argv, "capture", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (cmd_no_more(argc, argv, "capture", 1))
		return EXIT_USAGE;
	if (!want.reasons)
		want.reasons = (1U << XDP_RL_CAP_REASONS) - 1;
	if (!out) {
		if (isatty(STDOUT_FILENO))
			return usage_err("capture",
					 "capture: give --write FILE, or --write - to write the "
					 "capture to standard output (not a terminal)");
		out = "-";
	}
	if (!strcmp(out, "-") && isatty(STDOUT_FILENO))
		return usage_err("capture", "capture: standard output is a terminal: give "
					    "--write FILE, or pipe it (| tcpdump -r -)");

	if (cmd_prepare(NEED_BPF, "cannot capture"))
		return EXIT_FAIL;
	if (limiter_open(ifname, &r.l, "cannot capture on"))
		return EXIT_FAIL;
	r.cap = capture_map(&r.l, "cannot capture on");
	if (!r.cap)
		goto out;
	if (!strcmp(out, "-")) {
		fd = STDOUT_FILENO;
	} else {
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0) {
			log_err("cannot capture on '%s': cannot open '%s': %m", ifname, out);
			goto out;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (pcapng_begin(&r.w, fd, "xdp-rl " XDP_RL_VERSION, ifname, want.snaplen) ||
	    pcapng_flush(&r.w)) {
		log_err("cannot capture on '%s': cannot write '%s': %m", ifname, out);
		goto out;
	}
	rb = ring_buffer__new(r.l.fd[PIN_CAP_RING], on_record, &r, NULL);
	if (!rb) {
		log_err("cannot capture on '%s': cannot read its capture ring: %m", ifname);
		goto out;
	}
	r.mono_to_unix = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);

	lock = lock_take(0);
	if (lock < 0)
		goto out;
	if (!limiter_pinned(&r.l)) {
		log_err("cannot capture on '%s': xdp-rl was unloaded from it", ifname);
		lock_release(lock);
		goto out;
	}
	n = lease_take(&r, &want);
	lock_release(lock);
	if (n)
		goto out;
	/* Signals cut the wait short (no SA_RESTART). */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	capture_describe(r.cap, desc, sizeof(desc));
	fprintf(stderr, "xdp-rl: capturing on '%s': %s, to %s\n", ifname, desc,
		strcmp(out, "-") ? out : "standard output");
	renewed = capture_now();
	if (duration)
		deadline = renewed + duration;

	while (!r.stop) {
		n = ring_buffer__poll(rb, 100);
		if (n < 0 && n != -EINTR) {
			errno = -n;
			log_err("cannot capture on '%s': cannot read its capture ring: %m", ifname);
			r.stop = STOP_FAIL;
			break;
		}
		flush(&r, out);
		if (signalled && !r.stop)
			r.stop = STOP_SIGNAL;
		now = capture_now();
		if (deadline && now >= deadline && !r.stop)
			r.stop = STOP_DURATION;
		if (r.stop || now - renewed < CAPTURE_RENEW_NS)
			continue;
		if (!limiter_pinned(&r.l)) {
			log_err("capture on '%s' stopped: xdp-rl was unloaded from it", ifname);
			r.stop = STOP_FAIL;
			break;
		}
		if (!lease_ours(&r)) {
			log_err("capture on '%s' stopped: another capture took its lease over "
				"(this one was stopped past its lease)",
				ifname);
			r.stop = STOP_FAIL;
			break;
		}
		__atomic_store_n(&r.cap->until_ns, now + CAPTURE_LEASE_NS, __ATOMIC_RELEASE);
		renewed = now;
	}

	if (lease_ours(&r)) {
		/*
		 * The datapath stops; what it was sending is in the ring once it
		 * returns. Each CPU's last frame is judged here, and written after.
		 */
		__atomic_store_n(&r.cap->until_ns, 0, __ATOMIC_RELEASE);
		sync_programs();
		ring_buffer__consume(rb);
		if (limiter_read_config(&r.l) ||
		    capture_pending(&r.l, r.cap, &more, on_pending, &r))
			log_warn("capture on '%s': the last packet of each CPU is not written: "
				 "%m",
				 ifname);
		flush(&r, out);
		summary(&r, &more);
		r.cap->pid = 0;
	} else {
		flush(&r, out);
	}
	ret = r.stop == STOP_FAIL ? EXIT_FAIL : EXIT_DONE;
out:
	ring_buffer__free(rb);
	if (fd >= 0 && fd != STDOUT_FILENO && close(fd) && ret == EXIT_DONE) {
		log_err("cannot write the capture to '%s': %m", out);
		ret = EXIT_FAIL;
	}
	pcapng_free(&r.w);
	capture_unmap(r.cap);
	limiter_close(&r.l);
	return ret;
}
