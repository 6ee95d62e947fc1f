/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sources.h - the windows a limiter keeps, as a model: a key's windows (a
 * source's, a /24 or /48 aggregate's) under the limit set it is charged
 * under, or a --shared rule's budget; found by address, walked for `top`
 * and `status`, and reset or charged through the program (admin.h).
 *
 * A key is a masked address and a limit set (include/xdp_rl.h): the global
 * limits' set, or a rule's. Sources under different limits keep separate
 * windows even when their masked addresses are the same; a key whose limit
 * set nothing uses any more (a deleted rule's, the global limits' before
 * their number of layers changed) limits nobody, and is not shown.
 */
#ifndef XDP_RL_SOURCES_H
#define XDP_RL_SOURCES_H

#include "limiter.h"
#include "options.h"
#include "rules.h"

/* The limits in force, by limit set id: the global ones and each rule's. */
struct limit_sets {
	const struct limiter *l;
	struct rule_spec *rules; /* per-source and --shared rules, by lsid */
	size_t n;
};

/*
 * A limit set: the limits the keys charged under one lsid get, the global
 * ones or a rule's (include/xdp_rl.h), copied out of the limiter. The one
 * type for them: what keys are shown under (get, top), what an address is
 * charged under (target_of), what the fleet agent syncs (fleet.h).
 */
struct limit_set {
	__u32 lsid;
	__u32 n; /* its layers */
	struct xdp_rl_layer lay[XDP_RL_MAX_LAYERS];
	int is_rule;	     /* a rule's, not the global limits: */
	struct ip_addr addr; /* its prefix */
	unsigned int prefix;
	__u32 rule_id;
	int shared; /* --shared: the rule's one budget, by rule id */
};

/* The global limits of @live, or the limits of rule @r, into @s. */
void limit_set_global(const struct xdp_rl_live *live, struct limit_set *s);
void limit_set_rule(const struct rule_spec *r, struct limit_set *s);

int limit_sets_load(const struct limiter *l, struct limit_sets *ls);
void limit_sets_free(struct limit_sets *ls);
/* The limits of @lsid into *set: 1, or 0 if no limit in force uses it. */
int limit_set_find(const struct limit_sets *ls, __u32 lsid, struct limit_set *set);

/* One key as shown to users: its windows, under the limits that apply to it. */
struct source {
	struct ip_addr key; /* its address (--key: the source's or the destination's) */
	unsigned int prefix;
	int has_port;	   /* --key with dport: the key holds a port, */
	unsigned int port; /* this one (0: packets whose port could not be read) */
	__u32 lsid;
	const char *kind;    /* NULL: a source; "aggregate"; "shared": a rule's budget */
	struct ip_addr rule; /* the rule whose limits apply, if any */
	unsigned int rule_prefix;
	int has_rule;
	__u32 nlayers;
	struct xdp_rl_layer lay[XDP_RL_MAX_LAYERS];
	__u64 count[XDP_RL_MAX_LAYERS]; /* 0 if the window has ended */
	/*
	 * How far count may be from what the window was offered: 0, or, for a
	 * window with no budget left whose drops are counted apart (bpf/hot.h)
	 * while it is flooded, up to XDP_RL_HOT_FLUSH packets per CPU.
	 */
	__u64 count_error_packets[XDP_RL_MAX_LAYERS];
	/*
	 * What the other servers of a fleet counted in the window, as the fleet
	 * agent last read it (xdp-rl fleet); 0 out of fleet mode.
	 */
	__u64 remote[XDP_RL_MAX_LAYERS];
	/*
	 * The window's own count, without the drops counted apart: in packets,
	 * what passed here (and a packet refused per racing CPU).
	 */
	__u64 charged[XDP_RL_MAX_LAYERS];
	/*
	 * Of count, what `charge` and `reset --count` put in (not packets), and
	 * of that what took budget below the limit (charges_read; 0 unread).
	 */
	__u64 by_command[XDP_RL_MAX_LAYERS];
	__u64 by_command_in_budget[XDP_RL_MAX_LAYERS];
	/*
	 * A rate layer (--rate, bpf/rate.h): count is the units the key owes
	 * (rounded up: 0 when it owes nothing, and its "window" is over);
	 * expires_in_ns when it will owe nothing; started_ns its episode's
	 * start. Then: the units it may send at once now (at most the burst),
	 * how long until a packet of one unit passes (0: now), and the drops
	 * of its episode (0 for a window: its drops are in count).
	 */
	__u64 tokens[XDP_RL_MAX_LAYERS];
	__u64 next_pass_ns[XDP_RL_MAX_LAYERS];
	__u64 dropped[XDP_RL_MAX_LAYERS];
	__u64 expires_in_ns[XDP_RL_MAX_LAYERS]; /* 0 if the window has ended */
	__u64 started_ns[XDP_RL_MAX_LAYERS];	/* on the window clock; 0 if none */
	__u64 seen_mono_ns;			/* last seen (CLOCK_MONOTONIC); 0: unknown */
	/*
	 * A ban in force (--ban, include/xdp_rl.h): when it ends, on the window
	 * clock, and how long it still holds; 0 and 0: none. Its window stays
	 * as the ban found it (a banned key is charged nothing), so a key under
	 * a ban may have no open window.
	 */
	__u64 ban_ends_ns, ban_ends_in_ns;
	/*
	 * Whether every open window began after the limits last changed: only
	 * then do a count and the limit say what passed and what was dropped.
	 */
	int same_limits;
};

/* Whether any window of @s is open. */
int source_open(const struct source *s);
/* Whether @s is under a ban now. */
int source_banned(const struct source *s);

/*
 * Fill @src's windows from @st (NULL: none) under the first @n of @lay (at
 * most @room), at @now; @since is when the limits last changed; @bytes: the
 * limiter counts bytes (a rate's burst: xdp_rl_rate_tau).
 */
void source_fill(struct source *src, const struct xdp_rl_state *st, const struct xdp_rl_layer *lay,
		 __u32 n, __u32 room, __u64 now, __u64 since, int bytes);

typedef int (*source_fn)(const struct source *src, void *ctx);

/*
 * Call @fn for every key of the table pinned as @id with a window still
 * open, or a ban in force, under limits in force. Returns 0, 1 if @fn asked to stop, -1 if the
 * table cannot be read (said on stderr).
 */
int foreach_source(const struct limiter *l, int id, source_fn fn, void *ctx);
/* The keys of the table pinned as @id with an open window (0 if it cannot be read). */
__u64 sources_open(const struct limiter *l, int id);
/* The budget of the --shared rule @r, read into @src; 0 if it has none. */
int shared_read(const struct limiter *l, const struct rule_spec *r, struct source *src);
/*
 * Call @fn for every window a limiter keeps open: sources, /24 and /48
 * aggregates, --shared rules' budgets (@all), or sources only. As
 * foreach_source returns.
 */
int foreach_window(const struct limiter *l, int all, source_fn fn, void *ctx);

/*
 * The windows open now with no budget left under the limits in force (their
 * keys are blocked until they end): how many in *@n, and in *@last_ns how
 * long until the last of them ends. 0, or -1 if a table cannot be read.
 */
int windows_exhausted(const struct limiter *l, __u64 *n, __u64 *last_ns);

/*
 * The most sources a table of @f holds at once, per family: its slots
 * (2 x --max-sources with --table buckets, which is sized to hold
 * --max-sources without evicting; --max-sources with lru). Sources over
 * this is the table's fill, at most 1.
 */
__u64 sources_capacity(const struct xdp_rl_fixed *f);

/* "packets" or "bytes": what the limiter counts. */
const char *limiter_unit(const struct limiter *l);

/*
 * What limits an address: a key's windows, a --shared rule's budget, a rule
 * outright, or nothing (a link-local source under --link-local exempt).
 */
enum target_kind { TARGET_KEY, TARGET_SHARED, TARGET_ALLOW, TARGET_DENY, TARGET_EXEMPT };

struct target {
	enum target_kind kind;
	int id;	    /* TARGET_KEY: PIN_SRC4 .. PIN_AGG6 */
	__u32 k[4]; /* the key, as the datapath keys it */
	__u32 lsid;
	struct ip_addr key; /* the key as an address, and its prefix */
	unsigned int prefix;
	int has_port; /* and its port (--key with dport) */
	unsigned int port;
	struct xdp_rl_rule rule; /* the rule, if has_rule */
	int has_rule;
	/*
	 * TARGET_ALLOW or _DENY by a list (lists.h) rather than a rule: its
	 * prefix in rule_addr and rule_prefix.
	 */
	int by_list;
	struct ip_addr rule_addr; /* the rule's prefix */
	unsigned int rule_prefix;
	struct limit_set set; /* the limits it is charged under (set.lsid: lsid) */
};

/*
 * The key address @a (the source's, or with --key dst the destination's)
 * and @port (with --key ...,dport; else ignored) are charged to under the
 * limits in force (not its aggregate).
 */
void target_of(const struct limiter *l, const struct ip_addr *a, unsigned int port,
	       struct target *t);
/* The /24 or /48 aggregate window @a and @port are charged to when refused a slot. */
void target_aggregate(const struct limiter *l, const struct ip_addr *a, unsigned int port,
		      struct target *t);
/*
 * The text of key @key/@prefix and its port if @has_port into @buf: as
 * fmt_prefix, then " port N".
 */
void fmt_key(const struct ip_addr *key, unsigned int prefix, int has_port, unsigned int port,
	     char *buf, size_t len);
/*
 * The windows of target @t into @src. 1 if it has a slot (or is a shared
 * budget), 0 if not, -1 if the table cannot be read (said on stderr).
 */
int target_read(const struct limiter *l, const struct target *t, struct source *src);

/*
 * The drops of window @gen of layer @layer of slot @index of table @t (enum
 * xdp_rl_table; XDP_RL_T_SHARED: @index is the rule id; an LRU element: its
 * hot index, struct mt_entry's id) counted apart from its count, because it
 * had no budget left (bpf/hot.h): exact, but for up to XDP_RL_HOT_FLUSH per
 * CPU while the window is being flooded. @word: the window's drops word if
 * its entry holds it (an LRU element's, as read), else NULL: the `drops`
 * map's. Read once per process; drops_forget() makes the next call read
 * them again.
 */
__u64 window_drops(const struct limiter *l, __u32 t, __u64 index, __u32 layer, __u64 gen,
		   const __u64 *word);
void drops_forget(void);
/*
 * What the other servers of a fleet counted in the same window (its word of
 * `remote` while it names generation @gen), 0 out of fleet mode. @word: the
 * window's fleet word if its entry holds it (an LRU element's, as read),
 * else NULL: the `remote` map's.
 */
__u64 window_remote(const struct limiter *l, __u32 t, __u64 index, __u32 layer, __u64 gen,
		    const __u64 *word);
/*
 * The ban in force on the key of slot @index of table @t (enum
 * xdp_rl_table, not XDP_RL_T_SHARED: a --shared budget is never banned),
 * whose windows are @st (its first @n), at @now on the window clock, into
 * @src's ban_ends_ns and ban_ends_in_ns. @words: the key's ban words if its
 * entry holds them (an LRU element's, as read), else NULL: the `bans` map's.
 */
void source_read_ban(const struct limiter *l, struct source *src, const struct xdp_rl_state *st,
		     __u32 n, __u32 t, __u64 index, const __u64 *words, __u64 now);
/*
 * Where each table's windows (and the --shared budgets') begin in `drops`,
 * `remote` and `bans` (xdp_rl_drops_index), as the program was told at load
 * (skel_tables: an LRU table's elements hold their own words, so it has
 * none there), and the words those maps need in *@need. 0, or -1 with errno.
 */
int window_words_base(const struct limiter *l, __u64 base[XDP_RL_T_SHARED + 1], __u64 *need);

/* Close every window: sources, aggregates and shared budgets; *n: how many were open. */
int forget_all(const struct limiter *l, __u64 *n);

/*
 * Record that a command put @n into the windows of target @t (`charge`;
 * `reset --count`, @fresh: the windows start afresh holding it), read
 * before as @before (NULL: @fresh), for `get` to show apart from packets.
 * 0, or -1 after saying why (the charge stands, shown as packets).
 */
int charges_note(const struct limiter *l, const struct target *t, const struct source *before,
		 __u64 n, int fresh);
/* Forget what commands put into the windows of @t (reset), or of every key (reset --all). */
void charges_forget(const struct limiter *l, const struct target *t);
void charges_clear(const struct limiter *l);
/* What commands put into @src, the windows of target @t, into its by_command fields. */
void charges_read(const struct limiter *l, const struct target *t, struct source *src);

#endif
