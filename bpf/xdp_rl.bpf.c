// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xdp_rl.bpf.c - per-source fixed-window rate limiter at the XDP hook.
 *
 * Each frame is parsed down to its IP source address. The longest matching
 * per-prefix rule, if any, may allow or deny it outright, or give it its own
 * layers of limits (per source, or shared by the whole prefix). Otherwise
 * the address, masked to a prefix, is charged one packet (or the frame
 * length with --bytes) in each of its windows, under the limit set it falls
 * under (its rule's, or the global one: part of its key). A frame that takes
 * a window past its limit is dropped before the kernel allocates anything
 * for it.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "maps.h"
#include "parse.h"
#include "window.h"
#include "table.h"
#include "layers.h"
#include "events.h"
#include "ban.h"
#include "hot.h"
#include "select.h"
#include "admin.h"
#include "capture.h"

enum verdict {
	V_PASS,
	V_LIMIT,
	V_DENY,
	V_ALLOW,      /* passed by an allow rule */
	V_UNSELECTED, /* selected by no limit or rule: passed untouched */
	V_MALFORMED,
	V_SLOW,	  /* fast_charge: not the common case, take the general path */
	V_LOST,	  /* the key's slot passed to another key under the packet: look again */
	V_ABSENT, /* charge(): an LRU table has no element for the key (table.h) */
	V_CHARGE, /* limit(): charge what the request (scratch) says */
	V_FULL,	  /* a new source refused a slot, dropped (--on-table-full drop) */
	V_NOT_IP, /* neither IPv4 nor IPv6: passed */
	V_BANNED, /* the key is under a ban (--ban, ban.h): dropped */
};

/*
 * A packet's address: its source's, or with --key dst its destination's,
 * as in the packet (IPv6 copied, so that a global function can take it):
 * what rules, lists and --link-local match; and its key (key_make: the
 * address masked, and the port).
 */
struct packet {
	__u32 a[4]; /* a[0] for IPv4 */
	struct table_key key;
	struct l4 l4; /* read only when a selector is set (XDP_RL_F_SELECT) or keys hold a port */
};

/*
 * What a program in libxdp's dispatcher returns to have the next one run
 * whatever its chain-call actions (libxdp's prog_dispatcher.h).
 */
#define XDP_DISPATCHER_RETVAL 31

/* No rule matched (limit_slow's rule). */
#define NO_RULE (~0U)

/*
 * What an out-of-line step of the general path returns beside its verdict,
 * in one number rather than through a pointer to the caller's stack (the
 * chain from the program down to table_insert holds 512 bytes:
 * scripts/check-stack.py): charge()'s V_LOST carries what the charge
 * decided (bits 8-15); limit_slow4/6 return the id of the rule that
 * matched (bits 32-63, NO_RULE if none).
 */
#define VERDICT(r)	((int)((r)&0xff))
#define LOST_AS(d)	(V_LOST | (d) << 8)
#define LOST_DECIDED(r) ((int)(((r) >> 8) & 0xff))
#define RULE_OF(r)	((__u32)((__u64)(r) >> 32))

static __always_inline void *table_map(const int t)
{
	return t == T_SRC4 ? (void *)&src4 :
	       t == T_SRC6 ? (void *)&src6 :
	       t == T_AGG4 ? (void *)&agg4 :
			     (void *)&agg6;
}

/*
 * table.h: table_insert, for tables of layout @wide (WIDE: a constant),
 * IPv4's and IPv6's alike; the IPv4 tables of the layout not loaded are
 * not taken (the verifier prunes them: their maps' values have another
 * size).
 */
static __always_inline long table_insert_in(__u32 t, const struct table_key *key,
					    const struct table_pos *pos,
					    const struct xdp_rl_stats *st, const int wide)
{
	const struct xdp_rl_live *live;
	struct xdp_rl_config *cfg;
	struct xdp_rl_lock *lk;
	__u32 b1, b2, lock, zero = 0;
	void *bk1, *bk2;
	long at;

	if (!key || !pos || !st)
		return -1;
	/*
	 * Each IPv4 case tests the layout itself, on constants the verifier
	 * knows: a test of t before the switch would not tell it which cases
	 * are left (Linux 6.1 checks this function for every t, called or not).
	 */
	if (table_lru()) {
		switch (t) {
		case T_SRC4: return WIDE(0) == wide ? lru_insert(&src4, wide, T_SRC4, pos, 0) : -1;
		case T_SRC6: return lru_insert(&src6, 1, T_SRC6, pos, 0);
		case T_AGG4: return WIDE(0) == wide ? lru_insert(&agg4, wide, T_AGG4, pos, 0) : -1;
		case T_AGG6: return lru_insert(&agg6, 1, T_AGG6, pos, 0);
		}
		return -1;
	}
	cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg)
		return -1;
	live = live_of(cfg);
	b1 = pos->b1;
	b2 = pos->b2;
	lock = pos->lock;
	lk = bpf_map_lookup_elem(&locks, &lock);
	if (!lk)
		return -1;
#define PAIR_INSERT(map, v6)                  \
	bk1 = bpf_map_lookup_elem(&map, &b1); \
	bk2 = bpf_map_lookup_elem(&map, &b2); \
	if (!bk1 || !bk2)                     \
		return -1;                    \
	at = pair_insert(bk1, bk2, lk, v6, key, pos, live, st->c[XDP_RL_STAT_INSERTS])
	switch (t) {
	case T_SRC4:
		if (WIDE(0) != wide)
			return -1;
		PAIR_INSERT(src4, wide);
		break;
	case T_SRC6: PAIR_INSERT(src6, 1); break;
	case T_AGG4:
		if (WIDE(0) != wide)
			return -1;
		PAIR_INSERT(agg4, wide);
		break;
	case T_AGG6: PAIR_INSERT(agg6, 1); break;
	default: return -1;
	}
#undef PAIR_INSERT
	if (at < 0)
		return -1;
	return (long)(at_index(at) < XDP_RL_BUCKET_SLOTS ? b1 : b2) * XDP_RL_BUCKET_SLOTS +
	       at_index(at) % XDP_RL_BUCKET_SLOTS + at_flags(at);
}

/*
 * Compiled once per IPv4 layout, each with its layout a constant: one
 * function holding both would keep both's stack (the chain down to here
 * holds 512 bytes: scripts/check-stack.py).
 */
__noinline long table_insert_narrow(__u32 t, const struct table_key *key,
				    const struct table_pos *pos, const struct xdp_rl_stats *st)
{
	return table_insert_in(t, key, pos, st, 0);
}

__noinline long table_insert_wide(__u32 t, const struct table_key *key, const struct table_pos *pos,
				  const struct xdp_rl_stats *st)
{
	return table_insert_in(t, key, pos, st, 1);
}

/*
 * table_insert, counting what it did for the source tables (not the
 * aggregates). Returns its result, INSERT_* flags and all, or -1.
 */
static __always_inline long table_add(const int t, const struct table_key *key,
				      const struct table_pos *pos, struct xdp_rl_stats *st)
{
	long at = table_insert(t, key, pos, st);

	if (at < 0) {
		st->c[XDP_RL_STAT_TABLE_ERRORS]++;
		return -1;
	}
	if (at_inserted(at) && (t == T_SRC4 || t == T_SRC6)) {
		st->c[XDP_RL_STAT_INSERTS]++;
		if (at_evicted(at))
			st->c[XDP_RL_STAT_EVICTIONS]++;
	}
	return at;
}

/* A key's port word (include/xdp_rl.h): the destination port, 0 if it could not be read. */
static __always_inline __u32 key_port(const struct l4 *l)
{
	return l->known & L4_PORT ? bpf_htonl(l->dport) : 0;
}

/* new_source_take: refused, or admitted without a charge to take back. */
#define NEW_REFUSED (~0ULL)
#define NEW_FREE    (~1ULL)

/*
 * Whether --new-sources (@cap) admits one more source into the table now:
 * the window generation charged (for new_source_give_back), or NEW_REFUSED.
 * Global, as table_insert: checked once, whatever paths reach it.
 */
__noinline __u64 new_source_take(const struct xdp_rl_layer *cap, const struct window_clock *clk)
{
	struct table_key none = {};
	struct xdp_rl_state *w;
	__u32 zero = 0;
	__u64 gen, count;
	int op = 0;

	if (!cap || !clk)
		return NEW_FREE;
	w = bpf_map_lookup_elem(&newsrc, &zero);
	if (!w)
		return NEW_FREE;
	/* A spoofed flood hits the cap on every CPU: past it, refused on a read (hot.h). */
	if (window_exhausted(w, clk->now, cap->window_ns, cap->limit, &gen))
		return NEW_REFUSED;
	count = window_hit(w, clk, cap->window_ns, 1, &op, &gen, NULL);
	if (count <= cap->limit)
		return gen;
	if (event_crossed(count, 1, cap->limit))
		event_over(&none, EV_INFO(0, 0, XDP_RL_EV_NEW_SOURCES, XDP_RL_EV_NO_RULE),
			   cap->limit, cap->window_ns, count);
	return NEW_REFUSED;
}

/* A source another CPU inserted first used no new slot: take its charge back. */
static __always_inline void new_source_give_back(__u64 gen)
{
	struct xdp_rl_state *w;
	__u32 zero = 0;

	w = bpf_map_lookup_elem(&newsrc, &zero);
	if (w && gen != NEW_FREE)
		window_undo(w, gen, 1);
}

/*
 * A source that is not in the table yet: where its slot is, or -1 with
 * *verdict set. With --new-sources, inserts are themselves a window; past
 * it the source is passed, dropped or charged to its /24 or /48 in an
 * aggregate table (*agg set, @pos then the aggregate key's) instead of
 * taking (and evicting) a slot.
 */
static __always_inline long source_new(const struct packet *p, const int v6, __u32 lsid,
				       const struct xdp_rl_live *live,
				       const struct window_clock *clk, struct table_pos *pos,
				       struct table_key *k, struct xdp_rl_stats *st, int *verdict,
				       int *agg)
{
	const int ts = v6 ? T_SRC6 : T_SRC4, ta = v6 ? T_AGG6 : T_AGG4;
	__u64 gen = NEW_FREE;
	__u32 port;
	long at;

	if (live->new_sources.limit)
		gen = new_source_take(&live->new_sources, clk);
	if (gen != NEW_REFUSED) {
		at = table_add(ts, &p->key, pos, st);
		/*
		 * Only a source given a slot counts against --new-sources: one
		 * another CPU inserted first, or an insert that failed, gives its
		 * charge back.
		 */
		if (live->new_sources.limit && (at < 0 || !at_inserted(at)))
			new_source_give_back(gen);
		if (at >= 0)
			return at;
		/*
		 * No slot could be had (a storm of inserts into its two buckets):
		 * handled as a source --new-sources refuses, by the policy.
		 */
	}
	/* Unless another CPU has just given the source a slot. */
	at = table_find(table_map(ts), WIDE(v6), &p->key, pos);
	if (at >= 0)
		return at;
	if (gen == NEW_REFUSED)
		st->c[XDP_RL_STAT_REFUSED_INSERTS]++;
	if (live->on_full == XDP_RL_FULL_PASS) {
		*verdict = V_PASS;
		return -1;
	}
	if (live->on_full == XDP_RL_FULL_DROP) {
		*verdict = V_FULL;
		return -1;
	}
	st->c[XDP_RL_STAT_AGGREGATED]++;
	/* The key's address cut to its /24 or /48, and its port (wide keys, include/xdp_rl.h). */
	port = xdp_rl_key_port(cfg_key) ? key_port(&p->l4) : 0;
	k->k[0] = v6 ? p->a[0] : p->a[0] & bpf_htonl(0xffffff00);
	k->k[1] = v6 ? p->a[1] & bpf_htonl(0xffff0000) : port;
	k->k[2] = 0;
	k->k[3] = v6 ? port : 0;
	table_pos(pos, k, WIDE(v6), lsid, ta);
	*agg = 1;
	at = table_find(table_map(ta), WIDE(v6), k, pos);
	return at >= 0 ? at : table_add(ta, k, pos, st);
}

/*
 * The longest rule that matches the (unmasked) source address with a
 * prefix of at most @len bits. The IPv6 lookup key is made in @k6 (the
 * request's, not on the stack).
 */
static __always_inline struct xdp_rl_rule *rule_find(const int v6, const struct packet *p,
						     __u32 len, struct xdp_rl_rule_key6 *k6)
{
	struct xdp_rl_rule_key4 k4;

	if (!v6) {
		k4.prefixlen = len;
		k4.addr = p->a[0];
		return bpf_map_lookup_elem(&rules4, &k4);
	}
	k6->prefixlen = len;
	__builtin_memcpy(k6->addr, p->a, sizeof(k6->addr));
	return bpf_map_lookup_elem(&rules6, k6);
}

/*
 * The rule that judges the packet: the longest that matches its source and
 * whose selector takes it. A rule whose selector does not is as if it did
 * not exist, so the next shorter one is looked up (a key one bit shorter
 * than its prefix). User space keeps at most XDP_RL_SELECT_NEST rules with
 * selectors in any chain of nested prefixes (rules.c), so the walk ends
 * within its bound; were it to run out, the packet is judged by the global
 * limits whatever their selector (*@forced): counted, never passed as
 * unselected.
 */
static __always_inline struct xdp_rl_rule *rule_judge(const int v6, const struct xdp_rl_live *live,
						      const struct packet *p,
						      struct xdp_rl_rule_key6 *k6, int *forced)
{
	struct xdp_rl_rule *rule;
	int i;

	if (!(v6 ? live->nrules6 : live->nrules4))
		return NULL;
	rule = rule_find(v6, p, v6 ? 128 : 32, k6);
	if (!(live->flags & XDP_RL_F_SELECT))
		return rule;
	for (i = 0; i < XDP_RL_SELECT_NEST + 1; i++) {
		if (!rule || select_match(&rule->select, &p->l4))
			return rule;
		if (!rule->prefixlen || rule->prefixlen > (v6 ? 128 : 32))
			return NULL;
		rule = rule_find(v6, p, rule->prefixlen - 1, k6);
	}
	if (rule && !select_match(&rule->select, &p->l4)) {
		*forced = 1;
		return NULL;
	}
	return rule;
}

/*
 * Whether the allow or deny lists judge the packet: the action of the
 * longest listed prefix holding its source (0 if none), which judges it if
 * longer than @rule's prefix (a rule of the same prefix is the more
 * specific word: it wins). @k: room for the key (the scratch request's).
 */
static __always_inline __u32 list_judge(const int v6, const struct packet *p,
					const struct xdp_rl_rule *rule, struct xdp_rl_rule_key6 *k)
{
	__u32 zero = 0, *e;
	void *trie;

	trie = bpf_map_lookup_elem(&lists, &zero);
	if (!trie)
		return 0;
	k->prefixlen = 128;
	if (v6) {
		__builtin_memcpy(k->addr, p->a, sizeof(k->addr));
	} else {
		k->addr[0] = 0;
		k->addr[1] = 0;
		k->addr[2] = bpf_htonl(0xffff);
		k->addr[3] = p->a[0];
	}
	e = bpf_map_lookup_elem(trie, k);
	if (!e || (rule && rule->prefixlen >= XDP_RL_LIST_LEN(*e)))
		return 0;
	return XDP_RL_LIST_ACTION(*e);
}

/*
 * What the general path asks of charge(): whose windows, by how much, when.
 * The key's place in its table is in it too (one struct: the general path
 * and the insert under it share 512 bytes of stack).
 */
struct charge_req {
	struct table_pos pos; /* the key's (tag, read again after the charge; tick) */
	struct window_clock clk;
	__u64 inc;
	long at;	/* table_find/table_insert's position; T_SHARED: rule id */
	__u32 t;	/* T_SRC4 .. T_AGG6, or T_SHARED */
	__u32 n;	/* layers in force */
	__u64 fresh[2]; /* an LRU table: the key's fresh windows (table.h's entry_fresh) */
	__u64 ban_ns;	/* the limits' --ban (ban.h); 0: none */
	struct xdp_rl_layers_limits lim; /* the first n: the limits charged under */
	/*
	 * Lookup keys, here rather than on the general path's stack (its
	 * chain down to table_insert holds 512 bytes: scripts/check-stack.py):
	 * the IPv6 rule's, then (once the rule is found) the aggregate's.
	 */
	union {
		struct xdp_rl_rule_key6 rule6;
		struct table_key agg;
	};
	/* What an over-limit event says (events.h): the source's key, its rule, its family. */
	struct table_key key;
	__u32 rule; /* XDP_RL_EV_NO_RULE: the global limits */
	__u32 v6;
};

_Static_assert(sizeof(struct charge_req) <= SCRATCH_SIZE, "struct charge_req outgrew scratch");
_Static_assert(sizeof(struct charge) <= SCRATCH_SIZE, "struct charge outgrew scratch");

/*
 * The charge @r took the window of layer @ch->over over its limit
 * (events.h): the key is the source's, its /24 or /48's, or (a --shared
 * budget) the packet's source, the rule naming the budget.
 */
static __always_inline void charge_event(const struct charge_req *r, const struct charge *ch,
					 __u64 banned)
{
	__u32 j = ch->over & (XDP_RL_MAX_LAYERS - 1);
	int kind = r->t == T_SHARED		    ? XDP_RL_EV_SHARED :
		   r->t == T_AGG4 || r->t == T_AGG6 ? XDP_RL_EV_AGGREGATE :
						      XDP_RL_EV_SOURCE;

	barrier_var(j);
	event_over(kind == XDP_RL_EV_AGGREGATE ? &r->agg : &r->key,
		   EV_INFO(r->v6 ? 6 : 4, j, kind, r->rule) | banned << EV_BANNED_BIT,
		   r->lim.layer[j].limit, r->lim.layer[j].window_ns, ch->over_count);
}

/*
 * Charge the windows at @r->at in table @r->t (a --shared rule's budget for
 * T_SHARED) under the first @r->n layers of @lim. Returns V_PASS or V_LIMIT;
 * or LOST_AS(what it decided), with the charge taken back, if the entry
 * passed to another key meanwhile (table.h); or, for an LRU table
 * (@lru), V_ABSENT if the key has no element. Compiled once per table kind
 * (charge, charge_lru), each the verifier checks once, not once for every
 * path of the general path.
 */
static __always_inline int charge_in(struct xdp_rl_stats *st, const int lru, const int fam)
{
	__u32 room = cfg_layers, id = 0, v6 = 0, c = SCRATCH_CHARGE, q = SCRATCH_REQ;
	const struct xdp_rl_layers_limits *lim;
	const struct charge_req *r;
	struct xdp_rl_state *s = NULL;
	__u64 opened = 0, gen;
	struct where wh = {};
	struct charge *ch;
	void *e = NULL;
	int pass, j, counted;

	/*
	 * The request is looked up here, not passed: a global function's
	 * pointer argument is memory, which the verifier of Linux 6.1 does not
	 * take as a map key (r->pos.lkey), and a map value it does.
	 */
	r = bpf_map_lookup_elem(&scratch, &q);
	ch = bpf_map_lookup_elem(&scratch, &c);
	if (!r || !st || !ch)
		return V_PASS;
	lim = &r->lim;
	/* The other table's entries are never charged here (the verifier prunes them). */
	if (r->t != T_SHARED && lru != table_lru())
		return V_PASS;
		/*
	 * Each case names its map and its entries' layout as constants: the
	 * verifier cannot tie a later test of r->t to the map chosen here.
	 */
#define TABLE_STATES(map, is_v6)                             \
	e = table_entry(&map, is_v6, &r->pos, r->at, lru);   \
	s = e ? entry_states(e, is_v6, lru) : NULL;          \
	wh.remote = e ? entry_remote(e, is_v6, lru) : NULL;  \
	wh.drops = e && lru ? lru_drops(e, is_v6, 0) : NULL; \
	wh.fresh = lru ? (__u64 *)r->fresh : NULL;           \
	v6 = is_v6;                                          \
	break
	switch (fam == 6 ? r->t | 1 : fam == 4 ? r->t & ~1U : r->t) {
	case T_SRC4: TABLE_STATES(src4, WIDE(0));
	case T_SRC6: TABLE_STATES(src6, 1);
	case T_AGG4: TABLE_STATES(agg4, WIDE(0));
	case T_AGG6: TABLE_STATES(agg6, 1);
	case T_SHARED:
		id = r->at;
		s = bpf_map_lookup_elem(&shared, &id);
		room = XDP_RL_MAX_LAYERS;
		break;
	}
#undef TABLE_STATES
	if (!s)
		return r->t != T_SHARED && lru ? V_ABSENT : V_PASS;
	wh.t = r->t;
	wh.index = r->t == T_SHARED ? id : entry_hot(r->at, wh.fresh, lru);
	wh.fleet = !!(r->clk.flags & XDP_RL_F_FLEET);
	ch->ban_ns = r->t == T_SHARED ? 0 : r->ban_ns;
	/* A key under a ban is refused before any charge (ban.h). */
	if ((r->clk.flags & XDP_RL_F_BANS) && r->t != T_SHARED &&
	    layers_banned(s, r->n, room, &wh, r->clk.now)) {
		if (e && !entry_holds(e, v6, &r->pos, lru))
			return LOST_AS(V_LIMIT);
		if (e)
			entry_touch(e, v6, r->pos.tick, lru);
		return V_BANNED;
	}
	/* A window over its limit already refuses the packet on a read (hot.h). */
	counted = 0;
	j = layers_exhausted(s, room, lim->layer, r->n, &r->clk, r->inc, &gen, &counted, &wh);
	if (j >= 0) {
		if (e && !entry_holds(e, v6, &r->pos, lru))
			return LOST_AS(V_LIMIT);
		if (!counted)
			hot_drop(xdp_rl_hot_id(r->t, wh.index, j, gen), r->inc,
				 e && lru ? &r->pos : NULL);
		if (e)
			entry_touch(e, v6, r->pos.tick, lru);
		return V_LIMIT;
	}
	pass = layers_charge(s, room, lim->layer, r->n, &r->clk, r->inc, &opened, ch, &wh);
	st->c[XDP_RL_STAT_NEW_WINDOWS] += opened;
	if (e && (ch->lost || !entry_holds(e, v6, &r->pos, lru))) {
		/*
		 * The entry passed to another key under this packet: its charges
		 * come out. Found fresh for another key (lru.h), nothing was
		 * charged: the packet is as one no entry could be had for.
		 */
		layers_undo(s, ch, ch->held_from, ch->held_to, r->inc, room, lim->layer);
		return LOST_AS(pass || ch->lost ? V_PASS : V_LIMIT);
	}
	if (e)
		entry_touch(e, v6, r->pos.tick, lru);
	if (ch->banned)
		return V_BANNED;
	/* A rate's refusal charged nothing: its drop is counted as a read-only one's (hot.h). */
	j = ch->refused & (XDP_RL_MAX_LAYERS - 1);
	if (!pass && (ch->rates & (1U << j)) && ch->gens[j] <= XDP_RL_GEN_MASK)
		hot_drop(xdp_rl_hot_id(r->t, wh.index, j, ch->gens[j]), r->inc,
			 e && lru ? &r->pos : NULL);
	if (!pass && ch->over >= 0) {
		j = ch->over & (XDP_RL_MAX_LAYERS - 1);
		gen = ch->ban_ns && (__u32)j < room ?
			      ban_record(where_ban(&wh, j), &s[j], ch->gens[j], r->clk.now,
					 ch->ban_ns) :
			      0;
		charge_event(r, ch, gen);
	}
	return pass ? V_PASS : V_LIMIT;
}

/* The bucket table's keys, and --shared budgets (either table). */
__noinline int charge(struct xdp_rl_stats *st)
{
	return charge_in(st, 0, 0);
}

/* An LRU table's IPv4 keys (src4, agg4), and its IPv6 keys (src6, agg6). */
__noinline int charge_lru4(struct xdp_rl_stats *st)
{
	return charge_in(st, 1, 4);
}

__noinline int charge_lru6(struct xdp_rl_stats *st)
{
	return charge_in(st, 1, 6);
}

/*
 * The general path: rules, layers, window turnovers, new sources. @v6 is a
 * constant at both call sites, so that after inlining every map lookup
 * names one map: a lookup that could be either is not inlined by the
 * verifier and costs a helper call. Returns a verdict, or V_CHARGE with
 * the charge to make in the request (scratch), for limit_slow to make
 * (charge(), out of line too: each out-of-line function has a stack of its
 * own, and a chain of them may hold 512 bytes). @fresh_source: the key was
 * found to have no element in an LRU table (V_ABSENT): a new source.
 */
static __always_inline int limit(const struct packet *p, const int v6, __u64 inc, __u32 *rule_id,
				 int fresh_source)
{
	const int ts = v6 ? T_SRC6 : T_SRC4, ta = v6 ? T_AGG6 : T_AGG4;
	const struct xdp_rl_layer *lay;
	const struct xdp_rl_live *live;
	struct xdp_rl_config *cfg;
	struct xdp_rl_stats *st;
	struct xdp_rl_rule *rule;
	struct charge_req *req;
	int verdict = V_PASS, agg = 0, forced = 0, i;
	__u32 zero = 0, lsid;
	long at;

	cfg = bpf_map_lookup_elem(&config, &zero);
	st = bpf_map_lookup_elem(&stats, &zero);
	req = bpf_map_lookup_elem(&scratch, &zero);
	if (!cfg || !st || !req)
		return V_PASS;
	live = live_of(cfg);
	lay = live->layer;
	req->n = live->nlayers;
	lsid = live->lsid;
	rule = rule_judge(v6, live, p, &req->rule6, &forced);
	if (live->flags & (v6 ? XDP_RL_F_LISTS6 : XDP_RL_F_LISTS4)) {
		i = list_judge(v6, p, rule, &req->rule6);
		if (i == XDP_RL_RULE_ALLOW || i == XDP_RL_RULE_DENY) {
			*rule_id = i == XDP_RL_RULE_ALLOW ? XDP_RL_LIST_ALLOW_ID :
							    XDP_RL_LIST_DENY_ID;
			return i == XDP_RL_RULE_ALLOW ? V_ALLOW : V_DENY;
		}
	}
	if (!rule && !forced && (live->flags & XDP_RL_F_SELECT) &&
	    !select_match(&live->select, &p->l4))
		return V_UNSELECTED;
	if (rule) {
		*rule_id = rule->id;
		if (rule->action == XDP_RL_RULE_ALLOW)
			return V_ALLOW;
		if (rule->action == XDP_RL_RULE_DENY)
			return V_DENY;
		lay = rule->layer;
		req->n = rule->nlayers;
		lsid = rule->lsid;
	}
	for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
		if ((__u32)i >= req->n)
			break;
		req->lim.layer[i] = lay[i];
	}
	req->key = p->key;
	req->rule = rule ? rule->id : XDP_RL_EV_NO_RULE;
	req->ban_ns = rule ? rule->ban_ns : live->ban_ns;
	req->v6 = v6;

	req->pos.tick = clock_ticks();
	clock_setup(&req->clk, req->pos.tick, live);
	req->inc = inc;
	if (rule && (rule->flags & XDP_RL_RULE_F_SHARED)) {
		req->t = T_SHARED;
		req->at = rule->id;
		req->pos.tag = 0;
		return V_CHARGE;
	}

	req->pos.now = req->clk.now;
	req->pos.pad = 0;
	table_pos(&req->pos, &p->key, WIDE(v6), lsid, ts);
	req->t = ts;
	if (table_lru() && !fresh_source) {
		/* The kernel finds the element: charge() looks it up once. */
		req->at = 0;
		entry_fresh(&req->pos, WIDE(v6), ts, req->fresh);
		return V_CHARGE;
	}
	at = table_lru() ? -1 : table_find(table_map(ts), WIDE(v6), &p->key, &req->pos);
	if (at < 0) {
		at = source_new(p, v6, lsid, live, &req->clk, &req->pos, &req->agg, st, &verdict,
				&agg);
		if (at < 0)
			return verdict;
	}
	req->t = agg ? ta : ts;
	req->at = at;
	entry_fresh(&req->pos, WIDE(v6), req->t, req->fresh);
	return V_CHARGE;
}

/*
 * limit_fast's packet took its source's window over the limit (events.h):
 * V_LIMIT. Out of line, so that the call and its arguments leave
 * xdp_rl's frame as it was (its chain holds no more room: check-stack.py).
 * No ban is made here: limit_fast leaves keys that may be banned to the
 * general path.
 */
static __noinline int fast_over(const struct table_key *key, const struct xdp_rl_live *live,
				__u64 count, int v6)
{
	event_over(key, EV_INFO(v6 ? 6 : 4, 0, XDP_RL_EV_SOURCE, XDP_RL_EV_NO_RULE),
		   live->layer[0].limit, live->layer[0].window_ns, count);
	return V_LIMIT;
}

/*
 * The common case, apart: one window per source, no rules for the family,
 * no ban and the source on no list, the source in its table already (the
 * bucket table: in the first of its buckets), its window open. One lookup,
 * one add, one check that the entry is still the source's: the steady step
 * of window_hit, as the general path takes it, without building its
 * request. Anything else (and a count at saturation, or a charge that
 * landed in another window or an entry that changed hands under the add,
 * taken back first) is V_SLOW, for limit(); an LRU key without an
 * element, V_ABSENT (a new source). @lru: the table, a constant, so that
 * each copy holds only its own.
 */
static __always_inline int fast_charge(const struct packet *p, const int v6,
				       const struct xdp_rl_live *live, __u64 inc, const int lru)
{
	const int ts = v6 ? T_SRC6 : T_SRC4;
	struct table_pos pos;
	struct xdp_rl_state *w;
	__u64 jiffies, now, r, e, c, fresh[2];
	__u32 index = 0;
	void *s;

	if (lru) {
		lru_pos(&pos, &p->key, WIDE(v6), live->lsid);
		s = bpf_map_lookup_elem(table_map(ts), pos.lkey);
	} else {
		buckets_pos(&pos, &p->key, WIDE(v6), live->lsid, cfg_buckets[ts], cfg_seed);
		s = bucket_find(table_map(ts), pos.b1, WIDE(v6), &p->key, pos.tag, &index);
		if (!s)
			s = bucket_find(table_map(ts), pos.b2, WIDE(v6), &p->key, pos.tag, &index);
	}
	if (!s)
		return lru ? V_ABSENT : V_SLOW;
	w = entry_states(s, WIDE(v6), lru);
	jiffies = clock_ticks();
	now = clock_read(jiffies, live->flags, live->tick_ns, live->jiffies_base_ns);
	/* An LRU element's fresh windows (lru.h) have a start past any now: over. */
	e = READ_ONCE(w->start_gen);
	if (xdp_rl_window_over(e, now, live->layer[0].window_ns))
		return V_SLOW;
	/*
	 * Over its limit already: refused on a read; the drop counted in the
	 * count while the window has few, else apart, with no write to the
	 * shared line (hot.h). At the limit exactly, the charge takes it over
	 * (events.h).
	 */
	c = READ_ONCE(w->count_gen);
	if (xdp_rl_count(c) > live->layer[0].limit &&
	    xdp_rl_gen_of_count(c) == xdp_rl_gen_of_start(e)) {
		if (!entry_holds(s, WIDE(v6), &pos, lru))
			return V_SLOW;
		if (!window_drop(w, c, live->layer[0].limit, inc)) {
			/* An LRU element's hot entry is named by its fresh windows' tag. */
			if (lru) {
				lru_fresh(&pos, WIDE(v6), ts, fresh);
				index = xdp_rl_lru_hot_index(fresh[1]);
			}
			hot_drop(xdp_rl_hot_id(ts, index, 0, xdp_rl_gen_of_count(c)), inc,
				 lru ? &pos : NULL);
		}
		entry_touch(s, WIDE(v6), jiffies, lru);
		return V_LIMIT;
	}
	r = __sync_fetch_and_add(&w->count_gen, inc) + inc;
	if (xdp_rl_count(r) >= XDP_RL_COUNT_SAT ||
	    xdp_rl_gen_of_count(r) != xdp_rl_gen_of_start(e) ||
	    !entry_holds(s, WIDE(v6), &pos, lru)) {
		window_undo(w, xdp_rl_gen_of_count(r), inc);
		return V_SLOW;
	}
	entry_touch(s, WIDE(v6), jiffies, lru);
	if (event_crossed(xdp_rl_count(r), inc, live->layer[0].limit))
		return fast_over(&p->key, live, xdp_rl_count(r), v6);
	return xdp_rl_count(r) > live->layer[0].limit ? V_LIMIT : V_PASS;
}

/*
 * Whether the limits in force make the common case one (fast_charge): no
 * rules for the family, one fixed window, no fleet, bans or lists.
 */
static __always_inline int fast_allowed(const int v6, const struct xdp_rl_live *live)
{
	return cfg_layers == 1 && !(v6 ? live->nrules6 : live->nrules4) &&
	       !xdp_rl_is_rate(&live->layer[0]) &&
	       !(live->flags &
		 (XDP_RL_F_FLEET | XDP_RL_F_BANS | (v6 ? XDP_RL_F_LISTS6 : XDP_RL_F_LISTS4)));
}

/* The bucket table's common case, in xdp_rl itself (an LRU table's: limit_and_rule). */
static __always_inline int limit_fast(const struct packet *p, const int v6,
				      const struct xdp_rl_live *live, __u64 inc)
{
	if (table_lru() || !fast_allowed(v6, live))
		return V_SLOW;
	return fast_charge(p, v6, live, inc, 0);
}

/*
 * An LRU table's common case, out of line, one per family (a constant, so
 * that the lookup names one map and the verifier inlines it), called from
 * limit_slow4/6: in xdp_rl, its key and the kernel's lookup would take
 * room the frame does not have (check-stack.py), and its calls would
 * change how the bucket table's copy is compiled there.
 */
static __noinline int lru_fast4(const struct packet *p, const struct xdp_rl_live *live, __u64 inc)
{
	return fast_charge(p, 0, live, inc, 1);
}

static __noinline int lru_fast6(const struct packet *p, const struct xdp_rl_live *live, __u64 inc)
{
	return fast_charge(p, 1, live, inc, 1);
}

/*
 * Out of line and global, one per family: the verifier checks each once,
 * and the fast path around them stays small. An LRU table's common case is
 * taken here first (lru_fast4/6). A packet whose slot passed to another
 * key under it (V_LOST) is looked up once more by the caller.
 */
static __always_inline long limit_and_rule(const struct packet *p, const int v6, __u64 inc,
					   int fresh_source)
{
	const struct xdp_rl_live *live;
	struct xdp_rl_config *cfg;
	__u32 rule = NO_RULE, zero = 0;
	int v;

	if (!p)
		return (long)((__u64)NO_RULE << 32) | V_PASS;
	/* A bucket table's key had its fast path in xdp_rl: no lookup here. */
	cfg = table_lru() && !fresh_source ? bpf_map_lookup_elem(&config, &zero) : NULL;
	if (cfg) {
		live = live_of(cfg);
		v = V_SLOW;
		if (fast_allowed(v6, live))
			v = v6 ? lru_fast6(p, live, inc) : lru_fast4(p, live, inc);
		if (v != V_SLOW && v != V_ABSENT)
			return (long)((__u64)NO_RULE << 32) | (__u32)v;
		/* No element for the key: a new source, without a second look. */
		fresh_source = v == V_ABSENT;
	}
	v = limit(p, v6, inc, &rule, fresh_source);
	return (long)((__u64)rule << 32) | (__u32)v;
}

__noinline long limit_slow4(const struct packet *p, __u64 inc, int fresh_source)
{
	return limit_and_rule(p, 0, inc, fresh_source);
}

__noinline long limit_slow6(const struct packet *p, __u64 inc, int fresh_source)
{
	return limit_and_rule(p, 1, inc, fresh_source);
}

/*
 * The packet's key (--key, include/xdp_rl.h): its address (p->a: the
 * source's, or with --key dst the destination's) masked to its prefix, and
 * in wide keys the destination port. A link-local address keyed whole
 * (@whole) keeps all of it: an IPv6 one then has no room for a port, and
 * its ports share one budget (never more than a budget each).
 */
static __always_inline void key_make(struct packet *p, const int v6, int whole)
{
	__u32 *k = p->key.k, port = xdp_rl_key_port(cfg_key) ? key_port(&p->l4) : 0;
	const __u32 *a = p->a;

	if (!v6) {
		k[0] = whole ? a[0] : a[0] & cfg_v4_mask;
		k[1] = port;
		return;
	}
	k[0] = whole ? a[0] : a[0] & cfg_v6_mask[0];
	k[1] = whole ? a[1] : a[1] & cfg_v6_mask[1];
	k[2] = whole ? a[2] : a[2] & cfg_v6_mask[2];
	k[3] = whole ? a[3] : (a[3] & cfg_v6_mask[3]) | port;
}

/*
 * Before the limits: what the selectors look at (read only when one is
 * set), link-local sources (--link-local: each keyed by its whole address,
 * or exempt), and whether the global limits select the packet when no rule
 * could (the rules' selectors are judged in limit()). V_UNSELECTED: passed
 * untouched; V_MALFORMED: a transport the limits need cannot be found;
 * V_SLOW: go on.
 */
static __always_inline int classify(struct packet *p, const int v6, const struct xdp_rl_live *live,
				    struct cursor *c)
{
	int ll;

	if ((live->flags & XDP_RL_F_SELECT) || xdp_rl_key_port(cfg_key)) {
		if (v6)
			parse_l4_v6(c, &p->l4);
		else
			parse_l4_v4(c, &p->l4);
	}
	ll = v6 ? (p->a[0] & bpf_htonl(0xffc00000)) == bpf_htonl(0xfe800000) :
		  (p->a[0] & bpf_htonl(0xffff0000)) == bpf_htonl(0xa9fe0000);
	if (ll && live->link_local == XDP_RL_LL_EXEMPT)
		return V_UNSELECTED;
	/*
	 * Its transport hidden past the walk, where a selector or a key needs
	 * it: no one limit is known to be the packet's, and the stack delivers
	 * it whole. Counting it by any one (a rule's, or a key with port 0)
	 * would give a second budget for what another limit owns: fail closed.
	 */
	if (p->l4.known & L4_DEEP)
		return V_MALFORMED;
	key_make(p, v6, ll && live->link_local == XDP_RL_LL_ADDRESS);
	/* A listed source is judged by its list whatever the selectors: no shortcut then. */
	if ((live->flags & XDP_RL_F_SELECT) && !(v6 ? live->nrules6 : live->nrules4) &&
	    !(live->flags & (v6 ? XDP_RL_F_LISTS6 : XDP_RL_F_LISTS4)) &&
	    !select_match(&live->select, &p->l4))
		return V_UNSELECTED;
	return V_SLOW;
}

/*
 * Run once by xdp-rl at load (BPF_PROG_TEST_RUN): the tick count and the
 * tick clock, read together, give the base that turns jiffies into
 * CLOCK_MONOTONIC_COARSE (see struct xdp_rl_live).
 */
SEC("xdp")
int clock_sync(struct xdp_md *ctx)
{
	sync_jiffies = bpf_jiffies64();
	sync_coarse_ns = bpf_ktime_get_coarse_ns();
	return XDP_PASS;
}

/* The general path, and once more if the source's slot passed to another under it. */
/* The general path's look (limit) and its charge, for a key in a table of @v6's family. */
static __always_inline int limit_charge(const struct packet *p, const int v6, __u64 inc,
					__u32 *rule, struct xdp_rl_stats *st, int fresh_source)
{
	struct charge_req *req;
	__u32 zero = SCRATCH_REQ;
	long r;

	r = v6 ? limit_slow6(p, inc, fresh_source) : limit_slow4(p, inc, fresh_source);
	*rule = RULE_OF(r);
	if (VERDICT(r) != V_CHARGE)
		return VERDICT(r);
	req = bpf_map_lookup_elem(&scratch, &zero);
	if (!req)
		return V_PASS;
	if (!table_lru() || req->t == T_SHARED)
		return charge(st);
	return v6 ? charge_lru6(st) : charge_lru4(st);
}

/*
 * The general path, and once more if the source's entry passed to another
 * under it (V_LOST). With an LRU table, a key the first look finds without
 * an element (V_ABSENT) is a new source, looked at again as one.
 */
static __always_inline int limit_slow(const struct packet *p, const int v6, __u64 inc, __u32 *rule,
				      struct xdp_rl_stats *st)
{
	int v, try, decided = V_PASS;

	for (try = 0; try < 2; try++) {
		v = limit_charge(p, v6, inc, rule, st, 0);
		if (v == V_ABSENT) {
			v = limit_charge(p, v6, inc, rule, st, 1);
			/* Given an element and losing it at once: as a slot lost under it. */
			if (v == V_ABSENT)
				v = LOST_AS(V_PASS);
		}
		if (VERDICT(v) != V_LOST)
			return v;
		decided = LOST_DECIDED(v);
	}
	/*
	 * Lost twice: the source could not be tracked. It gets what its
	 * charge decided, counted as a table error: refused if refused.
	 */
	st->c[XDP_RL_STAT_TABLE_ERRORS]++;
	return decided;
}

/* Why a packet that is not passed got its verdict, as a capture writes it. */
static __always_inline __u32 cap_reason(int v)
{
	return v == V_DENY	? XDP_RL_CAP_DENIED :
	       v == V_FULL	? XDP_RL_CAP_FULL :
	       v == V_BANNED	? XDP_RL_CAP_BANNED :
	       v == V_MALFORMED ? XDP_RL_CAP_MALFORMED :
				  XDP_RL_CAP_DROPPED;
}

/*
 * Count verdict @v of a frame of @len bytes, and its rule's hits: what XDP
 * does with it and why (CAP_WHAT: the reason as a capture names it; its
 * CAP_ACTION is the program's return). A capture reads the verdict back
 * from these counters (bpf/capture.h): nothing else runs at the verdict.
 */
static __always_inline __u32 verdict_count(int v, const __u32 *rule, __u64 len,
					   const struct xdp_rl_live *live, struct xdp_rl_stats *st)
{
	struct xdp_rl_rule_hits *hits = NULL;

	if (v == V_NOT_IP) {
		st->c[XDP_RL_STAT_NOT_IP]++;
		return CAP_WHAT(XDP_RL_CAP_NOT_IP, XDP_PASS, 0);
	}
	if (v == V_UNSELECTED) {
		st->c[XDP_RL_STAT_UNSELECTED]++;
		return CAP_WHAT(XDP_RL_CAP_UNSELECTED, XDP_PASS, 0);
	}

	if (*rule != NO_RULE) {
		hits = bpf_map_lookup_elem(&rule_hits, rule);
		if (hits)
			hits->packets++;
	}
	if (v == V_ALLOW)
		st->c[XDP_RL_STAT_ALLOWED]++;
	if (v == V_PASS || v == V_ALLOW) {
		st->c[XDP_RL_STAT_PASSED]++;
		st->c[XDP_RL_STAT_PASSED_BYTES] += len;
		return CAP_WHAT(v == V_ALLOW ? XDP_RL_CAP_ALLOWED : XDP_RL_CAP_PASSED, XDP_PASS, 0);
	}
	if (v == V_MALFORMED)
		st->c[XDP_RL_STAT_MALFORMED]++;
	else if (v == V_DENY)
		st->c[XDP_RL_STAT_DENIED]++;
	if (live->flags & XDP_RL_F_DRY_RUN) {
		if (v == V_LIMIT || v == V_DENY || v == V_FULL || v == V_BANNED) {
			st->c[XDP_RL_STAT_WOULD_DROP]++;
			if (hits)
				hits->would_drop++;
		}
		return CAP_WHAT(cap_reason(v), XDP_PASS, 1);
	}
	if (hits)
		hits->dropped++;
	/*
	 * Drops by reason (xdp_rl_drops_total{reason}). One counter chosen, not
	 * a branch per counter: xdp_rl's frame holds no more (check-stack.py).
	 */
	st->c[v == V_DENY      ? XDP_RL_STAT_DROPS_DENY :
	      v == V_MALFORMED ? XDP_RL_STAT_DROPS_MALFORMED :
	      v == V_FULL      ? XDP_RL_STAT_DROPS_NEW_SOURCES :
	      v == V_BANNED    ? XDP_RL_STAT_DROPS_BANNED :
				 XDP_RL_STAT_DROPS_LIMIT]++;
	if (v == V_LIMIT || v == V_FULL || v == V_BANNED) {
		st->c[XDP_RL_STAT_DROPPED]++;
		st->c[XDP_RL_STAT_DROPPED_BYTES] += len;
	}
	return CAP_WHAT(cap_reason(v), XDP_DROP, 0);
}

SEC("xdp")
int xdp_rl(struct xdp_md *ctx)
{
	void *data, *data_end;
	struct cursor c;
	__u64 len, inc;
	__u32 rule = NO_RULE, what;
	const struct xdp_rl_live *live;
	struct xdp_rl_config *cfg;
	struct xdp_rl_stats *st;
	struct in6_addr *a6 = NULL;
	struct packet p = {};
	__u32 zero = 0;
	__be16 proto;
	int v;

	if (cfg_shared) {
		const __u64 *gen = bpf_map_lookup_elem(&handover, &zero);

		/*
		 * Not this program's turn: the dispatcher goes on to the next
		 * (maps.h). Nothing is counted or captured: the program whose
		 * turn it is does both.
		 */
		if (!gen || READ_ONCE(*gen) != cfg_gen)
			return XDP_DISPATCHER_RETVAL;
	}
	/*
	 * A capture copies the frame first, when nothing but ctx is live: a
	 * call made later would keep more across it, on a frame that has no
	 * room for it (bpf/capture.h).
	 */
	if (capture_on())
		capture_copy(ctx);
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	c.pos = data;
	c.end = data_end;
	len = data_end - data;
	inc = cfg_bytes ? len : 1;
	cfg = bpf_map_lookup_elem(&config, &zero);
	st = bpf_map_lookup_elem(&stats, &zero);
	if (!cfg || !st)
		return XDP_PASS;
	live = live_of(cfg);

	if (parse_eth(&c, &proto) < 0) {
		v = V_MALFORMED;
	} else if (proto == bpf_htons(ETH_P_IP)) {
		if (parse_ipv4(&c, (__be32 *)&p.a[0], xdp_rl_key_dst(cfg_key)) < 0) {
			v = V_MALFORMED;
		} else {
			v = classify(&p, 0, live, &c);
			if (v == V_SLOW)
				v = limit_fast(&p, 0, live, inc);
			if (v == V_SLOW)
				v = limit_slow(&p, 0, inc, &rule, st);
		}
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		if (parse_ipv6(&c, &a6, xdp_rl_key_dst(cfg_key)) < 0) {
			v = V_MALFORMED;
		} else {
			__builtin_memcpy(p.a, a6, sizeof(p.a));
			v = classify(&p, 1, live, &c);
			if (v == V_SLOW)
				v = limit_fast(&p, 1, live, inc);
			if (v == V_SLOW)
				v = limit_slow(&p, 1, inc, &rule, st);
		}
	} else {
		v = V_NOT_IP;
	}
	what = verdict_count(v, &rule, len, live, st);
	return CAP_ACTION(what);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
