// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd_show.c - the commands that read a limiter: status, stats, get, top; and reset. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "caps.h"
#include "commands.h"
#include "json.h"
#include "log.h"
#include "options.h"
#include "pin.h"
#include "rules.h"

enum { OPT_JSON = 256, OPT_WATCH, OPT_COUNT, OPT_ALL };

/* ---- Sources ------------------------------------------------------------- */

/* One key as shown to users: its windows, under the limits that apply to it. */
struct source {
	struct ip_addr key;
	unsigned int prefix;
	const char *kind;		/* NULL: a source; "shared": a rule's budget */
	const struct xdp_rl_rule *rule;	/* the rule that matched, if any */
	__u32 nlayers;
	struct xdp_rl_layer lay[XDP_RL_MAX_LAYERS];
	__u64 count[XDP_RL_MAX_LAYERS];		/* 0 if the window has ended */
	__u64 expires_in_ns[XDP_RL_MAX_LAYERS];	/* 0 if the window has ended */
};

static int source_open(const struct source *s)
{
	__u32 i;

	for (i = 0; i < s->nlayers; i++)
		if (s->count[i])
			return 1;
	return 0;
}

/* The rule for @a (longest prefix), copied into @r; NULL if none. */
static const struct xdp_rl_rule *rule_for(const struct limiter *l, const struct ip_addr *a,
					  struct xdp_rl_rule *r)
{
	const struct xdp_rl_live *live = limiter_live(l);
	struct xdp_rl_rule_key4 k4 = { .prefixlen = 32 };
	struct xdp_rl_rule_key6 k6 = { .prefixlen = 128 };

	if (a->family == AF_INET) {
		memcpy(&k4.addr, a->bytes, 4);
		return live->nrules4 && !bpf_map_lookup_elem(l->fd[PIN_RULES4], &k4, r) ? r : NULL;
	}
	memcpy(k6.addr, a->bytes, 16);
	return live->nrules6 && !bpf_map_lookup_elem(l->fd[PIN_RULES6], &k6, r) ? r : NULL;
}

/*
 * The prefix of the rule @id that matches @a: the shortest length at which a
 * lookup (which finds the longest rule no longer than it) still finds it.
 */
static void rule_prefix(const struct limiter *l, const struct ip_addr *a, __u32 id,
			struct ip_addr *out, unsigned int *prefix)
{
	int v4 = a->family == AF_INET, len = v4 ? 32 : 128;
	struct xdp_rl_rule_key4 k4;
	struct xdp_rl_rule_key6 k6;
	struct xdp_rl_rule probe;
	struct ip_addr m;

	*out = *a;
	*prefix = len;
	for (; len >= 0; len--) {
		m = *a;
		mask_addr(&m, len);
		k4.prefixlen = k6.prefixlen = len;
		memcpy(&k4.addr, m.bytes, 4);
		memcpy(k6.addr, m.bytes, 16);
		if (bpf_map_lookup_elem(l->fd[v4 ? PIN_RULES4 : PIN_RULES6],
					v4 ? (void *)&k4 : (void *)&k6, &probe) || probe.id != id)
			break;
		*out = m;
		*prefix = len;
	}
}

/* Fill @src's windows from @st under @lay; @rule is kept for display. */
static void source_fill(struct source *src, const struct xdp_rl_state *st,
			const struct xdp_rl_layer *lay, __u32 n, __u32 room, __u64 now)
{
	__u32 i;

	src->nlayers = n < room ? n : room;
	memcpy(src->lay, lay, src->nlayers * sizeof(*lay));
	for (i = 0; i < src->nlayers; i++) {
		src->count[i] = src->expires_in_ns[i] = 0;
		if (!st || xdp_rl_window_over(st[i].expires_gen, now, lay[i].window_ns))
			continue;
		src->count[i] = xdp_rl_count(st[i].count_gen);
		src->expires_in_ns[i] = xdp_rl_expires_ns(st[i].expires_gen) - now;
	}
}

/* A per-source entry: its key, and the layers of its rule or the global ones. */
static void source_from(struct source *src, int family, const void *key,
			const struct xdp_rl_state *st, const struct limiter *l, __u64 now,
			struct xdp_rl_rule *rbuf)
{
	const struct xdp_rl_live *live = limiter_live(l);
	const struct xdp_rl_layer *lay = live->layer;
	__u32 n = live->nlayers;

	memset(src, 0, sizeof(*src));
	src->key.family = family;
	memcpy(src->key.bytes, key, family == AF_INET ? 4 : 16);
	src->prefix = family == AF_INET ? l->cfg.fixed.v4_prefix : l->cfg.fixed.v6_prefix;
	src->rule = rule_for(l, &src->key, rbuf);
	if (src->rule && src->rule->action == XDP_RL_RULE_LIMIT &&
	    !(src->rule->flags & XDP_RL_RULE_F_SHARED)) {
		lay = src->rule->layer;
		n = src->rule->nlayers;
	}
	source_fill(src, st, lay, n, l->cfg.fixed.max_layers, now);
}

typedef int (*source_fn)(const struct source *src, void *ctx);

/*
 * Call @fn for every source in the table pinned as @id with a window still
 * open. Returns 0, 1 if @fn asked to stop, -1 if the table cannot be read
 * (said on stderr).
 */
static int foreach_source(const struct limiter *l, int id, source_fn fn, void *ctx)
{
	int family = id == PIN_SRC6 || id == PIN_AGG6 ? AF_INET6 : AF_INET;
	__u64 now = window_clock_ns(limiter_live(l)), i;
	struct xdp_rl_layers win;
	struct xdp_rl_rule rbuf;
	struct xdp_rl_slot *s;
	struct source src;
	struct table t;
	__u32 k[4];
	int r = 0;

	if (limiter_table(l, id, &t, "cannot read the sources of"))
		return -1;
	for (i = 0; i < table_nslots(&t) && !r; i++) {
		s = table_slot(&t, i);
		if (!slot_key(&t, s, k))
			continue;
		memcpy(win.layer, slot_windows(&t, s), t.layers * sizeof(win.layer[0]));
		source_from(&src, family, k, win.layer, l, now, &rbuf);
		if (source_open(&src) && fn(&src, ctx))
			r = 1;
	}
	table_unmap(&t);
	return r;
}

static int count_one(const struct source *src, void *ctx)
{
	(void)src;
	++*(__u64 *)ctx;
	return 0;
}

static const char *unit_name(const struct limiter *l)
{
	return l->cfg.fixed.bytes ? "bytes" : "packets";
}

static __u64 ms_up(__u64 ns)
{
	return (ns + 999999) / 1000000;
}

static void layers_json(struct json *j, const struct xdp_rl_layer *lay, __u32 n,
			const struct source *src)
{
	char w[32];
	__u32 i;

	json_arr(j, "layers");
	for (i = 0; i < n; i++) {
		fmt_duration(lay[i].window_ns, w, sizeof(w));
		json_obj(j, NULL);
		json_u64(j, "limit", lay[i].limit);
		json_str(j, "window", w);
		json_u64(j, "window_ns", lay[i].window_ns);
		if (src) {
			json_u64(j, "count", src->count[i]);
			json_u64(j, "expires_in_ms", ms_up(src->expires_in_ns[i]));
		}
		json_end(j);
	}
	json_end(j);
}

/* ---- status -------------------------------------------------------------- */

struct link_state {
	int attached;
	__u32 link_id, prog_id;
};

static void link_state(const struct limiter *l, struct link_state *ls)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	memset(ls, 0, sizeof(*ls));
	if (bpf_obj_get_info_by_fd(l->fd[PIN_LINK], &info, &len))
		return;
	ls->link_id = info.id;
	ls->prog_id = info.prog_id;
	ls->attached = info.xdp.ifindex != 0;
}

static void status_one(struct limiter *l, struct json *j)
{
	static const char *const full[] = { "pass", "drop", "aggregate" };
	const struct xdp_rl_live *live = limiter_live(l);
	const struct xdp_rl_fixed *f = &l->cfg.fixed;
	__u64 n4 = 0, n6 = 0;
	struct link_state ls;
	char w[32], desc[256];

	link_state(l, &ls);
	foreach_source(l, PIN_SRC4, count_one, &n4);
	foreach_source(l, PIN_SRC6, count_one, &n6);
	fmt_duration(live->layer[0].window_ns, w, sizeof(w));
	if (j) {
		json_obj(j, NULL);
		json_str(j, "interface", l->ifname);
		json_u64(j, "ifindex", l->ifindex);
		json_bool(j, "attached", ls.attached);
		json_str(j, "mode", f->xdp_mode == XDP_FLAGS_SKB_MODE ? "generic" : "native");
		json_u64(j, "link_id", ls.link_id);
		json_u64(j, "prog_id", ls.prog_id);
		json_u64(j, "limit", live->layer[0].limit);
		json_str(j, "unit", unit_name(l));
		json_str(j, "window", w);
		json_u64(j, "window_ns", live->layer[0].window_ns);
		layers_json(j, live->layer, live->nlayers, NULL);
		json_str(j, "alignment", live->flags & XDP_RL_F_ALIGNED ? "aligned" : "per-key");
		json_str(j, "clock", live->flags & XDP_RL_F_ALIGNED ? "tai" :
			 live->flags & XDP_RL_F_COARSE_CLOCK ? "monotonic-coarse" : "monotonic");
		json_bool(j, "dry_run", live->flags & XDP_RL_F_DRY_RUN);
		json_u64(j, "v4_prefix", f->v4_prefix);
		json_u64(j, "v6_prefix", f->v6_prefix);
		json_u64(j, "max_sources", f->max_sources);
		json_u64(j, "max_layers", f->max_layers);
		json_u64(j, "rules", live->nrules4 + live->nrules6);
		if (live->new_sources.limit) {
			fmt_duration(live->new_sources.window_ns, w, sizeof(w));
			json_obj(j, "new_sources");
			json_u64(j, "limit", live->new_sources.limit);
			json_str(j, "window", w);
			json_u64(j, "window_ns", live->new_sources.window_ns);
			json_str(j, "on_table_full", full[live->on_full < 3 ? live->on_full : 0]);
			json_end(j);
		} else {
			json_null(j, "new_sources");
		}
		json_u64(j, "active_sources_v4", n4);
		json_u64(j, "active_sources_v6", n6);
		json_u64(j, "loaded_at", f->loaded_at_unix);
		json_end(j);
		return;
	}
	describe_limit(live, f->bytes, desc, sizeof(desc));
	printf("%s: %s, %s mode, link %u, prog %u\n", l->ifname,
	       ls.attached ? "attached" : "DETACHED (interface gone?)",
	       f->xdp_mode == XDP_FLAGS_SKB_MODE ? "generic" : "native",
	       ls.link_id, ls.prog_id);
	printf("  limit    %s\n", desc);
	printf("  keys     IPv4 /%u, IPv6 /%u; table %llu sources per family (%u slots), "
	       "room for %u layer%s\n", f->v4_prefix, f->v6_prefix,
	       (unsigned long long)f->max_sources,
	       xdp_rl_buckets(f->max_sources) * XDP_RL_BUCKET_SLOTS, f->max_layers,
	       f->max_layers == 1 ? "" : "s");
	printf("  rules    %u (see 'xdp-rl rule list %s')\n", live->nrules4 + live->nrules6,
	       l->ifname);
	printf("  sources  %llu IPv4, %llu IPv6 with an open window\n",
	       (unsigned long long)n4, (unsigned long long)n6);
}

int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ 0 }
	};
	char ns[PATH_MAX], name[IF_NAMESIZE];
	int opt, as_json = 0, found = 0, ret = EXIT_DONE;
	const char *ifname = NULL;
	struct limiter l;
	struct dirent *d;
	struct json j;
	DIR *dir;

	while ((opt = cmd_getopt(argc, argv, "status", opts)) != -1) {
		if (opt != OPT_JSON)
			return EXIT_USAGE;
		as_json = 1;
	}
	if (argc - optind > 1)
		return usage_err("status", "status: unexpected argument '%s'", argv[optind + 1]);
	if (argc - optind == 1)
		ifname = argv[optind];
	if (cmd_prepare(NEED_BPF, "cannot show status"))
		return EXIT_FAIL;

	if (ifname) {
		if (limiter_open(ifname, &l, "cannot show status of"))
			return EXIT_FAIL;
		if (as_json) {
			json_begin(&j, stdout);
			json_obj(&j, NULL);
			json_arr(&j, "limiters");
		}
		status_one(&l, as_json ? &j : NULL);
		limiter_close(&l);
		goto done;
	}

	/* Nothing pinned yet is "no limiter"; a folder we cannot read is an error. */
	dir = NULL;
	if (state_dir(ns, sizeof(ns), 0)) {
		if (errno != ENOENT)
			return EXIT_FAIL;
	} else if (!(dir = opendir(ns)) && errno != ENOENT) {
		err("cannot list the limiters in %s: %m (run as root)", ns);
		return EXIT_FAIL;
	}
	if (as_json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_arr(&j, "limiters");
	}
	while (dir && (d = readdir(dir))) {
		unsigned int ifindex = strtoul(d->d_name, NULL, 10);

		if (!ifindex)
			continue;
		if (!if_indextoname(ifindex, name))
			snprintf(name, sizeof(name), "if%u", ifindex);
		if (limiter_open_index(ifindex, name, &l, "cannot show status of")) {
			ret = EXIT_FAIL;
			continue;
		}
		if (found++ && !as_json)
			putchar('\n');
		status_one(&l, as_json ? &j : NULL);
		limiter_close(&l);
	}
	if (dir)
		closedir(dir);
	if (!found && !as_json)
		printf("no xdp-rl limiter in this network namespace (see 'xdp-rl load --help')\n");
done:
	if (as_json) {
		json_end(&j);
		json_end(&j);
		json_finish(&j);
	}
	return ret;
}

/* ---- stats --------------------------------------------------------------- */

static const char *const stat_names[XDP_RL_STAT_MAX] = {
	[XDP_RL_STAT_PASSED] = "passed",
	[XDP_RL_STAT_DROPPED] = "dropped",
	[XDP_RL_STAT_WOULD_DROP] = "would_drop",
	[XDP_RL_STAT_NOT_IP] = "not_ip",
	[XDP_RL_STAT_MALFORMED] = "malformed",
	[XDP_RL_STAT_NEW_WINDOWS] = "new_windows",
	[XDP_RL_STAT_TABLE_ERRORS] = "table_errors",
	[XDP_RL_STAT_PASSED_BYTES] = "passed_bytes",
	[XDP_RL_STAT_DROPPED_BYTES] = "dropped_bytes",
	[XDP_RL_STAT_INSERTS] = "inserts",
	[XDP_RL_STAT_REFUSED_INSERTS] = "refused_inserts",
	[XDP_RL_STAT_AGGREGATED] = "aggregated",
	[XDP_RL_STAT_ALLOWED] = "allowed",
	[XDP_RL_STAT_DENIED] = "denied",
	[XDP_RL_STAT_EVICTIONS] = "evictions",
};

static int stats_read(const struct limiter *l, struct xdp_rl_stats *sum)
{
	int ncpu = libbpf_num_possible_cpus(), c, i;
	struct xdp_rl_stats *per;
	__u32 zero = 0;

	if (ncpu <= 0)
		return -1;
	per = calloc(ncpu, sizeof(*per));
	if (!per)
		return -1;
	if (bpf_map_lookup_elem(l->fd[PIN_STATS], &zero, per)) {
		free(per);
		return -1;
	}
	memset(sum, 0, sizeof(*sum));
	for (c = 0; c < ncpu; c++)
		for (i = 0; i < XDP_RL_STAT_MAX; i++)
			sum->c[i] += per[c].c[i];
	free(per);
	return 0;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void stats_print(const struct limiter *l, const struct xdp_rl_stats *s,
			const struct xdp_rl_stats *prev, double secs, int as_json)
{
	struct json j;
	char label[32];
	int i;

	if (as_json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_str(&j, "interface", l->ifname);
		for (i = 0; i < XDP_RL_STAT_MAX; i++)
			json_u64(&j, stat_names[i], s->c[i]);
		if (prev) {
			json_obj(&j, "per_second");
			for (i = 0; i < XDP_RL_STAT_MAX; i++)
				json_u64(&j, stat_names[i],
					 (__u64)((s->c[i] - prev->c[i]) / secs + 0.5));
			json_end(&j);
		}
		json_end(&j);
		json_finish(&j);
		return;
	}
	printf("%s:\n", l->ifname);
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
			       (unsigned long long)s->c[i == XDP_RL_STAT_PASSED ?
					XDP_RL_STAT_PASSED_BYTES : XDP_RL_STAT_DROPPED_BYTES]);
		if (prev)
			printf("   %12.0f/s", (s->c[i] - prev->c[i]) / secs);
		putchar('\n');
	}
	fflush(stdout);
}

int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "watch", required_argument, NULL, OPT_WATCH },
		{ 0 }
	};
	struct xdp_rl_stats s, prev;
	int opt, as_json = 0;
	const char *ifname, *why;
	__u64 watch = 0;
	struct limiter l;

	while ((opt = cmd_getopt(argc, argv, "stats", opts)) != -1) {
		if (opt == OPT_JSON) {
			as_json = 1;
		} else if (opt == OPT_WATCH) {
			why = parse_u64(optarg, 1, 86400, &watch);
			if (why)
				return usage_err("stats", "stats: invalid --watch '%s': %s",
						 optarg, why);
		} else {
			return EXIT_USAGE;
		}
	}
	if (cmd_positional(argc, argv, "stats", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (argc - optind > 1)
		return usage_err("stats", "stats: unexpected argument '%s'", argv[optind + 1]);
	if (cmd_prepare(NEED_BPF, "cannot read statistics") ||
	    limiter_open(ifname, &l, "cannot read statistics of"))
		return EXIT_FAIL;
	if (stats_read(&l, &s)) {
		err("cannot read statistics of '%s': %m", ifname);
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
			err("cannot read statistics of '%s': xdp-rl was unloaded from it", ifname);
			limiter_close(&l);
			return EXIT_FAIL;
		}
		if (stats_read(&l, &s) || limiter_read_config(&l)) {
			err("cannot read statistics of '%s': %m (was it unloaded?)", ifname);
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

/* ---- get ----------------------------------------------------------------- */

static void source_print(const struct limiter *l, const struct source *src,
			 const char *asked, struct json *j)
{
	int dry = limiter_live(l)->flags & XDP_RL_F_DRY_RUN;
	/* With one layer, what passed and what did not follow from the count. */
	int split = !l->cfg.fixed.bytes && src->nlayers == 1;
	__u64 passed = src->count[0] < src->lay[0].limit ? src->count[0] : src->lay[0].limit;
	char key[INET6_ADDRSTRLEN + 8], w[32];
	__u32 i;

	fmt_prefix(&src->key, src->prefix, key, sizeof(key));
	if (j) {
		json_obj(j, NULL);
		if (asked)
			json_str(j, "address", asked);
		json_str(j, "key", key);
		if (src->kind)
			json_str(j, "kind", src->kind);
		json_u64(j, "count", src->count[0]);
		json_u64(j, "limit", src->lay[0].limit);
		json_str(j, "unit", unit_name(l));
		json_u64(j, "expires_in_ms", ms_up(src->expires_in_ns[0]));
		if (split) {
			json_u64(j, "passed", passed);
			json_u64(j, dry ? "would_drop" : "dropped", src->count[0] - passed);
		}
		layers_json(j, src->lay, src->nlayers, src);
		json_end(j);
		return;
	}
	printf("%-24s", key);
	for (i = 0; i < src->nlayers; i++) {
		fmt_duration(src->lay[i].window_ns, w, sizeof(w));
		if (src->nlayers > 1)
			printf("%s %llu of %llu/%s", i ? "," : "",
			       (unsigned long long)src->count[i],
			       (unsigned long long)src->lay[i].limit, w);
		else
			printf(" %12llu %s", (unsigned long long)src->count[0], unit_name(l));
		if (split)
			printf(" (%llu passed, %llu %s)", (unsigned long long)passed,
			       (unsigned long long)(src->count[0] - passed),
			       dry ? "would drop" : "dropped");
		if (src->count[i])
			printf(", %sends in %llu ms", src->nlayers > 1 ? "" : "window ",
			       (unsigned long long)ms_up(src->expires_in_ns[i]));
		else if (src->nlayers == 1)
			printf(", no open window");
	}
	if (src->kind)
		printf("  (%s)", src->kind);
	putchar('\n');
}

/* The key @a maps to under the limiter's prefixes, and the table holding it. */
static int source_key(const struct limiter *l, struct ip_addr *a, __u32 k[4])
{
	mask_addr(a, a->family == AF_INET ? l->cfg.fixed.v4_prefix : l->cfg.fixed.v6_prefix);
	memset(k, 0, 16);
	memcpy(k, a->bytes, a->family == AF_INET ? 4 : 16);
	return a->family == AF_INET ? PIN_SRC4 : PIN_SRC6;
}

int cmd_get(int argc, char **argv)
{
	static const char *const actions[] = { "limit", "allow", "deny" };
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ 0 }
	};
	const char *ifname, *addr, *why;
	const struct xdp_rl_rule *rule;
	struct xdp_rl_layers st;
	struct xdp_rl_rule rbuf;
	struct xdp_rl_slot *slot;
	struct ip_addr a, key;
	struct source src;
	struct limiter l;
	struct table t;
	int opt, as_json = 0, id, r;
	struct json j;
	__u32 k[4];
	__u64 now;

	while ((opt = cmd_getopt(argc, argv, "get", opts)) != -1) {
		if (opt != OPT_JSON)
			return EXIT_USAGE;
		as_json = 1;
	}
	if (cmd_positional(argc, argv, "get", "IFACE", 0, &ifname) ||
	    cmd_positional(argc, argv, "get", "ADDRESS", 1, &addr))
		return EXIT_USAGE;
	if (argc - optind > 2)
		return usage_err("get", "get: unexpected argument '%s'", argv[optind + 2]);
	why = parse_addr(addr, &a);
	if (why)
		return usage_err("get", "get: invalid ADDRESS '%s': %s", addr, why);
	if (cmd_prepare(NEED_BPF, "cannot read a source") ||
	    limiter_open(ifname, &l, "cannot read a source on"))
		return EXIT_FAIL;
	now = window_clock_ns(limiter_live(&l));
	rule = rule_for(&l, &a, &rbuf);

	key = a;
	memset(&st, 0, sizeof(st));
	if (rule && rule->action == XDP_RL_RULE_LIMIT && (rule->flags & XDP_RL_RULE_F_SHARED)) {
		/* The rule's one budget: shown under the rule's prefix. */
		r = bpf_map_lookup_elem(l.fd[PIN_SHARED], &rule->id, &st);
		memset(&src, 0, sizeof(src));
		rule_prefix(&l, &a, rule->id, &src.key, &src.prefix);
		src.kind = "shared";
		src.rule = rule;
		source_fill(&src, r ? NULL : st.layer, rule->layer, rule->nlayers,
			    XDP_RL_MAX_LAYERS, now);
	} else {
		id = source_key(&l, &key, k);
		if (limiter_table(&l, id, &t, "cannot read a source on")) {
			limiter_close(&l);
			return EXIT_FAIL;
		}
		slot = table_find(&t, k);
		if (slot)
			memcpy(st.layer, slot_windows(&t, slot), t.layers * sizeof(st.layer[0]));
		table_unmap(&t);
		source_from(&src, key.family, key.bytes, slot ? st.layer : NULL, &l, now, &rbuf);
	}

	if (rule && rule->action != XDP_RL_RULE_LIMIT) {
		if (as_json) {
			json_begin(&j, stdout);
			json_obj(&j, NULL);
			json_str(&j, "address", addr);
			json_str(&j, "rule", actions[rule->action]);
			json_u64(&j, "count", 0);
			json_u64(&j, "expires_in_ms", 0);
			json_end(&j);
			json_finish(&j);
		} else {
			printf("%s: %s by a rule (see 'xdp-rl rule list %s')\n", addr,
			       rule->action == XDP_RL_RULE_ALLOW ? "allowed" : "denied", ifname);
		}
		limiter_close(&l);
		return EXIT_DONE;
	}
	if (as_json)
		json_begin(&j, stdout);
	source_print(&l, &src, addr, as_json ? &j : NULL);
	if (as_json)
		json_finish(&j);
	limiter_close(&l);
	return EXIT_DONE;
}

/* ---- top ----------------------------------------------------------------- */

struct collect {
	struct source *v;
	size_t n, cap;
};

static int collect_one(const struct source *src, void *ctx)
{
	struct collect *c = ctx;
	struct source *v;

	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 1024;
		v = realloc(c->v, c->cap * sizeof(*v));
		if (!v)
			return 1;
		c->v = v;
	}
	c->v[c->n] = *src;
	c->v[c->n++].rule = NULL;	/* points at a buffer that is reused */
	return 0;
}

static int by_count_desc(const void *a, const void *b)
{
	const struct source *x = a, *y = b;

	return x->count[0] < y->count[0] ? 1 : x->count[0] > y->count[0] ? -1 : 0;
}

int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ 0 }
	};
	struct collect c = {};
	const char *ifname, *why;
	__u64 count = 10;
	struct limiter l;
	int opt, as_json = 0, r;
	struct json j;
	size_t i;

	while ((opt = cmd_getopt(argc, argv, "top", opts)) != -1) {
		if (opt == OPT_JSON) {
			as_json = 1;
		} else if (opt == OPT_COUNT) {
			why = parse_u64(optarg, 1, MAX_SOURCES_MAX * 2, &count);
			if (why)
				return usage_err("top", "top: invalid --count '%s': %s", optarg, why);
		} else {
			return EXIT_USAGE;
		}
	}
	if (cmd_positional(argc, argv, "top", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (argc - optind > 1)
		return usage_err("top", "top: unexpected argument '%s'", argv[optind + 1]);
	if (cmd_prepare(NEED_BPF, "cannot list sources") ||
	    limiter_open(ifname, &l, "cannot list sources on"))
		return EXIT_FAIL;

	r = foreach_source(&l, PIN_SRC4, collect_one, &c);
	if (!r)
		r = foreach_source(&l, PIN_SRC6, collect_one, &c);
	if (r) {
		if (r > 0)
			err("cannot list sources on '%s': out of memory", ifname);
		free(c.v);
		limiter_close(&l);
		return EXIT_FAIL;
	}
	qsort(c.v, c.n, sizeof(*c.v), by_count_desc);
	if (count > c.n)
		count = c.n;

	if (as_json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_str(&j, "interface", ifname);
		json_u64(&j, "active_sources", c.n);
		json_arr(&j, "sources");
		for (i = 0; i < count; i++)
			source_print(&l, &c.v[i], NULL, &j);
		json_end(&j);
		json_end(&j);
		json_finish(&j);
	} else {
		printf("%s: %zu sources with an open window%s\n", ifname, c.n,
		       c.n ? ", highest count first:" : "");
		for (i = 0; i < count; i++)
			source_print(&l, &c.v[i], NULL, NULL);
	}
	free(c.v);
	limiter_close(&l);
	return EXIT_DONE;
}

/* ---- reset --------------------------------------------------------------- */

/* Close the windows of every source in the table pinned as @id; how many had one open. */
static int forget_all(const struct limiter *l, int id, __u64 *n)
{
	__u64 now = window_clock_ns(limiter_live(l)), i;
	struct xdp_rl_slot *s;
	struct table t;
	__u32 k[4], w;

	if (limiter_table(l, id, &t, "cannot reset sources on"))
		return -1;
	for (i = 0; i < table_nslots(&t); i++) {
		s = table_slot(&t, i);
		if (!slot_key(&t, s, k))
			continue;
		for (w = 0; w < t.layers; w++)
			if (xdp_rl_expires_ns(slot_windows(&t, s)[w].expires_gen) > now)
				break;
		if (w < t.layers)
			++*n;
		slot_close_windows(&t, s);
	}
	table_unmap(&t);
	return 0;
}

int cmd_reset(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "all", no_argument, NULL, OPT_ALL },
		{ 0 }
	};
	const char *ifname, *addr = NULL, *why;
	char key[INET6_ADDRSTRLEN + 8];
	struct xdp_rl_slot *slot;
	int opt, all = 0, id;
	struct ip_addr a;
	struct limiter l;
	struct table t;
	__u64 n = 0;
	__u32 k[4];

	while ((opt = cmd_getopt(argc, argv, "reset", opts)) != -1) {
		if (opt != OPT_ALL)
			return EXIT_USAGE;
		all = 1;
	}
	if (cmd_positional(argc, argv, "reset", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (argc - optind > 1)
		addr = argv[optind + 1];
	if (argc - optind > 2)
		return usage_err("reset", "reset: unexpected argument '%s'", argv[optind + 2]);
	if (!addr == !all)
		return usage_err("reset", "reset: give either an ADDRESS or --all");
	if (addr && (why = parse_addr(addr, &a)))
		return usage_err("reset", "reset: invalid ADDRESS '%s': %s", addr, why);
	if (cmd_prepare(NEED_BPF, "cannot reset") || state_lock() < 0 ||
	    limiter_open(ifname, &l, "cannot reset sources on"))
		return EXIT_FAIL;

	if (all) {
		if (forget_all(&l, PIN_SRC4, &n) || forget_all(&l, PIN_SRC6, &n)) {
			limiter_close(&l);
			return EXIT_FAIL;
		}
		printf("xdp-rl: %s: forgot %llu sources\n", ifname, (unsigned long long)n);
	} else {
		id = source_key(&l, &a, k);
		fmt_prefix(&a, a.family == AF_INET ? l.cfg.fixed.v4_prefix :
			   l.cfg.fixed.v6_prefix, key, sizeof(key));
		if (limiter_table(&l, id, &t, "cannot reset sources on")) {
			limiter_close(&l);
			return EXIT_FAIL;
		}
		slot = table_find(&t, k);
		if (slot)
			slot_close_windows(&t, slot);
		table_unmap(&t);
		printf("xdp-rl: %s: %s %s\n", ifname, slot ? "forgot" : "no window to forget for",
		       key);
	}
	limiter_close(&l);
	return EXIT_DONE;
}
