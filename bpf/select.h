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
 * Whether @s selects the packet whose transport is @l. A packet whose
 * ports could not be read (a later fragment) is selected by a port list if
 * its protocol is, so that fragments cannot slip past a limit; never by
 * --syn, which needs the flags.
 */
static __always_inline int select_match(const struct xdp_rl_select *s, const struct l4 *l)
{
	__u16 port = l->dport;
	int i;

	if (s->proto && l->proto != s->proto)
		return 0;
	if (s->syn && (l->proto != IPPROTO_TCP || !l->known ||
		       (l->tcp_flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) != TCP_FLAG_SYN))
		return 0;
	if (!s->nports)
		return 1;
	if (l->proto != IPPROTO_TCP && l->proto != IPPROTO_UDP)
		return 0;
	if (!l->known)
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
