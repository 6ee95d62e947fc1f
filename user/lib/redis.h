/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * redis.h - one connection to Redis (or a proxy that speaks its protocol,
 * such as nutcracker), for the fleet agent: connect with AUTH, then send a
 * pipeline of commands and read their replies, every step bounded by a
 * deadline. Sockets are non-blocking and every wait is a poll() with what
 * is left of the deadline, so a Redis that is slow or gone costs the agent
 * at most that long, and a signal cuts it short. Counts commands and bytes
 * both ways. Bottom layer: resp.h and log.h only.
 */
#ifndef XDP_RL_REDIS_H
#define XDP_RL_REDIS_H

#include <stddef.h>
#include <linux/types.h>
#include "resp.h"

/* The longest HOST of --redis HOST:PORT. */
#define REDIS_HOST_MAX 255

struct redis {
	int fd; /* -1: not connected */
	char host[REDIS_HOST_MAX + 1];
	char port[8];
	const char *password; /* NULL: no AUTH */
	struct resp_buf out;  /* commands not yet sent */
	struct resp_buf in;   /* bytes not yet parsed */
	size_t queued;	      /* commands in out (and so replies owed) */
	__u64 commands, bytes_out, bytes_in;
	char why[160]; /* why the last call failed */
};

/* "host:port", "[2001:2::1]:port" for an IPv6 address (a static buffer). */
const char *redis_where(const struct redis *r);

/* A connection not yet made; redis_free() when done with it. */
void redis_init(struct redis *r);
void redis_free(struct redis *r);

/*
 * HOST:PORT, [IPV6]:PORT, or HOST alone (port 6379): into @r's host and
 * port. NULL, or why it is refused.
 */
const char *redis_parse_addr(struct redis *r, const char *s);

/* Milliseconds on CLOCK_MONOTONIC, the clock of every deadline here. */
__u64 redis_now_ms(void);

/*
 * Connect (and AUTH with r->password), giving up at @deadline_ms. 0, or -1
 * with r->why set; errno EINTR if a signal cut it short.
 */
int redis_connect(struct redis *r, __u64 deadline_ms);
void redis_close(struct redis *r);

/* Queue a command (argv as resp_cmd takes it): 0, or -1. */
int redis_queue(struct redis *r, int argc, const char *const *argv, const size_t *lens);

/* What to do with each reply of a pipeline, in order: 0 to go on, -1 to stop. */
typedef int (*redis_reply_fn)(const struct resp_reply *rep, size_t i, void *ctx);

/*
 * Send every queued command and read their replies, each to @fn, giving up
 * at @deadline_ms. 0 when every reply came, or -1 with r->why set (the
 * connection is closed: replies still owed cannot be told apart from the
 * next ones); errno EINTR if a signal cut it short.
 */
int redis_exchange(struct redis *r, redis_reply_fn fn, void *ctx, __u64 deadline_ms);

/*
 * Exponential back-off between attempts to reach Redis: @base_ms after the
 * first failure, doubling, at most @cap_ms; each delay drawn from its upper
 * half with @rnd (any random number), so that agents that failed together
 * do not come back in step.
 */
struct backoff {
	__u64 base_ms, cap_ms;
	unsigned int failures;
};

/* The delay before the next attempt, after one more failure. */
__u64 backoff_next(struct backoff *b, __u32 rnd);
/* A success: the next failure waits @base_ms again. */
void backoff_reset(struct backoff *b);

#endif
