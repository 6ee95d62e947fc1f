/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * skel.h - the embedded XDP program, made ready to load: its maps sized and
 * its load-time constants set. Shared by `xdp-rl load`, the unit tests and
 * the bench, so that all three run the program the same way.
 */
#ifndef XDP_RL_SKEL_H
#define XDP_RL_SKEL_H

#include "xdp_rl.h"

struct xdp_rl;
struct bpf_map;

/* The skeleton's map XDP_RL_MAP_<ID> (include/xdp_rl.h's XDP_RL_MAPS). */
struct bpf_map *skel_map(struct xdp_rl *skel, int map_id);

/*
 * Between xdp_rl__open() and xdp_rl__load(): size the source tables for
 * f->max_sources sources with room for f->max_layers layers, and set the
 * .rodata the datapath takes as constants (unit, prefixes, hash key).
 * Returns 0, or -1 with errno set.
 */
int skel_prepare(struct xdp_rl *skel, const struct xdp_rl_fixed *f);

/*
 * After load: measure the tick clock's base into @live (tick_ns and
 * jiffies_base_ns, see struct xdp_rl_live) by running the program's
 * clock_sync. Returns 0, or -1 with both left 0: the datapath then keeps the
 * precise clock.
 */
int skel_clock(struct xdp_rl *skel, struct xdp_rl_live *live);

#endif
