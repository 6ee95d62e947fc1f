// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* stats.c - a limiter's counters (see stats.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "stats.h"

/* clang-format off */
#define STAT_NAME(id, name, help, metric) [XDP_RL_STAT_##id] = #name,
const char *const stat_names[XDP_RL_STAT_MAX] = { XDP_RL_STATS(STAT_NAME) };
#undef STAT_NAME

#define STAT_HELP(id, name, help, metric) [XDP_RL_STAT_##id] = help,
const char *const stat_help[XDP_RL_STAT_MAX] = { XDP_RL_STATS(STAT_HELP) };
#undef STAT_HELP
/* clang-format on */

int stats_read(const struct limiter *l, struct xdp_rl_stats *sum)
{
	int ncpu = libbpf_num_possible_cpus(), c, i;
	struct xdp_rl_stats *per;
	__u32 zero = 0;

	if (ncpu <= 0) {
		errno = ncpu ? -ncpu : EINVAL;
		return -1;
	}
	per = calloc(ncpu, sizeof(*per));
	if (!per)
		return -1;
	if (bpf_map_lookup_elem(l->fd[PIN_STATS], &zero, per)) {
		free(per);
		return -1;
	}
	memset(sum, 0, sizeof(*sum));
	for (c = 0; c < ncpu; c++)
		for (i = 0; i < XDP_RL_STAT_MAX; i++)
			sum->c[i] += per[c].c[i];
	free(per);
	return 0;
}

int rule_hits_read(const struct limiter *l, __u32 id, struct xdp_rl_rule_hits *sum)
{
	int ncpu = libbpf_num_possible_cpus(), c;
	struct xdp_rl_rule_hits *per;

	if (ncpu <= 0) {
		errno = ncpu ? -ncpu : EINVAL;
		return -1;
	}
	per = calloc(ncpu, sizeof(*per));
	if (!per)
		return -1;
	if (bpf_map_lookup_elem(l->fd[PIN_RULE_HITS], &id, per)) {
		free(per);
		return -1;
	}
	memset(sum, 0, sizeof(*sum));
	for (c = 0; c < ncpu; c++) {
		sum->packets += per[c].packets;
		sum->dropped += per[c].dropped;
		sum->would_drop += per[c].would_drop;
	}
	free(per);
	return 0;
}
