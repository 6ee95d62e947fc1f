/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * cmd_settings.h - the options `load` and `set` share, parsed into the
 * settings they ask for.
 */
#ifndef XDP_RL_CMD_SETTINGS_H
#define XDP_RL_CMD_SETTINGS_H

#include <stddef.h>
#include "xdp_rl.h"
#include "options.h"
#include "rules.h"

/* Load-time defaults (README: "The source table, and choosing its size"). */
#define DEFAULT_LIMIT	    1000
#define DEFAULT_WINDOW_NS   1000000000ULL
#define DEFAULT_MAX_SOURCES 262144
#define MAX_SOURCES_MIN	    16
#define MAX_SOURCES_MAX	    (1ULL << 26)

/* The options' ids (struct opt_spec). */
enum {
	OPT_LIMIT = 256,
	OPT_WINDOW,
	OPT_LAYER,
	OPT_PER_KEY,
	OPT_ALIGNED,
	OPT_BYTES,
	OPT_V4_PREFIX,
	OPT_V6_PREFIX,
	OPT_MAX_SOURCES,
	OPT_MAX_LAYERS,
	OPT_DRY_RUN,
	OPT_ENFORCE,
	OPT_MODE,
	OPT_FORCE,
	OPT_RULES,
	OPT_NEW_SOURCES,
	OPT_ON_FULL,
	OPT_PROTO,
	OPT_DPORT,
	OPT_SYN,
	OPT_NO_SYN,
	OPT_LINK_LOCAL,
};

/* What `load` and `set` were asked for; has_* tell what was given. */
struct settings {
	struct xdp_rl_live live;
	struct xdp_rl_fixed fixed;
	struct xdp_rl_layer one; /* --limit and --window */
	int has_limit, has_window, has_align, has_dry, has_new, has_on_full;
	int has_proto, has_dport, has_syn, has_link_local; /* into live.select, live.link_local */
	unsigned int max_layers;			   /* --max-layers, 0 if not given */
	const char *rules_path;
	struct rule_spec *rules;
	size_t nrules;
	int force;
};

/* --mode: native, generic (XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE). */
extern const struct word mode_words[];
/* --link-local: per-address, prefix, exempt (enum xdp_rl_link_local). */
extern const struct word link_local_words[];

/*
 * The selector of @live as given in @s (--proto, --dport, --syn, --no-syn),
 * on top of what @live has; a usage error (EXIT_USAGE) if they cannot go
 * together, else 0.
 */
int settings_select(const struct settings *s, struct xdp_rl_live *live, const char *cmd);

/*
 * Refuse byte limits that can never pass a frame (below 64 bytes) and warn
 * about those that can never pass a full-size one: EXIT_USAGE, or 0.
 */
int settings_check_bytes(const struct xdp_rl_live *live, int bytes, const char *cmd);

/*
 * Parse option @opt (with @arg) into @s if it is one that load and set
 * share. Returns 0 when handled, 1 when @opt is not one of them,
 * EXIT_USAGE after printing a usage error.
 */
int settings_option(int opt, const char *arg, const char *cmd, struct settings *s);

/*
 * --limit/--window or --layer: one layer or several, not both. Fills
 * s->live's layers from --layer, or from @base changed by --limit and
 * --window. 0, or EXIT_USAGE after a usage error.
 */
int settings_layers(struct settings *s, const char *cmd, const struct xdp_rl_layer *base);

#endif
