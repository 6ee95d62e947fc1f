/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sentinel.h - Redis Sentinel for the fleet agent: which Redis is the
 * master of a name now, asked of the sentinels in turn (SENTINEL
 * get-master-addr-by-name), each ask bounded by the caller's deadline. The
 * agent asks before every connection, so a failover is followed at the
 * next connection: a master that is demoted refuses writes (-READONLY),
 * the agent counts the round failed, reconnects and asks again. Bottom
 * layer: redis.h.
 */
#ifndef XDP_RL_SENTINEL_H
#define XDP_RL_SENTINEL_H

#include <stddef.h>
#include <linux/types.h>
#include "redis.h"

/* The most sentinels taken. */
#define SENTINEL_MAX 16
/* The longest master name (Sentinel's own names are short words). */
#define SENTINEL_NAME_MAX 63

struct sentinel {
	struct redis_addr addr[SENTINEL_MAX];
	size_t n;
	size_t first; /* the one to ask first: the last that answered */
	char name[SENTINEL_NAME_MAX + 1];
	const struct redis_tls *tls; /* --tls: the sentinels are asked over TLS too */
};

/*
 * --sentinel HOST:PORT[,HOST:PORT...] into @s (port 26379 if not given),
 * and --master NAME: NULL, or why they are refused.
 */
const char *sentinel_parse(struct sentinel *s, const char *list);
const char *sentinel_name(struct sentinel *s, const char *name);

/*
 * The master's address now, into @out: each sentinel in turn, from the
 * last that answered, until one names it or @deadline_ms passes. 0, or -1
 * with why in @why (every sentinel's failure, the last said).
 */
int sentinel_master(struct sentinel *s, struct redis_addr *out, __u64 deadline_ms, char *why,
		    size_t len);

/*
 * The master named by a reply to SENTINEL get-master-addr-by-name (an
 * array of host and port), into @out: 0; 1 if the sentinel knows no such
 * master (nil); -1 if the reply is no such thing. Pure: the unit tests.
 */
int sentinel_reply(const struct resp_reply *rep, struct redis_addr *out);

#endif
