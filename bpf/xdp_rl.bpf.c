// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xdp_rl.bpf.c - per-source fixed-window rate limiter at the XDP hook.
 *
 * Each frame is parsed down to its IP source address, the address is masked
 * to a prefix, and the prefix's window counter is charged one packet (or the
 * frame length with --bytes). A frame whose charge takes the window's count
 * past the limit is dropped before the kernel allocates anything for it.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xdp_rl.h"
#include "parse.h"
#include "window.h"

/* Fixed at load time by xdp-rl; the verifier prunes what they rule out. */
const volatile __u32 cfg_bytes = 0;
const volatile __be32 cfg_v4_mask = 0xffffffff;
const volatile __be32 cfg_v6_mask[4] = { 0xffffffff, 0xffffffff, 0, 0 };
/* Tests only: take the time from fake_now_ns instead of the kernel clock. */
const volatile __u32 cfg_fake_clock = 0;
__u64 fake_now_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_rl_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_rl_stats);
} stats SEC(".maps");

/* max_entries is set by xdp-rl from --max-sources before load. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __be32);
	__type(value, struct xdp_rl_state);
} src4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, struct xdp_rl_key6);
	__type(value, struct xdp_rl_state);
} src6 SEC(".maps");

static __always_inline __u64 clock_now(int aligned)
{
	if (cfg_fake_clock)
		return fake_now_ns;
	return aligned ? bpf_ktime_get_tai_ns() : bpf_ktime_get_ns();
}

/*
 * The end of a window opened at @now. Per key: one window length from now.
 * Aligned: the next multiple of the window length since the Unix epoch,
 * expressed on the TAI clock that @now comes from.
 */
static __always_inline __u64 next_end(const struct xdp_rl_live *live,
				      __u64 now, int aligned)
{
	__u64 unix_ns;

	if (!aligned)
		return now + live->window_ns;
	unix_ns = now + live->tai_to_unix_ns;
	return (unix_ns / live->window_ns + 1) * live->window_ns - live->tai_to_unix_ns;
}

/*
 * Charge @inc to the source @key in @map and return the window's count with
 * the charge included, or 0 if the source could not be put in the table.
 */
static __always_inline __u64 charge(void *map, const void *key,
				    const struct xdp_rl_live *live, __u64 inc,
				    struct xdp_rl_stats *st)
{
	int aligned = live->flags & XDP_RL_F_ALIGNED;
	__u64 now = clock_now(aligned);
	struct xdp_rl_state *s, first;
	int opened = 0;
	__u64 count;
	long err;

	s = bpf_map_lookup_elem(map, key);
	if (!s) {
		first = window_first(next_end(live, now, aligned), inc);
		err = bpf_map_update_elem(map, key, &first, BPF_NOEXIST);
		if (!err) {
			st->c[XDP_RL_STAT_NEW_WINDOWS]++;
			return inc;
		}
		/* -EEXIST: another CPU inserted it first; join its window. */
		s = bpf_map_lookup_elem(map, key);
		if (!s) {
			st->c[XDP_RL_STAT_TABLE_ERRORS]++;
			return 0;
		}
	}
	count = window_hit(s, now, live->window_ns, next_end(live, now, aligned),
			   inc, &opened);
	if (opened)
		st->c[XDP_RL_STAT_NEW_WINDOWS]++;
	return count;
}

SEC("xdp")
int xdp_rl(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct cursor c = { .pos = data, .end = data_end };
	__u64 len = data_end - data, inc, count;
	const struct xdp_rl_live *live;
	struct xdp_rl_config *cfg;
	struct xdp_rl_stats *st;
	struct in6_addr *a6;
	struct xdp_rl_key6 k6;
	__u32 zero = 0;
	__be16 proto;
	__be32 k4;

	cfg = bpf_map_lookup_elem(&config, &zero);
	st = bpf_map_lookup_elem(&stats, &zero);
	if (!cfg || !st)
		return XDP_PASS;
	live = &cfg->slot[cfg->active & 1];
	inc = cfg_bytes ? len : 1;

	if (parse_eth(&c, &proto) < 0)
		goto malformed;

	if (proto == bpf_htons(ETH_P_IP)) {
		if (parse_ipv4(&c, &k4) < 0)
			goto malformed;
		k4 &= cfg_v4_mask;
		count = charge(&src4, &k4, live, inc, st);
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		if (parse_ipv6(&c, &a6) < 0)
			goto malformed;
		k6.addr[0] = a6->in6_u.u6_addr32[0] & cfg_v6_mask[0];
		k6.addr[1] = a6->in6_u.u6_addr32[1] & cfg_v6_mask[1];
		k6.addr[2] = a6->in6_u.u6_addr32[2] & cfg_v6_mask[2];
		k6.addr[3] = a6->in6_u.u6_addr32[3] & cfg_v6_mask[3];
		count = charge(&src6, &k6, live, inc, st);
	} else {
		st->c[XDP_RL_STAT_NOT_IP]++;
		return XDP_PASS;
	}

	if (count <= live->limit) {
		st->c[XDP_RL_STAT_PASSED]++;
		st->c[XDP_RL_STAT_PASSED_BYTES] += len;
		return XDP_PASS;
	}
	if (live->flags & XDP_RL_F_DRY_RUN) {
		st->c[XDP_RL_STAT_WOULD_DROP]++;
		return XDP_PASS;
	}
	st->c[XDP_RL_STAT_DROPPED]++;
	st->c[XDP_RL_STAT_DROPPED_BYTES] += len;
	return XDP_DROP;

malformed:
	st->c[XDP_RL_STAT_MALFORMED]++;
	return (live->flags & XDP_RL_F_DRY_RUN) ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
