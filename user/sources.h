/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sources.h - the windows a limiter keeps, as a model: a source's (or a
 * /24 or /48 aggregate's, or a --shared rule's) windows under the limits
 * that apply to it, found by address, walked for `top` and `status`, and
 * forgotten by `reset`.
 */
#ifndef XDP_RL_SOURCES_H
#define XDP_RL_SOURCES_H

#include "limiter.h"
#include "options.h"
#include "rules.h"

/* One key as shown to users: its windows, under the limits that apply to it. */
struct source {
	struct ip_addr key;
	unsigned int prefix;
	const char *kind;		/* NULL: a source; "aggregate"; "shared": a rule's budget */
	const struct xdp_rl_rule *rule;	/* the rule that matched, if any */
	__u32 nlayers;
	struct xdp_rl_layer lay[XDP_RL_MAX_LAYERS];
	__u64 count[XDP_RL_MAX_LAYERS];		/* 0 if the window has ended */
	__u64 expires_in_ns[XDP_RL_MAX_LAYERS];	/* 0 if the window has ended */
	/*
	 * Whether every open window began after the limits last changed: only
	 * then do a count and the limit say what passed and what was dropped.
	 */
	int same_limits;
};

/* Whether any window of @s is open. */
int source_open(const struct source *s);

/*
 * Fill @src's windows from @st (NULL: none) under the first @n of @lay (at
 * most @room), at @now; @since is when the limits last changed.
 */
void source_fill(struct source *src, const struct xdp_rl_state *st,
		 const struct xdp_rl_layer *lay, __u32 n, __u32 room, __u64 now, __u64 since);

/*
 * An entry of the table pinned as @id: a source (its key, and the layers of
 * its rule or the global ones), or in an aggregate table the /24 or /48
 * budget that new sources refused a slot share. The rule is the one for
 * @asked, the address as the datapath looks it up (a key is masked; the
 * sources in it may match other rules), or for the key if NULL; it is
 * copied into @rbuf.
 */
void source_from(struct source *src, int id, const void *key, const struct xdp_rl_state *st,
		 const struct limiter *l, __u64 now, const struct ip_addr *asked,
		 struct xdp_rl_rule *rbuf);

typedef int (*source_fn)(const struct source *src, void *ctx);

/*
 * Call @fn for every entry of the table pinned as @id with a window still
 * open. Returns 0, 1 if @fn asked to stop, -1 if the table cannot be read
 * (said on stderr).
 */
int foreach_source(const struct limiter *l, int id, source_fn fn, void *ctx);
/* The entries of the table pinned as @id with an open window (0 if it cannot be read). */
__u64 sources_open(const struct limiter *l, int id);
/* The budget of the --shared rule @r, read into @src; 0 if it has none. */
int shared_read(const struct limiter *l, const struct rule_spec *r, struct source *src);
/*
 * Call @fn for every window a limiter keeps open: sources, /24 and /48
 * aggregates, --shared rules' budgets (@all), or sources only. As
 * foreach_source returns.
 */
int foreach_window(const struct limiter *l, int all, source_fn fn, void *ctx);

/* "packets" or "bytes": what the limiter counts. */
const char *limiter_unit(const struct limiter *l);

/* The key @a maps to under the limiter's prefixes (masked in place); the table holding it. */
int source_key(const struct limiter *l, struct ip_addr *a, __u32 k[4]);
/* The /24 or /48 aggregate window @a is charged to when refused a slot; its table. */
int agg_key(const struct ip_addr *a, struct ip_addr *agg, __u32 k[4]);
/*
 * The windows of @k in the table pinned as @id, copied to @w (room for
 * XDP_RL_MAX_LAYERS); with @forget, closed as well (`reset`). 1 if it has
 * a slot, 0 if not, -1 if the table cannot be read (said on stderr).
 */
int source_windows(const struct limiter *l, int id, const __u32 k[4], struct xdp_rl_state *w,
		   int forget);

/* Close every window of the table pinned as @id; add those that were open to *n. */
int forget_table(const struct limiter *l, int id, __u64 *n);
/* Start the budget of the --shared rule @r afresh; add 1 to *n if it was open. */
int shared_forget(const struct limiter *l, const struct rule_spec *r, __u64 *n);
/* Close every window: sources, aggregates and shared budgets. -1 with errno on failure. */
int forget_all(const struct limiter *l, __u64 *n);

/*
 * After `set` left fewer layers in force (@from of @to): close the windows
 * of the layers dropped, so that a layer put back later starts empty.
 */
void close_dropped_layers(const struct limiter *l, __u32 from, __u32 to);

#endif
