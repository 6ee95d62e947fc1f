// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cmd/fleet.c - `xdp-rl fleet`: the agent that shares a limiter's windows
 * with a fleet through Redis, in the foreground until SIGTERM or SIGINT.
 *
 * It sets XDP_RL_F_FLEET through the live settings' publication (under the
 * state lock, as `set` does) when it starts, and clears it when it stops
 * cleanly. In between, every --sync interval, a round (user/fleet.h): scan,
 * push, read the fleet's totals, write the others' part of each window
 * into `remote`. Redis is reached with deadlines on every wait
 * (user/lib/redis.h), and again with back-off after a failure; the datapath
 * never waits for any of it. Killed with -9, the agent leaves the flag
 * set: the words it wrote name their windows' generations, so each counts
 * only until its window ends, and the limiter is back to its local limits
 * from the next window on. Its state and counters are in the `fleet` map,
 * for `stats` and `metrics`.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

#include "apply.h"
#include "bpffs.h"
#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "fleet.h"
#include "limiter.h"
#include "live.h"
#include "lock.h"
#include "log.h"
#include "options.h"
#include "proc.h"
#include "redis.h"
#include "rules.h"
#include "sentinel.h"
#include "tls.h"

enum {
	OPT_REDIS = 256,
	OPT_SYNC,
	OPT_GROUP,
	OPT_PASSWORD_FILE,
	OPT_SYNC_ABOVE,
	OPT_MAX_SYNCED,
	OPT_SENTINEL,
	OPT_MASTER,
	OPT_USER,
	OPT_TLS,
	OPT_TLS_CA,
	OPT_TLS_CERT,
	OPT_TLS_KEY,
	OPT_TLS_SERVER_NAME,
};

/* Connecting (AUTH included) takes at most this long. */
#define CONNECT_TIMEOUT_MS 1000
/* A round's replies may take this long, or --sync if longer. */
#define REPLY_TIMEOUT_MS 1000
/* Back-off between attempts to reach Redis: from --sync, doubling, to this. */
#define BACKOFF_CAP_MS 5000
/* A failure said again, while Redis keeps failing the same way, at most this often. */
#define SAY_AGAIN_MS 60000
/* The agent's own traffic is checked again at least this often (fleet_own_traffic). */
#define OWN_RECHECK_MS 10000
/* The longest password read from --password-file. */
#define PASSWORD_MAX 512

static const char *const fleet_forms[] = {
	"IFACE --redis HOST:PORT[,HOST:PORT...] [--sync DUR] [--group NAME]\n"
	"[--user NAME] [--password-file PATH] [--sync-above FRACTION] [--max-synced N]\n"
	"[--tls [--tls-ca FILE] [--tls-cert FILE --tls-key FILE] [--tls-server-name NAME]]",
	"IFACE --sentinel HOST:PORT[,HOST:PORT...] --master NAME [--sync DUR]\n"
	"[--group NAME] [--user NAME] [--password-file PATH] [--sync-above FRACTION]\n"
	"[--max-synced N] [--tls [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]\n"
	"[--tls-server-name NAME]]",
	NULL,
};

static const struct opt_spec fleet_opts[] = {
	{ "redis", OPT_REDIS, "HOST:PORT",
	  "Redis, a proxy such as nutcracker, or a Redis Cluster's\nnodes ([IPV6]:PORT; several: "
	  "HOST:PORT,HOST:PORT, or\n--redis again)" },
	{ "sentinel", OPT_SENTINEL, "HOST:PORT",
	  "Redis Sentinel instead: its sentinels (port 26379 if not\ngiven; several: HOST:PORT,HOST:PORT), "
	  "asked for the master\nof --master before each connection" },
	{ "master", OPT_MASTER, "NAME", "the name the sentinels monitor the master by" },
	{ "sync", OPT_SYNC, "DUR", "how often to sync (default 100ms; 10ms to 10s)" },
	{ "group", OPT_GROUP, "NAME", "the fleet's name in the keys (default: default)" },
	{ "password-file", OPT_PASSWORD_FILE, "PATH",
	  "AUTH with the password in PATH (its first line; the\nfile must not be readable by others)" },
	{ "user", OPT_USER, "NAME",
	  "AUTH as this ACL user (Redis 6 or later), with the\npassword of --password-file" },
	{ "tls", OPT_TLS, NULL,
	  "connect over TLS (to Redis, each cluster node and the\nsentinels); the server's "
	  "certificate is always verified" },
	{ "tls-ca", OPT_TLS_CA, "FILE",
	  "the CA certificates to verify the server by (PEM;\ndefault: the system's trust store)" },
	{ "tls-cert", OPT_TLS_CERT, "FILE",
	  "a client certificate (PEM), for a Redis with\ntls-auth-clients yes; with --tls-key" },
	{ "tls-key", OPT_TLS_KEY, "FILE", "the client certificate's private key (PEM)" },
	{ "tls-server-name", OPT_TLS_SERVER_NAME, "NAME",
	  "the name to ask for (SNI) and verify in the server's\ncertificate (default: the host "
	  "of the address)" },
	{ "sync-above", OPT_SYNC_ABOVE, "FRACTION",
	  "sync a window once its count reaches this share of its\nlimit (default 0.1; 0.05 or 5%)" },
	{ "max-synced", OPT_MAX_SYNCED, "N",
	  "sync at most the N heaviest windows per round (default\n4096)" },
	{ NULL },
};

static int cmd_fleet(int argc, char **argv);

const struct cmd_spec cmd_fleet_spec = {
	.name = "fleet",
	.run = cmd_fleet,
	.forms = fleet_forms,
	.about = "Share the windows of the limiter on IFACE with the other servers of a fleet\n"
		 "through Redis, so that a source spread over them gets about its limit in all,\n"
		 "not once per server. Every --sync it adds what each busy window counted here\n"
		 "to a key of that window (INCRBY, EXPIRE), reads back the fleet's total, and\n"
		 "the limiter counts the others' part against the limit. Runs in the\n"
		 "foreground until SIGTERM or SIGINT. The windows must be --aligned.\n",
	.opts = fleet_opts,
	.notes = "Keys: xdp-rl:GROUP:SCOPE:DUR:WHO:NUMBER; doc/fleet.md says what each\n"
		 "part is and how far over its limit a source may get.\n",
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* The agent: its limiter, its rounds, its connection, its state for others to read. */
struct agent {
	const char *ifname;
	const char *redis_addr; /* --redis, as given */
	struct limiter l;
	struct fleet f;
	struct redis r;
	struct backoff b;
	struct xdp_rl_fleet *st;
	__u64 sync_ns;
	__u64 retry_at_ms;
	__u64 sets_sig;
	__u32 config_id;
	int paused, failing;
	int said_connected;   /* "connected" said, and no failure to reach Redis since */
	struct sentinel *sn;  /* --sentinel: asked for the master before each connection */
	int own_checked;      /* the connections' traffic checked (fleet_own_traffic) */
	__u64 own_checked_ms; /* when */
	int exit_fail;	      /* stopped by a failure, not a signal: exit 1 */
	size_t masters;	      /* a cluster's, as last said */
	char said[sizeof(((struct redis *)0)->why)];
	__u64 said_at_ms;
};

/* ---- the state others read ------------------------------------------------------- */

static void st_put(__u64 *w, __u64 v)
{
	__atomic_store_n(w, v, __ATOMIC_RELAXED);
}

static void st_add(struct agent *a, int i, __u64 n)
{
	st_put(&a->st->c[i], a->st->c[i] + n);
}

static __u64 unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* A fresh state for this agent: its pid, its settings, counters from 0. */
static void st_begin(struct agent *a, const char *redis, const char *group)
{
	struct xdp_rl_fleet *st = a->st;
	int i;

	for (i = 0; i < XDP_RL_FLEET_STAT_MAX; i++)
		st_put(&st->c[i], 0);
	st_put(&st->last_sync_unix_ns, 0);
	st_put(&st->synced, 0);
	st_put(&st->round_ns, 0);
	st_put(&st->sync_ns, a->sync_ns);
	st_put(&st->started_unix_ns, unix_ns());
	st_put(&st->state, XDP_RL_FLEET_RETRYING);
	snprintf(st->redis, sizeof(st->redis), "%s", redis);
	snprintf(st->group, sizeof(st->group), "%s", group);
	st_put(&st->pid_start, proc_start_ticks(getpid()));
	st_put(&st->pid, getpid());
}

/* ---- the limiter ---------------------------------------------------------------------- */

static __u32 config_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len) ? info.id : 0;
}

/* What the limit sets depend on: when it changes, they are read again. */
static __u64 sets_signature(const struct limiter *l)
{
	const struct xdp_rl_live *live = limiter_live(l);
	__u64 h = xdp_rl_mix(((__u64)live->lsid << 32) ^ live->nlayers);
	__u32 i;

	h = xdp_rl_mix(h ^ l->cfg.next_lsid ^ ((__u64)live->nrules4 << 32) ^ live->nrules6);
	for (i = 0; i < XDP_RL_MAX_LAYERS; i++)
		h = xdp_rl_mix(h ^ live->layer[i].limit ^ (live->layer[i].window_ns << 1));
	return h;
}

/* Whether a rate (--rate) is in force on @l: its global limit's, or a rule's. */
static int rates_in_force(const struct limiter *l)
{
	const struct xdp_rl_live *live = limiter_live(l);
	struct rules_summary rs;

	rules_summarize(l->fd, NULL, &rs);
	return rs.any_rate || layers_any_rate(live->layer, live->nlayers);
}

/* (Re)open the limiter on a->ifname and map what the agent uses: 0, or -1 after saying why. */
static int attach(struct agent *a)
{
	fleet_status_unmap(a->st);
	a->st = NULL;
	limiter_close(&a->l);
	if (limiter_open(a->ifname, &a->l, "cannot run the fleet agent on"))
		return -1;
	a->st = fleet_status_map(&a->l);
	if (!a->st || fleet_attach(&a->f, &a->l))
		return -1;
	a->config_id = config_id(a->l.fd[PIN_CONFIG]);
	a->sets_sig = sets_signature(&a->l);
	return 0;
}

/*
 * Set or clear XDP_RL_F_FLEET, and give aligned windows the kernel's TAI
 * offset now (live_tai_stale), as `set` publishes settings (under the
 * lock). 0, or -1.
 */
static int publish_flag(struct agent *a, int on)
{
	struct xdp_rl_live next;
	int lock = lock_take(0), r = 0;
	__s64 tai;

	if (lock < 0)
		return -1;
	if (limiter_read_config(&a->l)) {
		log_err("cannot read the settings of '%s': %m", a->ifname);
		lock_release(lock);
		return -1;
	}
	next = *limiter_live(&a->l);
	if (!!(next.flags & XDP_RL_F_FLEET) != on || live_tai_stale(&next, &tai)) {
		if (live_tai_stale(&next, &tai))
			log_warn(
				"fleet: the kernel's TAI offset is %+lld s, not %+lld s as when the "
				"settings of '%s' were published: aligned windows follow it from "
				"now (their numbers are Unix time's, as the fleet counts them)",
				(long long)(tai / 1000000000),
				(long long)(next.tai_to_unix_ns / 1000000000), a->ifname);
		if (!!(next.flags & XDP_RL_F_FLEET) != on)
			next.flags ^= XDP_RL_F_FLEET;
		next.tai_to_unix_ns = tai;
		r = limiter_publish(&a->l, &next);
		if (r)
			log_err("cannot %s the fleet mode of '%s': %m", on ? "set" : "clear",
				a->ifname);
	}
	lock_release(lock);
	return r;
}

/*
 * Before each round: the limiter as it is now. Replaced (load --force,
 * apply): mapped again, and the fleet mode set again if the new settings
 * lack it. Gone: -1, after saying so.
 */
static int check_limiter(struct agent *a)
{
	int fd = pin_open(a->l.dir, pin_names[PIN_CONFIG]);
	__u32 id = config_id(fd);
	const struct xdp_rl_live *live;
	__s64 tai;

	if (fd >= 0)
		close(fd);
	if (id != a->config_id) {
		fleet_detach(&a->f);
		/*
		 * The new tables may hold other keys in the same places: the
		 * book's entries leave it, and a window of the new limiter's
		 * takes over as its own what this server pushed into its key
		 * (fleet_retire_book). Its own traffic is checked again.
		 */
		fleet_retire_book(&a->f);
		a->own_checked = 0;
		if (attach(a)) {
			log_err("fleet: the limiter on '%s' is gone: stopping (the agent runs "
				"again once it is loaded)",
				a->ifname);
			return -1;
		}
		/* A new limiter's state is blank; a replacement keeps the agent's. */
		if (a->st->pid != (__u64)getpid())
			st_begin(a, a->redis_addr, a->f.group);
		log_warn("fleet: the limiter on '%s' was replaced: syncing the new one", a->ifname);
	} else if (limiter_read_config(&a->l)) {
		log_err("fleet: cannot read the settings of '%s': %m", a->ifname);
		return -1;
	}
	live = limiter_live(&a->l);
	if ((!(live->flags & XDP_RL_F_FLEET) || live_tai_stale(live, &tai)) && publish_flag(a, 1))
		return -1;
	live = limiter_live(&a->l);
	if (sets_signature(&a->l) != a->sets_sig) {
		a->sets_sig = sets_signature(&a->l);
		a->own_checked = 0; /* the rules changed: Redis's replies may be limited now */
		if (fleet_load_sets(&a->f, &a->l))
			log_warn("fleet: cannot read the rules of '%s': %m", a->ifname);
	}
	a->f.tai_to_unix_ns = live->tai_to_unix_ns;
	a->f.link_local = live->link_local;
	return 0;
}

/* ---- Redis -------------------------------------------------------------------------- */

/* What to do about a failure Redis itself explained, if anything. */
static const char *hint(const struct agent *a, const char *why)
{
	if (strstr(why, "NOAUTH"))
		return a->r.password ? "" :
				       " (Redis wants a password: give it with --password-file)";
	if (strstr(why, "WRONGPASS") || strstr(why, "invalid password"))
		return a->r.user ? " (check --user and the password in --password-file, and that "
				   "the user is on: 'ACL GETUSER NAME')" :
				   " (check the password in --password-file)";
	if (strstr(why, "NOPERM"))
		return " (the ACL user may not do this: it needs the keys '~xdp-rl:*' and the "
		       "commands INCRBY, EXPIRE, GET and PING, and CLUSTER SLOTS and ASKING "
		       "for a cluster)";
	if (strstr(why, "mismatch"))
		return " (the server's certificate does not name the address: give the name "
		       "it has with --tls-server-name, or connect by that name)";
	if (strstr(why, "certificate verify failed"))
		return " (check --tls-ca: it must hold the CA that signed the server's "
		       "certificate)";
	if (strstr(why, "certificate required"))
		return " (Redis wants a client certificate: give --tls-cert and --tls-key)";
	if (strstr(why, "alert unknown ca") || strstr(why, "alert bad certificate"))
		return " (Redis refused the client certificate: its tls-ca-cert-file must hold "
		       "the CA that signed --tls-cert)";
	if (strstr(why, "TLS handshake"))
		return " (is it Redis's tls-port? A plain port does not speak TLS)";
	if (!a->r.tls && strstr(why, "connection closed by Redis"))
		return " (if Redis listens with TLS on this port, give --tls)";
	if (strstr(why, "CLUSTERDOWN"))
		return " (the cluster does not serve every slot: see 'redis-cli cluster info')";
	return "";
}

/*
 * Say a failure: once when it starts, then when its cause (@cause, which
 * leaves out what changes every round, such as a count) changes, or a
 * minute later. @delay_ms: when the agent tries again (0: next round).
 */
static void say_failure(struct agent *a, const char *what, const char *cause, __u64 delay_ms)
{
	__u64 now = redis_now_ms();
	char retry[64];

	/*
	 * The same cause: the same words, or one within the other (Redis's
	 * error, said whole when a PING got it, in brief when a window's
	 * command did).
	 */
	if (a->failing && *cause && *a->said &&
	    (strstr(a->said, cause) || strstr(cause, a->said)) &&
	    now - a->said_at_ms < SAY_AGAIN_MS)
		return;
	if (delay_ms)
		snprintf(retry, sizeof(retry), "retrying in %llu ms", (unsigned long long)delay_ms);
	else
		snprintf(retry, sizeof(retry), "trying again every round");
	log_warn("fleet: %s Redis at %s: %s%s (the limiter enforces its local limits; %s)", what,
		 redis_where(&a->r), a->r.why, hint(a, a->r.why), retry);
	snprintf(a->said, sizeof(a->said), "%s", cause);
	a->said_at_ms = now;
	/* Reached again after this, the agent says so. */
	if (!strcmp(what, "cannot reach"))
		a->said_connected = 0;
}

static void failed(struct agent *a, const char *what)
{
	__u64 delay = backoff_next(&a->b, (__u32)random());

	st_add(a, XDP_RL_FLEET_ERRORS, 1);
	st_put(&a->st->state, XDP_RL_FLEET_RETRYING);
	say_failure(a, what, a->r.why, delay);
	a->failing = 1;
	a->retry_at_ms = redis_now_ms() + delay;
}

/* The counters the connection keeps, into the state. */
static void st_traffic(struct agent *a, __u64 commands, __u64 out, __u64 in)
{
	st_add(a, XDP_RL_FLEET_COMMANDS, a->r.commands - commands);
	st_add(a, XDP_RL_FLEET_BYTES_OUT, a->r.bytes_out - out);
	st_add(a, XDP_RL_FLEET_BYTES_IN, a->r.bytes_in - in);
}

/* The reply to PING. */
static int pong(const struct resp_reply *rep, size_t i, void *ctx)
{
	(void)i;
	(void)ctx;
	return rep->type == RESP_STATUS ? 0 : -1;
}

/* --sentinel: the master the sentinels name now, as the address to connect to. 0, or -1. */
static int find_master(struct agent *a, __u64 deadline_ms)
{
	struct redis_addr m;

	if (sentinel_master(a->sn, &m, deadline_ms, a->r.why, sizeof(a->r.why)))
		return -1;
	if (strcmp(m.host, a->r.host) || strcmp(m.port, a->r.port)) {
		memcpy(a->r.host, m.host, sizeof(a->r.host));
		memcpy(a->r.port, m.port, sizeof(a->r.port));
		printf("xdp-rl: fleet: %s: the sentinels name %s the master of '%s'\n", a->ifname,
		       redis_where(&a->r), a->sn->name);
		fflush(stdout);
		a->said_connected = 0;
	}
	return 0;
}

/*
 * Whether the limiter would drop what Redis sends the agent (fleet.h:
 * fleet_own_traffic), on each connection: the agent would throttle itself,
 * its rounds falling behind. Then it stops, saying how to exempt Redis:
 * 1 (stop is set). A connection whose path cannot be told is let be.
 */
static int own_traffic(struct agent *a)
{
	int fds[64], r = 0;
	size_t n = redis_fds(&a->r, fds, 64), i;
	char why[512];

	for (i = 0; i < n && r != 1; i++) {
		r = fleet_own_traffic(&a->l, fds[i], why, sizeof(why));
		if (r < 0)
			log_warn("fleet: %s", why);
	}
	if (r == 1) {
		log_err("fleet: cannot sync '%s': %s", a->ifname, why);
		a->exit_fail = 1;
		stop = 1;
		return 1;
	}
	a->own_checked = 1;
	a->own_checked_ms = redis_now_ms();
	return 0;
}

/* One round at @start_ms: connect if need be, scan, sync, write. */
static void round_once(struct agent *a, __u64 start_ms, __u64 start_mono_ns)
{
	__u64 commands = a->r.commands, out = a->r.bytes_out, in = a->r.bytes_in, timeout, took;
	struct timespec ts;
	char every[32];
	long n;

	if (!redis_connected(&a->r)) {
		if (start_ms < a->retry_at_ms)
			return;
		if (a->sn && find_master(a, start_ms + CONNECT_TIMEOUT_MS)) {
			st_traffic(a, commands, out, in);
			if (!stop)
				failed(a, "cannot find the master, last");
			return;
		}
		if (redis_connect(&a->r, start_ms + CONNECT_TIMEOUT_MS)) {
			st_traffic(a, commands, out, in);
			if (!stop)
				failed(a, "cannot reach");
			return;
		}
		st_add(a, XDP_RL_FLEET_CONNECTS, 1);
		a->own_checked = 0;
		/* Once, and again after a failure to reach it: not at every reconnection. */
		if (!a->said_connected) {
			printf("xdp-rl: fleet: %s: connected to Redis at %s\n", a->ifname,
			       redis_where(&a->r));
			fflush(stdout);
			a->said_connected = 1;
		}
	}
	/* Again now and then: a selector, a list or a cluster's node may have changed. */
	if ((!a->own_checked || start_ms - a->own_checked_ms >= OWN_RECHECK_MS) && own_traffic(a))
		return;
	n = fleet_plan(&a->f, window_clock_ns(limiter_live(&a->l)), &a->r);
	if (n < 0) {
		redis_close(&a->r);
		snprintf(a->r.why, sizeof(a->r.why), "out of memory");
		failed(a, "cannot sync with");
		return;
	}
	timeout = a->sync_ns / 1000000 > REPLY_TIMEOUT_MS ? a->sync_ns / 1000000 : REPLY_TIMEOUT_MS;
	/* Nothing to sync: a PING, so that the lag says whether Redis answers. */
	if (!n && redis_queue(&a->r, 1, (const char *const[]){ "PING" }, NULL)) {
		redis_close(&a->r);
		snprintf(a->r.why, sizeof(a->r.why), "out of memory");
		failed(a, "cannot sync with");
		return;
	}
	if (redis_exchange(&a->r, n ? fleet_reply : pong, &a->f, redis_now_ms() + timeout)) {
		fleet_abort(&a->f);
		st_traffic(a, commands, out, in);
		if (!stop)
			failed(a, "cannot sync with");
		return;
	}
	st_traffic(a, commands, out, in);
	st_add(a, XDP_RL_FLEET_WINDOWS, a->f.synced);
	st_add(a, XDP_RL_FLEET_LEFT_OUT, a->f.left_out);
	if (redis_masters(&a->r) != a->masters) {
		a->masters = redis_masters(&a->r);
		a->own_checked = 0; /* the nodes' connections, checked next round */
		printf("xdp-rl: fleet: %s: Redis at %s is a cluster of %zu masters: each key goes "
		       "to its slot's master\n",
		       a->ifname, redis_where(&a->r), a->masters);
		fflush(stdout);
	}
	if (a->f.reply_errors) {
		/*
		 * Redis answered, but not for every window (refused, or in a
		 * cluster a node down): those windows keep their local limits, and
		 * what they counted is pushed next round.
		 */
		snprintf(a->r.why, sizeof(a->r.why), "%llu of %zu commands failed: %s",
			 (unsigned long long)a->f.reply_errors, a->f.njobs, a->f.reply_why);
		st_add(a, XDP_RL_FLEET_ERRORS, 1);
		say_failure(a, "not all synced with", a->f.reply_why, 0);
		a->failing = 1;
		/*
		 * A replica (a master demoted by a failover): connect again, to
		 * the master the sentinels name now.
		 */
		if (strstr(a->f.reply_why, "READONLY"))
			redis_close(&a->r);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	took = (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec - start_mono_ns;
	st_add(a, XDP_RL_FLEET_ROUNDS, 1);
	st_put(&a->st->synced, a->f.synced);
	st_put(&a->st->round_ns, took);
	st_put(&a->st->last_sync_unix_ns, unix_ns());
	st_put(&a->st->state, XDP_RL_FLEET_SYNCING);
	if (took > a->sync_ns) {
		/*
		 * Synced, but late: the others learn of this server's counts less
		 * often than --sync, and the bound (doc/fleet.md) assumes a round
		 * within it. An error the operator sees, not a healthy lag.
		 */
		fmt_duration(a->sync_ns, every, sizeof(every));
		snprintf(a->r.why, sizeof(a->r.why),
			 "a round took %llu ms, longer than --sync %s: Redis is slow to answer, "
			 "or the round has too many windows (--max-synced)",
			 (unsigned long long)(took / 1000000), every);
		st_add(a, XDP_RL_FLEET_ERRORS, 1);
		say_failure(a, "falling behind with", "longer than --sync", 0);
		a->failing = 1;
		backoff_reset(&a->b);
		return;
	}
	if (a->failing) {
		printf("xdp-rl: fleet: %s: syncing again\n", a->ifname);
		fflush(stdout);
	}
	a->failing = 0;
	backoff_reset(&a->b);
}

static void run(struct agent *a)
{
	struct timespec next, now;
	__u64 start_ns;

	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!stop) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		start_ns = (__u64)now.tv_sec * 1000000000ULL + now.tv_nsec;
		if (check_limiter(a))
			return;
		if (!(limiter_live(&a->l)->flags & XDP_RL_F_ALIGNED)) {
			/* Per-key windows: no two servers share one. */
			if (!a->paused)
				log_warn(
					"fleet: the windows of '%s' are per key now: nothing to share "
					"until they are aligned again ('xdp-rl set %s --aligned')",
					a->ifname, a->ifname);
			a->paused = 1;
			st_add(a, XDP_RL_FLEET_ERRORS, 1);
			st_put(&a->st->state, XDP_RL_FLEET_PAUSED);
		} else {
			if (a->paused) {
				printf("xdp-rl: fleet: %s: windows aligned again: syncing\n",
				       a->ifname);
				fflush(stdout);
			}
			a->paused = 0;
			round_once(a, start_ns / 1000000, start_ns);
		}
		/* The next tick; ticks a long round overran are skipped. */
		next.tv_nsec += a->sync_ns % 1000000000ULL;
		next.tv_sec += a->sync_ns / 1000000000ULL + next.tv_nsec / 1000000000L;
		next.tv_nsec %= 1000000000L;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec ||
		    (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
			next = now;
		while (!stop &&
		       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
}

/* ---- the command ------------------------------------------------------------------------- */

/*
 * The password in @path: its first line. The file must be a regular file
 * nobody but its owner and group may read. Returns it (to free), or NULL
 * after saying why.
 */
static char *read_password(const char *path)
{
	struct stat sb;
	char *text = NULL;
	size_t len;
	int fd = open_as_caller(path);

	if (fd < 0) {
		log_err("cannot read the Redis password from '%s': %s", path,
			errno == EINVAL ? "not a regular file" : strerror(errno));
		return NULL;
	}
	if (fstat(fd, &sb) || (sb.st_mode & (S_IROTH | S_IWOTH))) {
		log_err("cannot read the Redis password from '%s': others may read or write it "
			"(mode %04o; 'chmod o-rw %s')",
			path, (unsigned int)(sb.st_mode & 07777), path);
		close(fd);
		return NULL;
	}
	if (read_all(fd, PASSWORD_MAX + 2, &text, &len)) {
		log_err("cannot read the Redis password from '%s': %s", path,
			errno == EFBIG ? "longer than 512 bytes" : strerror(errno));
		close(fd);
		return NULL;
	}
	close(fd);
	text[strcspn(text, "\r\n")] = '\0';
	if (!*text) {
		log_err("cannot read the Redis password from '%s': its first line is empty", path);
		free(text);
		return NULL;
	}
	return text;
}

/* An ACL user's name or a server's: NULL, or why it is refused. */
static const char *name_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (!n)
		return "empty";
	if (n > 255)
		return "longer than 255 characters";
	for (i = 0; i < n; i++)
		if (s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return "no spaces or control characters";
	return NULL;
}

static void wipe(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

static int cmd_fleet(int argc, char **argv)
{
	const char *ifname, *redis_addr = NULL, *group = FLEET_GROUP_DEFAULT, *pw_path = NULL, *why;
	const char *user = NULL, *ca = NULL, *cert = NULL, *key = NULL, *server_name = NULL;
	struct redis_tls tls = { 0 };
	char tls_why[512];
	int use_tls = 0;
	__u64 sync_ns = FLEET_SYNC_DEFAULT_NS, max_synced = FLEET_MAX_SYNCED_DEFAULT;
	__u32 above = FLEET_ABOVE_DEFAULT_PPM;
	struct sigaction sa = { .sa_handler = on_signal };
	struct sentinel sn;
	char sn_where[128];
	struct agent a;
	char *password = NULL, w[32];
	int opt, lock, ret = EXIT_FAIL;

	memset(&a, 0, sizeof(a));
	memset(&sn, 0, sizeof(sn));
	redis_init(&a.r);
	for (opt = 0; opt < PIN_MAX; opt++)
		a.l.fd[opt] = -1;
	while ((opt = cmd_getopt(argc, argv, &cmd_fleet_spec)) != -1) {
		switch (opt) {
		case OPT_REDIS:
			why = redis_add_seeds(&a.r, optarg);
			if (why) {
				redis_free(&a.r);
				return usage_err("fleet", "fleet: invalid --redis '%.80s': %s",
						 optarg, why);
			}
			if (!redis_addr)
				redis_addr = optarg;
			break;
		case OPT_SENTINEL:
			why = sentinel_parse(&sn, optarg);
			if (why)
				return usage_err("fleet", "fleet: invalid --sentinel '%.80s': %s",
						 optarg, why);
			a.sn = &sn;
			break;
		case OPT_MASTER:
			why = sentinel_name(&sn, optarg);
			if (why)
				return usage_err("fleet", "fleet: invalid --master '%.80s': %s",
						 optarg, why);
			break;
		case OPT_SYNC:
			why = parse_duration(optarg, FLEET_SYNC_MIN_NS, FLEET_SYNC_MAX_NS,
					     &sync_ns);
			if (why)
				return usage_err("fleet", "fleet: invalid --sync '%s': %s", optarg,
						 why);
			break;
		case OPT_GROUP:
			why = fleet_group_ok(optarg);
			if (why)
				return usage_err("fleet", "fleet: invalid --group '%.80s': %s",
						 optarg, why);
			group = optarg;
			break;
		case OPT_PASSWORD_FILE: pw_path = optarg; break;
		case OPT_USER:
			why = name_ok(optarg);
			if (why)
				return usage_err("fleet", "fleet: invalid --user '%.80s': %s",
						 optarg, why);
			user = optarg;
			break;
		case OPT_TLS: use_tls = 1; break;
		case OPT_TLS_CA: ca = optarg; break;
		case OPT_TLS_CERT: cert = optarg; break;
		case OPT_TLS_KEY: key = optarg; break;
		case OPT_TLS_SERVER_NAME:
			why = name_ok(optarg);
			if (why)
				return usage_err("fleet",
						 "fleet: invalid --tls-server-name '%.80s': %s",
						 optarg, why);
			server_name = optarg;
			break;
		case OPT_SYNC_ABOVE:
			why = fleet_parse_fraction(optarg, &above);
			if (why)
				return usage_err("fleet", "fleet: invalid --sync-above '%s': %s",
						 optarg, why);
			break;
		case OPT_MAX_SYNCED:
			why = parse_u64(optarg, 1, FLEET_MAX_SYNCED_MAX, &max_synced);
			if (why)
				return usage_err("fleet", "fleet: invalid --max-synced '%s': %s",
						 optarg, why);
			break;
		default: return EXIT_USAGE;
		}
	}
	if (cmd_positional(argc, argv, "fleet", "IFACE", 0, &ifname) ||
	    cmd_no_more(argc, argv, "fleet", 1))
		return EXIT_USAGE;
	if (!redis_addr && !a.sn)
		return usage_err("fleet", "fleet: give --redis HOST:PORT (or --sentinel HOST:PORT "
					  "--master NAME)");
	if (redis_addr && a.sn)
		return usage_err("fleet", "fleet: give --redis or --sentinel, not both");
	if (a.sn && !sn.name[0])
		return usage_err("fleet", "fleet: --sentinel needs --master NAME, the name the "
					  "sentinels monitor it by");
	if (!a.sn && sn.name[0])
		return usage_err("fleet", "fleet: --master is the name of a master the sentinels "
					  "of --sentinel monitor: give --sentinel too");
	if (user && !pw_path)
		return usage_err("fleet", "fleet: --user needs --password-file PATH, the user's "
					  "password");
	if (!use_tls && (ca || cert || key || server_name))
		return usage_err("fleet", "fleet: --tls-%s is for TLS: give --tls too",
				 ca   ? "ca" :
				 cert ? "cert" :
				 key  ? "key" :
					"server-name");
	if (!cert != !key)
		return usage_err("fleet", "fleet: a client certificate takes both --tls-cert FILE "
					  "and --tls-key FILE");
	if (a.sn) {
		/* Where it looks, as status shows it: the master's name, at the sentinels. */
		snprintf(sn_where, sizeof(sn_where), "master %s of sentinel %s:%s%s", sn.name,
			 sn.addr[0].host, sn.addr[0].port, sn.n > 1 ? ",..." : "");
		redis_addr = sn_where;
	}
	if (pw_path) {
		password = read_password(pw_path);
		if (!password)
			return EXIT_FAIL;
		a.r.password = password;
		a.r.user = user;
	}
	if (use_tls) {
		if (tls_setup(&tls, ca, cert, key, server_name, tls_why, sizeof(tls_why))) {
			log_err("cannot run the fleet agent: %s", tls_why);
			goto out;
		}
		a.r.tls = &tls;
		sn.tls = &tls;
	}
	a.ifname = ifname;
	a.redis_addr = redis_addr;
	a.sync_ns = sync_ns;
	a.b.base_ms = sync_ns / 1000000;
	a.b.cap_ms = BACKOFF_CAP_MS;
	fleet_init(&a.f, group, above, max_synced);
	srandom(getpid() ^ (unsigned int)unix_ns());

	if (cmd_prepare(NEED_BPF | NEED_NET_ADMIN, "cannot run the fleet agent"))
		goto out;
	lock = lock_take(0);
	if (lock < 0)
		goto out;
	if (limiter_open(ifname, &a.l, "cannot run the fleet agent on")) {
		lock_release(lock);
		goto out;
	}
	if (rates_in_force(&a.l)) {
		log_err("cannot run the fleet agent on '%s': it limits by a rate (--rate, %s), and "
			"a rate is local: the fleet shares windows only (give the limits as "
			"windows, then --aligned)",
			ifname,
			layers_any_rate(limiter_live(&a.l)->layer, limiter_live(&a.l)->nlayers) ?
				"its global limit" :
				"a rule's");
		lock_release(lock);
		goto out;
	}
	if (!(limiter_live(&a.l)->flags & XDP_RL_F_ALIGNED)) {
		log_err("cannot run the fleet agent on '%s': its windows are per key, and servers "
			"share only windows they agree on ('xdp-rl set %s --aligned')",
			ifname, ifname);
		lock_release(lock);
		goto out;
	}
	a.st = fleet_status_map(&a.l);
	if (!a.st) {
		lock_release(lock);
		goto out;
	}
	if (fleet_agent_alive(a.st) && a.st->pid != (__u64)getpid()) {
		log_err("cannot run the fleet agent on '%s': another one (pid %llu) syncs it "
			"already",
			ifname, (unsigned long long)a.st->pid);
		lock_release(lock);
		goto out;
	}
	if (fleet_attach(&a.f, &a.l)) {
		lock_release(lock);
		goto out;
	}
	a.config_id = config_id(a.l.fd[PIN_CONFIG]);
	a.sets_sig = sets_signature(&a.l);
	/* This agent's, before the lock goes: a second one started now sees it. */
	st_begin(&a, redis_addr, group);
	lock_release(lock);
	/* Signals cut waits short (no SA_RESTART): a stop is seen within a wait. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (publish_flag(&a, 1)) {
		st_put(&a.st->pid, 0);
		goto out;
	}
	fmt_duration(sync_ns, w, sizeof(w));
	printf("xdp-rl: fleet: %s: sharing its windows with Redis at %s, group %s, every %s\n",
	       ifname, a.sn ? redis_addr : redis_where(&a.r), group, w);
	fflush(stdout);

	run(&a);

	if (a.exit_fail) {
		/* Refused to run: the limiter goes on alone, as the error said. */
		if (!publish_flag(&a, 0))
			st_put(&a.st->state, XDP_RL_FLEET_STOPPED);
		st_put(&a.st->pid, 0);
		goto out;
	}
	if (!stop) {
		/* The limiter is gone: nothing to clear. */
		if (a.st)
			st_put(&a.st->pid, 0);
		goto out;
	}
	/* Stopped: the limiter goes on alone, with its local limits. */
	if (!publish_flag(&a, 0)) {
		st_put(&a.st->state, XDP_RL_FLEET_STOPPED);
		st_put(&a.st->pid, 0);
		printf("xdp-rl: fleet: %s: stopped; the limiter enforces its local limits alone\n",
		       ifname);
		ret = EXIT_DONE;
	}
out:
	fleet_free(&a.f);
	redis_free(&a.r);
	fleet_status_unmap(a.st);
	limiter_close(&a.l);
	wipe(password);
	tls_free(&tls);
	return ret;
}
