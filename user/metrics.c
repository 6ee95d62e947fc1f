// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* metrics.c - the Prometheus text exposition of this namespace's limiters (see metrics.h). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpffs.h"
#include "fleet.h"
#include "inventory.h"
#include "limiter.h"
#include "live.h"
#include "lists.h"
#include "log.h"
#include "metrics.h"
#include "options.h"
#include "rules.h"
#include "settings.h"
#include "sources.h"
#include "stats.h"
#include "vec.h"

#define PREFIX "xdp_rl_"

/* clang-format off */
#define STAT_METRIC(id, name, help, metric) [XDP_RL_STAT_##id] = metric,
static const char *const stat_metric[XDP_RL_STAT_MAX] = { XDP_RL_STATS(STAT_METRIC) };
#undef STAT_METRIC
/* clang-format on */

/* What a rule matched and dropped (struct xdp_rl_rule_hits), each a counter. */
static const struct {
	const char *name, *help, *list_help;
	size_t off;
} hit_metrics[] = {
	{ "rule_matched_packets", "Packets that matched the rule (the longest prefix that did)",
	  "Packets a listed prefix judged", offsetof(struct xdp_rl_rule_hits, packets) },
	{ "rule_dropped_packets", "Packets that matched the rule and were dropped",
	  "Packets a listed prefix judged and dropped",
	  offsetof(struct xdp_rl_rule_hits, dropped) },
	{ "rule_would_drop_packets",
	  "Packets that matched the rule and were passed by --dry-run, that it would have dropped",
	  "Packets a listed prefix judged and --dry-run passed, that it would have dropped",
	  offsetof(struct xdp_rl_rule_hits, would_drop) },
};

struct mrule {
	char prefix[INET6_ADDRSTRLEN + 8];
	int v6;
	struct xdp_rl_rule rule;
	struct xdp_rl_rule_hits hits;
};

/* One limiter, read whole before anything is written. */
struct mlim {
	char ifname[IF_NAMESIZE];
	struct xdp_rl_config cfg;
	struct xdp_rl_stats st;
	__u64 open[2]; /* sources with an open window: IPv4, IPv6 */
	__u64 over[2]; /* ... of them, over a limit in it */
	__u64 bans[2]; /* ... of them, under a ban (--ban) */
	__u64 memory;
	struct mrule *rules;
	size_t nrules, cap;
	struct xdp_rl_fleet fleet; /* the fleet agent's, if one ever ran (started_unix_ns) */
	int fleet_alive;
	struct xdp_rl_list_meta lists;
	struct xdp_rl_rule_hits list_hits[LIST_KINDS];
};

struct mset {
	struct mlim *v;
	size_t n, cap;
};

static const char *const families[2] = { "ipv4", "ipv6" };

/* ---- reading ---------------------------------------------------------------- */

static int collect_rule(const struct rule_spec *r, void *ctx)
{
	struct mlim *m = ((void **)ctx)[0];
	const struct limiter *l = ((void **)ctx)[1];
	struct mrule *v;

	if (vec_room(m->rules, m->nrules, m->cap, 1, 16))
		return 1;
	v = &m->rules[m->nrules];
	memset(v, 0, sizeof(*v));
	fmt_prefix(&r->addr, r->prefix, v->prefix, sizeof(v->prefix));
	v->v6 = r->addr.family == AF_INET6;
	v->rule = r->rule;
	if (rule_hits_read(l, r->rule.id, &v->hits))
		memset(&v->hits, 0, sizeof(v->hits));
	m->nrules++;
	return 0;
}

/*
 * Sources with an open window (or a ban in force), of them those over a
 * limit in it (a window's count past the limit: the packet that took it
 * there was an over-limit event), and those under a ban, in the one walk
 * of the table (sources.h).
 */
struct open_over {
	__u64 open, over, banned;
};

static int open_over_one(const struct source *src, void *ctx)
{
	struct open_over *n = ctx;
	__u32 i;

	n->open++;
	n->banned += source_banned(src);
	for (i = 0; i < src->nlayers; i++)
		if (xdp_rl_is_rate(&src->lay[i]) ? src->count[i] && !src->tokens[i] :
						   src->count[i] > src->lay[i].limit) {
			n->over++;
			break;
		}
	return 0;
}

/* Whether @l's link is attached to its interface now. */
static int attached(const struct limiter *l)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info), prog, on;

	if (l->cfg.fixed.attach == XDP_RL_ATTACH_SHARED)
		return !limiter_attach_state(l->dir, &prog, &on) && on == l->ifindex;
	memset(&info, 0, sizeof(info));
	return !bpf_obj_get_info_by_fd(l->fd[PIN_LINK], &info, &len) &&
	       info.xdp.ifindex == l->ifindex;
}

/* Read @l into a new entry of @s: 0, 1 if it is left out (detached), -1 on failure (said). */
static int collect(struct mset *s, const struct limiter *l)
{
	void *ctx[2];
	struct mlim *m;
	int k;

	if (!attached(l))
		return 1;
	if (vec_room(s->v, s->n, s->cap, 1, 4))
		return -1;
	m = &s->v[s->n];
	memset(m, 0, sizeof(*m));
	snprintf(m->ifname, sizeof(m->ifname), "%s", l->ifname);
	m->cfg = l->cfg;
	if (stats_read(l, &m->st)) {
		log_err("cannot read the statistics of '%s': %m", l->ifname);
		return -1;
	}
	for (k = 0; k < 2; k++) {
		struct open_over n = { 0, 0, 0 };

		foreach_source(l, k ? PIN_SRC6 : PIN_SRC4, open_over_one, &n);
		m->open[k] = n.open;
		m->over[k] = n.over;
		m->bans[k] = n.banned;
	}
	/* What sources.c keeps of this limiter: the next one may be at the same address. */
	drops_forget();
	m->memory = maps_memory(l->fd, NULL);
	if (fleet_status_read(l, &m->fleet))
		memset(&m->fleet, 0, sizeof(m->fleet));
	m->fleet_alive = fleet_agent_alive(&m->fleet);
	if (lists_meta(l, &m->lists))
		memset(&m->lists, 0, sizeof(m->lists));
	for (k = 0; k < LIST_KINDS; k++)
		if (rule_hits_read(l, k == LIST_DENY ? XDP_RL_LIST_DENY_ID : XDP_RL_LIST_ALLOW_ID,
				   &m->list_hits[k]))
			memset(&m->list_hits[k], 0, sizeof(m->list_hits[k]));
	ctx[0] = m;
	ctx[1] = (void *)l;
	if (rules_foreach(l->fd, collect_rule, ctx)) {
		free(m->rules);
		log_err("cannot read the rules of '%s': %m", l->ifname);
		return -1;
	}
	s->n++;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct mlim *)a)->ifname, ((const struct mlim *)b)->ifname);
}

/* Every limiter attached in this namespace, or the one on @ifname. */
static int collect_all(struct mset *s, const char *ifname)
{
	char ns[PATH_MAX], name[IF_NAMESIZE];
	struct limiter l;
	struct dirent *d;
	DIR *dir = NULL;
	int ret = 0, r;

	if (ifname) {
		if (limiter_open(ifname, &l, "cannot read the metrics of"))
			return -1;
		r = collect(s, &l);
		limiter_close(&l);
		if (r > 0)
			log_err("cannot read the metrics of '%s': its limiter is detached", ifname);
		return r ? -1 : 0;
	}
	if (state_dir(ns, sizeof(ns), 0)) {
		/* Nothing pinned yet: no limiter. */
		return errno == ENOENT ? 0 : -1;
	}
	dir = opendir(ns);
	if (!dir)
		return errno == ENOENT ? 0 :
					 (log_err("cannot list the limiters in %s: %m", ns), -1);
	while ((d = readdir(dir))) {
		unsigned int ifindex = strtoul(d->d_name, NULL, 10);

		if (!ifindex || strspn(d->d_name, "0123456789") != strlen(d->d_name) ||
		    !limiter_here(ifindex) || !if_indextoname(ifindex, name))
			continue;
		/* Unloaded since the folder was listed: not there, nothing to say. */
		if (limiter_open_index(ifindex, name, &l, "cannot read the metrics of"))
			continue;
		if (collect(s, &l) < 0)
			ret = -1;
		limiter_close(&l);
	}
	closedir(dir);
	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), by_name);
	return ret;
}

static void mset_free(struct mset *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->v[i].rules);
	free(s->v);
}

/* ---- writing ---------------------------------------------------------------- */

/*
 * A family is written when its first sample is: its HELP and TYPE, then
 * every sample of it together, as the format asks.
 */
struct fam {
	FILE *f;
	const char *name; /* after xdp_rl_, with _total for a counter */
	const char *type;
	const char *help;
	int begun;
};

/* A label value: UTF-8 text with \, " and newlines escaped; bytes not ASCII become '?'. */
static void put_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '\\' || c == '"')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else
			fputc(c >= 0x20 && c < 0x7f ? c : '?', f);
	}
}

static void put_help(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/*
 * One sample of @fm: labels interface=@ifname (if not NULL), then the
 * @n pairs in @kv (name, value, ...), then @value as text.
 */
static void sample(struct fam *fm, const char *ifname, const char *const *kv, int n,
		   const char *value)
{
	FILE *f = fm->f;
	int i, first = 1;

	if (!fm->begun) {
		fprintf(f, "# HELP " PREFIX "%s ", fm->name);
		put_help(f, fm->help);
		fprintf(f, "\n# TYPE " PREFIX "%s %s\n", fm->name, fm->type);
		fm->begun = 1;
	}
	fprintf(f, PREFIX "%s", fm->name);
	if (ifname || n) {
		fputc('{', f);
		if (ifname) {
			fputs("interface=\"", f);
			put_value(f, ifname);
			fputc('"', f);
			first = 0;
		}
		for (i = 0; i < n; i++) {
			fprintf(f, "%s%s=\"", first ? "" : ",", kv[2 * i]);
			put_value(f, kv[2 * i + 1]);
			fputc('"', f);
			first = 0;
		}
		fputc('}', f);
	}
	fprintf(f, " %s\n", value);
}

static void sample_u64(struct fam *fm, const char *ifname, const char *const *kv, int n, __u64 v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	sample(fm, ifname, kv, n, buf);
}

static void sample_secs(struct fam *fm, const char *ifname, const char *const *kv, int n, __u64 ns)
{
	char buf[40];

	snprintf(buf, sizeof(buf), "%.9g", ns / 1e9);
	sample(fm, ifname, kv, n, buf);
}

/* "packets{verdict=\"passed\"}": the family ("packets"), the label's name and value. */
static void split_metric(const char *m, char *family, size_t flen, char *label, size_t llen,
			 char *value, size_t vlen)
{
	const char *brace = strchr(m, '{'), *eq, *q1, *q2;

	*label = *value = '\0';
	snprintf(family, flen, "%.*s", (int)(brace ? (size_t)(brace - m) : strlen(m)), m);
	if (!brace || !(eq = strchr(brace, '=')) || !(q1 = strchr(eq, '"')) ||
	    !(q2 = strchr(q1 + 1, '"')))
		return;
	snprintf(label, llen, "%.*s", (int)(eq - brace - 1), brace + 1);
	snprintf(value, vlen, "%.*s", (int)(q2 - q1 - 1), q1 + 1);
}

/*
 * The counters of @metric[@i]'s family, @i first, among @metric[@i..@n): their
 * indexes in @members, each marked in @done; how many (0: @i's family was done).
 */
static int family_members(const char *const *metric, int n, int i, int *done, int *members)
{
	char fi[64], fj[64], l[32], v[32];
	int j, nm = 0;

	if (done[i])
		return 0;
	split_metric(metric[i], fi, sizeof(fi), l, sizeof(l), v, sizeof(v));
	for (j = i; j < n; j++) {
		split_metric(metric[j], fj, sizeof(fj), l, sizeof(l), v, sizeof(v));
		if (!strcmp(fi, fj)) {
			members[nm++] = j;
			done[j] = 1;
		}
	}
	return nm;
}

/* The counters of XDP_RL_STATS, a family at a time, in the list's order. */
static void write_stats(FILE *f, const struct mset *s)
{
	char fam_i[64], fam_j[64], label[32], value[32], lv[32], name[80], help[2048];
	const char *kv[2];
	int i, k, done[XDP_RL_STAT_MAX] = { 0 };
	size_t n, li;

	for (i = 0; i < XDP_RL_STAT_MAX; i++) {
		struct fam fm = { .f = f, .type = "counter", .name = name, .help = help };
		int members[XDP_RL_STAT_MAX];
		int nm = family_members(stat_metric, XDP_RL_STAT_MAX, i, done, members);

		if (!nm)
			continue;
		split_metric(stat_metric[i], fam_i, sizeof(fam_i), label, sizeof(label), value,
			     sizeof(value));
		snprintf(name, sizeof(name), "%s_total", fam_i);
		if (!*label) {
			/* One counter: its own words, capitalised. */
			snprintf(help, sizeof(help), "%s", stat_help[i]);
			help[0] = (char)(help[0] >= 'a' && help[0] <= 'z' ? help[0] - 32 : help[0]);
		} else {
			/* Several: "Packets by verdict: passed: ...; dropped: ..." */
			n = snprintf(help, sizeof(help), "%c%s by %s", fam_i[0] - 32, fam_i + 1,
				     label);
			for (k = 0; k < nm && n < sizeof(help); k++) {
				split_metric(stat_metric[members[k]], fam_j, sizeof(fam_j), lv,
					     sizeof(lv), value, sizeof(value));
				n += snprintf(help + n, sizeof(help) - n, "%s %s: %s",
					      k ? ";" : ":", value, stat_help[members[k]]);
			}
		}
		for (li = 0; li < s->n; li++) {
			for (k = 0; k < nm; k++) {
				split_metric(stat_metric[members[k]], fam_j, sizeof(fam_j), label,
					     sizeof(label), value, sizeof(value));
				kv[0] = label;
				kv[1] = value;
				sample_u64(&fm, s->v[li].ifname, kv, *label ? 1 : 0,
					   s->v[li].st.c[members[k]]);
			}
		}
	}
}

static void write_rules(FILE *f, const struct mset *s)
{
	char name[64], layer[8], sel[96];
	const char *kv[8];
	size_t h, i, r;
	__u32 k;

	for (h = 0; h < sizeof(hit_metrics) / sizeof(hit_metrics[0]); h++) {
		struct fam fm = {
			.f = f, .type = "counter", .name = name, .help = hit_metrics[h].help
		};

		snprintf(name, sizeof(name), "%s_total", hit_metrics[h].name);
		for (i = 0; i < s->n; i++)
			for (r = 0; r < s->v[i].nrules; r++) {
				const struct mrule *m = &s->v[i].rules[r];

				kv[0] = "rule";
				kv[1] = m->prefix;
				sample_u64(&fm, s->v[i].ifname, kv, 1,
					   *(const __u64 *)((const char *)&m->hits +
							    hit_metrics[h].off));
			}
	}
	{
		struct fam fm = {
			.f = f,
			.type = "gauge",
			.name = "rule_info",
			.help = "A rule in force: its action (allow, deny, or limit: its own "
				"layers, shared by the prefix or per source) and the "
				"packets it selects; always 1"
		};

		for (i = 0; i < s->n; i++)
			for (r = 0; r < s->v[i].nrules; r++) {
				const struct mrule *m = &s->v[i].rules[r];

				fmt_select(&m->rule.select, sel, sizeof(sel));
				kv[0] = "rule";
				kv[1] = m->prefix;
				kv[2] = "action";
				kv[3] = word_name(rule_action_words, m->rule.action);
				kv[4] = "shared";
				kv[5] = m->rule.flags & XDP_RL_RULE_F_SHARED ? "true" : "false";
				kv[6] = "select";
				kv[7] = sel;
				sample_u64(&fm, s->v[i].ifname, kv, 4, 1);
			}
	}
	for (h = 0; h < 3; h++) {
		static const char *const names[3] = { "rule_limit_packets", "rule_limit_bytes",
						      "rule_window_seconds" };
		static const char *const helps[3] = {
			"The limit of each layer of a rule, in packets per window",
			"The limit of each layer of a rule, in bytes per window",
			"The window of each layer of a rule",
		};
		struct fam fm = { .f = f, .type = "gauge", .name = names[h], .help = helps[h] };

		for (i = 0; i < s->n; i++) {
			int bytes = s->v[i].cfg.fixed.bytes;

			if ((h == 0 && bytes) || (h == 1 && !bytes))
				continue;
			for (r = 0; r < s->v[i].nrules; r++) {
				const struct mrule *m = &s->v[i].rules[r];

				if (m->rule.action != XDP_RL_RULE_LIMIT)
					continue;
				for (k = 0; k < m->rule.nlayers && k < XDP_RL_MAX_LAYERS; k++) {
					snprintf(layer, sizeof(layer), "%u", k);
					kv[0] = "rule";
					kv[1] = m->prefix;
					kv[2] = "layer";
					kv[3] = layer;
					if (h == 2)
						sample_secs(&fm, s->v[i].ifname, kv, 2,
							    m->rule.layer[k].window_ns);
					else
						sample_u64(&fm, s->v[i].ifname, kv, 2,
							   m->rule.layer[k].limit);
				}
			}
		}
	}
}

/* The settings in force and the tables' fill, per limiter. */
static void write_gauges(FILE *f, const struct mset *s)
{
	struct fam sources = { f, "sources", "gauge",
			       "Sources with an open window or a ban in the table, per family", 0 };
	struct fam over = { f, "sources_over_limit", "gauge",
			    "Sources with an open window over its limit (dropped until it ends), "
			    "per family",
			    0 };
	struct fam banned = { f, "sources_banned", "gauge",
			      "Sources under a ban (--ban) now, every packet refused until it ends, "
			      "per family",
			      0 };
	struct fam room = { f, "sources_limit", "gauge",
			    "Sources the table is sized to hold without evicting, per family "
			    "(--max-sources)",
			    0 };
	struct fam cap = { f, "sources_capacity", "gauge",
			   "Most sources the table holds at once, per family (its slots): "
			   "xdp_rl_sources over this is its fill",
			   0 };
	struct fam rules = { f, "rules", "gauge", "Rules in force, per family", 0 };
	struct fam lim_p = { f, "limit_packets", "gauge",
			     "The limit of each layer of the global limits, in packets per window",
			     0 };
	struct fam lim_b = { f, "limit_bytes", "gauge",
			     "The limit of each layer of the global limits, in bytes per window",
			     0 };
	struct fam win = { f, "window_seconds", "gauge",
			   "The window of each layer of the global limits", 0 };
	struct fam ns_lim = { f, "new_sources_limit", "gauge",
			      "New sources that may enter the table per window (--new-sources)",
			      0 };
	struct fam ns_win = { f, "new_sources_window_seconds", "gauge",
			      "The window of --new-sources", 0 };
	struct fam dry = { f, "dry_run", "gauge",
			   "1 if the limiter only counts what it would drop (--dry-run)", 0 };
	struct fam mem = { f, "memory_bytes", "gauge",
			   "Bytes the limiter's maps hold, as the kernel accounts them (memlock)",
			   0 };
	struct fam since = { f, "loaded_timestamp_seconds", "gauge",
			     "When the limiter was loaded, in seconds since the Unix epoch", 0 };
	struct fam info = { f, "limiter_info", "gauge",
			    "A limiter: its attach mode, what it counts, how its windows are "
			    "aligned, the clock they run on and what its keys are (--key); "
			    "always 1",
			    0 };
	const char *kv[10];
	char layer[8];
	size_t i;
	__u32 k;
	int fam;

	for (i = 0; i < s->n; i++)
		for (fam = 0; fam < 2; fam++) {
			kv[0] = "family";
			kv[1] = families[fam];
			sample_u64(&sources, s->v[i].ifname, kv, 1, s->v[i].open[fam]);
		}
	for (i = 0; i < s->n; i++)
		for (fam = 0; fam < 2; fam++) {
			kv[0] = "family";
			kv[1] = families[fam];
			sample_u64(&over, s->v[i].ifname, kv, 1, s->v[i].over[fam]);
		}
	for (i = 0; i < s->n; i++)
		for (fam = 0; fam < 2; fam++) {
			kv[0] = "family";
			kv[1] = families[fam];
			sample_u64(&banned, s->v[i].ifname, kv, 1, s->v[i].bans[fam]);
		}
	for (i = 0; i < s->n; i++)
		for (fam = 0; fam < 2; fam++) {
			kv[0] = "family";
			kv[1] = families[fam];
			sample_u64(&room, s->v[i].ifname, kv, 1, s->v[i].cfg.fixed.max_sources);
		}
	for (i = 0; i < s->n; i++)
		for (fam = 0; fam < 2; fam++) {
			kv[0] = "family";
			kv[1] = families[fam];
			sample_u64(&cap, s->v[i].ifname, kv, 1,
				   sources_capacity(&s->v[i].cfg.fixed));
		}
	for (i = 0; i < s->n; i++)
		for (fam = 0; fam < 2; fam++) {
			__u64 n = 0;
			size_t r;

			for (r = 0; r < s->v[i].nrules; r++)
				n += s->v[i].rules[r].v6 == fam;
			kv[0] = "family";
			kv[1] = families[fam];
			sample_u64(&rules, s->v[i].ifname, kv, 1, n);
		}
	for (i = 0; i < s->n; i++) {
		const struct xdp_rl_live *live = &s->v[i].cfg.slot[s->v[i].cfg.active & 1];

		for (k = 0; k < live->nlayers && k < XDP_RL_MAX_LAYERS; k++) {
			snprintf(layer, sizeof(layer), "%u", k);
			kv[0] = "layer";
			kv[1] = layer;
			sample_u64(s->v[i].cfg.fixed.bytes ? &lim_b : &lim_p, s->v[i].ifname, kv, 1,
				   live->layer[k].limit);
		}
	}
	for (i = 0; i < s->n; i++) {
		const struct xdp_rl_live *live = &s->v[i].cfg.slot[s->v[i].cfg.active & 1];

		for (k = 0; k < live->nlayers && k < XDP_RL_MAX_LAYERS; k++) {
			snprintf(layer, sizeof(layer), "%u", k);
			kv[0] = "layer";
			kv[1] = layer;
			sample_secs(&win, s->v[i].ifname, kv, 1, live->layer[k].window_ns);
		}
	}
	for (i = 0; i < s->n; i++) {
		const struct xdp_rl_live *live = &s->v[i].cfg.slot[s->v[i].cfg.active & 1];

		if (live->new_sources.limit)
			sample_u64(&ns_lim, s->v[i].ifname, NULL, 0, live->new_sources.limit);
	}
	for (i = 0; i < s->n; i++) {
		const struct xdp_rl_live *live = &s->v[i].cfg.slot[s->v[i].cfg.active & 1];

		if (live->new_sources.limit)
			sample_secs(&ns_win, s->v[i].ifname, NULL, 0, live->new_sources.window_ns);
	}
	for (i = 0; i < s->n; i++) {
		const struct xdp_rl_live *live = &s->v[i].cfg.slot[s->v[i].cfg.active & 1];

		sample_u64(&dry, s->v[i].ifname, NULL, 0, !!(live->flags & XDP_RL_F_DRY_RUN));
	}
	for (i = 0; i < s->n; i++)
		sample_u64(&mem, s->v[i].ifname, NULL, 0, s->v[i].memory);
	for (i = 0; i < s->n; i++)
		sample_u64(&since, s->v[i].ifname, NULL, 0, s->v[i].cfg.fixed.loaded_at_unix);
	for (i = 0; i < s->n; i++) {
		const struct xdp_rl_live *live = &s->v[i].cfg.slot[s->v[i].cfg.active & 1];

		kv[0] = "mode";
		kv[1] = word_name(mode_words, s->v[i].cfg.fixed.xdp_mode);
		kv[2] = "unit";
		kv[3] = s->v[i].cfg.fixed.bytes ? "bytes" : "packets";
		kv[4] = "alignment";
		kv[5] = live->flags & XDP_RL_F_ALIGNED ? "aligned" : "per-key";
		kv[6] = "clock";
		kv[7] = live_clock_name(live);
		kv[8] = "key";
		kv[9] = word_name(key_words, s->v[i].cfg.fixed.key);
		sample_u64(&info, s->v[i].ifname, kv, 5, 1);
	}
}

/*
 * The fleet agent of each limiter that has had one (xdp-rl fleet): its
 * counters (XDP_RL_FLEET_STATS, as xdp_rl_fleet_<metric>_total), whether it
 * runs, and how far behind Redis it is.
 */
static void write_fleet(FILE *f, const struct mset *s)
{
	struct fam up = { f, "fleet_agent_up", "gauge",
			  "1 if a fleet agent (xdp-rl fleet) runs for the limiter, 0 if one ran and "
			  "stopped",
			  0 };
	struct fam lag = { f, "fleet_lag_seconds", "gauge",
			   "Time since Redis last answered a fleet sync round in full", 0 };
	struct fam synced = { f, "fleet_synced_windows", "gauge",
			      "Windows synced with the fleet in the agent's last round", 0 };
	struct fam round = { f, "fleet_round_seconds", "gauge",
			     "How long the agent's last round took: scan, Redis, writes", 0 };
	char family[64], label[32], value[32], name[80], help[160], fk[64], lk[32], vk[32];
	int done[XDP_RL_FLEET_STAT_MAX] = { 0 };
	__u64 now = 0;
	struct timespec ts;
	const char *kv[2];
	size_t i;
	int c;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	for (c = 0; c < XDP_RL_FLEET_STAT_MAX; c++) {
		struct fam fm = { f, name, "counter", help, 0 };
		int members[XDP_RL_FLEET_STAT_MAX], k;
		int nm =
			family_members(fleet_stat_metrics, XDP_RL_FLEET_STAT_MAX, c, done, members);

		if (!nm)
			continue;
		split_metric(fleet_stat_metrics[c], family, sizeof(family), label, sizeof(label),
			     value, sizeof(value));
		snprintf(name, sizeof(name), "fleet_%s_total", family);
		/* One counter: its own words; a family of them (bytes): by its label. */
		if (*label)
			snprintf(help, sizeof(help),
				 "Bytes between the fleet agent and Redis, by %s", label);
		else
			snprintf(help, sizeof(help), "%s", fleet_stat_help[c]);
		help[0] = (char)(help[0] >= 'a' && help[0] <= 'z' ? help[0] - 32 : help[0]);
		for (i = 0; i < s->n; i++) {
			if (!s->v[i].fleet.started_unix_ns)
				continue;
			for (k = 0; k < nm; k++) {
				split_metric(fleet_stat_metrics[members[k]], fk, sizeof(fk), lk,
					     sizeof(lk), vk, sizeof(vk));
				kv[0] = lk;
				kv[1] = vk;
				sample_u64(&fm, s->v[i].ifname, kv, *lk ? 1 : 0,
					   s->v[i].fleet.c[members[k]]);
			}
		}
	}
	for (i = 0; i < s->n; i++) {
		const struct xdp_rl_fleet *fl = &s->v[i].fleet;

		if (!fl->started_unix_ns)
			continue;
		sample_u64(&up, s->v[i].ifname, NULL, 0, s->v[i].fleet_alive);
	}
	for (i = 0; i < s->n; i++) {
		const struct xdp_rl_fleet *fl = &s->v[i].fleet;

		if (fl->started_unix_ns && fl->last_sync_unix_ns)
			sample_secs(&lag, s->v[i].ifname, NULL, 0,
				    now > fl->last_sync_unix_ns ? now - fl->last_sync_unix_ns : 0);
	}
	for (i = 0; i < s->n; i++)
		if (s->v[i].fleet.started_unix_ns)
			sample_u64(&synced, s->v[i].ifname, NULL, 0, s->v[i].fleet.synced);
	for (i = 0; i < s->n; i++)
		if (s->v[i].fleet.started_unix_ns)
			sample_secs(&round, s->v[i].ifname, NULL, 0, s->v[i].fleet.round_ns);
}

const struct word rule_series_words[] = {
	{ "each", 1 },
	{ "none", 0 },
	{ NULL, 0 },
};

/* The allow and deny lists: their prefixes by family, what they matched and dropped. */
static void write_lists(FILE *f, const struct mset *s)
{
	struct fam pfx = { f, "list_prefixes", "gauge",
			   "Prefixes on the allow and deny lists, per family (xdp-rl lists)", 0 };
	char name[64], help[160];
	const char *kv[4];
	size_t h, i;
	int k, fam;

	for (i = 0; i < s->n; i++)
		for (k = 0; k < LIST_KINDS; k++)
			for (fam = 0; fam < 2; fam++) {
				kv[0] = "list";
				kv[1] = list_names[k];
				kv[2] = "family";
				kv[3] = families[fam];
				sample_u64(&pfx, s->v[i].ifname, kv, 2,
					   s->v[i].lists.prefixes[k][fam]);
			}
	for (h = 0; h < sizeof(hit_metrics) / sizeof(hit_metrics[0]); h++) {
		struct fam fm = { .f = f, .type = "counter", .name = name, .help = help };

		/* rule_matched_packets: list_matched_packets_total, and so on. */
		snprintf(name, sizeof(name), "list_%s_total", hit_metrics[h].name + 5);
		snprintf(help, sizeof(help), "%s, by list", hit_metrics[h].list_help);
		for (i = 0; i < s->n; i++)
			for (k = 0; k < LIST_KINDS; k++) {
				kv[0] = "list";
				kv[1] = list_names[k];
				sample_u64(&fm, s->v[i].ifname, kv, 1,
					   *(const __u64 *)((const char *)&s->v[i].list_hits[k] +
							    hit_metrics[h].off));
			}
	}
}

int metrics_write(FILE *f, const char *ifname, int rule_series)
{
	struct fam build = { f, "build_info", "gauge",
			     "The version of xdp-rl and of the libbpf it was built with; always 1",
			     0 };
	const char *kv[4] = { "version", XDP_RL_VERSION, "libbpf", libbpf_version_string() };
	struct mset s = { 0 };
	int ret;

	ret = collect_all(&s, ifname);
	if (ret && ifname) {
		mset_free(&s);
		return -1;
	}
	write_stats(f, &s);
	if (rule_series)
		write_rules(f, &s);
	write_lists(f, &s);
	write_gauges(f, &s);
	write_fleet(f, &s);
	sample_u64(&build, NULL, kv, 2, 1);
	mset_free(&s);
	if (fflush(f) || ferror(f))
		return -1;
	return ret;
}
