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
/* The name of the clock the datapath uses: "tai", "monotonic-coarse", "monotonic". */
const char *live_clock_name(const struct xdp_rl_live *live);

/*
 * Derived settings (the clock, the TAI offset, when the limits last
 * changed, the longest window in force), before publishing @live.
 * @rules_min_window and @rules_max_window are the shortest and longest
 * window of any rule (0: none); @prev is what runs now (NULL for a new
 * limiter); @rules_changed says the rules changed too.
 */
void live_finish(struct xdp_rl_live *live, __u64 rules_min_window, __u64 rules_max_window,
		 const struct xdp_rl_live *prev, int rules_changed);

/* Human-readable summary: "1000 packets per 1s window, per key". */
void live_describe(const struct xdp_rl_live *live, int bytes, char *buf, size_t len);

#endif
