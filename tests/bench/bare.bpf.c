// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bare.bpf.c - the floor of the XDP hook: programs that only return a
 * verdict. Built with the same flags as xdp-rl; the bench subtracts them.
 * bare_clock and bare_coarse also read a clock, to show what that costs;
 * bare_atomic writes a line every CPU writes; bare_capcheck makes the
 * check a packet makes when no capture runs; bare_line keeps one cache
 * line per source, the least any exact per-source limiter touches.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

SEC("xdp")
int bare_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

SEC("xdp")
int bare_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

/* The floor plus one read of the clock a per-key window needs. */
__u64 clock_sink;

SEC("xdp")
int bare_clock(struct xdp_md *ctx)
{
	clock_sink = bpf_ktime_get_ns();
	return XDP_DROP;
}

/* ... or of the clock as of the last tick (CLOCK_MONOTONIC_COARSE). */
SEC("xdp")
int bare_coarse(struct xdp_md *ctx)
{
	clock_sink = bpf_ktime_get_coarse_ns();
	return XDP_DROP;
}

/* ... or of the tick count, which the verifier inlines: xdp-rl's tick clock. */
SEC("xdp")
int bare_jiffies(struct xdp_md *ctx)
{
	clock_sink = bpf_jiffies64();
	return XDP_DROP;
}

/*
 * The floor plus one atomic add to a cache line every CPU writes: on two
 * CPUs, what a line bouncing between them costs at that moment (on a VM,
 * it depends on where the host runs the two vCPUs).
 */
__u64 hot_line[8] __attribute__((aligned(64)));

SEC("xdp")
int bare_atomic(struct xdp_md *ctx)
{
	__sync_fetch_and_add(&hot_line[0], 1);
	return XDP_DROP;
}

/*
 * The floor plus what xdp-rl does on every packet when no capture runs
 * (bpf/capture.h capture_on): one read of the lease word of an mmapable
 * one-element array, 0 here, and a branch not taken.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} cap_lease SEC(".maps");

static __attribute__((noinline)) int cap_taken(struct xdp_md *ctx)
{
	clock_sink = bpf_ktime_get_coarse_ns();
	return 0;
}

SEC("xdp")
int bare_capcheck(struct xdp_md *ctx)
{
	__u32 zero = 0;
	const __u64 *until = bpf_map_lookup_elem(&cap_lease, &zero);

	if (until && *(volatile const __u64 *)until)
		cap_taken(ctx);
	return XDP_DROP;
}

/*
 * The floor of a per-source limiter: parse Ethernet and IPv4 or IPv6, find
 * the source's own 64-byte line in an array as large as xdp-rl's table (a
 * multiplicative hash of the address, folded to 32 bits; collisions are not
 * resolved), add one to it and drop past the limit. No clock, no window, no
 * tag to compare, no counters: what is left between it and bare XDP_DROP is
 * the header's read and the one line per source that a flood of many keeps
 * out of the caches. line_shift (32 - log2 of the entries, a power of two)
 * and line_limit are set before load.
 */
struct line {
	__u64 count;
	__u64 pad[7];
};

/* Mmapable, so its values start on a page, as xdp-rl's buckets do. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct line);
} lines SEC(".maps");

const volatile __u32 line_shift = 32;
const volatile __u64 line_limit = 1;

/* One line per source: the source's line, charged; XDP_ABORTED if none. */
static __always_inline int line_charge(struct xdp_md *ctx, __u64 *n)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6;
	struct iphdr *ip;
	struct line *l;
	__u32 a, i;
	__u64 h;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > data_end)
			return XDP_PASS;
		a = ip->saddr;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > data_end)
			return XDP_PASS;
		a = ip6->saddr.in6_u.u6_addr32[0] ^ ip6->saddr.in6_u.u6_addr32[1] ^
		    ip6->saddr.in6_u.u6_addr32[2] ^ ip6->saddr.in6_u.u6_addr32[3];
	} else {
		return XDP_PASS;
	}
	/* Fibonacci hashing: the product's top bits, which every address bit moves. */
	h = bpf_ntohl(a) * 0x9e3779b1u;
	i = h >> line_shift;
	l = bpf_map_lookup_elem(&lines, &i);
	if (!l)
		return XDP_PASS;
	*n = __sync_fetch_and_add(&l->count, 1);
	return XDP_ABORTED;
}

SEC("xdp")
int bare_line(struct xdp_md *ctx)
{
	__u64 n;
	int v = line_charge(ctx, &n);

	if (v != XDP_ABORTED)
		return v;
	return n < line_limit ? XDP_PASS : XDP_DROP;
}

/*
 * The same floor made as long as xdp-rl's program is with few sources:
 * LINE_PAD rounds of four multiplications on the add's result, after it
 * (so after the line's miss, as xdp-rl's checks of the count are). With
 * many sources a program this short lets the CPU start the next packet's
 * cache miss before the last one's is served, which a longer one does not;
 * this one shows roughly what one line per source costs a program of
 * xdp-rl's length (LINE_PAD is set so that both cost about the same over
 * bare XDP_DROP with 1 000 sources, on the machine the bench was written
 * on: part 1 shows both, to compare).
 */
#define LINE_PAD 12

SEC("xdp")
int bare_line_long(struct xdp_md *ctx)
{
	__u64 n, x0, x1, x2, x3;
	int v = line_charge(ctx, &n), k;

	if (v != XDP_ABORTED)
		return v;
	x0 = n;
	x1 = n + 1;
	x2 = n + 2;
	x3 = n + 3;
#pragma unroll
	for (k = 0; k < LINE_PAD; k++) {
		x0 = x0 * 5 + k;
		x1 = x1 * 7 + k;
		x2 = x2 * 9 + k;
		x3 = x3 * 11 + k;
		/* Kept as computed: the compiler may not fold the rounds away. */
		asm volatile("" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3));
	}
	if ((x0 ^ x1 ^ x2 ^ x3) == 0)
		clock_sink = x0;
	return n < line_limit ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
