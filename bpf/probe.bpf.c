// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * probe.bpf.c - whether this kernel lets one XDP program replace a function
 * of another (BPF_PROG_TYPE_EXT, freplace): what libxdp's dispatcher needs
 * to run several XDP programs on one interface (user/lib/dispatch.c). A
 * dispatcher's slot is a global function its program calls; probe_ext
 * replaces probe_slot the same way, or the kernel says why not.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

__noinline int probe_slot(struct xdp_md *ctx)
{
	volatile int ret = XDP_PASS;

	return ctx ? ret : XDP_ABORTED;
}

SEC("xdp")
int probe_target(struct xdp_md *ctx)
{
	return probe_slot(ctx);
}

SEC("freplace/probe_slot")
int probe_ext(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
