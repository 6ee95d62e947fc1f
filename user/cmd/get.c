// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd/get.c - `xdp-rl get` and `xdp-rl top`: the windows of one source, or the busiest. */
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>

#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "json.h"
#include "limiter.h"
#include "live.h"
#include "log.h"
#include "settings.h"
#include "options.h"
#include "rules.h"
#include "sources.h"
#include "output.h"
#include "vec.h"

enum { OPT_JSON = 256, OPT_COUNT };

/* Unix time in ms of @ns on the clock the limiter's windows keep (0 stays 0). */
static __u64 window_unix_ms(const struct limiter *l, __u64 ns)
{
	const struct xdp_rl_live *live = limiter_live(l);
	struct timespec real, mono;
	__s64 off;

	if (!ns)
		return 0;
	if (live->flags & XDP_RL_F_ALIGNED) {
		off = live->tai_to_unix_ns;
	} else {
		clock_gettime(CLOCK_REALTIME, &real);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		off = (real.tv_sec - mono.tv_sec) * 1000000000LL + real.tv_nsec - mono.tv_nsec;
	}
	return ((__s64)ns + off) / 1000000;
}

/* CLOCK_MONOTONIC @ns as Unix time in ms (0 stays 0). */
static __u64 mono_unix_ms(__u64 ns)
{
	struct timespec real, mono;

	if (!ns)
		return 0;
	clock_gettime(CLOCK_REALTIME, &real);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	return ((__s64)ns + (real.tv_sec - mono.tv_sec) * 1000000000LL + real.tv_nsec -
		mono.tv_nsec) /
	       1000000;
}

/* ", banned until 2025-06-01 12:00:42 UTC (42 s left)" for a ban in force on @src, into @buf; "" if none. */
static void ban_text(const struct limiter *l, const struct source *src, char *buf, size_t len)
{
	time_t until = (time_t)(window_unix_ms(l, src->ban_ends_ns) / 1000);
	char when[40];
	struct tm tm;

	buf[0] = '\0';
	if (!source_banned(src))
		return;
	gmtime_r(&until, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	snprintf(buf, len, ", banned until %s (%llu s left)", when,
		 (unsigned long long)((src->ban_ends_in_ns + 999999999ULL) / 1000000000ULL));
}

/*
 * Layer @i of @src, a rate, as `get` says it: "0 of 200 packets at once
 * (rate 100/1s), the next in 10 ms, 12 dropped, owes nothing in 2000 ms"
 * (no "next" while one may pass now).
 */
static void rate_print(const struct limiter *l, const struct source *src, __u32 i)
{
	const struct xdp_rl_layer *lay = &src->lay[i];
	char w[32];

	fmt_duration(lay->window_ns, w, sizeof(w));
	printf("%s %llu of %llu %s at once (rate %llu/%s)", i ? "," : "",
	       (unsigned long long)src->tokens[i], (unsigned long long)lay->burst, limiter_unit(l),
	       (unsigned long long)lay->limit, w);
	if (!src->count[i]) {
		printf(", owes nothing");
		return;
	}
	if (src->next_pass_ns[i])
		printf(", the next in %llu ms", (unsigned long long)ms_up(src->next_pass_ns[i]));
	printf(", %llu dropped, owes nothing in %llu ms", (unsigned long long)src->dropped[i],
	       (unsigned long long)ms_up(src->expires_in_ns[i]));
}

static void source_print(const struct limiter *l, const struct source *src, const char *asked,
			 struct json *j)
{
	int dry = limiter_live(l)->flags & XDP_RL_F_DRY_RUN;
	/*
	 * With one layer, in packets, under the limits the window was opened
	 * with, what passed and what did not follow from the count.
	 */
	int split = !l->cfg.fixed.bytes && src->nlayers == 1 && src->same_limits &&
		    !xdp_rl_is_rate(&src->lay[0]);
	int fleet = limiter_live(l)->flags & XDP_RL_F_FLEET;
	__u64 passed = src->count[0] < src->lay[0].limit ? src->count[0] : src->lay[0].limit;
	/* What `charge` put in is no packet: the packets are the rest of the count. */
	__u64 cmd = src->by_command[0], packets = src->count[0] - cmd;
	char key[INET6_ADDRSTRLEN + 24], rule[INET6_ADDRSTRLEN + 8], w[32], ban[96];
	__u32 i;

	/* In a fleet, the others' part counts too: what passed here is the window's own count. */
	if (fleet && src->charged[0] < passed)
		passed = src->charged[0];
	/* Of the budget below the limit, the packets had what the charges did not take. */
	passed = passed > src->by_command_in_budget[0] ? passed - src->by_command_in_budget[0] : 0;
	if (passed > packets)
		passed = packets;
	fmt_key(&src->key, src->prefix, src->has_port, src->port, key, sizeof(key));
	if (src->has_rule)
		fmt_prefix(&src->rule, src->rule_prefix, rule, sizeof(rule));
	if (j) {
		json_obj(j, NULL);
		if (asked)
			json_str(j, "address", asked);
		fmt_prefix(&src->key, src->prefix, key, sizeof(key));
		json_str(j, "key", key);
		/* --key src,dport or dst,dport: the key's port (0: packets without one). */
		if (src->has_port)
			json_u64(j, "port", src->port);
		if (src->kind)
			json_str(j, "kind", src->kind);
		if (src->has_rule)
			json_str(j, "rule", rule);
		json_u64(j, "count", src->count[0]);
		/* Drops past the limit are counted per CPU: see doc/design.md, "A flood on many CPUs". */
		json_u64(j, "count_error_max_packets", src->count_error_packets[0]);
		json_u64(j, "limit", src->lay[0].limit);
		/* What the other servers of a fleet counted in the window (xdp-rl fleet). */
		if (fleet)
			json_u64(j, "remote", src->remote[0]);
		json_str(j, "unit", limiter_unit(l));
		json_u64(j, "expires_in_ms", ms_up(src->expires_in_ns[0]));
		/* As Hammer's get_bucket: created_at, updated_at. */
		if (source_open(src))
			json_u64(j, "opened_at_ms", window_unix_ms(l, src->started_ns[0]));
		else
			json_null(j, "opened_at_ms");
		if (src->seen_mono_ns)
			json_u64(j, "last_seen_ms", mono_unix_ms(src->seen_mono_ns));
		else
			json_null(j, "last_seen_ms");
		/* Of count, what `charge` or `reset --count` put in: not packets. */
		json_u64(j, "charged_by_command", cmd);
		/* A ban in force (--ban): every packet of the key is refused until it ends. */
		json_bool(j, "banned", source_banned(src));
		json_u64(j, "ban_ends_in_ms", ms_up(src->ban_ends_in_ns));
		if (source_banned(src))
			json_u64(j, "ban_ends_at_ms", window_unix_ms(l, src->ban_ends_ns));
		else
			json_null(j, "ban_ends_at_ms");
		if (split) {
			json_u64(j, "passed", passed);
			json_u64(j, dry ? "would_drop" : "dropped", packets - passed);
		}
		layers_json(j, src->lay, src->nlayers, src);
		json_end(j);
		return;
	}
	printf("%-24s", key);
	for (i = 0; i < src->nlayers; i++) {
		if (xdp_rl_is_rate(&src->lay[i])) {
			rate_print(l, src, i);
			continue;
		}
		fmt_duration(src->lay[i].window_ns, w, sizeof(w));
		if (src->nlayers > 1)
			printf("%s %llu of %llu/%s", i ? "," : "",
			       (unsigned long long)src->count[i],
			       (unsigned long long)src->lay[i].limit, w);
		else
			printf(" %12llu %s", (unsigned long long)src->count[0], limiter_unit(l));
		if (split && cmd)
			printf(" (%llu by 'charge'; of %llu packets, %llu passed, %llu %s)",
			       (unsigned long long)cmd, (unsigned long long)packets,
			       (unsigned long long)passed, (unsigned long long)(packets - passed),
			       dry ? "would drop" : "dropped");
		else if (split)
			printf(" (%llu passed, %llu %s)", (unsigned long long)passed,
			       (unsigned long long)(packets - passed),
			       dry ? "would drop" : "dropped");
		else if (src->by_command[i])
			printf(" (%llu by 'charge')", (unsigned long long)src->by_command[i]);
		if (fleet && src->count[i])
			printf(", %llu elsewhere in the fleet", (unsigned long long)src->remote[i]);
		if (src->count[i])
			printf(", %sends in %llu ms", src->nlayers > 1 ? "" : "window ",
			       (unsigned long long)ms_up(src->expires_in_ns[i]));
		else if (src->nlayers == 1)
			printf(", no open window");
	}
	ban_text(l, src, ban, sizeof(ban));
	fputs(ban, stdout);
	if (src->kind)
		printf("  (%s)", src->kind);
	else if (src->has_rule)
		printf("  (rule %s)", rule);
	putchar('\n');
}

static const char *const get_forms[] = { "IFACE ADDRESS [PORT] [--json]", NULL };

static const struct opt_spec get_opts[] = {
	{ "json", OPT_JSON, NULL, "one JSON object on stdout" },
	{ NULL },
};

static int cmd_get(int argc, char **argv);

const struct cmd_spec cmd_get_spec = {
	.name = "get",
	.run = cmd_get,
	.forms = get_forms,
	.about = "Show the window that limits ADDRESS: its source's (its key, its count, drops\n"
		 "included, and the time left), its --shared rule's budget, or, for a source\n"
		 "refused a slot of its own, its /24 or /48 aggregate window. A window that\n"
		 "has ended shows as empty. A ban in force (--ban) shows with its end.\n"
		 "ADDRESS is the key's address: the source's, or with --key dst the\n"
		 "destination's. PORT, with --key src,dport or dst,dport, is the key's\n"
		 "destination port (0 for packets without one), and needed then.\n",
	.opts = get_opts,
};

static int cmd_get(int argc, char **argv)
{
	const char *ifname, *addr, *why;
	char pfx[INET6_ADDRSTRLEN + 8];
	struct source src, agg;
	struct target t, ta;
	struct ip_addr a;
	struct limiter l;
	int opt, as_json = 0, found, took;
	unsigned int port;
	struct json j;

	while ((opt = cmd_getopt(argc, argv, &cmd_get_spec)) != -1) {
		if (opt != OPT_JSON)
			return EXIT_USAGE;
		as_json = 1;
	}
	if (cmd_positional(argc, argv, "get", "IFACE", 0, &ifname) ||
	    cmd_positional(argc, argv, "get", "ADDRESS", 1, &addr))
		return EXIT_USAGE;
	if (cmd_no_more(argc, argv, "get", 3))
		return EXIT_USAGE;
	why = parse_addr(addr, &a);
	if (why)
		return usage_err("get", "get: invalid ADDRESS '%s': %s", addr, why);
	if (cmd_prepare_read(NEED_BPF, "cannot read a source") ||
	    limiter_open(ifname, &l, "cannot read a source on"))
		return EXIT_FAIL;
	took = cmd_port(argc, argv, "get", 2, xdp_rl_key_port(l.cfg.fixed.key), &port);
	if (took < 0 || cmd_no_more(argc, argv, "get", 2 + took)) {
		limiter_close(&l);
		return EXIT_USAGE;
	}

	target_of(&l, &a, port, &t);
	if (t.kind == TARGET_ALLOW || t.kind == TARGET_DENY || t.kind == TARGET_EXEMPT) {
		if (as_json) {
			json_begin(&j, stdout);
			json_obj(&j, NULL);
			json_str(&j, "address", addr);
			if (t.kind == TARGET_EXEMPT) {
				json_str(&j, "link_local", "exempt");
			} else if (t.by_list) {
				fmt_prefix(&t.rule_addr, t.rule_prefix, pfx, sizeof(pfx));
				json_str(&j, "list", t.kind == TARGET_ALLOW ? "allow" : "deny");
				json_str(&j, "list_prefix", pfx);
			} else {
				json_str(&j, "rule", word_name(rule_action_words, t.rule.action));
			}
			json_u64(&j, "count", 0);
			json_u64(&j, "expires_in_ms", 0);
			json_end(&j);
			json_finish(&j);
		} else if (t.kind == TARGET_EXEMPT) {
			printf("%s: link-local, exempt from every limit (--link-local exempt)\n",
			       addr);
		} else if (t.by_list) {
			fmt_prefix(&t.rule_addr, t.rule_prefix, pfx, sizeof(pfx));
			printf("%s: %s by the %s list (%s; see 'xdp-rl lists %s')\n", addr,
			       t.kind == TARGET_ALLOW ? "allowed" : "denied",
			       t.kind == TARGET_ALLOW ? "allow" : "deny", pfx, ifname);
		} else {
			printf("%s: %s by a rule (see 'xdp-rl rule list %s')\n", addr,
			       t.kind == TARGET_ALLOW ? "allowed" : "denied", ifname);
		}
		limiter_close(&l);
		return EXIT_DONE;
	}
	found = target_read(&l, &t, &src);
	if (found > 0)
		charges_read(&l, &t, &src);
	if (found >= 0 && t.kind == TARGET_KEY && !source_open(&src) && !source_banned(&src)) {
		/* Refused a slot by --new-sources: charged to its /24 or /48. */
		target_aggregate(&l, &a, port, &ta);
		found = target_read(&l, &ta, &agg);
		if (found > 0 && (source_open(&agg) || source_banned(&agg))) {
			charges_read(&l, &ta, &agg);
			src = agg;
		}
	}
	if (found < 0) {
		limiter_close(&l);
		return EXIT_FAIL;
	}
	if (as_json)
		json_begin(&j, stdout);
	source_print(&l, &src, addr, as_json ? &j : NULL);
	if (as_json)
		json_finish(&j);
	limiter_close(&l);
	return EXIT_DONE;
}

struct collect {
	struct source *v;
	size_t n, cap;
};

static int collect_one(const struct source *src, void *ctx)
{
	struct collect *c = ctx;

	if (vec_room(c->v, c->n, c->cap, 1, 1024))
		return 1;
	c->v[c->n] = *src;
	c->n++;
	return 0;
}

static int by_count_desc(const void *a, const void *b)
{
	const struct source *x = a, *y = b;

	return x->count[0] < y->count[0] ? 1 : x->count[0] > y->count[0] ? -1 : 0;
}

static const char *const top_forms[] = { "IFACE [--count N] [--json]", NULL };

static const struct opt_spec top_opts[] = {
	{ "count", OPT_COUNT, "N", "how many to list (default 10)" },
	{ "json", OPT_JSON, NULL, "one JSON object on stdout" },
	{ NULL },
};

static int cmd_top(int argc, char **argv);

const struct cmd_spec cmd_top_spec = {
	.name = "top",
	.run = cmd_top,
	.forms = top_forms,
	.about = "List the windows with the highest counts, highest first: sources, and\n"
		 "aggregate and --shared windows, marked as such. Windows that have ended\n"
		 "are not listed, unless their key is under a ban (--ban).\n",
	.opts = top_opts,
};

static int cmd_top(int argc, char **argv)
{
	struct collect c = {};
	const char *ifname, *why;
	__u64 count = 10;
	struct limiter l;
	int opt, as_json = 0, r;
	size_t i, sources = 0, banned = 0;
	struct json j;

	while ((opt = cmd_getopt(argc, argv, &cmd_top_spec)) != -1) {
		if (opt == OPT_JSON) {
			as_json = 1;
		} else if (opt == OPT_COUNT) {
			why = parse_u64(optarg, 1, MAX_SOURCES_MAX * 2, &count);
			if (why)
				return usage_err("top", "top: invalid --count '%s': %s", optarg,
						 why);
		} else {
			return EXIT_USAGE;
		}
	}
	if (cmd_positional(argc, argv, "top", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (cmd_no_more(argc, argv, "top", 1))
		return EXIT_USAGE;
	if (cmd_prepare_read(NEED_BPF, "cannot list sources") ||
	    limiter_open(ifname, &l, "cannot list sources on"))
		return EXIT_FAIL;

	r = foreach_window(&l, 1, collect_one, &c);
	if (r) {
		if (r > 0)
			log_err("cannot list sources on '%s': out of memory", ifname);
		free(c.v);
		limiter_close(&l);
		return EXIT_FAIL;
	}
	if (c.n)
		qsort(c.v, c.n, sizeof(*c.v), by_count_desc);
	if (count > c.n)
		count = c.n;
	for (i = 0; i < c.n; i++) {
		sources += !c.v[i].kind;
		banned += source_banned(&c.v[i]);
	}

	if (as_json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_str(&j, "interface", ifname);
		json_u64(&j, "active_sources", sources);
		json_u64(&j, "open_windows", c.n); /* with aggregates and shared budgets */
		/* Keys under a ban (--ban), sources or aggregates. */
		json_u64(&j, "banned_keys", banned);
		json_arr(&j, "sources");
		for (i = 0; i < count; i++)
			source_print(&l, &c.v[i], NULL, &j);
		json_end(&j);
		json_end(&j);
		json_finish(&j);
	} else {
		printf("%s: %zu source%s with an open window", ifname, sources,
		       sources == 1 ? "" : "s");
		if (c.n > sources)
			printf(", %zu aggregate or shared window%s", c.n - sources,
			       c.n - sources == 1 ? "" : "s");
		if (banned)
			printf(" (%zu key%s under a ban)", banned, banned == 1 ? "" : "s");
		printf("%s\n", c.n ? "; highest count first:" : "");
		for (i = 0; i < count; i++)
			source_print(&l, &c.v[i], NULL, NULL);
	}
	free(c.v);
	limiter_close(&l);
	return EXIT_DONE;
}
