// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* model.c - the reference model of the datapath (see model.h). */
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "model.h"

void model_init(struct model *m, const struct model_fixed *f, __u64 now)
{
	memset(m, 0, sizeof(*m));
	m->f = *f;
	m->now = now;
}

void model_free(struct model *m)
{
	int t;

	for (t = 0; t < MODEL_TABLES; t++)
		free(m->t[t].k);
	memset(m->t, 0, sizeof(m->t));
}

void model_set_live(struct model *m, const struct xdp_rl_live *live)
{
	m->live = *live;
}

/* ---- Windows ---------------------------------------------------------------- */

int model_over(const struct model_win *w, __u64 now, __u64 window_ns)
{
	return !w->start || now >= w->start + window_ns || w->start > now + XDP_RL_AHEAD_MAX_NS;
}

/* @ns rounded up to XDP_RL_GRAIN, as a window's start and a ban's end are kept. */
static __u64 grain_up(__u64 ns)
{
	return (ns + XDP_RL_GRAIN - 1) / XDP_RL_GRAIN * XDP_RL_GRAIN;
}

/*
 * Where a window opened now starts: now, or with --aligned the multiple of
 * its length since the Unix epoch that now is in (the clock is TAI, the
 * published offset turns it into Unix time); rounded up to XDP_RL_GRAIN.
 */
static __u64 window_start(const struct model *m, __u64 window_ns)
{
	__u64 s = m->now, unix_ns;

	if (m->live.flags & XDP_RL_F_ALIGNED) {
		unix_ns = m->now + m->live.tai_to_unix_ns;
		s = unix_ns / window_ns * window_ns - m->live.tai_to_unix_ns;
	}
	s = grain_up(s);
	/* 0 means no window: one starting at the epoch starts a grain late. */
	return s ? s : XDP_RL_GRAIN;
}

static void win_close(struct model_win *w, __u64 count)
{
	w->start = 0;
	w->count = count;
	w->apart = 0;
	w->remote = 0;
	w->ban_until = 0;
	w->ban_made = 0;
}

/* Charge @inc to @w: returns 1 if that opened a window. */
static int win_hit(const struct model *m, struct model_win *w, __u64 window_ns, __u64 inc)
{
	if (model_over(w, m->now, window_ns)) {
		w->start = window_start(m, window_ns);
		w->count = inc;
		w->apart = 0;
		w->remote = 0;
		w->ban_until = 0;
		w->ban_made = 0;
		return 1;
	}
	w->count += inc;
	return 0;
}

/* What a window is judged on: its count, plus the fleet's share in fleet mode. */
static __u64 judged(const struct model *m, const struct model_win *w)
{
	return w->count + (m->live.flags & XDP_RL_F_FLEET ? w->remote : 0);
}

/* Whether window @w holds a ban at @now. */
static int ban_holds(const struct model_win *w, __u64 now)
{
	return w->ban_until > now && w->ban_until <= now + XDP_RL_BAN_MAX_NS + XDP_RL_GRAIN;
}

/* ---- Rates (--rate N/DUR --burst B) ------------------------------------------------ */

__u64 model_rate_tat(const struct model_win *w, __u64 now)
{
	if (!w->start || w->start > now + XDP_RL_AHEAD_MAX_NS)
		return 0;
	return w->start + (w->count & XDP_RL_RATE_OFF_MASK);
}

/* Whether the rate @l in @w refuses @inc units on a read: its episode's first refusal made (model.h). */
static int rate_exhausted(const struct model *m, const struct model_win *w,
			  const struct xdp_rl_layer *l, __u64 inc)
{
	__u64 tat = model_rate_tat(w, m->now);

	return (w->count & XDP_RL_RATE_REFUSING) && tat > m->now &&
	       tat + xdp_rl_rate_cost(l->per_fp, inc) - m->now > xdp_rl_rate_tau(l, m->f.bytes);
}

/*
 * Charge @inc units to the rate @l in @w: 1 if it passes (*opened counts an
 * episode begun), 0 if refused (*first: the episode's first refusal), -1 if
 * refused for a charge that costs more than the burst (nothing done).
 */
static int rate_hit(const struct model *m, struct model_win *w, const struct xdp_rl_layer *l,
		    __u64 inc, __u64 *opened, int *first)
{
	__u64 cost = xdp_rl_rate_cost(l->per_fp, inc), tat = model_rate_tat(w, m->now), next,
	      flag = w->count & XDP_RL_RATE_REFUSING;

	*first = 0;
	if (cost > xdp_rl_rate_tau(l, m->f.bytes))
		return -1;
	next = (tat > m->now ? tat : m->now) + cost;
	if (next - m->now > xdp_rl_rate_tau(l, m->f.bytes)) {
		*first = !flag;
		w->count |= XDP_RL_RATE_REFUSING;
		w->apart += inc;
		return 0;
	}
	if (tat > m->now && next - w->start <= XDP_RL_RATE_OFF_MASK) {
		w->count = flag | (next - w->start);
		return 1;
	}
	/* An episode begins (or its offset outgrows its bits): from now, rounded down. */
	w->start = m->now & ~XDP_RL_GEN_MASK;
	w->count = (tat > m->now ? flag : 0) | (next - w->start);
	w->apart = 0;
	w->remote = 0;
	w->ban_until = 0;
	w->ban_made = 0;
	++*opened;
	return 1;
}

/* Take back the pass of @inc units layer @l made in @w: a window's count, a rate's cost. */
static void layer_undo(struct model_win *w, const struct xdp_rl_layer *l, __u64 inc)
{
	if (xdp_rl_is_rate(l))
		w->count -= xdp_rl_rate_cost(l->per_fp, inc);
	else
		w->count -= inc;
}

/* A ban of @ban_ns from now in @w, counted. */
static void ban_now(struct model *m, struct model_win *w, __u64 ban_ns)
{
	w->ban_until = grain_up(m->now + ban_ns);
	w->ban_made = 1;
	m->st.c[XDP_RL_STAT_BANS]++;
}

/*
 * Charge @inc to layers 0 .. n-1 of @w (at most @room). Returns the layer
 * that refused, or -1; the layers before a refusing one give their charge
 * back. *opened counts the windows opened; *full is set if a full window
 * refused it on a read. A layer the charge takes over its limit (from at
 * most the limit to past it: one packet per window) counts in over_limit,
 * and bans the key for @ban_ns if not 0. *banned is set if a ban refused
 * it (model.h).
 */
static int layers_charge(struct model *m, struct model_win *w, __u32 room,
			 const struct xdp_rl_layer *lay, __u32 n, __u64 inc, __u64 *opened,
			 int *full, __u64 ban_ns, int *banned)
{
	__u32 i, j, k = n < room ? n : room;
	struct model_win prev;
	__u64 until;
	int r, first;

	*banned = 0;
	if (m->live.flags & XDP_RL_F_BANS)
		for (i = 0; i < k; i++)
			if (ban_holds(&w[i], m->now)) {
				*banned = 1;
				return i;
			}

	/*
	 * A window over its limit (count > limit) refuses on a read, if every
	 * layer before it is open and would admit the packet: nothing is
	 * charged, and the drop is counted apart (bpf/layers.h,
	 * layers_exhausted). One at its limit exactly is charged, and goes over.
	 */
	for (i = 0; i < k; i++) {
		if (xdp_rl_is_rate(&lay[i])) {
			/* A rate refuses on a read once its episode's first refusal is made. */
			if (!rate_exhausted(m, &w[i], &lay[i], inc))
				break;
			w[i].apart += inc;
			*full = 1;
			return i;
		}
		if (model_over(&w[i], m->now, lay[i].window_ns))
			break;
		if (judged(m, &w[i]) > lay[i].limit) {
			/*
			 * Its first drops past the limit count in its count
			 * (bpf/window.h, window_drop), not in a fleet (whose agent
			 * shares the count); the rest apart (bpf/hot.h).
			 */
			if (!(m->live.flags & XDP_RL_F_FLEET) &&
			    w[i].count - lay[i].limit <= (__u64)m->f.hot_after * inc) {
				w[i].count += inc;
				*full = 2;
			} else {
				w[i].apart += inc;
				*full = 1;
			}
			return i;
		}
		if (judged(m, &w[i]) + inc > lay[i].limit)
			break;
	}
	for (i = 0; i < k; i++) {
		if (xdp_rl_is_rate(&lay[i])) {
			r = rate_hit(m, &w[i], &lay[i], inc, opened, &first);
			if (r > 0)
				continue;
			/* Refused: the first refusal of the episode reports it, and bans. */
			if (first) {
				m->st.c[XDP_RL_STAT_OVER_LIMIT]++;
				if (ban_ns)
					ban_now(m, &w[i], ban_ns);
			}
			for (j = 0; j < i; j++)
				layer_undo(&w[j], &lay[j], inc);
			return i;
		}
		prev = w[i];
		if (win_hit(m, &w[i], lay[i].window_ns, inc)) {
			++*opened;
			/* Opened after a window that went over its limit with no ban made for it. */
			if ((m->live.flags & XDP_RL_F_BANS) && prev.start &&
			    judged(m, &prev) > lay[i].limit && !prev.ban_made && ban_ns) {
				until = grain_up(prev.start + lay[i].window_ns);
				until = (until < m->now ? until : m->now) + ban_ns;
				if (until > m->now) {
					w[i].ban_until = grain_up(until);
					w[i].ban_made = 1;
					m->st.c[XDP_RL_STAT_BANS]++;
					for (j = 0; j <= i; j++)
						layer_undo(&w[j], &lay[j], inc);
					*banned = 1;
					return i;
				}
			}
		}
		if (judged(m, &w[i]) > lay[i].limit) {
			if (judged(m, &w[i]) - inc <= lay[i].limit) {
				m->st.c[XDP_RL_STAT_OVER_LIMIT]++;
				if (ban_ns) {
					w[i].ban_until = grain_up(m->now + ban_ns);
					w[i].ban_made = 1;
					m->st.c[XDP_RL_STAT_BANS]++;
				}
			}
			for (j = 0; j < i; j++)
				layer_undo(&w[j], &lay[j], inc);
			return i;
		}
	}
	return -1;
}

/* ---- Keys ---------------------------------------------------------------------- */

struct model_key *model_find(struct model *m, int t, const __u8 a[16], __u32 lsid)
{
	struct model_keys *ks = &m->t[t];
	int i;

	for (i = 0; i < ks->n; i++)
		if (ks->k[i].lsid == lsid && !memcmp(ks->k[i].a, a, model_key_len(m, t)))
			return &ks->k[i];
	return NULL;
}

/* A new key in table @t, its windows closed (as a slot changing hands closes them). */
static struct model_key *key_insert(struct model *m, int t, const __u8 a[16], __u32 lsid)
{
	struct model_keys *ks = &m->t[t];
	struct model_key *k;

	if (ks->n == ks->cap) {
		ks->cap = ks->cap ? 2 * ks->cap : 64;
		ks->k = realloc(ks->k, ks->cap * sizeof(*ks->k));
		if (!ks->k)
			abort();
	}
	k = &ks->k[ks->n++];
	memset(k, 0, sizeof(*k));
	memcpy(k->a, a, 16);
	k->lsid = lsid;
	return k;
}

void model_forget(struct model *m, int t, int i)
{
	struct model_keys *ks = &m->t[t];

	ks->k[i] = ks->k[--ks->n];
}

static void where_key(struct model_where *w, int t, const __u8 a[16], __u32 lsid)
{
	memset(w, 0, sizeof(*w));
	w->kind = MW_KEY;
	w->table = t;
	memcpy(w->a, a, 16);
	w->lsid = lsid;
}

static void where_shared(struct model_where *w, __u32 id)
{
	memset(w, 0, sizeof(*w));
	w->kind = MW_SHARED;
	w->id = id;
}

/* @a masked to @len bits, into @out (16 bytes, zeros past the family's length). */
static void mask(const __u8 *a, int v6, int len, __u8 out[16])
{
	int i;

	memset(out, 0, 16);
	memcpy(out, a, v6 ? 16 : 4);
	for (i = len; i < (v6 ? 128 : 32); i++)
		out[i / 8] &= ~(0x80 >> (i % 8));
}

/* Whether @a is link-local: 169.254.0.0/16, fe80::/10. */
static int link_local(int v6, const __u8 *a)
{
	return v6 ? a[0] == 0xfe && (a[1] & 0xc0) == 0x80 : a[0] == 169 && a[1] == 254;
}

/* Whether --link-local exempt passes @a untouched. */
static int exempt(const struct model *m, int v6, const __u8 *a)
{
	return link_local(v6, a) && m->live.link_local == XDP_RL_LL_EXEMPT;
}

/*
 * Port @port into key @out, if keys hold one (model.h's first point): an
 * IPv4 key's second 32-bit word, an IPv6 key's last 16 bits (which the
 * mask left clear), in network order.
 */
static void key_put_port(const struct model *m, int v6, __u16 port, __u8 out[16])
{
	if (!model_key_port(m->f.key))
		return;
	if (!v6) {
		out[4] = 0;
		out[5] = 0;
		out[6] = port >> 8;
		out[7] = port & 0xff;
		return;
	}
	out[14] |= port >> 8;
	out[15] |= port & 0xff;
}

/*
 * The key of address @a and @port: the address masked to the load's prefix
 * (whole if link-local per address), and the port, but in an IPv6 address
 * kept whole.
 */
static void source_key(const struct model *m, int v6, const __u8 *a, __u16 port, __u8 out[16])
{
	int len = v6 ? m->f.v6_prefix : m->f.v4_prefix, whole = 0;

	if (link_local(v6, a) && m->live.link_local == XDP_RL_LL_ADDRESS) {
		len = v6 ? 128 : 32;
		whole = 1;
	}
	mask(a, v6, len, out);
	if (!(v6 && whole))
		key_put_port(m, v6, port, out);
}

/* The aggregate key of address @a and @port: the address cut to /24 or /48, and the port. */
static void aggregate_key(const struct model *m, int v6, const __u8 *a, __u16 port, __u8 out[16])
{
	mask(a, v6, v6 ? XDP_RL_AGG6_PREFIX : XDP_RL_AGG4_PREFIX, out);
	key_put_port(m, v6, port, out);
}

/* The port a key holds for a packet carrying @l: its destination port if it was read, else 0. */
static __u16 packet_port(const struct model_l4 *l)
{
	if (!(l->known & MODEL_L4_PROTO) || !(l->known & MODEL_L4_PORT))
		return 0;
	return l->proto == IPPROTO_TCP || l->proto == IPPROTO_UDP ? l->dport : 0;
}

/*
 * Whether selector @s takes a packet carrying @l: unless a field it looks at
 * was read and rules the packet out (a field that could not be read is
 * taken to be one it wants: fail closed). Its protocol if it names one;
 * with --syn, TCP with SYN and not ACK; with ports, TCP or UDP to a port in
 * a range.
 */
static int selects(const struct xdp_rl_select *s, const struct model_l4 *l)
{
	const int proto = l->known & MODEL_L4_PROTO;
	int i;

	if (s->proto && proto && l->proto != s->proto)
		return 0;
	if (s->syn && proto && l->proto != IPPROTO_TCP)
		return 0;
	if (s->syn && (l->known & MODEL_L4_FLAGS) && (l->tcp_flags & 0x12) != 0x02)
		return 0;
	if (!s->nports)
		return 1;
	if (proto && l->proto != IPPROTO_TCP && l->proto != IPPROTO_UDP)
		return 0;
	if (!(l->known & MODEL_L4_PORT))
		return 1;
	for (i = 0; i < s->nports && i < XDP_RL_MAX_PORT_RANGES; i++)
		if (l->dport >= s->port_lo[i] && l->dport <= s->port_hi[i])
			return 1;
	return 0;
}

/* ---- Rules --------------------------------------------------------------------- */

__u32 model_free_rule_id(const struct model *m)
{
	__u32 id;
	int i;

	for (id = 0;; id++) {
		for (i = 0; i < m->nrules && m->rules[i].r.id != id; i++)
			;
		if (i == m->nrules)
			return id;
	}
}

int model_rule_find(const struct model *m, int v6, const __u8 a[16], int len)
{
	int i;

	for (i = 0; i < m->nrules; i++)
		if (m->rules[i].v6 == v6 && m->rules[i].len == len &&
		    !memcmp(m->rules[i].a, a, v6 ? 16 : 4))
			return i;
	return -1;
}

int model_rule_add(struct model *m, const struct model_rule *r)
{
	__u32 i;

	if (model_rule_find(m, r->v6, r->a, r->len) >= 0 || m->nrules == MODEL_MAX_RULES ||
	    r->r.id >= MODEL_MAX_RULES)
		return -1;
	m->rules[m->nrules++] = *r;
	/* xdp-rl closes the id's budget and zeroes its counters (user/rules.c's zero_id). */
	for (i = 0; i < XDP_RL_MAX_LAYERS; i++)
		win_close(&m->shared[r->r.id][i], 0);
	memset(&m->hits[r->r.id], 0, sizeof(m->hits[r->r.id]));
	return 0;
}

int model_rule_del(struct model *m, int v6, const __u8 a[16], int len)
{
	int i = model_rule_find(m, v6, a, len);

	if (i < 0)
		return -1;
	m->rules[i] = m->rules[--m->nrules];
	return 0;
}

void model_rule_counts(const struct model *m, __u32 *n4, __u32 *n6)
{
	int i;

	*n4 = *n6 = 0;
	for (i = 0; i < m->nrules; i++)
		++*(m->rules[i].v6 ? n6 : n4);
}

__u64 model_rules_max_window(const struct model *m)
{
	__u64 w = 0;
	__u32 j;
	int i;

	for (i = 0; i < m->nrules; i++)
		for (j = 0; j < m->rules[i].r.nlayers; j++)
			if (m->rules[i].r.layer[j].window_ns > w)
				w = m->rules[i].r.layer[j].window_ns;
	return w;
}

/*
 * The longest prefix rule matching @a no longer than @len bits, if the
 * family has rules in force; or -1.
 */
static int rule_match(const struct model *m, int v6, const __u8 a[16], int len)
{
	__u8 masked[16];
	int i, best = -1;

	if (!(v6 ? m->live.nrules6 : m->live.nrules4))
		return -1;
	for (i = 0; i < m->nrules; i++) {
		const struct model_rule *r = &m->rules[i];

		if (r->v6 != v6 || r->len > len || (best >= 0 && m->rules[best].len >= r->len))
			continue;
		mask(a, v6, r->len, masked);
		if (!memcmp(masked, r->a, v6 ? 16 : 4))
			best = i;
	}
	return best;
}

/*
 * The rule that judges a packet from @a: the longest matching rule whose
 * selector takes it (@sel: selectors in force; one that does not take it
 * is as if it did not exist), looking XDP_RL_SELECT_NEST + 1 rules deep, as
 * the datapath does; a walk that goes deeper (user space refuses such
 * rules) ends in the global limits whatever their selector (*@forced).
 */
static int rule_judge(const struct model *m, int v6, const __u8 a[16], int sel,
		      const struct model_l4 *l4, int *forced, int *passed_over)
{
	int r = rule_match(m, v6, a, v6 ? 128 : 32), i;

	*forced = 0;
	*passed_over = 0;
	if (!sel)
		return r;
	for (i = 0; i <= XDP_RL_SELECT_NEST; i++) {
		if (r < 0 || selects(&m->rules[r].r.select, l4))
			return r;
		++*passed_over;
		if (!m->rules[r].len)
			return -1;
		r = rule_match(m, v6, a, m->rules[r].len - 1);
	}
	if (r >= 0 && !selects(&m->rules[r].r.select, l4)) {
		*forced = 1;
		return -1;
	}
	return r;
}

__u32 model_limit_set(const struct model *m, __u32 lsid, const struct xdp_rl_layer **lay)
{
	int i;

	if (lsid == m->live.lsid) {
		*lay = m->live.layer;
		return m->live.nlayers;
	}
	for (i = 0; i < m->nrules; i++) {
		if (m->rules[i].r.action == XDP_RL_RULE_LIMIT && m->rules[i].r.lsid == lsid) {
			*lay = m->rules[i].r.layer;
			return m->rules[i].r.nlayers;
		}
	}
	*lay = NULL;
	return 0;
}

/* ---- What limits an address ---------------------------------------------------- */

struct limits {
	int rule;			/* index in m->rules, or -1 */
	int passed_over;		/* rules whose selector missed the packet before it */
	int shared;			/* charged to the rule's budget */
	const struct xdp_rl_layer *lay; /* the layers */
	__u32 n;
	__u32 lsid;
	__u64 ban_ns; /* --ban: the global limits', a per-source rule's; 0 for a --shared budget */
};

/*
 * Returns MV_ALLOW or MV_DENY if a rule decides outright, MV_UNSELECTED if
 * nothing limits the packet, else MV_PASS with @l filled. @l4: the packet's
 * transport, for the selectors; NULL for an address alone (`reset`,
 * `charge`), which the selectors do not judge.
 */
static enum model_verdict limits_of(const struct model *m, int v6, const __u8 a[16],
				    const struct model_l4 *l4, struct limits *l)
{
	const int sel = l4 && (m->live.flags & XDP_RL_F_SELECT);
	const struct model_rule *r;
	int forced;

	if (exempt(m, v6, a))
		return MV_UNSELECTED;
	l->rule = rule_judge(m, v6, a, sel, l4, &forced, &l->passed_over);
	if (sel && l->rule < 0 && !forced && !selects(&m->live.select, l4))
		return MV_UNSELECTED;
	l->shared = 0;
	l->lay = m->live.layer;
	l->n = m->live.nlayers;
	l->lsid = m->live.lsid;
	l->ban_ns = m->live.ban_ns;
	if (l->rule < 0)
		return MV_PASS;
	r = &m->rules[l->rule];
	if (r->r.action == XDP_RL_RULE_ALLOW)
		return MV_ALLOW;
	if (r->r.action == XDP_RL_RULE_DENY)
		return MV_DENY;
	l->shared = !!(r->r.flags & XDP_RL_RULE_F_SHARED);
	l->lay = r->r.layer;
	l->n = r->r.nlayers;
	l->lsid = r->r.lsid;
	l->ban_ns = l->shared ? 0 : r->r.ban_ns;
	return MV_PASS;
}

static int src_table(int v6)
{
	return v6 ? MODEL_SRC6 : MODEL_SRC4;
}

static int agg_table(int v6)
{
	return v6 ? MODEL_AGG6 : MODEL_AGG4;
}

/* ---- A packet ------------------------------------------------------------------- */

void model_packet(struct model *m, int v6, const __u8 src[16], const __u8 dst[16],
		  const struct model_l4 *l4, __u32 len, struct model_out *o)
{
	const int ts = src_table(v6), ta = agg_table(v6);
	const __u8 *a = model_key_dst(m->f.key) ? dst : src;
	const __u16 port = packet_port(l4);
	__u64 inc = m->f.bytes ? len : 1, opened = 0;
	struct model_win *w = NULL;
	struct model_key *k;
	struct limits l;
	__u32 room = m->f.room;
	__u8 key[16];
	int refused, banned;
	__u32 i;

	memset(o, 0, sizeof(*o));
	o->rule = -1;
	o->refused_layer = -1;
	o->newsrc = -1;
	if (v6 && !l4->known && !exempt(m, v6, a) &&
	    ((m->live.flags & XDP_RL_F_SELECT) || model_key_port(m->f.key))) {
		o->v = MV_MALFORMED;
		o->why = "a header chain past the parser's walk, its transport needed";
		m->st.c[XDP_RL_STAT_MALFORMED]++;
		o->xdp = XDP_PASS;
		if (m->live.flags & XDP_RL_F_DRY_RUN)
			return;
		m->st.c[XDP_RL_STAT_DROPS_MALFORMED]++;
		o->xdp = XDP_DROP;
		return;
	}
	o->v = limits_of(m, v6, a, l4, &l);
	o->passed_over = o->v == MV_UNSELECTED ? 0 : l.passed_over;
	o->unread = o->v != MV_UNSELECTED && (m->live.flags & XDP_RL_F_SELECT) &&
		    l4->known != MODEL_L4_ALL;
	if (o->v == MV_UNSELECTED) {
		o->why = "selected by no limit";
		m->st.c[XDP_RL_STAT_UNSELECTED]++;
		o->xdp = XDP_PASS;
		return;
	}
	o->rule = l.rule;
	if (o->v == MV_ALLOW)
		o->why = "an allow rule";
	else if (o->v == MV_DENY)
		o->why = "a deny rule";
	else if (l.shared) {
		where_shared(&o->at, m->rules[l.rule].r.id);
		w = m->shared[o->at.id];
		room = XDP_RL_MAX_LAYERS;
		o->why = "its rule's shared budget";
	} else {
		source_key(m, v6, a, port, key);
		k = model_find(m, ts, key, l.lsid);
		o->why = "its key, in the table";
		if (!k && m->live.new_sources.limit) {
			/*
			 * The cap is a window of its own, charged one per new
			 * source; once over, a new source is refused on a read,
			 * nothing charged (bpf/hot.h). The one that takes it
			 * over counts in over_limit.
			 */
			if (!model_over(&m->newsrc, m->now, m->live.new_sources.window_ns) &&
			    m->newsrc.count > m->live.new_sources.limit) {
				o->newsrc = 1;
			} else {
				win_hit(m, &m->newsrc, m->live.new_sources.window_ns, 1);
				o->newsrc = m->newsrc.count > m->live.new_sources.limit;
				if (m->newsrc.count == m->live.new_sources.limit + 1)
					m->st.c[XDP_RL_STAT_OVER_LIMIT]++;
			}
		}
		if (!k && o->newsrc != 1) {
			k = key_insert(m, ts, key, l.lsid);
			where_key(&o->ins, ts, key, l.lsid);
			m->st.c[XDP_RL_STAT_INSERTS]++;
			o->why = "its key, given a slot";
		}
		if (!k) {
			m->st.c[XDP_RL_STAT_REFUSED_INSERTS]++;
			if (m->live.on_full == XDP_RL_FULL_PASS) {
				o->v = MV_PASS;
				o->why = "a new source over --new-sources: on-table-full pass";
			} else if (m->live.on_full == XDP_RL_FULL_DROP) {
				o->v = MV_LIMIT;
				o->why = "a new source over --new-sources: on-table-full drop";
			} else {
				m->st.c[XDP_RL_STAT_AGGREGATED]++;
				aggregate_key(m, v6, a, port, key);
				k = model_find(m, ta, key, l.lsid);
				o->why = "its aggregate, in the table";
				if (!k) {
					k = key_insert(m, ta, key, l.lsid);
					where_key(&o->ins, ta, key, l.lsid);
					o->why = "its aggregate, given a slot";
				}
				where_key(&o->at, ta, key, l.lsid);
			}
		} else {
			where_key(&o->at, ts, key, l.lsid);
		}
		if (k)
			w = k->w;
	}
	if (w) {
		refused = layers_charge(m, w, room, l.lay, l.n, inc, &opened, &o->full, l.ban_ns,
					&banned);
		m->st.c[XDP_RL_STAT_NEW_WINDOWS] += opened;
		o->refused_layer = refused;
		o->v = banned ? MV_BANNED : refused < 0 ? MV_PASS : MV_LIMIT;
		for (i = 0; i < l.n && i < room; i++)
			o->rate |= xdp_rl_is_rate(&l.lay[i]);
		if (refused >= 0 && !banned && xdp_rl_is_rate(&l.lay[refused]))
			o->rate = 2;
		if (banned)
			o->why = "a ban";
	}

	/* The verdict, and the counters, as the program's entry point keeps them. */
	if (l.rule >= 0)
		m->hits[m->rules[l.rule].r.id].packets++;
	if (o->v == MV_ALLOW)
		m->st.c[XDP_RL_STAT_ALLOWED]++;
	if (o->v == MV_PASS || o->v == MV_ALLOW) {
		m->st.c[XDP_RL_STAT_PASSED]++;
		m->st.c[XDP_RL_STAT_PASSED_BYTES] += len;
		o->xdp = XDP_PASS;
		return;
	}
	if (o->v == MV_DENY)
		m->st.c[XDP_RL_STAT_DENIED]++;
	if (m->live.flags & XDP_RL_F_DRY_RUN) {
		m->st.c[XDP_RL_STAT_WOULD_DROP]++;
		if (l.rule >= 0)
			m->hits[m->rules[l.rule].r.id].would_drop++;
		o->xdp = XDP_PASS;
		return;
	}
	if (l.rule >= 0)
		m->hits[m->rules[l.rule].r.id].dropped++;
	if (o->v == MV_BANNED)
		m->st.c[XDP_RL_STAT_DROPS_BANNED]++;
	if (o->v == MV_LIMIT || o->v == MV_BANNED) {
		m->st.c[XDP_RL_STAT_DROPPED]++;
		m->st.c[XDP_RL_STAT_DROPPED_BYTES] += len;
	}
	o->xdp = XDP_DROP;
}

/* ---- What xdp-rl asks of the program (bpf/admin.h, user/admin.h) ------------------- */

/* The key's windows, given a slot if it has none and @insert says so; NULL if none. */
static struct model_win *key_windows(struct model *m, int t, const __u8 a[16], __u32 lsid,
				     int insert, struct model_out *o)
{
	struct model_key *k = model_find(m, t, a, lsid);

	if (!k && insert) {
		k = key_insert(m, t, a, lsid);
		where_key(&o->ins, t, a, lsid);
		/* Counted in the --new-sources window as a packet's insert, never refused by it. */
		if (m->live.new_sources.limit)
			win_hit(m, &m->newsrc, m->live.new_sources.window_ns, 1);
	}
	return k ? k->w : NULL;
}

/*
 * RESET of layers 0 .. n-1 (at most @room): closed (@count 0), or a window
 * opened now holding @count.
 */
static void layers_reset(struct model *m, struct model_win *w, __u32 room,
			 const struct xdp_rl_layer *lay, __u32 n, __u64 count)
{
	__u32 i;

	for (i = 0; i < n && i < room; i++) {
		win_close(&w[i], count);
		if (count)
			w[i].start = window_start(m, lay[i].window_ns);
	}
}

int model_reset_address(struct model *m, int v6, const __u8 a[16], __u16 port, __u64 count,
			struct model_out *o)
{
	struct model_win *w;
	struct limits l;
	__u8 key[16];
	__u32 id;

	memset(o, 0, sizeof(*o));
	o->refused_layer = -1;
	o->newsrc = -1;
	if (limits_of(m, v6, a, NULL, &l) != MV_PASS)
		return 0;
	o->rule = l.rule;
	if (l.shared) {
		id = m->rules[l.rule].r.id;
		where_shared(&o->at, id);
		layers_reset(m, m->shared[id], XDP_RL_MAX_LAYERS, l.lay, l.n, count);
		return 3;
	}
	source_key(m, v6, a, port, key);
	w = key_windows(m, src_table(v6), key, l.lsid, count != 0, o);
	if (w) {
		where_key(&o->at, src_table(v6), key, l.lsid);
		layers_reset(m, w, m->f.room, l.lay, l.n, count);
		return 1;
	}
	/* No slot of its own: the aggregate it may be charged to. */
	aggregate_key(m, v6, a, port, key);
	w = key_windows(m, agg_table(v6), key, l.lsid, 0, o);
	if (!w)
		return 0;
	where_key(&o->at, agg_table(v6), key, l.lsid);
	layers_reset(m, w, m->f.room, l.lay, l.n, 0);
	return 2;
}

int model_address_rate(const struct model *m, int v6, const __u8 a[16])
{
	struct limits l;
	__u32 i;

	if (limits_of(m, v6, a, NULL, &l) != MV_PASS)
		return 0;
	for (i = 0; i < l.n && i < XDP_RL_MAX_LAYERS; i++)
		if (xdp_rl_is_rate(&l.lay[i]))
			return 1;
	return 0;
}

int model_charge_address(struct model *m, int v6, const __u8 a[16], __u16 port, __u64 n,
			 struct model_out *o)
{
	struct model_win *w, prev;
	struct limits l;
	__u64 opened = 0;
	__u8 key[16];
	__u32 i;

	memset(o, 0, sizeof(*o));
	o->refused_layer = -1;
	o->newsrc = -1;
	if (limits_of(m, v6, a, NULL, &l) != MV_PASS)
		return 0;
	o->rule = l.rule;
	if (l.shared) {
		/* The budget is charged as a packet would be, without the limit check. */
		where_shared(&o->at, m->rules[l.rule].r.id);
		for (i = 0; i < l.n && i < XDP_RL_MAX_LAYERS; i++)
			opened += win_hit(m, &m->shared[o->at.id][i], l.lay[i].window_ns, n);
		m->st.c[XDP_RL_STAT_NEW_WINDOWS] += opened;
		return 3;
	}
	source_key(m, v6, a, port, key);
	w = key_windows(m, src_table(v6), key, l.lsid, 1, o);
	where_key(&o->at, src_table(v6), key, l.lsid);
	for (i = 0; i < l.n && i < m->f.room; i++) {
		prev = w[i];
		if (!win_hit(m, &w[i], l.lay[i].window_ns, n))
			continue;
		opened++;
		/* A ban goes on in the window `charge` opened after it (model.h). */
		if (prev.start && ban_holds(&prev, m->now)) {
			w[i].ban_until = prev.ban_until;
			w[i].ban_made = 1;
		}
	}
	m->st.c[XDP_RL_STAT_NEW_WINDOWS] += opened;
	return 1;
}

int model_remote_address(struct model *m, int v6, const __u8 a[16], __u16 port, __u32 layer,
			 __u64 n, int stale, struct model_out *o)
{
	struct model_win *w;
	struct limits l;
	__u8 key[16];
	int what = 1;

	memset(o, 0, sizeof(*o));
	o->refused_layer = -1;
	o->newsrc = -1;
	if (limits_of(m, v6, a, NULL, &l) != MV_PASS || layer >= l.n)
		return 0;
	o->rule = l.rule;
	if (l.shared) {
		where_shared(&o->at, m->rules[l.rule].r.id);
		w = m->shared[o->at.id];
		what = 3;
	} else {
		if (layer >= m->f.room)
			return 0;
		source_key(m, v6, a, port, key);
		w = key_windows(m, src_table(v6), key, l.lsid, 0, o);
		where_key(&o->at, src_table(v6), key, l.lsid);
		if (!w) {
			aggregate_key(m, v6, a, port, key);
			w = key_windows(m, agg_table(v6), key, l.lsid, 0, o);
			where_key(&o->at, agg_table(v6), key, l.lsid);
			what = 2;
		}
		if (!w)
			return 0;
	}
	if (!w[layer].start)
		return 0;
	w[layer].remote = stale ? 0 : n;
	return what;
}

void model_reset_all(struct model *m)
{
	__u32 i;
	int t, j;

	for (t = 0; t < MODEL_TABLES; t++)
		for (j = 0; j < m->t[t].n; j++)
			for (i = 0; i < m->f.room; i++)
				win_close(&m->t[t].k[j].w[i], 0);
	for (j = 0; j < m->nrules; j++) {
		if (m->rules[j].r.action != XDP_RL_RULE_LIMIT ||
		    !(m->rules[j].r.flags & XDP_RL_RULE_F_SHARED))
			continue;
		for (i = 0; i < XDP_RL_MAX_LAYERS; i++)
			win_close(&m->shared[m->rules[j].r.id][i], 0);
	}
}
