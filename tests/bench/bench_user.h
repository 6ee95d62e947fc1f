/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * bench_user.h - the user side of make bench: helpers shared by the in-kernel
 * (bench_kern.c), end-to-end (bench_e2e.c) and memory (bench_mem.c) parts.
 */
#ifndef XDP_RL_BENCH_USER_H
#define XDP_RL_BENCH_USER_H

#include <stdio.h>
#include <linux/types.h>

#include "bench.h"

#define SEC_NS 1000000000ULL

struct frame {
	__u8 b[BENCH_FRAME_LEN];
	__u32 len;
};

/* An Ethernet + IPv4/UDP (v6 = 0) or IPv6/UDP frame of BENCH_FRAME_LEN bytes. */
void frame_build(struct frame *f, int v6, const __u8 dst_mac[6], const __u8 src_mac[6],
		 const char *src, const char *dst);

/* Fatal error: print "bench_prog: ..." and exit 1. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

int pin_cpu(int cpu);		   /* the calling thread */
int netns_enter(const char *name); /* the calling thread */
__u64 mono_ns(void);
__u64 thread_cpu_ns(void);
int parse_u64(const char *s, __u64 *v);
int parse_mac(const char *s, __u8 mac[6]);

/* A map's memory as the kernel accounts it: the memlock line of its fdinfo (bench_mem.c). */
unsigned long long map_memlock(int fd);

/* The subcommands. */
int cmd_kern(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_xdp(int argc, char **argv);
int cmd_mem(int argc, char **argv);
int cmd_line(int argc, char **argv);
int cmd_capture(int argc, char **argv);
int cmd_ban(int argc, char **argv);
int cmd_rate(int argc, char **argv);
int cmd_keys(int argc, char **argv);

#endif
