// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* route.c - the interface a route to an address leaves by (see route.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "route.h"

/* The kernel answers at once; a reply that does not come in this long will not. */
#define ROUTE_TIMEOUT_MS 1000

/*
 * Send request @rq to the kernel and read its answer into @buf: the first
 * message of type @want in it, or NULL with errno (the kernel's error, or
 * @none if it answered nothing of that type).
 */
static struct nlmsghdr *nl_ask(const struct nlmsghdr *rq, __u16 want, char *buf, size_t size,
			       int none)
{
	struct timeval tv = { .tv_sec = ROUTE_TIMEOUT_MS / 1000 };
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct nlmsghdr *nh, *found = NULL;
	int fd, err = none;
	ssize_t n;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return NULL;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    sendto(fd, rq, rq->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0 ||
	    (n = recv(fd, buf, size, 0)) < 0) {
		err = errno;
		goto out;
	}
	for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n); nh = NLMSG_NEXT(nh, n)) {
		if (nh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(nh);

			if (nh->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error)
				err = -e->error;
			break;
		}
		if (nh->nlmsg_type == want) {
			found = nh;
			break;
		}
	}
out:
	close(fd);
	if (!found)
		errno = err;
	return found;
}

int route_oif(int family, const void *addr, unsigned int *ifindex)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		char attrs[64];
	} rq;
	char buf[4096] __attribute__((aligned(NLMSG_ALIGNTO)));
	int alen = family == AF_INET ? 4 : 16, len;
	struct nlmsghdr *nh;
	struct rtattr *a;

	if (family != AF_INET && family != AF_INET6) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	memset(&rq, 0, sizeof(rq));
	rq.nh.nlmsg_len = NLMSG_LENGTH(sizeof(rq.rt));
	rq.nh.nlmsg_type = RTM_GETROUTE;
	rq.nh.nlmsg_flags = NLM_F_REQUEST;
	rq.nh.nlmsg_seq = 1;
	rq.rt.rtm_family = family;
	rq.rt.rtm_dst_len = alen * 8;
	a = (struct rtattr *)((char *)&rq + NLMSG_ALIGN(rq.nh.nlmsg_len));
	a->rta_type = RTA_DST;
	a->rta_len = RTA_LENGTH(alen);
	memcpy(RTA_DATA(a), addr, alen);
	rq.nh.nlmsg_len = NLMSG_ALIGN(rq.nh.nlmsg_len) + RTA_ALIGN(a->rta_len);

	nh = nl_ask(&rq.nh, RTM_NEWROUTE, buf, sizeof(buf), ENETUNREACH);
	if (!nh)
		return -1;
	len = RTM_PAYLOAD(nh);
	for (a = RTM_RTA(NLMSG_DATA(nh)); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= sizeof(__u32)) {
			memcpy(ifindex, RTA_DATA(a), sizeof(*ifindex));
			return 0;
		}
	}
	errno = ENETUNREACH;
	return -1;
}

/* What RTM_GETLINK says of an interface: what it is stacked on, and its master. */
struct link_info {
	unsigned int link;   /* IFLA_LINK, 0 if none (or in another namespace) */
	unsigned int master; /* IFLA_MASTER, 0 if none */
	char kind[16];	     /* IFLA_INFO_KIND, "" if none */
};

static int link_get(unsigned int ifindex, struct link_info *li)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
	} rq;
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nlmsghdr *nh;
	struct rtattr *a, *b;
	int len, blen, other_ns = 0;

	memset(li, 0, sizeof(*li));
	memset(&rq, 0, sizeof(rq));
	rq.nh.nlmsg_len = NLMSG_LENGTH(sizeof(rq.ifi));
	rq.nh.nlmsg_type = RTM_GETLINK;
	rq.nh.nlmsg_flags = NLM_F_REQUEST;
	rq.nh.nlmsg_seq = 1;
	rq.ifi.ifi_family = AF_UNSPEC;
	rq.ifi.ifi_index = (int)ifindex;
	nh = nl_ask(&rq.nh, RTM_NEWLINK, buf, sizeof(buf), ENODEV);
	if (!nh)
		return -1;
	len = IFLA_PAYLOAD(nh);
	for (a = IFLA_RTA(NLMSG_DATA(nh)); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == IFLA_LINK && RTA_PAYLOAD(a) >= sizeof(__u32)) {
			memcpy(&li->link, RTA_DATA(a), sizeof(li->link));
		} else if (a->rta_type == IFLA_MASTER && RTA_PAYLOAD(a) >= sizeof(__u32)) {
			memcpy(&li->master, RTA_DATA(a), sizeof(li->master));
		} else if (a->rta_type == IFLA_LINK_NETNSID) {
			other_ns = 1;
		} else if (a->rta_type == IFLA_LINKINFO) {
			blen = RTA_PAYLOAD(a);
			for (b = RTA_DATA(a); RTA_OK(b, blen); b = RTA_NEXT(b, blen))
				if (b->rta_type == IFLA_INFO_KIND)
					snprintf(li->kind, sizeof(li->kind), "%.*s",
						 (int)RTA_PAYLOAD(b), (char *)RTA_DATA(b));
		}
	}
	if (other_ns)
		li->link = 0; /* an index of another namespace's */
	return 0;
}

/*
 * Whether a device of @kind receives what its IFLA_LINK device received:
 * VLANs, macvlan and ipvlan do; a veth's link is its peer, whose ingress
 * is not its own.
 */
static int stacked_kind(const char *kind)
{
	static const char *const kinds[] = { "vlan", "macvlan", "macvtap", "ipvlan", "ipvtap" };
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kind, kinds[i]))
			return 1;
	return 0;
}

/* How deep stacks of devices are followed (deeper is not met in practice). */
#define ROUTE_DEPTH 8

int route_arrives_via(unsigned int dev, unsigned int nic)
{
	unsigned int down[ROUTE_DEPTH + 1], up, k, j, nd = 0;
	struct link_info li;

	/* @dev and what it is stacked on. */
	down[nd++] = dev;
	while (nd <= ROUTE_DEPTH) {
		if (link_get(down[nd - 1], &li))
			return -1;
		if (!li.link || !stacked_kind(li.kind))
			break;
		down[nd++] = li.link;
	}
	/* @nic and the bridges or bonds above it: one of them is one of those. */
	for (up = nic, k = 0; up && k <= ROUTE_DEPTH; k++) {
		for (j = 0; j < nd; j++)
			if (down[j] == up)
				return 1;
		if (link_get(up, &li))
			return -1;
		up = li.master;
	}
	return 0;
}
