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
#include "vec.h"

/* The options of a rule, in rule_opts' order: rule_parse's ids. */
enum {
	OPT_ALLOW = 256,
	OPT_DENY,
	OPT_LAYER,
	OPT_RATE,
	OPT_BURST,
	OPT_SHARED,
	OPT_BAN,
	OPT_PROTO,
	OPT_DPORT,
	OPT_SYN
};

/*
 * A rule's options, in the order rule_format gives them: rule_parse's
 * getopt table, `rule --help`'s (cmd/rule.c) and the names rule_format
 * prints. An id of 0 is no rule's: an option of `rule list`.
 */
const struct opt_spec rule_opts[] = {
	{ "allow", OPT_ALLOW, NULL, "never limited, still counted" },
	{ "deny", OPT_DENY, NULL, "always dropped" },
	{ "layer", OPT_LAYER, "N/DUR",
	  "the prefix's own limits (up to 4 layers), for each source\nin it, keyed as usual; with --shared, one budget for the\nwhole prefix" },
	{ "rate", OPT_RATE, "N/DUR",
	  "instead of --layer, a rate: N per DUR on average, --burst at\nonce (a rate is the rule's one limit)" },
	{ "burst", OPT_BURST, "B", "with --rate: what may pass at once (default N)" },
	{ "shared", OPT_SHARED, NULL, "one budget for the whole prefix (with --layer or --rate)" },
	{ "ban", OPT_BAN, "DUR",
	  "a source that goes over the rule's limits is refused all its\npackets for DUR (1ms..366d; with --layer or --rate, not\n--shared)" },
	{ "proto", OPT_PROTO, "P", "the rule applies to tcp, udp, icmp or icmpv6 packets only" },
	{ "dport", OPT_DPORT, "LIST", "... to packets to these destination ports only (tcp, udp)" },
	{ "syn", OPT_SYN, NULL,
	  "... to TCP SYNs without ACK only; the prefix's other packets\nare judged as if the rule did not exist" },
	{ "json", 0, NULL, "rule list: one JSON object on stdout" },
	{ NULL },
};

const struct opt_words rule_words[] = {
	{ "proto", proto_words },
	{ NULL },
};

/* The name of rule option @id. */
static const char *rule_opt(int id)
{
	return rule_opts[id - OPT_ALLOW].name;
}

const struct word rule_action_words[] = {
	{ "limit", XDP_RL_RULE_LIMIT },
	{ "allow", XDP_RL_RULE_ALLOW },
	{ "deny", XDP_RL_RULE_DENY },
	{ NULL, 0 },
};

#define RULE_WORDS 17 /* "rule" and the words of a line of a rules file (16), at most */

/* Whether rule option @id was given, in rule_parse's @seen. */
#define SEEN(seen, id) ((seen)&1U << ((id)-OPT_ALLOW))

/*
 * --rate @rate and --burst @burst (0: N) of @r, given as @seen says: its
 * one layer a rate, with neither --layer nor a burst alone. 0, or -1 with
 * why.
 */
static int rule_rate(struct rule_spec *r, const struct xdp_rl_layer *rate, __u64 burst,
		     unsigned int seen, char *why, size_t len)
{
	const char *e;

	if (SEEN(seen, OPT_BURST) && !SEEN(seen, OPT_RATE)) {
		snprintf(why, len, "--burst goes with --rate N/DUR");
		return -1;
	}
	if (!SEEN(seen, OPT_RATE))
		return 0;
	if (r->rule.nlayers) {
		snprintf(why, len,
			 "give either --rate or --layer, not both (a rate is the whole "
			 "limit)");
		return -1;
	}
	e = rate_fill(&r->rule.layer[0], rate->limit, rate->window_ns, burst ? burst : rate->limit);
	if (e) {
		snprintf(why, len, "cannot keep --rate: %s", e);
		return -1;
	}
	r->rule.nlayers = 1;
	return 0;
}

int rule_parse(int argc, char **argv, struct rule_spec *r, char *why, size_t len)
{
	struct option opts[sizeof(rule_opts) / sizeof(rule_opts[0])] = {};
	const struct opt_spec *o;
	size_t k = 0;
	int opt, allow = 0, deny = 0;
	unsigned int proto, seen = 0;
	struct xdp_rl_layer rate = {};
	__u64 burst = 0;
	const char *e;

	for (o = rule_opts; o->name; o++)
		if (o->id)
			opts[k++] = (struct option){ o->name,
						     o->arg ? required_argument : no_argument, NULL,
						     o->id };
	memset(r, 0, sizeof(*r));
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		/* Each option once, but --layer (one a layer). */
		if (opt >= OPT_ALLOW && opt != OPT_LAYER && (seen & 1U << (opt - OPT_ALLOW))) {
			snprintf(why, len, "option '--%s' given twice (give it once)",
				 rule_opt(opt));
			return -1;
		}
		if (opt >= OPT_ALLOW)
			seen |= 1U << (opt - OPT_ALLOW);
		switch (opt) {
		case OPT_ALLOW: allow = 1; break;
		case OPT_DENY: deny = 1; break;
		case OPT_SHARED: r->rule.flags |= XDP_RL_RULE_F_SHARED; break;
		case OPT_SYN: r->rule.select.syn = 1; break;
		case OPT_BAN:
			e = strcmp(optarg, "off") && strcmp(optarg, "0") ?
				    parse_duration(optarg, WINDOW_MIN_NS, XDP_RL_BAN_MAX_NS,
						   &r->rule.ban_ns) :
				    NULL;
			if (e) {
				snprintf(why, len, "invalid --ban '%.40s': %s (or 'off')", optarg,
					 e);
				return -1;
			}
			break;
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
		case OPT_RATE:
			e = parse_layer(optarg, &rate);
			if (e) {
				snprintf(why, len, "invalid --rate '%.40s': %s", optarg, e);
				return -1;
			}
			break;
		case OPT_BURST:
			e = parse_u64(optarg, 1, XDP_RL_LIMIT_MAX, &burst);
			if (e) {
				snprintf(why, len, "invalid --burst '%.40s': %s", optarg, e);
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
	if (rule_rate(r, &rate, burst, seen, why, len))
		return -1;
	if ((r->rule.flags & XDP_RL_RULE_F_SHARED) && !r->rule.nlayers) {
		snprintf(why, len, "--shared goes with --layer or --rate");
		return -1;
	}
	if (allow + deny + !!r->rule.nlayers != 1) {
		snprintf(why, len,
			 "give exactly one of --allow, --deny, --layer N/DUR or --rate N/DUR");
		return -1;
	}
	if (SEEN(seen, OPT_BAN) && !r->rule.nlayers) {
		snprintf(
			why, len,
			"--ban goes with --layer or --rate (an --allow or --deny rule has no limit to "
			"go over)");
		return -1;
	}
	if (SEEN(seen, OPT_BAN) && (r->rule.flags & XDP_RL_RULE_F_SHARED)) {
		snprintf(why, len,
			 "a --shared budget is not banned: --ban applies to per-source limits");
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

int rule_prefix_cmp(const struct rule_spec *x, const struct rule_spec *y)
{
	int c;

	if (x->addr.family != y->addr.family)
		return x->addr.family == AF_INET ? -1 : 1;
	c = memcmp(x->addr.bytes, y->addr.bytes, sizeof(x->addr.bytes));
	if (c)
		return c < 0 ? -1 : 1;
	return x->prefix < y->prefix ? -1 : x->prefix > y->prefix;
}

/* rule_prefix_cmp, ties by line. */
static int rule_cmp(const void *a, const void *b)
{
	const struct rule_spec *x = a, *y = b;
	int c = rule_prefix_cmp(x, y);

	return c ? c : x->line < y->line ? -1 : x->line > y->line;
}

void rules_sort(struct rule_spec *v, size_t n)
{
	if (n)
		qsort(v, n, sizeof(*v), rule_cmp);
}

const struct rule_spec *rules_duplicate(struct rule_spec *v, size_t n,
					const struct rule_spec **first)
{
	const struct rule_spec *dup = NULL;
	size_t i, g = 0;

	rules_sort(v, n);
	for (i = 1; i < n; i++) {
		if (rule_prefix_cmp(&v[i], &v[g])) {
			g = i;
			continue;
		}
		if (!dup || v[i].line < dup->line) {
			dup = &v[i];
			*first = &v[g];
		}
	}
	return dup;
}

/* Whether prefix @outer holds prefix @inner (the same family; @inner's length at least @outer's). */
static int prefix_holds(const struct rule_spec *outer, const struct rule_spec *inner)
{
	unsigned int full = outer->prefix / 8, bits = outer->prefix % 8;

	if (outer->addr.family != inner->addr.family || inner->prefix < outer->prefix)
		return 0;
	if (memcmp(outer->addr.bytes, inner->addr.bytes, full))
		return 0;
	return !bits ||
	       !((outer->addr.bytes[full] ^ inner->addr.bytes[full]) & (0xff00 >> bits) & 0xff);
}

const struct rule_spec *rules_too_nested(struct rule_spec *v, size_t n, char *why, size_t len)
{
	/* The rules holding the one looked at, outermost first (at most one per prefix length). */
	const struct rule_spec *open[129];
	/* How many rules with selectors end the chain at each, with no selector-less rule between. */
	unsigned int run[129];
	char pfx[INET6_ADDRSTRLEN + 8];
	size_t i, depth = 0, k, off;

	rules_sort(v, n);
	for (i = 0; i < n; i++) {
		while (depth && !prefix_holds(open[depth - 1], &v[i]))
			depth--;
		if (depth == sizeof(open) / sizeof(open[0]))
			continue; /* cannot be: 129 nested prefixes of one family */
		run[depth] =
			xdp_rl_select_all(&v[i].rule.select) ? 0 : (depth ? run[depth - 1] : 0) + 1;
		open[depth++] = &v[i];
		if (run[depth - 1] <= XDP_RL_SELECT_NEST)
			continue;
		off = snprintf(why, len,
			       "%u rules with selectors nest in one another, none "
			       "without a selector between (",
			       run[depth - 1]);
		for (k = depth - run[depth - 1]; k < depth && off < len; k++) {
			fmt_prefix(&open[k]->addr, open[k]->prefix, pfx, sizeof(pfx));
			off += snprintf(why + off, len - off, "%s%s", pfx,
					k + 1 < depth ? ", " : "");
		}
		if (off < len)
			snprintf(
				why + off, len - off,
				"): a packet a rule's selector does not take is judged by the next "
				"shorter rule, at most %d deep (give one of them no selector, or "
				"drop one)",
				XDP_RL_SELECT_NEST);
		return &v[i];
	}
	return NULL;
}

int rules_add(struct rule_spec **v, size_t *n, size_t *cap)
{
	return vec_room(*v, *n, *cap, 1, 64);
}

int rules_parse_text(const char *text, size_t len, const char *name, struct rule_spec **out,
		     size_t *n, char *why, size_t wlen)
{
	char rwhy[256], pfx[INET6_ADDRSTRLEN + 8], nest[512], *argv[RULE_WORDS + 1];
	const struct rule_spec *dup, *first;
	struct rule_spec *v = NULL;
	struct lines it;
	const char *e;
	size_t cap = 0;
	int argc;

	*out = NULL;
	*n = 0;
	lines_begin(&it, text, len);
	argv[0] = "rule";
	while ((argc = lines_next(&it, argv + 1, RULE_WORDS - 1, &e)) != -1) {
		if (argc == -2) {
			snprintf(why, wlen, "%s:%u: %s", name, it.no, e);
			goto fail;
		}
		if (!argc)
			continue;
		if (*n == XDP_RL_MAX_RULES) {
			snprintf(why, wlen, "%s:%u: more than %d rules" LISTS_HINT, name, it.no,
				 XDP_RL_MAX_RULES, XDP_RL_MAX_PREFIXES);
			goto fail;
		}
		if (rules_add(&v, n, &cap)) {
			snprintf(why, wlen, "%s:%u: out of memory", name, it.no);
			goto fail;
		}
		if (rule_parse(argc + 1, argv, &v[*n], rwhy, sizeof(rwhy))) {
			snprintf(why, wlen, "%s:%u: %s", name, it.no, rwhy);
			goto fail;
		}
		v[(*n)++].line = it.no;
	}
	dup = rules_duplicate(v, *n, &first);
	if (dup) {
		fmt_prefix(&dup->addr, dup->prefix, pfx, sizeof(pfx));
		snprintf(why, wlen,
			 "%s:%u: a second rule for the same prefix, %s (line %u has one)", name,
			 dup->line, pfx, first->line);
		goto fail;
	}
	dup = rules_too_nested(v, *n, nest, sizeof(nest));
	if (dup) {
		snprintf(why, wlen, "%s:%u: %s", name, dup->line, nest);
		goto fail;
	}
	*out = v;
	return 0;
fail:
	free(v);
	*n = 0;
	return -1;
}

int rules_file(const char *path, struct rule_spec **out, size_t *n, const char *cmd)
{
	char why[512], *text;
	size_t len;
	int r;

	*out = NULL;
	*n = 0;
	if (read_as_caller(path, RULES_FILE_MAX, &text, &len)) {
		if (errno == EINVAL)
			return usage_err(cmd, "%s: cannot read --rules '%s': not a regular file",
					 cmd, path);
		if (errno == EFBIG)
			return usage_err(cmd, "%s: cannot read --rules '%s': larger than %d MiB",
					 cmd, path, RULES_FILE_MAX >> 20);
		return usage_err(cmd, "%s: cannot read --rules '%s': %m", cmd, path);
	}
	r = rules_parse_text(text, len, path, out, n, why, sizeof(why));
	free(text);
	if (r)
		return usage_err(cmd, "%s: %s; no rule was applied", cmd, why);
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
	r->rule.prefixlen = r->prefix; /* the datapath's next shorter lookup starts from it */
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
		if (xdp_rl_is_rate(&l[i]))
			off += snprintf(buf + off, len - off, "%srate %llu/%s burst %llu",
					i ? " " : "", (unsigned long long)l[i].limit, w,
					(unsigned long long)l[i].burst);
		else
			off += snprintf(buf + off, len - off, "%s%llu/%s", i ? " " : "",
					(unsigned long long)l[i].limit, w);
	}
}

void rule_describe(const struct rule_spec *r, char *buf, size_t len)
{
	char pfx[INET6_ADDRSTRLEN + 8], lay[160], sel[96] = "", ban[40];

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
	ban[0] = '\0';
	if (r->rule.ban_ns) {
		strcpy(ban, " ban ");
		fmt_duration(r->rule.ban_ns, ban + 5, sizeof(ban) - 5);
	}
	/* "limit 10/1s 100/1m", or "rate 100/1s burst 200". */
	snprintf(buf, len, "%s%s %s%s%s%s", pfx, sel,
		 layers_any_rate(r->rule.layer, r->rule.nlayers) ? "" : "limit ", lay,
		 r->rule.flags & XDP_RL_RULE_F_SHARED ? " shared" : "", ban);
}

static int any_select(const struct rule_spec *r, void *ctx)
{
	*(int *)ctx |= !xdp_rl_select_all(&r->rule.select);
	return 0;
}

static int any_rate(const struct rule_spec *r, void *ctx)
{
	*(int *)ctx |= r->rule.action == XDP_RL_RULE_LIMIT &&
		       layers_any_rate(r->rule.layer, r->rule.nlayers);
	return 0;
}

static int any_ban(const struct rule_spec *r, void *ctx)
{
	*(int *)ctx |= r->rule.ban_ns != 0;
	return 0;
}

static int max_ban(const struct rule_spec *r, void *ctx)
{
	if (r->rule.ban_ns > *(__u64 *)ctx)
		*(__u64 *)ctx = r->rule.ban_ns;
	return 0;
}

void rules_summary_add(struct rules_summary *rs, const struct rule_spec *r)
{
	min_window(r, &rs->min_window);
	max_window(r, &rs->max_window);
	any_select(r, &rs->any_select);
	any_ban(r, &rs->any_ban);
	max_ban(r, &rs->max_ban);
	any_rate(r, &rs->any_rate);
}

void rules_summarize(const int *fd, const struct rule_spec *adding, struct rules_summary *rs)
{
	memset(rs, 0, sizeof(*rs));
	rules_foreach(fd, min_window, &rs->min_window);
	rules_foreach(fd, max_window, &rs->max_window);
	rules_foreach(fd, any_select, &rs->any_select);
	rules_foreach(fd, any_ban, &rs->any_ban);
	rules_foreach(fd, max_ban, &rs->max_ban);
	rules_foreach(fd, any_rate, &rs->any_rate);
	if (adding)
		rules_summary_add(rs, adding);
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

int rule_update(const int *fd, const struct rule_spec *r)
{
	struct xdp_rl_rule_key4 k4;
	struct xdp_rl_rule_key6 k6;
	struct xdp_rl_rule rule = r->rule;

	rule.prefixlen = r->prefix;
	rule_key(r, &k4, &k6);
	return r->addr.family == AF_INET ?
		       bpf_map_update_elem(fd[PIN_RULES4], &k4, &rule, BPF_EXIST) :
		       bpf_map_update_elem(fd[PIN_RULES6], &k6, &rule, BPF_EXIST);
}

struct collecting {
	struct rule_spec *v;
	size_t n, cap;
};

static int collect(const struct rule_spec *r, void *ctx)
{
	struct collecting *c = ctx;

	if (rules_add(&c->v, &c->n, &c->cap))
		return 1;
	c->v[c->n++] = *r;
	return 0;
}

int rules_collect(const int *fd, struct rule_spec **out, size_t *n)
{
	struct collecting c = {};

	if (rules_foreach(fd, collect, &c)) {
		free(c.v);
		errno = ENOMEM;
		return -1;
	}
	rules_sort(c.v, c.n);
	*out = c.v;
	*n = c.n;
	return 0;
}

/*
 * " --rate N/DUR" or " --burst B" (option @o) of @r's rate into @buf: its
 * length, 0 if it has none. The burst is said even when it is N, so that
 * the text says the whole limit.
 */
static size_t rate_format(const struct rule_spec *r, const struct opt_spec *o, char *buf,
			  size_t len)
{
	const struct xdp_rl_layer *l = &r->rule.layer[0];
	char w[32];
	int n;

	if (!r->rule.nlayers || !xdp_rl_is_rate(l))
		return 0;
	fmt_duration(l->window_ns, w, sizeof(w));
	n = o->id == OPT_RATE ?
		    snprintf(buf, len, " --%s %llu/%s", o->name, (unsigned long long)l->limit, w) :
		    snprintf(buf, len, " --%s %llu", o->name, (unsigned long long)l->burst);
	return n < 0 ? 0 : (size_t)n;
}

void rule_format(const struct rule_spec *r, char *buf, size_t len)
{
	char ports[XDP_RL_MAX_PORT_RANGES * 12 + 1], w[32];
	const struct opt_spec *o;
	size_t off;
	__u32 i;

	fmt_prefix(&r->addr, r->prefix, buf, len);
	off = strlen(buf);
	/* Each option that the rule has, as rule_parse takes it, in rule_opts' order. */
	for (o = rule_opts; o->name && off < len; o++) {
		switch (o->id) {
		case OPT_ALLOW:
		case OPT_DENY:
			if (r->rule.action ==
			    (o->id == OPT_ALLOW ? XDP_RL_RULE_ALLOW : XDP_RL_RULE_DENY))
				off += snprintf(buf + off, len - off, " --%s", o->name);
			break;
		case OPT_RATE:
		case OPT_BURST: off += rate_format(r, o, buf + off, len - off); break;
		case OPT_LAYER:
			for (i = 0; i < r->rule.nlayers && i < XDP_RL_MAX_LAYERS && off < len;
			     i++) {
				if (xdp_rl_is_rate(&r->rule.layer[i]))
					continue;
				fmt_duration(r->rule.layer[i].window_ns, w, sizeof(w));
				off += snprintf(buf + off, len - off, " --%s %llu/%s", o->name,
						(unsigned long long)r->rule.layer[i].limit, w);
			}
			break;
		case OPT_SHARED:
			if (r->rule.flags & XDP_RL_RULE_F_SHARED)
				off += snprintf(buf + off, len - off, " --%s", o->name);
			break;
		case OPT_BAN:
			if (r->rule.ban_ns) {
				fmt_duration(r->rule.ban_ns, w, sizeof(w));
				off += snprintf(buf + off, len - off, " --%s %s", o->name, w);
			}
			break;
		case OPT_PROTO:
			if (r->rule.select.proto)
				off += snprintf(buf + off, len - off, " --%s %s", o->name,
						word_name(proto_words, r->rule.select.proto));
			break;
		case OPT_DPORT:
			if (r->rule.select.nports) {
				fmt_ports(&r->rule.select, ports, sizeof(ports));
				off += snprintf(buf + off, len - off, " --%s %s", o->name, ports);
			}
			break;
		case OPT_SYN:
			if (r->rule.select.syn)
				off += snprintf(buf + off, len - off, " --%s", o->name);
			break;
		}
	}
}

int rule_same(const struct rule_spec *a, const struct rule_spec *b)
{
	char x[RULE_TEXT_MAX], y[RULE_TEXT_MAX];

	rule_format(a, x, sizeof(x));
	rule_format(b, y, sizeof(y));
	return !strcmp(x, y);
}

int rule_delete(const int *fd, const struct rule_spec *r)
{
	struct xdp_rl_rule_key4 k4;
	struct xdp_rl_rule_key6 k6;

	rule_key(r, &k4, &k6);
	return r->addr.family == AF_INET ? bpf_map_delete_elem(fd[PIN_RULES4], &k4) :
					   bpf_map_delete_elem(fd[PIN_RULES6], &k6);
}

const struct xdp_rl_rule *rule_lookup_within(const struct limiter *l, const struct ip_addr *a,
					     unsigned int maxlen, struct xdp_rl_rule *r)
{
	const struct xdp_rl_live *live = limiter_live(l);
	struct xdp_rl_rule_key4 k4 = { .prefixlen = maxlen < 32 ? maxlen : 32 };
	struct xdp_rl_rule_key6 k6 = { .prefixlen = maxlen < 128 ? maxlen : 128 };
	struct ip_addr m = *a;

	mask_addr(&m, a->family == AF_INET ? k4.prefixlen : k6.prefixlen);
	if (a->family == AF_INET) {
		memcpy(&k4.addr, m.bytes, 4);
		return live->nrules4 && !bpf_map_lookup_elem(l->fd[PIN_RULES4], &k4, r) ? r : NULL;
	}
	memcpy(k6.addr, m.bytes, 16);
	return live->nrules6 && !bpf_map_lookup_elem(l->fd[PIN_RULES6], &k6, r) ? r : NULL;
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

int rules_too_nested_with(const int *fd, const struct rule_spec *adding, char *why, size_t len)
{
	struct rule_spec *v = NULL;
	size_t n = 0, cap;
	int r;

	if (rules_collect(fd, &v, &n))
		return -1;
	cap = n; /* at least */
	if (vec_room(v, n, cap, 1, 1)) {
		free(v);
		return -1;
	}
	v[n++] = *adding;
	r = rules_too_nested(v, n, why, len) ? 1 : 0;
	free(v);
	return r;
}
