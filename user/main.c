// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* main.c - global options, the command table and help. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>

#include "caps.h"
#include "commands.h"
#include "log.h"
#include "options.h"
#include "pin.h"

static const char *netns_name;

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis;
	const char *help;
};

static const struct command commands[] = {
	{ "load", cmd_load,
	  "load IFACE [--limit N] [--window DUR | --layer N/DUR ...] [--per-key|--aligned]\n"
	  "            [--bytes] [--v4-prefix LEN] [--v6-prefix LEN] [--max-sources N]\n"
	  "            [--max-layers N] [--rules FILE] [--new-sources N/DUR\n"
	  "            [--on-table-full pass|drop|aggregate]] [--dry-run]\n"
	  "            [--mode native|generic] [--force]",
	  "Attach the limiter to IFACE. It keeps running after xdp-rl exits.\n\n"
	  "  --limit N          packets (or bytes with --bytes) per window per source\n"
	  "                     (default 1000)\n"
	  "  --window DUR       window length: a number and ns|us|ms|s|m|h, 1ms..8784h\n"
	  "                     (default 1s)\n"
	  "  --layer N/DUR      a window of N per DUR; repeat for up to 4 layers\n"
	  "                     (100/1s, 3000/1m): a packet passes only if every layer\n"
	  "                     admits it; instead of --limit and --window\n"
	  "  --per-key          a source's window opens at its first packet (default)\n"
	  "  --aligned          windows at multiples of DUR since the Unix epoch\n"
	  "  --bytes            count frame bytes instead of packets\n"
	  "  --v4-prefix LEN    IPv4 sources share a window per /LEN (0..32, default 32)\n"
	  "  --v6-prefix LEN    IPv6 sources share a window per /LEN (0..128, default 64)\n"
	  "  --max-sources N    sources tracked per address family, the least recently\n"
	  "                     seen evicted first (default 262144)\n"
	  "  --max-layers N     layers each source has room for, 1..4 (default: as many\n"
	  "                     as --layer or the rules need; 16 bytes each)\n"
	  "  --rules FILE       per-prefix rules, one a line, as 'xdp-rl rule add' takes\n"
	  "                     them after IFACE; '#' starts a comment\n"
	  "  --new-sources N/DUR  admit at most N new sources to the table per DUR; past\n"
	  "                     that, new sources are handled by --on-table-full:\n"
	  "                     pass (default), drop, or aggregate (one window per /24\n"
	  "                     or /48, with the same layers)\n"
	  "  --dry-run          count what would be dropped, drop nothing\n"
	  "  --mode MODE        native (driver, default) or generic (skb)\n"
	  "  --force            replace a limiter already on IFACE without a gap;\n"
	  "                     windows are kept when the table settings are unchanged\n" },
	{ "set", cmd_set,
	  "set IFACE [--limit N] [--window DUR | --layer N/DUR ...] [--dry-run|--enforce]\n"
	  "           [--per-key|--aligned] [--new-sources N/DUR|off]\n"
	  "           [--on-table-full pass|drop|aggregate]",
	  "Change the running limiter's settings at once, without detaching it.\n\n"
	  "  --limit N          applies to the windows already open\n"
	  "  --window DUR       applies to windows opened from now on; an open window\n"
	  "                     that would end more than DUR + 1s from now ends at once\n"
	  "  --layer N/DUR      replace every layer (as many as the limiter has room for)\n"
	  "  --dry-run          count, drop nothing     --enforce  drop again\n"
	  "  --per-key|--aligned  switch window alignment; every window restarts\n"
	  "  --new-sources N/DUR|off, --on-table-full POLICY: as for load\n" },
	{ "unload", cmd_unload, "unload IFACE",
	  "Detach the limiter from IFACE and remove every piece of state it made.\n" },
	{ "status", cmd_status, "status [IFACE] [--json]",
	  "Show the limiters in this network namespace (or on IFACE) and their settings.\n" },
	{ "stats", cmd_stats, "stats IFACE [--json] [--watch SECONDS]",
	  "Show the totals since load: passed, dropped, would-drop (dry run), not IP,\n"
	  "malformed, windows opened, table errors, inserts, evictions, refused and\n"
	  "aggregated new sources, allowed and denied by rules. --watch prints them\n"
	  "every SECONDS with rates, until interrupted (with --json: one object a line).\n" },
	{ "get", cmd_get, "get IFACE ADDRESS [--json]",
	  "Show the window that limits ADDRESS: its source's (its key, its count, drops\n"
	  "included, and the time left), its --shared rule's budget, or, for a source\n"
	  "refused a slot of its own, its /24 or /48 aggregate window. A window that\n"
	  "has ended shows as empty.\n" },
	{ "reset", cmd_reset, "reset IFACE (ADDRESS | --all)",
	  "Forget the window that limits ADDRESS (as 'get' shows it), or with --all\n"
	  "every window: sources, aggregates, shared budgets. The next packet opens\n"
	  "a new one.\n" },
	{ "top", cmd_top, "top IFACE [--count N] [--json]",
	  "List the windows with the highest counts, highest first (default 10):\n"
	  "sources, and aggregate and --shared windows, marked as such. Windows that\n"
	  "have ended are not listed.\n" },
	{ "rule", cmd_rule,
	  "rule add IFACE CIDR (--allow | --deny | --layer N/DUR ... [--shared])\n"
	  "       rule del IFACE CIDR\n"
	  "       rule list IFACE [--json]",
	  "Per-prefix rules, changed live; the longest matching prefix wins.\n\n"
	  "  --allow            never limited, still counted\n"
	  "  --deny             always dropped\n"
	  "  --layer N/DUR      the prefix's own limits (up to 4 layers), for each source\n"
	  "                     in it, keyed as usual; with --shared, one budget for the\n"
	  "                     whole prefix\n\n"
	  "Adding a rule never detaches the program or resets other sources' windows.\n"
	  "'rule list' shows each rule's hits and drops.\n" },
	{ "help", NULL, "help [COMMAND]", "Show help for xdp-rl or for COMMAND.\n" },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: xdp-rl [-n NETNS] [-v] COMMAND ...\n\n"
		   "Per-source fixed-window rate limiting at the XDP hook.\n\n"
		   "  -n, --netns NETNS  run in network namespace NETNS (as 'ip -n')\n"
		   "  -v, --verbose      show libbpf's log\n"
		   "      --version      print the version\n\ncommands:\n");
	for (i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %s\n", commands[i].synopsis);
	fprintf(f, "\nRun 'xdp-rl help COMMAND' or 'xdp-rl COMMAND --help' for details.\n");
}

static void command_help(const struct command *c)
{
	printf("usage: xdp-rl [-n NETNS] %s\n\n%s", c->synopsis, c->help);
}

/* Exact name, or an unambiguous prefix of one, as `ip` accepts. */
static const struct command *find_command(const char *name)
{
	const struct command *found = NULL;
	char list[256] = "";
	size_t i, n = strlen(name);
	int matches = 0;

	for (i = 0; i < N_COMMANDS; i++) {
		if (!strcmp(commands[i].name, name))
			return &commands[i];
		if (n && !strncmp(commands[i].name, name, n)) {
			found = &commands[i];
			if (matches++)
				strcat(list, ", ");
			strcat(list, commands[i].name);
		}
	}
	if (matches == 1)
		return found;
	if (matches > 1)
		usage_err(NULL, "ambiguous command '%s': %s", name, list);
	else
		usage_err(NULL, "unknown command '%s'", name);
	return NULL;
}

int cmd_prepare(unsigned int caps, const char *what)
{
	if (netns_name)
		caps |= NEED_SYS_ADMIN;
	if (caps_check(caps, what))
		return -1;
	if (netns_name && netns_enter(netns_name))
		return -1;
	return 0;
}

int cmd_getopt(int argc, char **argv, const char *cmd, const struct option *opts)
{
	char shortopts[64] = ":";
	const struct option *o;
	int c, prev = optind;

	for (o = opts; o->name; o++) {
		if (o->val < 128 && !o->flag) {
			char s[3] = { (char)o->val, o->has_arg ? ':' : 0, 0 };

			strcat(shortopts, s);
		}
	}
	opterr = 0;
	c = getopt_long(argc, argv, shortopts, opts, NULL);
	if (c == '?') {
		if (optopt && optopt < 128)
			usage_err(cmd, "%s: unknown option '-%c'", cmd, optopt);
		else
			usage_err(cmd, "%s: unknown option '%s'", cmd, argv[optind - 1]);
	} else if (c == ':') {
		usage_err(cmd, "%s: option '%s' needs a value", cmd,
			  argv[optind - 1 >= prev ? optind - 1 : prev]);
		c = '?';
	}
	return c;
}

int cmd_positional(int argc, char **argv, const char *cmd, const char *what,
		   int n, const char **out)
{
	if (argc - optind <= n) {
		usage_err(cmd, "%s: missing %s", cmd, what);
		return -1;
	}
	*out = argv[optind + n];
	if (!**out) {
		usage_err(cmd, "%s: empty %s", cmd, what);
		return -1;
	}
	return 0;
}

__u64 window_clock_ns(const struct xdp_rl_live *live)
{
	struct timespec ts;

	/* bpf_ktime_get_ns is CLOCK_MONOTONIC; bpf_ktime_get_tai_ns is CLOCK_TAI. */
	clock_gettime(live->flags & XDP_RL_F_ALIGNED ? CLOCK_TAI : CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

__s64 tai_to_unix_ns(void)
{
	struct timespec tai, real;

	clock_gettime(CLOCK_TAI, &tai);
	clock_gettime(CLOCK_REALTIME, &real);
	/* The offset is whole seconds (0 until NTP sets it, then -37). */
	return (__s64)((real.tv_sec - tai.tv_sec) +
		       (real.tv_nsec - tai.tv_nsec >= 500000000 ? 1 :
			real.tv_nsec - tai.tv_nsec <= -500000000 ? -1 : 0)) * 1000000000LL;
}

void describe_limit(const struct xdp_rl_live *live, int bytes, char *buf, size_t len)
{
	static const char *const full[] = { "pass", "drop", "aggregate" };
	char w[32];
	size_t off = 0;
	__u32 i;

	for (i = 0; i < live->nlayers && i < XDP_RL_MAX_LAYERS; i++) {
		fmt_duration(live->layer[i].window_ns, w, sizeof(w));
		off += snprintf(buf + off, len - off, "%s%llu %s%s per %s window",
				i ? " and " : "", (unsigned long long)live->layer[i].limit,
				bytes ? "byte" : "packet", live->layer[i].limit == 1 ? "" : "s", w);
		if (off >= len)
			return;
	}
	off += snprintf(buf + off, len - off, ", %s%s",
			live->flags & XDP_RL_F_ALIGNED ? "aligned" : "per key",
			live->flags & XDP_RL_F_DRY_RUN ? ", dry run" : "");
	if (off < len && live->new_sources.limit) {
		fmt_duration(live->new_sources.window_ns, w, sizeof(w));
		snprintf(buf + off, len - off, "; at most %llu new sources per %s, then %s",
			 (unsigned long long)live->new_sources.limit, w,
			 full[live->on_full < 3 ? live->on_full : 0]);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "netns", required_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	const struct command *c;
	int opt, i;

	/* Options before the command only; the command parses the rest. */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:n:vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			if (!*optarg || strchr(optarg, '/')) {
				err("invalid -n '%s': give a namespace name (see 'ip netns list')",
				    optarg);
				return EXIT_USAGE;
			}
			netns_name = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return EXIT_DONE;
		case 'V':
			printf("xdp-rl %s (libbpf %s)\n", XDP_RL_VERSION,
			       libbpf_version_string());
			return EXIT_DONE;
		case ':':
			return usage_err(NULL, "option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_err(NULL, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	c = find_command(argv[optind]);
	if (!c)
		return EXIT_USAGE;

	argc -= optind;
	argv += optind;
	if (!c->run) {	/* help [COMMAND] */
		if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
			usage(stdout);
			return EXIT_DONE;
		}
		if (argc > 2)
			return usage_err("help", "help: unexpected argument '%s'", argv[2]);
		c = find_command(argv[1]);
		if (!c)
			return EXIT_USAGE;
		command_help(c);
		return EXIT_DONE;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			command_help(c);
			return EXIT_DONE;
		}
	}
	log_setup_libbpf();
	optind = 0;	/* a fresh getopt scan for the command */
	return c->run(argc, argv);
}
