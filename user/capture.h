/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * capture.h - a limiter's capture (`xdp-rl capture`; bpf/capture.h is the
 * datapath's side): its settings and lease in the `capture` map, who holds
 * it, its counters per CPU, and how a captured packet's verdict is written
 * (the comment of its pcapng block).
 *
 * The lease: the capture process writes its filters, its pid and a new
 * gen, then until_ns a few seconds ahead on CLOCK_MONOTONIC_COARSE (the
 * datapath's bpf_ktime_get_coarse_ns), and renews it while it runs; it
 * sets until_ns to 0 when it stops. Killed, it leaves a lease that runs
 * out by itself: the datapath stops copying frames then, and a capture
 * whose lease ran out, or whose process is gone, is none (capture_running).
 */
#ifndef XDP_RL_CAPTURE_H
#define XDP_RL_CAPTURE_H

#include <stddef.h>

#include "limiter.h"
#include "options.h"
#include "xdp_rl.h"

/* How far ahead a capture sets its lease, and how often it renews it. */
#define CAPTURE_LEASE_NS (5ULL * 1000000000ULL)
#define CAPTURE_RENEW_NS (1ULL * 1000000000ULL)

/* The reasons' names (enum xdp_rl_cap_reason), as comments and `status` write them. */
extern const struct word capture_reason_words[];

/* Now on the lease's clock (CLOCK_MONOTONIC_COARSE), in ns. */
__u64 capture_now(void);

/* The capture map's element of @l, mapped read-write, or NULL after saying why (@what). */
struct xdp_rl_capture *capture_map(const struct limiter *l, const char *what);
void capture_unmap(struct xdp_rl_capture *c);
/* A copy of it: 0, or -1 with errno set. */
int capture_read(const struct limiter *l, struct xdp_rl_capture *out);

/*
 * Whether a capture runs under @c: its lease has not run out and its
 * process is alive (the same process: its start time is the one noted).
 */
int capture_running(const struct xdp_rl_capture *c);

/*
 * The frames each CPU copied for capture @gen and has not sent yet (its
 * last: the next packet would have sent it), judged now from what they
 * moved of the CPU's counters, and put through @c's filters and sampling,
 * as the datapath does (bpf/capture.h): @fn is called with each taken, and
 * @sum's counters (capture_counters') grow by what the datapath would have
 * counted. Run after the datapath stopped copying: 0, or -1 with errno set.
 */
int capture_pending(const struct limiter *l, const struct xdp_rl_capture *c,
		    struct xdp_rl_cap_cpu *sum,
		    void (*fn)(void *ctx, const struct xdp_rl_cap_record *rec), void *ctx);

/* The counters of every CPU, summed: 0, or -1 with errno set. */
int capture_counters(const struct limiter *l, struct xdp_rl_cap_cpu *sum);
/* Zero them (the capture starting, before its lease): 0, or -1 with errno set. */
int capture_counters_zero(const struct limiter *l);

/*
 * The comment of a captured packet (doc/operating.md has the format):
 *   xdp-rl verdict=REASON action=pass|drop [dry-run] [rule=ID|allow-list|deny-list] cpu=N
 */
void capture_comment(const struct xdp_rl_cap_meta *m, char *buf, size_t len);
/* What a capture takes: "dropped,denied from 198.18.0.0/15, 1 in 10, 96 bytes". */
void capture_describe(const struct xdp_rl_capture *c, char *buf, size_t len);

#endif
