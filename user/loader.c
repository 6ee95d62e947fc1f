// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * loader.c - a limiter loaded, or replaced, as settings say (see loader.h),
 * by the protocol of limiter.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpffs.h"
#include "dispatch.h"
#include "inventory.h"
#include "limiter.h"
#include "lists.h"
#include "live.h"
#include "loader.h"
#include "log.h"
#include "rules.h"
#include "skel.h"
#include "xdp_probe.h"
#include "xdp_rl.skel.h"

/*
 * Why an attach failed, in the kernel's words (its extended ack, which the
 * bpf_link attach does not return: xdp_probe.h asks again through netlink,
 * as `ip link` would), and what to do about it.
 */
static void attach_error(const char *ifname, unsigned int ifindex, int prog_fd, __u32 mode, int e)
{
	char why[256] = "", said[300] = "";
	const char *hint = "";

	xdp_attach_reason(ifindex, prog_fd, mode, why, sizeof(why));
	if (*why)
		snprintf(said, sizeof(said), ": the kernel says \"%s\"", why);
	if (strstr(why, "MTU") || (e == ERANGE && mode == XDP_FLAGS_DRV_MODE))
		hint = " (native XDP needs a smaller MTU on this device: set it, e.g. 'ip link set "
		       "DEV mtu 1500' on both ends of a veth, or use --mode generic)";
	else if (strstr(why, "upper"))
		hint = " (a device above it, such as its bridge or bond, has an XDP program: see "
		       "'ip -d link show' for its master, and detach the program there or load "
		       "xdp-rl on the upper device instead)";
	else if (e == EOPNOTSUPP && mode == XDP_FLAGS_DRV_MODE)
		hint = " (the driver has no native XDP: try --mode generic)";
	else if (e == EBUSY || e == EEXIST)
		hint = " (another XDP program is attached: see 'ip link show' and detach it first)";
	log_err("cannot attach to '%s': %s%s%s", ifname, strerror(e), said, hint);
}

/*
 * --attach settled: a replacement attaches as the limiter it replaces
 * (changing that needs a detach); auto is shared where the kernel runs
 * libxdp's dispatcher, else alone (res->alone_why says why).
 */
static int attach_settle(struct settings *s, const struct limiter *old, const char *ifname,
			 struct load_result *res)
{
	static const char *const how[] = { "", "shared (through libxdp's dispatcher)", "alone" };
	__u32 was;
	char why[200];
	int e;

	if (old) {
		was = old->cfg.fixed.attach == XDP_RL_ATTACH_SHARED ? XDP_RL_ATTACH_SHARED :
								      XDP_RL_ATTACH_ALONE;
		if (s->fixed.attach == XDP_RL_ATTACH_AUTO)
			s->fixed.attach = was;
		if (s->fixed.attach != was) {
			log_err("cannot replace the limiter on '%s': it runs %s, and changing that "
				"needs a detach (run 'xdp-rl unload %s' first)",
				ifname, how[was], ifname);
			return -1;
		}
		return 0;
	}
	if (s->fixed.attach == XDP_RL_ATTACH_ALONE)
		return 0;
	e = dispatch_probe(why, sizeof(why));
	if (!e) {
		s->fixed.attach = XDP_RL_ATTACH_SHARED;
		return 0;
	}
	if (s->fixed.attach == XDP_RL_ATTACH_SHARED) {
		log_err("cannot load on '%s' with --attach shared: libxdp's dispatcher cannot run "
			"on this kernel: %s (load with --attach alone)",
			ifname, why);
		return -1;
	}
	s->fixed.attach = XDP_RL_ATTACH_ALONE;
	snprintf(res->alone_why, sizeof(res->alone_why), "%s", why);
	return 0;
}

/* A shared program's generation: new, never 0, never the old one's. */
static __u64 new_gen(const struct limiter *old)
{
	__u64 gen;

	do {
		if (getrandom(&gen, sizeof(gen), 0) != sizeof(gen))
			gen = (__u64)time(NULL) << 20 ^ (__u64)getpid();
	} while (!gen || (old && gen == old->cfg.fixed.gen));
	return gen;
}

/*
 * Shared: the program, loaded by libxdp as an extension of the dispatcher
 * on the interface, from a second copy of the object that takes every map
 * of @cur and the settings fixed at load of @skel, with its generation.
 * It passes packets on untouched until stage_handover hands them to it
 * (the commit). Before that, a failure takes it off again.
 */
static int attach_shared(struct stage *st, const struct xdp_rl *skel, const struct limiter *cur,
			 const struct settings *s, const struct limiter *old, const char *ifname)
{
	struct dispatch_attach a = {
		.prog = "xdp_rl",
		.ifindex = s->fixed.ifindex,
		.xdp_mode = s->fixed.xdp_mode,
		.priority = s->fixed.priority,
		.pass_next = (int)s->fixed.pass_next,
	};
	struct xdp_rl *ext = xdp_rl__open();
	struct bpf_program *p;
	char why[300];
	int id, fd, e, ret = -1;

	if (!ext) {
		log_err("cannot open the embedded XDP program: %m");
		return -1;
	}
	memcpy((void *)ext->rodata, skel->rodata, sizeof(*ext->rodata));
	ext->rodata->cfg_shared = 1;
	ext->rodata->cfg_gen = s->fixed.gen;
	bpf_object__for_each_program(p, ext->obj)
		bpf_program__set_autoload(p, p == ext->progs.xdp_rl);
	for (id = PIN_FIRST_MAP; id < PIN_MAX; id++) {
		if (bpf_map__reuse_fd(skel_map(ext, id - PIN_FIRST_MAP), cur->fd[id])) {
			log_err("cannot prepare the maps: %m");
			goto out;
		}
	}
	/* What a load killed before its pin left in the dispatcher goes first. */
	limiter_orphans_remove(s->fixed.ifindex, old ? obj_id(old->fd[PIN_PROG]) : 0, 0);
	a.obj = ext->obj;
	fd = dispatch_attach(&a, why, sizeof(why));
	if (fd < 0) {
		e = errno;
		log_err("cannot attach to '%s' through libxdp's dispatcher: %s%s%s%s%s", ifname,
			strerror(e), *why ? ": libxdp says \"" : "", why, *why ? "\"" : "",
			e == EBUSY || e == EEXIST || strstr(why, "not using a dispatcher") ?
				" (another XDP program is attached alone, not through libxdp: see "
				"'xdp-loader status', and detach it or load it with xdp-loader)" :
				"");
		goto out;
	}
	ret = stage_handover(st, fd, cur->fd[PIN_HANDOVER], s->fixed.gen);
	if (ret)
		dispatch_detach(s->fixed.ifindex, obj_id(fd));
out:
	/* The program stays: the dispatcher's link holds it, and its pin. */
	xdp_rl__destroy(ext);
	return ret;
}

/* Whether the old limiter's windows mean the same under the new settings. */
static int same_tables(const struct xdp_rl_fixed *o, const struct xdp_rl_fixed *f)
{
	return o->bytes == f->bytes && o->v4_prefix == f->v4_prefix &&
	       o->v6_prefix == f->v6_prefix && o->max_sources == f->max_sources &&
	       o->max_layers == f->max_layers && o->table == f->table && o->key == f->key;
}

/*
 * The maps of an old limiter that a replacement keeps: all but the source
 * tables when their layout changes, and but the rules when --rules brings
 * new ones. New rules go into maps of their own, which the old program never
 * reads, so the old rules hold until the program swap puts the new ones in
 * force: no gap, and nothing to undo if the load fails before it.
 */
static int reuse_maps(struct xdp_rl *skel, const struct limiter *old, const struct xdp_rl_fixed *f,
		      int new_rules)
{
	int id, err = 0, tables = same_tables(&old->cfg.fixed, f);

	for (id = PIN_FIRST_MAP; id < PIN_MAX; id++) {
		if (pin_kinds[id] == XDP_RL_NEW ||
		    (!tables && pin_kinds[id] == XDP_RL_KEEP_TABLE) ||
		    (new_rules && pin_kinds[id] == XDP_RL_KEEP_RULES))
			continue;
		err |= bpf_map__reuse_fd(skel_map(skel, id - PIN_FIRST_MAP), old->fd[id]);
	}
	return err;
}

/* A new hash key for the tables, so that nobody outside can aim at a bucket. */
static __u64 new_seed(void)
{
	__u64 seed;
	struct timespec ts;

	if (getrandom(&seed, sizeof(seed), 0) == sizeof(seed))
		return seed;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return xdp_rl_mix((__u64)ts.tv_nsec ^ ((__u64)getpid() << 32));
}

/* Rules from --rules, into the new tries of @fd. */
static int insert_rules(const int *fd, struct settings *s, __u32 *next_lsid, const char *ifname)
{
	static rule_ids used;
	char desc[256];
	size_t i;

	rule_ids_used(fd, used);
	for (i = 0; i < s->nrules; i++) {
		s->rules[i].rule.lsid = (*next_lsid)++;
		if (rule_insert(fd, &s->rules[i], used, NULL)) {
			rule_describe(&s->rules[i], desc, sizeof(desc));
			log_err("cannot load on '%s': cannot add rule %s: %m", ifname, desc);
			return -1;
		}
	}
	return 0;
}

/*
 * A replacement that keeps the old rules must keep room for their layers:
 * a per-source rule with more layers than a source has room for would be
 * cut to its first layers without a word.
 */
static int keep_rules_room(const struct limiter *old, struct settings *s, const char *ifname)
{
	unsigned int kept = rules_max_layers_fd(old->fd);

	if (kept <= s->fixed.max_layers)
		return 0;
	if (s->max_layers) {
		log_err("cannot replace the limiter on '%s': a rule it keeps limits each source "
			"with %u layers, more than --max-layers %u (give --max-layers %u, or "
			"new rules with --rules FILE)",
			ifname, kept, s->max_layers, kept);
		return -1;
	}
	s->fixed.max_layers = kept;
	return 0;
}

/*
 * Load, or replace (--force), as limiter.c's protocol says: the new state is
 * built aside and switched in by one step, the attach or the program swap.
 * A replacement never writes what the old program reads: it gets a config
 * of its own, and maps of its own for what changes (the tables when their
 * layout does, the rules with --rules), so the old limiter runs unchanged
 * until the swap, and a failure before it leaves nothing to undo.
 */
/*
 * After a failed load: if the kernel could not create one of the maps, say
 * which, how big it was asked to be, and the options that size it (a
 * memory cgroup's limit, say, refuses a large --max-sources). 1 if said.
 */
static int map_failed(struct xdp_rl *skel, const struct xdp_rl_fixed *f, const char *ifname)
{
	static const char *const per_source[] = { "src4",   "src6", "agg4",    "agg6", "drops",
						  "remote", "hot",  "hot_key", "lru",  "bans" };
	const char *name = log_libbpf_failed_map();
	int e = errno, cpus = libbpf_num_possible_cpus(), sized = 0;
	struct bpf_map *m;
	char size[32];
	__u64 bytes;
	size_t i;

	if (!name || !(m = bpf_object__find_map_by_name(skel->obj, name)))
		return 0;
	bytes = (__u64)(bpf_map__key_size(m) + bpf_map__value_size(m)) * bpf_map__max_entries(m);
	if (bpf_map__type(m) == BPF_MAP_TYPE_PERCPU_ARRAY ||
	    bpf_map__type(m) == BPF_MAP_TYPE_PERCPU_HASH ||
	    bpf_map__type(m) == BPF_MAP_TYPE_LRU_PERCPU_HASH)
		bytes *= cpus > 0 ? cpus : 1;
	fmt_bytes(bytes, size, sizeof(size));
	for (i = 0; i < sizeof(per_source) / sizeof(per_source[0]); i++)
		sized |= !strcmp(name, per_source[i]);
	errno = e;
	if (sized)
		log_err("cannot load on '%s': the kernel cannot make map '%s' of %u entries, "
			"%s: %m (it is sized by --max-sources %llu and --max-layers %u: load "
			"with a smaller --max-sources, or give this memory cgroup more room)",
			ifname, name, bpf_map__max_entries(m), size,
			(unsigned long long)f->max_sources, f->max_layers);
	else
		log_err("cannot load on '%s': the kernel cannot make map '%s' of %u entries, "
			"%s: %m",
			ifname, name, bpf_map__max_entries(m), size);
	return 1;
}

int limiter_load(const char *ifname, struct settings *s, struct load_result *res)
{
	struct rules_summary rs;
	struct limiter old, cur;
	struct why why;
	struct xdp_rl *skel = NULL;
	struct stage st = {};
	int replacing = 0, shared = 0, ret = EXIT_FAIL, id, e;
	struct stat sb;
	__u32 zero = 0;

	memset(res, 0, sizeof(*res));
	for (id = 0; id < PIN_MAX; id++)
		old.fd[id] = cur.fd[id] = -1;
	if (iface_resolve(ifname, &s->fixed.ifindex, "cannot attach to"))
		return EXIT_FAIL;
	snprintf(s->fixed.ifname, sizeof(s->fixed.ifname), "%s", ifname);
	s->fixed.loaded_at_unix = time(NULL);
	s->fixed.netns_cookie = netns_cookie();
	if (state_dir(old.dir, sizeof(old.dir), 1))
		return EXIT_FAIL;
	snprintf(old.dir + strlen(old.dir), sizeof(old.dir) - strlen(old.dir), "/%u",
		 s->fixed.ifindex);
	if (!lstat(old.dir, &sb)) {
		if (!s->force) {
			log_err("cannot load on '%s': xdp-rl is already loaded there "
				"(use --force to replace it, or 'xdp-rl unload %s' first)",
				ifname, ifname);
			return EXIT_FAIL;
		}
		if (limiter_open_index(s->fixed.ifindex, ifname, &old, "cannot load on"))
			return EXIT_FAIL;
		if (old.cfg.fixed.xdp_mode != s->fixed.xdp_mode) {
			log_err("cannot replace the limiter on '%s': it runs in %s mode, and "
				"changing mode needs a detach (run 'xdp-rl unload %s' first)",
				ifname, word_name(mode_words, old.cfg.fixed.xdp_mode), ifname);
			goto out;
		}
		replacing = 1;
		if (!s->new_rules && keep_rules_room(&old, s, ifname))
			goto out;
	}
	if (attach_settle(s, replacing ? &old : NULL, ifname, res))
		goto out;
	if (s->fixed.attach == XDP_RL_ATTACH_SHARED)
		s->fixed.gen = new_gen(replacing ? &old : NULL);

	/* Tables kept by a replacement keep their hash key. */
	s->fixed.seed = replacing && same_tables(&old.cfg.fixed, &s->fixed) ? old.cfg.fixed.seed :
									      new_seed();
	skel = xdp_rl__open();
	if (!skel) {
		log_err("cannot open the embedded XDP program: %m");
		goto out;
	}
	/* Shared, the program libxdp loads is another copy's (attach_shared). */
	if (s->fixed.attach == XDP_RL_ATTACH_SHARED)
		bpf_program__set_autoload(skel->progs.xdp_rl, false);
	if (skel_prepare(skel, &s->fixed) ||
	    (replacing && reuse_maps(skel, &old, &s->fixed, s->new_rules))) {
		log_err("cannot prepare the maps: %m");
		goto out;
	}
	if (xdp_rl__load(skel)) {
		char floor[200];

		e = errno;
		if (map_failed(skel, &s->fixed, ifname))
			goto out;
		skel_floor(floor, sizeof(floor));
		errno = e;
		log_err("cannot load the XDP program into the kernel: %m%s%s", floor,
			*floor || log_level >= 2 ? "" :
						   " (run 'xdp-rl -vv load ...' for libbpf's log)");
		goto out;
	}
	for (id = PIN_FIRST_MAP; id < PIN_MAX; id++)
		cur.fd[id] = bpf_map__fd(skel_map(skel, id - PIN_FIRST_MAP));
	shared = s->fixed.attach == XDP_RL_ATTACH_SHARED;
	cur.fd[PIN_PROG] = shared ? -1 : bpf_program__fd(skel->progs.xdp_rl);
	cur.fd[PIN_ADMIN] = bpf_program__fd(skel->progs.admin);
	cur.fd[PIN_LINK] = replacing && !shared ? old.fd[PIN_LINK] : -1;

	/* A new config: zeros. */
	if (bpf_map_lookup_elem(cur.fd[PIN_CONFIG], &zero, &cur.cfg)) {
		log_err("cannot read the settings: %m");
		goto out;
	}
	cur.cfg.fixed = s->fixed;
	/*
	 * Limit sets (include/xdp_rl.h): numbered on from the old limiter's, so
	 * that rules it keeps keep theirs; the global limits keep their set
	 * while the tables and the number of layers stay, else start a new one.
	 */
	cur.cfg.next_lsid = replacing ? old.cfg.next_lsid : 1;
	if (replacing && same_tables(&old.cfg.fixed, &s->fixed) &&
	    layers_same_shape(limiter_live(&old)->layer, limiter_live(&old)->nlayers, s->live.layer,
			      s->live.nlayers))
		s->live.lsid = limiter_live(&old)->lsid;
	else
		s->live.lsid = cur.cfg.next_lsid++;
	if (!s->new_rules && replacing) {
		/* Keep the old limiter's rules: their maps were reused. */
		rules_count(cur.fd, &s->live.nrules4, &s->live.nrules6);
	} else {
		if (insert_rules(cur.fd, s, &cur.cfg.next_lsid, ifname))
			goto out;
		rules_count(cur.fd, &s->live.nrules4, &s->live.nrules6);
	}
	/* A fleet agent syncing the old limiter goes on with this one (cmd/fleet.c). */
	if (replacing)
		s->live.flags |= limiter_live(&old)->flags & XDP_RL_F_FLEET;
	/*
	 * Bans made in tables a replacement keeps may still hold: they are
	 * looked at, as before (live.h); new tables hold none.
	 */
	s->live.flags &= ~XDP_RL_F_BANS;
	s->live.max_ban_ns = 0;
	if (replacing && same_tables(&old.cfg.fixed, &s->fixed)) {
		s->live.flags |= limiter_live(&old)->flags & XDP_RL_F_BANS;
		s->live.max_ban_ns = limiter_live(&old)->max_ban_ns;
	}
	/* The lists a replacement keeps are looked up, as before. */
	s->live.flags &= ~(XDP_RL_F_LISTS4 | XDP_RL_F_LISTS6);
	if (replacing) {
		struct xdp_rl_list_meta lm;

		if (lists_meta(&cur, &lm)) {
			log_err("cannot read the lists of '%s': %m", ifname);
			goto out;
		}
		s->live.flags |= lists_flags(&lm);
	}
	skel_clock(skel, &s->live);
	rules_summarize(cur.fd, NULL, &rs);
	/* Rules a replacement keeps may limit by a rate: not under aligned windows (settings.h). */
	if (settings_check_rate(s, &s->live, &rs, &why)) {
		log_err("cannot replace the limiter on '%s': %s", ifname, why.text);
		goto out;
	}
	live_finish(&s->live, &rs, replacing ? limiter_live(&old) : NULL, s->new_rules);
	if (limiter_publish_new(&cur, &s->live)) {
		log_err("cannot write the settings: %m");
		goto out;
	}

	res->replaced = replacing;
	res->tables_changed = replacing && !same_tables(&old.cfg.fixed, &s->fixed);
	res->clocks_changed = replacing && !res->tables_changed &&
			      ((limiter_live(&old)->flags ^ s->live.flags) & XDP_RL_F_ALIGNED);
	if (stage_begin(&st, s->fixed.ifindex) || stage_pin(&st, cur.fd))
		goto out;
	if (shared) {
		if (attach_shared(&st, skel, &cur, s, replacing ? &old : NULL, ifname))
			goto out;
	} else if (replacing) {
		/* Swap the program under the existing link: no gap. */
		if (stage_swap(&st, old.fd[PIN_LINK], cur.fd[PIN_PROG])) {
			log_err("cannot replace the program on '%s': %m", ifname);
			goto out;
		}
	} else if (stage_attach(&st, cur.fd[PIN_PROG], s->fixed.ifindex, s->fixed.xdp_mode, &e)) {
		if (e)
			attach_error(ifname, s->fixed.ifindex, cur.fd[PIN_PROG], s->fixed.xdp_mode,
				     e);
		goto out;
	}
	/* Committed: from here on, the next command would finish it if this one could not. */
	res->unfinished = !!stage_finish(&st);
	ret = EXIT_DONE;
out:
	if (ret != EXIT_DONE)
		stage_abort(&st);
	limiter_close(&old);
	xdp_rl__destroy(skel);
	return ret;
}

void load_report(FILE *f, const char *ifname, const struct settings *s,
		 const struct load_result *res)
{
	__u32 n = s->live.nrules4 + s->live.nrules6;
	char desc[256];

	live_describe(&s->live, s->fixed.bytes, desc, sizeof(desc));
	fprintf(f, "xdp-rl: %s %s (%s mode%s): %s", res->replaced ? "replaced on" : "loaded on",
		ifname, word_name(mode_words, s->fixed.xdp_mode),
		s->fixed.attach == XDP_RL_ATTACH_SHARED ? ", shared" : "", desc);
	if (n)
		fprintf(f, ", %u rule%s", n, n == 1 ? "" : "s");
	if (res->tables_changed)
		fprintf(f, "; every window restarted (the source tables changed: --bytes, a "
			   "prefix, --key, --max-sources, --table or the layers per source)");
	else if (res->clocks_changed)
		fprintf(f, "; every window restarted (--per-key and --aligned keep time on "
			   "different clocks)");
	fputc('\n', f);
	if (s->fixed.attach == XDP_RL_ATTACH_SHARED)
		fprintf(f,
			"xdp-rl: runs in libxdp's dispatcher at priority %u; a packet it passes "
			"goes to %s\n",
			s->fixed.priority,
			s->fixed.pass_next ? "the next program" : "the stack, skipping the rest");
	else if (*res->alone_why)
		fprintf(f,
			"xdp-rl: attached alone: libxdp's dispatcher cannot run on this kernel (%s), "
			"so no other XDP program can share %s\n",
			res->alone_why, ifname);
}
