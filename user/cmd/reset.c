// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cmd/reset.c - `xdp-rl reset` and `xdp-rl charge`: change the window that
 * limits a source (as Hammer's set and inc do an application's), or forget
 * every window. The program makes each change (admin.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include "admin.h"
#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "fault.h"
#include "limiter.h"
#include "live.h"
#include "lock.h"
#include "log.h"
#include "options.h"
#include "rules.h"
#include "sources.h"

enum { OPT_ALL = 256, OPT_COUNT };

static const char *const reset_forms[] = { "IFACE (ADDRESS [PORT] [--count N] | --all)", NULL };

static const struct opt_spec reset_opts[] = {
	{ "count", OPT_COUNT, "N",
	  "instead of forgetting it, start the window afresh holding N\n(N at the limit blocks the "
	  "source for a window)" },
	{ "all", OPT_ALL, NULL, "every window: sources, aggregates, shared budgets" },
	{ NULL },
};

static int cmd_reset(int argc, char **argv);

const struct cmd_spec cmd_reset_spec = {
	.name = "reset",
	.run = cmd_reset,
	.forms = reset_forms,
	.about = "Forget the window that limits ADDRESS (as 'get' shows it), or with --all\n"
		 "every window. The next packet opens a new one.\n",
	.opts = reset_opts,
};

static const char *const charge_forms[] = { "IFACE ADDRESS [PORT] [N]", NULL };

static int cmd_charge(int argc, char **argv);

const struct cmd_spec cmd_charge_spec = {
	.name = "charge",
	.run = cmd_charge,
	.forms = charge_forms,
	.about = "Add N (default 1) to the window that limits ADDRESS, without a limit check,\n"
		 "opening one if there is none: an application or an intrusion detector\n"
		 "charging what it saw (failed logins, say) to the source's budget here.\n",
};

/* The address a command was given, and what limits it; EXIT_DONE or a failure. */
static int resolve(const char *cmd, const char *addr, struct ip_addr *a)
{
	const char *why = parse_addr(addr, a);

	if (why)
		return usage_err(cmd, "%s: invalid ADDRESS '%s': %s", cmd, addr, why);
	return EXIT_DONE;
}

/*
 * Whether @what (charge, reset --count) cannot set the count of target @t
 * (@key on @ifname), after saying why: its limit is a rate, which keeps
 * what its key owes, not a count.
 */
static int rate_refused(const char *what, const struct target *t, const char *key,
			const char *ifname)
{
	if ((t->kind != TARGET_KEY && t->kind != TARGET_SHARED) ||
	    !layers_any_rate(t->set.lay, t->set.n))
		return 0;
	log_err("cannot %s %s on '%s': its limit is a rate (--rate), which keeps no count to set "
		"(a plain 'xdp-rl reset %s %s' makes it owe nothing)",
		what, key, ifname, ifname, key);
	return 1;
}

static int reset_address(struct limiter *l, const char *addr, const struct ip_addr *a,
			 unsigned int port, int has_count, __u64 count)
{
	char key[INET6_ADDRSTRLEN + 24];
	struct target t;
	int r;

	target_of(l, a, port, &t);
	if (t.kind == TARGET_EXEMPT) {
		printf("xdp-rl: %s: no window to forget for %s: link-local sources are exempt "
		       "(--link-local exempt)\n",
		       l->ifname, addr);
		return EXIT_DONE;
	}
	if (t.kind == TARGET_ALLOW || t.kind == TARGET_DENY) {
		printf("xdp-rl: %s: no window to forget for %s: it is %s by %s\n", l->ifname, addr,
		       t.kind == TARGET_ALLOW ? "allowed" : "denied",
		       !t.by_list	      ? "a rule" :
		       t.kind == TARGET_ALLOW ? "the allow list" :
						"the deny list");
		return EXIT_DONE;
	}
	fmt_key(&t.key, t.prefix, t.has_port, t.port, key, sizeof(key));
	if (has_count && rate_refused("reset --count", &t, key, l->ifname))
		return EXIT_FAIL;
	if (t.kind == TARGET_SHARED) {
		if (admin_reset_shared(l, t.rule.id, 0, t.set.n, count, t.set.lay) < 0) {
			log_err("cannot reset the shared budget of %s on '%s': %s", key, l->ifname,
				admin_strerror(errno));
			return EXIT_FAIL;
		}
		charges_forget(l, &t);
		if (has_count && count)
			charges_note(l, &t, NULL, count, 1);
		if (has_count)
			printf("xdp-rl: %s: the shared budget of %s (every source in it) starts afresh "
			       "holding %llu\n",
			       l->ifname, key, (unsigned long long)count);
		else
			printf("xdp-rl: %s: forgot the shared budget of %s (every source in it)\n",
			       l->ifname, key);
		return EXIT_DONE;
	}
	r = admin_reset(l, t.id, t.k, t.set.lsid, 0, t.set.n, count, t.set.lay);
	if (r < 0) {
		log_err("cannot reset %s on '%s': %s", key, l->ifname, admin_strerror(errno));
		return EXIT_FAIL;
	}
	charges_forget(l, &t);
	if (has_count) {
		if (count)
			charges_note(l, &t, NULL, count, 1);
		printf("xdp-rl: %s: %s starts afresh holding %llu\n", l->ifname, key,
		       (unsigned long long)count);
		return EXIT_DONE;
	}
	if (r > 0) {
		printf("xdp-rl: %s: forgot %s\n", l->ifname, key);
		return EXIT_DONE;
	}
	/* No slot of its own: it may be charged to its /24 or /48. */
	target_aggregate(l, a, port, &t);
	fmt_key(&t.key, t.prefix, t.has_port, t.port, key, sizeof(key));
	r = admin_reset(l, t.id, t.k, t.set.lsid, 0, t.set.n, 0, t.set.lay);
	if (r < 0) {
		log_err("cannot reset %s on '%s': %s", key, l->ifname, admin_strerror(errno));
		return EXIT_FAIL;
	}
	charges_forget(l, &t);
	if (r > 0)
		printf("xdp-rl: %s: forgot the aggregate window of %s (every source in it without "
		       "a slot of its own)\n",
		       l->ifname, key);
	else
		printf("xdp-rl: %s: no window to forget for %s\n", l->ifname, addr);
	return EXIT_DONE;
}

static int cmd_reset(int argc, char **argv)
{
	const char *ifname, *addr = NULL, *why;
	int opt, all = 0, has_count = 0, r, took;
	unsigned int port;
	struct limiter l;
	struct ip_addr a;
	__u64 n = 0, count = 0;

	while ((opt = cmd_getopt(argc, argv, &cmd_reset_spec)) != -1) {
		if (opt == OPT_ALL) {
			all = 1;
		} else if (opt == OPT_COUNT) {
			why = parse_u64(optarg, 0, XDP_RL_LIMIT_MAX, &count);
			if (why)
				return usage_err("reset", "reset: invalid --count '%s': %s", optarg,
						 why);
			has_count = 1;
		} else {
			return EXIT_USAGE;
		}
	}
	if (cmd_positional(argc, argv, "reset", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (argc - optind > 1)
		addr = argv[optind + 1];
	if (cmd_no_more(argc, argv, "reset", 3))
		return EXIT_USAGE;
	if (!addr == !all)
		return usage_err("reset", "reset: give either an ADDRESS or --all");
	if (all && has_count)
		return usage_err("reset", "reset: --count goes with an ADDRESS, not --all");
	if (addr && (r = resolve("reset", addr, &a)))
		return r;
	if (cmd_prepare(NEED_BPF, "cannot reset") || lock_take(0) < 0 ||
	    limiter_open(ifname, &l, "cannot reset sources on"))
		return EXIT_FAIL;
	if (all) {
		/* Sources, the /24 and /48 aggregates, and --shared rules' budgets. */
		r = forget_all(&l, &n) ? EXIT_FAIL : EXIT_DONE;
		charges_clear(&l);
		if (r == EXIT_DONE)
			printf("xdp-rl: %s: forgot %llu window%s\n", ifname, (unsigned long long)n,
			       n == 1 ? "" : "s");
	} else {
		took = cmd_port(argc, argv, "reset", 2, xdp_rl_key_port(l.cfg.fixed.key), &port);
		r = took < 0 || cmd_no_more(argc, argv, "reset", 2 + took) ?
			    EXIT_USAGE :
			    reset_address(&l, addr, &a, port, has_count, count);
	}
	limiter_close(&l);
	return r;
}

static int cmd_charge(int argc, char **argv)
{
	const char *ifname, *addr, *why;
	char key[INET6_ADDRSTRLEN + 24];
	struct source before;
	struct limiter l;
	struct target t;
	struct ip_addr a;
	__u64 n = 1;
	int r, took;
	unsigned int port;

	if (cmd_getopt(argc, argv, &cmd_charge_spec) != -1)
		return EXIT_USAGE;
	if (cmd_positional(argc, argv, "charge", "IFACE", 0, &ifname) ||
	    cmd_positional(argc, argv, "charge", "ADDRESS", 1, &addr) ||
	    cmd_no_more(argc, argv, "charge", 4))
		return EXIT_USAGE;
	if ((r = resolve("charge", addr, &a)))
		return r;
	if (cmd_prepare(NEED_BPF, "cannot charge") || lock_take(0) < 0 ||
	    limiter_open(ifname, &l, "cannot charge a source on"))
		return EXIT_FAIL;
	/* N after the PORT, if the keys hold one. */
	took = cmd_port(argc, argv, "charge", 2, xdp_rl_key_port(l.cfg.fixed.key), &port);
	if (took < 0 || cmd_no_more(argc, argv, "charge", 3 + took)) {
		limiter_close(&l);
		return EXIT_USAGE;
	}
	if (argc - optind > 2 + took &&
	    (why = parse_u64(argv[optind + 2 + took], 1, XDP_RL_LIMIT_MAX, &n))) {
		limiter_close(&l);
		return usage_err("charge", "charge: invalid N '%s': %s", argv[optind + 2 + took],
				 why);
	}
	target_of(&l, &a, port, &t);
	fmt_key(&t.key, t.prefix, t.has_port, t.port, key, sizeof(key));
	if (t.kind == TARGET_EXEMPT) {
		log_err("cannot charge %s on '%s': link-local sources are exempt "
			"(--link-local exempt), and no window limits them",
			addr, ifname);
		limiter_close(&l);
		return EXIT_FAIL;
	}
	if (t.kind == TARGET_ALLOW || t.kind == TARGET_DENY) {
		log_err("cannot charge %s on '%s': it is %s by %s, which no window limits", addr,
			ifname, t.kind == TARGET_ALLOW ? "allowed" : "denied",
			!t.by_list	       ? "a rule" :
			t.kind == TARGET_ALLOW ? "the allow list" :
						 "the deny list");
		limiter_close(&l);
		return EXIT_FAIL;
	}
	if (rate_refused("charge", &t, key, ifname)) {
		limiter_close(&l);
		return EXIT_FAIL;
	}
	/* The windows as they were: what the charge took from their budget, for get. */
	if (target_read(&l, &t, &before) <= 0)
		memset(&before, 0, sizeof(before));
	r = t.kind == TARGET_SHARED ?
		    admin_charge_shared(&l, t.rule.id, 0, t.set.n, n, t.set.lay) :
		    admin_charge(&l, t.id, t.k, t.set.lsid, 0, t.set.n, n, t.set.lay);
	if (r > 0)
		charges_note(&l, &t, &before, n, 0);
	if (r <= 0) {
		if (r == 0)
			errno = ENOSPC;
		log_err("cannot charge %s on '%s': %s", key, ifname, admin_strerror(errno));
		limiter_close(&l);
		return EXIT_FAIL;
	}
	printf("xdp-rl: %s: charged %llu to %s%s\n", ifname, (unsigned long long)n, key,
	       t.kind == TARGET_SHARED ? " (the shared budget)" : "");
	limiter_close(&l);
	return EXIT_DONE;
}
