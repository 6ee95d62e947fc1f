// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* skel.c - the embedded XDP program, made ready to load (see skel.h). */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#if __has_include(<bpf/libbpf_version.h>) /* older libbpf has none */
#include <bpf/libbpf_version.h>
#endif

#include "skel.h"
#include "xdp_rl.skel.h"

/*
 * libbpf 1.0 or later (HACKING.md): its way of returning errors (a negative
 * errno, or NULL and errno), bpf_prog_test_run_opts, LIBBPF_OPTS and
 * bpf_link_create's options are what xdp-rl is written against.
 */
#if !defined(LIBBPF_MAJOR_VERSION) || LIBBPF_MAJOR_VERSION < 1
#error "xdp-rl needs libbpf 1.0 or later (Debian 12's libbpf-dev is 1.1): see HACKING.md"
#endif

/* The aggregate tables (--on-table-full aggregate): an eighth, at least 1024. */
#define AGG_MIN_SOURCES 1024

static void v4_mask(unsigned int prefix, __be32 *mask)
{
	*mask = prefix ? htonl(~0U << (32 - prefix)) : 0;
}

static void v6_mask(unsigned int prefix, __be32 mask[4])
{
	unsigned int i, bits;

	for (i = 0; i < 4; i++) {
		bits = prefix > 32 * i ? prefix - 32 * i : 0;
		v4_mask(bits > 32 ? 32 : bits, &mask[i]);
	}
}

struct bpf_map *skel_map(struct xdp_rl *skel, int map_id)
{
/* clang-format off */
#define SKEL_MAP(id, name, kind)		\
	case XDP_RL_MAP_##id:			\
		return skel->maps.name;
	switch (map_id) {
		XDP_RL_MAPS(SKEL_MAP)
	}
#undef SKEL_MAP
	/* clang-format on */
	return NULL;
}

int skel_prepare(struct xdp_rl *skel, const struct xdp_rl_fixed *f)
{
	__u64 agg = f->max_sources / 8 > AGG_MIN_SOURCES ? f->max_sources / 8 : AGG_MIN_SOURCES;
	/* In the order of the datapath's cfg_buckets: IPv4 tables even, IPv6 odd. */
	struct bpf_map *tables[] = { skel->maps.src4, skel->maps.src6, skel->maps.agg4,
				     skel->maps.agg6 };
	__u32 buckets[] = { xdp_rl_buckets(f->max_sources), xdp_rl_buckets(f->max_sources),
			    xdp_rl_buckets(agg), xdp_rl_buckets(agg) };
	__u32 *cfg_buckets = (__u32 *)skel->rodata->cfg_buckets;
	__u64 *drops_base = (__u64 *)skel->rodata->cfg_drops_base, ndrops = 0;
	__be32 m6[4], m4;
	size_t i;

	skel->rodata->cfg_bytes = f->bytes;
	skel->rodata->cfg_layers = f->max_layers;
	skel->rodata->cfg_seed = f->seed;
	v4_mask(f->v4_prefix, &m4);
	v6_mask(f->v6_prefix, m6);
	skel->rodata->cfg_v4_mask = m4;
	memcpy((void *)skel->rodata->cfg_v6_mask, m6, sizeof(m6));
	for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		cfg_buckets[i] = buckets[i];
		if (bpf_map__set_value_size(tables[i],
					    XDP_RL_BUCKET_SLOTS *
						    xdp_rl_slot_size(i & 1, f->max_layers)) ||
		    bpf_map__set_max_entries(tables[i], buckets[i]))
			return -1;
		/* A drop word per window of every slot (bpf/hot.h)... */
		drops_base[i] = ndrops;
		ndrops += (__u64)buckets[i] * XDP_RL_BUCKET_SLOTS * f->max_layers;
	}
	/* ... and of every shared budget. */
	drops_base[XDP_RL_T_SHARED] = ndrops;
	ndrops += (__u64)XDP_RL_MAX_RULES * XDP_RL_MAX_LAYERS;
	if (ndrops > 0xffffffffULL) {
		errno = E2BIG;
		return -1;
	}
	skel->rodata->cfg_hot_mask = xdp_rl_hot_entries(f->max_sources) - 1;
	/* A fleet's share of each window, laid out the same (include/xdp_rl.h). */
	return bpf_map__set_max_entries(skel->maps.hot, xdp_rl_hot_entries(f->max_sources)) ||
	       bpf_map__set_max_entries(skel->maps.drops, ndrops) ||
	       bpf_map__set_max_entries(skel->maps.remote, ndrops);
}

int skel_clock(struct xdp_rl *skel, struct xdp_rl_live *live)
{
	__u8 frame[ETH_ZLEN] = {};
	struct timespec res;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = sizeof(frame));

	live->tick_ns = 0;
	live->jiffies_base_ns = 0;
	/* The coarse clock's resolution is the tick (TICK_NSEC), as jiffies count it. */
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) || res.tv_sec || !res.tv_nsec ||
	    bpf_prog_test_run_opts(bpf_program__fd(skel->progs.clock_sync), &o))
		return -1;
	live->tick_ns = res.tv_nsec;
	live->jiffies_base_ns =
		(__s64)skel->bss->sync_coarse_ns - (__s64)(skel->bss->sync_jiffies * live->tick_ns);
	return 0;
}
