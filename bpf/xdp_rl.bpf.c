// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xdp_rl.bpf.c - per-source fixed-window rate limiter at the XDP hook.
 *
 * Each frame is parsed down to its IP source address. The longest matching
 * per-prefix rule, if any, may allow or deny it outright, or give it its own
 * layers of limits (per source, or shared by the whole prefix). Otherwise
 * the address, masked to a prefix, is charged one packet (or the frame
 * length with --bytes) in each of its windows. A frame that takes a window
 * past its limit is dropped before the kernel allocates anything for it.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xdp_rl.h"
#include "parse.h"
#include "window.h"
#include "layers.h"

/* Fixed at load time by xdp-rl; the verifier prunes what they rule out. */
const volatile __u32 cfg_bytes = 0;
const volatile __u32 cfg_layers = 1;	/* room per source: value size / 16 */
const volatile __be32 cfg_v4_mask = 0xffffffff;
const volatile __be32 cfg_v6_mask[4] = { 0xffffffff, 0xffffffff, 0, 0 };
/* Tests only: take the time from fake_now_ns instead of the kernel clock. */
const volatile __u32 cfg_fake_clock = 0;
__u64 fake_now_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_rl_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_rl_stats);
} stats SEC(".maps");

/*
 * Sources. max_entries comes from --max-sources and the value size from
 * the number of layers (16 bytes each), both set by xdp-rl before load.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __be32);
	__type(value, struct xdp_rl_state);
} src4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, struct xdp_rl_key6);
	__type(value, struct xdp_rl_state);
} src6 SEC(".maps");

/* --on-table-full aggregate: new sources refused a slot share a /24 or /48. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __be32);
	__type(value, struct xdp_rl_state);
} agg4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, struct xdp_rl_agg6_key);
	__type(value, struct xdp_rl_state);
} agg6 SEC(".maps");

/* The window that caps inserts (--new-sources N/DUR). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_rl_state);
} newsrc SEC(".maps");

/* Per-prefix rules; the datapath looks only when live->nrules* says so. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XDP_RL_MAX_RULES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdp_rl_rule_key4);
	__type(value, struct xdp_rl_rule);
} rules4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XDP_RL_MAX_RULES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdp_rl_rule_key6);
	__type(value, struct xdp_rl_rule);
} rules6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDP_RL_MAX_RULES);
	__type(key, __u32);
	__type(value, struct xdp_rl_rule_hits);
} rule_hits SEC(".maps");

/* The windows of --shared rules, by rule id; xdp-rl zeroes one on `rule add`. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDP_RL_MAX_RULES);
	__type(key, __u32);
	__type(value, struct xdp_rl_layers);
} shared SEC(".maps");

enum verdict { V_PASS, V_LIMIT, V_DENY, V_MALFORMED };

/* The source's key; which one is meant is a constant at each call site. */
struct packet {
	__be32 k4;			/* the source (IPv4) */
	struct xdp_rl_key6 k6;		/* the source (IPv6) */
};

static __always_inline void clock_read(struct window_clock *clk,
				       const struct xdp_rl_live *live)
{
	clk->aligned = live->flags & XDP_RL_F_ALIGNED;
	clk->tai_to_unix_ns = live->tai_to_unix_ns;
	if (cfg_fake_clock)
		clk->now = fake_now_ns;
	else if (clk->aligned)
		clk->now = bpf_ktime_get_tai_ns();
	else if (live->flags & XDP_RL_F_COARSE_CLOCK)
		clk->now = bpf_ktime_get_coarse_ns();	/* a tick, far below the window */
	else
		clk->now = bpf_ktime_get_ns();
}

/*
 * The state of @key in @map, inserting an empty one (every window over) if
 * it is new; inserts of @counted (source) keys are counted. NULL if the
 * kernel refused the insert.
 */
static __always_inline struct xdp_rl_state *state_get(void *map, const void *key,
						      struct xdp_rl_stats *st, int counted)
{
	struct xdp_rl_layers empty = {};
	struct xdp_rl_state *s;

	s = bpf_map_lookup_elem(map, key);
	if (s)
		return s;
	/* -EEXIST: another CPU inserted it first, and we share its windows. */
	if (!bpf_map_update_elem(map, key, &empty, BPF_NOEXIST) && counted)
		st->c[XDP_RL_STAT_INSERTS]++;
	s = bpf_map_lookup_elem(map, key);
	if (!s)
		st->c[XDP_RL_STAT_TABLE_ERRORS]++;
	return s;
}

/*
 * A source that is not in the table yet. With --new-sources, inserts are
 * themselves a window; past it the source is passed, dropped or charged to
 * its /24 or /48 instead of taking (and evicting) a slot.
 */
static __always_inline struct xdp_rl_state *
state_new(const struct packet *p, const int v6, const struct xdp_rl_live *live,
	  const struct window_clock *clk, struct xdp_rl_stats *st, int *verdict)
{
	struct xdp_rl_agg6_key k6;
	struct xdp_rl_state *cap;
	__u32 zero = 0;
	__be32 k4;
	__u64 gen;
	int op = 0;

	if (live->new_sources.limit) {
		cap = bpf_map_lookup_elem(&newsrc, &zero);
		if (cap && window_hit(cap, clk, live->new_sources.window_ns, 1, &op, &gen) >
			   live->new_sources.limit) {
			st->c[XDP_RL_STAT_REFUSED_INSERTS]++;
			if (live->on_full == XDP_RL_FULL_PASS) {
				*verdict = V_PASS;
				return NULL;
			}
			if (live->on_full == XDP_RL_FULL_DROP) {
				*verdict = V_LIMIT;
				return NULL;
			}
			st->c[XDP_RL_STAT_AGGREGATED]++;
			if (!v6) {
				k4 = p->k4 & bpf_htonl(0xffffff00);
				return state_get(&agg4, &k4, st, 0);
			}
			k6.addr[0] = p->k6.addr[0];
			k6.addr[1] = p->k6.addr[1] & bpf_htonl(0xffff0000);
			return state_get(&agg6, &k6, st, 0);
		}
	}
	return v6 ? state_get(&src6, &p->k6, st, 1) : state_get(&src4, &p->k4, st, 1);
}

/* Find the longest matching rule for the (unmasked) source address. */
static __always_inline struct xdp_rl_rule *rule_find(const int v6,
						     const struct xdp_rl_live *live,
						     __be32 a4, const struct in6_addr *a6)
{
	struct xdp_rl_rule_key4 k4;
	struct xdp_rl_rule_key6 k6;

	if (!v6) {
		if (!live->nrules4)
			return NULL;
		k4.prefixlen = 32;
		k4.addr = a4;
		return bpf_map_lookup_elem(&rules4, &k4);
	}
	if (!live->nrules6)
		return NULL;
	k6.prefixlen = 128;
	__builtin_memcpy(k6.addr, a6, sizeof(k6.addr));
	return bpf_map_lookup_elem(&rules6, &k6);
}

/*
 * @v6 is a constant at both call sites, so that after inlining every map
 * lookup names one map: a lookup that could be either is not inlined by the
 * verifier and costs a helper call.
 */
static __always_inline int limit(struct packet *p, const int v6,
				 const struct xdp_rl_live *live,
				 __be32 a4, const struct in6_addr *a6, __u64 inc,
				 struct xdp_rl_stats *st, struct xdp_rl_rule_hits **hits)
{
	const struct xdp_rl_layer *lay = live->layer;
	struct xdp_rl_state *s = NULL;
	struct window_clock clk;
	struct xdp_rl_rule *rule;
	__u32 n = live->nlayers, room = cfg_layers;
	int verdict = V_PASS;
	__u64 opened = 0;

	rule = rule_find(v6, live, a4, a6);
	if (rule) {
		*hits = bpf_map_lookup_elem(&rule_hits, &rule->id);
		if (*hits)
			(*hits)->packets++;
		if (rule->action == XDP_RL_RULE_ALLOW) {
			st->c[XDP_RL_STAT_ALLOWED]++;
			return V_PASS;
		}
		if (rule->action == XDP_RL_RULE_DENY)
			return V_DENY;
		lay = rule->layer;
		n = rule->nlayers;
		if (rule->flags & XDP_RL_RULE_F_SHARED) {
			s = bpf_map_lookup_elem(&shared, &rule->id);
			room = XDP_RL_MAX_LAYERS;
			if (!s)
				return V_PASS;
		}
	}

	clock_read(&clk, live);
	if (!s) {
		s = v6 ? bpf_map_lookup_elem(&src6, &p->k6) : bpf_map_lookup_elem(&src4, &p->k4);
		if (!s)
			s = state_new(p, v6, live, &clk, st, &verdict);
		if (!s)
			return verdict;
	}
	if (layers_charge(s, room, lay, n, &clk, inc, &opened) >= 0)
		verdict = V_LIMIT;
	st->c[XDP_RL_STAT_NEW_WINDOWS] += opened;
	return verdict;
}

SEC("xdp")
int xdp_rl(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct cursor c = { .pos = data, .end = data_end };
	__u64 len = data_end - data;
	struct xdp_rl_rule_hits *hits = NULL;
	const struct xdp_rl_live *live;
	struct xdp_rl_config *cfg;
	struct xdp_rl_stats *st;
	struct packet p = {};
	struct in6_addr *a6 = NULL;
	__u32 zero = 0;
	__be16 proto;
	__be32 a4 = 0;
	int v;

	cfg = bpf_map_lookup_elem(&config, &zero);
	st = bpf_map_lookup_elem(&stats, &zero);
	if (!cfg || !st)
		return XDP_PASS;
	live = &cfg->slot[cfg->active & 1];

	if (parse_eth(&c, &proto) < 0) {
		v = V_MALFORMED;
	} else if (proto == bpf_htons(ETH_P_IP)) {
		if (parse_ipv4(&c, &a4) < 0) {
			v = V_MALFORMED;
		} else {
			p.k4 = a4 & cfg_v4_mask;
			v = limit(&p, 0, live, a4, NULL, cfg_bytes ? len : 1, st, &hits);
		}
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		if (parse_ipv6(&c, &a6) < 0) {
			v = V_MALFORMED;
		} else {
			p.k6.addr[0] = a6->in6_u.u6_addr32[0] & cfg_v6_mask[0];
			p.k6.addr[1] = a6->in6_u.u6_addr32[1] & cfg_v6_mask[1];
			p.k6.addr[2] = a6->in6_u.u6_addr32[2] & cfg_v6_mask[2];
			p.k6.addr[3] = a6->in6_u.u6_addr32[3] & cfg_v6_mask[3];
			v = limit(&p, 1, live, 0, a6, cfg_bytes ? len : 1, st, &hits);
		}
	} else {
		st->c[XDP_RL_STAT_NOT_IP]++;
		return XDP_PASS;
	}

	if (v == V_PASS) {
		st->c[XDP_RL_STAT_PASSED]++;
		st->c[XDP_RL_STAT_PASSED_BYTES] += len;
		return XDP_PASS;
	}
	if (hits)
		hits->dropped++;
	if (v == V_MALFORMED)
		st->c[XDP_RL_STAT_MALFORMED]++;
	else if (v == V_DENY)
		st->c[XDP_RL_STAT_DENIED]++;
	if (live->flags & XDP_RL_F_DRY_RUN) {
		if (v == V_LIMIT)
			st->c[XDP_RL_STAT_WOULD_DROP]++;
		return XDP_PASS;
	}
	if (v == V_LIMIT) {
		st->c[XDP_RL_STAT_DROPPED]++;
		st->c[XDP_RL_STAT_DROPPED_BYTES] += len;
	}
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
