// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_model.c - the datapath checked against a model (tests/unit/model.h):
 * random scenarios run through the real program (BPF_PROG_TEST_RUN, one
 * CPU, the test clock) and through the model, every packet's verdict
 * compared, and after every step every window, every key's place in the
 * tables and the counters.
 *
 * A scenario is a load (--key: the source, in half of them, or the
 * destination, with the destination port or not; prefixes, --v6-prefix at
 * most 112 with a port; --bytes, --max-sources 4..64 so that keys are
 * evicted, room for 1..4 layers), settings, rules given at load (on the
 * key's addresses), then steps: packets from a pool of 30-60 sources in a
 * few /24s of 198.18.0.0/15 and /64s of 2001:2::/48 (and now and then a
 * link-local one) to a pool of 6-40 destinations there, over TCP, UDP or
 * ICMP to a few ports, some of them later fragments, time moving on by
 * amounts that hit window boundaries and the ends of bans, `set`
 * (selectors, --link-local, --ban and fleet mode among what it changes),
 * `rule add`/`del` (with selectors, a per-source limit with --ban), `reset
 * [--count N]`, `charge` (a key's address, and its port with --key
 * ...,dport), `reset --all`, and the fleet agent writing a window's share (the `remote` map, as
 * user/fleet.c does: by slot, tagged with the window's generation, now
 * and then a past window's; in an LRU element, through the program,
 * admin_remote). Bans (--ban) are checked as windows are: a window's ban
 * word (the `bans` map's, an LRU element's own) holds exactly while the
 * model's ban of that window does, and ends when it says. Each runs on a
 * freshly loaded program, on the table
 * XDP_RL_TEST_TABLE names (make unit T=model TABLE=lru). The
 * operations go through the code xdp-rl runs for them: settings through
 * limiter_publish (env_live), a rule's budget closed by the program
 * (admin_reset_shared, as user/rules.c's zero_id), `reset` and `charge`
 * through target_of and user/admin.h as user/cmd/reset.c does, `reset
 * --all` through forget_all.
 *
 * A mismatch prints the seed, the scenario, the step and the packet, both
 * sides' verdicts and windows, then shrinks the scenario (steps removed
 * while a mismatch remains, each try on a fresh program, for a bounded
 * time) and prints what is left step by step.
 *
 *   make unit T=model                                 20 s, a new seed
 *   make unit T=model MODEL_SECONDS=600 MODEL_SEED=S  longer, that seed
 *   make unit T=model MODEL_SEED=S MODEL_SCENARIO=K   scenario K of seed S alone
 *   make model-test                                   10 minutes
 *
 * (environment: XDP_RL_MODEL_SECONDS, XDP_RL_MODEL_SEED,
 * XDP_RL_MODEL_SCENARIO, XDP_RL_MODEL_SHRINK_SECONDS, default 90;
 * XDP_RL_MODEL_VERBOSE=1 prints every step of every scenario.)
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/random.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "admin.h"
#include "harness.h"
#include "model.h"
#include "sources.h"

#define MS_NS	1000000ULL
#define T0_NS	(1000 * SEC_NS) /* the test clock at load (env_load) */
#define MAX_IDS MODEL_MAX_RULES

/* ---- Randomness ---------------------------------------------------------------- */

struct rng {
	__u64 s;
};

static __u64 rnd(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return xdp_rl_mix(r->s);
}

static __u64 below(struct rng *r, __u64 n)
{
	return n ? rnd(r) % n : 0;
}

static int chance(struct rng *r, int percent)
{
	return (int)below(r, 100) < percent;
}

/* ---- Scenarios ------------------------------------------------------------------ */

/* What `set` gives (and the first settings). */
struct settings {
	struct xdp_rl_layer layer[XDP_RL_MAX_LAYERS];
	__u32 nlayers;
	__u32 flags; /* XDP_RL_F_ALIGNED, XDP_RL_F_DRY_RUN, XDP_RL_F_FLEET */
	struct xdp_rl_layer new_sources;
	__u32 on_full;
	struct xdp_rl_select select;
	__u32 link_local; /* enum xdp_rl_link_local */
	__u64 ban_ns;	  /* --ban, 0: off */
};

enum step_kind {
	ST_PKT,
	ST_ADVANCE,	/* n ns */
	ST_ADVANCE_END, /* to the end of an open window (the n-th, modulo), plus delta */
	ST_ADVANCE_BAN, /* to the end of a ban in force (the n-th, modulo), plus delta */
	ST_SET,
	ST_RULE_ADD, /* at_load: given at load, published with the first settings */
	ST_RULE_DEL,
	ST_RESET, /* n: --count, 0 for none */
	ST_CHARGE,
	ST_RESET_ALL,
	ST_REMOTE, /* the fleet's share n of layer len's window of a, stale: a past window's */
};

struct step {
	enum step_kind kind;
	int at_load;
	int v6;
	/*
	 * A packet's source; a rule's prefix; the address `reset`, `charge`
	 * and the fleet's share name (the key's: the source's, or with --key
	 * dst the destination's).
	 */
	__u8 a[16];
	__u8 d[16]; /* a packet's destination */
	int len;    /* a rule's prefix length */
	/* `reset`, `charge`, the fleet's share: the key's port (with --key ...,dport) */
	int with_port;
	__u16 port;
	__u32 size; /* a packet's frame length (0: the smallest) */
	int vlans;
	struct model_l4 l4; /* a packet's transport */
	int ext;	    /* IPv6 extension headers before it */
	int stale;	    /* ST_REMOTE */
	__u64 n;
	__s64 delta;
	struct settings set;
	struct xdp_rl_rule rule; /* action, flags, nlayers, layer, ban_ns */
};

struct scenario {
	struct load_opts lo;
	__s64 tai; /* CLOCK_TAI to Unix time, published with every setting */
	struct settings init;
	struct step *s;
	int n;
};

static void scenario_free(struct scenario *sc)
{
	free(sc->s);
	sc->s = NULL;
	sc->n = 0;
}

static struct scenario scenario_copy(const struct scenario *sc, int n)
{
	struct scenario c = *sc;

	c.n = n < sc->n ? n : sc->n;
	c.s = malloc((c.n ? c.n : 1) * sizeof(*c.s));
	if (!c.s)
		abort();
	memcpy(c.s, sc->s, c.n * sizeof(*c.s));
	return c;
}

/* ---- Generating one ------------------------------------------------------------- */

struct pool_addr {
	int v6;
	__u8 a[16];
};

struct pool {
	struct pool_addr a[64];
	int n;
};

struct gen {
	struct rng r;
	const struct scenario *sc;
	/*
	 * The addresses packets come from and go to. Rules, `reset`, `charge`
	 * and the fleet name the key's (key_pool: the sources', or with --key
	 * dst the destinations').
	 */
	struct pool src, dst;
	struct settings cur;
	struct step rules[MODEL_MAX_RULES]; /* the rules added and not deleted, as generated */
	int nrules;
	/*
	 * How much the scenario bans (--ban): 0 never (XDP_RL_F_BANS never
	 * set), 1 now and then (off most of the time), 2 often.
	 */
	int bans;
	/* How many of its limit sets are rates (--rate): 0 none, 1 some, 2 many. */
	int rates;
};

static const __u64 window_list[] = {
	1 * MS_NS,   2 * MS_NS,	  4 * MS_NS,   5 * MS_NS, 10 * MS_NS, 20 * MS_NS, 50 * MS_NS,
	100 * MS_NS, 250 * MS_NS, 500 * MS_NS, SEC_NS,	  2 * SEC_NS, 3 * SEC_NS, 10 * SEC_NS,
};
#define NWINDOWS (sizeof(window_list) / sizeof(window_list[0]))

static __u64 gen_window(struct gen *g)
{
	if (chance(&g->r, 75))
		return window_list[below(&g->r, NWINDOWS)];
	return MS_NS + below(&g->r, 10 * SEC_NS - MS_NS + 1);
}

static __u64 gen_limit(struct gen *g)
{
	if (g->sc->lo.bytes)
		return 40 + below(&g->r, 1200);
	return 1 + below(&g->r, 6);
}

/*
 * A rate (--rate N/DUR --burst B): B is N (the default) or another, 1 ..
 * 2N; with --bytes at least the smallest frame's 60 bytes, not always a
 * full one (a frame that costs more than the burst is refused).
 */
static void gen_rate(struct gen *g, struct xdp_rl_layer *l)
{
	__u64 n = gen_limit(g), dur = gen_window(g), b;

	if (chance(&g->r, 40))
		b = n;
	else if (g->sc->lo.bytes)
		b = 60 + below(&g->r, 2 * n + 1);
	else
		b = 1 + below(&g->r, 2 * n);
	memset(l, 0, sizeof(*l));
	if (xdp_rl_rate_fill(l, n, dur, b)) {
		/* Slower than XDP_RL_RATE_PER_MAX: never with these; a window then. */
		l->limit = n;
		l->window_ns = dur;
	}
}

/*
 * The layers of a limit set, *@n of them: windows; or (in a scenario with
 * rates) a rate, the only layer as xdp-rl makes one, or now and then a
 * rate among windows (the datapath takes that too).
 */
static void gen_layers(struct gen *g, struct xdp_rl_layer *lay, __u32 *n)
{
	__u32 i;

	memset(lay, 0, XDP_RL_MAX_LAYERS * sizeof(*lay));
	for (i = 0; i < *n; i++) {
		lay[i].limit = gen_limit(g);
		lay[i].window_ns = gen_window(g);
	}
	if (!g->rates || !chance(&g->r, g->rates == 2 ? 60 : 25))
		return;
	if (*n > 1 && chance(&g->r, 25)) {
		gen_rate(g, &lay[below(&g->r, *n)]);
		return;
	}
	memset(lay, 0, XDP_RL_MAX_LAYERS * sizeof(*lay));
	*n = 1;
	gen_rate(g, &lay[0]);
}

/* Which of @n layers are rates: bit i for layer i. */
static __u32 rate_bits(const struct xdp_rl_layer *lay, __u32 n)
{
	__u32 i, bits = 0;

	for (i = 0; i < n && i < XDP_RL_MAX_LAYERS; i++)
		bits |= (__u32)xdp_rl_is_rate(&lay[i]) << i;
	return bits;
}

/*
 * A --ban (1ms..XDP_RL_BAN_MAX_NS, as user space takes it) for layers whose
 * windows include @window_ns: a few windows long, or a fraction of one (a
 * ban that ends before its window does), or any length up to four windows.
 */
static __u64 gen_ban(struct gen *g, __u64 window_ns)
{
	static const __s64 deltas[] = { -(__s64)XDP_RL_GRAIN, -1, 0, 0, 0, 1, XDP_RL_GRAIN };
	__u64 k = below(&g->r, 100), b;

	b = k < 12 ? window_ns / 4 :
	    k < 27 ? window_ns / 2 :
	    k < 45 ? window_ns :
	    k < 65 ? 2 * window_ns :
	    k < 78 ? 3 * window_ns :
	    k < 86 ? 5 * window_ns :
		     below(&g->r, 4 * window_ns + 1);
	if (chance(&g->r, 40))
		b += deltas[below(&g->r, sizeof(deltas) / sizeof(deltas[0]))];
	return b < MS_NS ? MS_NS : b > XDP_RL_BAN_MAX_NS ? XDP_RL_BAN_MAX_NS : b;
}

/* Whether limits just made get a --ban: @often percent of the time if the scenario bans often. */
static int gen_bans_now(struct gen *g, int often)
{
	return g->bans && chance(&g->r, g->bans == 2 ? often : 15);
}

static __u32 gen_nlayers(struct gen *g, __u32 room)
{
	/* Mostly 1 .. 3; 4 now and then when there is room. */
	__u32 n = 1 + below(&g->r, room < 3 ? room : 3);

	return room == 4 && chance(&g->r, 10) ? 4 : n;
}

static void gen_new_sources(struct gen *g, struct settings *s)
{
	if (chance(&g->r, 45)) {
		s->new_sources.limit = 0;
		s->new_sources.window_ns = 0;
		s->on_full = XDP_RL_FULL_PASS;
		return;
	}
	s->new_sources.limit = 1 + below(&g->r, 4);
	s->new_sources.window_ns = gen_window(g);
	s->on_full = chance(&g->r, 40) ? XDP_RL_FULL_AGGREGATE : below(&g->r, 2);
}

/* Destination ports the packets go to, and the selectors name. */
static const __u16 port_list[] = { 22, 53, 80, 443, 8080, 8443 };
#define NPORTS (sizeof(port_list) / sizeof(port_list[0]))

/*
 * A selector as --proto, --dport and --syn make one (xdp-rl refuses --syn
 * beside a protocol other than TCP, and ports beside one other than TCP or
 * UDP); none @none percent of the time.
 */
static void gen_select(struct gen *g, struct xdp_rl_select *s, int none)
{
	static const __u8 protos[] = {
		0, 0, IPPROTO_TCP, IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP, IPPROTO_ICMPV6
	};
	__u16 lo;
	int i;

	memset(s, 0, sizeof(*s));
	if (chance(&g->r, none))
		return;
	s->proto = protos[below(&g->r, sizeof(protos))];
	if ((!s->proto || s->proto == IPPROTO_TCP) && chance(&g->r, 35))
		s->syn = 1;
	if ((!s->proto || s->proto == IPPROTO_TCP || s->proto == IPPROTO_UDP) &&
	    chance(&g->r, 55)) {
		s->nports = 1 + below(&g->r, 3);
		for (i = 0; i < s->nports; i++) {
			lo = port_list[below(&g->r, NPORTS)];
			s->port_lo[i] = lo;
			s->port_hi[i] = chance(&g->r, 70) ? lo : lo + below(&g->r, 100);
		}
	}
}

static __u32 gen_link_local(struct gen *g)
{
	__u64 k = below(&g->r, 100);

	return k < 60 ? XDP_RL_LL_ADDRESS : k < 80 ? XDP_RL_LL_PREFIX : XDP_RL_LL_EXEMPT;
}

static void gen_settings(struct gen *g, struct settings *s)
{
	memset(s, 0, sizeof(*s));
	s->nlayers = gen_nlayers(g, g->sc->lo.layers);
	gen_layers(g, s->layer, &s->nlayers);
	s->flags = (chance(&g->r, 30) ? XDP_RL_F_ALIGNED : 0) |
		   (chance(&g->r, 10) ? XDP_RL_F_DRY_RUN : 0) |
		   (chance(&g->r, 20) ? XDP_RL_F_FLEET : 0);
	gen_new_sources(g, s);
	gen_select(g, &s->select, 70);
	s->link_local = gen_link_local(g);
	s->ban_ns = gen_bans_now(g, 70) ? gen_ban(g, s->layer[below(&g->r, s->nlayers)].window_ns) :
					  0;
}

/* A change to the settings in force, as one `set` makes it. */
static void gen_set(struct gen *g, struct settings *s)
{
	__u64 k = below(&g->r, g->bans == 2 ? 135 : g->bans ? 125 : 120);
	__u32 i = below(&g->r, s->nlayers);

	if (k >= 120) {
		/* --ban DUR|off: off, or another length (a ban in force keeps its end). */
		s->ban_ns = s->ban_ns && chance(&g->r, g->bans == 2 ? 35 : 70) ?
				    0 :
				    gen_ban(g, s->layer[i].window_ns);
	} else if (k >= 100) {
		if (k < 108)
			gen_select(g, &s->select, 40); /* --proto, --dport, --syn */
		else if (k < 113)
			s->link_local = gen_link_local(g);
		else
			s->flags ^= XDP_RL_F_FLEET; /* xdp-rl fleet starting or stopping */
	} else if (k < 25 && xdp_rl_is_rate(&s->layer[i])) {
		/* --rate N/DUR or --burst B: a rate changed in place keeps its TATs */
		xdp_rl_rate_fill(&s->layer[i], chance(&g->r, 50) ? gen_limit(g) : s->layer[i].limit,
				 chance(&g->r, 50) ? gen_window(g) : s->layer[i].window_ns,
				 chance(&g->r, 50) ? s->layer[i].burst :
				 g->sc->lo.bytes   ? 60 + below(&g->r, 1500) :
						     1 + below(&g->r, 12));
	} else if (k < 45 && xdp_rl_is_rate(&s->layer[i])) {
		s->nlayers = gen_nlayers(g, g->sc->lo.layers); /* no --window for a rate */
		gen_layers(g, s->layer, &s->nlayers);
	} else if (k < 25) {
		s->layer[i].limit = gen_limit(g); /* --limit: same layers, same limit set */
	} else if (k < 45) {
		s->layer[i].window_ns = gen_window(g); /* --window */
	} else if (k < 60) {
		/* --layer ... or --rate: maybe a new set (of another kind: a new one) */
		s->nlayers = gen_nlayers(g, g->sc->lo.layers);
		gen_layers(g, s->layer, &s->nlayers);
	} else if (k < 70) {
		s->flags ^= XDP_RL_F_ALIGNED;
	} else if (k < 80) {
		s->flags ^= XDP_RL_F_DRY_RUN;
	} else if (k < 95 || !s->new_sources.limit) {
		gen_new_sources(g, s);
	} else {
		s->on_full = (s->on_full + 1 + below(&g->r, 2)) % 3;
	}
}

/* The pool of the addresses keys are made of (--key): the sources', or the destinations'. */
static const struct pool *key_pool(const struct gen *g)
{
	return model_key_dst(g->sc->lo.key) ? &g->dst : &g->src;
}

/* An address keys are made of: a packet's key address, a rule's, what `reset` names. */
static const struct pool_addr *gen_key_addr(struct gen *g)
{
	const struct pool *p = key_pool(g);

	/* A third of the packets of a few hot keys, so that windows fill. */
	if (chance(&g->r, 35))
		return &p->a[below(&g->r, p->n < 5 ? p->n : 5)];
	return &p->a[below(&g->r, p->n)];
}

/*
 * The packet's other address, of family @v6, from the pool keys are not
 * made of (any of it: it is not looked at); if that pool has none of the
 * family, 198.18.0.2 or 2001:2::2.
 */
static void gen_other_addr(struct gen *g, int v6, __u8 out[16])
{
	const struct pool *p = model_key_dst(g->sc->lo.key) ? &g->src : &g->dst;
	int i, n = 0, j;

	for (i = 0; i < p->n; i++)
		n += p->a[i].v6 == v6;
	memset(out, 0, 16);
	if (!n) {
		inet_pton(v6 ? AF_INET6 : AF_INET, v6 ? "2001:2::2" : "198.18.0.2", out);
		return;
	}
	j = below(&g->r, n);
	for (i = 0; i < p->n; i++)
		if (p->a[i].v6 == v6 && !j--)
			memcpy(out, p->a[i].a, 16);
}

/*
 * A key's port, for `reset`, `charge` and the fleet's share with --key
 * ...,dport: mostly one the packets go to, now and then 0 (the packets
 * whose port could not be read) or any.
 */
static __u16 gen_key_port(struct gen *g)
{
	__u64 k = below(&g->r, 100);

	return k < 70 ? port_list[below(&g->r, NPORTS)] : k < 85 ? 0 : below(&g->r, 65536);
}

static void mask_bytes(__u8 *a, int v6, int len)
{
	int i;

	for (i = len; i < (v6 ? 128 : 32); i++)
		a[i / 8] &= ~(0x80 >> (i % 8));
}

static void gen_rule(struct gen *g, struct step *st)
{
	static const int lens4[] = { 32, 32, 32, 31, 28, 25, 24, 24, 23, 16 };
	static const int lens6[] = { 128, 128, 120, 112, 96, 80, 64, 64, 63, 56, 48 };
	const struct pool_addr *p = gen_key_addr(g);
	__u64 k = below(&g->r, 100);
	struct xdp_rl_rule *r = &st->rule;

	memset(st, 0, sizeof(*st));
	st->kind = ST_RULE_ADD;
	st->v6 = p->v6;
	memcpy(st->a, p->a, 16);
	st->len = p->v6 ? lens6[below(&g->r, sizeof(lens6) / sizeof(lens6[0]))] :
			  lens4[below(&g->r, sizeof(lens4) / sizeof(lens4[0]))];
	/* Rules that pass or drop everything a /16 sends make dull scenarios: finer. */
	if (k < 30 && st->len < (st->v6 ? 64 : 24))
		st->len = st->v6 ? 64 : 24;
	mask_bytes(st->a, st->v6, st->len);
	if (k < 15) {
		r->action = XDP_RL_RULE_ALLOW;
	} else if (k < 30) {
		r->action = XDP_RL_RULE_DENY;
	} else if (k < 55) {
		r->action = XDP_RL_RULE_LIMIT;
		r->flags = XDP_RL_RULE_F_SHARED;
		r->nlayers = 1 + below(&g->r, XDP_RL_MAX_LAYERS);
		gen_layers(g, r->layer, &r->nlayers);
	} else {
		/* Per source: --ban now and then (never --shared: xdp-rl refuses it). */
		r->action = XDP_RL_RULE_LIMIT;
		r->nlayers = gen_nlayers(g, g->sc->lo.layers);
		gen_layers(g, r->layer, &r->nlayers);
		if (gen_bans_now(g, 50))
			r->ban_ns = gen_ban(g, r->layer[below(&g->r, r->nlayers)].window_ns);
	}
	gen_select(g, &r->select, 75);
}

/* A packet's transport: UDP, TCP (a SYN, a SYN+ACK or an ACK), ICMP; a later fragment at times. */
static void gen_l4(struct gen *g, struct step *st)
{
	__u64 k = below(&g->r, 100);
	static const __u8 flags[] = { 0x02, 0x02, 0x12, 0x10, 0x10 };

	memset(&st->l4, 0, sizeof(st->l4));
	if (k < 40) {
		st->l4.proto = IPPROTO_UDP;
	} else if (k < 85) {
		st->l4.proto = IPPROTO_TCP;
		st->l4.tcp_flags = flags[below(&g->r, sizeof(flags))];
	} else {
		st->l4.proto = st->v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP;
	}
	if (st->l4.proto != IPPROTO_ICMP && st->l4.proto != IPPROTO_ICMPV6)
		st->l4.dport = chance(&g->r, 75) ? port_list[below(&g->r, NPORTS)] :
						   below(&g->r, 65536);
	st->ext = st->v6 && chance(&g->r, 15) ? 1 + below(&g->r, 2) : 0;
	/*
	 * Most packets are read whole; some hide fields from the selectors,
	 * which must then count them (fail closed): a later fragment (its
	 * protocol alone), a TCP first fragment cut before its flags; or
	 * drop them where the limits need the transport: an IPv6 header
	 * chain longer than the parser walks (nothing known).
	 */
	k = below(&g->r, 100);
	if (k < 6)
		st->l4.known = MODEL_L4_PROTO;
	else if (k < 9 && st->l4.proto == IPPROTO_TCP)
		st->l4.known = MODEL_L4_PROTO | MODEL_L4_PORT;
	else if (k < 12 && st->v6)
		st->l4.known = 0;
	else
		st->l4.known = MODEL_L4_ALL;
}

/* A window length in force, as the generator knows them. */
static __u64 gen_some_window(struct gen *g)
{
	__u64 k = below(&g->r, g->cur.nlayers + g->nrules + 1);
	const struct step *r;

	if (k < g->cur.nlayers)
		return g->cur.layer[k].window_ns;
	k -= g->cur.nlayers;
	if (k < (__u64)g->nrules) {
		r = &g->rules[k];
		if (r->rule.nlayers)
			return r->rule.layer[below(&g->r, r->rule.nlayers)].window_ns;
	}
	if (g->cur.new_sources.limit)
		return g->cur.new_sources.window_ns;
	return g->cur.layer[0].window_ns;
}

static void gen_advance(struct gen *g, struct step *st)
{
	static const __s64 deltas[] = { -(__s64)XDP_RL_GRAIN, -1, 0, 0, 0, 1, XDP_RL_GRAIN };
	static const __u64 jumps[] = { 10 * SEC_NS, 61 * SEC_NS, 3600 * SEC_NS, 3601 * SEC_NS,
				       7200 * SEC_NS };
	__u64 k = below(&g->r, 100), w;

	memset(st, 0, sizeof(*st));
	st->kind = ST_ADVANCE;
	if (k < 5) {
		st->n = 0;
	} else if (k < 15) {
		st->n = chance(&g->r, 30) ? 1 : XDP_RL_GRAIN * (1 + below(&g->r, 3));
	} else if (k < 25) {
		st->n = 1 + below(&g->r, MS_NS);
	} else if (k < 60) {
		/* In a scenario with bans, a third of these go to the end of a ban instead. */
		st->kind = g->bans && chance(&g->r, 35) ? ST_ADVANCE_BAN : ST_ADVANCE_END;
		st->n = rnd(&g->r);
		st->delta = chance(&g->r, 80) ? deltas[below(&g->r, 7)] :
						-(__s64)below(&g->r, XDP_RL_GRAIN);
	} else if (k < 82) {
		w = gen_some_window(g);
		w = chance(&g->r, 60) ? w : chance(&g->r, 50) ? w / 2 : 2 * w;
		st->n = w + deltas[below(&g->r, 7)];
	} else if (k < 94) {
		st->n = below(&g->r, 3 * gen_some_window(g) + 1);
	} else {
		st->n = jumps[below(&g->r, sizeof(jumps) / sizeof(jumps[0]))];
	}
}

static void push(struct scenario *sc, int *cap, const struct step *st)
{
	if (sc->n == *cap) {
		*cap = *cap ? 2 * *cap : 256;
		sc->s = realloc(sc->s, *cap * sizeof(*sc->s));
		if (!sc->s)
			abort();
	}
	sc->s[sc->n++] = *st;
}

/*
 * A pool of @min .. @max addresses in a few /24s of 198.18.0.0/15 and /64s
 * of 2001:2::/48, @link_local percent of them link-local.
 */
static void gen_pool(struct gen *g, struct pool *pool, int min, int max, int link_local)
{
	int n24 = 1 + below(&g->r, 4), n64 = 1 + below(&g->r, 3), i, j, six = below(&g->r, 50);
	__u8 nets4[4][3], nets6[3][2];

	for (i = 0; i < n24; i++) {
		nets4[i][0] = 198;
		nets4[i][1] = 18 + below(&g->r, 2);
		nets4[i][2] = below(&g->r, 256);
	}
	for (i = 0; i < n64; i++) {
		nets6[i][0] = below(&g->r, 256);
		nets6[i][1] = chance(&g->r, 50) ? 0 : below(&g->r, 256);
	}
	pool->n = min + below(&g->r, max - min + 1);
	for (i = 0; i < pool->n; i++) {
		struct pool_addr *p = &pool->a[i];

		memset(p, 0, sizeof(*p));
		p->v6 = (int)below(&g->r, 100) < six;
		if (chance(&g->r, link_local)) {
			/* Link-local: 169.254.7.N, fe80::N or fe80::1:N (--link-local). */
			if (!p->v6) {
				p->a[0] = 169;
				p->a[1] = 254;
				p->a[2] = 7;
				p->a[3] = 1 + below(&g->r, 6);
			} else {
				p->a[0] = 0xfe;
				p->a[1] = 0x80;
				p->a[13] = below(&g->r, 2);
				p->a[15] = 1 + below(&g->r, 6);
			}
			continue;
		}
		if (!p->v6) {
			memcpy(p->a, nets4[below(&g->r, n24)], 3);
			p->a[3] = 1 + below(&g->r, 254);
			continue;
		}
		/* 2001:2:0:NNNN::/64, a small or a random interface id. */
		p->a[0] = 0x20;
		p->a[1] = 0x01;
		p->a[3] = 0x02;
		memcpy(&p->a[6], nets6[below(&g->r, n64)], 2);
		if (chance(&g->r, 60)) {
			p->a[15] = 1 + below(&g->r, 16);
		} else {
			for (j = 8; j < 16; j++)
				p->a[j] = below(&g->r, 256);
		}
	}
}

static void gen_scenario(__u64 seed, __u64 number, struct scenario *sc)
{
	static const __u32 sources[] = { 4, 4, 8, 8, 16, 32, 64 };
	static const __s64 tais[] = { 0, -37 * (__s64)SEC_NS, 5 * (__s64)SEC_NS };
	struct gen g = { .r = { xdp_rl_mix(seed ^ xdp_rl_mix(number + 1)) } };
	struct step st;
	int cap = 0, target, i, burst;
	__u64 k;

	memset(sc, 0, sizeof(*sc));
	g.sc = sc;
	sc->lo.admin = 1; /* reset, charge and fleet words: admin.h */
	sc->lo.bytes = chance(&g.r, 25);
	sc->lo.v4_prefix = chance(&g.r, 60) ? 32 : 24;
	sc->lo.v6_prefix = chance(&g.r, 60) ? 64 : 128;
	/* --key: half the scenarios keyed by the source, as before keys had kinds. */
	k = below(&g.r, 100);
	sc->lo.key = k < 50 ? XDP_RL_KEY_SRC :
		     k < 65 ? XDP_RL_KEY_DST :
		     k < 80 ? XDP_RL_KEY_SRC_DPORT :
			      XDP_RL_KEY_DST_DPORT;
	/* A port takes an IPv6 key's last 16 bits: --v6-prefix at most 112 (xdp-rl refuses more). */
	if (model_key_port(sc->lo.key) && sc->lo.v6_prefix > XDP_RL_KEY6_PORT_PREFIX)
		sc->lo.v6_prefix = chance(&g.r, 65) ? XDP_RL_KEY6_PORT_PREFIX : 96;
	sc->lo.layers = chance(&g.r, 35) ? 1 : 1 + below(&g.r, XDP_RL_MAX_LAYERS);
	/*
	 * Drops a full window counts in its count before the hot entries
	 * (bpf/hot.h): as loaded by xdp-rl (a scenario never reaches it with
	 * packets), none, or a few, so that both places fill.
	 */
	k = below(&g.r, 100);
	sc->lo.hot_after = k < 30 ? 0 : k < 50 ? HOT_AFTER_NONE : 1 + (int)below(&g.r, 6);
	sc->lo.sources = sources[below(&g.r, sizeof(sources) / sizeof(sources[0]))];
	sc->tai = tais[below(&g.r, 3)];
	k = below(&g.r, 100);
	g.bans = k < 30 ? 0 : k < 60 ? 1 : 2;
	k = below(&g.r, 100);
	g.rates = k < 30 ? 0 : k < 65 ? 1 : 2;
	/*
	 * Sources, and destinations: fewer of them (services), none
	 * link-local.
	 */
	gen_pool(&g, &g.src, 30, 60, 8);
	gen_pool(&g, &g.dst, 6, 40, 0);
	gen_settings(&g, &sc->init);
	g.cur = sc->init;

	for (i = below(&g.r, 4); i > 0; i--) {
		gen_rule(&g, &st);
		st.at_load = 1;
		push(sc, &cap, &st);
		g.rules[g.nrules++] = st;
	}
	target = 60 + below(&g.r, 450);
	while (sc->n < target) {
		k = below(&g.r, 1040);
		memset(&st, 0, sizeof(st));
		if (k < 700) {
			const struct pool_addr *p = gen_key_addr(&g);

			st.kind = ST_PKT;
			st.v6 = p->v6;
			memcpy(model_key_dst(sc->lo.key) ? st.d : st.a, p->a, 16);
			gen_other_addr(&g, p->v6, model_key_dst(sc->lo.key) ? st.a : st.d);
			st.vlans = chance(&g.r, 90) ? 0 : 1 + below(&g.r, 2);
			st.size = sc->lo.bytes || chance(&g.r, 10) ? 60 + below(&g.r, 197) : 0;
			gen_l4(&g, &st);
			for (burst = chance(&g.r, 30) ? 1 + below(&g.r, 8) : 1; burst > 0; burst--)
				push(sc, &cap, &st);
			continue;
		}
		if (k < 880) {
			gen_advance(&g, &st);
		} else if (k < 895) {
			st.kind = ST_SET;
			gen_set(&g, &g.cur);
			st.set = g.cur;
		} else if (k < 905) {
			gen_rule(&g, &st);
			if (g.nrules < MODEL_MAX_RULES / 2)
				g.rules[g.nrules++] = st;
		} else if (k < 912) {
			st.kind = ST_RULE_DEL;
			if (g.nrules && chance(&g.r, 85)) {
				i = below(&g.r, g.nrules);
				st.v6 = g.rules[i].v6;
				memcpy(st.a, g.rules[i].a, 16);
				st.len = g.rules[i].len;
				g.rules[i] = g.rules[--g.nrules];
			} else {
				gen_rule(&g, &st); /* a prefix that likely has no rule */
				st.kind = ST_RULE_DEL;
			}
		} else if (k < 995) {
			const struct pool_addr *p = gen_key_addr(&g);

			st.kind = k < 955 ? ST_RESET : ST_CHARGE;
			st.v6 = p->v6;
			memcpy(st.a, p->a, 16);
			st.with_port = model_key_port(sc->lo.key);
			st.port = st.with_port ? gen_key_port(&g) : 0;
			if (k >= 940 && k < 955) /* reset --count N */
				st.n = sc->lo.bytes ? 1 + below(&g.r, 1500) : 1 + below(&g.r, 8);
			else if (st.kind == ST_CHARGE)
				st.n = sc->lo.bytes ? 1 + below(&g.r, 600) : 1 + below(&g.r, 4);
			/*
			 * With bans, more of them take a window over its limit with
			 * no packet crossing it: the next window opened bans.
			 */
			if (st.n && g.bans && chance(&g.r, 30))
				st.n *= 3;
		} else if (k < 1000) {
			st.kind = ST_RESET_ALL;
		} else {
			const struct pool_addr *p = gen_key_addr(&g);

			st.kind = ST_REMOTE;
			st.v6 = p->v6;
			memcpy(st.a, p->a, 16);
			st.with_port = model_key_port(sc->lo.key);
			st.port = st.with_port ? gen_key_port(&g) : 0;
			st.len = below(&g.r, sc->lo.layers);
			st.n = sc->lo.bytes ? below(&g.r, 1500) : below(&g.r, 8);
			st.stale = chance(&g.r, 15);
		}
		push(sc, &cap, &st);
	}
}

/* ---- Words ---------------------------------------------------------------------- */

static const char *addr_str(int v6, const __u8 *a, char *buf)
{
	inet_ntop(v6 ? AF_INET6 : AF_INET, a, buf, INET6_ADDRSTRLEN);
	return buf;
}

/* A duration in the largest unit that divides it. */
static const char *dur_str(__u64 ns, char *buf, size_t len)
{
	if (ns && ns % SEC_NS == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ns / SEC_NS));
	else if (ns && ns % MS_NS == 0)
		snprintf(buf, len, "%llums", (unsigned long long)(ns / MS_NS));
	else if (ns && ns % 1000 == 0)
		snprintf(buf, len, "%lluus", (unsigned long long)(ns / 1000));
	else
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
	return buf;
}

/* A time on the test clock, from the load. */
static const char *time_str(__u64 t, char *buf, size_t len)
{
	if (!t)
		snprintf(buf, len, "none");
	else if (t >= T0_NS)
		snprintf(buf, len, "t+%llu.%09llus", (unsigned long long)((t - T0_NS) / SEC_NS),
			 (unsigned long long)((t - T0_NS) % SEC_NS));
	else
		snprintf(buf, len, "t-%llu.%09llus", (unsigned long long)((T0_NS - t) / SEC_NS),
			 (unsigned long long)((T0_NS - t) % SEC_NS));
	return buf;
}

static void layers_put(FILE *f, const struct xdp_rl_layer *lay, __u32 n)
{
	char w[32];
	__u32 i;

	for (i = 0; i < n && i < XDP_RL_MAX_LAYERS; i++)
		if (xdp_rl_is_rate(&lay[i]))
			fprintf(f, " --rate %llu/%s --burst %llu", (unsigned long long)lay[i].limit,
				dur_str(lay[i].window_ns, w, sizeof(w)),
				(unsigned long long)lay[i].burst);
		else
			fprintf(f, " --layer %llu/%s", (unsigned long long)lay[i].limit,
				dur_str(lay[i].window_ns, w, sizeof(w)));
}

static const char *const on_full_names[] = { "pass", "drop", "aggregate" };
static const char *const link_local_names[] = { "per-address", "prefix", "exempt" };

static const char *proto_name(__u8 proto)
{
	return proto == IPPROTO_TCP    ? "tcp" :
	       proto == IPPROTO_UDP    ? "udp" :
	       proto == IPPROTO_ICMP   ? "icmp" :
	       proto == IPPROTO_ICMPV6 ? "icmpv6" :
					 "?";
}

static void select_put(FILE *f, const struct xdp_rl_select *s)
{
	int i;

	if (s->proto)
		fprintf(f, " --proto %s", proto_name(s->proto));
	for (i = 0; i < s->nports && i < XDP_RL_MAX_PORT_RANGES; i++) {
		fprintf(f, i ? ",%u" : " --dport %u", s->port_lo[i]);
		if (s->port_hi[i] != s->port_lo[i])
			fprintf(f, "-%u", s->port_hi[i]);
	}
	if (s->syn)
		fprintf(f, " --syn");
}

static void settings_put(FILE *f, const struct settings *s)
{
	char w[32];

	layers_put(f, s->layer, s->nlayers);
	fprintf(f, "%s%s", s->flags & XDP_RL_F_ALIGNED ? " --aligned" : " --per-key",
		s->flags & XDP_RL_F_DRY_RUN ? " --dry-run" : "");
	if (s->new_sources.limit)
		fprintf(f, " --new-sources %llu/%s --on-table-full %s",
			(unsigned long long)s->new_sources.limit,
			dur_str(s->new_sources.window_ns, w, sizeof(w)),
			on_full_names[s->on_full % 3]);
	else
		fprintf(f, " --new-sources off");
	select_put(f, &s->select);
	fprintf(f, " --link-local %s", link_local_names[s->link_local % 3]);
	if (s->ban_ns)
		fprintf(f, " --ban %s", dur_str(s->ban_ns, w, sizeof(w)));
	fprintf(f, "%s", s->flags & XDP_RL_F_FLEET ? " (fleet mode)" : "");
}

static void rule_put(FILE *f, const struct step *st)
{
	char a[INET6_ADDRSTRLEN], w[32];

	fprintf(f, "%s/%d", addr_str(st->v6, st->a, a), st->len);
	if (st->kind == ST_RULE_DEL)
		return;
	if (st->rule.action == XDP_RL_RULE_ALLOW)
		fprintf(f, " --allow");
	else if (st->rule.action == XDP_RL_RULE_DENY)
		fprintf(f, " --deny");
	else
		layers_put(f, st->rule.layer, st->rule.nlayers);
	if (st->rule.flags & XDP_RL_RULE_F_SHARED)
		fprintf(f, " --shared");
	if (st->rule.ban_ns)
		fprintf(f, " --ban %s", dur_str(st->rule.ban_ns, w, sizeof(w)));
	select_put(f, &st->rule.select);
}

static void step_put(FILE *f, const struct step *st)
{
	char a[INET6_ADDRSTRLEN], w[32];

	switch (st->kind) {
	case ST_PKT:
		fprintf(f, "packet from %s", addr_str(st->v6, st->a, a));
		fprintf(f, " to %s", addr_str(st->v6, st->d, a));
		if (st->vlans)
			fprintf(f, ", %d VLAN tag%s", st->vlans, st->vlans > 1 ? "s" : "");
		fprintf(f, ", %s", proto_name(st->l4.proto));
		if (st->l4.proto == IPPROTO_TCP)
			fprintf(f, " flags 0x%02x", st->l4.tcp_flags);
		if (st->l4.proto == IPPROTO_TCP || st->l4.proto == IPPROTO_UDP)
			fprintf(f, " to port %u", st->l4.dport);
		if (st->l4.known == MODEL_L4_PROTO)
			fprintf(f, ", a later fragment");
		else if (st->l4.known == (MODEL_L4_PROTO | MODEL_L4_PORT))
			fprintf(f, ", a first fragment cut before the TCP flags");
		else if (!st->l4.known)
			fprintf(f, ", behind %d extension headers (more than the parser walks)",
				XDP_RL_MAX_EXT_HDRS + 1);
		else if (st->ext)
			fprintf(f, ", %d extension header%s", st->ext, st->ext > 1 ? "s" : "");
		if (st->size)
			fprintf(f, ", %u-byte frame", st->size);
		break;
	case ST_ADVANCE: fprintf(f, "advance %s", dur_str(st->n, w, sizeof(w))); break;
	case ST_ADVANCE_END:
		fprintf(f, "advance to the end of open window #%llu %+lldns",
			(unsigned long long)(st->n % 1000), (long long)st->delta);
		break;
	case ST_ADVANCE_BAN:
		fprintf(f, "advance to the end of ban #%llu %+lldns",
			(unsigned long long)(st->n % 1000), (long long)st->delta);
		break;
	case ST_SET:
		fprintf(f, "set");
		settings_put(f, &st->set);
		if (!st->set.ban_ns)
			fprintf(f, " --ban off");
		break;
	case ST_RULE_ADD:
		fprintf(f, "%s ", st->at_load ? "load --rules: rule" : "rule add");
		rule_put(f, st);
		break;
	case ST_RULE_DEL:
		fprintf(f, "rule del ");
		rule_put(f, st);
		break;
	case ST_RESET:
		fprintf(f, "reset %s", addr_str(st->v6, st->a, a));
		if (st->with_port)
			fprintf(f, " %u", st->port);
		if (st->n)
			fprintf(f, " --count %llu", (unsigned long long)st->n);
		break;
	case ST_CHARGE:
		fprintf(f, "charge %s", addr_str(st->v6, st->a, a));
		if (st->with_port)
			fprintf(f, " %u", st->port);
		fprintf(f, " %llu", (unsigned long long)st->n);
		break;
	case ST_RESET_ALL: fprintf(f, "reset --all"); break;
	case ST_REMOTE:
		fprintf(f, "fleet share of layer %d of %s", st->len, addr_str(st->v6, st->a, a));
		if (st->with_port)
			fprintf(f, " port %u", st->port);
		fprintf(f, "'s window: %llu%s", (unsigned long long)st->n,
			st->stale ? ", tagged with a past window" : "");
		break;
	}
}

static const char *const key_names[XDP_RL_KEY_KINDS] = { "src", "dst", "src,dport", "dst,dport" };

static void scenario_head(FILE *f, const struct scenario *sc)
{
	char w[32];

	fprintf(f, "load --key %s --v4-prefix %d --v6-prefix %d --max-sources %u --max-layers %d%s",
		key_names[sc->lo.key % XDP_RL_KEY_KINDS], sc->lo.v4_prefix, sc->lo.v6_prefix,
		sc->lo.sources, sc->lo.layers, sc->lo.bytes ? " --bytes" : "");
	/* Not an option of xdp-rl's: the program's cfg_hot_after, set by the test. */
	fprintf(f, " [hot after %u drops]", load_hot_after(&sc->lo));
	settings_put(f, &sc->init);
	fprintf(f, " (CLOCK_TAI to Unix: %s%s)", sc->tai < 0 ? "-" : "",
		dur_str(sc->tai < 0 ? -sc->tai : sc->tai, w, sizeof(w)));
}

/* ---- Running one: the program and the model, side by side -------------------- */

/* What the runs exercised (printed at the end). */
enum cover {
	C_ALLOW,
	C_DENY,
	C_SHARED,
	C_KEY,
	C_INSERT,
	C_EVICT,
	C_CAP_PASS,
	C_CAP_DROP,
	C_AGG,
	C_REFUSED,
	C_UNDONE,
	C_FULL,
	C_IN_COUNT,
	C_DRY,
	C_TURNOVER,
	C_UNSELECTED,
	C_REMOTE,
	C_FLEET_REFUSED,
	C_PASSED_OVER,
	C_UNREAD,
	C_BANNED,
	C_BAN_MADE,
	C_BAN_TURNOVER,
	C_BAN_ENDED,
	C_RATE,
	C_RATE_REFUSED,
	C_PORT_READ,
	C_PORT_UNREAD,
	C_LINK_LOCAL,
	C_DEEP,
	C_NCOVER,
};

static const char *const cover_names[C_NCOVER] = {
	"allowed",
	"denied",
	"shared budget",
	"own key",
	"inserts",
	"evictions",
	"cap: pass",
	"cap: drop",
	"aggregated",
	"refused by a layer",
	"of those, by a layer > 0 (charges taken back)",
	"refused on a read of a full window",
	"of those, counted in the window's count",
	"dry run",
	"windows opened",
	"unselected (selectors, link-local exempt)",
	"fleet shares written",
	"refused in fleet mode",
	"judged past a rule whose selector missed",
	"counted with a selected field unread (fail closed)",
	"banned",
	"bans made over the limit",
	"bans made opening a window",
	"bans run out",
	"judged by a rate",
	"refused by a rate",
	"keyed with the port read",
	"keyed with port 0 (none read)",
	"judged with a link-local key address",
	"dropped: a header chain past the walk, its transport needed",
};

static __u64 cover[C_NCOVER];
/* Scenarios run and packets judged, by --key (enum xdp_rl_key_kind). */
static __u64 kind_scenarios[XDP_RL_KEY_KINDS], kind_packets[XDP_RL_KEY_KINDS];

struct run {
	const struct scenario *sc;
	struct env e;
	struct mtable agg4, agg6;
	int loaded;
	struct model m;
	struct settings cur;
	__u32 lsid, next_lsid;
	__u32 ids;	  /* rule ids used so far: 0 .. ids - 1 */
	int bans;	  /* XDP_RL_F_BANS published: kept once set, as user/live.c does */
	__u64 max_ban_ns; /* the longest --ban published yet (struct xdp_rl_live's max_ban_ns) */
	int ncpu;
	FILE *log;    /* every step and its outcome (NULL: quiet) */
	__u64 *cover; /* what it exercised is added here (NULL: not counted) */
	/* The first mismatch: where, and what (a memstream). */
	int bad_step, bad_packet;
	char *why;
	size_t why_len;
	FILE *wf;
	/* Totals. */
	__u64 packets, ops;
	int step, npackets;
};

/* The program's name for the model's table @t. */
static __u32 model_xdp_table(int t)
{
	return t == MODEL_SRC4 ? XDP_RL_T_SRC4 :
	       t == MODEL_SRC6 ? XDP_RL_T_SRC6 :
	       t == MODEL_AGG4 ? XDP_RL_T_AGG4 :
				 XDP_RL_T_AGG6;
}

static struct mtable *run_table(struct run *r, int t)
{
	return t == MODEL_SRC4 ? &r->e.t4 :
	       t == MODEL_SRC6 ? &r->e.t6 :
	       t == MODEL_AGG4 ? &r->agg4 :
				 &r->agg6;
}

static const char *table_name(int t)
{
	static const char *const n[] = { "src4", "src6", "agg4", "agg6" };

	return n[t];
}

static void key_words(const struct run *r, int t, const __u8 *a, __u32 lsid, char *buf, size_t len)
{
	char s[INET6_ADDRSTRLEN], port[40] = "";
	int plen = t == MODEL_SRC4 ? r->sc->lo.v4_prefix :
		   t == MODEL_SRC6 ? r->sc->lo.v6_prefix :
		   t == MODEL_AGG4 ? XDP_RL_AGG4_PREFIX :
				     XDP_RL_AGG6_PREFIX;

	/* A port: an IPv4 key's second word; an IPv6 key's last 16 bits (model.h). */
	if (model_key_port(r->sc->lo.key))
		snprintf(port, sizeof(port),
			 model_table_v6(t) ? " (last 16 bits: port %u)" : " port %u",
			 model_table_v6(t) ? a[14] << 8 | a[15] : a[6] << 8 | a[7]);
	snprintf(buf, len, "%s/%d%s (limit set %u, %s)", addr_str(model_table_v6(t), a, s), plen,
		 port, lsid, table_name(t));
}

/* Open a mismatch report (the first one of a run is kept). */
static FILE *mismatch(struct run *r)
{
	if (r->wf)
		return r->wf;
	r->bad_step = r->step;
	r->bad_packet = r->npackets;
	r->wf = open_memstream(&r->why, &r->why_len);
	if (!r->wf)
		abort();
	return r->wf;
}

/* A table's window as the model sees it: no start unless the start is this window's (I5). */
static struct model_win table_win(const struct xdp_rl_state *s)
{
	struct model_win w = { 0, xdp_rl_count(s->count_gen) };

	if (xdp_rl_gen_of_start(s->start_gen) == xdp_rl_gen_of_count(s->count_gen))
		w.start = xdp_rl_start_ns(s->start_gen);
	return w;
}

/*
 * The end of the ban window @w holds at @now, 0 if none (model.c's
 * ban_holds): a table window's ban_until is only ever one that holds.
 */
static __u64 ban_in_force(const struct model_win *w, __u64 now)
{
	return w->ban_until > now && w->ban_until <= now + XDP_RL_BAN_MAX_NS + XDP_RL_GRAIN ?
		       w->ban_until :
		       0;
}

/* Ban word @word of window @s as the model sees it: its end while it holds at @now, else 0. */
static __u64 table_ban(__u64 word, const struct xdp_rl_state *s, __u64 now)
{
	return xdp_rl_ban_holds(word, s->count_gen, now) ? xdp_rl_start_ns(word) : 0;
}

/* Whether the two sides' windows differ: start, count, drops apart, fleet share, ban in force. */
static int win_differ(const struct model_win *mw, const struct model_win *tw, __u64 now)
{
	return mw->start != tw->start || mw->count != tw->count || mw->apart != tw->apart ||
	       mw->remote != tw->remote || ban_in_force(mw, now) != ban_in_force(tw, now);
}

static void win_words(FILE *f, const struct model_win *w, __u64 now)
{
	char t[48];

	fprintf(f, "start %s count %llu", time_str(w->start, t, sizeof(t)),
		(unsigned long long)w->count);
	if (w->apart)
		fprintf(f, " + %llu dropped apart", (unsigned long long)w->apart);
	if (w->remote)
		fprintf(f, ", fleet share %llu", (unsigned long long)w->remote);
	if (w->ban_until)
		fprintf(f, ", banned until %s%s", time_str(w->ban_until, t, sizeof(t)),
			ban_in_force(w, now) ? "" : " (over)");
	else if (w->ban_made)
		fprintf(f, ", its ban made");
}

/* The fleet's share of window @s in the `remote` word @k: while it names the window's generation. */
static __u64 remote_share(struct run *r, __u32 k, const struct xdp_rl_state *s)
{
	__u64 word;

	if (bpf_map_lookup_elem(bpf_map__fd(r->e.skel->maps.remote), &k, &word))
		return ~0ULL;
	return word >> XDP_RL_REMOTE_BITS == xdp_rl_gen_of_count(s->count_gen) ?
		       word & XDP_RL_REMOTE_MASK :
		       0;
}

/* The windows of both sides, layer by layer, marking the layers that differ. */
static void windows_put(FILE *f, const char *indent, const struct model_win *mw,
			const struct model_win *tw, __u32 n, const struct xdp_rl_layer *lay,
			__u32 nlay, __u64 now)
{
	char d[32];
	__u32 i;

	for (i = 0; i < n; i++) {
		int diff = !tw || win_differ(&mw[i], &tw[i], now);

		fprintf(f, "%s%s layer %u", indent, diff ? "*" : " ", i);
		if (lay && i < nlay && xdp_rl_is_rate(&lay[i]))
			fprintf(f, " (rate %llu/%s burst %llu, tau %lluns; %s)",
				(unsigned long long)lay[i].limit,
				dur_str(lay[i].window_ns, d, sizeof(d)),
				(unsigned long long)lay[i].burst, (unsigned long long)lay[i].tau_ns,
				model_rate_tat(&mw[i], now) > now ? "owes" : "owes nothing");
		else if (lay && i < nlay)
			fprintf(f, " (%llu/%s%s)", (unsigned long long)lay[i].limit,
				dur_str(lay[i].window_ns, d, sizeof(d)),
				model_over(&mw[i], now, lay[i].window_ns) ? ", over" : "");
		fprintf(f, ": model ");
		win_words(f, &mw[i], now);
		if (tw) {
			fprintf(f, " | table ");
			win_words(f, &tw[i], now);
		}
		fputc('\n', f);
	}
}

static void key_k(const __u8 *a, __u32 k[4])
{
	memcpy(k, a, 16);
}

/* Whether table @t keeps 16-byte keys (IPv6, or keys with a port): how its keys hash. */
static int key_wide(const struct run *r, int t)
{
	return model_key_len(&r->m, t) == 16;
}

/* The table's windows of a key into @w (room of them): 1, or 0 if it has no slot. */
static int table_windows(struct run *r, int t, const __u8 *a, __u32 lsid, struct model_win *w)
{
	const __u64 *base = (const __u64 *)r->e.skel->rodata->cfg_drops_base;
	struct mtable *mt = run_table(r, t);
	struct mt_entry en;
	__u32 k[4], i, bk;
	__u64 word;

	memset(w, 0, XDP_RL_MAX_LAYERS * sizeof(*w));
	key_k(a, k);
	if (mt_get(mt, k, lsid, &en) <= 0)
		return 0;
	/*
	 * All of @w (XDP_RL_MAX_LAYERS): the layers past the table's are empty.
	 * Drops past a full window are counted apart (bpf/hot.h), read as get
	 * reads them (user/sources.c; the caller takes a fresh view). A fresh
	 * window of an LRU element (generation 0) was never opened: empty.
	 */
	for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
		if (i >= mt->layers || (mt->lru && !xdp_rl_gen_of_count(en.w[i].count_gen)))
			continue;
		w[i] = table_win(&en.w[i]);
		w[i].apart = window_drops(&r->e.lim, model_xdp_table(t), en.id, i,
					  xdp_rl_gen_of_count(en.w[i].count_gen),
					  en.has_words ? &en.drops[i] : NULL);
		/*
		 * Its ban (--ban): the element's word, or the `bans` map's, laid
		 * out as `drops` (user/sources.c's source_read_ban); while it
		 * holds only (a stale word is no ban).
		 */
		word = 0;
		bk = xdp_rl_drops_index(base, model_xdp_table(t), en.id, i, mt->layers);
		if (en.has_words)
			word = en.bans[i];
		else if (bpf_map_lookup_elem(bpf_map__fd(r->e.skel->maps.bans), &bk, &word))
			word = ~0ULL; /* unreadable: never a ban the model holds */
		w[i].ban_until = table_ban(word, &en.w[i], r->m.now);
		if (!w[i].start)
			continue;
		if (en.has_words) {
			word = en.remote[i];
			w[i].remote = word >> XDP_RL_REMOTE_BITS ==
						      xdp_rl_gen_of_count(en.w[i].count_gen) ?
					      word & XDP_RL_REMOTE_MASK :
					      0;
			continue;
		}
		w[i].remote = remote_share(
			r,
			xdp_rl_drops_index((const __u64 *)r->e.skel->rodata->cfg_drops_base,
					   model_xdp_table(t), en.id, i, mt->layers),
			&en.w[i]);
	}
	return 1;
}

/* A --shared budget is never banned: its words in `bans` hold none. */
static int shared_windows(struct run *r, __u32 id, struct model_win *w)
{
	const __u64 *base = (const __u64 *)r->e.skel->rodata->cfg_drops_base;
	struct xdp_rl_layers l;
	__u64 word;
	__u32 bk;
	int i;

	if (bpf_map_lookup_elem(bpf_map__fd(r->e.skel->maps.shared), &id, &l))
		return 0;
	for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
		w[i] = table_win(&l.layer[i]);
		w[i].apart = window_drops(&r->e.lim, XDP_RL_T_SHARED, id, i,
					  xdp_rl_gen_of_count(l.layer[i].count_gen), NULL);
		bk = xdp_rl_drops_index(base, XDP_RL_T_SHARED, id, i, XDP_RL_MAX_LAYERS);
		if (!bpf_map_lookup_elem(bpf_map__fd(r->e.skel->maps.bans), &bk, &word))
			w[i].ban_until = table_ban(word, &l.layer[i], r->m.now);
		if (w[i].start)
			w[i].remote = remote_share(
				r,
				xdp_rl_drops_index((const __u64 *)r->e.skel->rodata->cfg_drops_base,
						   XDP_RL_T_SHARED, id, i, XDP_RL_MAX_LAYERS),
				&l.layer[i]);
	}
	return 1;
}

/* What was charged, on both sides: for a mismatch's report. */
static void where_put(struct run *r, FILE *f, const struct model_where *at)
{
	struct model_win tw[XDP_RL_MAX_LAYERS];
	const struct xdp_rl_layer *lay = NULL;
	struct model_key *k;
	char kw[160];
	__u32 n;

	char seen[200];

	fflush(f);
	if (at->kind == MW_KEY) {
		key_words(r, at->table, at->a, at->lsid, kw, sizeof(kw));
		snprintf(seen, sizeof(seen), "windows of %s differ", kw);
		if (r->why && strstr(r->why, seen))
			return;
		n = model_limit_set(&r->m, at->lsid, &lay);
		k = model_find(&r->m, at->table, at->a, at->lsid);
		fprintf(f, "  windows of %s:\n", kw);
		if (!k) {
			fprintf(f, "    (not in the model's table)\n");
			return;
		}
		windows_put(f, "    ", k->w,
			    table_windows(r, at->table, at->a, at->lsid, tw) ? tw : NULL,
			    r->sc->lo.layers, lay, n, r->m.now);
		if (!table_windows(r, at->table, at->a, at->lsid, tw))
			fprintf(f, "    (no slot in the table)\n");
	} else if (at->kind == MW_SHARED) {
		int i;

		snprintf(seen, sizeof(seen), "the shared budget of rule id %u differs", at->id);
		if (r->why && strstr(r->why, seen))
			return;
		for (i = 0; i < r->m.nrules && r->m.rules[i].r.id != at->id; i++)
			;
		fprintf(f, "  shared budget of rule id %u:\n", at->id);
		windows_put(f, "    ", r->m.shared[at->id],
			    shared_windows(r, at->id, tw) ? tw : NULL, XDP_RL_MAX_LAYERS,
			    i < r->m.nrules ? r->m.rules[i].r.layer : NULL,
			    i < r->m.nrules ? r->m.rules[i].r.nlayers : 0, r->m.now);
	}
}

/* How many keys a table holds. */
static int count_key(const struct mt_entry *e, void *ctx)
{
	(void)e;
	++*(__u64 *)ctx;
	return 0;
}

/*
 * Empty slots in the two buckets of a key about to be inserted (before the
 * step); for an LRU table, its elements not in use.
 */
static int free_slots(struct run *r, const struct model_where *ins)
{
	struct mtable *mt;
	__u32 k[4], b[2], i, j;
	__u64 h, held = 0;
	int n = 0;

	if (ins->kind != MW_KEY)
		return -1;
	mt = run_table(r, ins->table);
	if (mt->lru) {
		mt_foreach(mt, count_key, &held);
		return (int)(mt_capacity(mt) - held);
	}
	key_k(ins->a, k);
	h = xdp_rl_hash(k, key_wide(r, ins->table), ins->lsid, TEST_SEED);
	xdp_rl_bucket_pair(h, mt->nbuckets, &b[0], &b[1]);
	for (i = 0; i < 2; i++)
		for (j = 0; j < XDP_RL_BUCKET_SLOTS; j++)
			n += !mt_slot(mt, (__u64)b[i] * XDP_RL_BUCKET_SLOTS + j)->tag;
	return n;
}

/* Whether the bucket pairs of two keys of table @t meet. */
static int pairs_meet(struct run *r, int t, const struct model_key *x, const struct model_where *y)
{
	struct mtable *mt = run_table(r, t);
	__u32 k[4], a[2], b[2];

	key_k(x->a, k);
	xdp_rl_bucket_pair(xdp_rl_hash(k, key_wide(r, t), x->lsid, TEST_SEED), mt->nbuckets, &a[0],
			   &a[1]);
	key_k(y->a, k);
	xdp_rl_bucket_pair(xdp_rl_hash(k, key_wide(r, t), y->lsid, TEST_SEED), mt->nbuckets, &b[0],
			   &b[1]);
	return a[0] == b[0] || a[0] == b[1] || a[1] == b[0] || a[1] == b[1];
}

/* The keys a table holds that the model does not, reported; check_state's walk. */
struct unknown_walk {
	struct run *r;
	int t, bad;
};

static int unknown_key(const struct mt_entry *e, void *ctx)
{
	struct unknown_walk *w = ctx;
	__u8 a[16] = {};
	char kw[160];

	memcpy(a, e->k, model_key_len(&w->r->m, w->t));
	if (model_find(&w->r->m, w->t, a, e->lsid))
		return 0;
	key_words(w->r, w->t, a, e->lsid, kw, sizeof(kw));
	fprintf(mismatch(w->r), "the table holds %s, which the model does not\n", kw);
	w->bad = 1;
	return 0;
}

/*
 * After a step: the keys of each table (a key the model holds and the table
 * no longer does was evicted: by the step's insert only; in the bucket
 * table one at most, from the inserted key's buckets, which had no empty
 * slot; in an LRU table any number, the kernel's choice, when it was full),
 * every window, the --new-sources window, the shared budgets, the counters
 * and the rules' hit counters. Returns 0, or 1 after reporting a mismatch.
 */
static int check_state(struct run *r, const struct model_where *ins, int pre_free)
{
	static const int stats_checked[] = {
		XDP_RL_STAT_PASSED,
		XDP_RL_STAT_DROPPED,
		XDP_RL_STAT_WOULD_DROP,
		XDP_RL_STAT_NOT_IP,
		XDP_RL_STAT_MALFORMED,
		XDP_RL_STAT_NEW_WINDOWS,
		XDP_RL_STAT_TABLE_ERRORS,
		XDP_RL_STAT_PASSED_BYTES,
		XDP_RL_STAT_DROPPED_BYTES,
		XDP_RL_STAT_INSERTS,
		XDP_RL_STAT_REFUSED_INSERTS,
		XDP_RL_STAT_AGGREGATED,
		XDP_RL_STAT_ALLOWED,
		XDP_RL_STAT_DENIED,
		XDP_RL_STAT_UNSELECTED,
		XDP_RL_STAT_OVER_LIMIT,
		XDP_RL_STAT_BANS,
		XDP_RL_STAT_DROPS_BANNED,
		XDP_RL_STAT_DROPS_MALFORMED,
	};
	static const char *const stat_names[] = {
#define STAT_NAME(id, name, help, metric) #name,
		XDP_RL_STATS(STAT_NAME)
#undef STAT_NAME
	};
	struct model_win tw[XDP_RL_MAX_LAYERS];
	struct xdp_rl_rule_hits per[r->ncpu], sum;
	struct mt_entry en;
	struct xdp_rl_state ns;
	struct xdp_rl_stats st;
	struct model_key gone;
	struct model_win nw;
	const struct xdp_rl_layer *lay;
	char kw[160], kw2[160];
	int t, i, evicted, bad = 0, c;
	__u32 k[4], n, room = r->sc->lo.layers, zero = 0, id;

	drops_forget(); /* the drops counted apart, as they are after this step */
	for (t = 0; t < MODEL_TABLES; t++) {
		struct mtable *mt = run_table(r, t);
		struct model_keys *ks = &r->m.t[t];

		evicted = 0;
		for (i = ks->n - 1; i >= 0; i--) {
			key_k(ks->k[i].a, k);
			if (mt_get(mt, k, ks->k[i].lsid, &en))
				continue;
			gone = ks->k[i];
			model_forget(&r->m, t, i);
			key_words(r, t, gone.a, gone.lsid, kw, sizeof(kw));
			if (ins->kind == MW_KEY && ins->table == t && gone.lsid == ins->lsid &&
			    !memcmp(gone.a, ins->a, 16)) {
				fprintf(mismatch(r),
					"the model gave %s a slot; the table has "
					"no such key\n",
					kw);
				bad = 1;
				continue;
			}
			if (ins->kind != MW_KEY || ins->table != t) {
				fprintf(mismatch(r),
					"%s left the table, but nothing was "
					"inserted into it\n",
					kw);
				bad = 1;
			} else if (mt->lru) {
				if (pre_free > 0) {
					key_words(r, t, ins->a, ins->lsid, kw2, sizeof(kw2));
					fprintf(mismatch(r),
						"%s was evicted by %s, into a table with %d "
						"element(s) free\n",
						kw, kw2, pre_free);
					bad = 1;
				} else if (r->cover && !evicted++) {
					r->cover[C_EVICT]++;
				}
			} else if (++evicted > 1) {
				fprintf(mismatch(r),
					"%s left the table: a second key gone "
					"for one insert\n",
					kw);
				bad = 1;
			} else if (!pairs_meet(r, t, &gone, ins)) {
				key_words(r, t, ins->a, ins->lsid, kw2, sizeof(kw2));
				fprintf(mismatch(r),
					"%s was evicted by %s, whose buckets "
					"are not its own\n",
					kw, kw2);
				bad = 1;
			} else if (pre_free > 0) {
				key_words(r, t, ins->a, ins->lsid, kw2, sizeof(kw2));
				fprintf(mismatch(r),
					"%s was evicted by %s, whose buckets "
					"had %d empty slot(s)\n",
					kw, kw2, pre_free);
				bad = 1;
			} else if (r->cover) {
				r->cover[C_EVICT]++;
			}
		}
		{
			struct unknown_walk uw = { r, t, 0 };

			mt_foreach(mt, unknown_key, &uw);
			bad |= uw.bad;
		}
		for (i = 0; i < ks->n; i++) {
			struct model_key *mk = &ks->k[i];
			__u32 j;

			if (!table_windows(r, t, mk->a, mk->lsid, tw))
				continue;
			for (j = 0; j < room; j++)
				if (win_differ(&mk->w[j], &tw[j], r->m.now))
					break;
			if (j == room)
				continue;
			key_words(r, t, mk->a, mk->lsid, kw, sizeof(kw));
			n = model_limit_set(&r->m, mk->lsid, &lay);
			fprintf(mismatch(r), "windows of %s differ:\n", kw);
			windows_put(mismatch(r), "    ", mk->w, tw, room, lay, n, r->m.now);
			bad = 1;
		}
	}
	for (id = 0; id < r->ids; id++) {
		if (!shared_windows(r, id, tw))
			continue;
		for (i = 0; i < XDP_RL_MAX_LAYERS; i++)
			if (win_differ(&r->m.shared[id][i], &tw[i], r->m.now))
				break;
		if (i == XDP_RL_MAX_LAYERS)
			continue;
		fprintf(mismatch(r), "the shared budget of rule id %u differs:\n", id);
		windows_put(mismatch(r), "    ", r->m.shared[id], tw, XDP_RL_MAX_LAYERS, NULL, 0,
			    r->m.now);
		bad = 1;
	}
	if (!bpf_map_lookup_elem(bpf_map__fd(r->e.skel->maps.newsrc), &zero, &ns)) {
		nw = table_win(&ns);
		if (nw.start != r->m.newsrc.start || nw.count != r->m.newsrc.count) {
			fprintf(mismatch(r), "the --new-sources window differs:\n");
			windows_put(mismatch(r), "    ", &r->m.newsrc, &nw, 1, NULL, 0, r->m.now);
			bad = 1;
		}
	}
	stats(&r->e, &st);
	for (i = 0; i < (int)(sizeof(stats_checked) / sizeof(stats_checked[0])); i++) {
		c = stats_checked[i];
		if (st.c[c] == r->m.st.c[c])
			continue;
		fprintf(mismatch(r), "counter %s: model %llu, program %llu\n", stat_names[c],
			(unsigned long long)r->m.st.c[c], (unsigned long long)st.c[c]);
		bad = 1;
	}
	for (id = 0; id < r->ids; id++) {
		memset(&sum, 0, sizeof(sum));
		if (bpf_map_lookup_elem(bpf_map__fd(r->e.skel->maps.rule_hits), &id, per))
			continue;
		for (c = 0; c < r->ncpu; c++) {
			sum.packets += per[c].packets;
			sum.dropped += per[c].dropped;
			sum.would_drop += per[c].would_drop;
		}
		if (!memcmp(&sum, &r->m.hits[id], sizeof(sum)))
			continue;
		fprintf(mismatch(r),
			"rule id %u's counters: model hits %llu dropped %llu would_drop %llu, "
			"program %llu %llu %llu\n",
			id, (unsigned long long)r->m.hits[id].packets,
			(unsigned long long)r->m.hits[id].dropped,
			(unsigned long long)r->m.hits[id].would_drop,
			(unsigned long long)sum.packets, (unsigned long long)sum.dropped,
			(unsigned long long)sum.would_drop);
		bad = 1;
	}
	return bad;
}

/* The live settings for the model's rules and @r->cur, published as xdp-rl does. */
static void publish(struct run *r)
{
	struct xdp_rl_live live = {};
	int i, any = 0;

	memcpy(live.layer, r->cur.layer, sizeof(live.layer));
	live.nlayers = r->cur.nlayers;
	live.flags = r->cur.flags;
	live.new_sources = r->cur.new_sources;
	live.on_full = r->cur.on_full;
	live.lsid = r->lsid;
	live.tai_to_unix_ns = r->sc->tai;
	live.select = r->cur.select;
	live.link_local = r->cur.link_local;
	live.ban_ns = r->cur.ban_ns;
	/* As user/live.c's live_finish: a selector anywhere, the limits' or a rule's. */
	for (i = 0; i < r->m.nrules; i++)
		any |= !xdp_rl_select_all(&r->m.rules[i].r.select);
	if (any || !xdp_rl_select_all(&live.select))
		live.flags |= XDP_RL_F_SELECT;
	/*
	 * ... and a --ban anywhere sets XDP_RL_F_BANS, which stays set from
	 * then (live.h), as the longest ban yet stays in max_ban_ns.
	 */
	for (i = 0; i < r->m.nrules; i++) {
		r->bans |= r->m.rules[i].r.ban_ns != 0;
		if (r->m.rules[i].r.ban_ns > r->max_ban_ns)
			r->max_ban_ns = r->m.rules[i].r.ban_ns;
	}
	r->bans |= live.ban_ns != 0;
	if (live.ban_ns > r->max_ban_ns)
		r->max_ban_ns = live.ban_ns;
	if (r->bans)
		live.flags |= XDP_RL_F_BANS;
	/* xdp-rl refuses --aligned while a rate is in force, the limits' or a rule's. */
	any = !!rate_bits(live.layer, live.nlayers);
	for (i = 0; i < r->m.nrules; i++)
		any |= !!rate_bits(r->m.rules[i].r.layer, r->m.rules[i].r.nlayers);
	if (any)
		live.flags &= ~XDP_RL_F_ALIGNED;
	live.max_ban_ns = r->max_ban_ns;
	model_rule_counts(&r->m, &live.nrules4, &live.nrules6);
	live.max_window_ns = model_rules_max_window(&r->m); /* env_live adds the layers' */
	env_live(&r->e, &live);
	model_set_live(&r->m, limiter_live(&r->e.lim));
}

static int run_load(struct run *r, int quiet)
{
	const struct load_opts *lo = &r->sc->lo;
	struct xdp_rl_fixed *fx;

	if (quiet ? env_load(&r->e, lo) : env_open(&r->e, lo, "model: load"))
		return -1;
	r->loaded = 1;
	if (mt_map(&r->agg4, bpf_map__fd(r->e.skel->maps.agg4), XDP_RL_T_AGG4, lo->layers,
		   TEST_SEED, lo->key) ||
	    mt_map(&r->agg6, bpf_map__fd(r->e.skel->maps.agg6), XDP_RL_T_AGG6, lo->layers,
		   TEST_SEED, lo->key)) {
		UNIT_FAIL("model: map the aggregate tables: %s", strerror(errno));
		return -1;
	}
	/* What xdp-rl's limiter has beside what the harness gives it (target_of, forget_all). */
	r->e.lim.fd[PIN_RULES4] = bpf_map__fd(r->e.skel->maps.rules4);
	r->e.lim.fd[PIN_RULES6] = bpf_map__fd(r->e.skel->maps.rules6);
	r->e.lim.fd[PIN_RULE_HITS] = bpf_map__fd(r->e.skel->maps.rule_hits);
	r->e.lim.fd[PIN_SHARED] = bpf_map__fd(r->e.skel->maps.shared);
	r->e.lim.fd[PIN_NEWSRC] = bpf_map__fd(r->e.skel->maps.newsrc);
	r->e.lim.fd[PIN_STATS] = bpf_map__fd(r->e.skel->maps.stats);
	fx = &r->e.lim.cfg.fixed;
	fx->max_sources = lo->sources;
	fx->bytes = lo->bytes;
	fx->v4_prefix = lo->v4_prefix;
	fx->v6_prefix = lo->v6_prefix;
	fx->max_layers = lo->layers;
	fx->seed = TEST_SEED;
	fx->table = r->e.table;
	fx->key = lo->key;
	return 0;
}

static void run_free(struct run *r)
{
	drops_forget();
	if (r->loaded) {
		mt_unmap(&r->agg4);
		mt_unmap(&r->agg6);
		env_free(&r->e);
	}
	r->loaded = 0;
	model_free(&r->m);
	if (r->wf)
		fclose(r->wf);
	r->wf = NULL;
	free(r->why);
	r->why = NULL;
}

static void run_advance(struct run *r, __u64 ns)
{
	__u64 from = r->m.now;
	int t, i;
	__u32 l;

	r->e.skel->bss->fake_now_ns += ns;
	r->m.now += ns;
	/* The bans that ran out on the way (the keys pass again). */
	for (t = 0; r->cover && t < MODEL_TABLES; t++)
		for (i = 0; i < r->m.t[t].n; i++)
			for (l = 0; l < r->m.f.room; l++)
				r->cover[C_BAN_ENDED] +=
					ban_in_force(&r->m.t[t].k[i].w[l], from) &&
					!ban_in_force(&r->m.t[t].k[i].w[l], r->m.now);
}

/* ST_ADVANCE_BAN: how far to the end of the chosen ban in force, plus delta; and which. */
static __u64 advance_ban(struct run *r, const struct step *st, char *what, size_t len)
{
	const struct model *m = &r->m;
	const struct model_key *k = NULL;
	int t, i, nc = 0, j, kt = 0, kl = 0;
	__u64 until;
	__u32 l;
	__s64 to;
	char kw[160], d[32];

	/* The n-th of them, modulo how many there are. */
	for (t = 0; t < MODEL_TABLES; t++)
		for (i = 0; i < m->t[t].n; i++)
			for (l = 0; l < m->f.room; l++)
				nc += ban_in_force(&m->t[t].k[i].w[l], m->now) != 0;
	if (!nc) {
		snprintf(what, len, "no ban in force: 0ns");
		return 0;
	}
	j = st->n % nc;
	for (t = 0; t < MODEL_TABLES && !k; t++)
		for (i = 0; i < m->t[t].n && !k; i++)
			for (l = 0; l < m->f.room && !k; l++)
				if (ban_in_force(&m->t[t].k[i].w[l], m->now) && !j--) {
					k = &m->t[t].k[i];
					kt = t;
					kl = l;
				}
	if (!k)
		return 0;
	until = k->w[kl].ban_until;
	to = (__s64)until + st->delta - (__s64)m->now;
	key_words(r, kt, k->a, k->lsid, kw, sizeof(kw));
	snprintf(what, len, "advance, to %+lldns from the end of the ban of %s layer %d: %s",
		 (long long)st->delta, kw, kl, dur_str(to > 0 ? to : 0, d, sizeof(d)));
	return to > 0 ? to : 0;
}

/*
 * Where window @w of layer @l ends, if it is open at @now (0: over): a
 * rate's "window" is its debt, which ends at its TAT; @alt: the time its
 * next unit passes instead (TAT + a unit's cost - tau), if that is ahead.
 */
static __u64 open_end(const struct model_win *w, const struct xdp_rl_layer *l, __u64 now, int alt,
		      int bytes)
{
	__u64 tat, next;

	if (!xdp_rl_is_rate(l))
		return model_over(w, now, l->window_ns) ? 0 : w->start + l->window_ns;
	tat = model_rate_tat(w, now);
	if (tat <= now)
		return 0;
	next = tat + xdp_rl_rate_cost(l->per_fp, 1) - xdp_rl_rate_tau(l, bytes);
	return alt && next > now && next < tat ? next : tat;
}

/* ST_ADVANCE_END: how far to the end of the chosen open window (a rate's debt), plus delta; and which. */
static __u64 advance_end(struct run *r, const struct step *st, char *what, size_t len)
{
	struct cand {
		__u64 end;
		int t, layer;
		const struct model_key *k;
		__u32 id;
	} c[512];
	const struct xdp_rl_layer *lay;
	struct model *m = &r->m;
	int t, i, nc = 0, j, alt = (st->n >> 32) & 1;
	__u32 n, l;
	__u64 end;
	__s64 to;
	char kw[160], d[32];

	for (t = 0; t < MODEL_TABLES; t++) {
		for (i = 0; i < m->t[t].n; i++) {
			n = model_limit_set(m, m->t[t].k[i].lsid, &lay);
			for (l = 0; l < n && l < (__u32)r->sc->lo.layers && nc < 512; l++) {
				end = open_end(&m->t[t].k[i].w[l], &lay[l], m->now, alt,
					       m->f.bytes);
				if (end)
					c[nc++] = (struct cand){ end, t, l, &m->t[t].k[i], 0 };
			}
		}
	}
	for (i = 0; i < m->nrules; i++) {
		if (!(m->rules[i].r.flags & XDP_RL_RULE_F_SHARED))
			continue;
		for (l = 0; l < m->rules[i].r.nlayers && nc < 512; l++) {
			end = open_end(&m->shared[m->rules[i].r.id][l], &m->rules[i].r.layer[l],
				       m->now, alt, m->f.bytes);
			if (end)
				c[nc++] = (struct cand){ end, -1, l, NULL, m->rules[i].r.id };
		}
	}
	if (m->live.new_sources.limit &&
	    !model_over(&m->newsrc, m->now, m->live.new_sources.window_ns) && nc < 512)
		c[nc++] = (struct cand){ m->newsrc.start + m->live.new_sources.window_ns, -2, 0,
					 NULL, 0 };
	if (!nc) {
		snprintf(what, len, "no window is open: 0ns");
		return 0;
	}
	j = st->n % nc;
	to = (__s64)c[j].end + st->delta - (__s64)m->now;
	if (c[j].t >= 0)
		key_words(r, c[j].t, c[j].k->a, c[j].k->lsid, kw, sizeof(kw));
	else if (c[j].t == -1)
		snprintf(kw, sizeof(kw), "the shared budget of rule id %u", c[j].id);
	else
		snprintf(kw, sizeof(kw), "the --new-sources window");
	snprintf(what, len, "%s, to %+lldns from the end of %s layer %d: %s", "advance",
		 (long long)st->delta, kw, c[j].layer, dur_str(to > 0 ? to : 0, d, sizeof(d)));
	return to > 0 ? to : 0;
}

static const char *xdp_word(int v)
{
	return v == XDP_PASS ? "PASS" : v == XDP_DROP ? "DROP" : "?";
}

/*
 * The packet's destination into @p: build() writes 198.18.0.2 or 2001:2::2
 * into the IP header after the Ethernet header and its VLAN tags (no IPv4
 * checksum is made, nor looked at).
 */
static void put_dst(struct pkt *p, const struct step *st)
{
	memcpy(p->b + 14 + 4 * st->vlans + (st->v6 ? 24 : 16), st->d, st->v6 ? 16 : 4);
}

static void ip_of(const struct step *st, struct ip_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = st->v6 ? AF_INET6 : AF_INET;
	memcpy(a->bytes, st->a, st->v6 ? 16 : 4);
}

/* `reset ADDRESS [--count N]` as user/cmd/reset.c's reset_address does it. */
static int real_reset(struct run *r, const struct step *st)
{
	struct ip_addr a;
	struct target t;
	int res;

	ip_of(st, &a);
	target_of(&r->e.lim, &a, st->port, &t);
	if (t.kind == TARGET_ALLOW || t.kind == TARGET_DENY || t.kind == TARGET_EXEMPT)
		return 0;
	if (t.kind == TARGET_SHARED)
		return admin_reset_shared(&r->e.lim, t.rule.id, 0, t.set.n, st->n, t.set.lay) < 0 ?
			       -1 :
			       3;
	res = admin_reset(&r->e.lim, t.id, t.k, t.set.lsid, 0, t.set.n, st->n, t.set.lay);
	if (res < 0)
		return -1;
	if (st->n || res > 0)
		return res > 0;
	target_aggregate(&r->e.lim, &a, st->port, &t);
	res = admin_reset(&r->e.lim, t.id, t.k, t.set.lsid, 0, t.set.n, 0, t.set.lay);
	return res < 0 ? -1 : res > 0 ? 2 : 0;
}

/* `charge ADDRESS N` as user/cmd/reset.c's cmd_charge does it. */
static int real_charge(struct run *r, const struct step *st)
{
	struct ip_addr a;
	struct target t;
	int res;

	ip_of(st, &a);
	target_of(&r->e.lim, &a, st->port, &t);
	if (t.kind == TARGET_ALLOW || t.kind == TARGET_DENY || t.kind == TARGET_EXEMPT)
		return 0;
	if (t.kind == TARGET_SHARED)
		return admin_charge_shared(&r->e.lim, t.rule.id, 0, t.set.n, st->n, t.set.lay) <=
				       0 ?
			       -1 :
			       3;
	res = admin_charge(&r->e.lim, t.id, t.k, t.set.lsid, 0, t.set.n, st->n, t.set.lay);
	return res <= 0 ? -1 : 1;
}

/*
 * The fleet agent's write of a share (user/fleet.c): into the `remote` word
 * of the window that limits the address (its key's slot, else its
 * aggregate's; a --shared rule's by id), tagged with the generation of the
 * window there now (or a past one), if that window was ever started.
 * Returns as model_remote_address.
 */
static int real_remote(struct run *r, const struct step *st)
{
	const __u64 *base = (const __u64 *)r->e.skel->rodata->cfg_drops_base;
	struct xdp_rl_state w[XDP_RL_MAX_LAYERS];
	struct xdp_rl_layers sh;
	struct mtable *mt = NULL;
	struct mt_entry en;
	struct ip_addr a;
	struct target t;
	__u64 gen, word;
	__u32 k, room = r->sc->lo.layers, index;
	int what = 1, found;

	ip_of(st, &a);
	target_of(&r->e.lim, &a, st->port, &t);
	if (t.kind == TARGET_ALLOW || t.kind == TARGET_DENY || t.kind == TARGET_EXEMPT ||
	    (__u32)st->len >= t.set.n)
		return 0;
	if (t.kind == TARGET_SHARED) {
		if (bpf_map_lookup_elem(bpf_map__fd(r->e.skel->maps.shared), &t.rule.id, &sh))
			return -1;
		w[st->len] = sh.layer[st->len];
		index = t.rule.id;
		room = XDP_RL_MAX_LAYERS;
		what = 3;
	} else {
		if ((__u32)st->len >= room)
			return 0;
		mt = t.id == PIN_SRC4 ? &r->e.t4 : &r->e.t6;
		found = mt_get(mt, t.k, t.set.lsid, &en);
		if (!found) {
			target_aggregate(&r->e.lim, &a, st->port, &t);
			mt = t.id == PIN_AGG4 ? &r->agg4 : &r->agg6;
			found = mt_get(mt, t.k, t.set.lsid, &en);
			what = 2;
		}
		if (found <= 0)
			return found;
		memcpy(w, en.w, sizeof(w));
		index = en.id;
	}
	if (!table_win(&w[st->len]).start ||
	    (mt && mt->lru && !xdp_rl_gen_of_count(w[st->len].count_gen)))
		return 0;
	gen = xdp_rl_gen_of_count(w[st->len].count_gen);
	if (st->stale)
		gen = (gen - 1) & 0xffff;
	word = (gen & 0xffff) << XDP_RL_REMOTE_BITS | st->n;
	/* An LRU element's word is its own, written through the program (admin_remote). */
	if (mt && mt->lru)
		return admin_remote(&r->e.lim, t.id, t.k, t.set.lsid, st->len, word) == 1 ? what :
											    -1;
	k = xdp_rl_drops_index(base,
			       what == 3 ? XDP_RL_T_SHARED :
			       what == 2 ? (st->v6 ? XDP_RL_T_AGG6 : XDP_RL_T_AGG4) :
					   (st->v6 ? XDP_RL_T_SRC6 : XDP_RL_T_SRC4),
			       index, st->len, room);
	if (bpf_map_update_elem(bpf_map__fd(r->e.skel->maps.remote), &k, &word, 0))
		return -1;
	return what;
}

/* `rule add`, as user/rules.c does it: the id's counters zeroed, its budget closed. */
static int real_rule_add(struct run *r, const struct step *st, const struct xdp_rl_rule *rule)
{
	struct xdp_rl_rule_hits zero_hits[r->ncpu];
	struct xdp_rl_rule_key4 k4 = { .prefixlen = st->len };
	struct xdp_rl_rule_key6 k6 = { .prefixlen = st->len };
	struct xdp_rl_rule with_len = *rule;
	__u32 id = rule->id;

	with_len.prefixlen = st->len; /* as user/rules.c's rule_insert writes it */
	rule = &with_len;
	memset(zero_hits, 0, sizeof(zero_hits));
	memcpy(&k4.addr, st->a, 4);
	memcpy(k6.addr, st->a, 16);
	if (bpf_map_update_elem(bpf_map__fd(r->e.skel->maps.rule_hits), &id, zero_hits, 0) ||
	    admin_reset_shared(&r->e.lim, id, 0, XDP_RL_MAX_LAYERS, 0, NULL) < 0)
		return -1;
	return st->v6 ? bpf_map_update_elem(bpf_map__fd(r->e.skel->maps.rules6), &k6, rule,
					    BPF_NOEXIST) :
			bpf_map_update_elem(bpf_map__fd(r->e.skel->maps.rules4), &k4, rule,
					    BPF_NOEXIST);
}

static int real_rule_del(struct run *r, const struct step *st)
{
	struct xdp_rl_rule_key4 k4 = { .prefixlen = st->len };
	struct xdp_rl_rule_key6 k6 = { .prefixlen = st->len };

	memcpy(&k4.addr, st->a, 4);
	memcpy(k6.addr, st->a, 16);
	return st->v6 ? bpf_map_delete_elem(bpf_map__fd(r->e.skel->maps.rules6), &k6) :
			bpf_map_delete_elem(bpf_map__fd(r->e.skel->maps.rules4), &k4);
}

static void cover_packet(struct run *r, const struct step *st, const struct model_out *o)
{
	const __u8 *a = model_key_dst(r->sc->lo.key) ? st->d : st->a;
	const int port = model_key_port(r->sc->lo.key) && o->at.kind == MW_KEY,
		  read = (st->l4.known & MODEL_L4_PORT) &&
			 (st->l4.proto == IPPROTO_TCP || st->l4.proto == IPPROTO_UDP);
	__u64 *c = r->cover;

	c[C_PORT_READ] += port && read;
	c[C_PORT_UNREAD] += port && !read;
	c[C_LINK_LOCAL] +=
		o->v != MV_UNSELECTED &&
		(st->v6 ? a[0] == 0xfe && (a[1] & 0xc0) == 0x80 : a[0] == 169 && a[1] == 254);
	c[C_ALLOW] += o->v == MV_ALLOW;
	c[C_DENY] += o->v == MV_DENY;
	c[C_SHARED] += o->at.kind == MW_SHARED;
	c[C_KEY] += o->at.kind == MW_KEY && o->at.table <= MODEL_SRC6;
	c[C_AGG] += o->at.kind == MW_KEY && o->at.table >= MODEL_AGG4;
	c[C_INSERT] += o->ins.kind == MW_KEY;
	c[C_CAP_PASS] += o->newsrc == 1 && r->m.live.on_full == XDP_RL_FULL_PASS;
	c[C_CAP_DROP] += o->newsrc == 1 && r->m.live.on_full == XDP_RL_FULL_DROP;
	c[C_REFUSED] += o->refused_layer >= 0 && o->v != MV_BANNED;
	c[C_UNDONE] += o->refused_layer > 0 && !o->full && o->v != MV_BANNED;
	c[C_BANNED] += o->v == MV_BANNED;
	c[C_FULL] += !!o->full;
	c[C_IN_COUNT] += o->full == 2;
	c[C_DRY] += o->v != MV_PASS && o->v != MV_ALLOW && o->v != MV_UNSELECTED &&
		    (r->m.live.flags & XDP_RL_F_DRY_RUN);
	c[C_UNSELECTED] += o->v == MV_UNSELECTED;
	c[C_FLEET_REFUSED] += o->v == MV_LIMIT && (r->m.live.flags & XDP_RL_F_FLEET);
	c[C_PASSED_OVER] += o->passed_over > 0;
	c[C_UNREAD] += o->unread;
	c[C_RATE] += o->rate != 0;
	c[C_RATE_REFUSED] += o->rate == 2;
	c[C_DEEP] += o->v == MV_MALFORMED;
}

static const char *const reset_words[] = { "nothing to reset", "its key", "its aggregate",
					   "its rule's shared budget" };
static const char *const remote_words[] = { "no window started to write it for", "its key's window",
					    "its aggregate's window",
					    "its rule's shared budget's window" };

/* Run step @i. Returns 0, or 1 on a mismatch (reported in r->wf). */
static int run_step(struct run *r, int i)
{
	const struct step *st = &r->sc->s[i];
	struct model_out o = { .newsrc = -1 };
	struct model_rule mr;
	char what[512] = "", why[160], a[INET6_ADDRSTRLEN];
	struct pkt p;
	int pre = -1, got, want, bad = 0;
	__u64 ns, before = r->m.now, bans = r->m.st.c[XDP_RL_STAT_BANS];
	FILE *f;

	r->step = i;
	switch (st->kind) {
	case ST_PKT:
		p = build(&(struct pkt_spec){
			.family = st->v6 ? V6 : V4,
			.src = addr_str(st->v6, st->a, a),
			.vlans = st->vlans,
			.size = st->size,
			.proto = st->l4.proto,
			.dport = st->l4.dport,
			.tcp_flags = st->l4.tcp_flags,
			.later_fragment = st->l4.known == MODEL_L4_PROTO,
			.first_cut = st->l4.known == (MODEL_L4_PROTO | MODEL_L4_PORT),
			.ext = st->l4.known ? st->ext : XDP_RL_MAX_EXT_HDRS + 1 });
		put_dst(&p, st);
		model_packet(&r->m, st->v6, st->a, st->d, &st->l4, p.len, &o);
		pre = free_slots(r, &o.ins);
		got = run(&r->e, &p, 1);
		r->packets++;
		r->npackets++;
		if (o.refused_layer >= 0)
			snprintf(why, sizeof(why), "%s, refused by layer %d%s%s", o.why,
				 o.refused_layer,
				 o.full == 2 ? " (full: the drop in its count)" :
				 o.full	     ? " (full: the drop apart)" :
					       "",
				 r->m.st.c[XDP_RL_STAT_BANS] == bans ? "" :
				 o.v == MV_BANNED ? " (a ban made opening its window)" :
						    " (a ban made)");
		else
			snprintf(why, sizeof(why), "%s", o.why);
		snprintf(what, sizeof(what), "%s (%s)", xdp_word(o.xdp), why);
		if (r->cover) {
			cover_packet(r, st, &o);
			if (r->m.st.c[XDP_RL_STAT_BANS] != bans)
				r->cover[o.v == MV_BANNED ? C_BAN_TURNOVER : C_BAN_MADE]++;
		}
		if (got != o.xdp) {
			fprintf(mismatch(r), "verdict: model %s (%s), program %s\n",
				xdp_word(o.xdp), why, got < 0 ? strerror(-got) : xdp_word(got));
			bad = 1;
		}
		break;
	case ST_ADVANCE:
	case ST_ADVANCE_END:
	case ST_ADVANCE_BAN:
		ns = st->kind == ST_ADVANCE	? st->n :
		     st->kind == ST_ADVANCE_END ? advance_end(r, st, what, sizeof(what)) :
						  advance_ban(r, st, what, sizeof(what));
		run_advance(r, ns);
		break;
	case ST_SET:
		r->ops++;
		/*
		 * As user/cmd/set.c: another number of layers, a switch
		 * between windows and a rate, or another selector, is another
		 * limit set.
		 */
		if (st->set.nlayers != r->cur.nlayers ||
		    rate_bits(st->set.layer, st->set.nlayers) !=
			    rate_bits(r->cur.layer, r->cur.nlayers) ||
		    memcmp(&st->set.select, &r->cur.select, sizeof(r->cur.select)))
			r->lsid = r->next_lsid++;
		r->cur = st->set;
		publish(r);
		snprintf(what, sizeof(what), "limit set %u%s", r->lsid,
			 r->bans ? ", bans looked at (XDP_RL_F_BANS)" : "");
		break;
	case ST_RULE_ADD:
		r->ops++;
		if (model_rule_find(&r->m, st->v6, st->a, st->len) >= 0) {
			snprintf(what, sizeof(what), "refused: the prefix has a rule");
			break;
		}
		memset(&mr, 0, sizeof(mr));
		mr.v6 = st->v6;
		memcpy(mr.a, st->a, 16);
		mr.len = st->len;
		mr.r = st->rule;
		mr.r.id = model_free_rule_id(&r->m);
		mr.r.lsid = r->next_lsid++;
		if (mr.r.id >= MAX_IDS) {
			snprintf(what, sizeof(what), "skipped: out of rule ids");
			break;
		}
		if (real_rule_add(r, st, &mr.r)) {
			fprintf(mismatch(r), "rule add: %s\n", strerror(errno));
			bad = 1;
			break;
		}
		model_rule_add(&r->m, &mr);
		if (mr.r.id + 1 > r->ids)
			r->ids = mr.r.id + 1;
		if (!st->at_load)
			publish(r);
		snprintf(what, sizeof(what), "id %u, limit set %u", mr.r.id, mr.r.lsid);
		break;
	case ST_RULE_DEL:
		r->ops++;
		if (model_rule_del(&r->m, st->v6, st->a, st->len)) {
			snprintf(what, sizeof(what), "refused: no rule for that prefix");
			break;
		}
		if (real_rule_del(r, st)) {
			fprintf(mismatch(r), "rule del: %s\n", strerror(errno));
			bad = 1;
			break;
		}
		publish(r);
		break;
	case ST_RESET:
	case ST_CHARGE:
		r->ops++;
		if ((st->kind == ST_CHARGE || st->n) && model_address_rate(&r->m, st->v6, st->a)) {
			snprintf(what, sizeof(what), "refused: a rate keeps no count to set");
			break;
		}
		want = st->kind == ST_RESET ?
			       model_reset_address(&r->m, st->v6, st->a, st->port, st->n, &o) :
			       model_charge_address(&r->m, st->v6, st->a, st->port, st->n, &o);
		pre = free_slots(r, &o.ins);
		got = st->kind == ST_RESET ? real_reset(r, st) : real_charge(r, st);
		snprintf(what, sizeof(what), "%s%s",
			 st->kind == ST_CHARGE && !want ? "refused: a rule allows or denies it" :
							  reset_words[want],
			 o.ins.kind == MW_KEY ? ", given a slot" : "");
		if (got != want) {
			fprintf(mismatch(r), "%s: model: %s; xdp-rl: %s\n",
				st->kind == ST_RESET ? "reset" : "charge", reset_words[want],
				got < 0 ? "failed" : reset_words[got]);
			bad = 1;
		}
		break;
	case ST_REMOTE:
		r->ops++;
		want = model_remote_address(&r->m, st->v6, st->a, st->port, st->len, st->n,
					    st->stale, &o);
		got = real_remote(r, st);
		snprintf(what, sizeof(what), "%s", remote_words[want]);
		if (r->cover && want)
			r->cover[C_REMOTE]++;
		if (got != want) {
			fprintf(mismatch(r), "fleet share: model: %s; xdp-rl: %s\n",
				remote_words[want], got < 0 ? "failed" : remote_words[got]);
			bad = 1;
		}
		break;
	case ST_RESET_ALL: {
		__u64 open = 0;

		r->ops++;
		model_reset_all(&r->m);
		if (forget_all(&r->e.lim, &open)) {
			fprintf(mismatch(r), "reset --all failed: %s\n", strerror(errno));
			bad = 1;
		}
		break;
	}
	}
	bad |= check_state(r, &o.ins, pre);
	if (r->log) {
		fprintf(r->log, "  %4d  %-15s ", i, time_str(before, a, sizeof(a)));
		step_put(r->log, st);
		fprintf(r->log, "%s%s\n", *what ? ": " : "", what);
	}
	if (bad) {
		f = mismatch(r);
		where_put(r, f, &o.at);
		if (o.ins.kind == MW_KEY && memcmp(&o.ins, &o.at, sizeof(o.at)))
			where_put(r, f, &o.ins);
		fflush(f);
	}
	return bad;
}

/*
 * Run @sc on a fresh program. Returns 0 if every step matched, 1 on a
 * mismatch (r->bad_step, r->why), -1 if the program could not be loaded.
 */
static int run_scenario(struct run *r, const struct scenario *sc, FILE *log, int quiet,
			__u64 *cover_to)
{
	int i, bad = 0;

	memset(r, 0, sizeof(*r));
	r->sc = sc;
	r->log = log;
	r->cover = cover_to;
	r->bad_step = -1;
	r->ncpu = libbpf_num_possible_cpus();
	if (run_load(r, quiet))
		return -1;
	model_init(&r->m,
		   &(struct model_fixed){ sc->lo.bytes, sc->lo.v4_prefix, sc->lo.v6_prefix,
					  sc->lo.layers, sc->lo.key, load_hot_after(&sc->lo) },
		   r->e.skel->bss->fake_now_ns);
	r->lsid = TEST_LSID;
	r->next_lsid = TEST_LSID + 1;
	r->cur = sc->init;
	if (log) {
		fprintf(log, "  %4s  %-15s ", "", "t+0s");
		scenario_head(log, sc);
		fputc('\n', log);
	}
	/* Rules given at load go in first; the first settings publish their counts. */
	for (i = 0; i < sc->n && sc->s[i].kind == ST_RULE_ADD && sc->s[i].at_load && !bad; i++)
		bad = run_step(r, i);
	if (!bad) {
		publish(r);
		r->step = i;
		bad = check_state(r, &(struct model_where){ MW_NONE }, -1);
	}
	for (; i < sc->n && !bad; i++)
		bad = run_step(r, i);
	if (r->wf)
		fflush(r->wf);
	return bad ? 1 : 0;
}

/* ---- Shrinking ------------------------------------------------------------------ */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Whether @sc still fails; *at: the step that did. */
static int still_fails(const struct scenario *sc, int *at, int *tries)
{
	struct run r;
	int res = run_scenario(&r, sc, NULL, 1, NULL);

	*at = r.bad_step;
	run_free(&r);
	++*tries;
	return res == 1;
}

/*
 * Remove steps while the scenario still fails: chunks of half of it, then
 * smaller, down to one step at a time, cutting what follows the failing
 * step each time. Until @deadline.
 */
static void shrink(struct scenario *sc, int bad_step, double deadline, int *tries)
{
	struct scenario c;
	int chunk, i, at, removed;

	sc->n = bad_step + 1;
	for (chunk = sc->n / 2 > 0 ? sc->n / 2 : 1; chunk > 0 && now_s() < deadline;) {
		removed = 0;
		for (i = 0; i < sc->n && now_s() < deadline;) {
			c = scenario_copy(sc, sc->n);
			memmove(&c.s[i], &c.s[i + chunk < c.n ? i + chunk : c.n],
				(c.n - (i + chunk < c.n ? i + chunk : c.n)) * sizeof(*c.s));
			c.n -= i + chunk < sc->n ? chunk : sc->n - i;
			if (c.n > 0 && still_fails(&c, &at, tries)) {
				scenario_free(sc);
				*sc = c;
				sc->n = at + 1;
				removed = 1;
			} else {
				scenario_free(&c);
				i += chunk;
			}
		}
		if (chunk == 1 && !removed)
			break;
		if (chunk > 1)
			chunk /= 2;
	}
}

/* ---- The test ------------------------------------------------------------------- */

static __u64 env_u64(const char *name, __u64 dflt, int *given)
{
	const char *s = getenv(name);
	char *end;
	__u64 v;

	if (given)
		*given = 0;
	if (!s || !*s)
		return dflt;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end) {
		fprintf(stderr, "model: %s='%s' is not a number; using %llu\n", name, s,
			(unsigned long long)dflt);
		return dflt;
	}
	if (given)
		*given = 1;
	return v;
}

/* Report a failing scenario, shrink it and print what is left. */
static void report(__u64 seed, __u64 number, const struct scenario *sc, struct run *r)
{
	double shrink_s = env_u64("XDP_RL_MODEL_SHRINK_SECONDS", 90, NULL), t0 = now_s();
	struct scenario small = scenario_copy(sc, sc->n);
	struct run again;
	int tries = 0, n0 = r->bad_step + 1;

	printf("model: MISMATCH: seed %llu, scenario %llu, step %d (packet %d):\n",
	       (unsigned long long)seed, (unsigned long long)number, r->bad_step, r->bad_packet);
	printf("  ");
	scenario_head(stdout, sc);
	printf("\n  step %d: ", r->bad_step);
	step_put(stdout, &sc->s[r->bad_step]);
	printf("\n%s", r->why ? r->why : "");
	printf("model: shrinking the %d steps up to the mismatch (at most %.0f s)...\n", n0,
	       shrink_s);
	fflush(stdout);
	shrink(&small, r->bad_step, t0 + shrink_s, &tries);
	printf("model: shrunk from %d steps to %d in %d runs, %.1f s; the scenario, step by step "
	       "(as run again):\n",
	       n0, small.n, tries, now_s() - t0);
	if (run_scenario(&again, &small, stdout, 1, NULL) == 1)
		printf("model: MISMATCH at step %d (packet %d):\n%s", again.bad_step,
		       again.bad_packet, again.why ? again.why : "");
	else
		printf("model: (the shrunk scenario did not fail again when run once more)\n");
	printf("model: reproduce with: make unit T=model MODEL_SEED=%llu MODEL_SCENARIO=%llu\n",
	       (unsigned long long)seed, (unsigned long long)number);
	run_free(&again);
	scenario_free(&small);
}

UNIT_TEST(model)
{
	double seconds = env_u64("XDP_RL_MODEL_SECONDS", 20, NULL), t0 = now_s(), next_note;
	__u64 seed, only, number, packets = 0, ops = 0, scenarios = 0, steps = 0;
	int seeded, single, res = 0, mismatches = 0, i, verbose = !!getenv("XDP_RL_MODEL_VERBOSE");
	cpu_set_t was, one;
	struct scenario sc;
	struct run r;

	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (__u64)time(NULL) ^ ((__u64)getpid() << 32);
	seed = env_u64("XDP_RL_MODEL_SEED", seed, &seeded);
	only = env_u64("XDP_RL_MODEL_SCENARIO", 0, &single);
	printf("model: seed %llu%s, %s%.0f s (XDP_RL_MODEL_SEED=%llu repeats this run)\n",
	       (unsigned long long)seed, seeded ? " (given)" : "",
	       single ? "one scenario, not " : "", seconds, (unsigned long long)seed);
	/* One CPU: every packet and request runs on the CPU this thread is on. */
	sched_getaffinity(0, sizeof(was), &was);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	next_note = t0 + 60;
	for (number = single ? only : 0; !mismatches; number++) {
		if (single ? number != only : now_s() - t0 >= seconds)
			break;
		gen_scenario(seed, number, &sc);
		if (verbose)
			printf("model: scenario %llu:\n", (unsigned long long)number);
		res = run_scenario(&r, &sc, verbose ? stdout : NULL, scenarios > 0, cover);
		if (res < 0) {
			if (scenarios > 0)
				UNIT_FAIL("model: load scenario %llu: %s",
					  (unsigned long long)number, strerror(errno));
			run_free(&r);
			scenario_free(&sc);
			break;
		}
		scenarios++;
		kind_scenarios[sc.lo.key % XDP_RL_KEY_KINDS]++;
		kind_packets[sc.lo.key % XDP_RL_KEY_KINDS] += r.packets;
		cover[C_TURNOVER] += r.m.st.c[XDP_RL_STAT_NEW_WINDOWS];
		packets += r.packets;
		ops += r.ops;
		steps += res ? r.bad_step + 1 : sc.n;
		if (res) {
			mismatches++;
			report(seed, number, &sc, &r);
		}
		run_free(&r);
		scenario_free(&sc);
		if (now_s() >= next_note) {
			printf("model: %.0f s: %llu scenarios, %llu packets, %llu operations\n",
			       now_s() - t0, (unsigned long long)scenarios,
			       (unsigned long long)packets, (unsigned long long)ops);
			fflush(stdout);
			next_note += 60;
		}
	}
	sched_setaffinity(0, sizeof(was), &was);
	if (res < 0 && !scenarios)
		return; /* skipped, or a failure env_open reported */
	printf("model: %llu scenarios, %llu steps, %llu packets, %llu operations in %.1f s "
	       "(seed %llu)\n",
	       (unsigned long long)scenarios, (unsigned long long)steps,
	       (unsigned long long)packets, (unsigned long long)ops, now_s() - t0,
	       (unsigned long long)seed);
	printf("model: packets judged by --key:");
	for (i = 0; i < XDP_RL_KEY_KINDS; i++)
		printf("%s %s %llu (%llu scenarios)", i ? "," : "", key_names[i],
		       (unsigned long long)kind_packets[i], (unsigned long long)kind_scenarios[i]);
	printf("\n");
	printf("model: exercised:");
	for (i = 0; i < C_NCOVER; i++)
		printf("%s %s %llu", i ? "," : "", cover_names[i], (unsigned long long)cover[i]);
	printf("\n");
	ASSERT_EQ(
		mismatches, 0,
		"model: %llu scenarios, %llu packets, %llu operations (seed %llu): every verdict, "
		"window and counter as the model says",
		(unsigned long long)scenarios, (unsigned long long)packets, (unsigned long long)ops,
		(unsigned long long)seed);
}
