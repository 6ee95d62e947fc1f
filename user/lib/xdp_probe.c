// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* xdp_probe.c - the kernel's reason for refusing an XDP attach (see xdp_probe.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "xdp_probe.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

struct req {
	struct nlmsghdr nh;
	struct ifinfomsg ifi;
	char attrs[64];
};

/* Append attribute @type with @len bytes of @data at the end of @r (4-byte aligned). */
static struct rtattr *put(struct req *r, unsigned short type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->nh.nlmsg_len));

	a->rta_type = type;
	a->rta_len = RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(a), data, len);
	r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + RTA_ALIGN(a->rta_len);
	return a;
}

/* One RTM_SETLINK with IFLA_XDP {fd, flags[, expected fd]}: the errno, and the kernel's message. */
static int setlink_xdp(int sock, unsigned int ifindex, int fd, __u32 flags, int expected, char *msg,
		       size_t len)
{
	char buf[4096];
	struct req r;
	struct rtattr *xdp;
	struct nlmsghdr *nh;
	struct nlmsgerr *e;
	struct nlattr *a;
	ssize_t n;
	int off, err;

	memset(&r, 0, sizeof(r));
	r.nh.nlmsg_len = NLMSG_LENGTH(sizeof(r.ifi));
	r.nh.nlmsg_type = RTM_SETLINK;
	r.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	r.nh.nlmsg_seq = 1;
	r.ifi.ifi_family = AF_UNSPEC;
	r.ifi.ifi_index = ifindex;
	xdp = put(&r, IFLA_XDP | NLA_F_NESTED, NULL, 0);
	put(&r, IFLA_XDP_FD, &fd, sizeof(fd));
	put(&r, IFLA_XDP_FLAGS, &flags, sizeof(flags));
	if (expected >= 0)
		put(&r, IFLA_XDP_EXPECTED_FD, &expected, sizeof(expected));
	xdp->rta_len = (char *)&r + r.nh.nlmsg_len - (char *)xdp;
	if (send(sock, &r, r.nh.nlmsg_len, 0) < 0)
		return errno;
	n = recv(sock, buf, sizeof(buf), 0);
	if (n < (ssize_t)NLMSG_LENGTH(sizeof(*e)))
		return n < 0 ? errno : EPROTO;
	nh = (struct nlmsghdr *)buf;
	if (nh->nlmsg_type != NLMSG_ERROR)
		return EPROTO;
	e = NLMSG_DATA(nh);
	err = -e->error;
	if (!(nh->nlmsg_flags & NLM_F_ACK_TLVS) || !msg)
		return err;
	/* The TLVs follow the request echoed back, or only its header when capped. */
	off = NLMSG_LENGTH(sizeof(*e));
	if (!(nh->nlmsg_flags & NLM_F_CAPPED))
		off += NLMSG_ALIGN(e->msg.nlmsg_len - NLMSG_HDRLEN);
	while (off + (int)sizeof(*a) <= n) {
		a = (struct nlattr *)(buf + off);
		if (a->nla_len < sizeof(*a) || off + a->nla_len > n)
			break;
		if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG)
			snprintf(msg, len, "%.*s", (int)(a->nla_len - sizeof(*a)),
				 (char *)a + sizeof(*a));
		off += NLA_ALIGN(a->nla_len);
	}
	return err;
}

int xdp_attach_reason(unsigned int ifindex, int prog_fd, __u32 mode, char *msg, size_t len)
{
	int sock, one = 1, err;

	if (len)
		msg[0] = '\0';
	sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (sock < 0)
		return errno;
	setsockopt(sock, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	err = setlink_xdp(sock, ifindex, prog_fd, mode | XDP_FLAGS_UPDATE_IF_NOEXIST, -1, msg, len);
	if (!err) {
		/* It took: take off exactly that program again. */
		setlink_xdp(sock, ifindex, -1, mode | XDP_FLAGS_REPLACE, prog_fd, NULL, 0);
	}
	close(sock);
	return err;
}
