/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * redis.h - one connection to Redis (or a proxy that speaks its protocol,
 * such as nutcracker), for the fleet agent: connect with AUTH, then send a
 * pipeline of commands and read their replies, every step bounded by a
 * deadline. Sockets are non-blocking and every wait is a poll() with what
 * is left of the deadline, so a Redis that is slow or gone costs the agent
 * at most that long, and a signal cuts it short. Counts commands and bytes
 * both ways. A Redis Cluster is followed by cluster.c (cluster.h). Over
 * TLS (tls.h) when given a context: the handshake and every read and write
 * are as non-blocking and as bounded, and the counts are of the payload.
 * Bottom layer: resp.h, options.h and tls.h only.
 */
#ifndef XDP_RL_REDIS_H
#define XDP_RL_REDIS_H

#include <stddef.h>
#include <linux/types.h>
#include "resp.h"

/* The longest HOST of --redis HOST:PORT. */
#define REDIS_HOST_MAX 255

/* A HOST:PORT of --redis (one of several seeds of a cluster). */
struct redis_addr {
	char host[REDIS_HOST_MAX + 1];
	char port[8];
};

/* A command of the pipeline being built (its bytes in out), for routing in a cluster. */
struct redis_cmd {
	size_t off, len;
	int slot;	     /* its key's hash slot; -1: no key (PING) */
	int to;		     /* a redirection: the cluster node to send it to; -1: by slot */
	unsigned char ask;   /* -ASK: send ASKING before it */
	unsigned char state; /* enum redis_cmd_state (cluster.h) */
};

struct redis_cluster; /* cluster.h */
struct redis_tls;     /* tls.h */
struct ssl_st;

struct redis {
	int fd; /* -1: not connected */
	char host[REDIS_HOST_MAX + 1];
	char port[8];
	const char *password;	     /* NULL: no AUTH */
	const char *user;	     /* AUTH USER PASSWORD (an ACL user); NULL: AUTH PASSWORD */
	const struct redis_tls *tls; /* NULL: plain TCP */
	struct ssl_st *ssl;	     /* the TLS session of fd */
	short tls_wait;		     /* what the session waits for, besides POLLIN */
	struct resp_buf out;	     /* commands: those before @sent are sent */
	struct resp_buf in;	     /* bytes not yet parsed */
	size_t sent;		     /* bytes of out sent */
	size_t queued;		     /* commands in out (and so replies owed) */
	size_t done;		     /* replies read of those */
	/* TLS: the last write waits to read first (then POLLOUT would spin). */
	unsigned char send_wants_read;
	/*
	 * Replies still owed to commands given up on (a cluster's round that
	 * ran out of time, its node not at fault): read and dropped before
	 * the next pipeline's, so that the connection stays in step.
	 */
	size_t skip;
	__u64 commands, bytes_out, bytes_in;
	char why[160]; /* why the last call failed */
	/* The pipeline's commands, as queued (routed by key in a cluster). */
	struct redis_cmd *cmd;
	size_t ncmd, capcmd;
	/* --redis: the seeds (the first is host and port above). */
	struct redis_addr *seeds;
	size_t nseeds;
	/*
	 * A Redis Cluster (cluster.h): given several seeds, or found by a
	 * -MOVED reply; then the connections are its nodes', and fd stays -1.
	 */
	struct redis_cluster *cl;
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
/*
 * One or more addresses, comma-separated (a cluster's seeds), added to
 * @r's seeds; the first ever given is also @r's host and port. NULL, or
 * why they are refused (@r's seeds as they were).
 */
const char *redis_add_seeds(struct redis *r, const char *s);
/*
 * The sockets of @r's open connections (in a cluster, its nodes'), at most
 * @max into @fds: how many.
 */
size_t redis_fds(const struct redis *r, int *fds, size_t max);
/* Whether a connection is open (in a cluster: to any node). */
int redis_connected(const struct redis *r);
/* In a cluster: the masters of its slot map; 0 when not a cluster (or none known yet). */
size_t redis_masters(const struct redis *r);

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
 * Send every queued command and read their replies, each to @fn with the
 * command's index in the order queued, giving up at @deadline_ms. 0 when
 * every reply came, or -1 with r->why set (the connection is closed:
 * replies still owed cannot be told apart from the next ones); errno EINTR
 * if a signal cut it short. A reply that fails @fn closes the connection
 * and says the reply in r->why.
 *
 * A -MOVED or -ASK reply makes @r a cluster client (cluster.h): the
 * command goes to the node named, within the deadline. In a cluster, the
 * commands go to their slots' masters, all at once; a command that a
 * node failed to answer (down, timed out) comes to @fn as an error reply
 * saying so, and -1 is returned only when no node is left connected (or
 * @fn refused a reply).
 */
int redis_exchange(struct redis *r, redis_reply_fn fn, void *ctx, __u64 deadline_ms);

/* ---- for cluster.c: the steps of an exchange on one connection ---------------------- */

/*
 * Send what the socket takes, hand each reply come to @fn (index from
 * r->done), read what has come; no waiting. 1: every reply came; 0: wait
 * for redis_events(); -1: failed (closed, r->why set).
 */
int redis_pump(struct redis *r, redis_reply_fn fn, void *ctx);
/* The poll() events a pump waits for. */
short redis_events(const struct redis *r);
/* Queue bytes that are one whole command: 0, or -1. */
int redis_queue_raw(struct redis *r, const char *p, size_t len);
/* The pipeline done with: nothing queued, nothing owed. */
void redis_clear(struct redis *r);
/* Connect one connection (never a cluster): redis_connect's. */
int redis_connect_one(struct redis *r, __u64 deadline_ms);
/* Exchange on one connection (never a cluster), with no redirection. */
int redis_exchange_one(struct redis *r, redis_reply_fn fn, void *ctx, __u64 deadline_ms);

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
