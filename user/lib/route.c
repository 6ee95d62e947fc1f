// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* route.c - the interface a route to an address leaves by (see route.h). */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "route.h"

/* The kernel answers at once; a reply that does not come in this long will not. */
#define ROUTE_TIMEOUT_MS 1000

int route_oif(int family, const void *addr, unsigned int *ifindex)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		char attrs[64];
	} rq;
	struct timeval tv = { .tv_sec = ROUTE_TIMEOUT_MS / 1000 };
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	char buf[4096] __attribute__((aligned(NLMSG_ALIGNTO)));
	int alen = family == AF_INET ? 4 : 16, fd, err = 0;
	struct nlmsghdr *nh;
	struct rtattr *a;
	ssize_t n;
	int len;

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

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    sendto(fd, &rq, rq.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
		err = errno;
		goto out;
	}
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < 0) {
		err = errno;
		goto out;
	}
	err = ENETUNREACH;
	for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n); nh = NLMSG_NEXT(nh, n)) {
		if (nh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(nh);

			if (nh->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error)
				err = -e->error;
			break;
		}
		if (nh->nlmsg_type != RTM_NEWROUTE)
			continue;
		len = RTM_PAYLOAD(nh);
		for (a = RTM_RTA(NLMSG_DATA(nh)); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
			if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= sizeof(__u32)) {
				memcpy(ifindex, RTA_DATA(a), sizeof(*ifindex));
				err = 0;
			}
		}
		break;
	}
out:
	close(fd);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}
