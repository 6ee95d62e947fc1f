// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fleet.c - a limiter's windows shared with a fleet through Redis (see fleet.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "admin.h"
#include "fleet.h"
#include "log.h"
#include "mapmem.h"
#include "options.h"
#include "proc.h"
#include "route.h"
#include "lists.h"
#include "rules.h"
#include "sources.h"
#include "vec.h"

/* clang-format off */
#define FLEET_NAME(id, name, help, metric) [XDP_RL_FLEET_##id] = #name,
const char *const fleet_stat_names[XDP_RL_FLEET_STAT_MAX] = { XDP_RL_FLEET_STATS(FLEET_NAME) };
#undef FLEET_NAME
#define FLEET_HELP(id, name, help, metric) [XDP_RL_FLEET_##id] = help,
const char *const fleet_stat_help[XDP_RL_FLEET_STAT_MAX] = { XDP_RL_FLEET_STATS(FLEET_HELP) };
#undef FLEET_HELP
#define FLEET_METRIC(id, name, help, metric) [XDP_RL_FLEET_##id] = metric,
const char *const fleet_stat_metrics[XDP_RL_FLEET_STAT_MAX] = { XDP_RL_FLEET_STATS(FLEET_METRIC) };
#undef FLEET_METRIC
/* clang-format on */

const char *fleet_state_name(__u64 state)
{
	static const char *const names[] = { "stopped", "syncing", "retrying", "paused" };

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

/* ---- settings ---------------------------------------------------------------------- */

void fleet_init(struct fleet *f, const char *group, __u32 above_ppm, __u32 max_synced)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->group, sizeof(f->group), "%s", group);
	f->above_ppm = above_ppm;
	f->max_synced = max_synced ? max_synced : 1;
}

void fleet_free(struct fleet *f)
{
	fleet_detach(f);
	free(f->book);
	free(f->gone);
	free(f->heap);
	free(f->jobs);
	free(f->sets);
	f->gone = NULL;
	f->ngone = f->capgone = 0;
	f->book = NULL;
	f->heap = NULL;
	f->jobs = NULL;
	f->sets = NULL;
	f->nbook = f->capbook = f->nheap = f->njobs = f->capjobs = f->nsets = 0;
}

const char *fleet_group_ok(const char *g)
{
	size_t n = g ? strlen(g) : 0, i;

	if (!n)
		return "empty group name";
	if (n > FLEET_GROUP_MAX)
		return "longer than 63 characters";
	for (i = 0; i < n; i++)
		if (!((g[i] >= 'a' && g[i] <= 'z') || (g[i] >= 'A' && g[i] <= 'Z') ||
		      (g[i] >= '0' && g[i] <= '9') || g[i] == '.' || g[i] == '_' || g[i] == '-'))
			return "use letters, digits, '.', '_' and '-' only";
	return NULL;
}

const char *fleet_parse_fraction(const char *s, __u32 *ppm)
{
	__u64 whole = 0, frac = 0, scale = 1000000, v;
	size_t i = 0, n = s ? strlen(s) : 0;
	int pct = 0, digits = 0, fdigits = 0;

	if (!n)
		return "empty value";
	if (s[n - 1] == '%') {
		pct = 1;
		n--;
	}
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++)
		if (digits < 4)
			whole = whole * 10 + (s[i] - '0');
		else
			return pct ? "at most 100%" : "at most 1";
	if (i < n && s[i] == '.') {
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, fdigits++) {
			if (fdigits >= 6)
				return "at most 6 decimals";
			scale /= 10;
			frac += (__u64)(s[i] - '0') * scale;
		}
		if (!fdigits)
			return "not a number";
	}
	if (i != n || (!digits && !fdigits))
		return pct ? "not a percentage (e.g. 10%)" : "not a fraction (e.g. 0.1, or 10%)";
	v = whole * 1000000 + frac;
	if (pct)
		v /= 100;
	if (v > 1000000)
		return pct ? "at most 100%" : "at most 1";
	*ppm = v;
	return NULL;
}

/* ---- keys ------------------------------------------------------------------------ */

__u64 fleet_window_number(__u64 start_ns, __s64 tai_to_unix_ns, __u64 window_ns)
{
	/* The start is rounded up to a grain (include/xdp_rl.h), far less than a window. */
	return (__u64)((__s64)start_ns + tai_to_unix_ns) / window_ns;
}

__u64 fleet_threshold(__u64 limit, __u32 ppm)
{
	unsigned __int128 t = ((unsigned __int128)limit * ppm + 999999) / 1000000;

	return t ? (__u64)t : 1;
}

__u64 fleet_ttl_s(__u64 window_ns)
{
	return (window_ns + 999999999ULL) / 1000000000ULL + FLEET_TTL_MARGIN_S;
}

int fleet_key(char *buf, size_t len, const char *group, const char *scope, __u64 window_ns,
	      const char *who, __u64 number)
{
	char dur[32];
	int n;

	fmt_duration(window_ns, dur, sizeof(dur));
	n = snprintf(buf, len, "xdp-rl:%s:%s:%s:%s:%llu", group, scope, dur, who,
		     (unsigned long long)number);
	return n < 0 || (size_t)n >= len ? -1 : n;
}

void fleet_who(const struct fleet *f, __u32 t, const __u32 k[4], char *buf, size_t len)
{
	int v6 = t == XDP_RL_T_SRC6 || t == XDP_RL_T_AGG6,
	    agg = t == XDP_RL_T_AGG4 || t == XDP_RL_T_AGG6,
	    whole = !agg && f->link_local == XDP_RL_LL_ADDRESS;
	const char *what = agg && xdp_rl_key_dst(f->key) ? "dst-agg=" :
			   agg				 ? "agg=" :
			   xdp_rl_key_dst(f->key)	 ? "dst=" :
							   "";
	unsigned int prefix, port;
	struct ip_addr a;
	int has_port = key_decode(k, v6, f->key, whole, &a, &port);
	size_t n;

	if (agg)
		prefix = v6 ? XDP_RL_AGG6_PREFIX : XDP_RL_AGG4_PREFIX;
	else
		prefix = v6 ? f->v6_prefix : f->v4_prefix;
	/* Link-local sources keyed per address (--link-local per-address) keep all of it. */
	if (whole && addr_link_local(&a))
		prefix = v6 ? 128 : 32;
	n = snprintf(buf, len, "%s", what);
	fmt_prefix(&a, prefix, buf + n, len > n ? len - n : 0);
	n = strlen(buf);
	if (has_port && n < len)
		snprintf(buf + n, len - n, ",dport=%u", port);
}

/* ---- the heaviest candidates --------------------------------------------------- */

/* Whether @a weighs less than @b (ties: the later place weighs less). */
static int lighter(const struct fleet_cand *a, const struct fleet_cand *b)
{
	return a->weight < b->weight || (a->weight == b->weight && a->id > b->id);
}

static void sift_down(struct fleet_cand *h, size_t n, size_t i)
{
	struct fleet_cand tmp;
	size_t m, l;

	for (;;) {
		m = i;
		l = 2 * i + 1;
		if (l < n && lighter(&h[l], &h[m]))
			m = l;
		if (l + 1 < n && lighter(&h[l + 1], &h[m]))
			m = l + 1;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

void fleet_consider(struct fleet *f, const struct fleet_cand *c)
{
	struct fleet_cand tmp;
	size_t i;

	if (!f->heap) {
		f->heap = calloc(f->max_synced, sizeof(*f->heap));
		if (!f->heap)
			return;
	}
	if (f->nheap < f->max_synced) {
		i = f->nheap++;
		f->heap[i] = *c;
		while (i && lighter(&f->heap[i], &f->heap[(i - 1) / 2])) {
			tmp = f->heap[i];
			f->heap[i] = f->heap[(i - 1) / 2];
			f->heap[(i - 1) / 2] = tmp;
			i = (i - 1) / 2;
		}
		return;
	}
	f->left_out++;
	if (!lighter(&f->heap[0], c))
		return;
	f->heap[0] = *c;
	sift_down(f->heap, f->nheap, 0);
}

/* ---- the scan ----------------------------------------------------------------------- */

/* The limit set of source keys under @lsid (not a --shared rule's), or NULL. */
static const struct fleet_set *find_set(const struct fleet *f, __u32 lsid, __u32 *idx)
{
	size_t lo = 0, hi = f->nsets, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (f->sets[mid].ls.shared || f->sets[mid].ls.lsid > lsid)
			hi = mid;
		else if (f->sets[mid].ls.lsid < lsid)
			lo = mid + 1;
		else {
			*idx = mid;
			return &f->sets[mid];
		}
	}
	return NULL;
}

static __u64 weight_of(__u64 count, __u64 limit)
{
	unsigned __int128 w = ((unsigned __int128)count << 20) / (limit ? limit : 1);

	return w > ~0ULL ? ~0ULL : (__u64)w;
}

/*
 * Where the scan is: the book's cursor (a bucket table's slots and the
 * --shared budgets are walked in id order, as the book); an LRU table's
 * elements come in the kernel's order, and are looked up (book_find).
 */
struct scan {
	struct fleet *f;
	__u64 now;
	size_t cur;
	int unordered; /* this table's windows do not come in id order */
	__u32 t;       /* the LRU table being walked */
};

/*
 * The book's entry at place @id for key @k (tag @tag), or NULL. Places are
 * unique in a bucket table; in an LRU table a place is a hash of the key
 * (fleet_lru_place), and two keys may share one: each has its own entry,
 * side by side.
 */
static struct fleet_entry *book_find(const struct fleet *f, __u64 id, __u64 tag, const __u32 k[4])
{
	size_t lo = 0, hi = f->nbook, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (f->book[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < f->nbook && f->book[lo].id == id; lo++)
		if (f->book[lo].tag == tag && !memcmp(f->book[lo].k, k, sizeof(f->book[lo].k)))
			return &f->book[lo];
	return NULL;
}

__u64 fleet_lru_place(const __u32 k[4], __u32 lsid)
{
	__u64 h = xdp_rl_mix(((__u64)k[0] << 32 | k[1]) ^ lsid);

	h = xdp_rl_mix(h ^ ((__u64)k[2] << 32 | k[3]));
	return h & FLEET_PLACE_MASK;
}

/* Window @st of layer @layer at place (@t, @index) of key @k (tag @tag) under set @si. */
static void scan_window(struct scan *sc, __u32 t, __u64 index, __u32 layer, __u64 tag,
			const __u32 k[4], const struct xdp_rl_state *st, __u32 si)
{
	struct fleet *f = sc->f;
	const struct xdp_rl_layer *lay = &f->sets[si].ls.lay[layer];
	struct fleet_entry *e = NULL;
	struct fleet_cand c;
	__u64 id = fleet_id(t, index, layer), gen = xdp_rl_gen_of_count(st->count_gen);
	__u64 count = xdp_rl_count(st->count_gen);

	if (sc->unordered) {
		e = book_find(f, id, tag, k);
	} else {
		while (sc->cur < f->nbook && f->book[sc->cur].id < id)
			sc->cur++;
		if (sc->cur < f->nbook && f->book[sc->cur].id == id)
			e = &f->book[sc->cur];
	}
	if (xdp_rl_gen_of_start(st->start_gen) != gen || !count ||
	    xdp_rl_window_over(st->start_gen, sc->now, lay->window_ns))
		return;
	/* Another window (or key) in the same place: the entry's ends, unmarked. */
	if (e && (e->tag != tag || e->gen != gen || memcmp(e->k, k, sizeof(e->k))))
		e = NULL;
	c.weight = weight_of(count, lay->limit);
	if (e) {
		e->mark = f->round;
		e->weight = c.weight;
		/* Full, and nothing new to push: the fleet's part only grows, nothing to learn. */
		if (count <= e->pushed && e->expire && count + e->remote >= lay->limit)
			return;
	} else if (count < fleet_threshold(lay->limit, f->above_ppm)) {
		return;
	}
	c.id = id;
	c.tag = tag;
	c.gen = gen;
	c.count = count;
	c.limit = lay->limit;
	c.window_ns = lay->window_ns;
	c.number = fleet_window_number(xdp_rl_start_ns(st->start_gen), f->tai_to_unix_ns,
				       lay->window_ns);
	memcpy(c.k, k, sizeof(c.k));
	c.set = si;
	c.entry = e ? e - f->book : -1;
	fleet_consider(f, &c);
}

/*
 * An element of an LRU table (read whole by the kernel, its key with it):
 * at place fleet_lru_place, tagged with its limit set.
 */
static int scan_element(const struct mt_entry *e, void *ctx)
{
	struct scan *sc = ctx;
	struct fleet *f = sc->f;
	const struct fleet_set *set;
	__u32 si = 0, layer, n;
	__u64 place;

	set = find_set(f, e->lsid, &si);
	if (!set)
		return 0;
	place = fleet_lru_place(e->k, e->lsid);
	n = set->ls.n < f->t[sc->t].layers ? set->ls.n : f->t[sc->t].layers;
	for (layer = 0; layer < n && layer < XDP_RL_MAX_LAYERS; layer++)
		scan_window(sc, sc->t, place, layer, e->lsid, e->k, &e->w[layer], si);
	return 0;
}

static void scan_table(struct scan *sc, __u32 t)
{
	struct fleet *f = sc->f;
	struct mtable *mt = &f->t[t];
	struct xdp_rl_layers w;
	struct xdp_rl_slot *s;
	const struct fleet_set *set = NULL;
	__u32 k[4], lsid, si = 0, layer, n;
	__u64 i, tag;

	if (mt->lru) {
		/*
		 * Read through the kernel, in batches. A table that cannot be
		 * read (the limiter replaced under the agent) is left out of
		 * this round; the agent notices the replacement (cmd/fleet.c).
		 */
		sc->unordered = 1;
		sc->t = t;
		(f->foreach_lru ? f->foreach_lru : mt_foreach)(mt, scan_element, sc);
		sc->unordered = 0;
		return;
	}
	if (!mt->mem)
		return;
	for (i = 0; i < mt_nslots(mt); i++) {
		s = mt_slot(mt, i);
		tag = __atomic_load_n(&s->tag, __ATOMIC_ACQUIRE);
		if ((tag & XDP_RL_TAG_FLAGS) != XDP_RL_TAG_LIVE)
			continue;
		lsid = xdp_rl_tag_lsid(tag);
		if (!set || set->ls.lsid != lsid)
			set = find_set(f, lsid, &si);
		if (!set)
			continue;
		memset(k, 0, sizeof(k));
		if (mt->wide)
			memcpy(k, s + 1, 16);
		else
			k[0] = tag >> 32;
		mt_read_windows(mt, s, w.layer);
		n = set->ls.n < mt->layers ? set->ls.n : mt->layers;
		for (layer = 0; layer < n && layer < XDP_RL_MAX_LAYERS; layer++)
			scan_window(sc, t, i, layer, tag, k, &w.layer[layer], si);
	}
}

static void scan_shared(struct scan *sc)
{
	struct fleet *f = sc->f;
	static const __u32 none[4];
	struct xdp_rl_layers w;
	__u32 layer;
	size_t i;

	for (i = 0; i < f->nsets; i++) {
		if (!f->sets[i].ls.shared || !f->read_shared ||
		    f->read_shared(f->shared_ctx, f->sets[i].ls.rule_id, &w))
			continue;
		for (layer = 0; layer < f->sets[i].ls.n && layer < XDP_RL_MAX_LAYERS; layer++)
			scan_window(sc, XDP_RL_T_SHARED, f->sets[i].ls.rule_id, layer, 0, none,
				    &w.layer[layer], i);
	}
}

/* ---- the book -------------------------------------------------------------------------- */

/*
 * What names the Redis key of a window, hashed: its table and layer, its
 * key and limit set (the tag: a bucket table's holds both, an LRU
 * element's its limit set), a --shared budget's rule (its place), and its
 * window's length and number. Not its slot: a key evicted and inserted
 * again may land in another. Two windows of one ident share a key.
 */
static __u64 fleet_ident(__u64 id, __u64 tag, const __u32 k[4], __u64 window_ns, __u64 number)
{
	__u32 t = id >> 40;
	__u64 h = xdp_rl_mix(((__u64)t << 8 | (id & 0xf)) ^ tag);

	if (t == XDP_RL_T_SHARED)
		h = xdp_rl_mix(h ^ id);
	h = xdp_rl_mix(h ^ ((__u64)k[0] << 32 | k[1]));
	h = xdp_rl_mix(h ^ ((__u64)k[2] << 32 | k[3]));
	h = xdp_rl_mix(h ^ window_ns);
	return xdp_rl_mix(h ^ number);
}

/* Whether entry @g names the same key and window as candidate @c (not only the same hash). */
static int same_key(const struct fleet_entry *g, const struct fleet_cand *c, __u64 ident)
{
	return g->ident == ident && (g->id >> 40) == (c->id >> 40) &&
	       (g->id & 0xf) == (c->id & 0xf) && g->tag == c->tag &&
	       !memcmp(g->k, c->k, sizeof(g->k)) && g->window_ns == c->window_ns &&
	       g->number == c->number && ((c->id >> 40) != XDP_RL_T_SHARED || g->id == c->id);
}

static int by_ident(const void *a, const void *b)
{
	const struct fleet_entry *x = a, *y = b;

	return x->ident < y->ident ? -1 : x->ident > y->ident;
}

/* Entry @e leaves the book: into gone, if this server pushed into its key. */
static void retire(struct fleet *f, const struct fleet_entry *e)
{
	if (!e->own || vec_room(f->gone, f->ngone, f->capgone, 1, 64))
		return; /* nothing to take over; or no memory: counted twice, only refuses more */
	f->gone[f->ngone] = *e;
	f->gone[f->ngone].mark = f->round;
	f->ngone++;
}

/* Gone's entry of @c's key and window, or NULL (gone sorted by ident). */
static struct fleet_entry *gone_find(struct fleet *f, const struct fleet_cand *c, __u64 ident)
{
	size_t lo = 0, hi = f->ngone, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (f->gone[mid].ident < ident)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < f->ngone && f->gone[lo].ident == ident; lo++)
		if (f->gone[lo].own && same_key(&f->gone[lo], c, ident))
			return &f->gone[lo];
	return NULL;
}

static int by_mark_desc(const void *a, const void *b)
{
	const struct fleet_entry *x = a, *y = b;

	return x->mark > y->mark ? -1 : x->mark < y->mark;
}

/* Gone without what was taken over (own 0), and at most its cap, the newest kept. */
static void gone_trim(struct fleet *f)
{
	size_t cap = (size_t)FLEET_BOOK_PER_SYNCED * f->max_synced, n = 0, i;

	for (i = 0; i < f->ngone; i++)
		if (f->gone[i].own)
			f->gone[n++] = f->gone[i];
	f->ngone = n;
	if (n > cap) {
		qsort(f->gone, n, sizeof(*f->gone), by_mark_desc);
		f->ngone = cap;
	}
}

void fleet_retire_book(struct fleet *f)
{
	size_t i;

	for (i = 0; i < f->nbook; i++)
		retire(f, &f->book[i]);
	f->nbook = 0;
	f->epoch++; /* a window of the new limiter is never one of the old's */
	gone_trim(f);
}

/*
 * By place; at one place (two keys of an LRU table may share one), the
 * candidates with an entry first, in the book's order, so that book_merge
 * meets each where the book has it.
 */
static int by_id(const void *a, const void *b)
{
	const struct fleet_cand *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if ((x->entry < 0) != (y->entry < 0))
		return x->entry < 0 ? 1 : -1;
	return x->entry < y->entry ? -1 : x->entry > y->entry;
}

static int by_weight(const void *a, const void *b)
{
	const struct fleet_entry *const *x = a, *const *y = b;

	return (*x)->weight < (*y)->weight ? -1 : (*x)->weight > (*y)->weight;
}

/*
 * The book holds at most FLEET_BOOK_PER_SYNCED * --max-synced windows: past
 * that, the lightest of those not chosen this round are forgotten (@chosen
 * marks those that are), so that one that is chosen again later pushes its
 * whole count again (counted twice: only refuses more).
 */
static void book_trim(struct fleet *f, size_t adding, const __u8 *chosen)
{
	size_t cap = (size_t)FLEET_BOOK_PER_SYNCED * f->max_synced, alive = 0, n = 0, i;
	struct fleet_entry **v;

	for (i = 0; i < f->nbook; i++)
		alive += f->book[i].mark == f->round;
	if (alive + adding <= cap)
		return;
	v = malloc(alive * sizeof(*v));
	if (!v)
		return;
	for (i = 0; i < f->nbook; i++)
		if (f->book[i].mark == f->round && !chosen[i])
			v[n++] = &f->book[i];
	qsort(v, n, sizeof(*v), by_weight);
	for (i = 0; i < n && alive + adding > cap; i++, alive--)
		v[i]->mark = 0;
	free(v);
}

/*
 * New entry @e of candidate @c takes over what a window of the same key and
 * number that left the book pushed into it: all of it as its own, so that
 * the key's total less own stays the others' part. Its pushed count too,
 * only when @c is that very window (it left the book trimmed, and came
 * back): the same slot of a bucket table, the same generation, the same
 * limiter. Anything else is a window counted afresh (a reset, another
 * slot, whose generations are its own, an LRU element, a limiter
 * replaced), whose count is all to push: were its pushed taken from
 * another window, counts would go unpushed and the fleet pass more. A
 * window pushed twice (a replaced limiter that kept it) is counted twice
 * until it ends: more refusals elsewhere, never more passes. Its TTL is
 * the key's, set already.
 */
static void take_over(struct fleet *f, struct fleet_entry *e, const struct fleet_cand *c)
{
	struct fleet_entry *g = gone_find(f, c, e->ident);
	__u32 t = c->id >> 40;

	if (!g)
		return;
	e->own = g->own;
	e->expire = g->expire;
	if (g->epoch == f->epoch && g->id == c->id && g->gen == c->gen && t < XDP_RL_T_SHARED &&
	    !f->t[t].lru)
		e->pushed = g->pushed;
	e->remote = g->remote;
	g->own = 0; /* taken: gone_trim drops it */
}

/*
 * The book after this round's scan: the windows it still finds open, and one
 * new entry per chosen window without one, in id order. Each chosen
 * candidate's entry becomes its place in the new book.
 */
static int book_merge(struct fleet *f)
{
	struct fleet_cand *c = f->heap;
	size_t i = 0, j = 0, n = 0, fresh = 0;
	struct fleet_entry *nb;
	__u8 *chosen;

	qsort(c, f->nheap, sizeof(*c), by_id);
	chosen = calloc(f->nbook + 1, 1);
	if (!chosen)
		return -1;
	for (j = 0; j < f->nheap; j++) {
		if (c[j].entry >= 0)
			chosen[c[j].entry] = 1;
		else
			fresh++;
	}
	book_trim(f, fresh, chosen);
	free(chosen);
	/* The windows leaving the book, for a new generation of their key to take over. */
	for (i = 0; i < f->nbook; i++)
		if (f->book[i].mark != f->round)
			retire(f, &f->book[i]);
	if (f->ngone)
		qsort(f->gone, f->ngone, sizeof(*f->gone), by_ident);
	nb = malloc((f->nbook + fresh + 1) * sizeof(*nb));
	if (!nb)
		return -1;
	for (i = 0, j = 0; i < f->nbook || j < f->nheap;) {
		if (i < f->nbook && f->book[i].mark != f->round) {
			i++; /* its window is over, or its slot holds another key */
		} else if (j < f->nheap && c[j].entry >= 0 && (size_t)c[j].entry == i) {
			/* Chosen, with its entry. */
			nb[n] = f->book[i++];
			c[j++].entry = n++;
		} else if (j < f->nheap && c[j].entry < 0 &&
			   (i >= f->nbook || c[j].id < f->book[i].id)) {
			/* Chosen, new: an entry of its own, in its place. */
			memset(&nb[n], 0, sizeof(nb[n]));
			nb[n].id = c[j].id;
			nb[n].tag = c[j].tag;
			memcpy(nb[n].k, c[j].k, sizeof(nb[n].k));
			nb[n].gen = c[j].gen;
			nb[n].window_ns = c[j].window_ns;
			nb[n].number = c[j].number;
			nb[n].ident =
				fleet_ident(c[j].id, c[j].tag, c[j].k, c[j].window_ns, c[j].number);
			nb[n].weight = c[j].weight;
			nb[n].mark = f->round;
			nb[n].epoch = f->epoch;
			take_over(f, &nb[n], &c[j]);
			c[j++].entry = n++;
		} else if (i < f->nbook) {
			nb[n++] = f->book[i++]; /* open, not chosen this round */
		} else {
			c[j++].entry = -1; /* cannot happen: a chosen entry is one found open */
		}
	}
	free(f->book);
	f->book = nb;
	f->nbook = n;
	f->capbook = f->nbook;
	gone_trim(f);
	return 0;
}

/* ---- a round ------------------------------------------------------------------------------ */

static int add_job(struct fleet *f, size_t entry, enum fleet_op op, __u64 delta)
{
	if (vec_room(f->jobs, f->njobs, f->capjobs, 1, 256))
		return -1;
	f->jobs[f->njobs].entry = entry;
	f->jobs[f->njobs].op = op;
	f->jobs[f->njobs].delta = delta;
	f->njobs++;
	return 0;
}

/* Queue the commands of candidate @c (its entry in the book): 0, or -1. */
static int queue_window(struct fleet *f, const struct fleet_cand *c, struct redis *r)
{
	struct fleet_entry *e = &f->book[c->entry];
	const struct fleet_set *set = &f->sets[c->set];
	char key[256], who[64], num[24], ttl[24];
	const char *argv[3];
	size_t lens[3];
	__u64 delta = c->count > e->pushed ? c->count - e->pushed : 0;
	__u32 t = c->id >> 40;
	int n;

	if (set->ls.shared)
		snprintf(who, sizeof(who), "%s", set->who);
	else
		fleet_who(f, t, c->k, who, sizeof(who));
	n = fleet_key(key, sizeof(key), f->group, set->scope, c->window_ns, who, c->number);
	if (n < 0)
		return 0; /* cannot happen: every part is bounded */
	argv[1] = key;
	lens[1] = n;
	if (!delta) {
		argv[0] = "GET";
		lens[0] = 3;
		return redis_queue(r, 2, argv, lens) || add_job(f, c->entry, FLEET_GET, 0);
	}
	argv[0] = "INCRBY";
	lens[0] = 6;
	argv[2] = num;
	lens[2] = snprintf(num, sizeof(num), "%llu", (unsigned long long)delta);
	if (redis_queue(r, 3, argv, lens) || add_job(f, c->entry, FLEET_INCRBY, delta))
		return -1;
	if (e->expire)
		return 0;
	argv[0] = "EXPIRE";
	lens[0] = 6;
	lens[2] = snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long)fleet_ttl_s(c->window_ns));
	argv[2] = ttl;
	return redis_queue(r, 3, argv, lens) || add_job(f, c->entry, FLEET_EXPIRE, 0);
}

long fleet_plan(struct fleet *f, __u64 now, struct redis *r)
{
	struct scan sc = { .f = f, .now = now };
	size_t j;
	__u32 t;

	f->round++;
	if (!f->round)
		f->round = 1; /* 0 marks nothing */
	f->nheap = f->njobs = 0;
	f->left_out = f->synced = f->reply_errors = 0;
	f->reply_why[0] = '\0';
	for (t = XDP_RL_T_SRC4; t <= XDP_RL_T_AGG6; t++)
		scan_table(&sc, t);
	scan_shared(&sc);
	if (book_merge(f))
		return -1;
	for (j = 0; j < f->nheap; j++)
		if (f->heap[j].entry >= 0 && queue_window(f, &f->heap[j], r))
			return -1;
	f->synced = f->nheap;
	return f->njobs;
}

/* The others' part of window @e, @total in all: into its word of `remote`, if still its window. */
static void write_remote(struct fleet *f, struct fleet_entry *e)
{
	__u32 t = e->id >> 40, layer = e->id & 0xf, room;
	__u64 index = (e->id >> 4) & FLEET_PLACE_MASK, k, word;
	struct xdp_rl_slot *s;
	struct xdp_rl_state *st;

	word = ((e->gen & 0xffff) << XDP_RL_REMOTE_BITS) |
	       (e->remote > XDP_RL_REMOTE_MASK ? XDP_RL_REMOTE_MASK : e->remote);
	if (t < XDP_RL_T_SHARED && f->t[t].lru) {
		/*
		 * The word is in the key's element: the program writes it there
		 * (bpf/admin.h), found by key and swapped in only while the
		 * element still holds it (a word an element given away meanwhile
		 * kept names a generation its new key never has). A
		 * word of a window since over names a generation no later window
		 * has (bpf/lru.h, E1): it counts nothing.
		 */
		/*
		 * Each write is a run of the program: none when the entry wrote
		 * this very word already (only the agent writes it, and an
		 * element made anew for the key has other windows: another entry).
		 */
		if (!f->write_lru || e->written == e->remote + 1)
			return;
		if (!f->write_lru(f->shared_ctx, t, e->k, (__u32)e->tag, layer, word))
			e->written = e->remote + 1;
		return;
	}
	if (t > XDP_RL_T_SHARED || !f->remote)
		return;
	room = t == XDP_RL_T_SHARED ? XDP_RL_MAX_LAYERS : f->t[t].layers;
	if (t != XDP_RL_T_SHARED) {
		/*
		 * The slot may have passed to another key since the scan: its
		 * windows then moved to a new generation (bpf/table.h), and a word
		 * of the old one would count nothing; no need to write it.
		 */
		if (!f->t[t].mem || index >= mt_nslots(&f->t[t]))
			return;
		s = mt_slot(&f->t[t], index);
		st = &mt_windows(&f->t[t], s)[layer];
		if (__atomic_load_n(&s->tag, __ATOMIC_ACQUIRE) != e->tag ||
		    xdp_rl_gen_of_count(__atomic_load_n(&st->count_gen, __ATOMIC_ACQUIRE)) !=
			    e->gen)
			return;
	}
	k = f->base[t] + index * room + layer;
	if (k >= f->nwords)
		return;
	__atomic_store_n(&f->remote[k], word, __ATOMIC_RELEASE);
}

/* The fleet's total of window @e is @total: the others' part follows. */
static void settle(struct fleet *f, struct fleet_entry *e, long long total)
{
	__u64 all = total > 0 ? (__u64)total : 0;

	if (all < e->own) {
		/*
		 * Redis holds less than this server alone pushed: it lost the key
		 * (a restart without persistence, a flush, a DEL). Push the whole
		 * count again next round, and its TTL: what was pushed since is
		 * then counted twice, which only refuses more.
		 */
		e->pushed = 0;
		e->own = 0;
		e->expire = 0;
		e->remote = 0;
	} else {
		e->remote = all - e->own;
	}
	write_remote(f, e);
}

int fleet_reply(const struct resp_reply *rep, size_t i, void *ctx)
{
	struct fleet *f = ctx;
	struct fleet_job *j;
	struct fleet_entry *e;
	long long v;

	if (i >= f->njobs)
		return -1;
	j = &f->jobs[i];
	e = &f->book[j->entry];
	if (rep->type == RESP_ERROR || (j->op != FLEET_EXPIRE && resp_int(rep, &v)) ||
	    (j->op == FLEET_EXPIRE && rep->type != RESP_INT)) {
		/* A refusal, or a key someone else filled with something else: nothing changes. */
		f->reply_errors++;
		snprintf(f->reply_why, sizeof(f->reply_why), "%.*s",
			 (int)(rep->len > 100 ? 100 : rep->len), rep->s ? rep->s : "");
		return 0;
	}
	switch (j->op) {
	case FLEET_INCRBY:
		e->pushed += j->delta;
		e->own += j->delta;
		settle(f, e, v);
		break;
	case FLEET_GET: settle(f, e, v); break;
	case FLEET_EXPIRE: e->expire = rep->n == 1; break;
	}
	return 0;
}

void fleet_abort(struct fleet *f)
{
	/* Pushes not answered stay unconfirmed: their counts go again next round. */
	f->njobs = 0;
}

/* ---- the limiter's side --------------------------------------------------------------- */

static int read_shared_map(void *ctx, __u32 rule_id, struct xdp_rl_layers *w)
{
	const struct limiter *l = ctx;

	return bpf_map_lookup_elem(l->fd[PIN_SHARED], &rule_id, w) ? -1 : 0;
}

static int write_lru_word(void *ctx, __u32 t, const __u32 k[4], __u32 lsid, __u32 layer, __u64 word)
{
	if (t >= XDP_RL_T_SHARED)
		return 0;
	return admin_remote(ctx, pin_tables[t], k, lsid, layer, word) < 0 ? -1 : 0;
}

struct sets_grow {
	struct fleet_set *v;
	size_t n, cap;
	int err;
};

static struct fleet_set *set_add(struct sets_grow *g)
{
	if (vec_room(g->v, g->n, g->cap, 1, 16)) {
		g->err = ENOMEM;
		return NULL;
	}
	memset(&g->v[g->n], 0, sizeof(g->v[0]));
	return &g->v[g->n++];
}

static int rule_set(const struct rule_spec *r, void *ctx)
{
	struct fleet_set *s;
	char p[64];

	if (r->rule.action != XDP_RL_RULE_LIMIT)
		return 0;
	s = set_add(ctx);
	if (!s)
		return 1;
	fmt_prefix(&r->addr, r->prefix, p, sizeof(p));
	limit_set_rule(r, &s->ls);
	if (s->ls.shared) {
		snprintf(s->scope, sizeof(s->scope), "shared");
		snprintf(s->who, sizeof(s->who), "%s", p);
	} else {
		snprintf(s->scope, sizeof(s->scope), "rule=%s", p);
	}
	return 0;
}

/* Source keys' sets first, by lsid; then --shared rules', by rule id (the scan's order). */
static int by_set(const void *a, const void *b)
{
	const struct fleet_set *x = a, *y = b;
	__u32 kx = x->ls.shared ? x->ls.rule_id : x->ls.lsid,
	      ky = y->ls.shared ? y->ls.rule_id : y->ls.lsid;

	if (x->ls.shared != y->ls.shared)
		return x->ls.shared - y->ls.shared;
	return kx < ky ? -1 : kx > ky;
}

int fleet_load_sets(struct fleet *f, const struct limiter *l)
{
	const struct xdp_rl_live *live = limiter_live(l);
	struct sets_grow g = {};
	struct fleet_set *s = set_add(&g);

	if (s) {
		limit_set_global(live, &s->ls);
		snprintf(s->scope, sizeof(s->scope), "all");
		rules_foreach(l->fd, rule_set, &g);
	}
	if (g.err) {
		free(g.v);
		errno = g.err;
		return -1;
	}
	qsort(g.v, g.n, sizeof(*g.v), by_set);
	free(f->sets);
	f->sets = g.v;
	f->nsets = g.n;
	return 0;
}

int fleet_attach(struct fleet *f, const struct limiter *l)
{
	const struct xdp_rl_live *live = limiter_live(l);
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	__u64 need;
	size_t i;

	fleet_detach(f);
	for (i = 0; i < 4; i++)
		if (limiter_table(l, pin_tables[i], &f->t[i], "cannot sync the windows of"))
			goto fail;
	if (window_words_base(l, f->base, &need) ||
	    bpf_obj_get_info_by_fd(l->fd[PIN_REMOTE], &info, &len) || info.max_entries < need) {
		log_err("cannot sync the windows of '%s': its map remote is not laid out as its "
			"tables (loaded by another version of xdp-rl? 'xdp-rl load --force' "
			"replaces it)",
			l->ifname);
		goto fail;
	}
	f->nwords = info.max_entries;
	f->remote_len = mapmem_len(f->nwords * sizeof(__u64));
	f->remote = mapmem_map(l->fd[PIN_REMOTE], f->remote_len, PROT_READ | PROT_WRITE);
	if (!f->remote) {
		f->remote_len = 0;
		log_err("cannot sync the windows of '%s': cannot map its map remote: %m",
			l->ifname);
		goto fail;
	}
	f->v4_prefix = l->cfg.fixed.v4_prefix;
	f->v6_prefix = l->cfg.fixed.v6_prefix;
	f->key = l->cfg.fixed.key;
	f->link_local = live->link_local;
	f->tai_to_unix_ns = live->tai_to_unix_ns;
	f->read_shared = read_shared_map;
	f->write_lru = write_lru_word;
	f->shared_ctx = (void *)l;
	if (fleet_load_sets(f, l)) {
		log_err("cannot sync the windows of '%s': cannot read its rules: %m", l->ifname);
		goto fail;
	}
	return 0;
fail:
	fleet_detach(f);
	return -1;
}

void fleet_detach(struct fleet *f)
{
	size_t i;

	for (i = 0; i < 4; i++)
		mt_unmap(&f->t[i]);
	if (f->remote_len) /* else not mapped here (the unit tests' own memory) */
		mapmem_unmap(f->remote, f->remote_len);
	f->remote = NULL;
	f->remote_len = 0;
	f->nwords = 0;
}

/* ---- the agent's state, in the `fleet` map ---------------------------------------------- */

struct xdp_rl_fleet *fleet_status_map(const struct limiter *l)
{
	void *p = mapmem_map(l->fd[PIN_FLEET], sizeof(struct xdp_rl_fleet), PROT_READ | PROT_WRITE);

	if (!p) {
		log_err("cannot run the fleet agent on '%s': cannot map its map fleet: %m",
			l->ifname);
		return NULL;
	}
	return p;
}

void fleet_status_unmap(struct xdp_rl_fleet *st)
{
	mapmem_unmap(st, sizeof(*st));
}

int fleet_status_read(const struct limiter *l, struct xdp_rl_fleet *st)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(l->fd[PIN_FLEET], &zero, st);
}

int fleet_agent_alive(const struct xdp_rl_fleet *st)
{
	return st->pid && st->pid_start && proc_start_ticks(st->pid) == st->pid_start;
}

__u64 fleet_running(const struct limiter *l)
{
	struct xdp_rl_fleet st;

	return !fleet_status_read(l, &st) && fleet_agent_alive(&st) ? st.pid : 0;
}

/* ---- the agent's own traffic ------------------------------------------------------------ */

/* @sa's address into @a and its port, or -1 if it is no IP address. */
static int sock_addr(const struct sockaddr_storage *sa, struct ip_addr *a, __u16 *port)
{
	memset(a, 0, sizeof(*a));
	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		a->family = AF_INET;
		memcpy(a->bytes, &in->sin_addr, 4);
		*port = ntohs(in->sin_port);
		return 0;
	}
	if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		a->family = AF_INET6;
		memcpy(a->bytes, &in6->sin6_addr, 16);
		*port = ntohs(in6->sin6_port);
		return 0;
	}
	return -1;
}

int fleet_own_traffic(const struct limiter *l, int fd, char *why, size_t len)
{
	const struct xdp_rl_live *live = limiter_live(l);
	struct sockaddr_storage peer = {}, me = {};
	socklen_t plen = sizeof(peer), mlen = sizeof(me);
	const struct xdp_rl_rule *r;
	struct xdp_rl_rule rb;
	struct list_prefix lp;
	struct ip_addr a, self;
	__u16 rport, lport;
	unsigned int oif, maxlen;
	char at[INET6_ADDRSTRLEN], what[160], fix[160];
	int kind, listed, via;

	if (getpeername(fd, (struct sockaddr *)&peer, &plen) ||
	    getsockname(fd, (struct sockaddr *)&me, &mlen) || sock_addr(&peer, &a, &rport) ||
	    sock_addr(&me, &self, &lport)) {
		snprintf(why, len, "cannot tell where the connection to Redis goes: %m");
		return -1;
	}
	/* An IPv4 peer on an IPv6 socket (::ffff:a.b.c.d) is the IPv4 address it maps. */
	if (a.family == AF_INET6 && !memcmp(a.bytes, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
		memmove(a.bytes, a.bytes + 12, 4);
		a.family = AF_INET;
	}
	inet_ntop(a.family, a.bytes, at, sizeof(at));
	if (route_oif(a.family, a.bytes, &oif)) {
		snprintf(why, len, "cannot tell which interface Redis at %s is reached by: %m", at);
		return -1;
	}
	if (live->flags & XDP_RL_F_DRY_RUN)
		return 0;
	/* Arriving on the limiter's interface: on it, on a VLAN of it, a bridge it is a port of... */
	via = route_arrives_via(oif, l->ifindex);
	if (via < 0) {
		snprintf(why, len, "cannot tell whether Redis at %s is reached through '%s': %m",
			 at, l->ifname);
		return -1;
	}
	if (!via)
		return 0;
	/* As the datapath: the longest rule whose selector takes the reply, else the next. */
	maxlen = a.family == AF_INET ? 32 : 128;
	while ((r = rule_lookup_within(l, &a, maxlen, &rb)) &&
	       !xdp_rl_select_takes(&r->select, IPPROTO_TCP, lport, 0)) {
		if (!r->prefixlen) {
			r = NULL;
			break;
		}
		maxlen = r->prefixlen - 1;
	}
	listed = lists_lookup(l, &a, &kind, &lp) > 0 && (!r || lp.len > r->prefixlen);
	snprintf(fix, sizeof(fix), "exempt it: 'xdp-rl rule add %s %s/%d --allow'", l->ifname, at,
		 a.family == AF_INET ? 32 : 128);
	if (listed && kind == LIST_ALLOW)
		return 0;
	if (listed) {
		snprintf(what, sizeof(what), "the deny list denies it");
		snprintf(fix, sizeof(fix), "take %s off the deny list", at);
	} else if (r && r->action == XDP_RL_RULE_ALLOW) {
		return 0;
	} else if (r) {
		snprintf(what, sizeof(what), "a rule of /%u %s it", r->prefixlen,
			 r->action == XDP_RL_RULE_DENY ? "denies" : "limits");
	} else if (xdp_rl_select_takes(&live->select, IPPROTO_TCP, lport, 0)) {
		snprintf(what, sizeof(what),
			 "the limiter's limits take its replies (TCP to port %u)", lport);
	} else {
		return 0;
	}
	snprintf(why, len,
		 "Redis at %s port %u answers the agent through '%s', and %s: the limiter "
		 "would drop the agent's own traffic, and its rounds fall behind; %s",
		 at, rport, l->ifname, what, fix);
	return 1;
}
