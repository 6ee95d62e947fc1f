/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * route.h - which interface the kernel routes an address through, asked of
 * the kernel's routing table (rtnetlink, RTM_GETROUTE) as `ip route get`
 * does, in the caller's network namespace. Bottom layer.
 */
#ifndef XDP_RL_ROUTE_H
#define XDP_RL_ROUTE_H

/*
 * The interface (its index, into @ifindex) that packets to @addr (4 or 16
 * bytes, @family AF_INET or AF_INET6) leave by, and so the one its replies
 * come back on in a symmetric network: 0, or -1 with errno (ENETUNREACH:
 * no route).
 */
int route_oif(int family, const void *addr, unsigned int *ifindex);

/*
 * Whether what arrives on interface @dev first arrived on @nic: @dev is
 * @nic, or stacked on it (a VLAN, macvlan or ipvlan of it, however deep:
 * IFLA_LINK), or a bridge or bond @nic is a port of (IFLA_MASTER), or any
 * mix of them. 1 or 0; -1 with errno if the interfaces cannot be read.
 */
int route_arrives_via(unsigned int dev, unsigned int nic);

#endif
