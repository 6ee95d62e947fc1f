// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * wrap.bpf.c - many sources under BPF_PROG_TEST_RUN.
 *
 * A test run with repeat > 1 runs one frame over and over. This wrapper
 * rewrites the frame's source address before each run, walking N sources
 * per CPU (base[cpu] + 0 .. N-1, host order), and then tail-calls the program
 * under test in slot BENCH_SLOT_TARGET of `progs`. Every program measured
 * (xdp-rl, the plain reference, bare XDP_DROP and XDP_PASS) pays the same
 * wrapper and tail call, so differences between them are the programs alone.
 *
 * The walk goes `step` sources at a time, modulo N (step coprime with N, so
 * every source comes once per N packets). Step 1 is the order sources are
 * first inserted in, which is also the order of their entries in memory (a
 * preallocated hash hands out elements in order): walking that way again
 * would let the CPU prefetch the next entry. A large step visits them in an
 * order unrelated to memory, as a real flood does.
 *
 * The frame is Ethernet + IPv4 or IPv6 at fixed offsets (no VLAN); for IPv6
 * the low 32 bits of the address change. Checksums are left alone: nothing
 * after XDP sees these frames.
 *
 * wrap_key (bench_prog keys, what --key costs) walks the same way, but
 * rewrites the destination address instead when `key_dst` is set, and in
 * IPv6 its bits 64..95 rather than its last 32: a key with a port keeps
 * at most /112 of the address (XDP_RL_KEY6_PORT_PREFIX), so the walk must
 * stay above the last 16 bits for every source to be a key of its own.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "bench.h"

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} progs SEC(".maps");

/* Written by user space between runs. */
__u32 nsrc = 1;			      /* sources per CPU, >= 1 */
__u32 step = 1;			      /* 1 .. nsrc, coprime with nsrc */
__u32 base[BENCH_MAX_CPUS];	      /* first source of each CPU, host order */
struct bench_ctr ctr[BENCH_MAX_CPUS]; /* next source index of each CPU */

/*
 * wrap_stamped: when each CPU's test run took its first packet and its
 * stamp_last-th (0-based), on the kernel's clock, so that the bench can see
 * how long two CPUs' runs ran at once. User space zeroes stamp[] and sets
 * stamp_last before each run.
 */
struct bench_stamp stamp[BENCH_MAX_CPUS];
__u64 stamp_last;

/* wrap_key: 1 to walk destinations instead of sources. */
__u32 key_dst;

/* @key: wrap_key's walk (key_dst, bits 64..95 of an IPv6 address); 0: wrap's. */
static __always_inline int walk(struct xdp_md *ctx, const int key)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 cpu = bpf_get_smp_processor_id() & (BENCH_MAX_CPUS - 1);
	struct ethhdr *eth = data;
	__u64 i = ctr[cpu].n, next = i + step;
	__be32 a;

	ctr[cpu].n = next >= nsrc ? next - nsrc : next;
	a = bpf_htonl(base[cpu] + (__u32)i);
	if (data + BENCH_FRAME_LEN > data_end)
		return XDP_ABORTED;
	if (key && key_dst) {
		if (eth->h_proto == bpf_htons(ETH_P_IP))
			((struct iphdr *)(eth + 1))->daddr = a;
		else
			((struct ipv6hdr *)(eth + 1))->daddr.in6_u.u6_addr32[2] = a;
	} else if (key) {
		if (eth->h_proto == bpf_htons(ETH_P_IP))
			((struct iphdr *)(eth + 1))->saddr = a;
		else
			((struct ipv6hdr *)(eth + 1))->saddr.in6_u.u6_addr32[2] = a;
	} else if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		((struct iphdr *)(eth + 1))->saddr = a;
	} else {
		((struct ipv6hdr *)(eth + 1))->saddr.in6_u.u6_addr32[3] = a;
	}
	bpf_tail_call(ctx, &progs, BENCH_SLOT_TARGET);
	return XDP_ABORTED;
}

SEC("xdp")
int wrap(struct xdp_md *ctx)
{
	return walk(ctx, 0);
}

SEC("xdp")
int wrap_key(struct xdp_md *ctx)
{
	return walk(ctx, 1);
}

SEC("xdp")
int wrap_stamped(struct xdp_md *ctx)
{
	struct bench_stamp *s = &stamp[bpf_get_smp_processor_id() & (BENCH_MAX_CPUS - 1)];
	__u64 n = s->n++;

	if (!n)
		s->first = bpf_ktime_get_ns();
	else if (n == stamp_last)
		s->last = bpf_ktime_get_ns();
	return walk(ctx, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
