// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cmd/exporter.c - `xdp-rl exporter`: /metrics over HTTP (libmicrohttpd) for
 * every limiter in this network namespace, read anew on each scrape.
 *
 * What it keeps of its privileges, and why. It binds first (a port below
 * 1024 takes CAP_NET_BIND_SERVICE, -n takes CAP_SYS_ADMIN), then keeps only
 * what reading the maps takes:
 *
 *  - CAP_BPF, for the bpf() calls (BPF_OBJ_GET of the pins, lookups, the
 *    link's info). Nothing else: not CAP_NET_ADMIN, CAP_SYS_ADMIN or
 *    CAP_DAC_OVERRIDE.
 *  - Its uid, root: the pinned state is root's, in folders of mode 0700, and
 *    the pins must be opened read-write (the kernel refuses a shared mapping
 *    of a read-only map fd, which is how the source tables are read in
 *    place, and refuses BPF_F_RDONLY for links). As root, the owner's bits
 *    let it in; as any other user it would need CAP_DAC_OVERRIDE, which
 *    reads and writes every file on the host. So a non-root exporter keeps
 *    CAP_DAC_OVERRIDE, and is told that running as root is the narrower
 *    choice.
 *  - What root's uid still gives (writing root's files) is taken away by a
 *    mount namespace of its own in which every mount is read-only, made
 *    while it still has CAP_SYS_ADMIN: without it, it cannot remount.
 *
 * Then: no capability in its bounding, inheritable or ambient sets,
 * no_new_privs, and securebits locked, so nothing it could exec regains
 * root's capabilities. The HTTP thread is started after all of this, so it
 * inherits only what is left. It never takes the state lock: a scrape reads
 * the pinned maps (a command that changes them holds the lock meanwhile,
 * and a scrape sees the limiter before or after, as `status` would).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <linux/securebits.h>
#include <microhttpd.h>

#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "log.h"
#include "metrics.h"
#include "options.h"
#include "proc.h"

enum { OPT_LISTEN = 256, OPT_RULE_SERIES };

/*
 * Port 9577: in the range Prometheus's exporters take (9100-9999), on the
 * host's loopback by default; --listen names another.
 */
#define LISTEN_DEFAULT	   "127.0.0.1:9577"
#define CONNECTION_LIMIT   32
#define CONNECTION_TIMEOUT 10 /* seconds */

static const char *const exporter_forms[] = { "[--listen ADDR:PORT] [--rule-series each|none]",
					      NULL };

static const struct opt_spec exporter_opts[] = {
	{ "listen", OPT_LISTEN, "ADDR:PORT",
	  "where to serve /metrics (default " LISTEN_DEFAULT ";\n[ADDR]:PORT for IPv6)" },
	{ "rule-series", OPT_RULE_SERIES, "each|none",
	  "a series of each rule (the default), or none (as\n'xdp-rl metrics')" },
	{ NULL },
};

static const struct opt_words exporter_words[] = {
	{ "rule-series", rule_series_words },
	{ NULL },
};

/* --rule-series: 1 each, 0 none. */
static unsigned int rule_series = 1;

static int cmd_exporter(int argc, char **argv);

const struct cmd_spec cmd_exporter_spec = {
	.name = "exporter",
	.run = cmd_exporter,
	.forms = exporter_forms,
	.about = "Serve 'xdp-rl metrics' over HTTP at /metrics, for every limiter in this\n"
		 "network namespace, read anew on each scrape (limiters loaded or unloaded\n"
		 "meanwhile appear and go). Runs in the foreground until SIGTERM or SIGINT.\n"
		 "After it binds, it keeps only CAP_BPF, in a read-only view of the files.\n",
	.opts = exporter_opts,
	.words = exporter_words,
};

/* "ADDR:PORT" or "[ADDR]:PORT" into @ss; NULL, or why not. */
static const char *parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(s, ':'), *why;
	int bracketed = 0;
	struct ip_addr a;
	size_t n;
	__u64 port;

	if (!colon)
		return "give ADDR:PORT, e.g. " LISTEN_DEFAULT;
	n = colon - s;
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		s++;
		n -= 2;
		bracketed = 1;
	}
	if (n >= sizeof(host))
		return "not an address";
	memcpy(host, s, n);
	host[n] = '\0';
	why = parse_addr(host, &a);
	if (why)
		return why;
	if (a.family == AF_INET6 && !bracketed)
		return "write an IPv6 address in brackets: [ADDR]:PORT";
	why = parse_u64(colon + 1, 1, 65535, &port);
	if (why)
		return why;
	memset(ss, 0, sizeof(*ss));
	if (a.family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		memcpy(&in->sin_addr, a.bytes, 4);
		*len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		memcpy(&in6->sin6_addr, a.bytes, 16);
		*len = sizeof(*in6);
	}
	return NULL;
}

static int listen_on(const char *spec, const struct sockaddr_storage *ss, socklen_t len)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0) {
		log_err("cannot listen on %s: %m", spec);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, len) || listen(fd, CONNECTION_LIMIT)) {
		log_err("cannot listen on %s: %m%s", spec,
			errno == EADDRINUSE ? " (is an exporter running there? choose another "
					      "port with --listen)" :
			errno == EADDRNOTAVAIL ?
					      " (no interface of this network namespace has that "
					      "address: see 'ip addr')" :
			errno == EACCES ? " (a port below 1024 takes CAP_NET_BIND_SERVICE)" :
					  "");
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Under `ip netns exec`, /sys/fs/bpf is hidden (a fresh /sys) and the
 * pinned state is reached through an ancestor's /proc/PID/root, which a
 * process left with CAP_BPF alone may not look into (ptrace access). So the
 * exporter first joins the mount namespace of the nearest ancestor that has
 * the bpffs (as bpffs.c does to mount one): 0, or -1 if it has to stay.
 */
static int join_bpffs_mounts(void)
{
	char path[64];
	struct statfs st;
	pid_t pid = getpid();
	int fd, ret;

	if (!statfs("/sys/fs/bpf", &st) && st.f_type == BPF_FS_MAGIC)
		return 0;
	while (pid > 1 && (pid = proc_parent(pid)) > 0) {
		snprintf(path, sizeof(path), "/proc/%d/root/sys/fs/bpf", pid);
		if (statfs(path, &st) || st.f_type != BPF_FS_MAGIC)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/mnt", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		ret = setns(fd, CLONE_NEWNS);
		close(fd);
		return ret;
	}
	return 0; /* no bpffs anywhere yet: nothing was ever loaded */
}

/*
 * A mount namespace of its own where every mount is read-only: what root's
 * uid could still write, it cannot. Mounts made on the host later still
 * come in (slave), read-write but out of reach: they are the host's.
 */
static int readonly_view(void)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) ||
	    mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &attr, sizeof(attr)))
		return -1;
	return 0;
}

/* Keep @keep (n of them) in the effective and permitted sets, and nothing anywhere else. */
static int drop_caps(const cap_value_t *keep, int n)
{
	cap_value_t c, max = cap_max_bits();
	cap_flag_value_t v = CAP_CLEAR;
	cap_t now = cap_get_proc(), want;
	int i, ret = -1;

	if (!now)
		return -1;
	/* Nothing it execs regains root's capabilities, whatever the file says. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		goto out;
	if (!cap_get_flag(now, CAP_SETPCAP, CAP_EFFECTIVE, &v) && v == CAP_SET) {
		if (cap_set_secbits(SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
				    SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
				    SECBIT_NO_CAP_AMBIENT_RAISE |
				    SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED))
			goto out;
		for (c = 0; c < max; c++) {
			for (i = 0; i < n && keep[i] != c; i++)
				;
			if (i == n && cap_drop_bound(c) && errno != EINVAL)
				goto out;
		}
	}
	if (cap_reset_ambient() && errno != EINVAL)
		goto out;
	want = cap_init();
	if (!want)
		goto out;
	if (cap_set_flag(want, CAP_PERMITTED, n, keep, CAP_SET) ||
	    cap_set_flag(want, CAP_EFFECTIVE, n, keep, CAP_SET) || cap_set_proc(want)) {
		cap_free(want);
		goto out;
	}
	cap_free(want);
	ret = 0;
out:
	cap_free(now);
	return ret;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *type,
			     char *body, size_t len, int must_free)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(
		len, body, must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		if (must_free)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

#define TEXT "text/plain; charset=utf-8"

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_len, void **state)
{
	static char not_found[] = "not found: the metrics are at /metrics\n";
	static char not_allowed[] = "method not allowed: GET /metrics\n";
	static char failed[] = "cannot read the limiters' maps (see the exporter's log)\n";
	char *body = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	(void)cls;
	(void)version;
	(void)upload;
	(void)upload_len;
	(void)state;
	if (strcmp(url, "/metrics"))
		return reply(c, MHD_HTTP_NOT_FOUND, TEXT, not_found, strlen(not_found), 0);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT, not_allowed, strlen(not_allowed),
			     0);
	f = open_memstream(&body, &len);
	if (!f)
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, TEXT, failed, strlen(failed), 0);
	err = metrics_write(f, NULL, rule_series);
	if (fclose(f) || err) {
		free(body);
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, TEXT, failed, strlen(failed), 0);
	}
	return reply(c, MHD_HTTP_OK, METRICS_CONTENT_TYPE, body, len, 1);
}

static int cmd_exporter(int argc, char **argv)
{
	const char *listen_spec = LISTEN_DEFAULT, *why;
	cap_value_t keep[2] = { CAP_BPF };
	struct sockaddr_storage ss;
	struct MHD_Daemon *d;
	socklen_t len = 0;
	int opt, fd, sig, nkeep = 1;
	sigset_t set;

	while ((opt = cmd_getopt(argc, argv, &cmd_exporter_spec)) != -1) {
		if (opt == OPT_RULE_SERIES) {
			why = word_parse(rule_series_words, optarg, &rule_series);
			if (why)
				return usage_err("exporter",
						 "exporter: invalid --rule-series '%s': %s", optarg,
						 why);
			continue;
		}
		if (opt != OPT_LISTEN)
			return EXIT_USAGE;
		listen_spec = optarg;
	}
	if (cmd_no_more(argc, argv, "exporter", 0))
		return EXIT_USAGE;
	why = parse_listen(listen_spec, &ss, &len);
	if (why)
		return usage_err("exporter", "exporter: invalid --listen '%s': %s", listen_spec,
				 why);
	if (cmd_prepare(NEED_BPF, "cannot start the exporter"))
		return EXIT_FAIL;
	fd = listen_on(listen_spec, &ss, len);
	if (fd < 0)
		return EXIT_FAIL;

	/* A kernel older than CAP_BPF grants bpf() with CAP_SYS_ADMIN. */
	if (!CAP_IS_SUPPORTED(CAP_BPF))
		keep[0] = CAP_SYS_ADMIN;
	if (geteuid() != 0) {
		keep[nkeep++] = CAP_DAC_OVERRIDE;
		log_warn("exporter: not running as root, so it keeps CAP_DAC_OVERRIDE to reach "
			 "root's pinned state (mode 0700): running as root without it is the "
			 "narrower choice");
	}
	if (join_bpffs_mounts())
		log_warn("exporter: cannot join the mount namespace that has the bpffs: %m (run "
			 "'xdp-rl -n NETNS exporter' rather than 'ip netns exec')");
	if (readonly_view())
		log_warn("exporter: cannot make a read-only view of the files for itself: %m "
			 "(it needs CAP_SYS_ADMIN at start)");
	if (drop_caps(keep, nkeep)) {
		log_err("exporter: cannot give up its capabilities: %m");
		close(fd);
		return EXIT_FAIL;
	}

	/* Signals are waited for here; the HTTP thread inherits the mask and never sees them. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG, 0,
			     NULL, NULL, on_request, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)CONNECTION_LIMIT,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)CONNECTION_TIMEOUT,
			     MHD_OPTION_END);
	if (!d) {
		log_err("exporter: cannot start serving on %s", listen_spec);
		close(fd);
		return EXIT_FAIL;
	}
	printf("xdp-rl: serving the metrics of this namespace's limiters at http://%s/metrics\n",
	       listen_spec);
	fflush(stdout);
	while (sigwait(&set, &sig))
		;
	MHD_stop_daemon(d);
	close(fd);
	return EXIT_DONE;
}
