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
	/*
	 * Whether every open window began after the limits last changed: only
	 * then do a count and the limit say what passed and what was dropped.
	 */
	int same_limits;
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

/*
 * Fill @src's windows from @st under @lay; @since is when the limits last
 * changed (struct xdp_rl_live).
 */
static void source_fill(struct source *src, const struct xdp_rl_state *st,
			const struct xdp_rl_layer *lay, __u32 n, __u32 room, __u64 now,
			__u64 since)
{
	__u64 end;
	__u32 i;

	src->nlayers = n < room ? n : room;
	src->same_limits = 1;
	memcpy(src->lay, lay, src->nlayers * sizeof(*lay));
	for (i = 0; i < src->nlayers; i++) {
		src->count[i] = src->expires_in_ns[i] = 0;
		if (!st || xdp_rl_window_over(st[i].expires_gen, now, lay[i].window_ns))
			continue;
		end = xdp_rl_expires_ns(st[i].expires_gen);
		src->count[i] = xdp_rl_count(st[i].count_gen);
		src->expires_in_ns[i] = end - now;
		/* A window that began before a change counted under other limits. */
		if (end - since < lay[i].window_ns)
			src->same_limits = 0;
	}
}

/*
 * An entry of the table pinned as @id: a source (its key, and the layers of
 * its rule or the global ones), or in an aggregate table the /24 or /48
 * budget that new sources refused a slot share (--on-table-full aggregate).
 * The rule is the one for @asked, the address as the datapath looks it up
 * (a key is masked; the sources in it may match other rules), or for the
 * key if NULL; it is copied into @rbuf.
 */
static void source_from(struct source *src, int id, const void *key,
			const struct xdp_rl_state *st, const struct limiter *l, __u64 now,
			const struct ip_addr *asked, struct xdp_rl_rule *rbuf)
{
	const struct xdp_rl_live *live = limiter_live(l);
	const struct xdp_rl_layer *lay = live->layer;
	int family = id == PIN_SRC6 || id == PIN_AGG6 ? AF_INET6 : AF_INET;
	__u32 n = live->nlayers;

	memset(src, 0, sizeof(*src));
	src->key.family = family;
	memcpy(src->key.bytes, key, family == AF_INET ? 4 : 16);
	if (id == PIN_AGG4 || id == PIN_AGG6) {
		src->kind = "aggregate";
		src->prefix = id == PIN_AGG4 ? XDP_RL_AGG4_PREFIX : XDP_RL_AGG6_PREFIX;
		source_fill(src, st, lay, n, l->cfg.fixed.max_layers, now,
			    live->limits_since_ns);
		return;
	}
	src->prefix = family == AF_INET ? l->cfg.fixed.v4_prefix : l->cfg.fixed.v6_prefix;
	src->rule = rule_for(l, asked ? asked : &src->key, rbuf);
	if (src->rule && src->rule->action == XDP_RL_RULE_LIMIT &&
	    !(src->rule->flags & XDP_RL_RULE_F_SHARED)) {
		lay = src->rule->layer;
		n = src->rule->nlayers;
	}
	source_fill(src, st, lay, n, l->cfg.fixed.max_layers, now, live->limits_since_ns);
}

typedef int (*source_fn)(const struct source *src, void *ctx);

/*
 * Call @fn for every entry of the table pinned as @id with a window still
 * open. Returns 0, 1 if @fn asked to stop, -1 if the table cannot be read
 * (said on stderr).
 */
static int foreach_source(const struct limiter *l, int id, source_fn fn, void *ctx)
{
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
		source_from(&src, id, k, win.layer, l, now, NULL, &rbuf);
		if (source_open(&src) && fn(&src, ctx))
			r = 1;
	}
	table_unmap(&t);
	return r;
}

/* The budget of the --shared rule @r, read into @src; 0 if it has none. */
static int shared_read(const struct limiter *l, const struct rule_spec *r, struct source *src)
{
	struct xdp_rl_layers st;

	if (r->rule.action != XDP_RL_RULE_LIMIT || !(r->rule.flags & XDP_RL_RULE_F_SHARED) ||
	    bpf_map_lookup_elem(l->fd[PIN_SHARED], &r->rule.id, &st))
		return 0;
	memset(src, 0, sizeof(*src));
	src->key = r->addr;
	src->prefix = r->prefix;
	src->kind = "shared";
	source_fill(src, st.layer, r->rule.layer, r->rule.nlayers, XDP_RL_MAX_LAYERS,
		    window_clock_ns(limiter_live(l)), limiter_live(l)->limits_since_ns);
	return 1;
}

struct shared_walk {
	const struct limiter *l;
	source_fn fn;
	void *ctx;
};

static int shared_one(const struct rule_spec *r, void *ctx)
{
	struct shared_walk *w = ctx;
	struct source src;

	return shared_read(w->l, r, &src) && source_open(&src) && w->fn(&src, w->ctx);
}

/*
 * Call @fn for every window a limiter keeps open: sources, /24 and /48
 * aggregates, --shared rules' budgets (@all), or sources only. As
 * foreach_source returns.
 */
static int foreach_window(const struct limiter *l, int all, source_fn fn, void *ctx)
{
	static const int tables[] = { PIN_SRC4, PIN_SRC6, PIN_AGG4, PIN_AGG6 };
	struct shared_walk w = { l, fn, ctx };
	size_t i;
	int r;

	for (i = 0; i < (all ? 4 : 2); i++) {
		r = foreach_source(l, tables[i], fn, ctx);
		if (r)
			return r;
	}
	return all ? rules_foreach(l->fd, shared_one, &w) : 0;
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
	const char *clock = live->flags & XDP_RL_F_ALIGNED ? "tai" :
			    live->flags & XDP_RL_F_COARSE_CLOCK ? "monotonic-coarse" : "monotonic";
	struct link_state ls;
	char w[32], desc[256];

	link_state(l, &ls);
	/*
	 * Detached: its interface is gone, and another may have its index
	 * now; it goes by the name it was loaded on (`unload NAME` takes it).
	 */
	if (!ls.attached)
		snprintf(l->ifname, sizeof(l->ifname), "%s", f->ifname);
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
		json_str(j, "clock", clock);
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
	if (!ls.attached)
		printf("%s: DETACHED: the interface is gone (remove it with 'xdp-rl unload %s')\n",
		       l->ifname, l->ifname);
	else
		printf("%s: attached, %s mode, link %u, prog %u\n", l->ifname,
		       f->xdp_mode == XDP_FLAGS_SKB_MODE ? "generic" : "native",
		       ls.link_id, ls.prog_id);
	printf("  limit    %s\n", desc);
	printf("  clock    %s\n", clock);
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

		if (!ifindex || !limiter_here(ifindex))
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
	/*
	 * With one layer, in packets, under the limits the window was opened
	 * with, what passed and what did not follow from the count.
	 */
	int split = !l->cfg.fixed.bytes && src->nlayers == 1 && src->same_limits;
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

/* The /24 or /48 aggregate window @a is charged to when refused a slot. */
static int agg_key(const struct ip_addr *a, struct ip_addr *agg, __u32 k[4])
{
	*agg = *a;
	mask_addr(agg, a->family == AF_INET ? XDP_RL_AGG4_PREFIX : XDP_RL_AGG6_PREFIX);
	memset(k, 0, 16);
	memcpy(k, agg->bytes, a->family == AF_INET ? 4 : 16);
	return a->family == AF_INET ? PIN_AGG4 : PIN_AGG6;
}

/*
 * The windows of @k in the table pinned as @id, copied to @w (room for
 * XDP_RL_MAX_LAYERS); with @forget, closed as well (`reset`). 1 if it has
 * a slot, 0 if not, -1 if the table cannot be read (said on stderr).
 */
static int table_read(const struct limiter *l, int id, const __u32 k[4],
		      struct xdp_rl_state *w, int forget)
{
	struct xdp_rl_slot *s;
	struct table t;

	if (limiter_table(l, id, &t, forget ? "cannot reset sources on" : "cannot read a source on"))
		return -1;
	s = table_find(&t, k);
	if (s) {
		memcpy(w, slot_windows(&t, s), t.layers * sizeof(*w));
		if (forget)
			slot_close_windows(&t, s);
		/* The slot may have passed to another key between the find and the close. */
		if (forget && !table_find(&t, k) && s->tag)
			err("warning: on '%s', the slot passed to another source as it was reset; "
			    "that source's window restarted too", l->ifname);
	}
	table_unmap(&t);
	return s != NULL;
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
	struct xdp_rl_rule sbuf;
	struct ip_addr a, key;
	struct source src, agg;
	struct limiter l;
	int opt, as_json = 0, id, r, found;
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
			    XDP_RL_MAX_LAYERS, now, limiter_live(&l)->limits_since_ns);
	} else {
		id = source_key(&l, &key, k);
		found = table_read(&l, id, k, st.layer, 0);
		if (found >= 0)
			source_from(&src, id, key.bytes, found ? st.layer : NULL, &l, now, &a,
				    &sbuf);
		if (found >= 0 && !source_open(&src)) {
			/* Refused a slot by --new-sources: charged to its /24 or /48. */
			id = agg_key(&a, &key, k);
			found = table_read(&l, id, k, st.layer, 0);
			if (found > 0) {
				source_from(&agg, id, key.bytes, st.layer, &l, now, NULL, &sbuf);
				if (source_open(&agg))
					src = agg;
			}
		}
		if (found < 0) {
			limiter_close(&l);
			return EXIT_FAIL;
		}
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
	size_t i, sources = 0;
	struct json j;

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

	r = foreach_window(&l, 1, collect_one, &c);
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
	for (i = 0; i < c.n; i++)
		sources += !c.v[i].kind;

	if (as_json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_str(&j, "interface", ifname);
		json_u64(&j, "active_sources", sources);
		json_u64(&j, "open_windows", c.n);	/* with aggregates and shared budgets */
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
		printf("%s\n", c.n ? "; highest count first:" : "");
		for (i = 0; i < count; i++)
			source_print(&l, &c.v[i], NULL, NULL);
	}
	free(c.v);
	limiter_close(&l);
	return EXIT_DONE;
}

/* ---- reset --------------------------------------------------------------- */

/* Whether any window of @w (@n of them) is open at @now. */
static int any_open(const struct xdp_rl_state *w, __u32 n, __u64 now)
{
	__u32 i;

	for (i = 0; i < n; i++)
		if (xdp_rl_expires_ns(w[i].expires_gen) > now)
			return 1;
	return 0;
}

/* Close the windows of every entry of the table pinned as @id; count those open. */
static int forget_table(const struct limiter *l, int id, __u64 *n)
{
	__u64 now = window_clock_ns(limiter_live(l)), i;
	struct xdp_rl_slot *s;
	struct table t;
	__u32 k[4];

	if (limiter_table(l, id, &t, "cannot reset sources on"))
		return -1;
	for (i = 0; i < table_nslots(&t); i++) {
		s = table_slot(&t, i);
		if (!slot_key(&t, s, k))
			continue;
		*n += any_open(slot_windows(&t, s), t.layers, now);
		slot_close_windows(&t, s);
	}
	table_unmap(&t);
	return 0;
}

/*
 * Start the budget of the --shared rule @r afresh. Not in place, as the
 * tables are (the datapath's atomics may race the write): what a packet
 * charges meanwhile is lost, as when a reset comes a moment later.
 */
static int shared_forget(const struct limiter *l, const struct rule_spec *r, __u64 *n)
{
	struct xdp_rl_layers zero = {};
	struct source src;

	if (!shared_read(l, r, &src))
		return 0;
	*n += source_open(&src);
	return bpf_map_update_elem(l->fd[PIN_SHARED], &r->rule.id, &zero, BPF_EXIST) ? -1 : 0;
}

struct forget_walk {
	const struct limiter *l;
	__u64 n;
	int err;
};

static int shared_forget_one(const struct rule_spec *r, void *ctx)
{
	struct forget_walk *w = ctx;

	if (shared_forget(w->l, r, &w->n))
		w->err = errno;
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
	const struct xdp_rl_rule *rule;
	struct forget_walk fw = {};
	struct xdp_rl_layers w;
	struct xdp_rl_rule rbuf;
	struct ip_addr a, masked;
	int opt, all = 0, id, found;
	struct rule_spec rs;
	struct limiter l;
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
		/* Sources, the /24 and /48 aggregates, and --shared rules' budgets. */
		fw.l = &l;
		if (forget_table(&l, PIN_SRC4, &fw.n) || forget_table(&l, PIN_SRC6, &fw.n) ||
		    forget_table(&l, PIN_AGG4, &fw.n) || forget_table(&l, PIN_AGG6, &fw.n)) {
			limiter_close(&l);
			return EXIT_FAIL;
		}
		rules_foreach(l.fd, shared_forget_one, &fw);
		if (fw.err) {
			errno = fw.err;
			err("cannot reset the shared budgets on '%s': %m", ifname);
			limiter_close(&l);
			return EXIT_FAIL;
		}
		printf("xdp-rl: %s: forgot %llu window%s\n", ifname, (unsigned long long)fw.n,
		       fw.n == 1 ? "" : "s");
		limiter_close(&l);
		return EXIT_DONE;
	}

	/* The window that limits ADDRESS: a --shared rule's, its own, or its aggregate. */
	rule = rule_for(&l, &a, &rbuf);
	if (rule && rule->action == XDP_RL_RULE_LIMIT && (rule->flags & XDP_RL_RULE_F_SHARED)) {
		memset(&rs, 0, sizeof(rs));
		rs.rule = *rule;
		rule_prefix(&l, &a, rule->id, &rs.addr, &rs.prefix);
		fmt_prefix(&rs.addr, rs.prefix, key, sizeof(key));
		if (shared_forget(&l, &rs, &n)) {
			err("cannot reset the shared budget of %s on '%s': %m", key, ifname);
			limiter_close(&l);
			return EXIT_FAIL;
		}
		printf("xdp-rl: %s: forgot the shared budget of %s (every source in it)\n",
		       ifname, key);
		limiter_close(&l);
		return EXIT_DONE;
	}
	masked = a;
	id = source_key(&l, &masked, k);
	fmt_prefix(&masked, a.family == AF_INET ? l.cfg.fixed.v4_prefix : l.cfg.fixed.v6_prefix,
		   key, sizeof(key));
	found = table_read(&l, id, k, w.layer, 1);
	if (found > 0) {
		printf("xdp-rl: %s: forgot %s\n", ifname, key);
	} else if (!found) {
		/* No slot of its own: it may be charged to its /24 or /48. */
		id = agg_key(&a, &masked, k);
		found = table_read(&l, id, k, w.layer, 1);
		fmt_prefix(&masked, a.family == AF_INET ? XDP_RL_AGG4_PREFIX : XDP_RL_AGG6_PREFIX,
			   key, sizeof(key));
		if (found > 0)
			printf("xdp-rl: %s: forgot the aggregate window of %s (every source in "
			       "it without a slot of its own)\n", ifname, key);
		else if (!found)
			printf("xdp-rl: %s: no window to forget for %s\n", ifname, addr);
	}
	if (found < 0) {
		limiter_close(&l);
		return EXIT_FAIL;
	}
	limiter_close(&l);
	return EXIT_DONE;
}
