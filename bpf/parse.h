/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * parse.h - bounds-checked packet parsing for the XDP program.
 *
 * A cursor walks the frame; every read is preceded by a check against
 * data_end. Addresses are returned exactly as they sit in the packet, in
 * network byte order.
 */
#ifndef XDP_RL_PARSE_H
#define XDP_RL_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "maps.h"

#ifndef ETH_P_8021AD
#define ETH_P_8021AD 0x88A8
#endif

struct cursor {
	void *pos;
	void *end;
};

struct vlan_tag {
	__be16 tci;
	__be16 encap_proto;
};

static __always_inline int is_vlan(__be16 proto)
{
	return proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD);
}

/*
 * parse_eth - Ethernet header and up to XDP_RL_MAX_VLAN_DEPTH VLAN tags.
 *
 * Returns the EtherType of the payload in network byte order, with the cursor
 * on the payload, or -1 if a header is truncated. A frame with more tags than
 * XDP_RL_MAX_VLAN_DEPTH returns the next tag's EtherType (so it is not IP).
 */
static __always_inline int parse_eth(struct cursor *c, __be16 *proto)
{
	struct ethhdr *eth = c->pos;
	struct vlan_tag *tag;
	int i;

	if ((void *)(eth + 1) > c->end)
		return -1;
	*proto = eth->h_proto;
	c->pos = eth + 1;

#pragma unroll
	for (i = 0; i < XDP_RL_MAX_VLAN_DEPTH; i++) {
		if (!is_vlan(*proto))
			break;
		tag = c->pos;
		if ((void *)(tag + 1) > c->end)
			return -1;
		*proto = tag->encap_proto;
		c->pos = tag + 1;
	}
	return 0;
}

/*
 * parse_ipv4 - validate an IPv4 header at the cursor.
 *
 * Malformed: fewer than 20 bytes, version != 4, ihl < 5, an ihl that runs
 * past the frame, or a total length shorter than the header. On success
 * *saddr is the source address (network byte order).
 */
static __always_inline int parse_ipv4(struct cursor *c, __be32 *saddr)
{
	struct iphdr *ip = c->pos;
	__u32 hlen;

	if ((void *)(ip + 1) > c->end)
		return -1;
	if (ip->version != 4 || ip->ihl < 5)
		return -1;
	hlen = ip->ihl * 4;
	if (c->pos + hlen > c->end)
		return -1;
	if (bpf_ntohs(ip->tot_len) < hlen)
		return -1;
	*saddr = ip->saddr;
	return 0;
}

/*
 * parse_ipv6 - validate the fixed IPv6 header at the cursor.
 *
 * Malformed: fewer than 40 bytes or version != 6. Extension headers do not
 * matter: the key is the source address. On success *saddr points into the
 * packet at the source address (network byte order).
 */
static __always_inline int parse_ipv6(struct cursor *c, struct in6_addr **saddr)
{
	struct ipv6hdr *ip6 = c->pos;

	if ((void *)(ip6 + 1) > c->end)
		return -1;
	if (ip6->version != 6)
		return -1;
	*saddr = &ip6->saddr;
	return 0;
}

#endif /* XDP_RL_PARSE_H */
