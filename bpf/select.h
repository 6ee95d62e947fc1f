/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * select.h - which packets a limit or a rule applies to (struct
 * xdp_rl_select): a protocol, destination ports, TCP SYNs without ACK.
 * Packets no limit selects pass untouched (counted as unselected).
 */
#ifndef XDP_RL_SELECT_H
#define XDP_RL_SELECT_H

#include "maps.h"
#include "parse.h"

#define TCP_FLAG_SYN 0x02
#define TCP_FLAG_ACK 0x10

/*
 * Whether @s selects the packet whose transport is @l. Fail closed: a field
 * the selector needs that could not be read (struct l4's known bits) is
 * taken to be one the selector wants, so that a packet is counted by a
 * limit rather than passed unselected. A later fragment of a TCP datagram,
 * a first fragment cut before the TCP flags, a header chain cut short: each
 * is counted by a --proto, --dport and --syn selector that its protocol (if
 * known) does not rule out. None of these is delivered whole by the stack
 * without the fragment or header the limits saw, judged with its fields; so
 * which limit counts the rest gives no second budget. A chain longer than
 * the walk is delivered whole: classify() drops it before any selector.
 */
static __always_inline int select_match(const struct xdp_rl_select *s, const struct l4 *l)
{
	__u16 port = l->dport;
	int proto_known = l->known & L4_PROTO, i;

	if (s->proto && proto_known && l->proto != s->proto)
		return 0;
	if (s->syn) {
		if (proto_known && l->proto != IPPROTO_TCP)
			return 0;
		if ((l->known & L4_FLAGS) &&
		    (l->tcp_flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) != TCP_FLAG_SYN)
			return 0;
	}
	if (!s->nports)
		return 1;
	if (proto_known && l->proto != IPPROTO_TCP && l->proto != IPPROTO_UDP)
		return 0;
	if (!(l->known & L4_PORT))
		return 1;
#pragma unroll
	for (i = 0; i < XDP_RL_MAX_PORT_RANGES; i++) {
		if (i >= s->nports)
			break;
		if (port >= s->port_lo[i] && port <= s->port_hi[i])
			return 1;
	}
	return 0;
}

#endif /* XDP_RL_SELECT_H */
