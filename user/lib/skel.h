/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * skel.h - the embedded XDP program, made ready to load: its maps sized and
 * its load-time constants set. Shared by `xdp-rl load`, the unit tests and
 * the bench, so that all three run the program the same way.
 */
#ifndef XDP_RL_SKEL_H
#define XDP_RL_SKEL_H

#include <stddef.h>

#include "xdp_rl.h"

struct xdp_rl;
struct bpf_map;

/* The skeleton's map XDP_RL_MAP_<ID> (include/xdp_rl.h's XDP_RL_MAPS). */
struct bpf_map *skel_map(struct xdp_rl *skel, int map_id);

/*
 * The layout of a limiter's tables under @f: the entries of src4, src6,
 * agg4 and agg6 (buckets, or LRU elements: enum xdp_rl_table's order), and
 * where each table's windows and the shared budgets' begin in the `drops`
 * and `remote` maps (an LRU table's words are in its elements: none).
 */
struct skel_tables {
	__u32 entries[4];
	__u64 drops_base[XDP_RL_T_SHARED + 1];
	__u64 ndrops; /* words in `drops` and `remote` */
};

void skel_tables(const struct xdp_rl_fixed *f, struct skel_tables *t);

/*
 * Between xdp_rl__open() and xdp_rl__load(): size the source tables for
 * f->max_sources sources with room for f->max_layers layers, and set the
 * .rodata the datapath takes as constants (unit, prefixes, hash key,
 * table). With f->table XDP_RL_TABLE_LRU the source tables are LRU hashes
 * made here, with the BTF of their keys and values (bpftool map dump names
 * every field), and given to the skeleton in place of its arrays. Returns
 * 0, or -1 with errno set.
 */
int skel_prepare(struct xdp_rl *skel, const struct xdp_rl_fixed *f);

/*
 * Flags of the LRU hashes skel_prepare makes: 0, the kernel's one LRU list
 * shared by every CPU (doc/tables.md says why); the bench sets
 * BPF_F_NO_COMMON_LRU to compare.
 */
extern __u32 skel_lru_flags;

/*
 * After load: measure the tick clock's base into @live (tick_ns and
 * jiffies_base_ns, see struct xdp_rl_live) by running the program's
 * clock_sync. Returns 0, or -1 with both left 0: the datapath then keeps the
 * precise clock.
 */
int skel_clock(struct xdp_rl *skel, struct xdp_rl_live *live);

/*
 * The oldest kernel the program loads on: the newest helper it calls,
 * bpf_ktime_get_tai_ns (the clock of --aligned windows), came in Linux 6.1.
 * Tested there and on later kernels (make test-kernels).
 */
#define SKEL_KERNEL_MIN "6.1"

/*
 * After a failed load: what this kernel lacks that the program needs, in
 * one clause for the error message (", this kernel (5.15.0-91) has no
 * bpf_ktime_get_tai_ns: xdp-rl needs Linux 6.1 or later"), or "" if it has
 * what was probed, and the refusal is something else (the verifier's log
 * says what: -vv). skel_floor_text() is the same for a kernel @release that
 * has the helper (@has_helper) or not.
 */
const char *skel_floor(char *buf, size_t len);
const char *skel_floor_text(const char *release, int has_helper, char *buf, size_t len);

#endif
