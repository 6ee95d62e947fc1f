// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sources.c - the windows a limiter keeps, as a model (see sources.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "admin.h"
#include "lists.h"
#include "live.h"
#include "log.h"
#include "mapmem.h"
#include "skel.h"
#include "sources.h"
#include "vec.h"

/* ---- limit sets --------------------------------------------------------------- */

struct rules_grow {
	struct rule_spec *v;
	size_t n, cap;
	int err;
};

static int keep_limit_rule(const struct rule_spec *r, void *ctx)
{
	struct rules_grow *g = ctx;

	if (r->rule.action != XDP_RL_RULE_LIMIT)
		return 0;
	if (vec_room(g->v, g->n, g->cap, 1, 64)) {
		g->err = ENOMEM;
		return 1;
	}
	g->v[g->n++] = *r;
	return 0;
}

static int by_lsid(const void *a, const void *b)
{
	const struct rule_spec *x = a, *y = b;

	return x->rule.lsid < y->rule.lsid ? -1 : x->rule.lsid > y->rule.lsid;
}

int limit_sets_load(const struct limiter *l, struct limit_sets *ls)
{
	struct rules_grow g = {};

	memset(ls, 0, sizeof(*ls));
	ls->l = l;
	rules_foreach(l->fd, keep_limit_rule, &g);
	if (g.err) {
		free(g.v);
		errno = g.err;
		return -1;
	}
	if (g.n)
		qsort(g.v, g.n, sizeof(*g.v), by_lsid);
	ls->rules = g.v;
	ls->n = g.n;
	return 0;
}

void limit_sets_free(struct limit_sets *ls)
{
	free(ls->rules);
	ls->rules = NULL;
	ls->n = 0;
}

void limit_set_global(const struct xdp_rl_live *live, struct limit_set *s)
{
	memset(s, 0, sizeof(*s));
	s->lsid = live->lsid;
	s->n = live->nlayers;
	memcpy(s->lay, live->layer, sizeof(s->lay));
}

void limit_set_rule(const struct rule_spec *r, struct limit_set *s)
{
	memset(s, 0, sizeof(*s));
	s->lsid = r->rule.lsid;
	s->n = r->rule.nlayers;
	memcpy(s->lay, r->rule.layer, sizeof(s->lay));
	s->is_rule = 1;
	s->addr = r->addr;
	s->prefix = r->prefix;
	s->rule_id = r->rule.id;
	s->shared = !!(r->rule.flags & XDP_RL_RULE_F_SHARED);
}

int limit_set_find(const struct limit_sets *ls, __u32 lsid, struct limit_set *set)
{
	const struct xdp_rl_live *live = limiter_live(ls->l);
	struct rule_spec probe = { .rule = { .lsid = lsid } };
	const struct rule_spec *r;

	if (lsid == live->lsid) {
		limit_set_global(live, set);
		return 1;
	}
	r = ls->n ? bsearch(&probe, ls->rules, ls->n, sizeof(*ls->rules), by_lsid) : NULL;
	if (!r)
		return 0;
	limit_set_rule(r, set);
	return 1;
}

/* ---- drops of windows with no budget left (bpf/hot.h) ------------------------------ */

int window_words_base(const struct limiter *l, __u64 base[XDP_RL_T_SHARED + 1], __u64 *need)
{
	struct skel_tables tl;

	/* As the program was told at load (an LRU element holds its own words: none here). */
	skel_tables(&l->cfg.fixed, &tl);
	memcpy(base, tl.drops_base, sizeof(tl.drops_base));
	*need = tl.ndrops;
	return 0;
}

/*
 * The drop words of a limiter and the fleet's share of its windows (both
 * mapped), and what each CPU holds in its hot entries (read once: a
 * command is short), for the windows shown.
 */
struct drops_view {
	const struct limiter *l;
	__u64 *words, *remote, *bans;
	size_t len, nwords;
	__u64 base[XDP_RL_T_SHARED + 1];
	struct xdp_rl_hot *pending; /* every CPU's entries, summed by window, sorted */
	size_t npending;
};

static int by_hot_id(const void *a, const void *b)
{
	const struct xdp_rl_hot *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static struct drops_view dv;

void drops_forget(void)
{
	mapmem_unmap(dv.words, dv.len);
	mapmem_unmap(dv.remote, dv.len);
	mapmem_unmap(dv.bans, dv.len);
	free(dv.pending);
	memset(&dv, 0, sizeof(dv));
}

/* Keep @h in dv.pending; -1 if out of memory. */
static int pending_add(const struct xdp_rl_hot *h, size_t *cap)
{
	if (vec_room(dv.pending, dv.npending, *cap, 1, 256))
		return -1;
	dv.pending[dv.npending++] = *h;
	return 0;
}

/*
 * Every CPU's hot entries that hold drops, into dv.pending: read in batches
 * (the map has up to XDP_RL_HOT_ENTRIES_MAX entries on each CPU, a syscall
 * each would make `top` slow). 0, or -1 with errno.
 */
static int hot_read(int fd, int ncpu)
{
	const __u32 chunk = 1024;
	__u32 in = 0, out = 0, count, i, *keys;
	struct xdp_rl_hot *vals, *h;
	size_t cap = 0;
	int r = 0, first = 1, c;

	keys = calloc(chunk, sizeof(*keys));
	vals = calloc((size_t)chunk * ncpu, sizeof(*vals));
	if (!keys || !vals) {
		r = -1;
		goto out;
	}
	for (;;) {
		count = chunk;
		r = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, keys, vals, &count, NULL);
		if (r && errno != ENOENT)
			break;
		for (i = 0; i < count; i++) {
			for (c = 0; c < ncpu; c++) {
				h = &vals[(size_t)i * ncpu + c];
				if (h->id && h->drops && pending_add(h, &cap)) {
					r = -1;
					goto out;
				}
			}
		}
		if (r) { /* ENOENT: that was the last of them */
			r = 0;
			break;
		}
		in = out;
		first = 0;
	}
out:
	free(keys);
	free(vals);
	return r ? -1 : 0;
}

/* A map laid out as `drops`, read only; NULL if it cannot be. */
static __u64 *map_words(int fd, size_t nwords)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.max_entries != nwords)
		return NULL;
	return mapmem_map(fd, nwords * sizeof(__u64), PROT_READ);
}

/* The view of @l's drops, made on first use; NULL if they cannot be read. */
static const struct drops_view *drops_of_limiter(const struct limiter *l)
{
	int ncpu = libbpf_num_possible_cpus();
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	__u64 n = 0;
	size_t i;

	if (dv.l == l && dv.words)
		return &dv;
	drops_forget();
	if (window_words_base(l, dv.base, &n) ||
	    bpf_obj_get_info_by_fd(l->fd[PIN_DROPS], &info, &len) || info.max_entries < n)
		return NULL;
	dv.nwords = info.max_entries;
	dv.len = mapmem_len(dv.nwords * sizeof(__u64));
	dv.words = map_words(l->fd[PIN_DROPS], dv.nwords);
	if (!dv.words)
		return NULL;
	/* The fleet's share: where it cannot be read, none is shown. */
	dv.remote = map_words(l->fd[PIN_REMOTE], dv.nwords);
	/* The bans (--ban): where they cannot be read, none is shown. */
	dv.bans = map_words(l->fd[PIN_BANS], dv.nwords);
	/* Each CPU's entries may hold other windows than another's: all of them, by window. */
	if (hot_read(l->fd[PIN_HOT], ncpu > 0 ? ncpu : 1))
		return NULL;
	if (dv.pending && dv.npending) {
		qsort(dv.pending, dv.npending, sizeof(*dv.pending), by_hot_id);
		for (i = 1, n = 0; i < dv.npending; i++) {
			if (dv.pending[i].id == dv.pending[n].id)
				dv.pending[n].drops += dv.pending[i].drops;
			else
				dv.pending[++n] = dv.pending[i];
		}
		dv.npending = n + 1;
	}
	dv.l = l;
	return &dv;
}

/*
 * The drops of window @gen of layer @layer of slot @index in table @t,
 * counted apart from its count (bpf/hot.h): its word's, while it names that
 * generation, and the CPUs' pending ones. Read while the window may still
 * be flooded, the sum is off by at most XDP_RL_HOT_FLUSH packets per CPU
 * either way (a CPU's drops moving to the word between the two reads: the
 * entries are read first for the bucket table's words, after an LRU
 * element's).
 */
__u64 window_drops(const struct limiter *l, __u32 t, __u64 index, __u32 layer, __u64 gen,
		   const __u64 *word)
{
	const struct drops_view *d = drops_of_limiter(l);
	__u32 room = t == XDP_RL_T_SHARED ? XDP_RL_MAX_LAYERS : l->cfg.fixed.max_layers;
	__u64 id = xdp_rl_hot_id(t, index, layer, gen), k, w, n = 0;

	if (!d)
		return 0;
	k = xdp_rl_drops_index(d->base, t, index, layer, room);
	if (word || k < d->nwords) {
		w = word ? *word : __atomic_load_n(&d->words[k], __ATOMIC_RELAXED);
		if (w >> XDP_RL_DROPS_BITS == (gen & 0xffff))
			n += w & XDP_RL_DROPS_MASK;
	}
	if (d->npending) {
		struct xdp_rl_hot probe = { .id = id }, *p;

		p = bsearch(&probe, d->pending, d->npending, sizeof(probe), by_hot_id);
		if (p)
			n += p->drops;
	}
	return n;
}

__u64 window_remote(const struct limiter *l, __u32 t, __u64 index, __u32 layer, __u64 gen,
		    const __u64 *word)
{
	const struct drops_view *d = drops_of_limiter(l);
	__u32 room = t == XDP_RL_T_SHARED ? XDP_RL_MAX_LAYERS : l->cfg.fixed.max_layers;
	__u64 k, w;

	if (!(limiter_live(l)->flags & XDP_RL_F_FLEET))
		return 0;
	if (word) {
		w = *word;
	} else {
		if (!d || !d->remote)
			return 0;
		k = xdp_rl_drops_index(d->base, t, index, layer, room);
		if (k >= d->nwords)
			return 0;
		w = __atomic_load_n(&d->remote[k], __ATOMIC_RELAXED);
	}
	return w >> XDP_RL_REMOTE_BITS == (gen & 0xffff) ? w & XDP_RL_REMOTE_MASK : 0;
}

void source_read_ban(const struct limiter *l, struct source *src, const struct xdp_rl_state *st,
		     __u32 n, __u32 t, __u64 index, const __u64 *words, __u64 now)
{
	const struct drops_view *d = words ? NULL : drops_of_limiter(l);
	__u32 room = l->cfg.fixed.max_layers, i;
	__u64 w, k;

	src->ban_ends_ns = src->ban_ends_in_ns = 0;
	/* As the datapath: bans are looked at only while they may hold (XDP_RL_F_BANS). */
	if (!st || t >= XDP_RL_T_SHARED || !(limiter_live(l)->flags & XDP_RL_F_BANS))
		return;
	for (i = 0; i < n && i < room && i < XDP_RL_MAX_LAYERS; i++) {
		if (words) {
			w = words[i];
		} else {
			if (!d || !d->bans)
				return;
			k = xdp_rl_drops_index(d->base, t, index, i, room);
			if (k >= d->nwords)
				return;
			w = __atomic_load_n(&d->bans[k], __ATOMIC_RELAXED);
		}
		if (xdp_rl_ban_holds(w, st[i].count_gen, now) &&
		    xdp_rl_start_ns(w) > src->ban_ends_ns)
			src->ban_ends_ns = xdp_rl_start_ns(w);
	}
	if (src->ban_ends_ns)
		src->ban_ends_in_ns = src->ban_ends_ns - now;
}

/*
 * Add to @src's open windows (from @st) the drops counted apart from their
 * counts, and note the fleet's share of each; @drops and @remote: those
 * words if the entry holds them (an LRU element), else NULL (the maps').
 */
static void source_add_drops(const struct limiter *l, struct source *src,
			     const struct xdp_rl_state *st, __u32 t, __u64 index,
			     const __u64 *drops, const __u64 *remote)
{
	int ncpu = libbpf_num_possible_cpus();
	__u32 i;

	for (i = 0; st && i < src->nlayers; i++) {
		if (!src->count[i])
			continue;
		if (xdp_rl_is_rate(&src->lay[i])) {
			/* A rate's drops are its episode's, apart from what it owes. */
			src->dropped[i] = window_drops(l, t, index, i,
						       xdp_rl_gen_of_count(st[i].count_gen),
						       drops ? &drops[i] : NULL);
			if (!src->tokens[i])
				src->count_error_packets[i] =
					(__u64)XDP_RL_HOT_FLUSH * (ncpu > 0 ? ncpu : 1);
			continue;
		}
		src->remote[i] = window_remote(l, t, index, i, xdp_rl_gen_of_count(st[i].count_gen),
					       remote ? &remote[i] : NULL);
		/* A window that filled up (maybe under a lower limit since raised) has drops apart. */
		src->count[i] += window_drops(l, t, index, i, xdp_rl_gen_of_count(st[i].count_gen),
					      drops ? &drops[i] : NULL);
		/* Full here, or through the fleet's share: drops may be in flight. */
		if (xdp_rl_count(st[i].count_gen) + src->remote[i] >= src->lay[i].limit)
			src->count_error_packets[i] =
				(__u64)XDP_RL_HOT_FLUSH * (ncpu > 0 ? ncpu : 1);
	}
}

/* ---- windows as shown ------------------------------------------------------------ */

int source_open(const struct source *s)
{
	__u32 i;

	for (i = 0; i < s->nlayers; i++)
		if (s->count[i])
			return 1;
	return 0;
}

int source_banned(const struct source *s)
{
	return s->ban_ends_in_ns != 0;
}

/*
 * Layer @i of @src, the rate @l, from its state @st (NULL: none) at @now
 * (bpf/rate.h): what the key owes, the units it may send at once, and when
 * a packet of one unit passes; whether its episode began under these limits.
 */
static void rate_fill_src(struct source *src, __u32 i, const struct xdp_rl_state *st,
			  const struct xdp_rl_layer *l, __u64 now, __u64 since, int bytes)
{
	__u64 tat = st ? xdp_rl_rate_tat(st->start_gen, st->count_gen) : 0, owes;
	__u64 start = st ? xdp_rl_start_ns(st->start_gen) : 0,
	      cost = xdp_rl_rate_cost(l->per_fp, 1), tau = xdp_rl_rate_tau(l, bytes);

	/* Owing nothing (or state on another clock): the whole burst, as far as tau holds it. */
	if (tat <= now || start > now + XDP_RL_AHEAD_MAX_NS)
		tat = now;
	owes = tat - now;
	src->count[i] = src->charged[i] =
		(__u64)((((unsigned __int128)owes << XDP_RL_RATE_FRAC_BITS) + l->per_fp - 1) /
			l->per_fp);
	/* Packets cost cost(1) each, bytes their share of per_fp (xdp_rl_rate_tau). */
	src->tokens[i] =
		owes >= tau ? 0 :
		bytes	    ? (__u64)(((unsigned __int128)(tau - owes) << XDP_RL_RATE_FRAC_BITS) /
				      l->per_fp) :
			      (tau - owes) / cost;
	if (src->tokens[i] > l->burst)
		src->tokens[i] = l->burst;
	src->next_pass_ns[i] = tat + cost > now + tau ? tat + cost - now - tau : 0;
	if (!owes)
		return;
	src->started_ns[i] = start;
	src->expires_in_ns[i] = owes;
	if (start < since)
		src->same_limits = 0;
}

void source_fill(struct source *src, const struct xdp_rl_state *st, const struct xdp_rl_layer *lay,
		 __u32 n, __u32 room, __u64 now, __u64 since, int bytes)
{
	__u64 start;
	__u32 i;

	src->nlayers = n < room ? n : room;
	src->same_limits = 1;
	memcpy(src->lay, lay, src->nlayers * sizeof(*lay));
	for (i = 0; i < src->nlayers; i++) {
		src->count[i] = src->expires_in_ns[i] = src->started_ns[i] = 0;
		src->remote[i] = src->charged[i] = 0;
		src->by_command[i] = src->by_command_in_budget[i] = 0;
		src->tokens[i] = src->next_pass_ns[i] = src->dropped[i] = 0;
		if (xdp_rl_is_rate(&lay[i])) {
			rate_fill_src(src, i, st ? &st[i] : NULL, &lay[i], now, since, bytes);
			continue;
		}
		if (!st ||
		    xdp_rl_gen_of_start(st[i].start_gen) != xdp_rl_gen_of_count(st[i].count_gen) ||
		    xdp_rl_window_over(st[i].start_gen, now, lay[i].window_ns))
			continue;
		start = xdp_rl_start_ns(st[i].start_gen);
		src->count[i] = src->charged[i] = xdp_rl_count(st[i].count_gen);
		src->started_ns[i] = start;
		src->expires_in_ns[i] =
			start + lay[i].window_ns > now ? start + lay[i].window_ns - now : 0;
		/* A window that began before a change counted under other limits. */
		if (start < since)
			src->same_limits = 0;
	}
}

/* When a source was last @seen, on CLOCK_MONOTONIC (0 if the tick clock is unknown). */
static __u64 seen_mono(const struct xdp_rl_live *live, __u64 seen)
{
	__u64 tick = seen >> 16;

	if (!live->tick_ns || !tick)
		return 0;
	return tick * live->tick_ns + live->jiffies_base_ns;
}

/* Whether @a has no bits set past @prefix. */
static int masked_by(const struct ip_addr *a, unsigned int prefix)
{
	struct ip_addr m = *a;

	mask_addr(&m, prefix);
	return !memcmp(m.bytes, a->bytes, sizeof(m.bytes));
}

/* A key of the table pinned as @id and its windows @st, under limit set @set. */
static void source_from(struct source *src, int id, const __u32 k[4], __u32 lsid,
			const struct xdp_rl_state *st, const struct limiter *l, __u64 now,
			const struct limit_set *set)
{
	const struct xdp_rl_live *live = limiter_live(l);
	int family = pin_is_v6(id) ? AF_INET6 : AF_INET;

	memset(src, 0, sizeof(*src));
	src->has_port = key_decode(k, family == AF_INET6, l->cfg.fixed.key,
				   id == PIN_SRC6 && live->link_local == XDP_RL_LL_ADDRESS,
				   &src->key, &src->port);
	src->lsid = lsid;
	if (id == PIN_AGG4 || id == PIN_AGG6) {
		src->kind = "aggregate";
		src->prefix = id == PIN_AGG4 ? XDP_RL_AGG4_PREFIX : XDP_RL_AGG6_PREFIX;
	} else {
		src->prefix = family == AF_INET ? l->cfg.fixed.v4_prefix : l->cfg.fixed.v6_prefix;
		if (addr_link_local(&src->key) && !masked_by(&src->key, src->prefix) &&
		    (family == AF_INET || !src->has_port))
			src->prefix = family == AF_INET ? 32 : 128; /* --link-local per-address */
	}
	if (set->is_rule) {
		src->has_rule = 1;
		src->rule = set->addr;
		src->rule_prefix = set->prefix;
	}
	source_fill(src, st, set->lay, set->n, l->cfg.fixed.max_layers, now, live->limits_since_ns,
		    l->cfg.fixed.bytes);
}

/* What foreach_source hands each entry of a table. */
struct source_walk {
	const struct limiter *l;
	int id;
	__u64 now;
	const struct limit_sets *sets;
	source_fn fn;
	void *ctx;
};

/* The key of entry @e with its windows under the limits in force, to the walk's function. */
static int source_one(const struct mt_entry *e, void *ctx)
{
	const struct source_walk *w = ctx;
	struct limit_set set;
	struct source src;

	if (!limit_set_find(w->sets, e->lsid, &set))
		return 0;
	source_from(&src, w->id, e->k, e->lsid, e->w, w->l, w->now, &set);
	source_add_drops(w->l, &src, e->w, pin_table(w->id), e->id, e->has_words ? e->drops : NULL,
			 e->has_words ? e->remote : NULL);
	source_read_ban(w->l, &src, e->w, set.n, pin_table(w->id), e->id,
			e->has_words ? e->bans : NULL, w->now);
	src.seen_mono_ns = seen_mono(limiter_live(w->l), e->seen);
	return (source_open(&src) || source_banned(&src)) && w->fn(&src, w->ctx);
}

int foreach_source(const struct limiter *l, int id, source_fn fn, void *ctx)
{
	struct limit_sets sets;
	struct source_walk w = { l, id, window_clock_ns(limiter_live(l)), &sets, fn, ctx };
	struct mtable t;
	int r;

	if (limit_sets_load(l, &sets)) {
		log_err("cannot read the rules of '%s': %m", l->ifname);
		return -1;
	}
	if (limiter_table(l, id, &t, "cannot read the sources of")) {
		limit_sets_free(&sets);
		return -1;
	}
	r = mt_foreach(&t, source_one, &w);
	if (r < 0)
		log_err("cannot read the sources of '%s': %m", l->ifname);
	mt_unmap(&t);
	limit_sets_free(&sets);
	return r;
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
	src->has_rule = 1;
	src->rule = r->addr;
	src->rule_prefix = r->prefix;
	source_fill(src, st.layer, r->rule.layer, r->rule.nlayers, XDP_RL_MAX_LAYERS,
		    window_clock_ns(limiter_live(l)), limiter_live(l)->limits_since_ns,
		    l->cfg.fixed.bytes);
	source_add_drops(l, src, st.layer, XDP_RL_T_SHARED, r->rule.id, NULL, NULL);
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

int foreach_window(const struct limiter *l, int all, source_fn fn, void *ctx)
{
	struct shared_walk w = { l, fn, ctx };
	size_t i;
	int r;

	for (i = 0; i < (all ? XDP_RL_T_SHARED : XDP_RL_T_AGG4); i++) { /* sources: SRC4, SRC6 */
		r = foreach_source(l, pin_tables[i], fn, ctx);
		if (r)
			return r;
	}
	return all ? rules_foreach(l->fd, shared_one, &w) : 0;
}

struct exhausted_walk {
	__u64 n, last_ns;
};

static int exhausted_one(const struct source *src, void *ctx)
{
	struct exhausted_walk *w = ctx;
	__u32 i;

	for (i = 0; i < src->nlayers; i++) {
		/* A rate with no unit left: blocked until its next pass. */
		if (xdp_rl_is_rate(&src->lay[i]) && src->count[i] && !src->tokens[i]) {
			w->n++;
			if (src->next_pass_ns[i] > w->last_ns)
				w->last_ns = src->next_pass_ns[i];
			break;
		}
		if (!xdp_rl_is_rate(&src->lay[i]) && src->count[i] &&
		    src->count[i] >= src->lay[i].limit) {
			w->n++;
			if (src->expires_in_ns[i] > w->last_ns)
				w->last_ns = src->expires_in_ns[i];
			break;
		}
	}
	return 0;
}

int windows_exhausted(const struct limiter *l, __u64 *n, __u64 *last_ns)
{
	struct exhausted_walk w = { 0, 0 };
	int r = foreach_window(l, 1, exhausted_one, &w);

	*n = w.n;
	*last_ns = w.last_ns;
	return r < 0 ? -1 : 0;
}

__u64 sources_capacity(const struct xdp_rl_fixed *f)
{
	if (f->table == XDP_RL_TABLE_LRU)
		return f->max_sources;
	return (__u64)xdp_rl_buckets(f->max_sources) * XDP_RL_BUCKET_SLOTS;
}

const char *limiter_unit(const struct limiter *l)
{
	return l->cfg.fixed.bytes ? "bytes" : "packets";
}

/* ---- what limits an address ----------------------------------------------------- */

/* The limits @t's key is charged under: its rule's, if it has a per-source one. */
static void target_limits(const struct limiter *l, const struct xdp_rl_rule *rule, struct target *t)
{
	struct rule_spec r = {};

	limit_set_global(limiter_live(l), &t->set);
	if (rule && rule->action == XDP_RL_RULE_LIMIT) {
		r.addr = t->rule_addr;
		r.prefix = t->rule_prefix;
		r.rule = *rule;
		limit_set_rule(&r, &t->set);
	}
}

void fmt_key(const struct ip_addr *key, unsigned int prefix, int has_port, unsigned int port,
	     char *buf, size_t len)
{
	size_t n;

	fmt_prefix(key, prefix, buf, len);
	n = strlen(buf);
	if (has_port && n < len)
		snprintf(buf + n, len - n, " port %u", port);
}

/* Put @port into @t's key, as the datapath does (key_make), if its keys hold one. */
static void target_port(const struct limiter *l, struct target *t, unsigned int port, int whole6)
{
	if (!xdp_rl_key_port(l->cfg.fixed.key) || whole6)
		return;
	t->has_port = 1;
	t->port = port & 0xffff;
	if (t->key.family == AF_INET)
		t->k[1] = htonl(t->port);
	else
		t->k[3] |= htonl(t->port);
}

void target_of(const struct limiter *l, const struct ip_addr *a, unsigned int port,
	       struct target *t)
{
	const int ll = addr_link_local(a) ? (int)limiter_live(l)->link_local : -1;
	struct xdp_rl_rule rbuf;
	const struct xdp_rl_rule *rule;
	struct list_prefix lp;
	int kind;

	memset(t, 0, sizeof(*t));
	/* As the datapath: an exempt source is passed before any rule is looked up. */
	if (ll == XDP_RL_LL_EXEMPT) {
		t->kind = TARGET_EXEMPT;
		return;
	}
	rule = rule_lookup(l, a, &rbuf);
	if (rule) {
		t->has_rule = 1;
		t->rule = *rule;
		rule_prefix_of(l, a, rule->id, &t->rule_addr, &t->rule_prefix);
	}
	/* A listed prefix longer than the rule's judges it, as in the datapath. */
	if (lists_lookup(l, a, &kind, &lp) > 0 && (!rule || lp.len > t->rule_prefix)) {
		t->kind = kind == LIST_DENY ? TARGET_DENY : TARGET_ALLOW;
		t->by_list = 1;
		t->rule_addr = lp.addr;
		t->rule_prefix = lp.len;
		return;
	}
	target_limits(l, rule, t);
	if (rule && rule->action == XDP_RL_RULE_ALLOW) {
		t->kind = TARGET_ALLOW;
		return;
	}
	if (rule && rule->action == XDP_RL_RULE_DENY) {
		t->kind = TARGET_DENY;
		return;
	}
	if (rule && (rule->flags & XDP_RL_RULE_F_SHARED)) {
		t->kind = TARGET_SHARED;
		t->key = t->rule_addr;
		t->prefix = t->rule_prefix;
		return;
	}
	t->kind = TARGET_KEY;
	t->key = *a;
	t->prefix = a->family == AF_INET ? l->cfg.fixed.v4_prefix : l->cfg.fixed.v6_prefix;
	if (ll == XDP_RL_LL_ADDRESS)
		t->prefix = a->family == AF_INET ? 32 : 128; /* keyed by its whole address */
	/* With a port, an IPv6 key's last 16 bits are the port's (--v6-prefix at most 112). */
	if (a->family == AF_INET6 && xdp_rl_key_port(l->cfg.fixed.key) &&
	    t->prefix > XDP_RL_KEY6_PORT_PREFIX && ll != XDP_RL_LL_ADDRESS)
		t->prefix = XDP_RL_KEY6_PORT_PREFIX;
	mask_addr(&t->key, t->prefix);
	memcpy(t->k, t->key.bytes, a->family == AF_INET ? 4 : 16);
	t->id = a->family == AF_INET ? PIN_SRC4 : PIN_SRC6;
	target_port(l, t, port, a->family == AF_INET6 && ll == XDP_RL_LL_ADDRESS);
}

void target_aggregate(const struct limiter *l, const struct ip_addr *a, unsigned int port,
		      struct target *t)
{
	target_of(l, a, port, t);
	if (t->kind != TARGET_KEY)
		return;
	t->key = *a;
	t->prefix = a->family == AF_INET ? XDP_RL_AGG4_PREFIX : XDP_RL_AGG6_PREFIX;
	mask_addr(&t->key, t->prefix);
	memset(t->k, 0, sizeof(t->k));
	memcpy(t->k, t->key.bytes, a->family == AF_INET ? 4 : 16);
	t->id = a->family == AF_INET ? PIN_AGG4 : PIN_AGG6;
	t->has_port = 0;
	target_port(l, t, port, 0);
}

int target_read(const struct limiter *l, const struct target *t, struct source *src)
{
	const struct xdp_rl_live *live = limiter_live(l);
	__u64 now = window_clock_ns(live);
	struct rule_spec rs;
	struct mt_entry e;
	struct mtable mt;
	int found;

	memset(src, 0, sizeof(*src));
	if (t->kind == TARGET_SHARED) {
		memset(&rs, 0, sizeof(rs));
		rs.addr = t->rule_addr;
		rs.prefix = t->rule_prefix;
		rs.rule = t->rule;
		return shared_read(l, &rs, src);
	}
	if (t->kind != TARGET_KEY)
		return 0;
	if (limiter_table(l, t->id, &mt, "cannot read a source on"))
		return -1;
	found = mt_get(&mt, t->k, t->set.lsid, &e);
	mt_unmap(&mt);
	if (found < 0) {
		log_err("cannot read a source on '%s': %m", l->ifname);
		return -1;
	}
	/* t->set is its per-source rule's (prefix included), as target_limits made it. */
	source_from(src, t->id, t->k, t->set.lsid, found ? e.w : NULL, l, now, &t->set);
	if (found) {
		src->seen_mono_ns = seen_mono(live, e.seen);
		source_add_drops(l, src, e.w, pin_table(t->id), e.id, e.has_words ? e.drops : NULL,
				 e.has_words ? e.remote : NULL);
		source_read_ban(l, src, e.w, t->set.n, pin_table(t->id), e.id,
				e.has_words ? e.bans : NULL, now);
	}
	return found;
}

/* ---- reset --all ----------------------------------------------------------------- */

struct forget_walk {
	const struct limiter *l;
	__u64 open;
	int err;
};

static int count_open(const struct source *src, void *ctx)
{
	(void)src;
	((struct forget_walk *)ctx)->open++;
	return 0;
}

static int shared_forget_one(const struct rule_spec *r, void *ctx)
{
	struct forget_walk *w = ctx;

	if (r->rule.action != XDP_RL_RULE_LIMIT || !(r->rule.flags & XDP_RL_RULE_F_SHARED))
		return 0;
	if (admin_reset_shared(w->l, r->rule.id, 0, XDP_RL_MAX_LAYERS, 0, NULL) < 0)
		w->err = errno;
	return 0;
}

int forget_all(const struct limiter *l, __u64 *n)
{
	struct forget_walk fw = { .l = l };
	__u64 closed = 0;
	size_t i;

	/* What was open, for the message; then everything, open or not. */
	if (foreach_window(l, 1, count_open, &fw) < 0)
		return -1;
	for (i = 0; i < XDP_RL_T_SHARED; i++) {
		if (admin_close_table(l, pin_tables[i], 0, XDP_RL_MAX_LAYERS, &closed)) {
			log_err("cannot reset the sources of '%s': %s", l->ifname,
				admin_strerror(errno));
			return -1;
		}
	}
	rules_foreach(l->fd, shared_forget_one, &fw);
	*n = fw.open;
	if (fw.err) {
		errno = fw.err;
		log_err("cannot reset the shared budgets of '%s': %s", l->ifname,
			admin_strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- what commands put into windows ----------------------------------------------- */

static void charge_key_of(const struct target *t, struct xdp_rl_charge_key *k)
{
	memset(k, 0, sizeof(*k));
	if (t->kind == TARGET_SHARED) {
		k->table = XDP_RL_CHARGE_SHARED;
		k->lsid = t->rule.id;
		return;
	}
	k->table = pin_table(t->id);
	k->lsid = t->set.lsid;
	memcpy(k->k, t->k, sizeof(k->k));
}

/* Make room: forget the records whose windows have all ended by @now. */
static void charges_prune(int fd, __u64 now)
{
	struct xdp_rl_charge_key k, next;
	struct xdp_rl_charge rec;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		if (!bpf_map_lookup_elem(fd, &k, &rec) && rec.ends_ns <= now)
			bpf_map_delete_elem(fd, &k);
	}
}

int charges_note(const struct limiter *l, const struct target *t, const struct source *before,
		 __u64 n, int fresh)
{
	int fd = l->fd[PIN_CHARGES];
	__u64 now = window_clock_ns(limiter_live(l)), cb, lim;
	struct xdp_rl_charge_key k;
	struct xdp_rl_charge rec;
	struct source after;
	__u32 i;

	if (target_read(l, t, &after) <= 0)
		return 0; /* no window holds it (a charge of 0 to a reset): nothing to show */
	charge_key_of(t, &k);
	if (fresh || bpf_map_lookup_elem(fd, &k, &rec))
		memset(&rec, 0, sizeof(rec));
	for (i = 0; i < after.nlayers && i < XDP_RL_MAX_LAYERS; i++) {
		if (!after.count[i])
			continue;
		if (rec.started_ns[i] != after.started_ns[i]) {
			rec.started_ns[i] = after.started_ns[i];
			rec.total[i] = rec.in_budget[i] = 0;
		}
		cb = !fresh && before && before->count[i] &&
				     before->started_ns[i] == after.started_ns[i] ?
			     before->count[i] :
			     0;
		lim = after.lay[i].limit;
		rec.total[i] += n;
		rec.in_budget[i] += (cb + n < lim ? cb + n : lim) - (cb < lim ? cb : lim);
		if (now + after.expires_in_ns[i] > rec.ends_ns)
			rec.ends_ns = now + after.expires_in_ns[i];
	}
	if (!bpf_map_update_elem(fd, &k, &rec, BPF_ANY))
		return 0;
	if (errno == E2BIG || errno == ENOSPC || errno == ENOMEM) {
		charges_prune(fd, now);
		if (!bpf_map_update_elem(fd, &k, &rec, BPF_ANY))
			return 0;
	}
	log_warn("cannot record the charge apart from packets on '%s': %m (it stands; 'get' "
		 "counts it as packets)",
		 l->ifname);
	return -1;
}

void charges_read(const struct limiter *l, const struct target *t, struct source *src)
{
	struct xdp_rl_charge_key k;
	struct xdp_rl_charge rec;
	__u32 i;

	memset(src->by_command, 0, sizeof(src->by_command));
	memset(src->by_command_in_budget, 0, sizeof(src->by_command_in_budget));
	charge_key_of(t, &k);
	if (bpf_map_lookup_elem(l->fd[PIN_CHARGES], &k, &rec))
		return;
	for (i = 0; i < src->nlayers && i < XDP_RL_MAX_LAYERS; i++) {
		if (!src->count[i] || rec.started_ns[i] != src->started_ns[i])
			continue;
		/* A reset --count below what was charged: the count is what it holds now. */
		src->by_command[i] = rec.total[i] < src->count[i] ? rec.total[i] : src->count[i];
		src->by_command_in_budget[i] = rec.in_budget[i] < src->by_command[i] ?
						       rec.in_budget[i] :
						       src->by_command[i];
	}
}

void charges_forget(const struct limiter *l, const struct target *t)
{
	struct xdp_rl_charge_key k;

	charge_key_of(t, &k);
	bpf_map_delete_elem(l->fd[PIN_CHARGES], &k);
}

void charges_clear(const struct limiter *l)
{
	struct xdp_rl_charge_key k;

	while (!bpf_map_get_next_key(l->fd[PIN_CHARGES], NULL, &k))
		if (bpf_map_delete_elem(l->fd[PIN_CHARGES], &k))
			break;
}
