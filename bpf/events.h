/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * events.h - the packet that takes a window over its limit.
 *
 * Every charge is one fetch-and-add whose result the packet is decided on
 * (window.h, I1): each packet of a window sees a distinct running total, so
 * exactly one sees the count go from at most the limit to past it (old <=
 * limit < old + inc, --bytes too). That packet, and no other, calls
 * event_over: in the fast path (limit_fast), in the general path per layer
 * (layers_charge notes the layer that refused with that crossing in struct
 * charge; charge_in calls), a --shared budget's too, and the --new-sources
 * cap (new_source_take). Drops on a window already over (refused on a read, hot.h)
 * never come here. A charge taken back (the slot passed to another key
 * under the packet) calls nothing; in fleet mode the crossing is judged on
 * the count with the fleet's share, which may move between packets, so a
 * window may then be reported twice or not at all.
 *
 * event_over counts the crossing (over_limit, always), and if a reader
 * holds the lease (struct xdp_rl_ev_lease: CLOCK_MONOTONIC_COARSE before
 * until_ns) writes a record into the `events` ring (events_lost when the
 * ring is full). With no reader that is one read of a zero word, on this
 * rare path only.
 */
#ifndef XDP_RL_EVENTS_H
#define XDP_RL_EVENTS_H

#include "maps.h"
#include "pos.h"
#include "window.h"

/*
 * What event_over says of a crossing beside the key, in one number (a
 * global function takes five arguments): the family (4 or 6, 0 for the
 * --new-sources cap), the layer, the kind (enum xdp_rl_event_kind) and the
 * rule id (XDP_RL_EV_NO_RULE: the global limits).
 */
/* ... and, at this bit, whether the crossing banned its key (ban.h). */
#define EV_BANNED_BIT 24
/*
 * A rate's first refusal (rate.h) reports its burst as the count, with
 * this bit set (no window's count comes near it): the record says so.
 */
#define EV_COUNT_RATE (1ULL << 63)
#define EV_INFO(fam, layer, kind, rule)                                           \
	((__u64)(fam) | (__u64)((layer)&0xff) << 8 | (__u64)((kind)&0xff) << 16 | \
	 (__u64)(__u32)(rule) << 32)

/*
 * A window of @limit and @window_ns went over its limit under this packet,
 * its count now @count: count it, and tell the reader if there is one.
 * Global and out of line: its frame stays off its callers' (check-stack.py),
 * and the verifier checks it once.
 */
__noinline int event_over(const struct table_key *key, __u64 info, __u64 limit, __u64 window_ns,
			  __u64 count)
{
	struct xdp_rl_ev_lease *lease;
	struct xdp_rl_stats *st;
	struct xdp_rl_event *ev;
	__u32 zero = 0;
	__u64 now;

	st = bpf_map_lookup_elem(&stats, &zero);
	if (st)
		st->c[XDP_RL_STAT_OVER_LIMIT]++;
	lease = bpf_map_lookup_elem(&ev_lease, &zero);
	if (!lease || !key || !READ_ONCE(lease->until_ns))
		return 0;
	now = bpf_ktime_get_coarse_ns();
	if (now >= READ_ONCE(lease->until_ns))
		return 0;
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		if (st)
			st->c[XDP_RL_STAT_EVENTS_LOST]++;
		return 0;
	}
	ev->key[0] = key->k[0];
	ev->key[1] = key->k[1];
	ev->key[2] = key->k[2];
	ev->key[3] = key->k[3];
	ev->time_ns = now;
	ev->limit = limit;
	ev->window_ns = window_ns;
	ev->count = count & ~EV_COUNT_RATE;
	ev->family = info & 0xff;
	ev->layer = (info >> 8) & 0xff;
	ev->banned = ((info >> EV_BANNED_BIT) & XDP_RL_EV_BANNED) |
		     (count & EV_COUNT_RATE ? XDP_RL_EV_RATE : 0);
	ev->kind = (info >> 16) & 0xff;
	ev->rule = info >> 32;
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

/*
 * Whether a charge of @inc that left a window's count (with the fleet's
 * share) at @count took it over @limit: the one packet per window that does.
 * @count: what window_hit returned plus the share; XDP_RL_COUNT_SAT and
 * above: nothing was charged.
 */
static __always_inline int event_crossed(__u64 count, __u64 inc, __u64 limit)
{
	return count < XDP_RL_COUNT_SAT && count > limit && count - inc <= limit;
}

#endif /* XDP_RL_EVENTS_H */
