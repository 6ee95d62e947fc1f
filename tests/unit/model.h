/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * model.h - what the XDP program decides for each packet, and what
 * xdp-rl's `reset`, `charge`, `set` and `rule` do to its windows, in plain
 * C: one CPU, one clock, no table layout. tests/unit/test_model.c runs
 * random scenarios through this model and through the real program
 * (BPF_PROG_TEST_RUN) and compares every verdict, every window and the
 * counters.
 *
 * The model is written from the behaviour, not from bpf/:
 *
 * - A packet's key (load --key, include/xdp_rl.h's enum xdp_rl_key_kind):
 *   its address, the source's or with --key dst the destination's, is what
 *   everything below matches (rules, --link-local) and is masked to
 *   --v4-prefix or --v6-prefix; with --key ...,dport the key holds the
 *   destination port too, 0 when it could not be read (not TCP or UDP, a
 *   later fragment, a header chain too long). Such a key is laid out as
 *   the tables keep it: IPv4 { address, port, 0, 0 } (32-bit words, the
 *   port in network order), IPv6 the port in the address's last 16 bits
 *   (--v6-prefix at most 112). A link-local address keyed whole keeps all
 *   of it: an IPv6 one then holds no port, an IPv4 one keeps its port. An
 *   aggregate is the address cut to /24 or /48, with the port.
 * - Link-local key addresses (169.254.0.0/16, fe80::/10) under
 *   --link-local: exempt, they pass untouched (unselected); per-address
 *   (the default), their key is the whole address; prefix, masked as any.
 * - Selectors (struct xdp_rl_select: a protocol, TCP SYNs without ACK,
 *   destination port ranges), judged when one is set anywhere: a packet
 *   whose ports could not be read (a later fragment) is taken by a port
 *   list if its protocol is (TCP or UDP), never by --syn. The longest
 *   matching rule whose selector does not take the packet is as if it did
 *   not exist (no shorter rule stands in); the global limits' selector not
 *   taking a packet that no rule took passes it untouched (unselected).
 * - A packet's key address, under the live settings, finds the longest
 *   matching rule of its family (only if the family has rules). --allow
 *   passes it; --deny drops it (passes it in dry run, counted would_drop);
 *   a --shared rule charges the rule's budget (by rule id) with its layers;
 *   a per-source rule charges the key (the first point: the address
 *   masked, and the port; the rule's limit set) with the rule's layers. No
 *   rule: the key under the global limit set and layers.
 * - A key in the table is charged. A key not in it is a new source: with
 *   --new-sources N/DUR, one unit is charged to the cap's window (limit N,
 *   length DUR); over the cap the source is refused a slot and handled by
 *   --on-table-full: pass (passed, untracked), drop (refused as over a
 *   limit: passed in dry run) or aggregate (charged, with the same layers,
 *   to its /24 or /48 under the same limit set, in the aggregate table).
 *   Otherwise it gets a slot, every window closed, and is charged.
 * - Charging layers 0 .. n-1 (n: the limit set's, at most the room a slot
 *   has; a --shared budget has room for XDP_RL_MAX_LAYERS): a window is
 *   over if it has no start, or now >= start + length (the length in force
 *   now), or its start is more than XDP_RL_AHEAD_MAX_NS ahead of now. An
 *   over window opens anew at window_start() holding the charge; an open
 *   one adds it. A layer whose count then exceeds its limit refuses the
 *   packet: the layers before it give their charge back, the ones after it
 *   are not charged.
 * - In fleet mode (XDP_RL_F_FLEET) a window's count is judged with what
 *   the other servers passed in it (the fleet agent's share, `remote`):
 *   count + share against the limit. A share belongs to the window it was
 *   written for: a window that opens anew, closes or is reset has none.
 *   Out of fleet mode the share is not consulted.
 * - Bans (--ban DUR: struct xdp_rl_live's and a per-source rule's ban_ns;
 *   never a --shared budget's). While XDP_RL_F_BANS is set, a key any of
 *   whose windows holds a ban that ends after now is refused (banned)
 *   before anything else, nothing charged. The packet whose charge takes a
 *   window from at most its limit to past it bans the key for ban_ns from
 *   now (the end rounded up to XDP_RL_GRAIN), counted in bans: the packet
 *   itself is refused by the limit. A window that opens anew after one
 *   that went over its limit without a ban made for it (the limit had no
 *   ban then; or `charge`, `reset --count` took it over) makes one then,
 *   from that window's end (rounded up to XDP_RL_GRAIN) or now, whichever
 *   is earlier; if it holds, the packet gives every charge back and is
 *   banned (the window stays opened, empty). A ban belongs to its window:
 *   reset, closed, or a key losing its slot, it is gone; `charge` opening
 *   a window after it (over) carries it to that window.
 * - A layer may be a rate (--rate N/DUR --burst B: include/xdp_rl.h's
 *   struct xdp_rl_layer with a burst; its cost and tolerance tau from
 *   xdp_rl_rate_fill). Its window is an episode: start (the episode began
 *   at that reading rounded down to XDP_RL_GRAIN; 0: none) and count, which
 *   is TAT - start with XDP_RL_RATE_REFUSING once a packet of the episode
 *   was refused (as the table's count word reads). A packet of inc units at
 *   now costs c = xdp_rl_rate_cost(inc), and tau is xdp_rl_rate_tau; c > tau:
 *   refused, nothing done (a frame larger than the burst). Else with TAT = start + offset (0 without a start), next = max(TAT, now)
 *   + c: next - now > tau refuses it (the first refusal of the episode sets
 *   the flag, counts in over_limit and bans for ban_ns; every refusal's
 *   units count apart, the episode's drops); else it passes: TAT > now
 *   moves the TAT to next, else an episode begins (counted as a window
 *   opened; its drops, share and ban none). Taken back (a later layer
 *   refused), the TAT goes back by c. On a read (the walk before the
 *   charge, as for full windows): a rate whose flag is set, TAT > now and
 *   TAT + c - now > tau refuses, its drop counted apart (no ban: one
 *   per episode, at its first refusal); any other rate ends the walk.
 *   A rate never consults the fleet's share. `charge` and `reset --count`
 *   are not asked of a key whose limits are a rate (xdp-rl refuses them).
 * - Which key an insert evicts is the table's choice: the model cannot
 *   know it. Its caller tells it (model_forget) after each step, and checks
 *   that evictions happen only where an insert did (and, with an LRU
 *   table, which may evict several at once, only into a full table).
 *
 * On one CPU nothing in bpf/ is documented to refuse more than this: the
 * races that may (a charge about to be taken back, a slot changing hands
 * under a packet) need two CPUs. So the model is exact, and the test checks
 * equality.
 */
#ifndef XDP_RL_UNIT_MODEL_H
#define XDP_RL_UNIT_MODEL_H

#include <linux/types.h>
#include <linux/bpf.h>

#include "xdp_rl.h"

/* Rule ids and rules a scenario can have at once. */
#define MODEL_MAX_RULES 64

/*
 * A window: start 0 is no window (closed, or never opened). A rate layer's:
 * an episode, its count TAT - start | XDP_RL_RATE_REFUSING (above).
 */
struct model_win {
	__u64 start;
	__u64 count; /* charged: what packets are decided on */
	/*
	 * Drops past a full window, counted apart from its count (bpf/hot.h;
	 * its first f.hot_after drops are in its count):
	 * what the window was offered is count + apart.
	 */
	__u64 apart;
	/* The fleet's share of this window (XDP_RL_F_FLEET): what other servers passed. */
	__u64 remote;
	/*
	 * A ban this window holds (--ban): until when (a multiple of
	 * XDP_RL_GRAIN; 0: none), and whether one was ever made for it (a
	 * window holds one ban, made once). A window opened anew, closed or
	 * reset holds none.
	 */
	__u64 ban_until;
	int ban_made;
};

/*
 * A key: as the tables keep it (network order: a masked address, IPv4 in
 * a[0..3], and its port if keys hold one; model.h's first point) and a
 * limit set.
 */
struct model_key {
	__u8 a[16];
	__u32 lsid;
	struct model_win w[XDP_RL_MAX_LAYERS];
};

enum model_table { MODEL_SRC4, MODEL_SRC6, MODEL_AGG4, MODEL_AGG6, MODEL_TABLES };

struct model_keys {
	struct model_key *k;
	int n, cap;
};

struct model_rule {
	int v6;
	__u8 a[16]; /* no bits set past len */
	int len;
	struct xdp_rl_rule r; /* action, flags, nlayers, layer, id, lsid */
};

/* What is fixed at load. */
struct model_fixed {
	int bytes;
	int v4_prefix, v6_prefix;
	__u32 room; /* --max-layers: windows per slot */
	__u32 key;  /* --key: enum xdp_rl_key_kind */
	/* Drops past its limit a window counts in its count (the program's cfg_hot_after). */
	__u32 hot_after;
};

struct model {
	struct model_fixed f;
	struct xdp_rl_live live; /* as published: layers, nlayers, lsid, flags, new_sources, ... */
	__u64 now;		 /* the test clock */
	struct model_keys t[MODEL_TABLES];
	struct model_rule rules[MODEL_MAX_RULES];
	int nrules;
	struct model_win shared[MODEL_MAX_RULES][XDP_RL_MAX_LAYERS]; /* by rule id */
	struct model_win newsrc;				     /* --new-sources' window */
	struct xdp_rl_stats st;					     /* what the counters say */
	struct xdp_rl_rule_hits hits[MODEL_MAX_RULES];		     /* by rule id */
};

/* Where a packet or an operation was charged (or a key inserted). */
enum model_where_kind { MW_NONE, MW_KEY, MW_SHARED };

struct model_where {
	enum model_where_kind kind;
	int table;  /* MW_KEY: enum model_table */
	__u8 a[16]; /* MW_KEY: the key */
	__u32 lsid;
	__u32 id; /* MW_SHARED: the rule id */
};

/* The datapath's verdicts (bpf/xdp_rl.bpf.c's enum verdict, as far as one CPU sees them). */
enum model_verdict { MV_PASS, MV_LIMIT, MV_DENY, MV_ALLOW, MV_UNSELECTED, MV_BANNED, MV_MALFORMED };

/*
 * A packet's transport, as the selectors see it: what of it could be read
 * (known: MODEL_L4_*; a later fragment has its protocol only, a first
 * fragment cut short its ports too, an IPv6 header chain longer than the
 * parser walks nothing). Such a chain, where a selector or the key needs
 * the transport (XDP_RL_F_SELECT, a key with a port), cannot be judged: it
 * is dropped as malformed (passed in dry run) before any limit or list,
 * unless its source is an exempt link-local one.
 */
#define MODEL_L4_PROTO 1
#define MODEL_L4_PORT  2
#define MODEL_L4_FLAGS 4
#define MODEL_L4_ALL   (MODEL_L4_PROTO | MODEL_L4_PORT | MODEL_L4_FLAGS)

struct model_l4 {
	__u8 proto; /* IPPROTO_TCP, _UDP, _ICMP, _ICMPV6 */
	__u8 tcp_flags;
	__u16 dport;
	int known; /* MODEL_L4_* */
};

struct model_out {
	int xdp; /* XDP_PASS or XDP_DROP */
	enum model_verdict v;
	int rule;		/* index in m->rules of the rule that matched, or -1 */
	struct model_where at;	/* what was charged */
	struct model_where ins; /* the key given a slot (MW_KEY), if any */
	int refused_layer;	/* the layer that refused it, or -1 */
	/*
	 * ... on a read of a full window, nothing charged: 1, its drop counted
	 * apart; 2, in the window's count (its first drops past the limit).
	 */
	int full;
	int newsrc;	 /* -1: the cap was not asked; 0: it admitted; 1: it refused */
	int passed_over; /* rules whose selector missed it, on the way to the one that judged */
	int unread;	 /* a field a selector looks at was not read, and it was counted */
	int rate;	 /* charged to limits with a rate layer; 2: refused by one */
	const char *why; /* how the decision was reached, for messages */
};

void model_init(struct model *m, const struct model_fixed *f, __u64 now);
void model_free(struct model *m);

/* The settings published (include/xdp_rl.h's struct xdp_rl_live). */
void model_set_live(struct model *m, const struct xdp_rl_live *live);

/* The lowest rule id no rule uses (xdp-rl's choice for `rule add`). */
__u32 model_free_rule_id(const struct model *m);
/* The rule for exactly this prefix, or -1. */
int model_rule_find(const struct model *m, int v6, const __u8 a[16], int len);
/*
 * `rule add`: the rule (with its id and lsid) is in force; its id's shared
 * budget starts closed and its hit counters at 0. 0, or -1 if the prefix
 * has a rule (xdp-rl refuses).
 */
int model_rule_add(struct model *m, const struct model_rule *r);
/* `rule del`: 0, or -1 if the prefix has no rule. */
int model_rule_del(struct model *m, int v6, const __u8 a[16], int len);
/* Rules per family (what nrules4 and nrules6 must say). */
void model_rule_counts(const struct model *m, __u32 *n4, __u32 *n6);
/* The longest window any rule has (for max_window_ns). */
__u64 model_rules_max_window(const struct model *m);

/*
 * A packet of @len bytes from address @src to address @dst (network order;
 * IPv4 in a[0..3]) carrying @l4.
 */
void model_packet(struct model *m, int v6, const __u8 src[16], const __u8 dst[16],
		  const struct model_l4 *l4, __u32 len, struct model_out *o);

/*
 * `reset ADDRESS [PORT]` (@count 0) and `reset ADDRESS [PORT] --count N`,
 * as user/cmd/reset.c does them: what limits the key of address @a (the
 * key's: the source's or with --key dst the destination's) and @port (with
 * --key ...,dport; else not looked at) starts afresh.
 * Returns what was reset: 0 nothing (a rule allows or denies it, or it has
 * no window), 1 its own key, 2 its aggregate, 3 its rule's shared budget.
 * o->at says which, o->ins a key given a slot.
 */
int model_reset_address(struct model *m, int v6, const __u8 a[16], __u16 port, __u64 count,
			struct model_out *o);
/* `charge ADDRESS [PORT] N`: 0 refused (an allow or deny rule), 1 its key, 3 its shared budget. */
int model_charge_address(struct model *m, int v6, const __u8 a[16], __u16 port, __u64 n,
			 struct model_out *o);
/*
 * The fleet agent writes @n as the share of layer @layer of the window that
 * limits address @a and @port (its key, else its aggregate; or its rule's
 * shared budget), for the window as it is (@stale: for one of its past windows,
 * which counts for nothing, and replaces the share). Nothing is written for
 * a window never started or closed. Returns as model_reset_address.
 */
int model_remote_address(struct model *m, int v6, const __u8 a[16], __u16 port, __u32 layer,
			 __u64 n, int stale, struct model_out *o);
/* `reset --all`: every key's windows closed, and every --shared rule's budget. */
void model_reset_all(struct model *m);

/* Key @a under @lsid in table @t, or NULL. */
struct model_key *model_find(struct model *m, int t, const __u8 a[16], __u32 lsid);
/* The table evicted key @i of table @t: its windows are forgotten. */
void model_forget(struct model *m, int t, int i);

/* The TAT of rate state @w at @now (0: none: it owes nothing). */
__u64 model_rate_tat(const struct model_win *w, __u64 now);
/* Whether the limits of address @a (its rule's, else the global ones) have a rate layer. */
int model_address_rate(const struct model *m, int v6, const __u8 a[16]);

/* Whether window @w of length @window_ns is over at @now. */
int model_over(const struct model_win *w, __u64 now, __u64 window_ns);
/*
 * The layers of limit set @lsid, and how many (0 if no limit in force
 * uses it: a deleted rule's, the global limits' before their number of
 * layers changed).
 */
__u32 model_limit_set(const struct model *m, __u32 lsid, const struct xdp_rl_layer **lay);
/* Whether table @t holds IPv6 keys. */
static inline int model_table_v6(int t)
{
	return t == MODEL_SRC6 || t == MODEL_AGG6;
}

/* Whether keys of kind @key (enum xdp_rl_key_kind) are the destination's address. */
static inline int model_key_dst(__u32 key)
{
	return key == XDP_RL_KEY_DST || key == XDP_RL_KEY_DST_DPORT;
}

/* Whether keys of kind @key hold the destination port. */
static inline int model_key_port(__u32 key)
{
	return key == XDP_RL_KEY_SRC_DPORT || key == XDP_RL_KEY_DST_DPORT;
}

/* How many bytes of a key table @t compares: 16 for IPv6, and for IPv4 with a port. */
static inline int model_key_len(const struct model *m, int t)
{
	return model_table_v6(t) || model_key_port(m->f.key) ? 16 : 4;
}

#endif
