// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* events.c - over-limit events: the reader's lease, a record's key (see events.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <syslog.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <bpf/bpf.h>

#include "events.h"
#include "fault.h"
#include "options.h"

__u64 events_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int lease_read(const struct limiter *l, struct xdp_rl_ev_lease *v)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(l->fd[PIN_EV_LEASE], &zero, v);
}

static int lease_write(const struct limiter *l, __u64 until_ns, __u32 pid)
{
	struct xdp_rl_ev_lease v = { .until_ns = until_ns, .pid = pid };
	__u32 zero = 0;

	return bpf_map_update_elem(l->fd[PIN_EV_LEASE], &zero, &v, BPF_ANY);
}

/* Whether process @pid is there (one we may not signal is). */
static int alive(__u32 pid)
{
	return pid && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

int events_lease_take(const struct limiter *l, __u32 *holder)
{
	struct xdp_rl_ev_lease v;
	__u32 me = (__u32)getpid();

	if (lease_read(l, &v))
		return -1;
	if (v.until_ns > events_clock_ns() && v.pid != me && alive(v.pid)) {
		*holder = v.pid;
		return 1;
	}
	return lease_write(l, events_clock_ns() + EVENTS_LEASE_NS, me) ? -1 : 0;
}

int events_lease_renew(const struct limiter *l, __u32 *holder)
{
	struct xdp_rl_ev_lease v;
	__u32 me = (__u32)getpid();

	if (lease_read(l, &v))
		return -1;
	/* Taken over: this process was thought gone (it stalled past its lease). */
	if (v.pid != me && v.until_ns > events_clock_ns() && alive(v.pid)) {
		*holder = v.pid;
		return 1;
	}
	return lease_write(l, events_clock_ns() + EVENTS_LEASE_NS, me) ? -1 : 0;
}

void events_lease_give_back(const struct limiter *l)
{
	struct xdp_rl_ev_lease v;

	if (!lease_read(l, &v) && v.pid == (__u32)getpid())
		lease_write(l, 0, 0);
}

const char *events_kind_name(__u32 kind)
{
	switch (kind) {
	case XDP_RL_EV_SOURCE: return "source";
	case XDP_RL_EV_AGGREGATE: return "aggregate";
	case XDP_RL_EV_SHARED: return "shared";
	case XDP_RL_EV_NEW_SOURCES: return "new_sources";
	}
	return "unknown";
}

int events_key(const struct limiter *l, const struct xdp_rl_event *ev, char *buf, size_t len,
	       unsigned int *port)
{
	int whole = ev->kind == XDP_RL_EV_SOURCE &&
		    limiter_live(l)->link_local == XDP_RL_LL_ADDRESS,
	    has_port;
	struct ip_addr a;
	unsigned int prefix;

	*port = 0;
	if (ev->kind == XDP_RL_EV_NEW_SOURCES || ev->kind == XDP_RL_EV_SHARED ||
	    (ev->family != 4 && ev->family != 6)) {
		snprintf(buf, len, "%s", "");
		return 0;
	}
	has_port = key_decode(ev->key, ev->family == 6, l->cfg.fixed.key, whole, &a, port);
	if (ev->kind == XDP_RL_EV_AGGREGATE)
		prefix = ev->family == 6 ? XDP_RL_AGG6_PREFIX : XDP_RL_AGG4_PREFIX;
	else
		prefix = ev->family == 6 ? l->cfg.fixed.v6_prefix : l->cfg.fixed.v4_prefix;
	/* A link-local source keyed whole (--link-local per-address) keeps all of it. */
	if (whole && addr_link_local(&a))
		prefix = ev->family == 6 ? 128 : 32;
	fmt_prefix(&a, prefix, buf, len);
	return has_port;
}

/* One datagram (or a stream's record, ended by a NUL) to the socket at @path. */
static int send_log(const char *path, const char *msg, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, type = SOCK_DGRAM, ret = -1;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -1;
	strcpy(sa.sun_path, path);
again:
	fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (errno == EPROTOTYPE && type == SOCK_DGRAM) {
			close(fd);
			type = SOCK_STREAM;
			goto again;
		}
		close(fd);
		return -1;
	}
	ret = send(fd, msg, len + (type == SOCK_STREAM), MSG_NOSIGNAL) < 0 ? -1 : 0;
	close(fd);
	return ret;
}

int events_syslog(const char *text)
{
	const char *path = test_env("XDP_RL_SYSLOG");
	char stamp[32], msg[1024];
	struct tm tm;
	time_t now = time(NULL);

	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S", &tm);
	/* RFC 3164, as glibc's syslog() writes it: <PRI>Mmm dd hh:mm:ss ident[pid]: text */
	snprintf(msg, sizeof(msg), "<%d>%s xdp-rl[%d]: %s", LOG_DAEMON | LOG_NOTICE, stamp,
		 (int)getpid(), text);
	return send_log(path ? path : "/dev/log", msg, strlen(msg));
}
