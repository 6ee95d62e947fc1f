// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bare.bpf.c - the floor of the XDP hook: programs that only return a
 * verdict. Built with the same flags as xdp-rl; the bench subtracts them.
 * bare_clock and bare_coarse also read a clock, to show what that costs;
 * bare_atomic writes a line every CPU writes.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

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

char LICENSE[] SEC("license") = "Dual BSD/GPL";
