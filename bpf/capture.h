/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * capture.h - `xdp-rl capture`: the frames the program judged, each with
 * its verdict and why, out to a ring buffer (`cap_ring`) while a capture's
 * lease runs (the `capture` map, include/xdp_rl.h: struct xdp_rl_capture).
 *
 * With no capture running, a packet costs one read of a word that is 0 at
 * its start (capture_on); the rest is out of line (capture_copy) and runs
 * only while the word is set. A lease that ran out (a capture killed) is
 * cleared by the next packet, so nothing is left to pay.
 *
 * Nothing runs at the verdict: xdp_rl's frame has no room left for a call
 * there (a call at the end of xdp_rl, or any value kept for one, takes it
 * past the 512 bytes of the chain down to table_insert, as Linux 6.1
 * counts: scripts/check-stack.py). So a frame is copied at its start, with
 * the CPU's counters, into this CPU's `cap_buf`, and sent at the start of
 * the CPU's next packet, when its verdict is known from what it moved of
 * the counters (xdp_rl_cap_judged); the capture finishes the last one of
 * each CPU itself when it stops (user/cmd/capture.c). The filters (the
 * verdict's reason, one source prefix, read again from the copy) and the
 * sampling (one in N per CPU, after the filters) apply then.
 */
#ifndef XDP_RL_CAPTURE_H
#define XDP_RL_CAPTURE_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "maps.h"

#ifndef READ_ONCE
#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))
#endif

/* What capture_send is told of a verdict, in one number; and its action. */
#define CAP_WHAT(reason, action, dry) ((__u32)(reason) | (__u32)(action) << 8 | (__u32)(dry) << 16)
#define CAP_ACTION(what)	      ((int)(((what) >> 8) & 0xff))
/* The bytes that hold the IP source, VLAN tags and all (xdp_rl_cap_source). */
#define CAP_HEADERS 64

/* Whether a capture may be running: its lease word is not 0 (inlined: no helper call). */
static __always_inline int capture_on(void)
{
	__u32 zero = 0;
	const struct xdp_rl_capture *cap = bpf_map_lookup_elem(&capture, &zero);

	return cap && READ_ONCE(cap->until_ns);
}

/* Whether --src takes a source @a (IPv4 in a[0]) of family @fam (0: no source read). */
static __always_inline int capture_src_takes(const struct xdp_rl_capture *cap, const __u32 *a,
					     __u32 fam)
{
	if (!cap->src_family)
		return 1;
	if (cap->src_family != fam || (a[0] & cap->src_mask[0]) != cap->src_addr[0])
		return 0;
	if (fam == 4)
		return 1;
	return (a[1] & cap->src_mask[1]) == cap->src_addr[1] &&
	       (a[2] & cap->src_mask[2]) == cap->src_addr[2] &&
	       (a[3] & cap->src_mask[3]) == cap->src_addr[3];
}

/*
 * The frame this CPU copied before (@rec), judged since: its verdict is
 * what the counters moved (xdp_rl_cap_judged). To the ring with it, if
 * the filters and the sampling take it.
 */
static __always_inline void capture_finish(const struct xdp_rl_capture *cap,
					   struct xdp_rl_cap_record *rec, struct xdp_rl_cap_cpu *c,
					   const struct xdp_rl_stats *st, __u32 dry_run)
{
	__u32 action, dry, reason, fam, size, a[4] = {};

	reason = xdp_rl_cap_judged(st->c, c->snap, dry_run, &action, &dry);
	if (reason >= XDP_RL_CAP_REASONS)
		return;
	c->checked++;
	if (!(cap->reasons & (1U << reason)))
		return;
	if (cap->src_family) {
		fam = xdp_rl_cap_source(rec->data, rec->meta.cap_len, a);
		if (!capture_src_takes(cap, a, fam))
			return;
	}
	c->matched++;
	/* One in `sample` per CPU, the first of each run of them. */
	if (c->skip) {
		c->skip--;
		return;
	}
	if (cap->sample > 1)
		c->skip = cap->sample - 1;
	rec->meta.rule = ~0U;
	rec->meta.reason = reason;
	rec->meta.action = action;
	rec->meta.dry_run = dry;
	rec->meta.cpu = bpf_get_smp_processor_id();
	size = rec->meta.cap_len;
	barrier_var(size);
	if (size > XDP_RL_CAP_SNAPLEN_MAX)
		return;
	size += sizeof(rec->meta);
	if (bpf_ringbuf_output(&cap_ring, rec, size, 0))
		c->failed++;
	else
		c->sent++;
}

/*
 * At the start of a packet, while capture_on: send the frame this CPU
 * copied before, now that it has been judged (capture_finish), then copy
 * this one's first snaplen bytes and the counters, for the next packet or
 * the capture's end to finish. A lease that ran out is cleared, so that a
 * capture killed leaves a 0 behind.
 */
static __noinline int capture_copy(struct xdp_md *ctx)
{
	struct xdp_rl_capture *cap;
	const struct xdp_rl_config *cfg;
	struct xdp_rl_cap_record *rec;
	const struct xdp_rl_stats *st;
	struct xdp_rl_cap_cpu *c;
	__u32 zero = 0, caplen, n;
	__u64 len, until;

	cap = bpf_map_lookup_elem(&capture, &zero);
	rec = bpf_map_lookup_elem(&cap_buf, &zero);
	c = bpf_map_lookup_elem(&cap_cpu, &zero);
	st = bpf_map_lookup_elem(&stats, &zero);
	cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cap || !rec || !c || !st || !cfg)
		return 0;
	until = READ_ONCE(cap->until_ns);
	if (!until)
		return 0;
	if (bpf_ktime_get_coarse_ns() >= until) {
		__sync_val_compare_and_swap(&cap->until_ns, until, 0);
		return 0;
	}
	if (c->copied && c->copied == cap->gen)
		capture_finish(cap, rec, c, st, live_of(cfg)->flags & XDP_RL_F_DRY_RUN);
	c->copied = 0;
	len = (__u64)((long)ctx->data_end - (long)ctx->data);
	caplen = len < cap->snaplen ? len : cap->snaplen;
	/*
	 * A frame the sampling will skip if the filters take it is never sent:
	 * only its counters are needed, to judge it, and its headers for --src
	 * (--sample N copies one frame in N whole).
	 */
	if (c->skip)
		caplen = !cap->src_family ? 0 : caplen < CAP_HEADERS ? caplen : CAP_HEADERS;
	if (caplen) {
		/* From 1 up, as Linux 6.1 sees it: a bound on caplen - 1, then + 1. */
		n = caplen - 1;
		barrier_var(n);
		if (n >= XDP_RL_CAP_SNAPLEN_MAX)
			return 0;
		caplen = n + 1;
		if (bpf_xdp_load_bytes(ctx, 0, rec->data, n + 1))
			return 0;
	}
	/* Only a frame the sampling may send needs its time (a clock read costs ~40 ns). */
	rec->meta.ts_ns = c->skip ? 0 : bpf_ktime_get_ns();
	rec->meta.pkt_len = len;
	rec->meta.cap_len = caplen;
	rec->meta.gen = cap->gen;
	__builtin_memcpy(c->snap, st->c, sizeof(c->snap));
	c->copied = cap->gen;
	return 0;
}

#endif /* XDP_RL_CAPTURE_H */
