// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd_reset.c - `xdp-rl reset`: forget a source's window, or every window. */
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include "bpffs.h"
#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "limiter.h"
#include "log.h"
#include "options.h"
#include "rules.h"
#include "sources.h"

enum { OPT_ALL = 256 };

static const char *const reset_forms[] = { "IFACE (ADDRESS | --all)", NULL };

static const struct opt_spec reset_opts[] = {
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

static int cmd_reset(int argc, char **argv)
{
	const char *ifname, *addr = NULL, *why;
	char key[INET6_ADDRSTRLEN + 8];
	const struct xdp_rl_rule *rule;
	struct xdp_rl_layers w;
	struct xdp_rl_rule rbuf;
	struct ip_addr a, masked;
	int opt, all = 0, id, found;
	struct rule_spec rs;
	struct limiter l;
	__u64 n = 0;
	__u32 k[4];

	while ((opt = cmd_getopt(argc, argv, &cmd_reset_spec)) != -1) {
		if (opt != OPT_ALL)
			return EXIT_USAGE;
		all = 1;
	}
	if (cmd_positional(argc, argv, "reset", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (argc - optind > 1)
		addr = argv[optind + 1];
	if (argc - optind > 2)
		return usage_err("reset", "reset: unexpected argument '%s'", argv[optind + 2]);
	if (!addr == !all)
		return usage_err("reset", "reset: give either an ADDRESS or --all");
	if (addr && (why = parse_addr(addr, &a)))
		return usage_err("reset", "reset: invalid ADDRESS '%s': %s", addr, why);
	if (cmd_prepare(NEED_BPF, "cannot reset") || limiter_lock(0) < 0 ||
	    limiter_open(ifname, &l, "cannot reset sources on"))
		return EXIT_FAIL;

	if (all) {
		/* Sources, the /24 and /48 aggregates, and --shared rules' budgets. */
		if (forget_all(&l, &n)) {
			limiter_close(&l);
			return EXIT_FAIL;
		}
		printf("xdp-rl: %s: forgot %llu window%s\n", ifname, (unsigned long long)n,
		       n == 1 ? "" : "s");
		limiter_close(&l);
		return EXIT_DONE;
	}

	/* The window that limits ADDRESS: a --shared rule's, its own, or its aggregate. */
	rule = rule_lookup(&l, &a, &rbuf);
	if (rule && rule->action == XDP_RL_RULE_LIMIT && (rule->flags & XDP_RL_RULE_F_SHARED)) {
		memset(&rs, 0, sizeof(rs));
		rs.rule = *rule;
		rule_prefix_of(&l, &a, rule->id, &rs.addr, &rs.prefix);
		fmt_prefix(&rs.addr, rs.prefix, key, sizeof(key));
		if (shared_forget(&l, &rs, &n)) {
			log_err("cannot reset the shared budget of %s on '%s': %m", key, ifname);
			limiter_close(&l);
			return EXIT_FAIL;
		}
		printf("xdp-rl: %s: forgot the shared budget of %s (every source in it)\n",
		       ifname, key);
		limiter_close(&l);
		return EXIT_DONE;
	}
	masked = a;
	id = source_key(&l, &masked, k);
	fmt_prefix(&masked, a.family == AF_INET ? l.cfg.fixed.v4_prefix : l.cfg.fixed.v6_prefix,
		   key, sizeof(key));
	found = source_windows(&l, id, k, w.layer, 1);
	if (found > 0) {
		printf("xdp-rl: %s: forgot %s\n", ifname, key);
	} else if (!found) {
		/* No slot of its own: it may be charged to its /24 or /48. */
		id = agg_key(&a, &masked, k);
		found = source_windows(&l, id, k, w.layer, 1);
		fmt_prefix(&masked, a.family == AF_INET ? XDP_RL_AGG4_PREFIX : XDP_RL_AGG6_PREFIX,
			   key, sizeof(key));
		if (found > 0)
			printf("xdp-rl: %s: forgot the aggregate window of %s (every source in "
			       "it without a slot of its own)\n", ifname, key);
		else if (!found)
			printf("xdp-rl: %s: no window to forget for %s\n", ifname, addr);
	}
	if (found < 0) {
		limiter_close(&l);
		return EXIT_FAIL;
	}
	limiter_close(&l);
	return EXIT_DONE;
}
