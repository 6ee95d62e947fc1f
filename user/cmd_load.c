// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd_load.c - the commands that change a limiter: load, set, unload. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "caps.h"
#include "commands.h"
#include "log.h"
#include "options.h"
#include "pin.h"
#include "rules.h"
#include "skel.h"
#include "xdp_rl.skel.h"

enum {
	OPT_LIMIT = 256, OPT_WINDOW, OPT_LAYER, OPT_PER_KEY, OPT_ALIGNED, OPT_BYTES,
	OPT_V4_PREFIX, OPT_V6_PREFIX, OPT_MAX_SOURCES, OPT_MAX_LAYERS, OPT_DRY_RUN,
	OPT_ENFORCE, OPT_MODE, OPT_FORCE, OPT_RULES, OPT_NEW_SOURCES, OPT_ON_FULL,
};

/* What `load` and `set` were asked for; has_* tell what was given. */
struct settings {
	struct xdp_rl_live live;
	struct xdp_rl_fixed fixed;
	struct xdp_rl_layer one;	/* --limit and --window */
	int has_limit, has_window, has_align, has_dry, has_new, has_on_full;
	unsigned int max_layers;	/* --max-layers, 0 if not given */
	const char *rules_path;
	struct rule_spec *rules;
	size_t nrules;
	int force;
};

static const char *const on_full_names[] = {
	[XDP_RL_FULL_PASS] = "pass",
	[XDP_RL_FULL_DROP] = "drop",
	[XDP_RL_FULL_AGGREGATE] = "aggregate",
};

/* One of a pair of opposite options (@on sets @flag): both is a usage error. */
static int either(struct settings *s, int *given, __u32 flag, int on, const char *cmd,
		  const char *pair)
{
	if (*given && !!(s->live.flags & flag) != on)
		return usage_err(cmd, "%s: %s exclude each other", cmd, pair);
	if (on)
		s->live.flags |= flag;
	*given = 1;
	return 0;
}

/*
 * Parse one option shared by load and set into @s. Returns 0 when handled,
 * 1 when @opt is not one of them, EXIT_USAGE after printing a usage error.
 */
static int parse_common(int opt, const char *arg, const char *cmd, struct settings *s)
{
	const char *why;
	unsigned int i;

	switch (opt) {
	case OPT_LIMIT:
		why = parse_u64(arg, 1, XDP_RL_LIMIT_MAX, &s->one.limit);
		if (why)
			return usage_err(cmd, "%s: invalid --limit '%s': %s", cmd, arg, why);
		s->has_limit = 1;
		return 0;
	case OPT_WINDOW:
		why = parse_duration(arg, WINDOW_MIN_NS, WINDOW_MAX_NS, &s->one.window_ns);
		if (why)
			return usage_err(cmd, "%s: invalid --window '%s': %s", cmd, arg, why);
		s->has_window = 1;
		return 0;
	case OPT_LAYER:
		if (s->live.nlayers == XDP_RL_MAX_LAYERS)
			return usage_err(cmd, "%s: at most %d --layer options", cmd,
					 XDP_RL_MAX_LAYERS);
		why = parse_layer(arg, &s->live.layer[s->live.nlayers]);
		if (why)
			return usage_err(cmd, "%s: invalid --layer '%s': %s", cmd, arg, why);
		s->live.nlayers++;
		return 0;
	case OPT_PER_KEY:
	case OPT_ALIGNED:
		return either(s, &s->has_align, XDP_RL_F_ALIGNED, opt == OPT_ALIGNED, cmd,
			      "--per-key and --aligned");
	case OPT_DRY_RUN:
	case OPT_ENFORCE:
		return either(s, &s->has_dry, XDP_RL_F_DRY_RUN, opt == OPT_DRY_RUN, cmd,
			      "--dry-run and --enforce");
	case OPT_NEW_SOURCES:
		s->has_new = 1;
		if (!strcmp(arg, "off")) {
			memset(&s->live.new_sources, 0, sizeof(s->live.new_sources));
			return 0;
		}
		why = parse_layer(arg, &s->live.new_sources);
		if (why)
			return usage_err(cmd, "%s: invalid --new-sources '%s': %s (or 'off')",
					 cmd, arg, why);
		return 0;
	case OPT_ON_FULL:
		for (i = 0; i < sizeof(on_full_names) / sizeof(on_full_names[0]); i++) {
			if (!strcmp(arg, on_full_names[i])) {
				s->live.on_full = i;
				s->has_on_full = 1;
				return 0;
			}
		}
		return usage_err(cmd, "%s: invalid --on-table-full '%s': use pass, drop or "
				 "aggregate", cmd, arg);
	}
	return 1;
}

/* The coarse clock's tick, as the kernel reports it. */
static __u64 coarse_tick_ns(void)
{
	struct timespec res;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res))
		return ~0ULL;
	return (__u64)res.tv_sec * 1000000000ULL + res.tv_nsec;
}

/* Whether windows counted under @a mean the same under @b. */
static int same_limits(const struct xdp_rl_live *a, const struct xdp_rl_live *b)
{
	return a->nlayers == b->nlayers &&
	       !memcmp(a->layer, b->layer, sizeof(a->layer[0]) * (a->nlayers < XDP_RL_MAX_LAYERS ?
								  a->nlayers : XDP_RL_MAX_LAYERS)) &&
	       (a->flags & XDP_RL_F_ALIGNED) == (b->flags & XDP_RL_F_ALIGNED);
}

/*
 * Settings derived from the others: per-key windows that are all at least
 * 250 ticks long (1s at HZ=250), the --new-sources window included, run on
 * the tick clock (jiffies, a load, where the precise clock is a helper call
 * of 40 ns here); a window then lasts its length to within two ticks (the
 * tick, and the base measured at load), 0.8% at most.
 * @prev is what runs now (NULL for a new limiter); @rules_changed says the
 * rules did too.
 */
void live_finish(struct xdp_rl_live *live, __u64 rules_min_window,
		 const struct xdp_rl_live *prev, int rules_changed)
{
	__u64 tick = coarse_tick_ns(), shortest = rules_min_window;
	__u32 i;

	for (i = 0; i < live->nlayers && i < XDP_RL_MAX_LAYERS; i++)
		if (!shortest || live->layer[i].window_ns < shortest)
			shortest = live->layer[i].window_ns;
	if (live->new_sources.limit && live->new_sources.window_ns < shortest)
		shortest = live->new_sources.window_ns;
	if (!prev || rules_changed || !same_limits(prev, live))
		live->limits_since_ns = window_clock_ns(live);
	else
		live->limits_since_ns = prev->limits_since_ns;
	live->flags &= ~XDP_RL_F_COARSE_CLOCK;
	if (!(live->flags & XDP_RL_F_ALIGNED) && tick != ~0ULL && tick &&
	    live->tick_ns == tick && shortest / 250 >= tick)
		live->flags |= XDP_RL_F_COARSE_CLOCK;
	live->tai_to_unix_ns = tai_to_unix_ns();
}

static const char *mode_name(__u32 mode)
{
	return mode == XDP_FLAGS_SKB_MODE ? "generic" : "native";
}

/* Why an attach failed, and what to do about it. */
static void attach_error(const char *ifname, __u32 mode, int e)
{
	const char *hint = "";

	if (e == EOPNOTSUPP && mode == XDP_FLAGS_DRV_MODE)
		hint = " (the driver has no native XDP: try --mode generic)";
	else if (e == EBUSY || e == EEXIST)
		hint = " (another XDP program is attached: see 'ip link show' and detach it first)";
	err("cannot attach to '%s': %s%s", ifname, strerror(e), hint);
}

static struct bpf_map *skel_map(struct xdp_rl *skel, int id)
{
	switch (id) {
	case PIN_CONFIG: return skel->maps.config;
	case PIN_STATS: return skel->maps.stats;
	case PIN_SRC4: return skel->maps.src4;
	case PIN_SRC6: return skel->maps.src6;
	case PIN_RULES4: return skel->maps.rules4;
	case PIN_RULES6: return skel->maps.rules6;
	case PIN_RULE_HITS: return skel->maps.rule_hits;
	case PIN_SHARED: return skel->maps.shared;
	case PIN_AGG4: return skel->maps.agg4;
	case PIN_AGG6: return skel->maps.agg6;
	case PIN_NEWSRC: return skel->maps.newsrc;
	case PIN_LOCKS: return skel->maps.locks;
	}
	return NULL;
}

/* Whether the old limiter's windows mean the same under the new settings. */
static int same_tables(const struct xdp_rl_fixed *o, const struct xdp_rl_fixed *f)
{
	return o->bytes == f->bytes && o->v4_prefix == f->v4_prefix &&
	       o->v6_prefix == f->v6_prefix && o->max_sources == f->max_sources &&
	       o->max_layers == f->max_layers;
}

static int is_table(int id)
{
	return id == PIN_SRC4 || id == PIN_SRC6 || id == PIN_AGG4 || id == PIN_AGG6;
}

static int is_rules(int id)
{
	return id == PIN_RULES4 || id == PIN_RULES6 || id == PIN_RULE_HITS || id == PIN_SHARED;
}

/*
 * The maps of an old limiter that a replacement keeps: all but the source
 * tables when their layout changes, and but the rules when --rules brings
 * new ones. New rules go into maps of their own, which the old program never
 * reads, so the old rules hold until the program swap puts the new ones in
 * force: no gap, and nothing to undo if the load fails before it.
 */
static int reuse_maps(struct xdp_rl *skel, const struct limiter *old,
		      const struct xdp_rl_fixed *f, int new_rules)
{
	int id, err = 0, tables = same_tables(&old->cfg.fixed, f);

	for (id = PIN_CONFIG; id < PIN_MAX; id++) {
		if ((!tables && is_table(id)) || (new_rules && is_rules(id)))
			continue;
		err |= bpf_map__reuse_fd(skel_map(skel, id), old->fd[id]);
	}
	return err;
}

/* Pin the maps that are not already pinned in @dir (all of them when new). */
static int pin_maps(struct xdp_rl *skel, const char *dir)
{
	char path[PATH_MAX];
	struct bpf_map *m;
	int id, fd;

	for (id = PIN_CONFIG; id < PIN_MAX; id++) {
		m = skel_map(skel, id);
		pin_path(path, sizeof(path), dir, pin_names[id]);
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			struct bpf_map_info a = {}, b = {};
			__u32 la = sizeof(a), lb = sizeof(b);

			bpf_obj_get_info_by_fd(fd, &a, &la);
			close(fd);
			bpf_obj_get_info_by_fd(bpf_map__fd(m), &b, &lb);
			if (a.id == b.id)
				continue;	/* reused */
			unlink(path);
		}
		if (bpf_obj_pin(bpf_map__fd(m), path)) {
			err("cannot pin %s: %m", path);
			return -1;
		}
	}
	return 0;
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
static int apply_rules(const int *fd, struct settings *s, const char *ifname)
{
	static rule_ids used;
	char desc[256];
	size_t i;

	rule_ids_used(fd, used);
	for (i = 0; i < s->nrules; i++) {
		if (rule_insert(fd, &s->rules[i], used)) {
			rule_describe(&s->rules[i], desc, sizeof(desc));
			err("cannot load on '%s': cannot add rule %s: %m", ifname, desc);
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
		err("cannot replace the limiter on '%s': a rule it keeps limits each source "
		    "with %u layers, more than --max-layers %u (give --max-layers %u, or "
		    "new rules with --rules FILE)", ifname, kept, s->max_layers, kept);
		return -1;
	}
	s->fixed.max_layers = kept;
	return 0;
}

static int do_load(const char *ifname, struct settings *s)
{
	char ns[PATH_MAX], dir[PATH_MAX + 16], path[PATH_MAX * 2], desc[256];
	LIBBPF_OPTS(bpf_link_create_opts, lopts);
	struct limiter old, cur;
	struct xdp_rl *skel = NULL;
	int replacing = 0, made_dir = 0, link_fd = -1, ret = EXIT_FAIL, wrote = 0, swapped = 0;
	__u32 zero = 0;
	int id;

	for (id = 0; id < PIN_MAX; id++)
		old.fd[id] = cur.fd[id] = -1;
	if (state_lock() < 0)
		return EXIT_FAIL;
	pins_gc();	/* before state_dir: it removes empty netns folders */
	if (state_dir(ns, sizeof(ns), 1))
		return EXIT_FAIL;
	snprintf(dir, sizeof(dir), "%s/%u", ns, s->fixed.ifindex);
	pin_path(path, sizeof(path), dir, XDP_RL_MAP_CONFIG);

	if (!access(path, F_OK)) {
		if (!s->force) {
			err("cannot load on '%s': xdp-rl is already loaded there "
			    "(use --force to replace it, or 'xdp-rl unload %s' first)",
			    ifname, ifname);
			return EXIT_FAIL;
		}
		if (limiter_open_index(s->fixed.ifindex, ifname, &old, "cannot load on"))
			return EXIT_FAIL;
		if (old.cfg.fixed.xdp_mode != s->fixed.xdp_mode) {
			err("cannot replace the limiter on '%s': it runs in %s mode, and "
			    "changing mode needs a detach (run 'xdp-rl unload %s' first)",
			    ifname, mode_name(old.cfg.fixed.xdp_mode), ifname);
			goto out;
		}
		replacing = 1;
		if (!s->rules_path && keep_rules_room(&old, s, ifname))
			goto out;
	}

	/* Tables kept by a replacement keep their hash key. */
	s->fixed.seed = replacing && same_tables(&old.cfg.fixed, &s->fixed) ?
			old.cfg.fixed.seed : new_seed();
	skel = xdp_rl__open();
	if (!skel) {
		err("cannot open the embedded XDP program: %m");
		goto out;
	}
	if (skel_prepare(skel, &s->fixed) ||
	    (replacing && reuse_maps(skel, &old, &s->fixed, !!s->rules_path))) {
		err("cannot prepare the maps: %m");
		goto out;
	}
	if (xdp_rl__load(skel)) {
		err("cannot load the XDP program into the kernel: %m%s",
		    verbose ? "" : " (run 'xdp-rl -v load ...' for libbpf's log)");
		goto out;
	}
	for (id = PIN_CONFIG; id < PIN_MAX; id++)
		cur.fd[id] = bpf_map__fd(skel_map(skel, id));

	/* A reused config holds the old settings; a new one holds zeros. */
	if (bpf_map_lookup_elem(cur.fd[PIN_CONFIG], &zero, &cur.cfg)) {
		err("cannot read the settings: %m");
		goto out;
	}
	cur.cfg.fixed = s->fixed;
	if (!s->rules_path && replacing) {
		/* Keep the old limiter's rules: their maps were reused. */
		s->live.nrules4 = limiter_live(&old)->nrules4;
		s->live.nrules6 = limiter_live(&old)->nrules6;
	} else {
		if (apply_rules(cur.fd, s, ifname))
			goto out;
		rules_count(cur.fd, &s->live.nrules4, &s->live.nrules6);
	}
	skel_clock(skel, &s->live);
	live_finish(&s->live, rules_min_window(cur.fd), replacing ? limiter_live(&old) : NULL,
		    !!s->rules_path);
	wrote = 1;
	if (limiter_publish(&cur, &s->live)) {
		err("cannot write the settings: %m");
		goto out;
	}

	if (replacing) {
		/* Swap the program under the existing link: no gap. */
		if (bpf_link_update(old.fd[PIN_LINK], bpf_program__fd(skel->progs.xdp_rl), NULL)) {
			err("cannot replace the program on '%s': %m", ifname);
			goto out;
		}
		swapped = 1;	/* the new program runs, on the new settings */
		if (pin_maps(skel, dir)) {
			err("the new program runs on '%s', but its state could not be "
			    "pinned: run 'xdp-rl unload %s' and load again", ifname, ifname);
			goto out;
		}
	} else {
		if (mkdir(dir, 0700) && errno != EEXIST) {
			err("cannot create %s: %m", dir);
			goto out;
		}
		made_dir = 1;
		lopts.flags = s->fixed.xdp_mode;
		link_fd = bpf_link_create(bpf_program__fd(skel->progs.xdp_rl),
					  s->fixed.ifindex, BPF_XDP, &lopts);
		if (link_fd < 0) {
			attach_error(ifname, s->fixed.xdp_mode, errno);
			goto out;
		}
		if (pin_maps(skel, dir))
			goto out;
		pin_path(path, sizeof(path), dir, XDP_RL_PIN_LINK);
		if (bpf_obj_pin(link_fd, path)) {
			err("cannot pin %s: %m", path);
			goto out;
		}
	}

	describe_limit(&s->live, s->fixed.bytes, desc, sizeof(desc));
	printf("xdp-rl: %s %s (%s mode): %s", replacing ? "replaced on" : "loaded on",
	       ifname, mode_name(s->fixed.xdp_mode), desc);
	if (s->live.nrules4 + s->live.nrules6)
		printf(", %u rule%s", s->live.nrules4 + s->live.nrules6,
		       s->live.nrules4 + s->live.nrules6 == 1 ? "" : "s");
	if (replacing && !same_tables(&old.cfg.fixed, &s->fixed))
		printf("; every window restarted (the source tables changed: --bytes, a "
		       "prefix, --max-sources or the layers per source)");
	else if (replacing && (limiter_live(&old)->flags ^ s->live.flags) & XDP_RL_F_ALIGNED)
		printf("; every window restarted (--per-key and --aligned keep time on "
		       "different clocks)");
	putchar('\n');
	ret = EXIT_DONE;
out:
	if (ret != EXIT_DONE && replacing && wrote && !swapped) {
		/*
		 * The old program reads the reused config: give its settings
		 * back, through the spare slot as any change goes.
		 */
		cur.cfg.fixed = old.cfg.fixed;
		if (limiter_publish(&cur, limiter_live(&old)))
			err("cannot restore the settings of '%s': %m (run 'xdp-rl unload %s')",
			    ifname, ifname);
	}
	if (ret != EXIT_DONE && made_dir) {
		if (link_fd >= 0)
			bpf_link_detach(link_fd);
		pins_remove(dir);
	}
	if (link_fd >= 0)
		close(link_fd);
	limiter_close(&old);
	xdp_rl__destroy(skel);
	return ret;
}

/* --limit/--window and --layer: one layer or several, not both. */
static int settle_layers(struct settings *s, const char *cmd, const struct xdp_rl_layer *base)
{
	if (s->live.nlayers && (s->has_limit || s->has_window))
		return usage_err(cmd, "%s: give either --limit/--window or --layer, not both", cmd);
	if (s->live.nlayers)
		return 0;
	s->live.layer[0] = *base;
	if (s->has_limit)
		s->live.layer[0].limit = s->one.limit;
	if (s->has_window)
		s->live.layer[0].window_ns = s->one.window_ns;
	s->live.nlayers = 1;
	return 0;
}

int cmd_load(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "layer", required_argument, NULL, OPT_LAYER },
		{ "per-key", no_argument, NULL, OPT_PER_KEY },
		{ "aligned", no_argument, NULL, OPT_ALIGNED },
		{ "bytes", no_argument, NULL, OPT_BYTES },
		{ "v4-prefix", required_argument, NULL, OPT_V4_PREFIX },
		{ "v6-prefix", required_argument, NULL, OPT_V6_PREFIX },
		{ "max-sources", required_argument, NULL, OPT_MAX_SOURCES },
		{ "max-layers", required_argument, NULL, OPT_MAX_LAYERS },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "rules", required_argument, NULL, OPT_RULES },
		{ "new-sources", required_argument, NULL, OPT_NEW_SOURCES },
		{ "on-table-full", required_argument, NULL, OPT_ON_FULL },
		{ 0 }
	};
	static const struct xdp_rl_layer base = { DEFAULT_LIMIT, DEFAULT_WINDOW_NS };
	struct settings s = {
		.fixed = { .max_sources = DEFAULT_MAX_SOURCES, .v4_prefix = 32,
			   .v6_prefix = 64, .xdp_mode = XDP_FLAGS_DRV_MODE },
	};
	const struct rule_spec *widest;
	const char *ifname, *why;
	unsigned int need;
	int opt, r;
	__u64 v;

	while ((opt = cmd_getopt(argc, argv, "load", opts)) != -1) {
		r = parse_common(opt, optarg, "load", &s);
		if (r == EXIT_USAGE)
			return r;
		if (!r)
			continue;
		switch (opt) {
		case OPT_BYTES:
			s.fixed.bytes = 1;
			break;
		case OPT_V4_PREFIX:
		case OPT_V6_PREFIX:
			why = parse_u64(optarg, 0, opt == OPT_V4_PREFIX ? 32 : 128, &v);
			if (why)
				return usage_err("load", "load: invalid --%s-prefix '%s': %s",
						 opt == OPT_V4_PREFIX ? "v4" : "v6", optarg, why);
			*(opt == OPT_V4_PREFIX ? &s.fixed.v4_prefix : &s.fixed.v6_prefix) = v;
			break;
		case OPT_MAX_SOURCES:
			why = parse_u64(optarg, MAX_SOURCES_MIN, MAX_SOURCES_MAX, &v);
			if (why)
				return usage_err("load", "load: invalid --max-sources '%s': %s",
						 optarg, why);
			s.fixed.max_sources = v;
			break;
		case OPT_MAX_LAYERS:
			why = parse_u64(optarg, 1, XDP_RL_MAX_LAYERS, &v);
			if (why)
				return usage_err("load", "load: invalid --max-layers '%s': %s",
						 optarg, why);
			s.max_layers = v;
			break;
		case OPT_MODE:
			if (!strcmp(optarg, "native"))
				s.fixed.xdp_mode = XDP_FLAGS_DRV_MODE;
			else if (!strcmp(optarg, "generic"))
				s.fixed.xdp_mode = XDP_FLAGS_SKB_MODE;
			else
				return usage_err("load", "load: invalid --mode '%s': "
						 "use native or generic", optarg);
			break;
		case OPT_FORCE:
			s.force = 1;
			break;
		case OPT_RULES:
			s.rules_path = optarg;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (cmd_positional(argc, argv, "load", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (argc - optind > 1)
		return usage_err("load", "load: unexpected argument '%s'", argv[optind + 1]);
	if (settle_layers(&s, "load", &base))
		return EXIT_USAGE;
	if (s.has_on_full && !s.live.new_sources.limit)
		return usage_err("load", "load: --on-table-full needs --new-sources N/DUR");
	if (s.rules_path && (r = rules_file(s.rules_path, &s.rules, &s.nrules, "load")))
		return r;

	/*
	 * Room per source: --max-layers, or the most layers asked for, by the
	 * limit or by a per-source rule (or, on --force without --rules, by a
	 * rule kept: do_load checks those).
	 */
	need = s.live.nlayers;
	if (s.max_layers && s.max_layers < need) {
		free(s.rules);
		return usage_err("load", "load: --max-layers %u is less than the %u layers "
				 "asked for", s.max_layers, need);
	}
	widest = rules_widest(s.rules, s.nrules);
	if (widest && s.max_layers && s.max_layers < widest->rule.nlayers) {
		r = usage_err("load", "load: %s:%u: the rule has %u layers, more than "
			      "--max-layers %u", s.rules_path, widest->line,
			      widest->rule.nlayers, s.max_layers);
		free(s.rules);
		return r;
	}
	if (widest && widest->rule.nlayers > need)
		need = widest->rule.nlayers;
	s.fixed.max_layers = s.max_layers ? s.max_layers : need;

	if (cmd_prepare(NEED_BPF | NEED_NET_ADMIN, "cannot load") ||
	    iface_resolve(ifname, &s.fixed.ifindex, "cannot attach to")) {
		free(s.rules);
		return EXIT_FAIL;
	}
	snprintf(s.fixed.ifname, sizeof(s.fixed.ifname), "%s", ifname);
	s.fixed.loaded_at_unix = time(NULL);
	s.fixed.netns_cookie = netns_cookie();
	r = do_load(ifname, &s);
	free(s.rules);
	return r;
}

/* The layers a per-source rule sets for key @k of the table pinned as @id (0: none). */
static __u32 rule_layers_of(const struct limiter *l, int id, const __u32 k[4])
{
	struct xdp_rl_rule_key4 k4 = { .prefixlen = 32, .addr = k[0] };
	struct xdp_rl_rule_key6 k6 = { .prefixlen = 128 };
	int v6 = id == PIN_SRC6 || id == PIN_AGG6;
	struct xdp_rl_rule r;

	memcpy(k6.addr, k, sizeof(k6.addr));
	if (bpf_map_lookup_elem(l->fd[v6 ? PIN_RULES6 : PIN_RULES4], v6 ? (void *)&k6 : (void *)&k4,
				&r) || r.action != XDP_RL_RULE_LIMIT || (r.flags & XDP_RL_RULE_F_SHARED))
		return 0;
	return r.nlayers;
}

/*
 * After `set` left fewer layers in force (@from of @to): close the windows
 * of the layers dropped, so that a layer put back later starts empty,
 * rather than with the count it had. Keys whose per-source rule still uses
 * those layers keep them. (The datapath closes them too, at a key's next
 * packet; this covers keys that send none before the layer comes back.)
 */
static void close_dropped_layers(const struct limiter *l, __u32 from, __u32 to)
{
	static const int ids[] = { PIN_SRC4, PIN_SRC6, PIN_AGG4, PIN_AGG6 };
	int check_rules = rules_max_layers_fd(l->fd) > from;
	struct xdp_rl_slot *s;
	struct table t;
	__u32 k[4], n;
	size_t i;
	__u64 j;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		if (limiter_table(l, ids[i], &t, "warning: cannot clear the layers dropped on"))
			continue;
		for (j = 0; j < table_nslots(&t); j++) {
			s = table_slot(&t, j);
			if (!slot_key(&t, s, k))
				continue;
			n = check_rules ? rule_layers_of(l, ids[i], k) : 0;
			slot_close_layers(&t, s, n > from ? n : from, to);
		}
		table_unmap(&t);
	}
}

int cmd_set(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "layer", required_argument, NULL, OPT_LAYER },
		{ "per-key", no_argument, NULL, OPT_PER_KEY },
		{ "aligned", no_argument, NULL, OPT_ALIGNED },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "enforce", no_argument, NULL, OPT_ENFORCE },
		{ "new-sources", required_argument, NULL, OPT_NEW_SOURCES },
		{ "on-table-full", required_argument, NULL, OPT_ON_FULL },
		{ 0 }
	};
	struct settings s = {};
	struct xdp_rl_live next, prev;
	struct limiter l;
	const char *ifname;
	char desc[256];
	int opt, r;

	while ((opt = cmd_getopt(argc, argv, "set", opts)) != -1) {
		r = parse_common(opt, optarg, "set", &s);
		if (r)
			return EXIT_USAGE;
	}
	if (cmd_positional(argc, argv, "set", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (argc - optind > 1)
		return usage_err("set", "set: unexpected argument '%s'", argv[optind + 1]);
	if (!s.has_limit && !s.has_window && !s.live.nlayers && !s.has_align && !s.has_dry &&
	    !s.has_new && !s.has_on_full)
		return usage_err("set", "set: nothing to change: give --limit, --window, "
				 "--layer, --dry-run, --enforce, --per-key, --aligned, "
				 "--new-sources or --on-table-full");
	if (s.live.nlayers && (s.has_limit || s.has_window))
		return usage_err("set", "set: give either --limit/--window or --layer, not both");

	if (cmd_prepare(NEED_BPF | NEED_NET_ADMIN, "cannot change settings") ||
	    state_lock() < 0 || limiter_open(ifname, &l, "cannot change settings on"))
		return EXIT_FAIL;

	next = *limiter_live(&l);
	r = EXIT_FAIL;
	if ((s.has_limit || s.has_window) && next.nlayers > 1) {
		/* Refused for what runs, as a layer count it has no room for: exit 1. */
		err("cannot change settings on '%s': it has %u layers, and --limit and "
		    "--window set one (give them all with --layer)", ifname, next.nlayers);
		goto out;
	}
	if (s.live.nlayers > l.cfg.fixed.max_layers) {
		err("cannot change settings on '%s': it was loaded with room for %u layer%s "
		    "per source (load again with --force --max-layers %u)", ifname,
		    l.cfg.fixed.max_layers, l.cfg.fixed.max_layers == 1 ? "" : "s",
		    s.live.nlayers);
		goto out;
	}
	if (s.has_limit)
		next.layer[0].limit = s.one.limit;
	if (s.has_window)
		next.layer[0].window_ns = s.one.window_ns;
	if (s.live.nlayers) {
		memcpy(next.layer, s.live.layer, sizeof(next.layer));
		next.nlayers = s.live.nlayers;
	}
	if (s.has_align)
		next.flags = (next.flags & ~XDP_RL_F_ALIGNED) | (s.live.flags & XDP_RL_F_ALIGNED);
	if (s.has_dry)
		next.flags = (next.flags & ~XDP_RL_F_DRY_RUN) | (s.live.flags & XDP_RL_F_DRY_RUN);
	if (s.has_new)
		next.new_sources = s.live.new_sources;
	if (s.has_on_full)
		next.on_full = s.live.on_full;
	if (s.has_on_full && !next.new_sources.limit) {
		r = usage_err("set", "set: --on-table-full needs --new-sources N/DUR");
		goto out;
	}
	live_finish(&next, rules_min_window(l.fd), limiter_live(&l), 0);

	prev = *limiter_live(&l);
	if (limiter_publish(&l, &next)) {
		err("cannot change settings on '%s': %m", ifname);
		goto out;
	}
	if (next.nlayers < prev.nlayers)
		close_dropped_layers(&l, next.nlayers, prev.nlayers);
	describe_limit(&next, l.cfg.fixed.bytes, desc, sizeof(desc));
	printf("xdp-rl: %s: %s\n", ifname, desc);
	r = EXIT_DONE;
out:
	limiter_close(&l);
	return r;
}

/*
 * `unload NAME` after the interface NAME went away: its limiter is detached
 * already (status shows it DETACHED). Find its state by the name it was
 * loaded on and let the pin garbage collector remove it. 1 if it did.
 */
static int unload_gone(const char *ifname)
{
	char ns[PATH_MAX], dir[PATH_MAX * 2];
	struct xdp_rl_config cfg;
	struct dirent *d;
	__u32 zero = 0;
	int fd, found = 0;
	DIR *n;

	if (state_dir(ns, sizeof(ns), 0))
		return 0;
	n = opendir(ns);
	if (!n)
		return 0;
	while (!found && (d = readdir(n))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", ns, d->d_name);
		fd = pin_open(dir, XDP_RL_MAP_CONFIG);
		if (fd < 0)
			continue;
		found = !bpf_map_lookup_elem(fd, &zero, &cfg) &&
			!strncmp(cfg.fixed.ifname, ifname, sizeof(cfg.fixed.ifname));
		close(fd);
	}
	closedir(n);
	if (!found)
		return 0;
	pins_gc();
	return access(dir, F_OK) != 0;
}

int cmd_unload(int argc, char **argv)
{
	static const struct option opts[] = { { 0 } };
	const char *ifname;
	struct limiter l;
	int opt;

	while ((opt = cmd_getopt(argc, argv, "unload", opts)) != -1)
		return EXIT_USAGE;
	if (cmd_positional(argc, argv, "unload", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (argc - optind > 1)
		return usage_err("unload", "unload: unexpected argument '%s'", argv[optind + 1]);

	if (cmd_prepare(NEED_BPF | NEED_NET_ADMIN, "cannot unload") || state_lock() < 0)
		return EXIT_FAIL;
	if (strlen(ifname) < IF_NAMESIZE && !if_nametoindex(ifname) && unload_gone(ifname)) {
		printf("xdp-rl: %s is gone; removed the state of its limiter\n", ifname);
		return EXIT_DONE;
	}
	if (limiter_open(ifname, &l, "cannot unload from"))
		return EXIT_FAIL;
	if (bpf_link_detach(l.fd[PIN_LINK]) && errno != ENOLINK) {
		err("cannot detach from '%s': %m", ifname);
		limiter_close(&l);
		return EXIT_FAIL;
	}
	limiter_close(&l);
	if (pins_remove(l.dir)) {
		err("detached from '%s', but cannot remove %s: %m", ifname, l.dir);
		return EXIT_FAIL;
	}
	printf("xdp-rl: unloaded from %s\n", ifname);
	return EXIT_DONE;
}
