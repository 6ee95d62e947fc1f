// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd/rule.c - `xdp-rl rule add|del|list`: per-prefix rules, changed live. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpffs.h"
#include "caps.h"
#include "cli.h"
#include "fleet.h"
#include "live.h"
#include "lock.h"
#include "output.h"
#include "commands.h"
#include "json.h"
#include "limiter.h"
#include "log.h"
#include "rules.h"
#include "fault.h"

/*
 * Whether the rate of rule @r (described as @desc) cannot go on @l, after
 * saying why: aligned windows (a rate has none to align), or a fleet
 * agent (the fleet shares windows; a rate is local).
 */
static int rule_rate_refused(const struct limiter *l, const struct rule_spec *r, const char *desc)
{
	__u64 pid;

	if (r->rule.action != XDP_RL_RULE_LIMIT || !layers_any_rate(r->rule.layer, r->rule.nlayers))
		return 0;
	pid = fleet_running(l);
	if (pid) {
		log_err("cannot add rule %s on '%s': " FLEET_RATE_HINT, desc, l->ifname,
			(unsigned long long)pid);
		return 1;
	}
	if (limiter_live(l)->flags & XDP_RL_F_ALIGNED) {
		log_err("cannot add rule %s on '%s': its windows are aligned, and a rate has none "
			"to align ('xdp-rl set %s --per-key' first, or give the rule --layer N/DUR)",
			desc, l->ifname, l->ifname);
		return 1;
	}
	return 0;
}

static int rule_add(int argc, char **argv)
{
	static rule_ids used;
	struct rule_spec r;
	struct limiter l;
	char why[512], desc[256];
	const char *ifname;
	int ret = EXIT_FAIL;

	if (argc < 2)
		return usage_err("rule", "rule add: missing IFACE");
	ifname = argv[1];
	if (rule_parse(argc - 1, argv + 1, &r, why, sizeof(why)))
		return usage_err("rule", "rule add: %s", why);
	if (cmd_prepare(NEED_BPF | NEED_NET_ADMIN, "cannot add a rule") || lock_take(0) < 0 ||
	    limiter_open(ifname, &l, "cannot add a rule on"))
		return EXIT_FAIL;
	rule_describe(&r, desc, sizeof(desc));
	if (r.rule.action == XDP_RL_RULE_LIMIT && !(r.rule.flags & XDP_RL_RULE_F_SHARED) &&
	    r.rule.nlayers > l.cfg.fixed.max_layers) {
		log_err("cannot add rule %s on '%s': each source has room for %u layer%s "
			"(load again with --max-layers %u, or use --shared)",
			desc, ifname, l.cfg.fixed.max_layers,
			l.cfg.fixed.max_layers == 1 ? "" : "s", r.rule.nlayers);
		goto out;
	}
	if (rule_rate_refused(&l, &r, desc))
		goto out;
	switch (rules_too_nested_with(l.fd, &r, why, sizeof(why))) {
	case 0: break;
	case 1: log_err("cannot add rule %s on '%s': %s", desc, ifname, why); goto out;
	default:
		log_err("cannot add rule %s on '%s': cannot read its rules: %m", desc, ifname);
		goto out;
	}
	rule_ids_used(l.fd, used);
	if (rules_publish(&l, &r)) {
		log_err("cannot add rule %s on '%s': cannot publish the rule counts: %m", desc,
			ifname);
		goto out;
	}
	if (rule_insert(l.fd, &r, used, &l)) {
		if (errno == EEXIST)
			log_err("cannot add rule %s on '%s': that prefix has a rule "
				"(see 'xdp-rl rule list %s'; delete it first)",
				desc, ifname, ifname);
		else if (errno == ENOSPC)
			log_err("cannot add rule %s on '%s': it has %d rules, the most it can "
				"hold (delete some first)" LISTS_HINT,
				desc, ifname, XDP_RL_MAX_RULES, XDP_RL_MAX_PREFIXES);
		else
			log_err("cannot add rule %s on '%s': %m", desc, ifname);
		rules_publish(&l, NULL); /* the counts without it */
		goto out;
	}
	fault_point("rule add: inserted (committed)");
	printf("xdp-rl: %s: added rule %s\n", ifname, desc);
	ret = EXIT_DONE;
out:
	limiter_close(&l);
	return ret;
}

static int rule_del(int argc, char **argv)
{
	char pfx[INET6_ADDRSTRLEN + 8];
	struct rule_spec r = {};
	const char *e, *ifname;
	struct limiter l;
	int ret = EXIT_FAIL, rc;

	if (argc < 3)
		return usage_err("rule", "rule del: missing %s", argc < 2 ? "IFACE" : "CIDR");
	if (argc > 3)
		return usage_err("rule", "rule del: unexpected argument '%s'", argv[3]);
	ifname = argv[1];
	e = parse_cidr(argv[2], &r.addr, &r.prefix);
	if (e)
		return usage_err("rule", "rule del: invalid CIDR '%s': %s", argv[2], e);
	if (cmd_prepare(NEED_BPF | NEED_NET_ADMIN, "cannot delete a rule") || lock_take(0) < 0 ||
	    limiter_open(ifname, &l, "cannot delete a rule on"))
		return EXIT_FAIL;
	fmt_prefix(&r.addr, r.prefix, pfx, sizeof(pfx));
	rc = rule_delete(l.fd, &r);
	if (rc) {
		if (errno == ENOENT)
			log_err("cannot delete rule %s on '%s': no rule for that prefix "
				"(see 'xdp-rl rule list %s')",
				pfx, ifname, ifname);
		else
			log_err("cannot delete rule %s on '%s': %m", pfx, ifname);
		goto out;
	}
	fault_point("rule del: deleted (committed)");
	/* The counts after it (publishing waits out the packets that may still use it). */
	if (rules_publish(&l, NULL)) {
		log_err("deleted rule %s on '%s', but cannot publish the rule counts: %m", pfx,
			ifname);
		goto out;
	}
	printf("xdp-rl: %s: deleted rule %s\n", ifname, pfx);
	ret = EXIT_DONE;
out:
	limiter_close(&l);
	return ret;
}

static void hits_of(const struct limiter *l, __u32 id, struct xdp_rl_rule_hits *sum)
{
	int ncpu = libbpf_num_possible_cpus(), c;
	struct xdp_rl_rule_hits *per = calloc(ncpu > 0 ? ncpu : 1, sizeof(*per));

	memset(sum, 0, sizeof(*sum));
	if (per && !bpf_map_lookup_elem(l->fd[PIN_RULE_HITS], &id, per)) {
		for (c = 0; c < ncpu; c++) {
			sum->packets += per[c].packets;
			sum->dropped += per[c].dropped;
			sum->would_drop += per[c].would_drop;
		}
	}
	free(per);
}

static int rule_list(int argc, char **argv)
{
	char pfx[INET6_ADDRSTRLEN + 8], desc[256], w[32];
	struct xdp_rl_rule_hits h;
	struct rule_spec *rules;
	const char *ifname = NULL;
	int as_json = 0, i;
	struct limiter l;
	struct json j;
	size_t k, n;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			as_json = 1;
		else if (argv[i][0] == '-')
			return usage_err("rule", "rule list: unknown option '%s'", argv[i]);
		else if (!ifname)
			ifname = argv[i];
		else
			return usage_err("rule", "rule list: unexpected argument '%s'", argv[i]);
	}
	if (!ifname)
		return usage_err("rule", "rule list: missing IFACE");
	if (cmd_prepare_read(NEED_BPF, "cannot list rules") ||
	    limiter_open(ifname, &l, "cannot list rules on"))
		return EXIT_FAIL;
	if (rules_collect(l.fd, &rules, &n)) {
		log_err("cannot list rules on '%s': %m", ifname);
		limiter_close(&l);
		return EXIT_FAIL;
	}
	if (as_json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_str(&j, "interface", ifname);
		json_arr(&j, "rules");
	} else if (!n) {
		printf("%s: no rules (see 'xdp-rl rule --help')\n", ifname);
	}
	for (k = 0; k < n; k++) {
		const struct xdp_rl_rule *r = &rules[k].rule;

		hits_of(&l, r->id, &h);
		if (!as_json) {
			/* As `rule add` and a rules file take it: a line can be pasted back. */
			rule_format(&rules[k], desc, sizeof(desc));
			printf("%-40s # hits %llu, dropped %llu", desc,
			       (unsigned long long)h.packets, (unsigned long long)h.dropped);
			if (h.would_drop)
				printf(", would drop %llu (dry run)",
				       (unsigned long long)h.would_drop);
			putchar('\n');
			continue;
		}
		fmt_prefix(&rules[k].addr, rules[k].prefix, pfx, sizeof(pfx));
		json_obj(&j, NULL);
		json_str(&j, "prefix", pfx);
		json_str(&j, "action", word_name(rule_action_words, r->action));
		json_bool(&j, "shared", r->flags & XDP_RL_RULE_F_SHARED);
		if (r->ban_ns) {
			fmt_duration(r->ban_ns, w, sizeof(w));
			json_str(&j, "ban", w);
		} else {
			json_null(&j, "ban");
		}
		json_u64(&j, "ban_ns", r->ban_ns);
		select_json(&j, "select", &r->select);
		layers_json(&j, r->layer, r->nlayers, NULL);
		json_u64(&j, "hits", h.packets);
		json_u64(&j, "dropped", h.dropped);
		json_u64(&j, "would_drop", h.would_drop);
		json_end(&j);
	}
	if (as_json) {
		json_end(&j);
		json_end(&j);
		json_finish(&j);
	}
	free(rules);
	limiter_close(&l);
	return EXIT_DONE;
}

static const char *const rule_forms[] = {
	"add IFACE CIDR (--allow | --deny | --layer N/DUR ... [--shared]\n"
	"| --rate N/DUR [--burst B] [--shared])\n"
	"[--ban DUR] [--proto P] [--dport LIST] [--syn]",
	"del IFACE CIDR",
	"list IFACE [--json]",
	NULL,
};

static int cmd_rule(int argc, char **argv);

const struct cmd_spec cmd_rule_spec = {
	.name = "rule",
	.run = cmd_rule,
	.forms = rule_forms,
	.about = "Per-prefix rules, changed live; the longest matching prefix wins.\n",
	.opts = rule_opts,
	.words = rule_words,
	.notes = "Adding a rule never detaches the program or resets other sources' windows.\n"
		 "'rule list' shows each rule's hits and drops.\n",
};

static int cmd_rule(int argc, char **argv)
{
	if (argc < 2)
		return usage_err("rule", "rule: missing add, del or list");
	if (!strcmp(argv[1], "add"))
		return rule_add(argc - 1, argv + 1);
	if (!strcmp(argv[1], "del") || !strcmp(argv[1], "delete"))
		return rule_del(argc - 1, argv + 1);
	if (!strcmp(argv[1], "list") || !strcmp(argv[1], "show"))
		return rule_list(argc - 1, argv + 1);
	return usage_err("rule", "rule: unknown subcommand '%s': use add, del or list", argv[1]);
}
