// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd/stats.c - `xdp-rl stats`: a limiter's totals, once or every few seconds. */
#include <signal.h>
#include <string.h>
#include <time.h>
#include <stdio.h>
#include <unistd.h>

#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "fleet.h"
#include "json.h"
#include "limiter.h"
#include "log.h"
#include "options.h"
#include "stats.h"

enum { OPT_JSON = 256, OPT_WATCH };

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/*
 * The fleet agent's state and counters (xdp-rl fleet), after the limiter's:
 * null in JSON, and nothing in text, if no agent ever ran on this limiter.
 */
static void fleet_print(const struct limiter *l, __u64 now_ns, struct json *j)
{
	struct xdp_rl_fleet st;
	char label[40], w[32];
	int alive, i, flag = !!(limiter_live(l)->flags & XDP_RL_F_FLEET);
	__u64 lag = 0;

	if (fleet_status_read(l, &st) || !st.started_unix_ns) {
		if (j)
			json_null(j, "fleet");
		return;
	}
	alive = fleet_agent_alive(&st);
	if (st.last_sync_unix_ns && now_ns > st.last_sync_unix_ns)
		lag = now_ns - st.last_sync_unix_ns;
	if (j) {
		json_obj(j, "fleet");
		json_str(j, "state", alive ? fleet_state_name(st.state) : "stopped");
		json_bool(j, "running", alive);
		json_bool(j, "fleet_mode", flag);
		if (alive)
			json_u64(j, "pid", st.pid);
		else
			json_null(j, "pid");
		json_str(j, "redis", st.redis);
		json_str(j, "group", st.group);
		json_u64(j, "sync_ms", st.sync_ns / 1000000);
		/* How long ago Redis last answered a round in full. */
		if (st.last_sync_unix_ns)
			json_u64(j, "lag_ms", lag / 1000000);
		else
			json_null(j, "lag_ms");
		json_u64(j, "synced_windows", st.synced);
		json_u64(j, "round_us", st.round_ns / 1000);
		for (i = 0; i < XDP_RL_FLEET_STAT_MAX; i++)
			json_u64(j, fleet_stat_names[i], st.c[i]);
		json_end(j);
		return;
	}
	fmt_duration(st.sync_ns ? st.sync_ns : 1000000, w, sizeof(w));
	if (alive)
		printf("  fleet            %s with Redis at %s, group %s, every %s (pid %llu)\n",
		       fleet_state_name(st.state), st.redis, st.group, w,
		       (unsigned long long)st.pid);
	else
		printf("  fleet            no agent running (the last synced with %s, group %s)%s\n",
		       st.redis, st.group,
		       flag ? "; fleet mode still set: shares count until their windows end" : "");
	if (st.last_sync_unix_ns)
		printf("  fleet-lag        %12llu ms since Redis last answered a round in full "
		       "(%llu windows, %llu us)\n",
		       (unsigned long long)(lag / 1000000), (unsigned long long)st.synced,
		       (unsigned long long)(st.round_ns / 1000));
	for (i = 0; i < XDP_RL_FLEET_STAT_MAX; i++) {
		snprintf(label, sizeof(label), "fleet-%s", fleet_stat_names[i]);
		for (char *p = label; *p; p++)
			if (*p == '_')
				*p = '-';
		/* Aligned on the numbers above, however long the name. */
		printf("  %-16s %*llu\n", label,
		       (int)(15 - (strlen(label) > 16 ? strlen(label) - 16 : 0)),
		       (unsigned long long)st.c[i]);
	}
}

static void stats_print(const struct limiter *l, const struct xdp_rl_stats *s,
			const struct xdp_rl_stats *prev, double secs, int as_json)
{
	struct json j;
	char label[32], when[40];
	struct timespec now;
	struct tm tm;
	int i;

	/* When the counters were read: RFC 3339, UTC, to the millisecond. */
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + strlen(when), sizeof(when) - strlen(when), ".%03ldZ",
		 now.tv_nsec / 1000000);
	if (as_json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_str(&j, "interface", l->ifname);
		json_str(&j, "time", when);
		json_u64(&j, "time_ms", (__u64)now.tv_sec * 1000 + now.tv_nsec / 1000000);
		for (i = 0; i < XDP_RL_STAT_MAX; i++)
			json_u64(&j, stat_names[i], s->c[i]);
		if (prev) {
			json_obj(&j, "per_second");
			for (i = 0; i < XDP_RL_STAT_MAX; i++)
				json_u64(&j, stat_names[i],
					 (__u64)((s->c[i] - prev->c[i]) / secs + 0.5));
			json_end(&j);
		}
		fleet_print(l, (__u64)now.tv_sec * 1000000000ULL + now.tv_nsec, &j);
		json_end(&j);
		json_finish(&j);
		return;
	}
	printf("%s: %s\n", l->ifname, when);
	for (i = 0; i < XDP_RL_STAT_MAX; i++) {
		if (i == XDP_RL_STAT_PASSED_BYTES || i == XDP_RL_STAT_DROPPED_BYTES)
			continue;
		snprintf(label, sizeof(label), "%s", stat_names[i]);
		for (char *p = label; *p; p++)
			if (*p == '_')
				*p = '-';
		printf("  %-16s %15llu", label, (unsigned long long)s->c[i]);
		if (i == XDP_RL_STAT_PASSED || i == XDP_RL_STAT_DROPPED)
			printf(" packets %17llu bytes",
			       (unsigned long long)
				       s->c[i == XDP_RL_STAT_PASSED ? XDP_RL_STAT_PASSED_BYTES :
								      XDP_RL_STAT_DROPPED_BYTES]);
		if (prev)
			printf("   %12.0f/s", (s->c[i] - prev->c[i]) / secs);
		putchar('\n');
	}
	fleet_print(l, (__u64)now.tv_sec * 1000000000ULL + now.tv_nsec, NULL);
	fflush(stdout);
}

static const char *const stats_forms[] = { "IFACE [--json] [--watch SECONDS]", NULL };

static const struct opt_spec stats_opts[] = {
	{ "json", OPT_JSON, NULL, "one JSON object (a line each with --watch)" },
	{ "watch", OPT_WATCH, "SECONDS",
	  "print them again every SECONDS, with rates, until interrupted" },
	{ NULL },
};

static int cmd_stats(int argc, char **argv);

const struct cmd_spec cmd_stats_spec = {
	.name = "stats",
	.run = cmd_stats,
	.forms = stats_forms,
	.about = "Show the totals since load: passed, dropped, would-drop (dry run), not IP,\n"
		 "malformed, windows opened, table errors, inserts, evictions, refused and\n"
		 "aggregated new sources, allowed and denied by rules.\n",
	.opts = stats_opts,
};

static int cmd_stats(int argc, char **argv)
{
	struct xdp_rl_stats s, prev;
	int opt, as_json = 0;
	const char *ifname, *why;
	__u64 watch = 0;
	struct limiter l;

	while ((opt = cmd_getopt(argc, argv, &cmd_stats_spec)) != -1) {
		if (opt == OPT_JSON) {
			as_json = 1;
		} else if (opt == OPT_WATCH) {
			why = parse_u64(optarg, 1, 86400, &watch);
			if (why)
				return usage_err("stats", "stats: invalid --watch '%s': %s", optarg,
						 why);
		} else {
			return EXIT_USAGE;
		}
	}
	if (cmd_positional(argc, argv, "stats", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (cmd_no_more(argc, argv, "stats", 1))
		return EXIT_USAGE;
	if (cmd_prepare_read(NEED_BPF, "cannot read statistics") ||
	    limiter_open(ifname, &l, "cannot read statistics of"))
		return EXIT_FAIL;
	if (stats_read(&l, &s)) {
		log_err("cannot read statistics of '%s': %m", ifname);
		limiter_close(&l);
		return EXIT_FAIL;
	}
	stats_print(&l, &s, NULL, 0, as_json);
	if (watch) {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
	}
	while (watch && !stop) {
		prev = s;
		sleep(watch);
		if (stop)
			break;
		if (!limiter_pinned(&l)) {
			log_err("cannot read statistics of '%s': xdp-rl was unloaded from it",
				ifname);
			limiter_close(&l);
			return EXIT_FAIL;
		}
		if (stats_read(&l, &s) || limiter_read_config(&l)) {
			log_err("cannot read statistics of '%s': %m (was it unloaded?)", ifname);
			limiter_close(&l);
			return EXIT_FAIL;
		}
		if (!as_json)
			putchar('\n');
		stats_print(&l, &s, &prev, watch, as_json);
	}
	limiter_close(&l);
	return EXIT_DONE;
}
