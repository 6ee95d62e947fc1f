// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd/set.c - `xdp-rl set`: change a running limiter's settings live. */
#include <stdio.h>
#include <string.h>

#include "bpffs.h"
#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "fleet.h"
#include "limiter.h"
#include "live.h"
#include "lock.h"
#include "log.h"
#include "rules.h"
#include "settings.h"
#include "sources.h"

static int cmd_set(int argc, char **argv);

const struct cmd_spec cmd_set_spec = {
	.name = "set",
	.run = cmd_set,
	.forms = settings_set_forms,
	.about = "Change the running limiter's settings at once, without detaching it.\n",
	.opts = settings_set_opts,
	.words = settings_words,
};

/*
 * After a change of limits: the windows that have no budget left under
 * them, whose keys stay blocked until they end (a lower limit under a
 * count already past it).
 */
static void say_exhausted(const struct limiter *l, const char *ifname)
{
	__u64 n, last_ns;
	char w[32];

	if (windows_exhausted(l, &n, &last_ns) || !n)
		return;
	fmt_duration((last_ns + 999999999ULL) / 1000000000ULL * 1000000000ULL, w, sizeof(w));
	printf("xdp-rl: %s: %llu window%s %s no budget left under these limits: %s blocked "
	       "until %s (within %s; 'xdp-rl reset %s --all' starts every window afresh)\n",
	       ifname, (unsigned long long)n, n == 1 ? "" : "s", n == 1 ? "has" : "have",
	       n == 1 ? "its key is" : "their keys are", n == 1 ? "it ends" : "they end", w,
	       ifname);
}

static int cmd_set(int argc, char **argv)
{
	struct settings s = {};
	struct rules_summary rs;
	struct why why;
	struct xdp_rl_live next;
	struct limiter l;
	const char *ifname;
	const char *restart;
	char desc[256], names[512];
	__u64 fleet_pid;
	int opt, r;

	while ((opt = cmd_getopt(argc, argv, &cmd_set_spec)) != -1) {
		r = settings_option(opt, optarg, &s, &why);
		if (r < 0)
			return usage_err("set", "set: %s", why.text);
		if (r)
			return EXIT_USAGE;
	}
	if (cmd_positional(argc, argv, "set", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (cmd_no_more(argc, argv, "set", 1))
		return EXIT_USAGE;
	if (!settings_any(&s, IN_SET)) {
		settings_names(IN_SET, names, sizeof(names));
		return usage_err("set", "set: nothing to change: give %s", names);
	}
	if (settings_limits_given(&s, &why))
		return usage_err("set", "set: %s", why.text);

	if (cmd_prepare(NEED_BPF | NEED_NET_ADMIN, "cannot change settings") || lock_take(0) < 0 ||
	    limiter_open(ifname, &l, "cannot change settings on"))
		return EXIT_FAIL;

	next = *limiter_live(&l);
	r = EXIT_FAIL;
	if ((settings_given(&s, OPT_LIMIT) || settings_given(&s, OPT_WINDOW)) &&
	    !settings_given(&s, OPT_RATE) && next.nlayers > 1) {
		/* Refused for what runs, as a layer count it has no room for: exit 1. */
		log_err("cannot change settings on '%s': it has %u layers, and --limit and "
			"--window set one (give them all with --layer)",
			ifname, next.nlayers);
		goto out;
	}
	if (s.live.nlayers > l.cfg.fixed.max_layers) {
		log_err("cannot change settings on '%s': it was loaded with room for %u layer%s "
			"per source (load again with --force --max-layers %u)",
			ifname, l.cfg.fixed.max_layers, l.cfg.fixed.max_layers == 1 ? "" : "s",
			s.live.nlayers);
		goto out;
	}
	settings_merge(&s, &next);
	if (settings_given(&s, OPT_ON_FULL) && !next.new_sources.limit) {
		r = usage_err("set", "set: --on-table-full needs --new-sources N/DUR");
		goto out;
	}
	rules_summarize(l.fd, NULL, &rs);
	if (settings_rate(&s, &next, &why) || settings_select(&s, &next, &why) ||
	    settings_check_rate(&s, &next, &rs, &why) ||
	    settings_check_bytes(&next, l.cfg.fixed.bytes, "set", &why)) {
		r = usage_err("set", "set: %s", why.text);
		goto out;
	}
	fleet_pid = layers_any_rate(next.layer, next.nlayers) ? fleet_running(&l) : 0;
	if (fleet_pid) {
		log_err("cannot change settings on '%s': " FLEET_RATE_HINT, ifname,
			(unsigned long long)fleet_pid);
		goto out;
	}
	/* Recounted: a rule change that was killed may have left a count too high. */
	rules_count(l.fd, &next.nrules4, &next.nrules6);
	/*
	 * A change in the number of layers is a new limit set: every key
	 * starts afresh under it (I3, bpf/window.h), so that a layer dropped
	 * and put back later does not come back with its old count.
	 */
	/*
	 * So is a new selector: the counts were of other packets (a --syn
	 * flood's, say), which the new selection would charge against a
	 * budget they were never offered to; every window of the limits it
	 * selects for starts afresh, and set says so.
	 */
	/* And so is a change between windows and a rate: what a key owes is no count. */
	restart = next.nlayers != limiter_live(&l)->nlayers ?
			  "the number of layers changed" :
		  !layers_same_shape(next.layer, next.nlayers, limiter_live(&l)->layer,
				     next.nlayers) ?
			  "the limit changed between windows and a rate" :
		  memcmp(&next.select, &limiter_live(&l)->select, sizeof(next.select)) ?
			  "the selector changed which packets count" :
			  NULL;
	if (restart) {
		if (l.cfg.next_lsid >= XDP_RL_LSID_MAX) {
			log_err("cannot change settings on '%s': it has used every limit set id "
				"(load again with --force)",
				ifname);
			goto out;
		}
		next.lsid = l.cfg.next_lsid++;
	}
	live_finish(&next, &rs, limiter_live(&l), 0);

	if (limiter_publish(&l, &next)) {
		log_err("cannot change settings on '%s': %m", ifname);
		goto out;
	}
	live_describe(&next, l.cfg.fixed.bytes, desc, sizeof(desc));
	printf("xdp-rl: %s: %s\n", ifname, desc);
	if (restart)
		printf("xdp-rl: %s: every window of these limits restarted (%s)\n", ifname,
		       restart);
	say_exhausted(&l, ifname);
	r = EXIT_DONE;
out:
	limiter_close(&l);
	return r;
}
