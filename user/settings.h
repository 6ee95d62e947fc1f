/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * settings.h - a limiter's settings as the options of `load` and `set`
 * spell them: the options' tables (names, values, help), their parsers, and
 * the checks of what they ask for together. `load`, `set` and the config
 * file (config.h, whose settings are these options without their dashes)
 * all parse through here, so each option is spelled and parsed in one place.
 */
#ifndef XDP_RL_SETTINGS_H
#define XDP_RL_SETTINGS_H

#include <stddef.h>
#include "xdp_rl.h"
#include "options.h"
#include "rules.h"

/* Load-time defaults (doc/tables.md: "The bucket table, and choosing its size"). */
#define DEFAULT_LIMIT	    1000
#define DEFAULT_WINDOW_NS   1000000000ULL
#define DEFAULT_MAX_SOURCES 262144
#define DEFAULT_V4_PREFIX   32
#define DEFAULT_V6_PREFIX   64
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
	OPT_TABLE,
	OPT_END /* one past the last */
};

/* `load`'s options and `set`'s, with their help (their commands' specs). */
extern const struct opt_spec settings_load_opts[];
extern const struct opt_spec settings_set_opts[];
/* The words of those options that take one (set has some of them). */
extern const struct opt_words settings_words[];

/* What `load` and `set` were asked for; has_* tell what was given. */
struct settings {
	struct xdp_rl_live live;
	struct xdp_rl_fixed fixed;
	struct xdp_rl_layer one; /* --limit and --window */
	int has_limit, has_window, has_align, has_dry, has_new, has_on_full;
	int has_proto, has_dport, has_syn, has_link_local; /* into live.select, live.link_local */
	unsigned int max_layers;			   /* --max-layers, 0 if not given */
	const char *rules_path;				   /* --rules FILE, NULL if not given */
	int new_rules; /* the rules below replace the limiter's (load --rules, apply) */
	struct rule_spec *rules;
	size_t nrules;
	int force;
};

/* Why settings were refused: what is wrong, and what it is wrong with. */
struct why {
	char text[256];
	int opt;	   /* the option at fault (OPT_*), 0 if none in particular */
	unsigned int line; /* or the rule at fault: its line in its file */
};

/* --mode: native, generic (XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE). */
extern const struct word mode_words[];
/* --link-local: per-address, prefix, exempt (enum xdp_rl_link_local). */
extern const struct word link_local_words[];
/* --table: buckets, lru (enum xdp_rl_table_kind). */
extern const struct word table_words[];

/* Settings with nothing given: load's defaults once settings_finish_load has run. */
void settings_init(struct settings *s);

/*
 * Parse option @opt (with @arg) into @s, if it is a setting (every option
 * of load's and set's but --force and --rules). 0 when parsed, 1 when @opt
 * is not a setting, -1 when refused, with why in @why.
 */
int settings_option(int opt, const char *arg, struct settings *s, struct why *why);

/*
 * The selector of @live as given in @s (--proto, --dport, --syn, --no-syn),
 * on top of what @live has, and --link-local: 0, or -1 with why if they
 * cannot go together.
 */
int settings_select(const struct settings *s, struct xdp_rl_live *live, struct why *why);

/*
 * Refuse byte limits that can never pass a frame (below 60 bytes): -1 with
 * why; warn about those that can never pass a full-size one (on stderr,
 * after "@cmd: "); 0.
 */
int settings_check_bytes(const struct xdp_rl_live *live, int bytes, const char *cmd,
			 struct why *why);

/*
 * --limit/--window or --layer: one layer or several, not both. Fills
 * s->live's layers from --layer, or from @base changed by --limit and
 * --window. 0, or -1 with why.
 */
int settings_layers(struct settings *s, const struct xdp_rl_layer *base, struct why *why);

/*
 * After load's options (or a config file's settings) and the rules, in
 * s->rules: the layers, the selector, the checks of what they ask for
 * together, and the room per source (--max-layers, or as many layers as
 * the limits or a per-source rule need). 0, or -1 with why.
 */
int settings_finish_load(struct settings *s, const char *cmd, struct why *why);

/* The layers each source needs room for: the limits' and the widest per-source rule's. */
unsigned int settings_layers_needed(const struct settings *s);

#endif
