// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd_load.c - the commands that change a limiter: load, set, unload. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "caps.h"
#include "commands.h"
#include "log.h"
#include "options.h"
#include "pin.h"
#include "xdp_rl.skel.h"

enum {
	OPT_LIMIT = 256, OPT_WINDOW, OPT_PER_KEY, OPT_ALIGNED, OPT_BYTES,
	OPT_V4_PREFIX, OPT_V6_PREFIX, OPT_MAX_SOURCES, OPT_DRY_RUN, OPT_ENFORCE,
	OPT_MODE, OPT_FORCE,
};

/* What `load` and `set` were asked for; has_* tell what was given. */
struct settings {
	struct xdp_rl_live live;
	struct xdp_rl_fixed fixed;
	int has_limit, has_window, has_align, has_dry;
	int force;
};

/*
 * Parse one option shared by load and set into @s. Returns 0 when handled,
 * 1 when @opt is not one of them, EXIT_USAGE after printing a usage error.
 */
static int parse_common(int opt, const char *arg, const char *cmd, struct settings *s)
{
	const char *why;
	__u64 v;

	switch (opt) {
	case OPT_LIMIT:
		why = parse_u64(arg, 1, XDP_RL_LIMIT_MAX, &v);
		if (why)
			return usage_err(cmd, "%s: invalid --limit '%s': %s", cmd, arg, why);
		s->live.limit = v;
		s->has_limit = 1;
		return 0;
	case OPT_WINDOW:
		why = parse_duration(arg, WINDOW_MIN_NS, WINDOW_MAX_NS, &v);
		if (why)
			return usage_err(cmd, "%s: invalid --window '%s': %s", cmd, arg, why);
		s->live.window_ns = v;
		s->has_window = 1;
		return 0;
	case OPT_PER_KEY:
	case OPT_ALIGNED:
		if (s->has_align && !!(s->live.flags & XDP_RL_F_ALIGNED) != (opt == OPT_ALIGNED))
			return usage_err(cmd, "%s: --per-key and --aligned exclude each other", cmd);
		if (opt == OPT_ALIGNED)
			s->live.flags |= XDP_RL_F_ALIGNED;
		s->has_align = 1;
		return 0;
	case OPT_DRY_RUN:
	case OPT_ENFORCE:
		if (s->has_dry && !!(s->live.flags & XDP_RL_F_DRY_RUN) != (opt == OPT_DRY_RUN))
			return usage_err(cmd, "%s: --dry-run and --enforce exclude each other", cmd);
		if (opt == OPT_DRY_RUN)
			s->live.flags |= XDP_RL_F_DRY_RUN;
		s->has_dry = 1;
		return 0;
	}
	return 1;
}

static void v4_mask(unsigned int prefix, __be32 *mask)
{
	*mask = prefix ? htonl(~0U << (32 - prefix)) : 0;
}

static void v6_mask(unsigned int prefix, __be32 mask[4])
{
	unsigned int i, bits;

	for (i = 0; i < 4; i++) {
		bits = prefix > 32 * i ? prefix - 32 * i : 0;
		v4_mask(bits > 32 ? 32 : bits, &mask[i]);
	}
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

/* The maps of an old limiter that a replacement can keep. */
static int reuse_maps(struct xdp_rl *skel, const struct limiter *old,
		      const struct xdp_rl_fixed *f)
{
	const struct xdp_rl_fixed *o = &old->cfg.fixed;
	int err = 0;

	err |= bpf_map__reuse_fd(skel->maps.config, old->config_fd);
	err |= bpf_map__reuse_fd(skel->maps.stats, old->stats_fd);
	/* Windows survive only if they mean the same thing. */
	if (o->bytes == f->bytes && o->v4_prefix == f->v4_prefix &&
	    o->v6_prefix == f->v6_prefix && o->max_sources == f->max_sources) {
		err |= bpf_map__reuse_fd(skel->maps.src4, old->src4_fd);
		err |= bpf_map__reuse_fd(skel->maps.src6, old->src6_fd);
	}
	return err;
}

/* Pin the maps that are not already pinned in @dir (all of them when new). */
static int pin_maps(struct xdp_rl *skel, const char *dir)
{
	struct bpf_map *maps[] = { skel->maps.config, skel->maps.stats,
				   skel->maps.src4, skel->maps.src6 };
	const char *names[] = { XDP_RL_MAP_CONFIG, XDP_RL_MAP_STATS,
				XDP_RL_MAP_SRC4, XDP_RL_MAP_SRC6 };
	char path[PATH_MAX];
	size_t i;
	int fd;

	for (i = 0; i < 4; i++) {
		pin_path(path, sizeof(path), dir, names[i]);
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			struct bpf_map_info a = {}, b = {};
			__u32 la = sizeof(a), lb = sizeof(b);

			bpf_obj_get_info_by_fd(fd, &a, &la);
			close(fd);
			bpf_obj_get_info_by_fd(bpf_map__fd(maps[i]), &b, &lb);
			if (a.id == b.id)
				continue;	/* reused */
			unlink(path);
		}
		if (bpf_obj_pin(bpf_map__fd(maps[i]), path)) {
			err("cannot pin %s: %m", path);
			return -1;
		}
	}
	return 0;
}

static int write_config(struct xdp_rl *skel, struct limiter *l, const struct settings *s)
{
	__u32 zero = 0;

	l->config_fd = bpf_map__fd(skel->maps.config);
	/* A reused map holds the old settings; a new one holds zeros. */
	if (bpf_map_lookup_elem(l->config_fd, &zero, &l->cfg))
		return -1;
	l->cfg.fixed = s->fixed;
	return limiter_publish(l, &s->live);
}

static int do_load(const char *ifname, struct settings *s)
{
	char ns[PATH_MAX], dir[PATH_MAX + 16], path[PATH_MAX * 2], desc[128];
	struct limiter old = { .link_fd = -1, .config_fd = -1, .stats_fd = -1,
			       .src4_fd = -1, .src6_fd = -1 };
	struct limiter cur = { .config_fd = -1 };
	LIBBPF_OPTS(bpf_link_create_opts, lopts);
	struct xdp_rl *skel = NULL;
	int replacing = 0, made_dir = 0, link_fd = -1, ret = EXIT_FAIL, wrote = 0;
	__be32 m6[4];
	__be32 m4;

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
	}

	skel = xdp_rl__open();
	if (!skel) {
		err("cannot open the embedded XDP program: %m");
		goto out;
	}
	skel->rodata->cfg_bytes = s->fixed.bytes;
	v4_mask(s->fixed.v4_prefix, &m4);
	v6_mask(s->fixed.v6_prefix, m6);
	skel->rodata->cfg_v4_mask = m4;
	memcpy((void *)skel->rodata->cfg_v6_mask, m6, sizeof(m6));
	if (bpf_map__set_max_entries(skel->maps.src4, s->fixed.max_sources) ||
	    bpf_map__set_max_entries(skel->maps.src6, s->fixed.max_sources) ||
	    (replacing && reuse_maps(skel, &old, &s->fixed))) {
		err("cannot prepare the maps: %m");
		goto out;
	}
	if (xdp_rl__load(skel)) {
		err("cannot load the XDP program into the kernel: %m%s",
		    verbose ? "" : " (run 'xdp-rl -v load ...' for libbpf's log)");
		goto out;
	}
	wrote = 1;
	if (write_config(skel, &cur, s)) {
		err("cannot write the settings: %m");
		goto out;
	}

	if (replacing) {
		/* Swap the program under the existing link: no gap. */
		if (bpf_link_update(old.link_fd, bpf_program__fd(skel->progs.xdp_rl), NULL)) {
			err("cannot replace the program on '%s': %m", ifname);
			goto out;
		}
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
		if (pin_maps(skel, dir)) {
			goto out;
		}
		pin_path(path, sizeof(path), dir, XDP_RL_PIN_LINK);
		if (bpf_obj_pin(link_fd, path)) {
			err("cannot pin %s: %m", path);
			goto out;
		}
	}

	describe_limit(&s->live, s->fixed.bytes, desc, sizeof(desc));
	printf("xdp-rl: %s %s (%s mode): %s\n", replacing ? "replaced on" : "loaded on",
	       ifname, mode_name(s->fixed.xdp_mode), desc);
	ret = EXIT_DONE;
out:
	if (ret != EXIT_DONE && replacing && wrote) {
		__u32 zero = 0;

		/* The old program reads the reused config map: give it back. */
		bpf_map_update_elem(old.config_fd, &zero, &old.cfg, BPF_EXIST);
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

int cmd_load(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "per-key", no_argument, NULL, OPT_PER_KEY },
		{ "aligned", no_argument, NULL, OPT_ALIGNED },
		{ "bytes", no_argument, NULL, OPT_BYTES },
		{ "v4-prefix", required_argument, NULL, OPT_V4_PREFIX },
		{ "v6-prefix", required_argument, NULL, OPT_V6_PREFIX },
		{ "max-sources", required_argument, NULL, OPT_MAX_SOURCES },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ 0 }
	};
	struct settings s = {
		.live = { .limit = DEFAULT_LIMIT, .window_ns = DEFAULT_WINDOW_NS },
		.fixed = { .max_sources = DEFAULT_MAX_SOURCES, .v4_prefix = 32,
			   .v6_prefix = 64, .xdp_mode = XDP_FLAGS_DRV_MODE },
	};
	const char *ifname, *why;
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
		default:
			return EXIT_USAGE;
		}
	}
	if (cmd_positional(argc, argv, "load", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (argc - optind > 1)
		return usage_err("load", "load: unexpected argument '%s'", argv[optind + 1]);

	if (cmd_prepare(NEED_BPF | NEED_NET_ADMIN, "cannot load"))
		return EXIT_FAIL;
	if (iface_resolve(ifname, &s.fixed.ifindex, "cannot attach to"))
		return EXIT_FAIL;
	snprintf(s.fixed.ifname, sizeof(s.fixed.ifname), "%s", ifname);
	s.fixed.loaded_at_unix = time(NULL);
	s.live.tai_to_unix_ns = tai_to_unix_ns();
	return do_load(ifname, &s);
}

int cmd_set(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "per-key", no_argument, NULL, OPT_PER_KEY },
		{ "aligned", no_argument, NULL, OPT_ALIGNED },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "enforce", no_argument, NULL, OPT_ENFORCE },
		{ 0 }
	};
	struct settings s = {};
	struct xdp_rl_live next;
	struct limiter l;
	const char *ifname;
	char desc[128];
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
	if (!s.has_limit && !s.has_window && !s.has_align && !s.has_dry)
		return usage_err("set", "set: nothing to change: give --limit, --window, "
				 "--dry-run, --enforce, --per-key or --aligned");

	if (cmd_prepare(NEED_BPF | NEED_NET_ADMIN, "cannot change settings") ||
	    state_lock() < 0 || limiter_open(ifname, &l, "cannot change settings on"))
		return EXIT_FAIL;

	next = *limiter_live(&l);
	if (s.has_limit)
		next.limit = s.live.limit;
	if (s.has_window)
		next.window_ns = s.live.window_ns;
	if (s.has_align)
		next.flags = (next.flags & ~XDP_RL_F_ALIGNED) | (s.live.flags & XDP_RL_F_ALIGNED);
	if (s.has_dry)
		next.flags = (next.flags & ~XDP_RL_F_DRY_RUN) | (s.live.flags & XDP_RL_F_DRY_RUN);
	next.tai_to_unix_ns = tai_to_unix_ns();

	if (limiter_publish(&l, &next)) {
		err("cannot change settings on '%s': %m", ifname);
		limiter_close(&l);
		return EXIT_FAIL;
	}
	describe_limit(&next, l.cfg.fixed.bytes, desc, sizeof(desc));
	printf("xdp-rl: %s: %s\n", ifname, desc);
	limiter_close(&l);
	return EXIT_DONE;
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

	if (cmd_prepare(NEED_BPF | NEED_NET_ADMIN, "cannot unload") ||
	    state_lock() < 0 || limiter_open(ifname, &l, "cannot unload from"))
		return EXIT_FAIL;
	if (bpf_link_detach(l.link_fd) && errno != ENOLINK) {
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
