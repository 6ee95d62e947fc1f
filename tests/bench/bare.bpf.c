// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bare.bpf.c - the floor of the XDP hook: programs that only return a
 * verdict. Built with the same flags as xdp-rl; the bench subtracts them.
 * bare_clock and bare_coarse also read a clock, to show what that costs;
 * bare_atomic writes a line every CPU writes; bare_capcheck makes the
 * check a packet makes when no capture runs.
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

char LICENSE[] SEC("license") = "Dual BSD/GPL";
