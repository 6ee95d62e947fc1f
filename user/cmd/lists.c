// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd/lists.c - `xdp-rl lists`: show or replace the allow and deny lists (lists.h). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "json.h"
#include "limiter.h"
#include "lists.h"
#include "lock.h"
#include "log.h"
#include "stats.h"

enum { OPT_ALLOW = 256, OPT_DENY, OPT_JSON };

static const char *const lists_forms[] = { "IFACE [--json]",
					   "IFACE [--allow FILE|none] [--deny FILE|none]", NULL };

static const struct opt_spec lists_opts[] = {
	{ "allow", OPT_ALLOW, "FILE",
	  "put FILE's prefixes on the allow list in place of those\non it ('none': empty it)" },
	{ "deny", OPT_DENY, "FILE", "the same for the deny list" },
	{ "json", OPT_JSON, NULL, "one JSON object on stdout" },
	{ NULL },
};

static int cmd_lists(int argc, char **argv);

const struct cmd_spec cmd_lists_spec = {
	.name = "lists",
	.run = cmd_lists,
	.forms = lists_forms,
	.about = "Show the allow and deny lists of the limiter on IFACE, or replace them: block\n"
		 "lists of up to 16777216 prefixes (rules stop at 16384). A listed prefix\n"
		 "passes (allow) or drops (deny) its sources' packets, whatever the selectors,\n"
		 "unless a rule of a longer prefix, or the same, judges them. A replacement\n"
		 "takes effect at once for every packet: no packet sees half a list.\n",
	.opts = lists_opts,
	.notes = "FILE holds a prefix or an address a line (netset, DROP and address lists);\n"
		 "'#' and ';' start a comment. A prefix on both lists is refused. In a config\n"
		 "file: 'allow-list FILE' and 'deny-list FILE'.\n",
};

static void say_list(const char *ifname, int kind, const struct xdp_rl_list_meta *m,
		     const struct xdp_rl_list_meta *was)
{
	__u64 n4 = m->prefixes[kind][0], n6 = m->prefixes[kind][1];

	printf("xdp-rl: %s: %s list: %llu prefix%s (%llu IPv4, %llu IPv6)", ifname,
	       list_names[kind], (unsigned long long)(n4 + n6), n4 + n6 == 1 ? "" : "es",
	       (unsigned long long)n4, (unsigned long long)n6);
	if (*m->path[kind])
		printf(" from %s", m->path[kind]);
	if (was)
		printf(" (was %llu)",
		       (unsigned long long)(was->prefixes[kind][0] + was->prefixes[kind][1]));
	putchar('\n');
}

static int show(const struct limiter *l, int as_json)
{
	struct xdp_rl_rule_hits h[LIST_KINDS];
	struct xdp_rl_list_meta m;
	char when[64] = "never";
	struct json j;
	struct tm tm;
	time_t t;
	int kind;

	if (lists_meta(l, &m)) {
		log_err("cannot read the lists of '%s': %m", l->ifname);
		return EXIT_FAIL;
	}
	for (kind = 0; kind < LIST_KINDS; kind++)
		if (rule_hits_read(l,
				   kind == LIST_DENY ? XDP_RL_LIST_DENY_ID : XDP_RL_LIST_ALLOW_ID,
				   &h[kind]))
			memset(&h[kind], 0, sizeof(h[kind]));
	if (as_json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_str(&j, "interface", l->ifname);
		if (m.replaced_unix)
			json_u64(&j, "replaced_unix", m.replaced_unix);
		else
			json_null(&j, "replaced_unix");
		json_arr(&j, "lists");
		for (kind = 0; kind < LIST_KINDS; kind++) {
			json_obj(&j, NULL);
			json_str(&j, "list", list_names[kind]);
			json_u64(&j, "prefixes_v4", m.prefixes[kind][0]);
			json_u64(&j, "prefixes_v6", m.prefixes[kind][1]);
			if (*m.path[kind])
				json_str(&j, "path", m.path[kind]);
			else
				json_null(&j, "path");
			json_u64(&j, "matched_packets", h[kind].packets);
			json_u64(&j, "dropped_packets", h[kind].dropped);
			json_u64(&j, "would_drop_packets", h[kind].would_drop);
			json_end(&j);
		}
		json_end(&j);
		json_end(&j);
		return json_finish(&j) ? EXIT_FAIL : EXIT_DONE;
	}
	if (m.replaced_unix) {
		t = m.replaced_unix;
		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	}
	for (kind = 0; kind < LIST_KINDS; kind++) {
		__u64 n4 = m.prefixes[kind][0], n6 = m.prefixes[kind][1];

		printf("%s list: %llu prefix%s (%llu IPv4, %llu IPv6)%s%s; matched %llu packets",
		       list_names[kind], (unsigned long long)(n4 + n6), n4 + n6 == 1 ? "" : "es",
		       (unsigned long long)n4, (unsigned long long)n6,
		       *m.path[kind] ? " from " : "", m.path[kind],
		       (unsigned long long)h[kind].packets);
		if (kind == LIST_DENY)
			printf(", dropped %llu", (unsigned long long)h[kind].dropped);
		putchar('\n');
	}
	printf("replaced %s\n", when);
	return EXIT_DONE;
}

static int cmd_lists(int argc, char **argv)
{
	const char *ifname, *file[LIST_KINDS] = { NULL, NULL };
	struct prefix_list pl[LIST_KINDS];
	struct xdp_rl_list_meta was, now;
	int opt, as_json = 0, r = EXIT_FAIL, kind;
	struct limiter l;
	char why[512];

	while ((opt = cmd_getopt(argc, argv, &cmd_lists_spec)) != -1) {
		if (opt == OPT_ALLOW || opt == OPT_DENY)
			file[opt == OPT_DENY] = optarg;
		else if (opt == OPT_JSON)
			as_json = 1;
		else
			return EXIT_USAGE;
	}
	if (cmd_positional(argc, argv, "lists", "IFACE", 0, &ifname) ||
	    cmd_no_more(argc, argv, "lists", 1))
		return EXIT_USAGE;
	if (as_json && (file[0] || file[1]))
		return usage_err("lists", "lists: --json shows the lists; it goes without --allow "
					  "and --deny");
	for (kind = 0; kind < LIST_KINDS; kind++)
		if (file[kind] && !*file[kind])
			return usage_err("lists", "lists: empty --%s (give a FILE, or 'none')",
					 list_names[kind]);
	if (!file[0] && !file[1]) {
		if (cmd_prepare_read(NEED_BPF, "cannot show the lists") ||
		    limiter_open(ifname, &l, "cannot show the lists of"))
			return EXIT_FAIL;
		r = show(&l, as_json);
		limiter_close(&l);
		return r;
	}

	/* The files first: a bad one changes nothing. */
	memset(pl, 0, sizeof(pl));
	for (kind = 0; kind < LIST_KINDS; kind++) {
		if (!file[kind] || !strcmp(file[kind], "none"))
			continue;
		if (list_read_file(file[kind], &pl[kind], why, sizeof(why))) {
			usage_err("lists", "lists: --%s: %s; no list was changed", list_names[kind],
				  why);
			list_free(&pl[0]);
			return EXIT_USAGE;
		}
	}
	if (cmd_prepare(NEED_BPF | NEED_NET_ADMIN, "cannot change the lists") || lock_take(0) < 0 ||
	    limiter_open(ifname, &l, "cannot change the lists of"))
		goto out;
	/* A list not named is kept as it is. */
	for (kind = 0; kind < LIST_KINDS; kind++) {
		if (file[kind])
			continue;
		if (lists_get(&l, kind, &pl[kind])) {
			log_err("cannot read the %s list of '%s': %m", list_names[kind], ifname);
			goto close;
		}
	}
	if (lists_meta(&l, &was)) {
		log_err("cannot change the lists of '%s': cannot read the lists in force: %m",
			ifname);
		goto close;
	}
	if (lists_replace(&l, &pl[0], &pl[1]))
		goto close;
	if (lists_meta(&l, &now))
		now = was;
	for (kind = 0; kind < LIST_KINDS; kind++)
		say_list(ifname, kind, &now, file[kind] ? &was : NULL);
	r = EXIT_DONE;
close:
	limiter_close(&l);
out:
	list_free(&pl[0]);
	list_free(&pl[1]);
	return r;
}
