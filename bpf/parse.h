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
#include <linux/in.h>
#include <linux/in6.h>
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
 * Returns 0 with the EtherType of the payload in network byte order, with the
 * cursor on the payload, or -1 if a header is truncated or the frame has more
 * tags than XDP_RL_MAX_VLAN_DEPTH: its IP header, if any, cannot be read, so
 * it cannot be limited, and fails closed (malformed, dropped) rather than
 * pass as a frame that is not IP.
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
	return is_vlan(*proto) ? -1 : 0;
}

/*
 * parse_ipv4 - validate an IPv4 header at the cursor.
 *
 * Malformed: fewer than 20 bytes, version != 4, ihl < 5, an ihl that runs
 * past the frame, or a total length shorter than the header. On success
 * *addr is the source address, or if @dst the destination's (network byte
 * order).
 */
static __always_inline int parse_ipv4(struct cursor *c, __be32 *addr, int dst)
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
	*addr = dst ? ip->daddr : ip->saddr;
	return 0;
}

/*
 * parse_ipv6 - validate the fixed IPv6 header at the cursor.
 *
 * Malformed: fewer than 40 bytes or version != 6. Extension headers do not
 * matter to the address: on success *addr points into the packet at the
 * source address, or if @dst the destination's (network byte order).
 */
static __always_inline int parse_ipv6(struct cursor *c, struct in6_addr **addr, int dst)
{
	struct ipv6hdr *ip6 = c->pos;

	if ((void *)(ip6 + 1) > c->end)
		return -1;
	if (ip6->version != 6)
		return -1;
	*addr = dst ? &ip6->daddr : &ip6->saddr;
	return 0;
}

/*
 * What the selectors look at (struct xdp_rl_select): the transport protocol,
 * the destination port (host order) and TCP's flags, each with a bit in
 * @known saying it was read. What could not be read (a later fragment, a
 * first fragment cut short, a header chain truncated) stays unknown, and
 * select.h counts the packet by every selector that could have taken it:
 * none of these reaches a socket without the fragment or header that the
 * limits saw. A chain longer than the walk (L4_DEEP) does reach one, with
 * nothing of it read: classify() drops it (fail closed). An attacker who
 * hides a field gains nothing.
 */
#define L4_PROTO 1 /* proto is the transport protocol */
#define L4_PORT	 2 /* dport was read */
#define L4_FLAGS 4 /* tcp_flags were read */
#define L4_DEEP	 8 /* an IPv6 header chain longer than the walk: transport not found */

struct l4 {
	__u16 dport;
	__u8 proto;
	__u8 tcp_flags;
	__u8 known; /* L4_* */
	__u8 pad[3];
};

/*
 * The TCP or UDP header at @th: its destination port and flags, each read
 * only if it lies within the frame (@end) and within the @avail bytes the
 * IP header says the packet has there. Bytes past the IP length are
 * padding the stack ignores: a first fragment of 8 bytes with a forged
 * "ACK" in its padding must not hide the SYN its next fragment carries.
 */
static __always_inline void parse_transport(void *th, void *end, __u32 avail, struct l4 *l)
{
	__u8 *b = th;

	if (l->proto != IPPROTO_TCP && l->proto != IPPROTO_UDP)
		return; /* no ports to read */
	if ((void *)(b + 4) > end || avail < 4)
		return;
	l->dport = (__u16)b[2] << 8 | b[3];
	l->known |= L4_PORT;
	if (l->proto != IPPROTO_TCP || (void *)(b + 14) > end || avail < 14)
		return;
	l->tcp_flags = b[13];
	l->known |= L4_FLAGS;
}

/* The transport of the IPv4 packet at the cursor (parse_ipv4 validated it). */
static __always_inline void parse_l4_v4(struct cursor *c, struct l4 *l)
{
	struct iphdr *ip = c->pos;
	__u32 hlen;

	if ((void *)(ip + 1) > c->end)
		return;
	l->proto = ip->protocol;
	l->known = L4_PROTO;
	if (ip->frag_off & bpf_htons(0x1fff))
		return; /* a later fragment: no transport header */
	hlen = ip->ihl * 4;
	/* parse_ipv4: the total length is at least the header's. */
	parse_transport(c->pos + hlen, c->end, bpf_ntohs(ip->tot_len) - hlen, l);
}

/* Whether IPv6 next header @h is an extension header (RFC 8200 4, and AH). */
static __always_inline int ipv6_ext(__u8 h)
{
	return h == IPPROTO_HOPOPTS || h == IPPROTO_ROUTING || h == IPPROTO_DSTOPTS ||
	       h == IPPROTO_FRAGMENT || h == IPPROTO_AH;
}

/*
 * The transport of the IPv6 packet at the cursor, past up to
 * XDP_RL_MAX_EXT_HDRS extension headers. The protocol is known only where
 * the walk ends on a header that is not an extension header: a chain
 * longer than the walk (L4_DEEP), a header cut short, or a later fragment
 * whose fragmentable part starts with another extension header leave it
 * unknown.
 */
static __always_inline void parse_l4_v6(struct cursor *c, struct l4 *l)
{
	struct ipv6hdr *ip6 = c->pos;
	void *p = ip6 + 1;
	__u32 len, used;
	__u8 next, *h;
	int i;

	if (p > c->end)
		return;
	next = ip6->nexthdr;
#pragma unroll
	for (i = 0; i < XDP_RL_MAX_EXT_HDRS; i++) {
		h = p;
		if (!ipv6_ext(next))
			break;
		if ((void *)(h + 8) > c->end)
			return;
		if (next == IPPROTO_FRAGMENT) {
			if ((h[2] << 8 | h[3]) & 0xfff8) {
				/* A later fragment: no transport header in it. */
				if (!ipv6_ext(h[0])) {
					l->proto = h[0];
					l->known = L4_PROTO;
				}
				return;
			}
			p += 8;
		} else if (next == IPPROTO_AH) {
			p += (h[1] + 2) * 4;
		} else {
			p += (h[1] + 1) * 8;
		}
		next = h[0];
	}
	if (ipv6_ext(next)) {
		l->known = L4_DEEP; /* longer than the walk */
		return;
	}
	l->proto = next;
	l->known = L4_PROTO;
	/*
	 * What the payload length leaves for the transport (0, a jumbogram's,
	 * bounds nothing but the frame); none if the headers ran past it.
	 */
	len = bpf_ntohs(ip6->payload_len);
	used = p - (void *)(ip6 + 1);
	if (!len)
		len = 0xffff;
	parse_transport(p, c->end, used <= len ? len - used : 0, l);
}

#endif /* XDP_RL_PARSE_H */
