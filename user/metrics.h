/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * metrics.h - the limiters of this network namespace in the Prometheus text
 * exposition format (version 0.0.4), for `xdp-rl metrics` and `xdp-rl
 * exporter`. Named as Prometheus's conventions say: xdp_rl_..._total
 * counters in base units (packets, bytes), a HELP and a TYPE line per
 * family, labels interface, verdict, family, rule (the rule's prefix) and
 * layer (0 for the first), never a source (`top` shows sources).
 *
 * The counters come from include/xdp_rl.h's XDP_RL_STATS, each under the
 * metric that list gives it; the rules' from struct xdp_rl_rule_hits; the
 * gauges from the live settings and the tables. A limiter whose interface
 * is gone (status: DETACHED) is left out: its counters no longer move, and
 * a new interface may have its name.
 */
#ifndef XDP_RL_METRICS_H
#define XDP_RL_METRICS_H

#include <stdio.h>

#include "options.h"

/* The content type of what metrics_write() writes. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/*
 * Write the metrics of every limiter in this namespace, or of the one on
 * @ifname (an error if it has none), to @f; the series of each rule only
 * with @rule_series (--rule-series each; the lists' are always there, two
 * a family, and the totals by verdict count every rule's packets). Reads
 * the maps and nothing else: no lock is taken. 0, or -1 after saying why
 * on stderr.
 */
int metrics_write(FILE *f, const char *ifname, int rule_series);
/* --rule-series each|none: the words, and the value metrics_write takes. */
extern const struct word rule_series_words[];

#endif
