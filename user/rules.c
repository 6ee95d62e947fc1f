// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* rules.c - per-prefix rules as a model: parsed, read from a file, kept in the tries (see rules.h). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "admin.h"
#include "caps.h"
#include "live.h"
#include "log.h"
#include "rules.h"

enum { OPT_ALLOW = 256, OPT_DENY, OPT_LAYER, OPT_SHARED, OPT_PROTO, OPT_DPORT, OPT_SYN };

const struct word rule_action_words[] = {
	{ "limit", XDP_RL_RULE_LIMIT },
	{ "allow", XDP_RL_RULE_ALLOW },
	{ "deny", XDP_RL_RULE_DENY },
	{ NULL, 0 },
};

#define RULE_WORDS 16 /* words on one line of a rules file, at most */

int rule_parse(int argc, char **argv, struct rule_spec *r, char *why, size_t len)
{
	static const struct option opts[] = { { "allow", no_argument, NULL, OPT_ALLOW },
					      { "deny", no_argument, NULL, OPT_DENY },
					      { "layer", required_argument, NULL, OPT_LAYER },
					      { "shared", no_argument, NULL, OPT_SHARED },
					      { "proto", required_argument, NULL, OPT_PROTO },
					      { "dport", required_argument, NULL, OPT_DPORT },
					      { "syn", no_argument, NULL, OPT_SYN },
					      { 0 } };
	int opt, allow = 0, deny = 0;
	unsigned int proto;
	const char *e;

	memset(r, 0, sizeof(*r));
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_ALLOW: allow = 1; break;
		case OPT_DENY: deny = 1; break;
		case OPT_SHARED: r->rule.flags |= XDP_RL_RULE_F_SHARED; break;
		case OPT_SYN: r->rule.select.syn = 1; break;
		case OPT_PROTO:
			e = word_parse(proto_words, optarg, &proto);
			if (e) {
				snprintf(why, len, "invalid --proto '%.20s': %s", optarg, e);
				return -1;
			}
			r->rule.select.proto = proto;
			break;
		case OPT_DPORT:
			e = parse_ports(optarg, &r->rule.select);
			if (e) {
				snprintf(why, len, "invalid --dport '%.40s': %s", optarg, e);
				return -1;
			}
			break;
		case OPT_LAYER:
			if (r->rule.nlayers == XDP_RL_MAX_LAYERS) {
				snprintf(why, len, "at most %d --layer options", XDP_RL_MAX_LAYERS);
				return -1;
			}
			e = parse_layer(optarg, &r->rule.layer[r->rule.nlayers]);
			if (e) {
				snprintf(why, len, "invalid --layer '%.40s': %s", optarg, e);
				return -1;
			}
			r->rule.nlayers++;
			break;
		case ':':
			snprintf(why, len, "option '%.40s' needs a value", argv[optind - 1]);
			return -1;
		default:
			if (optopt > 0 && optopt < 128)
				snprintf(why, len, "unknown option '-%c'", optopt);
			else
				snprintf(why, len, "unknown option '%.40s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind >= argc) {
		snprintf(why, len, "missing CIDR");
		return -1;
	}
	if (argc - optind > 1) {
		snprintf(why, len, "unexpected argument '%.40s'", argv[optind + 1]);
		return -1;
	}
	e = parse_cidr(argv[optind], &r->addr, &r->prefix);
	if (e) {
		snprintf(why, len, "invalid CIDR '%.45s': %s", argv[optind], e);
		return -1;
	}
	if ((r->rule.flags & XDP_RL_RULE_F_SHARED) && !r->rule.nlayers) {
		snprintf(why, len, "--shared goes with --layer");
		return -1;
	}
	if (allow + deny + !!r->rule.nlayers != 1) {
		snprintf(why, len, "give exactly one of --allow, --deny or --layer N/DUR");
		return -1;
	}
	e = check_select(&r->rule.select);
	if (e) {
		snprintf(why, len, "%s", e);
		return -1;
	}
	r->rule.action = allow ? XDP_RL_RULE_ALLOW : deny ? XDP_RL_RULE_DENY : XDP_RL_RULE_LIMIT;
	return 0;
}

int rules_file(const char *path, struct rule_spec **out, size_t *n, const char *cmd)
{
	char line[1024], why[256], *argv[RULE_WORDS + 1], *p;
	struct rule_spec *v = NULL, *nv;
	size_t cap = 0, lineno = 0, i;
	int argc, fd;
	FILE *f;

	*out = NULL;
	*n = 0;
	fd = open_as_caller(path);
	if (fd < 0 && errno == EINVAL)
		return usage_err(cmd, "%s: cannot read --rules '%s': not a regular file", cmd,
				 path);
	f = fd < 0 ? NULL : fdopen(fd, "r");
	if (!f) {
		if (fd >= 0)
			close(fd);
		return usage_err(cmd, "%s: cannot read --rules '%s': %m", cmd, path);
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			free(v);
			fclose(f);
			return usage_err(cmd, "%s: %s:%zu: line too long", cmd, path, lineno);
		}
		p = strchr(line, '#');
		if (p)
			*p = '\0';
		argv[0] = "rule";
		argc = 1;
		for (p = strtok(line, " \t\r\n"); p; p = strtok(NULL, " \t\r\n")) {
			if (argc == RULE_WORDS) {
				free(v);
				fclose(f);
				return usage_err(cmd, "%s: %s:%zu: too many words", cmd, path,
						 lineno);
			}
			argv[argc++] = p;
		}
		argv[argc] = NULL;
		if (argc == 1)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				fclose(f);
				log_err("%s: out of memory reading %s", cmd, path);
				return EXIT_FAIL;
			}
			v = nv;
		}
		if (rule_parse(argc, argv, &v[*n], why, sizeof(why))) {
			free(v);
			fclose(f);
			return usage_err(cmd, "%s: %s:%zu: %s; no rule was applied", cmd, path,
					 lineno, why);
		}
		v[*n].line = lineno;
		for (i = 0; i < *n; i++) {
			if (v[i].prefix == v[*n].prefix &&
			    !memcmp(&v[i].addr, &v[*n].addr, sizeof(v[i].addr))) {
				free(v);
				fclose(f);
				return usage_err(cmd,
						 "%s: %s:%zu: a second rule for the same prefix; "
						 "no rule was applied",
						 cmd, path, lineno);
			}
		}
		if (*n == XDP_RL_MAX_RULES) {
			free(v);
			fclose(f);
			return usage_err(cmd, "%s: %s: more than %d rules", cmd, path,
					 XDP_RL_MAX_RULES);
		}
		(*n)++;
	}
	if (ferror(f)) {
		free(v);
		fclose(f);
		return usage_err(cmd, "%s: cannot read --rules '%s': %s; no rule was applied", cmd,
				 path, strerror(EIO));
	}
	fclose(f);
	*out = v;
	return 0;
}

static unsigned int per_source_layers(const struct rule_spec *r)
{
	return r->rule.action == XDP_RL_RULE_LIMIT && !(r->rule.flags & XDP_RL_RULE_F_SHARED) ?
		       r->rule.nlayers :
		       0;
}

const struct rule_spec *rules_widest(const struct rule_spec *r, size_t n)
{
	const struct rule_spec *w = NULL;
	size_t i;

	for (i = 0; i < n; i++)
		if (per_source_layers(&r[i]) &&
		    (!w || per_source_layers(&r[i]) > per_source_layers(w)))
			w = &r[i];
	return w;
}

/* Call @fn for every rule in both tries; stop early if it returns non-zero. */
int rules_foreach(const int *fd, rule_fn fn, void *ctx)
{
	struct xdp_rl_rule_key6 k6, n6;
	struct xdp_rl_rule_key4 k4, n4;
	struct rule_spec r;
	void *prev;

	for (prev = NULL; !bpf_map_get_next_key(fd[PIN_RULES4], prev, &n4); prev = &k4) {
		k4 = n4;
		memset(&r, 0, sizeof(r));
		if (bpf_map_lookup_elem(fd[PIN_RULES4], &k4, &r.rule))
			continue;
		r.addr.family = AF_INET;
		memcpy(r.addr.bytes, &k4.addr, 4);
		r.prefix = k4.prefixlen;
		if (fn(&r, ctx))
			return 1;
	}
	for (prev = NULL; !bpf_map_get_next_key(fd[PIN_RULES6], prev, &n6); prev = &k6) {
		k6 = n6;
		memset(&r, 0, sizeof(r));
		if (bpf_map_lookup_elem(fd[PIN_RULES6], &k6, &r.rule))
			continue;
		r.addr.family = AF_INET6;
		memcpy(r.addr.bytes, k6.addr, 16);
		r.prefix = k6.prefixlen;
		if (fn(&r, ctx))
			return 1;
	}
	return 0;
}

static int mark_id(const struct rule_spec *r, void *ctx)
{
	__u8 *used = ctx;

	if (r->rule.id < XDP_RL_MAX_RULES)
		used[r->rule.id] = 1;
	return 0;
}

/*
 * A rule id about to be used again starts with empty counters and budget.
 * In a running limiter the budget is closed by the program (its windows'
 * generations move on, admin.h); in maps no program runs yet, zeros.
 */
static int zero_id(const int *fd, __u32 id, const struct limiter *l)
{
	int ncpu = libbpf_num_possible_cpus();
	struct xdp_rl_rule_hits *h;
	struct xdp_rl_layers zero = {};
	int r;

	h = calloc(ncpu > 0 ? ncpu : 1, sizeof(*h));
	if (!h)
		return -1;
	r = bpf_map_update_elem(fd[PIN_RULE_HITS], &id, h, 0);
	free(h);
	if (r)
		return -1;
	if (l)
		return admin_reset_shared(l, id, 0, XDP_RL_MAX_LAYERS, 0, NULL) < 0 ? -1 : 0;
	return bpf_map_update_elem(fd[PIN_SHARED], &id, &zero, 0) ? -1 : 0;
}

static void rule_key(const struct rule_spec *r, struct xdp_rl_rule_key4 *k4,
		     struct xdp_rl_rule_key6 *k6)
{
	k4->prefixlen = k6->prefixlen = r->prefix;
	memcpy(&k4->addr, r->addr.bytes, 4);
	memcpy(k6->addr, r->addr.bytes, 16);
}

void rule_ids_used(const int *fd, rule_ids used)
{
	memset(used, 0, sizeof(rule_ids));
	rules_foreach(fd, mark_id, used);
}

int rule_insert(const int *fd, struct rule_spec *r, rule_ids used, const struct limiter *l)
{
	struct xdp_rl_rule_key4 k4;
	struct xdp_rl_rule_key6 k6;
	__u32 id;
	int err;

	for (id = 0; id < XDP_RL_MAX_RULES && used[id]; id++)
		;
	if (id == XDP_RL_MAX_RULES) {
		errno = ENOSPC;
		return -1;
	}
	r->rule.id = id;
	if (zero_id(fd, id, l))
		return -1;
	rule_key(r, &k4, &k6);
	if (r->addr.family == AF_INET)
		err = bpf_map_update_elem(fd[PIN_RULES4], &k4, &r->rule, BPF_NOEXIST);
	else
		err = bpf_map_update_elem(fd[PIN_RULES6], &k6, &r->rule, BPF_NOEXIST);
	if (!err)
		used[id] = 1;
	return err;
}

static int max_layers(const struct rule_spec *r, void *ctx)
{
	unsigned int *m = ctx;

	if (per_source_layers(r) > *m)
		*m = per_source_layers(r);
	return 0;
}

unsigned int rules_max_layers_fd(const int *fd)
{
	unsigned int m = 0;

	rules_foreach(fd, max_layers, &m);
	return m;
}

static int min_window(const struct rule_spec *r, void *ctx)
{
	__u64 *m = ctx;
	__u32 i;

	for (i = 0; i < r->rule.nlayers && i < XDP_RL_MAX_LAYERS; i++)
		if (!*m || r->rule.layer[i].window_ns < *m)
			*m = r->rule.layer[i].window_ns;
	return 0;
}

static int max_window(const struct rule_spec *r, void *ctx)
{
	__u64 *m = ctx;
	__u32 i;

	for (i = 0; i < r->rule.nlayers && i < XDP_RL_MAX_LAYERS; i++)
		if (r->rule.layer[i].window_ns > *m)
			*m = r->rule.layer[i].window_ns;
	return 0;
}

__u64 rules_max_window(const int *fd)
{
	__u64 m = 0;

	rules_foreach(fd, max_window, &m);
	return m;
}

__u64 rules_min_window(const int *fd)
{
	__u64 m = 0;

	rules_foreach(fd, min_window, &m);
	return m;
}

static int count_family(const struct rule_spec *r, void *ctx)
{
	__u32 *n = ctx;

	n[r->addr.family == AF_INET6]++;
	return 0;
}

void rules_count(const int *fd, __u32 *n4, __u32 *n6)
{
	__u32 n[2] = { 0, 0 };

	rules_foreach(fd, count_family, n);
	*n4 = n[0];
	*n6 = n[1];
}

static void layers_text(const struct xdp_rl_layer *l, __u32 n, char *buf, size_t len)
{
	char w[32];
	size_t off = 0;
	__u32 i;

	buf[0] = '\0';
	for (i = 0; i < n && i < XDP_RL_MAX_LAYERS && off < len; i++) {
		fmt_duration(l[i].window_ns, w, sizeof(w));
		off += snprintf(buf + off, len - off, "%s%llu/%s", i ? " " : "",
				(unsigned long long)l[i].limit, w);
	}
}

void rule_describe(const struct rule_spec *r, char *buf, size_t len)
{
	char pfx[INET6_ADDRSTRLEN + 8], lay[160], sel[96] = "";

	fmt_prefix(&r->addr, r->prefix, pfx, sizeof(pfx));
	if (!xdp_rl_select_all(&r->rule.select)) {
		sel[0] = ' ';
		fmt_select(&r->rule.select, sel + 1, sizeof(sel) - 1);
	}
	if (r->rule.action == XDP_RL_RULE_ALLOW) {
		snprintf(buf, len, "%s%s allow", pfx, sel);
		return;
	}
	if (r->rule.action == XDP_RL_RULE_DENY) {
		snprintf(buf, len, "%s%s deny", pfx, sel);
		return;
	}
	layers_text(r->rule.layer, r->rule.nlayers, lay, sizeof(lay));
	snprintf(buf, len, "%s%s limit %s%s", pfx, sel, lay,
		 r->rule.flags & XDP_RL_RULE_F_SHARED ? " shared" : "");
}

static int any_select(const struct rule_spec *r, void *ctx)
{
	*(int *)ctx |= !xdp_rl_select_all(&r->rule.select);
	return 0;
}

void rules_summarize(const int *fd, const struct rule_spec *adding, struct rules_summary *rs)
{
	memset(rs, 0, sizeof(*rs));
	rules_foreach(fd, min_window, &rs->min_window);
	rules_foreach(fd, max_window, &rs->max_window);
	rules_foreach(fd, any_select, &rs->any_select);
	if (adding) {
		min_window(adding, &rs->min_window);
		max_window(adding, &rs->max_window);
		any_select(adding, &rs->any_select);
	}
}

int rules_publish(struct limiter *l, struct rule_spec *adding)
{
	struct xdp_rl_live live = *limiter_live(l);
	struct rules_summary rs;

	rules_count(l->fd, &live.nrules4, &live.nrules6);
	rules_summarize(l->fd, adding, &rs);
	if (adding) {
		if (adding->addr.family == AF_INET6)
			live.nrules6++;
		else
			live.nrules4++;
		/* Its own limit set: no window is charged under two (include/xdp_rl.h). */
		if (l->cfg.next_lsid >= XDP_RL_LSID_MAX) {
			errno = EOVERFLOW;
			return -1;
		}
		adding->rule.lsid = l->cfg.next_lsid++;
	}
	live_finish(&live, &rs, limiter_live(l), 1);
	return limiter_publish(l, &live);
}

int rule_delete(const int *fd, const struct rule_spec *r)
{
	struct xdp_rl_rule_key4 k4;
	struct xdp_rl_rule_key6 k6;

	rule_key(r, &k4, &k6);
	return r->addr.family == AF_INET ? bpf_map_delete_elem(fd[PIN_RULES4], &k4) :
					   bpf_map_delete_elem(fd[PIN_RULES6], &k6);
}

const struct xdp_rl_rule *rule_lookup(const struct limiter *l, const struct ip_addr *a,
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

void rule_prefix_of(const struct limiter *l, const struct ip_addr *a, __u32 id, struct ip_addr *out,
		    unsigned int *prefix)
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
					v4 ? (void *)&k4 : (void *)&k6, &probe) ||
		    probe.id != id)
			break;
		*out = m;
		*prefix = len;
	}
}
