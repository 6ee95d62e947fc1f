// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * plain.bpf.c - the reference xdp-rl is measured against: a straightforward
 * per-source fixed-window limiter as one would first write it. An LRU hash
 * per family keyed on the source address, bpf_ktime_get_ns() on every
 * packet, one atomic add per hit; a window that is over is reset with plain
 * stores (racy across CPUs, which xdp-rl is not).
 *
 * Parses Ethernet (no VLAN) and IPv4/IPv6; anything else passes.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

const volatile __u64 limit = 1;
const volatile __u64 window_ns = 1000000000ULL;

struct window {
	__u64 start;
	__u64 count;
};

struct key6 {
	__u32 a[4];
};

/* max_entries is set by the bench before load. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __be32);
	__type(value, struct window);
} plain4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, struct key6);
	__type(value, struct window);
} plain6 SEC(".maps");

static __always_inline __u64 hit(void *map, const void *key)
{
	__u64 now = bpf_ktime_get_ns();
	struct window *w = bpf_map_lookup_elem(map, key);

	if (!w) {
		struct window n = { .start = now, .count = 1 };

		bpf_map_update_elem(map, key, &n, BPF_ANY);
		return 1;
	}
	if (now - w->start >= window_ns) {
		w->start = now;
		w->count = 1;
		return 1;
	}
	return __sync_fetch_and_add(&w->count, 1) + 1;
}

SEC("xdp")
int plain(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6;
	struct iphdr *ip;
	struct key6 k6;
	__be32 k4;
	__u64 n;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > data_end)
			return XDP_DROP;
		k4 = ip->saddr;
		n = hit(&plain4, &k4);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > data_end)
			return XDP_DROP;
		__builtin_memcpy(&k6, &ip6->saddr, sizeof(k6));
		n = hit(&plain6, &k6);
	} else {
		return XDP_PASS;
	}
	return n > limit ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
