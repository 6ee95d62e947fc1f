/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * bench.h - shared by the bench's BPF programs (tests/bench/NAME.bpf.c) and its
 * user side (tests/bench/bench_prog.c). Benchmark only: nothing here is part
 * of xdp-rl.
 */
#ifndef XDP_RL_BENCH_H
#define XDP_RL_BENCH_H

#include <linux/types.h>

/* Per-CPU slots in .bss arrays, indexed by CPU id & (BENCH_MAX_CPUS - 1). */
#define BENCH_MAX_CPUS 64

/*
 * A per-CPU packet counter on a cache line of its own, so two CPUs walking
 * their sources never share a line (a shared line would be charged to the
 * program under test).
 */
struct bench_ctr {
	__u64 n;
	__u64 pad[7];
};

/* wrap_stamped's record of one CPU's test run (wrap.bpf.c), a cache line of its own. */
struct bench_stamp {
	__u64 n;	   /* packets so far */
	__u64 first, last; /* bpf_ktime_get_ns() at the first and at the stamp_last-th */
	__u64 pad[5];
};

/* The frames the bench sends: Ethernet + IPv4/IPv6 + UDP, padded to this. */
#define BENCH_FRAME_LEN 64

/* The wrapper tail-calls the program in this slot of its PROG_ARRAY. */
#define BENCH_SLOT_TARGET 0

#endif /* XDP_RL_BENCH_H */
