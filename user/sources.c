// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sources.c - the windows a limiter keeps, as a model (see sources.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>

#include "live.h"
#include "log.h"
#include "sources.h"

int source_open(const struct source *s)
{
	__u32 i;

	for (i = 0; i < s->nlayers; i++)
		if (s->count[i])
			return 1;
	return 0;
}

/*
 * Fill @src's windows from @st under @lay; @since is when the limits last
 * changed (struct xdp_rl_live).
 */
void source_fill(struct source *src, const struct xdp_rl_state *st,
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
void source_from(struct source *src, int id, const void *key,
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
	src->rule = rule_lookup(l, asked ? asked : &src->key, rbuf);
	if (src->rule && src->rule->action == XDP_RL_RULE_LIMIT &&
	    !(src->rule->flags & XDP_RL_RULE_F_SHARED)) {
		lay = src->rule->layer;
		n = src->rule->nlayers;
	}
	source_fill(src, st, lay, n, l->cfg.fixed.max_layers, now, live->limits_since_ns);
}


/*
 * Call @fn for every entry of the table pinned as @id with a window still
 * open. Returns 0, 1 if @fn asked to stop, -1 if the table cannot be read
 * (said on stderr).
 */
int foreach_source(const struct limiter *l, int id, source_fn fn, void *ctx)
{
	__u64 now = window_clock_ns(limiter_live(l)), i;
	struct xdp_rl_layers win;
	struct xdp_rl_rule rbuf;
	struct xdp_rl_slot *s;
	struct source src;
	struct mtable t;
	__u32 k[4];
	int r = 0;

	if (limiter_table(l, id, &t, "cannot read the sources of"))
		return -1;
	for (i = 0; i < mt_nslots(&t) && !r; i++) {
		s = mt_slot(&t, i);
		if (!mt_key(&t, s, k))
			continue;
		memcpy(win.layer, mt_windows(&t, s), t.layers * sizeof(win.layer[0]));
		source_from(&src, id, k, win.layer, l, now, NULL, &rbuf);
		if (source_open(&src) && fn(&src, ctx))
			r = 1;
	}
	mt_unmap(&t);
	return r;
}

/* The budget of the --shared rule @r, read into @src; 0 if it has none. */
int shared_read(const struct limiter *l, const struct rule_spec *r, struct source *src)
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
int foreach_window(const struct limiter *l, int all, source_fn fn, void *ctx)
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

__u64 sources_open(const struct limiter *l, int id)
{
	__u64 n = 0;

	foreach_source(l, id, count_one, &n);
	return n;
}

const char *limiter_unit(const struct limiter *l)
{
	return l->cfg.fixed.bytes ? "bytes" : "packets";
}

/* The key @a maps to under the limiter's prefixes, and the table holding it. */
int source_key(const struct limiter *l, struct ip_addr *a, __u32 k[4])
{
	mask_addr(a, a->family == AF_INET ? l->cfg.fixed.v4_prefix : l->cfg.fixed.v6_prefix);
	memset(k, 0, 16);
	memcpy(k, a->bytes, a->family == AF_INET ? 4 : 16);
	return a->family == AF_INET ? PIN_SRC4 : PIN_SRC6;
}

/* The /24 or /48 aggregate window @a is charged to when refused a slot. */
int agg_key(const struct ip_addr *a, struct ip_addr *agg, __u32 k[4])
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
int source_windows(const struct limiter *l, int id, const __u32 k[4],
		      struct xdp_rl_state *w, int forget)
{
	struct xdp_rl_slot *s;
	struct mtable t;

	if (limiter_table(l, id, &t, forget ? "cannot reset sources on" : "cannot read a source on"))
		return -1;
	s = mt_find(&t, k);
	if (s) {
		memcpy(w, mt_windows(&t, s), t.layers * sizeof(*w));
		if (forget)
			mt_close_windows(&t, s);
		/* The slot may have passed to another key between the find and the close. */
		if (forget && !mt_find(&t, k) && s->tag)
			log_err("warning: on '%s', the slot passed to another source as it was reset; "
			    "that source's window restarted too", l->ifname);
	}
	mt_unmap(&t);
	return s != NULL;
}

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
int forget_table(const struct limiter *l, int id, __u64 *n)
{
	__u64 now = window_clock_ns(limiter_live(l)), i;
	struct xdp_rl_slot *s;
	struct mtable t;
	__u32 k[4];

	if (limiter_table(l, id, &t, "cannot reset sources on"))
		return -1;
	for (i = 0; i < mt_nslots(&t); i++) {
		s = mt_slot(&t, i);
		if (!mt_key(&t, s, k))
			continue;
		*n += any_open(mt_windows(&t, s), t.layers, now);
		mt_close_windows(&t, s);
	}
	mt_unmap(&t);
	return 0;
}

/*
 * Start the budget of the --shared rule @r afresh. Not in place, as the
 * tables are (the datapath's atomics may race the write): what a packet
 * charges meanwhile is lost, as when a reset comes a moment later.
 */
int shared_forget(const struct limiter *l, const struct rule_spec *r, __u64 *n)
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

int forget_all(const struct limiter *l, __u64 *n)
{
	struct forget_walk fw = { .l = l };

	if (forget_table(l, PIN_SRC4, &fw.n) || forget_table(l, PIN_SRC6, &fw.n) ||
	    forget_table(l, PIN_AGG4, &fw.n) || forget_table(l, PIN_AGG6, &fw.n))
		return -1;
	rules_foreach(l->fd, shared_forget_one, &fw);
	*n = fw.n;
	if (fw.err) {
		errno = fw.err;
		log_err("cannot reset the shared budgets on '%s': %m", l->ifname);
		return -1;
	}
	return 0;
}

/* The layers a per-source rule sets for key @k of the table pinned as @id (0: none). */
static __u32 rule_layers_of(const struct limiter *l, int id, const __u32 k[4])
{
	struct xdp_rl_rule_key4 k4 = { .prefixlen = 32, .addr = k[0] };
	struct xdp_rl_rule_key6 k6 = { .prefixlen = 128 };
	int v6 = pin_is_v6(id);
	struct xdp_rl_rule r;

	memcpy(k6.addr, k, sizeof(k6.addr));
	if (bpf_map_lookup_elem(l->fd[v6 ? PIN_RULES6 : PIN_RULES4], v6 ? (void *)&k6 : (void *)&k4,
				&r) || r.action != XDP_RL_RULE_LIMIT || (r.flags & XDP_RL_RULE_F_SHARED))
		return 0;
	return r.nlayers;
}

/*
 * After `set` left fewer layers in force (@from of @to): close the windows
 * of the layers dropped, so that a layer put back later starts empty,
 * rather than with the count it had. Keys whose per-source rule still uses
 * those layers keep them. (The datapath closes them too, at a key's next
 * packet; this covers keys that send none before the layer comes back.)
 */
void close_dropped_layers(const struct limiter *l, __u32 from, __u32 to)
{
	static const int ids[] = { PIN_SRC4, PIN_SRC6, PIN_AGG4, PIN_AGG6 };
	int check_rules = rules_max_layers_fd(l->fd) > from;
	struct xdp_rl_slot *s;
	struct mtable t;
	__u32 k[4], n;
	size_t i;
	__u64 j;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		if (limiter_table(l, ids[i], &t, "warning: cannot clear the layers dropped on"))
			continue;
		for (j = 0; j < mt_nslots(&t); j++) {
			s = mt_slot(&t, j);
			if (!mt_key(&t, s, k))
				continue;
			n = check_rules ? rule_layers_of(l, ids[i], k) : 0;
			mt_close_layers(&t, s, n > from ? n : from, to);
		}
		mt_unmap(&t);
	}
}
