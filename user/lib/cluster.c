// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cluster.c - a Redis Cluster behind one struct redis (see cluster.h). */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "options.h"
#include "tls.h"
#include "vec.h"

/* A round's commands are sent at most this many times (the first, and redirections). */
#define CLUSTER_PASSES 5
/*
 * A node given less than this to answer, when the round ran out, was not
 * given time: its commands fail, but it is not taken for down.
 */
#define CLUSTER_ANSWER_MS 100
/* A node that failed is tried again after this, doubling, at most the cap. */
#define CLUSTER_RETRY_MS     100
#define CLUSTER_RETRY_CAP_MS 2000
/* The map is read again at most this often after a node failed (a -MOVED: at once). */
#define CLUSTER_REREAD_MS 1000
/* In a node's pipeline: ASKING, not a command of the round. */
#define IDX_ASKING SIZE_MAX

__u16 cluster_crc16(const char *p, size_t len)
{
	__u16 crc = 0;
	size_t i;
	int b;

	for (i = 0; i < len; i++) {
		crc ^= (__u16)((unsigned char)p[i] << 8);
		for (b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (__u16)((crc << 1) ^ 0x1021) : (__u16)(crc << 1);
	}
	return crc;
}

unsigned int cluster_slot(const char *k, size_t len)
{
	const char *open = memchr(k, '{', len), *close;

	/* A hash tag: from the first '{' to the first '}' after it, if not empty. */
	if (open) {
		close = memchr(open + 1, '}', len - (open + 1 - k));
		if (close && close > open + 1)
			return cluster_crc16(open + 1, close - open - 1) & (CLUSTER_NSLOTS - 1);
	}
	return cluster_crc16(k, len) & (CLUSTER_NSLOTS - 1);
}

int cluster_parse_redirect(const struct resp_reply *rep, unsigned int *slot,
			   char host[REDIS_HOST_MAX + 1], char port[8])
{
	const char *p = rep->s, *end, *colon, *sp;
	__u64 v;
	char num[8];
	int kind;

	if (rep->type != RESP_ERROR || !p)
		return 0;
	end = p + rep->len;
	if (rep->len > 6 && !memcmp(p, "MOVED ", 6)) {
		kind = 1;
		p += 6;
	} else if (rep->len > 4 && !memcmp(p, "ASK ", 4)) {
		kind = 2;
		p += 4;
	} else {
		return 0;
	}
	sp = memchr(p, ' ', end - p);
	if (!sp || sp == p || sp - p > 5)
		return 0;
	memcpy(num, p, sp - p);
	num[sp - p] = '\0';
	if (parse_u64(num, 0, CLUSTER_NSLOTS - 1, &v))
		return 0;
	*slot = (unsigned int)v;
	p = sp + 1;
	/* HOST:PORT, the host bare even when IPv6: the port follows the last ':'. */
	for (colon = end; colon > p && colon[-1] != ':'; colon--)
		;
	if (colon == p || end - colon < 1 || end - colon > 5 ||
	    (size_t)(colon - 1 - p) > REDIS_HOST_MAX)
		return 0;
	memcpy(num, colon, end - colon);
	num[end - colon] = '\0';
	if (parse_u64(num, 1, 65535, &v))
		return 0;
	memcpy(host, p, colon - 1 - p);
	host[colon - 1 - p] = '\0';
	for (sp = host; *sp; sp++)
		if (*sp <= ' ' || (unsigned char)*sp >= 0x7f)
			return 0;
	snprintf(port, 8, "%s", num);
	return kind;
}

/* ---- the nodes -------------------------------------------------------------------------- */

static struct redis_cluster *get_cl(struct redis *r)
{
	if (!r->cl)
		r->cl = calloc(1, sizeof(*r->cl));
	return r->cl;
}

/* The node at @host:@port, made if need be: its index, or -1 (out of memory, too many). */
static long node_at(struct redis *r, const char *host, const char *port)
{
	struct redis_cluster *cl = get_cl(r);
	struct cluster_node *n;
	size_t i;

	if (!cl)
		return -1;
	for (i = 0; i < cl->nnodes; i++)
		if (!strcmp(cl->node[i]->c.host, host) && !strcmp(cl->node[i]->c.port, port))
			return (long)i;
	if (cl->nnodes >= CLUSTER_NODES_MAX || strlen(host) > REDIS_HOST_MAX ||
	    vec_room(cl->node, cl->nnodes, cl->capnodes, 1, 8))
		return -1;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -1;
	redis_init(&n->c);
	snprintf(n->c.host, sizeof(n->c.host), "%s", host);
	snprintf(n->c.port, sizeof(n->c.port), "%s", port);
	n->c.password = r->password;
	n->c.user = r->user;
	n->c.tls = r->tls;
	n->b.base_ms = CLUSTER_RETRY_MS;
	n->b.cap_ms = CLUSTER_RETRY_CAP_MS;
	cl->node[cl->nnodes] = n;
	return (long)cl->nnodes++;
}

/* Its counters' growth into the client's (which the agent reports). */
static void count(struct redis *r)
{
	struct cluster_node *n;
	size_t i;

	for (i = 0; r->cl && i < r->cl->nnodes; i++) {
		n = r->cl->node[i];
		r->commands += n->c.commands - n->commands;
		r->bytes_out += n->c.bytes_out - n->bytes_out;
		r->bytes_in += n->c.bytes_in - n->bytes_in;
		n->commands = n->c.commands;
		n->bytes_out = n->c.bytes_out;
		n->bytes_in = n->c.bytes_in;
	}
}

/* Node @n failed (its connection closed, @n->c.why said why): noted, tried again later. */
static void node_failed(struct redis *r, struct cluster_node *n)
{
	snprintf(n->down, sizeof(n->down), "node %s: %s", redis_where(&n->c), n->c.why);
	snprintf(r->cl->why, sizeof(r->cl->why), "%s", n->down);
	redis_close(&n->c);
	n->retry_at_ms = redis_now_ms() + backoff_next(&n->b, (__u32)random());
	r->cl->stale = 1;
}

__u64 cluster_connect_deadline(__u64 now_ms, __u64 deadline_ms)
{
	__u64 share;

	if (now_ms >= deadline_ms)
		return deadline_ms;
	share = (deadline_ms - now_ms) / 4;
	if (share > CLUSTER_CONNECT_MS)
		share = CLUSTER_CONNECT_MS;
	if (share < CLUSTER_CONNECT_MIN_MS)
		share = CLUSTER_CONNECT_MIN_MS;
	return share < deadline_ms - now_ms ? now_ms + share : deadline_ms;
}

/*
 * Connect node @n, giving up at @until_ms, unless it failed too recently:
 * 0, or -1 (n->down says why).
 */
static int node_connect(struct redis *r, struct cluster_node *n, __u64 until_ms)
{
	__u64 now = redis_now_ms();

	if (n->c.fd >= 0)
		return 0;
	if (now < n->retry_at_ms)
		return -1;
	if (redis_connect_one(&n->c, until_ms)) {
		node_failed(r, n);
		return -1;
	}
	backoff_reset(&n->b);
	n->down[0] = '\0';
	return 0;
}

int cluster_connected(const struct redis *r)
{
	size_t i;

	for (i = 0; r->cl && i < r->cl->nnodes; i++)
		if (r->cl->node[i]->c.fd >= 0)
			return 1;
	return 0;
}

size_t cluster_masters(const struct redis *r)
{
	size_t i, n = 0;

	for (i = 0; r->cl && i < r->cl->nnodes; i++)
		n += !!r->cl->node[i]->masters;
	return n;
}

void cluster_close(struct redis *r)
{
	size_t i;

	for (i = 0; r->cl && i < r->cl->nnodes; i++)
		redis_close(&r->cl->node[i]->c);
}

void cluster_free(struct redis *r)
{
	struct cluster_node *n;
	size_t i;

	if (!r->cl)
		return;
	for (i = 0; i < r->cl->nnodes; i++) {
		n = r->cl->node[i];
		redis_free(&n->c);
		free(n->idx);
		free(n);
	}
	free(r->cl->node);
	free(r->cl);
	r->cl = NULL;
}

/* ---- the slot map ------------------------------------------------------------------------- */

/* The next element of an array's bytes: 0, or -1. */
static int next_elem(const char **p, size_t *left, struct resp_reply *e)
{
	long n = *left ? resp_parse(*p, *left, e) : -1;

	if (n <= 0)
		return -1;
	*p += n;
	*left -= n;
	return 0;
}

/* A CLUSTER SLOTS entry: [first, last, [host, port, ...], replicas...]. 0, or -1. */
static int slot_range(const struct resp_reply *ent, long long *lo, long long *hi,
		      struct redis_addr *a, const char *asked)
{
	struct resp_reply e, m;
	const char *p = ent->s, *mp;
	size_t left = ent->len, mleft;

	if (ent->type != RESP_ARRAY || ent->n < 3 || next_elem(&p, &left, &e) || e.type != RESP_INT)
		return -1;
	*lo = e.n;
	if (next_elem(&p, &left, &e) || e.type != RESP_INT)
		return -1;
	*hi = e.n;
	if (*lo < 0 || *hi < *lo || *hi >= CLUSTER_NSLOTS || next_elem(&p, &left, &m) ||
	    m.type != RESP_ARRAY || m.n < 2)
		return -1;
	mp = m.s;
	mleft = m.len;
	if (next_elem(&mp, &mleft, &e) || e.type != RESP_BULK || e.len > REDIS_HOST_MAX ||
	    memchr(e.s, '\0', e.len))
		return -1;
	/* An empty (or unknown, "?") address: the node that answered. */
	if (!e.len || (e.len == 1 && e.s[0] == '?'))
		snprintf(a->host, sizeof(a->host), "%s", asked);
	else
		snprintf(a->host, sizeof(a->host), "%.*s", (int)e.len, e.s);
	if (next_elem(&mp, &mleft, &e) || e.type != RESP_INT || e.n < 1 || e.n > 65535)
		return -1;
	snprintf(a->port, sizeof(a->port), "%lld", e.n);
	return 0;
}

long cluster_apply_slots(struct redis *r, const struct resp_reply *rep, const char *host)
{
	unsigned char master[CLUSTER_NODES_MAX] = { 0 };
	struct redis_cluster *cl;
	struct resp_reply ent;
	struct redis_addr a;
	const char *p;
	size_t left, i;
	long long lo, hi, k, mapped = 0;
	__u16 *owner = NULL;
	long node;
	int pass;

	if (rep->type != RESP_ARRAY)
		return -1;
	/*
	 * Checked whole first, then built aside (a node refused midway: out
	 * of memory, too many) and applied whole: a reply refused changes nothing.
	 */
	for (pass = 0; pass < 2; pass++) {
		p = rep->s;
		left = rep->len;
		if (pass) {
			cl = get_cl(r);
			owner = calloc(CLUSTER_NSLOTS, sizeof(*owner));
			if (!cl || !owner)
				goto fail;
		}
		for (k = 0; k < rep->n; k++) {
			if (next_elem(&p, &left, &ent) || slot_range(&ent, &lo, &hi, &a, host))
				goto fail;
			if (!pass)
				continue;
			node = node_at(r, a.host, a.port);
			if (node < 0)
				goto fail;
			master[node] = 1;
			/* Overlapping ranges: the last says; each slot counted once. */
			for (; lo <= hi; lo++) {
				mapped += !owner[lo];
				owner[lo] = (__u16)(node + 1);
			}
		}
	}
	memcpy(r->cl->owner, owner, sizeof(r->cl->owner));
	for (i = 0; i < r->cl->nnodes; i++)
		r->cl->node[i]->masters = master[i];
	free(owner);
	return (long)mapped;
fail:
	free(owner);
	return -1;
}

struct map_read {
	struct redis *r;
	struct cluster_node *n;
	long mapped;
};

static int slots_reply(const struct resp_reply *rep, size_t i, void *ctx)
{
	struct map_read *m = ctx;

	(void)i;
	if (rep->type != RESP_ARRAY)
		return -1; /* why: the reply, said by redis_pump */
	m->mapped = cluster_apply_slots(m->r, rep, m->n->c.host);
	if (m->mapped > 0)
		return 0;
	snprintf(m->n->c.why, sizeof(m->n->c.why), "%s",
		 m->mapped ? "not a CLUSTER SLOTS reply" : "no slots served (CLUSTER SLOTS)");
	return -1;
}

/* Read the map from node @n (connected): 0, or -1 (n failed). */
static int read_map(struct redis *r, struct cluster_node *n, __u64 deadline_ms)
{
	static const char *const argv[] = { "CLUSTER", "SLOTS" };
	struct map_read m = { .r = r, .n = n };

	redis_clear(&n->c);
	if (redis_queue(&n->c, 2, argv, NULL)) {
		snprintf(n->c.why, sizeof(n->c.why), "out of memory");
		node_failed(r, n);
		return -1;
	}
	if (redis_exchange_one(&n->c, slots_reply, &m, deadline_ms)) {
		node_failed(r, n);
		return -1;
	}
	redis_clear(&n->c);
	r->cl->stale = r->cl->moved = 0;
	r->cl->read_at_ms = redis_now_ms();
	return 0;
}

/*
 * Read the map: from a node connected, else from the seeds and the nodes
 * known, connecting. 0, or -1 with r->why set.
 */
static int discover(struct redis *r, __u64 deadline_ms, int connected_only)
{
	struct redis_cluster *cl = get_cl(r);
	size_t i, nseeds = r->nseeds ? r->nseeds : 1;
	__u64 until;
	long k;

	if (!cl) {
		snprintf(r->why, sizeof(r->why), "out of memory");
		return -1;
	}
	for (i = 0; i < cl->nnodes; i++)
		if (cl->node[i]->c.fd >= 0 && !read_map(r, cl->node[i], deadline_ms))
			return 0;
	if (connected_only)
		return -1;
	cl->why[0] = '\0';
	for (i = 0; i < nseeds + cl->nnodes && redis_now_ms() < deadline_ms; i++) {
		if (i < nseeds) {
			k = node_at(r, r->nseeds ? r->seeds[i].host : r->host,
				    r->nseeds ? r->seeds[i].port : r->port);
			if (k < 0)
				continue;
			cl->node[k]->retry_at_ms = 0; /* a seed is always worth a try */
		} else {
			k = (long)(i - nseeds); /* the nodes known: not one that just failed */
		}
		/* Reading the map, nothing else waits: a node may take the whole per-connect cap. */
		until = redis_now_ms() + CLUSTER_CONNECT_MS;
		if (!node_connect(r, cl->node[k], until < deadline_ms ? until : deadline_ms) &&
		    !read_map(r, cl->node[k], deadline_ms))
			return 0;
		if (errno == EINTR)
			break;
	}
	snprintf(r->why, sizeof(r->why), "%s", cl->why[0] ? cl->why : "timed out");
	return -1;
}

int cluster_connect(struct redis *r, __u64 deadline_ms)
{
	int rc = discover(r, deadline_ms, 0);

	count(r);
	return rc;
}

/* ---- an exchange ---------------------------------------------------------------------------- */

struct xchg {
	struct redis *r;
	struct cluster_node *n;
	redis_reply_fn fn;
	void *ctx;
};

/* Command @i failed for a reason of ours (@why): an error reply to the caller. */
static void fail_cmd(struct xchg *x, size_t i, const char *why)
{
	struct resp_reply e = { .type = RESP_ERROR, .s = why, .len = strlen(why) };

	x->r->cmd[i].state = CMD_DONE;
	x->fn(&e, i, x->ctx);
}

int cluster_redirected(struct redis *r, const char *from, const struct resp_reply *rep,
		       struct redis_cmd *c)
{
	char host[REDIS_HOST_MAX + 1], port[8];
	unsigned int slot;
	int kind = cluster_parse_redirect(rep, &slot, host, port);
	long k;

	if (!kind)
		return 0;
	k = node_at(r, host[0] ? host : from, port);
	if (k < 0)
		return -1;
	if (kind == 1) {
		r->cl->owner[slot] = (__u16)(k + 1);
		r->cl->node[k]->masters = 1;
		r->cl->stale = r->cl->moved = 1;
	}
	c->to = (int)k;
	c->ask = kind == 2;
	c->state = CMD_QUEUED;
	return 1;
}

static int node_reply(const struct resp_reply *rep, size_t li, void *ctx)
{
	struct xchg *x = ctx;
	struct redis_cmd *c;
	size_t i;

	if (li >= x->n->nidx)
		return -1;
	i = x->n->idx[li];
	if (i == IDX_ASKING)
		return 0; /* refused: the command after it says so */
	c = &x->r->cmd[i];
	if (rep->type == RESP_ERROR) {
		switch (cluster_redirected(x->r, x->n->c.host, rep, c)) {
		case 1: return 0;
		case -1: fail_cmd(x, i, "out of memory following a redirection"); return 0;
		}
	}
	c->state = CMD_DONE;
	x->r->cl->answered++;
	if (x->fn(rep, i, x->ctx)) {
		x->r->cl->refused++;
		return -1;
	}
	return 0;
}

/* The node for command @c: by redirection, by slot, or (no key) any connected master. */
static long route(struct redis *r, const struct redis_cmd *c)
{
	struct redis_cluster *cl = r->cl;
	size_t i;

	if (c->to >= 0)
		return c->to;
	if (c->slot >= 0)
		return (long)cl->owner[c->slot] - 1;
	for (i = 0; i < cl->nnodes; i++)
		if (cl->node[i]->c.fd >= 0 && cl->node[i]->masters)
			return (long)i;
	for (i = 0; i < cl->nnodes; i++)
		if (cl->node[i]->masters && redis_now_ms() >= cl->node[i]->retry_at_ms)
			return (long)i;
	return cl->nnodes ? 0 : -1;
}

/* Each command to be sent, into its node's pipeline (connecting the node). */
static void assign(struct xchg *x, __u64 deadline_ms)
{
	static const char asking[] = "*1\r\n$6\r\nASKING\r\n";
	struct redis *r = x->r;
	struct redis_cluster *cl = r->cl;
	struct cluster_node *n;
	char why[128];
	size_t i;
	long k;

	for (i = 0; i < cl->nnodes; i++) {
		redis_clear(&cl->node[i]->c);
		cl->node[i]->c.why[0] = '\0';
		cl->node[i]->nidx = 0;
	}
	for (i = 0; i < r->ncmd; i++) {
		struct redis_cmd *c = &r->cmd[i];

		if (c->state != CMD_QUEUED)
			continue;
		k = route(r, c);
		if (k < 0) {
			snprintf(why, sizeof(why), "CLUSTERDOWN no node known for slot %d",
				 c->slot);
			fail_cmd(x, i, why);
			continue;
		}
		n = cl->node[k];
		if (n->c.fd < 0 && redis_now_ms() >= deadline_ms) {
			/* No time left to connect: not the node's failure, no back-off. */
			snprintf(why, sizeof(why),
				 "node %.80s: no time left in the round to connect",
				 redis_where(&n->c));
			fail_cmd(x, i, why);
			continue;
		}
		/* Its share of the round: the nodes connected keep most of it (cluster.h). */
		if (node_connect(r, n, cluster_connect_deadline(redis_now_ms(), deadline_ms))) {
			fail_cmd(x, i, n->down[0] ? n->down : "node down");
			continue;
		}
		/*
		 * Room for both indexes first: each command queued has its index,
		 * or the replies would be taken for the commands after.
		 */
		if (vec_room(n->idx, n->nidx, n->capidx, 2, 64) ||
		    (c->ask && redis_queue_raw(&n->c, asking, sizeof(asking) - 1))) {
			fail_cmd(x, i, "out of memory");
			continue;
		}
		if (c->ask)
			n->idx[n->nidx++] = IDX_ASKING;
		if (redis_queue_raw(&n->c, r->out.p + c->off, c->len)) {
			fail_cmd(x, i, "out of memory"); /* ASKING alone: its reply is ignored */
			continue;
		}
		n->idx[n->nidx++] = i;
		c->state = CMD_SENT;
		c->to = -1;
		c->ask = 0;
	}
}

/* Node @n failed mid-exchange: each command it owed fails. */
static void owed_fail(struct xchg *x, struct cluster_node *n)
{
	size_t j;

	node_failed(x->r, n);
	for (j = 0; j < n->nidx; j++)
		if (n->idx[j] != IDX_ASKING && x->r->cmd[n->idx[j]].state == CMD_SENT)
			fail_cmd(x, n->idx[j], n->down);
	n->nidx = 0;
}

/*
 * Node @n answers, but the round ran out before its replies did (not its
 * fault: a node that failed took the time, or it was given too little):
 * each command it owes fails for this round alone, and it is not backed
 * off. Its connection stays if every command went out whole, the replies
 * owed to be dropped as they come (redis.h: skip); else it is closed, to
 * be connected again next round.
 */
static void owed_drop(struct xchg *x, struct cluster_node *n)
{
	char why[sizeof(n->down)];
	size_t j;

	snprintf(why, sizeof(why), "node %s: the round ran out before it answered",
		 redis_where(&n->c));
	for (j = 0; j < n->nidx; j++)
		if (n->idx[j] != IDX_ASKING && x->r->cmd[n->idx[j]].state == CMD_SENT)
			fail_cmd(x, n->idx[j], why);
	if (n->c.sent == n->c.out.len)
		n->c.skip += n->c.queued - n->c.done;
	else
		redis_close(&n->c);
	n->nidx = 0;
}

/* Every node's pipeline at once, until each is answered or @deadline_ms: 0, or -1 (EINTR). */
static int run_nodes(struct xchg *x, __u64 deadline_ms)
{
	struct redis_cluster *cl = x->r->cl;
	struct pollfd pfd[CLUSTER_NODES_MAX];
	struct cluster_node *n;
	size_t i, nact;
	__u64 now, start = redis_now_ms();
	int rc, e;

	for (i = 0; i < cl->nnodes; i++)
		cl->node[i]->pass_in = cl->node[i]->c.bytes_in;
	for (;;) {
		nact = 0;
		for (i = 0; i < cl->nnodes; i++) {
			n = cl->node[i];
			if (n->c.fd < 0 || n->c.done >= n->c.queued)
				continue;
			x->n = n;
			rc = redis_pump(&n->c, node_reply, x);
			if (rc < 0)
				owed_fail(x, n);
			else if (!rc)
				pfd[nact++] = (struct pollfd){ .fd = n->c.fd,
							       .events = redis_events(&n->c) };
		}
		if (!nact)
			return 0;
		now = redis_now_ms();
		rc = now < deadline_ms ?
			     poll(pfd, nact,
				  (int)(deadline_ms - now > 60000 ? 60000 : deadline_ms - now)) :
			     0;
		if (rc > 0)
			continue;
		e = rc < 0 ? errno : ETIMEDOUT;
		if (rc < 0 && e != EINTR)
			continue;
		if (!rc && redis_now_ms() < deadline_ms)
			continue;
		for (i = 0; i < cl->nnodes; i++) {
			n = cl->node[i];
			if (n->c.fd < 0 || n->c.done >= n->c.queued)
				continue;
			/* Out of time: a node that answered, or had little time, is not down. */
			if (e == ETIMEDOUT && (n->c.bytes_in > n->pass_in ||
					       start + CLUSTER_ANSWER_MS > deadline_ms)) {
				owed_drop(x, n);
				continue;
			}
			snprintf(n->c.why, sizeof(n->c.why), "%s",
				 e == EINTR ? "interrupted" :
					      "timed out waiting for Redis to answer");
			owed_fail(x, n);
		}
		errno = e;
		return e == EINTR ? -1 : 0;
	}
}

int cluster_exchange(struct redis *r, redis_reply_fn fn, void *ctx, __u64 deadline_ms)
{
	struct redis_cluster *cl = r->cl;
	struct xchg x = { .r = r, .fn = fn, .ctx = ctx };
	size_t i, left;
	int pass, rc = 0;

	cl->answered = cl->refused = 0;
	cl->why[0] = '\0';
	r->why[0] = '\0';
	for (pass = 0; pass < CLUSTER_PASSES; pass++) {
		if (cl->stale &&
		    (cl->moved || redis_now_ms() >= cl->read_at_ms + CLUSTER_REREAD_MS))
			discover(r, deadline_ms, 1);
		assign(&x, deadline_ms);
		rc = run_nodes(&x, deadline_ms);
		for (i = left = 0; i < r->ncmd; i++)
			left += r->cmd[i].state == CMD_QUEUED;
		if (!left || rc)
			break;
	}
	for (i = 0; i < r->ncmd; i++)
		if (r->cmd[i].state != CMD_DONE)
			fail_cmd(&x, i,
				 rc ? "interrupted" : "too many redirections (-MOVED, -ASK)");
	count(r);
	/*
	 * Failed only when no node is left to answer (or the caller refused a
	 * reply): a node down while others serve fails its commands alone,
	 * as error replies, and the round goes on.
	 */
	if (rc || cl->refused || (!cl->answered && !cluster_connected(r))) {
		snprintf(r->why, sizeof(r->why), "%s", cl->why[0] ? cl->why : "no node answered");
		if (!rc)
			errno = EPROTO;
		return -1;
	}
	return 0;
}

int cluster_adopt(struct redis *r, redis_reply_fn fn, void *ctx, __u64 deadline_ms)
{
	long k = node_at(r, r->host, r->port);
	struct cluster_node *n;

	if (k < 0) {
		snprintf(r->why, sizeof(r->why), "out of memory");
		redis_close(r);
		return -1;
	}
	n = r->cl->node[k];
	if (n->c.fd < 0) {
		/* The connection is the node's now (its TLS session too); its counts stay the client's. */
		n->c.fd = r->fd;
		n->c.ssl = r->ssl;
	} else {
		if (r->ssl)
			tls_close(r->ssl);
		close(r->fd);
	}
	r->fd = -1;
	r->ssl = NULL;
	r->tls_wait = 0;
	r->in.len = 0;
	r->cl->stale = r->cl->moved = 1;
	return cluster_exchange(r, fn, ctx, deadline_ms);
}
