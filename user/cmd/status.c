// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd/status.c - `xdp-rl status`: the limiters in this namespace and their settings. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>

#include "bpffs.h"
#include "capture.h"
#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "dispatch.h"
#include "inventory.h"
#include "json.h"
#include "limiter.h"
#include "lists.h"
#include "live.h"
#include "log.h"
#include "settings.h"
#include "sources.h"
#include "output.h"

enum { OPT_JSON = 256, OPT_ALL };

struct link_state {
	int attached;
	__u32 link_id, prog_id;
};

static void link_state(const struct limiter *l, struct link_state *ls)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info), on;

	memset(&info, 0, sizeof(info));
	memset(ls, 0, sizeof(*ls));
	if (l->cfg.fixed.attach == XDP_RL_ATTACH_SHARED) {
		if (!limiter_attach_state(l->dir, &ls->prog_id, &on))
			ls->attached = on != 0;
		return;
	}
	if (bpf_obj_get_info_by_fd(l->fd[PIN_LINK], &info, &len))
		return;
	ls->link_id = info.id;
	ls->prog_id = info.prog_id;
	ls->attached = info.xdp.ifindex != 0;
}

/*
 * The XDP programs on the interface: the dispatcher's, in the order they
 * run (xdp-rl's among them), or the one attached alone. Text: a line each,
 * only when xdp-rl shares the interface; JSON: "attach" and "programs".
 */
static void status_programs(const struct limiter *l, struct json *j)
{
	const struct xdp_rl_fixed *f = &l->cfg.fixed;
	struct dispatch_prog p[16];
	char chain[64];
	int n, i, shared;

	n = dispatch_list(l->ifindex, p, 16, &shared);
	if (n > 16)
		n = 16;
	if (j) {
		json_str(j, "attach", f->attach == XDP_RL_ATTACH_SHARED ? "shared" : "alone");
		if (f->attach == XDP_RL_ATTACH_SHARED) {
			json_u64(j, "priority", f->priority);
			json_str(j, "pass_to", f->pass_next ? "next" : "stack");
		}
		json_arr(j, "programs");
		for (i = 0; i < n; i++) {
			json_obj(j, NULL);
			json_str(j, "name", p[i].name);
			json_u64(j, "id", p[i].id);
			if (shared) {
				json_u64(j, "priority", p[i].priority);
				dispatch_chain_str(p[i].chain, chain, sizeof(chain));
				json_str(j, "chain_call", chain);
			}
			json_end(j);
		}
		json_end(j);
		return;
	}
	if (f->attach != XDP_RL_ATTACH_SHARED)
		return;
	printf("  shares   priority %u, a packet it passes goes to %s; the dispatcher runs:\n",
	       f->priority, f->pass_next ? "the next program" : "the stack");
	for (i = 0; i < n; i++) {
		dispatch_chain_str(p[i].chain, chain, sizeof(chain));
		printf("           %4u  %-16s prog %u, next after %s\n", p[i].priority, p[i].name,
		       p[i].id, chain);
	}
}

static void status_one(struct limiter *l, struct json *j)
{
	const struct xdp_rl_live *live = limiter_live(l);
	const struct xdp_rl_fixed *f = &l->cfg.fixed;
	const char *clock = live_clock_name(live);
	__s64 tai_now;
	int stale = live_tai_stale(live, &tai_now);
	__u64 n4, n6;
	struct link_state ls;
	struct xdp_rl_list_meta lm;
	struct xdp_rl_capture cap;
	char w[32], desc[256], sel[96];
	int capturing;

	link_state(l, &ls);
	/* A capture running (xdp-rl capture): a lease that ran out, or a dead pid, is none. */
	capturing = !capture_read(l, &cap) && capture_running(&cap);
	if (lists_meta(l, &lm))
		memset(&lm, 0, sizeof(lm));
	/*
	 * Detached: its interface is gone, and another may have its index
	 * now; it goes by the name it was loaded on (`unload NAME` takes it).
	 */
	if (!ls.attached)
		snprintf(l->ifname, sizeof(l->ifname), "%s", f->ifname);
	n4 = sources_open(l, PIN_SRC4);
	n6 = sources_open(l, PIN_SRC6);
	fmt_duration(live->layer[0].window_ns, w, sizeof(w));
	if (j) {
		json_obj(j, NULL);
		json_str(j, "interface", l->ifname);
		json_u64(j, "ifindex", l->ifindex);
		json_bool(j, "attached", ls.attached);
		json_str(j, "mode", word_name(mode_words, f->xdp_mode));
		json_u64(j, "link_id", ls.link_id);
		json_u64(j, "prog_id", ls.prog_id);
		status_programs(l, j);
		json_u64(j, "limit", live->layer[0].limit);
		json_str(j, "unit", limiter_unit(l));
		json_str(j, "window", w);
		json_u64(j, "window_ns", live->layer[0].window_ns);
		layers_json(j, live->layer, live->nlayers, NULL);
		json_str(j, "alignment", live->flags & XDP_RL_F_ALIGNED ? "aligned" : "per-key");
		json_str(j, "clock", clock);
		if (live->flags & XDP_RL_F_ALIGNED) {
			json_s64(j, "tai_to_unix_ns", live->tai_to_unix_ns);
			json_bool(j, "tai_offset_stale", stale);
		}
		select_json(j, "select", &live->select);
		json_str(j, "link_local", word_name(link_local_words, live->link_local));
		json_bool(j, "dry_run", live->flags & XDP_RL_F_DRY_RUN);
		/* --ban (null: off), and whether bans are looked at (one made may still hold). */
		if (live->ban_ns) {
			fmt_duration(live->ban_ns, w, sizeof(w));
			json_str(j, "ban", w);
		} else {
			json_null(j, "ban");
		}
		json_u64(j, "ban_ns", live->ban_ns);
		json_bool(j, "bans_checked", live->flags & XDP_RL_F_BANS);
		/* A fleet agent shares the windows (xdp-rl fleet; stats shows the agent). */
		json_bool(j, "fleet", live->flags & XDP_RL_F_FLEET);
		/* What each budget is for (--key): src, dst, src,dport or dst,dport. */
		json_str(j, "key", word_name(key_words, f->key));
		json_u64(j, "v4_prefix", f->v4_prefix);
		json_u64(j, "v6_prefix", f->v6_prefix);
		json_u64(j, "max_sources", f->max_sources);
		json_u64(j, "sources_capacity", sources_capacity(f));
		json_str(j, "table", word_name(table_words, f->table));
		json_u64(j, "max_layers", f->max_layers);
		json_u64(j, "rules", live->nrules4 + live->nrules6);
		json_obj(j, "list_prefixes");
		json_u64(j, "allow", lm.prefixes[LIST_ALLOW][0] + lm.prefixes[LIST_ALLOW][1]);
		json_u64(j, "deny", lm.prefixes[LIST_DENY][0] + lm.prefixes[LIST_DENY][1]);
		json_end(j);
		if (live->new_sources.limit) {
			fmt_duration(live->new_sources.window_ns, w, sizeof(w));
			json_obj(j, "new_sources");
			json_u64(j, "limit", live->new_sources.limit);
			json_str(j, "window", w);
			json_u64(j, "window_ns", live->new_sources.window_ns);
			json_str(j, "on_table_full", word_name(on_full_words, live->on_full));
			json_end(j);
		} else {
			json_null(j, "new_sources");
		}
		if (capturing) {
			capture_describe(&cap, desc, sizeof(desc));
			json_obj(j, "capture");
			json_u64(j, "pid", cap.pid);
			json_str(j, "takes", desc);
			json_end(j);
		} else {
			json_null(j, "capture");
		}
		json_u64(j, "active_sources_v4", n4);
		json_u64(j, "active_sources_v6", n6);
		json_u64(j, "loaded_at", f->loaded_at_unix);
		json_end(j);
		return;
	}
	live_describe(live, f->bytes, desc, sizeof(desc));
	if (!ls.attached && f->attach == XDP_RL_ATTACH_SHARED)
		printf("%s: DETACHED: the interface is gone, or another tool took xdp-rl off its "
		       "dispatcher (remove it with 'xdp-rl unload %s')\n",
		       l->ifname, l->ifname);
	else if (!ls.attached)
		printf("%s: DETACHED: the interface is gone (remove it with 'xdp-rl unload %s')\n",
		       l->ifname, l->ifname);
	else if (f->attach == XDP_RL_ATTACH_SHARED)
		printf("%s: attached, %s mode, shared through libxdp's dispatcher, prog %u\n",
		       l->ifname, word_name(mode_words, f->xdp_mode), ls.prog_id);
	else
		printf("%s: attached, %s mode, link %u, prog %u\n", l->ifname,
		       word_name(mode_words, f->xdp_mode), ls.link_id, ls.prog_id);
	status_programs(l, NULL);
	printf("  limit    %s\n", desc);
	printf("  clock    %s\n", clock);
	if (stale)
		printf("  warning  the kernel's TAI offset is %+lld s, not %+lld s as when these "
		       "settings were published: aligned windows are off Unix time until the next "
		       "change ('xdp-rl set %s --aligned'; a fleet agent does it each round)\n",
		       (long long)(tai_now / 1000000000),
		       (long long)(live->tai_to_unix_ns / 1000000000), l->ifname);
	fmt_select(&live->select, sel, sizeof(sel));
	printf("  selects  %s packets%s; link-local sources %s\n", sel,
	       xdp_rl_select_all(&live->select) ? "" : " (the others pass untouched)",
	       live->link_local == XDP_RL_LL_EXEMPT ? "exempt" :
	       live->link_local == XDP_RL_LL_PREFIX ? "keyed by prefix" :
						      "keyed per address");
	/* --key: whose address, and the destination port or not. */
	printf("  keys     %s address IPv4 /%u, IPv6 /%u%s (--key %s);",
	       xdp_rl_key_dst(f->key) ? "destination" : "source", f->v4_prefix, f->v6_prefix,
	       xdp_rl_key_port(f->key) ? ", with the destination port" : "",
	       word_name(key_words, f->key));
	if (f->table == XDP_RL_TABLE_LRU)
		printf(" table lru: the kernel's LRU hash, %llu sources per family, room for %u "
		       "layer%s\n",
		       (unsigned long long)f->max_sources, f->max_layers,
		       f->max_layers == 1 ? "" : "s");
	else
		printf(" table buckets: sized for %llu sources per family, holds at most %llu (its "
		       "slots), room for %u layer%s\n",
		       (unsigned long long)f->max_sources, (unsigned long long)sources_capacity(f),
		       f->max_layers, f->max_layers == 1 ? "" : "s");
	printf("  lists    allow %llu, deny %llu prefixes (see 'xdp-rl lists %s')\n",
	       (unsigned long long)(lm.prefixes[LIST_ALLOW][0] + lm.prefixes[LIST_ALLOW][1]),
	       (unsigned long long)(lm.prefixes[LIST_DENY][0] + lm.prefixes[LIST_DENY][1]),
	       l->ifname);
	printf("  rules    %u (see 'xdp-rl rule list %s')\n", live->nrules4 + live->nrules6,
	       l->ifname);
	printf("  sources  %llu IPv4, %llu IPv6 with an open window (the table %.0f%%, %.0f%% "
	       "full)\n",
	       (unsigned long long)n4, (unsigned long long)n6, 100.0 * n4 / sources_capacity(f),
	       100.0 * n6 / sources_capacity(f));
	if (live->flags & XDP_RL_F_FLEET)
		printf("  fleet    windows shared through Redis (see 'xdp-rl stats %s')\n",
		       l->ifname);
	if (capturing) {
		capture_describe(&cap, desc, sizeof(desc));
		printf("  capture  running (pid %llu): %s\n", (unsigned long long)cap.pid, desc);
	}
}

/* ---- status --all -------------------------------------------------------------- */

/*
 * `status --all`: every limiter in every namespace's folder, those whose
 * namespace or interface is gone included, with the memory their maps hold.
 */
static int status_all(int as_json)
{
	char name[IF_NAMESIZE + 8], where[NAME_MAX + 64], mem[32];
	struct pinned_list l;
	int removable = 0;
	struct json j;
	size_t i;

	if (pinned_all(&l))
		return EXIT_FAIL;
	if (as_json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_arr(&j, "limiters");
	}
	for (i = 0; i < l.n; i++) {
		const struct pinned *p = &l.v[i];

		pinned_ifname(p, name, sizeof(name));
		pinned_where(p, where, sizeof(where));
		fmt_bytes(p->memory, mem, sizeof(mem));
		removable += !!pinned_gone(p);
		if (as_json) {
			json_obj(&j, NULL);
			json_str(&j, "interface", name);
			json_u64(&j, "ifindex", p->ifindex);
			json_u64(&j, "netns", p->netns);
			if (p->ns_name[0])
				json_str(&j, "netns_name", p->ns_name);
			else
				json_null(&j, "netns_name");
			json_str(&j, "netns_state", ns_state_name(p->ns));
			json_bool(&j, "attached", p->attached);
			json_u64(&j, "link_id", p->link_id);
			json_u64(&j, "prog_id", p->prog_id);
			json_u64(&j, "memory_bytes", p->memory);
			json_u64(&j, "maps", p->maps);
			json_u64(&j, "loaded_at", p->has_config ? p->cfg.fixed.loaded_at_unix : 0);
			json_str(&j, "folder", p->dir);
			json_end(&j);
			continue;
		}
		if (i)
			putchar('\n');
		printf("%s (ifindex %u), %s: ", name, p->ifindex, where);
		if (p->attached)
			printf("attached, link %u, prog %u\n", p->link_id, p->prog_id);
		else
			printf("DETACHED: %s (remove it with 'xdp-rl gc')\n", pinned_gone(p));
		printf("  memory   %s in %d maps\n", mem, p->maps);
		printf("  folder   %s\n", p->dir);
	}
	if (as_json) {
		json_end(&j);
		json_end(&j);
		json_finish(&j);
	} else if (!l.n) {
		printf("no xdp-rl limiter on this host (see 'xdp-rl load --help')\n");
	}
	free(l.v);
	return EXIT_DONE;
}

static const char *const status_forms[] = { "[IFACE] [--json]", "--all [--json]", NULL };

static const struct opt_spec status_opts[] = {
	{ "json", OPT_JSON, NULL, "one JSON document on stdout" },
	{ "all", OPT_ALL, NULL,
	  "every limiter in every network namespace's folder, those whose\n"
	  "namespace or interface is gone included ('xdp-rl gc' removes\n"
	  "them), with the memory their maps hold" },
	{ NULL },
};

static int cmd_status(int argc, char **argv);

const struct cmd_spec cmd_status_spec = {
	.name = "status",
	.run = cmd_status,
	.forms = status_forms,
	.about = "Show the limiters in this network namespace (or on IFACE) and their settings;\n"
		 "with --all, every limiter on the host and the memory it holds.\n",
	.opts = status_opts,
};

static int cmd_status(int argc, char **argv)
{
	char ns[PATH_MAX], name[IF_NAMESIZE];
	int opt, as_json = 0, all = 0, found = 0, ret = EXIT_DONE;
	const char *ifname = NULL;
	struct limiter l;
	struct dirent *d;
	struct json j;
	DIR *dir;

	while ((opt = cmd_getopt(argc, argv, &cmd_status_spec)) != -1) {
		if (opt == OPT_JSON)
			as_json = 1;
		else if (opt == OPT_ALL)
			all = 1;
		else
			return EXIT_USAGE;
	}
	if (cmd_no_more(argc, argv, "status", all ? 0 : 1))
		return EXIT_USAGE;
	/* Other namespaces are entered to tell them apart (inventory.h). */
	if (all)
		return cmd_prepare_read(NEED_BPF | NEED_SYS_ADMIN, "cannot show status") ?
			       EXIT_FAIL :
			       status_all(as_json);
	if (argc - optind == 1)
		ifname = argv[optind];
	if (cmd_prepare_read(NEED_BPF, "cannot show status"))
		return EXIT_FAIL;

	if (ifname) {
		if (limiter_open(ifname, &l, "cannot show status of"))
			return EXIT_FAIL;
		if (as_json) {
			json_begin(&j, stdout);
			json_obj(&j, NULL);
			json_arr(&j, "limiters");
		}
		status_one(&l, as_json ? &j : NULL);
		limiter_close(&l);
		goto done;
	}

	/* Nothing pinned yet is "no limiter"; a folder we cannot read is an error. */
	dir = NULL;
	if (state_dir(ns, sizeof(ns), 0)) {
		if (errno != ENOENT)
			return EXIT_FAIL;
	} else if (!(dir = opendir(ns)) && errno != ENOENT) {
		log_err("cannot list the limiters in %s: %m (run as root)", ns);
		return EXIT_FAIL;
	}
	if (as_json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_arr(&j, "limiters");
	}
	while (dir && (d = readdir(dir))) {
		unsigned int ifindex = strtoul(d->d_name, NULL, 10);

		if (!ifindex || !limiter_here(ifindex))
			continue;
		if (!if_indextoname(ifindex, name))
			snprintf(name, sizeof(name), "if%u", ifindex);
		if (limiter_open_index(ifindex, name, &l, "cannot show status of")) {
			ret = EXIT_FAIL;
			continue;
		}
		if (found++ && !as_json)
			putchar('\n');
		status_one(&l, as_json ? &j : NULL);
		limiter_close(&l);
	}
	if (dir)
		closedir(dir);
	if (!found && !as_json)
		printf("no xdp-rl limiter in this network namespace (see 'xdp-rl load --help')\n");
done:
	if (as_json) {
		json_end(&j);
		json_end(&j);
		json_finish(&j);
	}
	return ret;
}
