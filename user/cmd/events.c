// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cmd/events.c - `xdp-rl events`: each window that goes over its limit, as
 * it does (bpf/events.h), one record per key per window per layer, while
 * this command holds the limiter's lease (events.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "events.h"
#include "json.h"
#include "limiter.h"
#include "lock.h"
#include "log.h"
#include "options.h"
#include "rules.h"
#include "stats.h"
#include "vec.h"

enum { OPT_JSON = 256, OPT_SYSLOG, OPT_RATE, OPT_COUNT, OPT_DURATION };

/* Records shown at most, by default: 1000 per second. */
#define RATE_DEFAULT	    1000
#define RATE_WINDOW_DEFAULT 1000000000ULL

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct rule_name {
	__u32 id;
	char prefix[INET6_ADDRSTRLEN + 8];
};

struct reader {
	struct limiter *l;
	int as_json, to_syslog;
	struct xdp_rl_layer rate; /* records shown at most per window */
	__u64 max_count;	  /* stop after this many shown; 0: no end */
	__u64 shown, suppressed, suppressed_told;
	__u64 rate_start, rate_shown; /* the rate's window (monotonic ns) */
	__u64 started_ns;	      /* the lease's start: records before are a former reader's */
	__s64 coarse_to_real_ns;
	__u64 lost_base;
	struct rule_name *rules;
	size_t nrules, cap;
	__u64 rules_read_ns;
};

static int rule_add(const struct rule_spec *r, void *ctx)
{
	struct reader *rd = ctx;

	if (vec_room(rd->rules, rd->nrules, rd->cap, 1, 16))
		return 1;
	rd->rules[rd->nrules].id = r->rule.id;
	fmt_prefix(&r->addr, r->prefix, rd->rules[rd->nrules].prefix,
		   sizeof(rd->rules[rd->nrules].prefix));
	rd->nrules++;
	return 0;
}

/* The prefix of rule @id, read again (at most once a second) if it is not known. */
static const char *rule_prefix(struct reader *rd, __u32 id)
{
	size_t i;
	int again;

	for (again = 0; again < 2; again++) {
		for (i = 0; i < rd->nrules; i++)
			if (rd->rules[i].id == id)
				return rd->rules[i].prefix;
		if (again || events_clock_ns() - rd->rules_read_ns < 1000000000ULL)
			break;
		rd->nrules = 0;
		rd->rules_read_ns = events_clock_ns();
		rules_foreach(rd->l->fd, rule_add, rd);
	}
	return NULL;
}

/* @coarse_ns (CLOCK_MONOTONIC_COARSE) as RFC 3339, UTC, to the millisecond, and in ms. */
static __u64 when(const struct reader *rd, __u64 coarse_ns, char *buf, size_t len)
{
	__u64 real = coarse_ns + rd->coarse_to_real_ns;
	time_t s = real / 1000000000ULL;
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), len - strlen(buf), ".%03lluZ",
		 (unsigned long long)(real / 1000000 % 1000));
	return real / 1000000;
}

/* A line of text: on stdout, and to syslog with --syslog (without the time). */
static void put_line(const struct reader *rd, const char *stamp, const char *text)
{
	if (!rd->as_json)
		printf("%s %s\n", stamp, text);
	if (rd->to_syslog && events_syslog(text))
		log_dbg("cannot send an event to syslog: %m");
}

static __u64 lost_now(const struct reader *rd)
{
	struct xdp_rl_stats st;

	if (stats_read(rd->l, &st))
		return 0;
	return st.c[XDP_RL_STAT_EVENTS_LOST] - rd->lost_base;
}

/* What --rate held back since it was last said, as a record of its own. */
static void tell_suppressed(struct reader *rd)
{
	__u64 n = rd->suppressed - rd->suppressed_told, now = events_clock_ns(), lost;
	char stamp[40], text[160], rate[32];
	struct json j;
	__u64 ms;

	if (!n)
		return;
	rd->suppressed_told = rd->suppressed;
	ms = when(rd, now, stamp, sizeof(stamp));
	lost = lost_now(rd);
	fmt_duration(rd->rate.window_ns, rate, sizeof(rate));
	if (rd->as_json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_str(&j, "time", stamp);
		json_u64(&j, "time_ms", ms);
		json_str(&j, "interface", rd->l->ifname);
		json_str(&j, "kind", "suppressed");
		json_u64(&j, "suppressed", n);
		json_u64(&j, "suppressed_total", rd->suppressed);
		json_u64(&j, "lost", lost);
		json_end(&j);
		json_finish(&j);
	}
	snprintf(text, sizeof(text),
		 "%s: %llu records suppressed over --rate %llu/%s (%llu in all; %llu lost in the "
		 "kernel)",
		 rd->l->ifname, (unsigned long long)n, (unsigned long long)rd->rate.limit, rate,
		 (unsigned long long)rd->suppressed, (unsigned long long)lost);
	put_line(rd, stamp, text);
	fflush(stdout);
}

/* Whether --rate lets one more record through now. */
static int rate_admits(struct reader *rd)
{
	__u64 now = events_clock_ns();

	if (now - rd->rate_start >= rd->rate.window_ns) {
		tell_suppressed(rd);
		rd->rate_start = now;
		rd->rate_shown = 0;
	}
	if (rd->rate_shown >= rd->rate.limit) {
		rd->suppressed++;
		return 0;
	}
	rd->rate_shown++;
	return 1;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct reader *rd = ctx;
	const struct xdp_rl_event *ev = data;
	char stamp[40], key[INET6_ADDRSTRLEN + 24], text[512], w[32], lim[64];
	const char *rule = NULL, *unit, *kind;
	struct json j;
	__u64 ms, burst;
	unsigned int port;
	int has_port;

	if (size < sizeof(*ev) || stop)
		return 0;
	/* A former reader's, left in the ring when it was killed. */
	if (ev->time_ns < rd->started_ns)
		return 0;
	if (rd->max_count && rd->shown >= rd->max_count)
		return 1;
	if (!rate_admits(rd))
		return 0;
	rd->shown++;
	ms = when(rd, ev->time_ns, stamp, sizeof(stamp));
	kind = events_kind_name(ev->kind);
	has_port = events_key(rd->l, ev, key, sizeof(key), &port);
	if (ev->rule != XDP_RL_EV_NO_RULE)
		rule = rule_prefix(rd, ev->rule);
	if (ev->kind == XDP_RL_EV_SHARED && rule)
		snprintf(key, sizeof(key), "%s", rule);
	/* A rate's record (bpf/rate.h) counts its burst, which the key had used up. */
	burst = ev->banned & XDP_RL_EV_RATE ? ev->count : 0;
	unit = ev->kind == XDP_RL_EV_NEW_SOURCES ? "sources" :
	       rd->l->cfg.fixed.bytes		 ? "bytes" :
						   "packets";
	fmt_duration(ev->window_ns, w, sizeof(w));
	if (rd->as_json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_str(&j, "time", stamp);
		json_u64(&j, "time_ms", ms);
		json_str(&j, "interface", rd->l->ifname);
		json_str(&j, "kind", kind);
		if (*key)
			json_str(&j, "source", key);
		else
			json_null(&j, "source");
		/* --key src,dport or dst,dport: the key's port (0: packets without one). */
		if (has_port)
			json_u64(&j, "port", port);
		if (ev->family == 4 || ev->family == 6)
			json_str(&j, "family", ev->family == 6 ? "ipv6" : "ipv4");
		else
			json_null(&j, "family");
		if (ev->rule != XDP_RL_EV_NO_RULE) {
			json_u64(&j, "rule_id", ev->rule);
			if (rule)
				json_str(&j, "rule", rule);
			else
				json_null(&j, "rule");
		} else {
			json_null(&j, "rule_id");
			json_null(&j, "rule");
		}
		json_u64(&j, "layer", ev->layer);
		json_u64(&j, "limit", ev->limit);
		json_str(&j, "window", w);
		json_u64(&j, "window_ns", ev->window_ns);
		json_u64(&j, "count", ev->count);
		/* A rate's (--rate): its count is its burst, which the key had used up. */
		json_str(&j, "limit_kind", burst ? "rate" : "window");
		if (burst)
			json_u64(&j, "burst", burst);
		json_str(&j, "unit", unit);
		/* The crossing banned the key (--ban): every packet refused for the ban's length. */
		json_bool(&j, "banned", ev->banned & XDP_RL_EV_BANNED);
		json_end(&j);
		json_finish(&j);
	}
	if (has_port)
		snprintf(key + strlen(key), sizeof(key) - strlen(key), " port %u", port);
	if (burst)
		snprintf(lim, sizeof(lim), "rate %llu/%s burst %llu", (unsigned long long)ev->limit,
			 w, (unsigned long long)burst);
	else
		snprintf(lim, sizeof(lim), "%llu/%s", (unsigned long long)ev->limit, w);
	if (ev->kind == XDP_RL_EV_NEW_SOURCES)
		snprintf(text, sizeof(text), "%s: new sources over --new-sources %s: %llu sources",
			 rd->l->ifname, lim, (unsigned long long)ev->count);
	else
		snprintf(text, sizeof(text), "%s: %s %s over %s (layer %u): %llu %s, %s%s%s",
			 rd->l->ifname, kind, key, lim, ev->layer + 1,
			 (unsigned long long)ev->count, unit,
			 ev->rule == XDP_RL_EV_NO_RULE ? "global limits" : "rule ",
			 ev->rule == XDP_RL_EV_NO_RULE ? "" :
			 rule			       ? rule :
							 "(deleted)",
			 ev->banned & XDP_RL_EV_BANNED ? "; banned" : "");
	put_line(rd, stamp, text);
	fflush(stdout);
	if (rd->max_count && rd->shown >= rd->max_count)
		stop = 1;
	return 0;
}

static const char *const events_forms[] = {
	"IFACE [--json] [--syslog] [--rate N/DUR] [--count N]\n[--duration DUR]", NULL
};

static const struct opt_spec events_opts[] = {
	{ "json", OPT_JSON, NULL, "one JSON object per line" },
	{ "syslog", OPT_SYSLOG, NULL,
	  "send each record to syslog too (daemon facility, ident xdp-rl)" },
	{ "rate", OPT_RATE, "N/DUR",
	  "show at most N records per DUR (1000/1s); the rest are counted as\n"
	  "suppressed, in a record of their own" },
	{ "count", OPT_COUNT, "N", "stop after N records" },
	{ "duration", OPT_DURATION, "DUR", "stop after DUR" },
	{ NULL },
};

static int cmd_events(int argc, char **argv);

const struct cmd_spec cmd_events_spec = {
	.name = "events",
	.run = cmd_events,
	.forms = events_forms,
	.about = "Show each window that goes over its limit, as it does: one record per source\n"
		 "(or aggregate, or --shared budget) per window per layer, from the packet\n"
		 "that took it over: the key, the rule, the limit, the window, the count so\n"
		 "far, whether it banned the key (--ban) and the time. One reader per limiter\n"
		 "at a time. Until interrupted,\n"
		 "--count or --duration; a summary on stderr at the end.\n",
	.opts = events_opts,
};

/* A reader's lease taken under the state lock: 0, or an exit code after saying why. */
static int take_lease(struct reader *rd)
{
	__u32 holder = 0;
	int fd, r;

	fd = lock_take(0);
	if (fd < 0)
		return EXIT_FAIL;
	r = events_lease_take(rd->l, &holder);
	lock_release(fd);
	if (r < 0) {
		log_err("cannot read the events of '%s': %m", rd->l->ifname);
		return EXIT_FAIL;
	}
	if (r > 0) {
		log_err("cannot read the events of '%s': another reader has them (pid %u)",
			rd->l->ifname, holder);
		return EXIT_FAIL;
	}
	return 0;
}

static int cmd_events(int argc, char **argv)
{
	struct reader rd = { .rate = { RATE_DEFAULT, RATE_WINDOW_DEFAULT } };
	__u64 duration = 0, end = 0, renewed, now;
	struct ring_buffer *rb = NULL;
	struct xdp_rl_stats st;
	const char *ifname, *why;
	struct timespec rt;
	struct limiter l;
	__u32 holder = 0;
	int opt, ret = EXIT_DONE, r;

	while ((opt = cmd_getopt(argc, argv, &cmd_events_spec)) != -1) {
		if (opt == OPT_JSON) {
			rd.as_json = 1;
		} else if (opt == OPT_SYSLOG) {
			rd.to_syslog = 1;
		} else if (opt == OPT_RATE) {
			why = parse_layer(optarg, &rd.rate);
			if (why)
				return usage_err("events", "events: invalid --rate '%s': %s",
						 optarg, why);
		} else if (opt == OPT_COUNT) {
			why = parse_u64(optarg, 1, ~0ULL, &rd.max_count);
			if (why)
				return usage_err("events", "events: invalid --count '%s': %s",
						 optarg, why);
		} else if (opt == OPT_DURATION) {
			why = parse_duration(optarg, 1000000ULL, 365ULL * 86400 * 1000000000ULL,
					     &duration);
			if (why)
				return usage_err("events", "events: invalid --duration '%s': %s",
						 optarg, why);
		} else {
			return EXIT_USAGE;
		}
	}
	if (cmd_positional(argc, argv, "events", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (cmd_no_more(argc, argv, "events", 1))
		return EXIT_USAGE;
	if (cmd_prepare_read(NEED_BPF, "cannot read events") ||
	    limiter_open(ifname, &l, "cannot read the events of"))
		return EXIT_FAIL;
	rd.l = &l;
	if (stats_read(&l, &st)) {
		log_err("cannot read the statistics of '%s': %m", ifname);
		limiter_close(&l);
		return EXIT_FAIL;
	}
	rd.lost_base = st.c[XDP_RL_STAT_EVENTS_LOST];
	rb = ring_buffer__new(l.fd[PIN_EVENTS], on_record, &rd, NULL);
	if (!rb) {
		log_err("cannot read the events of '%s': %m", ifname);
		limiter_close(&l);
		return EXIT_FAIL;
	}
	ret = take_lease(&rd);
	if (ret) {
		ring_buffer__free(rb);
		limiter_close(&l);
		return ret;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, on_signal);
	rd.started_ns = events_clock_ns();
	clock_gettime(CLOCK_REALTIME, &rt);
	rd.coarse_to_real_ns =
		(__s64)((__u64)rt.tv_sec * 1000000000ULL + rt.tv_nsec) - (__s64)rd.started_ns;
	rd.rate_start = rd.started_ns;
	renewed = rd.started_ns;
	fprintf(stderr, "xdp-rl: events of '%s': reading (pid %d); Ctrl-C ends\n", ifname,
		(int)getpid());
	if (duration)
		end = rd.started_ns + duration;
	while (!stop) {
		r = ring_buffer__poll(rb, 200);
		if (r < 0 && r != -EINTR) {
			errno = -r;
			log_err("cannot read the events of '%s': %m", ifname);
			ret = EXIT_FAIL;
			break;
		}
		now = events_clock_ns();
		if (end && now >= end)
			break;
		if (now - rd.rate_start >= rd.rate.window_ns) {
			tell_suppressed(&rd);
			rd.rate_start = now;
			rd.rate_shown = 0;
		}
		if (now - renewed >= EVENTS_RENEW_NS) {
			if (!limiter_pinned(&l)) {
				log_err("cannot read the events of '%s': xdp-rl was unloaded from it",
					ifname);
				ret = EXIT_FAIL;
				break;
			}
			r = events_lease_renew(&l, &holder);
			if (r) {
				if (r > 0)
					log_err("cannot read the events of '%s': its lease passed to "
						"pid %u",
						ifname, holder);
				else
					log_err("cannot read the events of '%s': %m", ifname);
				ret = EXIT_FAIL;
				break;
			}
			renewed = now;
		}
	}
	/* What is in the ring already, within --count. */
	if (ret == EXIT_DONE && !(rd.max_count && rd.shown >= rd.max_count)) {
		stop = 0;
		ring_buffer__consume(rb);
	}
	events_lease_give_back(&l);
	tell_suppressed(&rd);
	fprintf(stderr,
		"xdp-rl: events of '%s': %llu shown, %llu suppressed by --rate, %llu lost in "
		"the kernel (ring full)\n",
		ifname, (unsigned long long)rd.shown, (unsigned long long)rd.suppressed,
		(unsigned long long)lost_now(&rd));
	ring_buffer__free(rb);
	free(rd.rules);
	limiter_close(&l);
	return ret;
}
