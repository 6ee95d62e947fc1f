/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * layers.h - several fixed windows per key (e.g. 100/s and 3000/min and
 * 50000/h): a packet passes only if every layer admits it.
 *
 * Layers are charged in order. When one refuses the packet, the charges
 * already made to the layers before it are taken back (window_undo): a flood
 * held back by the per-second layer does not use up the hourly budget. The
 * refusing layer keeps its charge, as a single window counts its drops; the
 * layers after it are not charged at all.
 *
 * No layer ever passes more than its limit in one of its windows: a packet
 * that passes is never taken back, so when it passes, the layer's count (at
 * least the number of packets it has passed in this window) is within the
 * limit. Under concurrency a packet may be refused that could have passed:
 * it may see a count that includes another CPU's charge which that CPU is
 * about to take back. That errs on the side of the limit, never past it.
 */
#ifndef XDP_RL_LAYERS_H
#define XDP_RL_LAYERS_H

#include "xdp_rl.h"
#include "window.h"

/*
 * layers_charge - charge @inc to the first @n layers of @st (which has room
 * for @room) with the limits in @lay. Returns -1 if every layer admits the
 * packet, else the index of the layer that refused it. *opened counts the
 * windows opened.
 */
static __always_inline int layers_charge(struct xdp_rl_state *st, __u32 room,
					 const struct xdp_rl_layer *lay, __u32 n,
					 const struct window_clock *clk, __u64 inc,
					 __u64 *opened)
{
	__u64 gens[XDP_RL_MAX_LAYERS];
	int i, refused = -1, op;
	__u64 count;

	if (room == 1) {
		/* One window per key (the default): no loop, nothing to take back. */
		op = 0;
		count = window_hit(&st[0], clk, lay[0].window_ns, inc, &op, &gens[0]);
		*opened += op;
		return count > lay[0].limit ? 0 : -1;
	}

	for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
		if ((__u32)i >= n || (__u32)i >= room)
			break;
		op = 0;
		count = window_hit(&st[i], clk, lay[i].window_ns, inc, &op, &gens[i]);
		*opened += op;
		if (count > lay[i].limit) {
			refused = i;
			break;
		}
	}
	for (i = 0; i < XDP_RL_MAX_LAYERS - 1; i++) {
		if (i >= refused)
			break;
		window_undo(&st[i], gens[i], inc);
	}
	return refused;
}

#endif /* XDP_RL_LAYERS_H */
