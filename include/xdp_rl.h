/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xdp_rl.h - the one header shared by the XDP program (bpf/) and the xdp-rl
 * CLI (user/): the map and pin names, the per-source state word layout, the
 * live settings record and the per-CPU statistics.
 *
 * Only __u* types here, so that it compiles for the BPF target and for user
 * space alike.
 */
#ifndef XDP_RL_H
#define XDP_RL_H

#include <linux/types.h>

/* ---- Names ------------------------------------------------------------- */

/* Pinned objects live in PIN_ROOT/<netns-inode>/<ifindex>/ */
#define XDP_RL_PIN_ROOT		"xdp-rl"
#define XDP_RL_PIN_LINK		"link"
/* Map names are the pin names; BPF object names are cut at 15 chars. */
#define XDP_RL_MAP_CONFIG	"config"
#define XDP_RL_MAP_STATS	"stats"
#define XDP_RL_MAP_SRC4		"src4"
#define XDP_RL_MAP_SRC6		"src6"

/* ---- Limits ------------------------------------------------------------ */

#define XDP_RL_MAX_VLAN_DEPTH	2	/* 802.1ad outer + 802.1Q inner (QinQ) */

/*
 * Per-source state: two 64-bit words, updated only with BPF atomics.
 *
 *   expires_gen: window end in ns, rounded up to XDP_RL_EXP_GRAIN, with the
 *                window generation in the low XDP_RL_GEN_BITS bits.
 *   count_gen:   the window generation in the top XDP_RL_GEN_BITS bits and
 *                the window's count (packets or bytes, drops included) below.
 *
 * The generation ties the count to the window it belongs to; bpf/window.h
 * explains the protocol.
 */
#define XDP_RL_GEN_BITS		8
#define XDP_RL_GEN_MASK		((1ULL << XDP_RL_GEN_BITS) - 1)
#define XDP_RL_EXP_GRAIN	(1ULL << XDP_RL_GEN_BITS)	/* 256 ns */
#define XDP_RL_COUNT_BITS	(64 - XDP_RL_GEN_BITS)
#define XDP_RL_COUNT_MASK	((1ULL << XDP_RL_COUNT_BITS) - 1)
/*
 * Counts stop growing here so that an increment can never carry into the
 * generation bits (the largest increment is one frame, far below the gap).
 */
#define XDP_RL_COUNT_SAT	(1ULL << (XDP_RL_COUNT_BITS - 1))
/* The largest limit a user may set: below saturation, so it is exact. */
#define XDP_RL_LIMIT_MAX	(XDP_RL_COUNT_SAT >> 1)

struct xdp_rl_state {
	__u64 expires_gen;
	__u64 count_gen;
};

/* IPv6 sources are keyed by the address masked to --v6-prefix. */
struct xdp_rl_key6 {
	__u32 addr[4];		/* network byte order */
};

static inline __u64 xdp_rl_expires_ns(__u64 expires_gen)
{
	return expires_gen & ~XDP_RL_GEN_MASK;
}

static inline __u64 xdp_rl_count(__u64 count_gen)
{
	return count_gen & XDP_RL_COUNT_MASK;
}

/*
 * A window opened under a longer --window (or on the other clock, after a
 * switch between --per-key and --aligned) ends at once when it would end more
 * than the current length plus this slack from now. The slack must exceed
 * any gap between the time one CPU read and the time another CPU opened a
 * window with; a smaller one would let a CPU holding an older time end a
 * window that another CPU had just opened, and break exactness.
 */
#define XDP_RL_SHORTEN_SLACK_NS	1000000000ULL	/* 1s */

/*
 * Whether the window in @expires_gen is over at @now. Shared by the datapath
 * and by `get`/`top`, which show such a window as empty.
 */
static inline int xdp_rl_window_over(__u64 expires_gen, __u64 now, __u64 window_ns)
{
	__u64 end = xdp_rl_expires_ns(expires_gen);

	return now >= end || end - now > window_ns + XDP_RL_SHORTEN_SLACK_NS;
}

/* ---- Settings ---------------------------------------------------------- */

#define XDP_RL_F_DRY_RUN	(1U << 0)	/* count, never drop */
#define XDP_RL_F_ALIGNED	(1U << 1)	/* windows aligned to the epoch */

/* What `xdp-rl set` changes live; read by the datapath on every packet. */
struct xdp_rl_live {
	__u64 limit;		/* packets, or bytes with --bytes, per window */
	__u64 window_ns;	/* window length */
	__s64 tai_to_unix_ns;	/* CLOCK_REALTIME - CLOCK_TAI, for --aligned */
	__u32 flags;		/* XDP_RL_F_* */
	__u32 pad;
};

/* Fixed at load; the datapath has them as .rodata, this copy is for status. */
struct xdp_rl_fixed {
	__u64 max_sources;	/* entries in each of src4 and src6 */
	__u64 loaded_at_unix;	/* seconds */
	__u32 ifindex;
	__u32 bytes;		/* 1: count bytes, 0: count packets */
	__u32 v4_prefix;
	__u32 v6_prefix;
	__u32 xdp_mode;		/* XDP_FLAGS_DRV_MODE or XDP_FLAGS_SKB_MODE */
	__u32 pad;
	char ifname[16];
};

/*
 * The one element of the config map. `set` publishes new settings without a
 * torn read: it first writes slot[!active] (the datapath does not look at
 * it), then, in a second update, flips `active`, a single byte that changes.
 */
struct xdp_rl_config {
	struct xdp_rl_live slot[2];
	struct xdp_rl_fixed fixed;
	__u32 active;
	__u32 pad;
};

/* ---- Statistics (per-CPU array, one element) ----------------------------- */

enum xdp_rl_stat {
	XDP_RL_STAT_PASSED,		/* admitted by the limit */
	XDP_RL_STAT_DROPPED,		/* over the limit, dropped */
	XDP_RL_STAT_WOULD_DROP,		/* over the limit, passed: dry run */
	XDP_RL_STAT_NOT_IP,		/* not IPv4/IPv6: passed */
	XDP_RL_STAT_MALFORMED,		/* bad Ethernet/VLAN/IP header: dropped */
	XDP_RL_STAT_NEW_WINDOWS,	/* windows opened (first packet or turnover) */
	XDP_RL_STAT_TABLE_ERRORS,	/* could not insert a source: passed */
	XDP_RL_STAT_PASSED_BYTES,
	XDP_RL_STAT_DROPPED_BYTES,
	XDP_RL_STAT_MAX,
};

struct xdp_rl_stats {
	__u64 c[XDP_RL_STAT_MAX];
};

#endif /* XDP_RL_H */
