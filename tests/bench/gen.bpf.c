// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * gen.bpf.c - the end-to-end load generator. Run by BPF_PROG_TEST_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES inside the sender namespace: each run takes the
 * template IPv4/UDP frame, gives it the next of `nsrc` source addresses
 * (base .. base + nsrc - 1, per CPU counter), fixes the IPv4 header checksum
 * and redirects it out of the sender's veth, so the kernel makes the flood
 * itself (no socket, no copy from user space).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "bench.h"

const volatile __u32 tx_ifindex = 0;
const volatile __u32 nsrc = 1;
const volatile __u32 base = 0; /* host order */

struct bench_ctr ctr[BENCH_MAX_CPUS];

SEC("xdp")
int gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 cpu = bpf_get_smp_processor_id() & (BENCH_MAX_CPUS - 1);
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	__u64 i = ctr[cpu].n;
	__u16 *w = (void *)ip;
	__u32 sum = 0;
	int k;

	ctr[cpu].n = i + 1 >= nsrc ? 0 : i + 1;
	if ((void *)(ip + 1) > data_end)
		return XDP_ABORTED;
	ip->saddr = bpf_htonl(base + (__u32)i);
	ip->check = 0;
#pragma unroll
	for (k = 0; k < (int)(sizeof(*ip) / 2); k++)
		sum += w[k];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip->check = ~sum & 0xffff;
	return bpf_redirect(tx_ifindex, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
