/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * cluster.h - a Redis Cluster behind one struct redis (redis.h), for the
 * fleet agent: the slot map, read from any node (CLUSTER SLOTS); each
 * command routed by the CRC16 of its key (hash tags honoured: a key's
 * {...} part, if not empty, is hashed alone; the fleet's keys have none,
 * so they spread over every slot) to its slot's master; a round's pipeline
 * split per node and exchanged with every node at once (one poll() over
 * their sockets, bounded by the round's deadline); -MOVED followed (the
 * map read again, the command sent to the node named within the round),
 * -ASK followed once (ASKING, then the command, to the node named).
 *
 * A node that fails (down, refused, timed out) fails its commands for
 * this round only: each comes to the caller's reply function as an error
 * reply saying so ("node HOST:PORT: cannot connect: ..."), the others go
 * on; the node is tried again after a back-off of its own (100 ms,
 * doubling, at most 2 s), and the map is read again (a replica promoted
 * in its place takes its slots). A node's connection takes only a share of
 * what is left of the round (cluster_connect_deadline), so that one that
 * does not answer leaves the others most of it; a node that answers but
 * runs out of the round fails its commands left, and is not backed off.
 * Bottom layer: redis.h and resp.h only.
 */
#ifndef XDP_RL_CLUSTER_H
#define XDP_RL_CLUSTER_H

#include <stddef.h>
#include <linux/types.h>
#include "redis.h"
#include "resp.h"

#define CLUSTER_NSLOTS 16384

/* What became of a command of a round (struct redis_cmd's state). */
enum redis_cmd_state {
	CMD_QUEUED, /* to be sent (first, or again after a redirection) */
	CMD_SENT,   /* sent to a node, its reply owed */
	CMD_DONE,   /* its reply (or its failure) went to the caller */
};

/* One master (or a node a redirection named). */
struct cluster_node {
	struct redis c; /* its connection (never a cluster itself) */
	size_t *idx;	/* the commands in its pipeline: their index in the round */
	size_t nidx, capidx;
	struct backoff b;		     /* after it failed */
	__u64 retry_at_ms;		     /* not tried before then */
	__u64 commands, bytes_out, bytes_in; /* of its counters, those added to the client's */
	__u64 pass_in;			     /* c.bytes_in as this pass's exchange began */
	int masters;			     /* holds slots in the map */
	char down[192];			     /* why it failed, as its commands' error replies say */
};

/* The most nodes one client keeps (a cluster of 16384 masters is not one to meet). */
#define CLUSTER_NODES_MAX 512

struct redis_cluster {
	struct cluster_node **node; /* each its own allocation: a node stays where it is */
	size_t nnodes, capnodes;
	__u16 owner[CLUSTER_NSLOTS]; /* the node of each slot, + 1; 0: none known */
	int stale;		     /* the map is to be read again */
	int moved;		     /* ... now: a -MOVED said it changed */
	__u64 read_at_ms;	     /* when it was last read */
	/* This exchange: replies from Redis, and whether the caller refused one. */
	size_t answered, refused;
	char why[160]; /* the last node's failure */
};

/*
 * When a node's connection (AUTH included) begun at @now_ms in a round
 * ending at @deadline_ms gives up: a quarter of what is left of the round,
 * at most CLUSTER_CONNECT_MS, at least CLUSTER_CONNECT_MIN_MS, never past
 * the deadline. A master that does not answer (SYNs unanswered) then costs
 * the others' exchange only part of the round.
 */
#define CLUSTER_CONNECT_MS     1000
#define CLUSTER_CONNECT_MIN_MS 20
__u64 cluster_connect_deadline(__u64 now_ms, __u64 deadline_ms);

/* CRC16 (XMODEM: polynomial 0x1021, from 0), Redis Cluster's key hash. */
__u16 cluster_crc16(const char *p, size_t len);
/* The hash slot of key @k[0..len): of its hash tag, if it has one. */
unsigned int cluster_slot(const char *k, size_t len);

/*
 * Whether error reply @rep is a redirection: 1 for "MOVED SLOT HOST:PORT",
 * 2 for "ASK SLOT HOST:PORT" (@slot, @host, @port filled; an empty HOST:
 * the host of the node that answered), 0 for any other error.
 */
int cluster_parse_redirect(const struct resp_reply *rep, unsigned int *slot,
			   char host[REDIS_HOST_MAX + 1], char port[8]);

/*
 * A CLUSTER SLOTS reply @rep into @r's map (@host: of the node that
 * answered, for a master whose address is empty): the masters (as nodes),
 * each slot's owner. The number of slots mapped, or -1 (not such a reply,
 * or out of memory).
 */
long cluster_apply_slots(struct redis *r, const struct resp_reply *rep, const char *host);

/* ---- for redis.c ---------------------------------------------------------------------- */

/*
 * Error reply @rep to command @c of @r, from a node on host @from: a redirection? Then @c is queued
 * again for the node named (made a cluster client if it is not one yet):
 * 1. 0: not one; -1: out of memory.
 */
int cluster_redirected(struct redis *r, const char *from, const struct resp_reply *rep,
		       struct redis_cmd *c);
/* @r's own connection turned out to be a node's: it becomes that node's, and
 * the commands redirected go on as a cluster's. redis_exchange's. */
int cluster_adopt(struct redis *r, redis_reply_fn fn, void *ctx, __u64 deadline_ms);
/* Read the slot map from a seed or a known node: redis_connect's, in a cluster. */
int cluster_connect(struct redis *r, __u64 deadline_ms);
int cluster_exchange(struct redis *r, redis_reply_fn fn, void *ctx, __u64 deadline_ms);
int cluster_connected(const struct redis *r);
size_t cluster_masters(const struct redis *r);
void cluster_close(struct redis *r);
void cluster_free(struct redis *r);

#endif
