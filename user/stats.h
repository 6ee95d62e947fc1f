/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* stats.h - a limiter's counters (include/xdp_rl.h's XDP_RL_STATS), summed over CPUs. */
#ifndef XDP_RL_STATS_H
#define XDP_RL_STATS_H

#include "limiter.h"

/* Each counter's name, as `stats` shows it. */
extern const char *const stat_names[XDP_RL_STAT_MAX];
/* What each counts. */
extern const char *const stat_help[XDP_RL_STAT_MAX];

/* The counters of @l, summed over every CPU: 0, or -1 with errno. */
int stats_read(const struct limiter *l, struct xdp_rl_stats *sum);
/* What rule @id of @l matched and dropped, summed over every CPU: 0, or -1 with errno. */
int rule_hits_read(const struct limiter *l, __u32 id, struct xdp_rl_rule_hits *sum);

#endif
