// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bench_prog.c - the measuring binary behind `make bench` (scripts/bench.sh).
 *
 *   bench_prog kern [--quick] [--runs N] [--json FILE] [--only NAME]
 *                                    in-kernel cost per packet (BPF_PROG_TEST_RUN);
 *                                    --only: the steady rows whose name holds NAME,
 *                                    nothing else (to compare two builds, by hand)
 *   bench_prog gen --netns NS --dev IF --dst-mac MAC --sources N --base ADDR
 *                  --seconds S --cpu C[,C...]
 *                                    the end-to-end load generator, a thread per CPU
 *                                    (one JSON line)
 *   bench_prog xdp --netns NS --dev IF (drop|pass|off|plain LIMIT ENTRIES)
 *                                    attach a bare XDP program or the plain reference
 *                                    limiter (native mode), or detach
 *   bench_prog mem [--json FILE]     map memory per tracked source
 *   bench_prog line                  what a line both CPUs write costs now (one JSON line)
 *   bench_prog capture [--runs N] [--json FILE]
 *                                    what xdp-rl capture costs per packet (BPF_PROG_TEST_RUN)
 *   bench_prog ban [--quick] [--runs N] [--json FILE]
 *                                    what --ban costs per packet (BPF_PROG_TEST_RUN)
 *   bench_prog rate [--quick] [--runs N] [--json FILE]
 *                                    what a rate costs per packet against a window
 *   bench_prog keys [--quick] [--runs N] [--json FILE]
 *                                    what a --key beyond the source costs per packet
 *
 * Benchmark only; needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN for setns).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/libbpf.h>

#include "bench_user.h"

void die(const char *fmt, ...)
{
	va_list ap;

	fputs("bench_prog: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void frame_build(struct frame *f, int v6, const __u8 dst_mac[6], const __u8 src_mac[6],
		 const char *src, const char *dst)
{
	struct ethhdr *eth = (void *)f->b;
	struct udphdr *udp;

	memset(f, 0, sizeof(*f));
	f->len = BENCH_FRAME_LEN;
	memcpy(eth->h_dest, dst_mac, 6);
	memcpy(eth->h_source, src_mac, 6);
	if (!v6) {
		struct iphdr *ip = (void *)(eth + 1);

		eth->h_proto = htons(ETH_P_IP);
		ip->version = 4;
		ip->ihl = 5;
		ip->ttl = 64;
		ip->protocol = IPPROTO_UDP;
		ip->tot_len = htons(BENCH_FRAME_LEN - ETH_HLEN);
		if (inet_pton(AF_INET, src, &ip->saddr) != 1 ||
		    inet_pton(AF_INET, dst, &ip->daddr) != 1)
			die("bad IPv4 address '%s' or '%s'", src, dst);
		udp = (void *)(ip + 1);
		udp->len = htons(BENCH_FRAME_LEN - ETH_HLEN - sizeof(*ip));
	} else {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		eth->h_proto = htons(ETH_P_IPV6);
		ip6->version = 6;
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = 64;
		ip6->payload_len = htons(BENCH_FRAME_LEN - ETH_HLEN - sizeof(*ip6));
		if (inet_pton(AF_INET6, src, &ip6->saddr) != 1 ||
		    inet_pton(AF_INET6, dst, &ip6->daddr) != 1)
			die("bad IPv6 address '%s' or '%s'", src, dst);
		udp = (void *)(ip6 + 1);
		udp->len = ip6->payload_len;
	}
	/* UDP to the discard port; checksum 0 (none) for IPv4. */
	udp->source = htons(40000);
	udp->dest = htons(9);
}

int pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

int netns_enter(const char *name)
{
	char path[256];
	int fd, r;

	if (strchr(name, '/'))
		return -EINVAL;
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = setns(fd, CLONE_NEWNET) ? -errno : 0;
	close(fd);
	return r;
}

__u64 mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * SEC_NS + t.tv_nsec;
}

__u64 thread_cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * SEC_NS + t.tv_nsec;
}

int parse_u64(const char *s, __u64 *v)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || *end ? -1 : 0;
}

int parse_mac(const char *s, __u8 mac[6])
{
	unsigned int m[6];
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
		return -1;
	for (i = 0; i < 6; i++) {
		if (m[i] > 0xff)
			return -1;
		mac[i] = m[i];
	}
	return 0;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN && getenv("BENCH_VERBOSE"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int, char **);
	} cmds[] = {
		{ "kern", cmd_kern }, { "gen", cmd_gen },   { "xdp", cmd_xdp },
		{ "mem", cmd_mem },   { "line", cmd_line }, { "capture", cmd_capture },
		{ "ban", cmd_ban },   { "rate", cmd_rate }, { "keys", cmd_keys },
	};
	size_t i;

	libbpf_set_print(libbpf_quiet);
	if (argc < 2)
		goto usage;
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].run(argc - 1, argv + 1);
usage:
	fprintf(stderr,
		"usage: bench_prog kern|gen|xdp|mem|line|capture|ban|rate|keys ... (see tests/bench/bench_prog.c)\n");
	return 2;
}
