/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * live.h - the live settings (struct xdp_rl_live) as a model: the words
 * they are spoken in, the settings derived from the others before they are
 * published, the clocks the datapath keeps time on, and their summary.
 */
#ifndef XDP_RL_LIVE_H
#define XDP_RL_LIVE_H

#include <stddef.h>
#include "xdp_rl.h"
#include "options.h"

/* --on-table-full: pass, drop, aggregate (enum xdp_rl_on_full). */
extern const struct word on_full_words[];

/* The clock the datapath keeps these settings' windows on, now, in ns. */
__u64 window_clock_ns(const struct xdp_rl_live *live);
/* CLOCK_REALTIME - CLOCK_TAI, for aligned windows. */
__s64 tai_to_unix_ns(void);
/*
 * Whether @live's aligned windows run on a TAI offset the kernel no longer
 * has (chrony or ntpd set it after the settings were published, or a leap
 * second came): the offset now in *now. Such settings are published again
 * with it (the fleet agent does each round, every change does), so that
 * window numbers stay those of Unix time, as every server of a fleet
 * counts them.
 */
int live_tai_stale(const struct xdp_rl_live *live, __s64 *now);
/* The name of the clock the datapath uses: "tai", "monotonic-coarse", "monotonic". */
const char *live_clock_name(const struct xdp_rl_live *live);

/*
 * Derived settings (the clock, the TAI offset, when the limits last
 * changed, the longest window in force, whether a selector is set, whether
 * a ban may hold), before publishing @live. XDP_RL_F_BANS is set while a
 * --ban is set (@live's or a rule's) and never cleared here: a ban made
 * before may still hold, and the datapath looks at bans only while it is
 * set. Every change starts from the running settings, so it stays; only a
 * load that makes new tables starts without it (loader.c). @rs says what of the rules matters; @prev is what runs now (NULL for a new
 * limiter); @rules_changed says the rules changed too.
 */
/* What of the rules the live settings depend on (rules.h: rules_summarize). */
struct rules_summary {
	__u64 min_window, max_window; /* their shortest and longest windows, 0: none */
	int any_select;		      /* one of them has a selector */
	int any_ban;		      /* one of them has a --ban */
	__u64 max_ban;		      /* ... and the longest, 0: none */
	int any_rate;		      /* one of them is a rate (--rate) */
};

void live_finish(struct xdp_rl_live *live, const struct rules_summary *rs,
		 const struct xdp_rl_live *prev, int rules_changed);

/*
 * Whether the first @na layers @a and the first @nb layers @b have one
 * shape: as many, and each a window or a rate as the other is. Keys
 * charged under one shape mean nothing under another: a change of shape
 * is a new limit set (include/xdp_rl.h), as a new number of layers is.
 */
int layers_same_shape(const struct xdp_rl_layer *a, __u32 na, const struct xdp_rl_layer *b,
		      __u32 nb);
/* Whether any of the first @n layers @l is a rate (--rate). */
int layers_any_rate(const struct xdp_rl_layer *l, __u32 n);

/* Human-readable summary: "1000 packets per 1s window, per key". */
void live_describe(const struct xdp_rl_live *live, int bytes, char *buf, size_t len);

#endif
