// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sentinel.c - the master Redis Sentinel names (see sentinel.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sentinel.h"

#define SENTINEL_PORT "26379"

/* Whether HOST:PORT @a gives a port: [IPV6]:PORT, or HOST:PORT with one colon. */
static int port_given(const char *a)
{
	const char *colon = strrchr(a, ':'), *close = strchr(a, ']');

	if (!colon)
		return 0;
	return a[0] == '[' ? close && colon > close : strchr(a, ':') == colon;
}

const char *sentinel_parse(struct sentinel *s, const char *list)
{
	char one[REDIS_HOST_MAX + 16];
	struct redis probe;
	const char *p = list, *comma, *why;
	size_t n = 0, len;

	memset(s->addr, 0, sizeof(s->addr));
	for (;; p = comma + 1) {
		comma = strchr(p, ',');
		len = comma ? (size_t)(comma - p) : strlen(p);
		if (!len)
			return "an empty address in the list";
		if (len >= sizeof(one))
			return "an address too long";
		if (n == SENTINEL_MAX)
			return "too many sentinels (at most 16)";
		memcpy(one, p, len);
		one[len] = '\0';
		redis_init(&probe);
		why = redis_parse_addr(&probe, one);
		if (!why) {
			snprintf(s->addr[n].host, sizeof(s->addr[n].host), "%s", probe.host);
			/* HOST alone: Sentinel's port, not Redis's. */
			snprintf(s->addr[n].port, sizeof(s->addr[n].port), "%s",
				 port_given(one) ? probe.port : SENTINEL_PORT);
		}
		redis_free(&probe);
		if (why)
			return why;
		n++;
		if (!comma)
			break;
	}
	s->n = n;
	s->first = 0;
	return NULL;
}

const char *sentinel_name(struct sentinel *s, const char *name)
{
	size_t n = strlen(name), i;

	if (!n)
		return "empty";
	if (n > SENTINEL_NAME_MAX)
		return "longer than 63 characters";
	for (i = 0; i < n; i++)
		if ((unsigned char)name[i] <= ' ' || name[i] == 127)
			return "a name has no spaces or control characters";
	memcpy(s->name, name, n + 1);
	return NULL;
}

int sentinel_reply(const struct resp_reply *rep, struct redis_addr *out)
{
	struct resp_reply host, port;
	long a, b;

	if (rep->type == RESP_NIL)
		return 1;
	if (rep->type != RESP_ARRAY || rep->n != 2)
		return -1;
	a = resp_parse(rep->s, rep->len, &host);
	if (a <= 0 || host.type != RESP_BULK)
		return -1;
	b = resp_parse(rep->s + a, rep->len - a, &port);
	if (b <= 0 || port.type != RESP_BULK || !host.len || host.len > REDIS_HOST_MAX ||
	    !port.len || port.len >= sizeof(out->port))
		return -1;
	for (size_t i = 0; i < port.len; i++)
		if (port.s[i] < '0' || port.s[i] > '9')
			return -1;
	memcpy(out->host, host.s, host.len);
	out->host[host.len] = '\0';
	memcpy(out->port, port.s, port.len);
	out->port[port.len] = '\0';
	return 0;
}

struct ask {
	struct redis_addr *out;
	int got; /* sentinel_reply's */
};

static int on_reply(const struct resp_reply *rep, size_t i, void *ctx)
{
	struct ask *a = ctx;

	(void)i;
	a->got = sentinel_reply(rep, a->out);
	return 0;
}

int sentinel_master(struct sentinel *s, struct redis_addr *out, __u64 deadline_ms, char *why,
		    size_t len)
{
	const char *argv[] = { "SENTINEL", "get-master-addr-by-name", s->name };
	struct redis q;
	struct ask a;
	size_t k, i;

	snprintf(why, len, "no sentinel given");
	for (k = 0; k < s->n; k++) {
		i = (s->first + k) % s->n;
		if (redis_now_ms() >= deadline_ms) {
			snprintf(why, len, "no sentinel answered in time");
			break;
		}
		redis_init(&q);
		memcpy(q.host, s->addr[i].host, sizeof(q.host));
		memcpy(q.port, s->addr[i].port, sizeof(q.port));
		q.tls = s->tls;
		a.out = out;
		a.got = -1;
		if (redis_connect_one(&q, deadline_ms) || redis_queue(&q, 3, argv, NULL) ||
		    redis_exchange_one(&q, on_reply, &a, deadline_ms)) {
			snprintf(why, len, "sentinel %s: %s", redis_where(&q),
				 q.why[0] ? q.why : "out of memory");
		} else if (a.got == 1) {
			snprintf(why, len, "sentinel %s knows no master named '%s'",
				 redis_where(&q), s->name);
		} else if (a.got < 0) {
			snprintf(why, len, "sentinel %s: an unexpected reply", redis_where(&q));
		} else {
			redis_free(&q);
			s->first = i;
			return 0;
		}
		redis_free(&q);
		if (errno == EINTR)
			break;
	}
	return -1;
}
