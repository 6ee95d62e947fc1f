// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* redis.c - one deadline-bounded connection to Redis (see redis.h). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "cluster.h"
#include "options.h"
#include "redis.h"
#include "tls.h"
#include "vec.h"

#define REDIS_DEFAULT_PORT "6379"

void redis_init(struct redis *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

void redis_free(struct redis *r)
{
	redis_close(r);
	cluster_free(r);
	resp_buf_free(&r->out);
	resp_buf_free(&r->in);
	free(r->cmd);
	free(r->seeds);
	r->cmd = NULL;
	r->seeds = NULL;
	r->ncmd = r->capcmd = r->nseeds = 0;
}

__u64 redis_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* HOST:PORT (as redis_parse_addr takes it) into @host and @port: NULL, or why not. */
static const char *parse_hostport(const char *s, char *out_host, char *out_port)
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
	memcpy(out_host, host, hlen);
	out_host[hlen] = '\0';
	snprintf(out_port, sizeof(((struct redis *)0)->port), "%s",
		 colon ? colon + 1 : REDIS_DEFAULT_PORT);
	return NULL;
}

const char *redis_parse_addr(struct redis *r, const char *s)
{
	struct redis_addr a;
	const char *why = parse_hostport(s, a.host, a.port);

	if (!why) {
		memcpy(r->host, a.host, sizeof(r->host));
		memcpy(r->port, a.port, sizeof(r->port));
	}
	return why;
}

/* The most seeds taken (more than a cluster's masters would be odd). */
#define REDIS_SEEDS_MAX 64

const char *redis_add_seeds(struct redis *r, const char *s)
{
	char one[REDIS_HOST_MAX + 16];
	struct redis_addr *v;
	const char *comma, *why;
	size_t n = 0, len, k;

	for (const char *p = s;; p = comma + 1) {
		comma = strchr(p, ',');
		n++;
		if (!comma)
			break;
	}
	if (r->nseeds + n > REDIS_SEEDS_MAX)
		return "too many addresses (at most 64)";
	v = realloc(r->seeds, (r->nseeds + n) * sizeof(*v));
	if (!v)
		return "out of memory";
	r->seeds = v;
	for (k = 0; k < n; k++) {
		comma = strchr(s, ',');
		len = comma ? (size_t)(comma - s) : strlen(s);
		if (len >= sizeof(one))
			return "host name too long";
		memcpy(one, s, len);
		one[len] = '\0';
		why = parse_hostport(one, v[r->nseeds + k].host, v[r->nseeds + k].port);
		if (why)
			return why;
		if (comma)
			s = comma + 1;
	}
	if (!r->nseeds) {
		memcpy(r->host, v[0].host, sizeof(r->host));
		memcpy(r->port, v[0].port, sizeof(r->port));
	}
	r->nseeds += n;
	return NULL;
}

int redis_connected(const struct redis *r)
{
	return r->cl ? cluster_connected(r) : r->fd >= 0;
}

size_t redis_masters(const struct redis *r)
{
	return r->cl ? cluster_masters(r) : 0;
}

void redis_clear(struct redis *r)
{
	r->out.len = r->sent = 0;
	r->queued = r->done = 0;
	r->ncmd = 0;
}

void redis_close(struct redis *r)
{
	if (r->ssl)
		tls_close(r->ssl);
	r->ssl = NULL;
	r->tls_wait = 0;
	r->send_wants_read = 0;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	r->in.len = 0;
	r->skip = 0;
	redis_clear(r);
	if (r->cl)
		cluster_close(r);
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

size_t redis_fds(const struct redis *r, int *fds, size_t max)
{
	size_t n = 0, i;

	if (r->fd >= 0 && n < max)
		fds[n++] = r->fd;
	for (i = 0; r->cl && i < r->cl->nnodes && n < max; i++)
		if (r->cl->node[i]->c.fd >= 0)
			fds[n++] = r->cl->node[i]->c.fd;
	return n;
}

/* The TLS handshake on the connected socket, until @deadline_ms: 0, or -1 (closed). */
static int handshake(struct redis *r, __u64 deadline_ms)
{
	char why[sizeof(r->why)];
	short events = 0;
	int rc;

	r->ssl = tls_new(r->tls, r->fd, r->host, why, sizeof(why));
	if (!r->ssl) {
		errno = ENOMEM;
		return fail(r, why);
	}
	while (!(rc = tls_handshake(r->ssl, &events, why, sizeof(why)))) {
		if (wait_for(r, events, deadline_ms))
			return fail(r, errno == EINTR ? "interrupted" :
							"timed out in the TLS handshake");
	}
	return rc < 0 ? fail(r, why) : 0;
}

int redis_connect(struct redis *r, __u64 deadline_ms)
{
	if (r->cl || r->nseeds > 1)
		return cluster_connect(r, deadline_ms);
	return redis_connect_one(r, deadline_ms);
}

int redis_connect_one(struct redis *r, __u64 deadline_ms)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC }, *res, *ai;
	const char *auth[] = { "AUTH", r->user ? r->user : r->password, r->password };
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
	if (r->tls && handshake(r, deadline_ms))
		return -1;
	if (!r->password)
		return 0;
	if (redis_queue(r, r->user ? 3 : 2, auth, NULL))
		return fail(r, "out of memory");
	if (redis_exchange_one(r, auth_reply, r, deadline_ms))
		return -1;
	redis_clear(r);
	return 0;
}

int redis_queue(struct redis *r, int argc, const char *const *argv, const size_t *lens)
{
	size_t off = r->out.len;
	struct redis_cmd *c;

	if (vec_room(r->cmd, r->ncmd, r->capcmd, 1, 256) || resp_cmd(&r->out, argc, argv, lens))
		return -1;
	c = &r->cmd[r->ncmd++];
	c->off = off;
	c->len = r->out.len - off;
	c->slot = argc > 1 ? (int)cluster_slot(argv[1], lens ? lens[1] : strlen(argv[1])) : -1;
	c->to = -1;
	c->ask = 0;
	c->state = CMD_QUEUED;
	r->queued++;
	/* A cluster's nodes count what they send. */
	if (!r->cl)
		r->commands++;
	return 0;
}

int redis_queue_raw(struct redis *r, const char *p, size_t len)
{
	if (resp_buf_room(&r->out, len))
		return -1;
	memcpy(r->out.p + r->out.len, p, len);
	r->out.len += len;
	r->queued++;
	r->commands++;
	return 0;
}

/* Send what the socket takes now: 0, or -1 (a real error, said in @why; EAGAIN is 0). */
static int send_some(struct redis *r, char *why, size_t len)
{
	short ev = 0;
	ssize_t n;

	r->send_wants_read = 0;
	while (r->sent < r->out.len) {
		if (r->ssl)
			n = tls_write(r->ssl, r->out.p + r->sent, r->out.len - r->sent, &ev, why,
				      len);
		else
			n = send(r->fd, r->out.p + r->sent, r->out.len - r->sent,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			r->send_wants_read = ev == POLLIN;
			return 0;
		}
		if (n < 0) {
			if (!r->ssl)
				snprintf(why, len, "%s", strerror(errno));
			return -1;
		}
		r->bytes_out += n;
		r->sent += n;
	}
	return 0;
}

/*
 * Read what has come: bytes read (0: the peer closed), or -1 (EAGAIN:
 * nothing yet; else said in @why).
 */
static ssize_t recv_some(struct redis *r, char *why, size_t len)
{
	ssize_t n;

	if (resp_buf_room(&r->in, 16384)) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	if (r->ssl)
		n = tls_read(r->ssl, r->in.p + r->in.len, r->in.cap - r->in.len, &r->tls_wait, why,
			     len);
	else
		n = recv(r->fd, r->in.p + r->in.len, r->in.cap - r->in.len, MSG_DONTWAIT);
	if (n < 0 && !r->ssl)
		snprintf(why, len, "%s", strerror(errno));
	if (n > 0) {
		r->in.len += n;
		r->bytes_in += n;
	}
	return n;
}

/* What a reply says, for a message: its type's byte and up to 100 bytes of it. */
static void say_reply(char *buf, size_t len, const struct resp_reply *rep)
{
	static const char type[] = { [RESP_STATUS] = '+', [RESP_ERROR] = '-', [RESP_INT] = ':',
				     [RESP_BULK] = '$',	  [RESP_NIL] = '$',   [RESP_ARRAY] = '*' };

	if (rep->type == RESP_NIL || rep->type == RESP_ARRAY)
		snprintf(buf, len, "unexpected reply (%s)",
			 rep->type == RESP_NIL ? "nil" : "array");
	else
		snprintf(buf, len, "unexpected reply '%c%.*s'", type[rep->type],
			 (int)(rep->len > 100 ? 100 : rep->len), rep->s);
}

short redis_events(const struct redis *r)
{
	/*
	 * POLLIN always (replies, or what TLS wants); POLLOUT while there is
	 * more to send, unless TLS must read before it writes again: the
	 * socket would be writable at once, and the poll() loop spin.
	 */
	return POLLIN | (r->sent < r->out.len && !r->send_wants_read ? POLLOUT : 0) | r->tls_wait;
}

int redis_pump(struct redis *r, redis_reply_fn fn, void *ctx)
{
	size_t off = 0;
	struct resp_reply rep;
	char why[sizeof(r->why)], io[sizeof(r->why) - 20];
	long used;
	ssize_t n;

	r->tls_wait = 0;
	for (;;) {
		/* Writing and reading interleave: Redis answers while a long pipeline is sent. */
		if (send_some(r, io, sizeof(io))) {
			snprintf(why, sizeof(why), "cannot send: %s", io);
			return fail(r, why);
		}
		while (r->done < r->queued) {
			used = resp_parse(r->in.p + off, r->in.len - off, &rep);
			if (used < 0) {
				errno = EPROTO;
				return fail(r, "not a Redis reply");
			}
			if (!used)
				break;
			off += used;
			if (r->skip) {
				r->skip--; /* a reply to a command given up on: not this pipeline's */
				continue;
			}
			if (fn(&rep, r->done++, ctx)) {
				if (!r->why[0])
					say_reply(r->why, sizeof(r->why), &rep);
				errno = EPROTO;
				return fail(r, NULL);
			}
		}
		resp_buf_consume(&r->in, off);
		off = 0;
		if (r->done == r->queued)
			return 1;
		n = recv_some(r, io, sizeof(io));
		if (n > 0)
			continue;
		if (!n) {
			errno = ECONNRESET;
			return fail(r, "connection closed by Redis");
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			snprintf(why, sizeof(why), "cannot receive: %s", io);
			return fail(r, why);
		}
		return 0;
	}
}

int redis_exchange_one(struct redis *r, redis_reply_fn fn, void *ctx, __u64 deadline_ms)
{
	char why[sizeof(r->why)];
	int rc;

	if (r->fd < 0) {
		errno = ENOTCONN;
		snprintf(r->why, sizeof(r->why), "not connected");
		return -1;
	}
	r->why[0] = '\0';
	r->done = 0;
	while (!(rc = redis_pump(r, fn, ctx))) {
		if (wait_for(r, redis_events(r), deadline_ms)) {
			snprintf(why, sizeof(why), "%s",
				 errno == EINTR ? "interrupted" :
						  "timed out waiting for Redis to answer");
			return fail(r, why);
		}
	}
	return rc < 0 ? -1 : 0;
}

/* A reply of a connection that may turn out to be a cluster's node. */
struct top {
	struct redis *r;
	redis_reply_fn fn;
	void *ctx;
	size_t redirected;
};

static int top_reply(const struct resp_reply *rep, size_t i, void *ctx)
{
	struct top *t = ctx;
	struct redis *r = t->r;

	if (i < r->ncmd && rep->type == RESP_ERROR &&
	    cluster_redirected(r, r->host, rep, &r->cmd[i]) > 0) {
		t->redirected++;
		return 0;
	}
	if (i < r->ncmd)
		r->cmd[i].state = CMD_DONE;
	return t->fn(rep, i, t->ctx);
}

int redis_exchange(struct redis *r, redis_reply_fn fn, void *ctx, __u64 deadline_ms)
{
	struct top t = { .r = r, .fn = fn, .ctx = ctx };
	int rc;

	if (r->cl) {
		rc = cluster_exchange(r, fn, ctx, deadline_ms);
		redis_clear(r);
		return rc;
	}
	rc = redis_exchange_one(r, top_reply, &t, deadline_ms);
	if (!rc && t.redirected) {
		/* -MOVED or -ASK: a cluster's node. Its commands go where they belong. */
		rc = cluster_adopt(r, fn, ctx, deadline_ms);
	}
	redis_clear(r);
	return rc;
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
