// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_user_cluster.c - Redis Cluster without one (user/lib/cluster.h):
 * the key hash and slots (hash tags), -MOVED and -ASK read, a CLUSTER
 * SLOTS reply made a slot map, seeds parsed, and an exchange with a fake
 * node over a socket pair: -MOVED makes the client a cluster's (the map
 * read, the command sent again within the round), -ASK sends ASKING first,
 * a node that goes away fails its commands as error replies, one that
 * answers late only fails this round's. No root, no
 * kernel, no network; built into build/test_user.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "cluster.h"
#include "redis.h"
#include "unit.h"

UNIT_TEST(cluster_slot)
{
	ASSERT_EQ(cluster_crc16("123456789", 9), 0x31C3, "crc16: the check value");
	ASSERT_EQ(cluster_slot("foo", 3), 12182u, "slot: foo");
	ASSERT_EQ(cluster_slot("bar", 3), 5061u, "slot: bar");
	ASSERT_EQ(cluster_slot("", 0), 0u, "slot: the empty key");
	/* Hash tags: the part in the first {...}, if not empty. */
	ASSERT_EQ(cluster_slot("{user1000}.following", 20), cluster_slot("user1000", 8),
		  "slot: a hash tag");
	ASSERT_EQ(cluster_slot("foo{bar}{zap}", 13), cluster_slot("bar", 3), "slot: the first tag");
	ASSERT_EQ(cluster_slot("foo{{bar}}zap", 13), cluster_slot("{bar", 4),
		  "slot: from the first '{' to the first '}'");
	ASSERT_EQ(cluster_slot("foo{}{bar}", 10), cluster_crc16("foo{}{bar}", 10) & 16383,
		  "slot: an empty tag: the whole key");
	ASSERT_EQ(cluster_slot("foo{bar", 7), cluster_crc16("foo{bar", 7) & 16383,
		  "slot: no '}': the whole key");
	/* The fleet's keys have no tag: each its own slot. */
	ASSERT_NE(cluster_slot("xdp-rl:web:all:1s:198.51.100.7/32:1763916130", 44),
		  cluster_slot("xdp-rl:web:all:1s:198.51.100.8/32:1763916130", 44),
		  "slot: the fleet's keys spread");
}

static struct resp_reply err(const char *s)
{
	struct resp_reply r = { .type = RESP_ERROR, .s = s, .len = strlen(s) };

	return r;
}

UNIT_TEST(cluster_parse_redirect)
{
	static const struct {
		const char *in;
		int kind;
		unsigned int slot;
		const char *host, *port;
	} ok[] = {
		{ "MOVED 3999 198.18.0.7:6381", 1, 3999, "198.18.0.7", "6381" },
		{ "ASK 0 198.18.0.7:7000", 2, 0, "198.18.0.7", "7000" },
		{ "MOVED 16383 2001:2::7:7001", 1, 16383, "2001:2::7", "7001" },
		{ "MOVED 12 :7002", 1, 12, "", "7002" },
		{ "MOVED 12 redis-3.example:7002", 1, 12, "redis-3.example", "7002" },
	};
	static const char *const bad[] = {
		"ERR unknown command",	"MOVED",
		"MOVED 3999",		"MOVED x 198.18.0.7:1",
		"MOVED 16384 a:1",	"MOVED 1 198.18.0.7",
		"MOVED 1 198.18.0.7:0", "MOVED 1 198.18.0.7:",
		"ASK 1 a:65536",	"MOVED -1 198.18.0.7:1",
		"MOVEDX 1 a:1",
	};
	char host[REDIS_HOST_MAX + 1], port[8];
	unsigned int slot;
	struct resp_reply r;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		r = err(ok[i].in);
		ASSERT_EQ(cluster_parse_redirect(&r, &slot, host, port), ok[i].kind,
			  "redirect: '%s'", ok[i].in);
		ASSERT_EQ(slot, ok[i].slot, "redirect: '%s': the slot", ok[i].in);
		ASSERT_STREQ(host, ok[i].host, "redirect: '%s': the host", ok[i].in);
		ASSERT_STREQ(port, ok[i].port, "redirect: '%s': the port", ok[i].in);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = err(bad[i]);
		ASSERT_EQ(cluster_parse_redirect(&r, &slot, host, port), 0,
			  "redirect: '%s' is not one", bad[i]);
	}
	r = (struct resp_reply){ .type = RESP_STATUS, .s = "MOVED 1 a:1", .len = 11 };
	ASSERT_EQ(cluster_parse_redirect(&r, &slot, host, port), 0, "redirect: only an error");
}

/* A CLUSTER SLOTS reply of Redis 7: three masters, one with a replica, metadata. */
static const char slots_reply[] = "*3\r\n"
				  "*3\r\n:0\r\n:5460\r\n*4\r\n$10\r\n198.18.0.1\r\n:7000\r\n"
				  "$2\r\nid\r\n*0\r\n"
				  "*4\r\n:5461\r\n:10922\r\n*3\r\n$0\r\n\r\n:7001\r\n$2\r\nid\r\n"
				  "*3\r\n$10\r\n198.18.0.4\r\n:7004\r\n$2\r\nid\r\n"
				  "*3\r\n:10923\r\n:16383\r\n*2\r\n$10\r\n198.18.0.3\r\n:7002\r\n";

UNIT_TEST(cluster_apply_slots)
{
	static const char *const bad[] = {
		":1\r\n",
		"*1\r\n*3\r\n:5\r\n:4\r\n*2\r\n$1\r\na\r\n:1\r\n",     /* last < first */
		"*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\na\r\n:1\r\n", /* past the slots */
		"*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\na\r\n:0\r\n",     /* port 0 */
		"*1\r\n*2\r\n:0\r\n:1\r\n",			       /* no master */
		"*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n:1\r\n:1\r\n",	       /* the host not a string */
	};
	struct resp_reply rep;
	struct redis r;
	size_t i;
	long n;

	redis_init(&r);
	ASSERT_EQ(resp_parse(slots_reply, sizeof(slots_reply) - 1, &rep),
		  (long)sizeof(slots_reply) - 1, "slots: the reply parses whole");
	ASSERT_EQ(rep.type, RESP_ARRAY, "slots: an array");
	n = cluster_apply_slots(&r, &rep, "198.18.0.2");
	ASSERT_EQ(n, 16384L, "slots: every slot mapped");
	ASSERT_EQ(redis_masters(&r), (size_t)3, "slots: three masters, the replica not one");
	ASSERT_STREQ(r.cl->node[r.cl->owner[0] - 1]->c.host, "198.18.0.1", "slots: slot 0");
	ASSERT_STREQ(r.cl->node[r.cl->owner[5461] - 1]->c.host, "198.18.0.2",
		     "slots: an empty host is the node asked");
	ASSERT_STREQ(r.cl->node[r.cl->owner[5461] - 1]->c.port, "7001", "slots: its port");
	ASSERT_STREQ(r.cl->node[r.cl->owner[cluster_slot("foo", 3)] - 1]->c.port, "7002",
		     "slots: foo (12182) on the third");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_TRUE(resp_parse(bad[i], strlen(bad[i]), &rep) > 0, "slots: bad %zu parses",
			    i);
		ASSERT_EQ(cluster_apply_slots(&r, &rep, "h"), -1L, "slots: bad %zu refused", i);
	}
	ASSERT_STREQ(r.cl->node[r.cl->owner[0] - 1]->c.host, "198.18.0.1",
		     "slots: a refused reply changes nothing");
	redis_free(&r);
	ASSERT_TRUE(r.cl == NULL, "slots: freed");
}

UNIT_TEST(redis_add_seeds)
{
	struct redis r;

	redis_init(&r);
	ASSERT_STREQ(redis_add_seeds(&r, "198.18.0.1:7000,198.18.0.2:7001"), NULL, "seeds: two");
	ASSERT_STREQ(redis_add_seeds(&r, "[2001:2::3]:7002"), NULL, "seeds: and one more");
	ASSERT_EQ(r.nseeds, (size_t)3, "seeds: three");
	ASSERT_STREQ(redis_where(&r), "198.18.0.1:7000", "seeds: the first is the address said");
	ASSERT_STREQ(r.seeds[2].host, "2001:2::3", "seeds: IPv6");
	ASSERT_TRUE(redis_add_seeds(&r, "198.18.0.1:7000,,198.18.0.2") != NULL,
		    "seeds: an empty one is refused");
	ASSERT_TRUE(redis_add_seeds(&r, "198.18.0.1:0") != NULL, "seeds: port 0 is refused");
	redis_free(&r);
}

/* ---- an exchange with a fake node ----------------------------------------------- */

/* The fake node: answers each command it reads on @fd by a script, until closed. */
static void fake_node(int fd)
{
	char buf[4096], a0[32], a1[32];
	size_t len = 0, off;
	int asked = 0, slots_read = 0;
	ssize_t n;

	for (;;) {
		struct resp_reply cmd, arg;
		long used;
		const char *out;

		n = read(fd, buf + len, sizeof(buf) - len);
		if (n <= 0)
			_exit(0);
		len += n;
		while ((used = resp_parse(buf, len, &cmd)) > 0) {
			off = 0;
			a0[0] = a1[0] = '\0';
			for (long long i = 0; i < cmd.n && i < 2; i++) {
				long u = resp_parse(cmd.s + off, cmd.len - off, &arg);

				snprintf(i ? a1 : a0, 32, "%.*s", (int)arg.len, arg.s);
				off += u;
			}
			if (!strcmp(a0, "CLUSTER")) {
				slots_read = 1;
				out = "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$0\r\n\r\n:6379\r\n";
			} else if (!strcmp(a0, "ASKING")) {
				asked = 1;
				out = "+OK\r\n";
			} else if (!strcmp(a1, "a")) {
				out = ":1\r\n";
			} else if (!strcmp(a1, "b")) {
				out = slots_read ? ":2\r\n" : "-MOVED 3300 :6379\r\n";
			} else if (!strcmp(a1, "slow")) {
				usleep(400 * 1000); /* past a round of 200 ms */
				out = ":5\r\n";
			} else if (!strcmp(a1, "c")) {
				out = asked ? ":3\r\n" : "-ASK 7365 :6379\r\n";
				asked = 0;
			} else {
				out = "-ERR unknown\r\n";
			}
			if (write(fd, out, strlen(out)) < 0)
				_exit(1);
			memmove(buf, buf + used, len - used);
			len -= used;
		}
		if (used < 0)
			_exit(1);
	}
}

struct got {
	long long v[4];
	char why[4][200];
	size_t n;
};

static int collect(const struct resp_reply *rep, size_t i, void *ctx)
{
	struct got *g = ctx;

	if (i >= 4)
		return -1;
	g->n++;
	if (rep->type == RESP_ERROR)
		snprintf(g->why[i], sizeof(g->why[i]), "%.*s", (int)rep->len, rep->s);
	else if (resp_int(rep, &g->v[i]))
		return -1;
	return 0;
}

static void queue_get(struct redis *r, const char *key)
{
	const char *argv[] = { "GET", key };

	redis_queue(r, 2, argv, NULL);
}

/*
 * @r connected to a fake node (fake_node, in a child of its own, over a
 * socket pair), as if to 198.18.0.9:6379: the child's pid, to kill and
 * reap when done (fake_done).
 */
static pid_t fake_connect(struct redis *r, const char *what)
{
	int sv[2];
	pid_t pid;

	redis_init(r);
	if (!ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0, "%s: a socket pair", what))
		return -1;
	pid = fork();
	if (!pid) {
		close(sv[0]);
		fake_node(sv[1]);
	}
	close(sv[1]);
	ASSERT_STREQ(redis_parse_addr(r, "198.18.0.9:6379"), NULL, "%s: the address", what);
	r->fd = sv[0]; /* as if connected */
	return pid;
}

static void fake_done(struct redis *r, pid_t pid)
{
	int status;

	redis_free(r);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
}

UNIT_TEST(cluster_exchange_fake_node)
{
	struct got g;
	struct redis r;
	pid_t pid = fake_connect(&r, "fake node");

	/* A: served here; b: -MOVED to this very node (an empty host), which then serves it. */
	memset(&g, 0, sizeof(g));
	queue_get(&r, "a");
	queue_get(&r, "b");
	ASSERT_EQ(redis_exchange(&r, collect, &g, redis_now_ms() + 2000), 0,
		  "fake node: the round: %s", r.why);
	ASSERT_EQ(g.n, (size_t)2, "fake node: two replies");
	ASSERT_EQ(g.v[0], 1LL, "fake node: a");
	ASSERT_EQ(g.v[1], 2LL, "fake node: b, after -MOVED, within the round");
	ASSERT_EQ(redis_masters(&r), (size_t)1, "fake node: a cluster now, its map read");
	ASSERT_TRUE(redis_connected(&r) && r.fd < 0, "fake node: the node's connection");
	/* GET a, GET b, CLUSTER SLOTS, GET b again. */
	ASSERT_EQ(r.commands, 4ULL, "fake node: the commands sent");

	/* -ASK: ASKING, then the command again. */
	memset(&g, 0, sizeof(g));
	queue_get(&r, "c");
	ASSERT_EQ(redis_exchange(&r, collect, &g, redis_now_ms() + 2000), 0, "fake node: -ASK: %s",
		  r.why);
	ASSERT_EQ(g.n, (size_t)1, "fake node: one reply");
	ASSERT_EQ(g.v[0], 3LL, "fake node: c, after ASKING");
	ASSERT_EQ(r.commands, 7ULL, "fake node: GET c, ASKING, GET c");

	/* The node goes away: its commands fail, as error replies; no node answered. */
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	memset(&g, 0, sizeof(g));
	queue_get(&r, "a");
	ASSERT_EQ(redis_exchange(&r, collect, &g, redis_now_ms() + 2000), -1,
		  "fake node: gone, the round fails");
	ASSERT_EQ(g.n, (size_t)1, "fake node: the command's failure comes as its reply");
	ASSERT_STRSTR(g.why[0], "node 198.18.0.9:6379: ", "fake node: the error names the node");
	ASSERT_STRSTR(r.why, "node 198.18.0.9:6379", "fake node: and so does the round's");
	ASSERT_FALSE(redis_connected(&r), "fake node: closed");
	redis_free(&r);
}

/* A node's connect gets a share of what is left of the round, so the others keep most of it. */
UNIT_TEST(cluster_connect_deadline)
{
	ASSERT_EQ(cluster_connect_deadline(1000, 11000), 1000ULL + CLUSTER_CONNECT_MS,
		  "connect share: at most the per-connect cap");
	ASSERT_EQ(cluster_connect_deadline(1000, 3000), 1500ULL, "connect share: a quarter");
	ASSERT_EQ(cluster_connect_deadline(1000, 1040), 1000ULL + CLUSTER_CONNECT_MIN_MS,
		  "connect share: at least the floor");
	ASSERT_EQ(cluster_connect_deadline(1000, 1010), 1010ULL,
		  "connect share: never past the deadline");
	ASSERT_EQ(cluster_connect_deadline(2000, 1000), 1000ULL,
		  "connect share: none when the round is over");
}

/* Replies owed to commands given up on (r.skip) are dropped before the next pipeline's. */
UNIT_TEST(redis_skip_owed_replies)
{
	static const char replies[] = ":7\r\n:8\r\n:9\r\n";
	struct got g;
	struct redis r;
	int sv[2];

	ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0, "skip: a socket pair");
	ASSERT_EQ(write(sv[1], replies, sizeof(replies) - 1), (ssize_t)sizeof(replies) - 1,
		  "skip: the replies written");
	redis_init(&r);
	r.fd = sv[0]; /* as if connected */
	r.skip = 2;   /* :7 and :8 are owed to a round given up on */
	memset(&g, 0, sizeof(g));
	queue_get(&r, "a");
	ASSERT_EQ(redis_exchange_one(&r, collect, &g, redis_now_ms() + 2000), 0, "skip: %s", r.why);
	ASSERT_EQ(g.n, (size_t)1, "skip: one reply");
	ASSERT_EQ(g.v[0], 9LL, "skip: the reply to this pipeline's command");
	ASSERT_EQ(r.skip, (size_t)0, "skip: none owed now");
	redis_free(&r);
	close(sv[1]);
}

/*
 * The round runs out while a node that answers still owes a reply: that
 * command fails, the node is neither closed nor backed off, and its late
 * reply is dropped, not taken for the next round's.
 */
UNIT_TEST(cluster_round_out_node_kept)
{
	struct got g;
	struct redis r;
	pid_t pid = fake_connect(&r, "late node");

	memset(&g, 0, sizeof(g));
	queue_get(&r, "b"); /* -MOVED: a cluster's node */
	ASSERT_EQ(redis_exchange(&r, collect, &g, redis_now_ms() + 2000), 0, "late node: %s",
		  r.why);
	ASSERT_EQ(redis_masters(&r), (size_t)1, "late node: a cluster now");

	memset(&g, 0, sizeof(g));
	queue_get(&r, "a");
	queue_get(&r, "slow");
	ASSERT_EQ(redis_exchange(&r, collect, &g, redis_now_ms() + 200), 0,
		  "late node: the round goes on: %s", r.why);
	ASSERT_EQ(g.n, (size_t)2, "late node: two replies");
	ASSERT_EQ(g.v[0], 1LL, "late node: a answered");
	ASSERT_STRSTR(g.why[1], "ran out", "late node: slow failed, for this round");
	ASSERT_TRUE(redis_connected(&r), "late node: still connected");
	ASSERT_EQ(r.cl->node[0]->retry_at_ms, 0ULL, "late node: not backed off");

	memset(&g, 0, sizeof(g));
	queue_get(&r, "a");
	ASSERT_EQ(redis_exchange(&r, collect, &g, redis_now_ms() + 2000), 0,
		  "late node: the next round: %s", r.why);
	ASSERT_EQ(g.n, (size_t)1, "late node: one reply");
	ASSERT_EQ(g.v[0], 1LL, "late node: a's, the late reply to slow dropped");
	fake_done(&r, pid);
}
