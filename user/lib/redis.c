// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* redis.c - one deadline-bounded connection to Redis (see redis.h). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "options.h"
#include "redis.h"

#define REDIS_DEFAULT_PORT "6379"

void redis_init(struct redis *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

void redis_free(struct redis *r)
{
	redis_close(r);
	resp_buf_free(&r->out);
	resp_buf_free(&r->in);
}

__u64 redis_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *redis_parse_addr(struct redis *r, const char *s)
{
	const char *host = s, *colon, *end;
	size_t hlen;
	__u64 port;

	if (!s || !*s)
		return "empty address (give HOST:PORT)";
	if (*s == '[') {
		end = strchr(s, ']');
		if (!end)
			return "no ']' after an IPv6 address";
		host = s + 1;
		hlen = end - host;
		colon = end[1] == ':' ? end + 1 : NULL;
		if (end[1] && !colon)
			return "expected ':PORT' after ']'";
	} else {
		colon = strrchr(s, ':');
		/* An IPv6 address with no brackets and no port. */
		if (colon && strchr(s, ':') != colon)
			colon = NULL;
		hlen = colon ? (size_t)(colon - s) : strlen(s);
	}
	if (!hlen)
		return "empty host";
	if (hlen > REDIS_HOST_MAX)
		return "host name too long";
	for (size_t i = 0; i < hlen; i++)
		if (host[i] <= ' ' || host[i] == '/' || (unsigned char)host[i] >= 0x7f)
			return "not a host name or address";
	if (colon && parse_u64(colon + 1, 1, 65535, &port))
		return "the port must be a number from 1 to 65535";
	memcpy(r->host, host, hlen);
	r->host[hlen] = '\0';
	snprintf(r->port, sizeof(r->port), "%s", colon ? colon + 1 : REDIS_DEFAULT_PORT);
	return NULL;
}

void redis_close(struct redis *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	r->out.len = r->in.len = 0;
	r->queued = 0;
}

/* Fail with @why (NULL: r->why as it is), closing the connection; errno kept. */
static int fail(struct redis *r, const char *why)
{
	int e = errno;

	if (why)
		snprintf(r->why, sizeof(r->why), "%s", why);
	redis_close(r);
	errno = e;
	return -1;
}

/* Wait for @events on the socket until @deadline_ms: 0, or -1 (ETIMEDOUT, EINTR). */
static int wait_for(struct redis *r, short events, __u64 deadline_ms)
{
	struct pollfd p = { .fd = r->fd, .events = events };
	__u64 now = redis_now_ms();
	int n;

	if (now >= deadline_ms) {
		errno = ETIMEDOUT;
		return -1;
	}
	n = poll(&p, 1, (int)(deadline_ms - now > 60000 ? 60000 : deadline_ms - now));
	if (n < 0)
		return -1;
	if (!n) {
		errno = ETIMEDOUT;
		return -1;
	}
	return 0;
}

/* One non-blocking connect to @ai, until @deadline_ms: an fd, or -1. */
static int connect_one(struct redis *r, const struct addrinfo *ai, __u64 deadline_ms)
{
	int one = 1, err = 0;
	socklen_t len = sizeof(err);

	r->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       ai->ai_protocol);
	if (r->fd < 0)
		return -1;
	setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!connect(r->fd, ai->ai_addr, ai->ai_addrlen))
		return 0;
	if (errno != EINPROGRESS)
		return -1;
	if (wait_for(r, POLLOUT, deadline_ms))
		return -1;
	if (getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return -1;
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

/* The reply to AUTH. */
static int auth_reply(const struct resp_reply *rep, size_t i, void *ctx)
{
	struct redis *r = ctx;

	(void)i;
	if (rep->type == RESP_STATUS)
		return 0;
	snprintf(r->why, sizeof(r->why), "AUTH refused: %.*s",
		 (int)(rep->len > 100 ? 100 : rep->len), rep->s);
	return -1;
}

int redis_connect(struct redis *r, __u64 deadline_ms)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC }, *res, *ai;
	const char *auth[] = { "AUTH", r->password };
	char why[sizeof(r->why)];
	int e;

	redis_close(r);
	e = getaddrinfo(r->host, r->port, &hints, &res);
	if (e) {
		snprintf(r->why, sizeof(r->why), "cannot resolve '%s': %s", r->host,
			 e == EAI_SYSTEM ? strerror(errno) : gai_strerror(e));
		errno = e == EAI_SYSTEM ? errno : EHOSTUNREACH;
		return -1;
	}
	e = ETIMEDOUT;
	for (ai = res; ai; ai = ai->ai_next) {
		if (!connect_one(r, ai, deadline_ms))
			break;
		e = errno;
		redis_close(r);
		if (e == EINTR || e == ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	if (r->fd < 0) {
		errno = e;
		snprintf(why, sizeof(why), "cannot connect: %s", strerror(e));
		return fail(r, why);
	}
	if (!r->password)
		return 0;
	if (redis_queue(r, 2, auth, NULL))
		return fail(r, "out of memory");
	if (redis_exchange(r, auth_reply, r, deadline_ms))
		return -1;
	return 0;
}

int redis_queue(struct redis *r, int argc, const char *const *argv, const size_t *lens)
{
	if (resp_cmd(&r->out, argc, argv, lens))
		return -1;
	r->queued++;
	r->commands++;
	return 0;
}

/* Send what the socket takes now: 0, or -1 (a real error; EAGAIN is 0). */
static int send_some(struct redis *r)
{
	ssize_t n;

	while (r->out.len) {
		n = send(r->fd, r->out.p, r->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		r->bytes_out += n;
		resp_buf_consume(&r->out, n);
	}
	return 0;
}

/* Read what has come: bytes read (0: the peer closed), or -1 (EAGAIN: nothing yet). */
static ssize_t recv_some(struct redis *r)
{
	ssize_t n;

	if (resp_buf_room(&r->in, 16384))
		return -1;
	n = recv(r->fd, r->in.p + r->in.len, r->in.cap - r->in.len, MSG_DONTWAIT);
	if (n > 0) {
		r->in.len += n;
		r->bytes_in += n;
	}
	return n;
}

int redis_exchange(struct redis *r, redis_reply_fn fn, void *ctx, __u64 deadline_ms)
{
	size_t done = 0, off = 0, owed = r->queued;
	struct resp_reply rep;
	char why[sizeof(r->why)];
	long used;
	ssize_t n;

	if (r->fd < 0) {
		errno = ENOTCONN;
		snprintf(r->why, sizeof(r->why), "not connected");
		return -1;
	}
	r->why[0] = '\0';
	while (done < owed) {
		/* Writing and reading interleave: Redis answers while a long pipeline is sent. */
		if (send_some(r)) {
			snprintf(why, sizeof(why), "cannot send: %s", strerror(errno));
			return fail(r, why);
		}
		while (done < owed) {
			used = resp_parse(r->in.p + off, r->in.len - off, &rep);
			if (used < 0) {
				errno = EPROTO;
				return fail(r, "not a Redis reply");
			}
			if (!used)
				break;
			off += used;
			if (fn(&rep, done++, ctx)) {
				errno = EPROTO;
				return fail(r, r->why[0] ? NULL : "unexpected reply");
			}
		}
		resp_buf_consume(&r->in, off);
		off = 0;
		if (done == owed)
			break;
		n = recv_some(r);
		if (n > 0)
			continue;
		if (!n) {
			errno = ECONNRESET;
			return fail(r, "connection closed by Redis");
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			snprintf(why, sizeof(why), "cannot receive: %s", strerror(errno));
			return fail(r, why);
		}
		if (wait_for(r, POLLIN | (r->out.len ? POLLOUT : 0), deadline_ms)) {
			snprintf(why, sizeof(why), "%s",
				 errno == EINTR ? "interrupted" :
						  "timed out waiting for Redis to answer");
			return fail(r, why);
		}
	}
	r->queued = 0;
	return 0;
}

__u64 backoff_next(struct backoff *b, __u32 rnd)
{
	__u64 d = b->base_ms;
	unsigned int i;

	for (i = 0; i < b->failures && d < b->cap_ms; i++)
		d *= 2;
	if (d > b->cap_ms)
		d = b->cap_ms;
	if (b->failures < 64)
		b->failures++;
	/* From the upper half: d/2 .. d. */
	return d - d / 2 + (d / 2 ? rnd % (d / 2 + 1) : 0);
}

void backoff_reset(struct backoff *b)
{
	b->failures = 0;
}

const char *redis_where(const struct redis *r)
{
	static char buf[REDIS_HOST_MAX + 16];

	snprintf(buf, sizeof(buf), strchr(r->host, ':') ? "[%s]:%s" : "%s:%s", r->host, r->port);
	return buf;
}
