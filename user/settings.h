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
	OPT_ATTACH,
	OPT_PRIORITY,
	OPT_PASS_TO,
	OPT_BAN,
	OPT_RATE,
	OPT_BURST,
	OPT_KEY,
	OPT_END /* one past the last */
};

/*
 * How a setting's value is parsed, printed in a config file, and merged
 * into the running settings by `set` (struct setting's kind).
 */
enum setting_kind {
	SK_COMMAND,  /* not a setting: its command takes it (--force, --rules) */
	SK_NUMBER,   /* a number in [min, max] */
	SK_DURATION, /* a duration in [min, max] ns */
	SK_DUR_OFF,  /* ... or off (or 0): 0 */
	SK_LAYERS,   /* N/DUR, a layer more each time it is given */
	SK_RATE,     /* N/DUR or off */
	SK_GCRA,     /* N/DUR: a rate (--rate), its burst another row's (settings_rate) */
	SK_WORD,     /* one of .words */
	SK_PORTS,    /* a port list, or any */
	SK_SWITCH,   /* no value: the bits .mask of its field become .on */
};

/* When a config file shows a setting (struct setting's show). */
enum setting_show {
	SHOW_ALWAYS,
	SHOW_ONE_LAYER,	  /* while there is one layer, a window (--limit, --window) */
	SHOW_RATE,	  /* while the limit is a rate (--rate, --burst) */
	SHOW_LAYERS,	  /* while there are several (--layer) */
	SHOW_NEW_SOURCES, /* while new sources are limited (--on-table-full) */
	SHOW_SET,	  /* while its switch is on; else the note .unset */
	SHOW_MATCH,	  /* a switch: while its field is as it sets it */
};

/* Which commands take a setting (struct setting's scope). */
#define IN_LOAD	  1U
#define IN_SET	  2U
#define IN_CONFIG 4U /* a line of a config file, without the dashes */

/*
 * One option of `load` and `set`, all there is of it: what the help, the
 * option parsing, the config file (parsed, printed, compared) and `set`'s
 * merge into the running settings know of it come from its row in
 * settings_table (settings.c). Its man page entry is written by hand.
 */
struct setting {
	const char *name; /* without the leading "--"; a config file's word */
	int id;		  /* OPT_* if code names it; 0: one past OPT_END is made */
	unsigned int scope;
	const char *arg, *help;		/* load's value name (NULL: none) and help */
	const char *set_arg, *set_help; /* set's, if it is set's */
	int set_pos;			/* its place in set's help, from 1 */
	enum setting_kind kind;
	size_t off, size;	  /* what it fills in struct settings */
	size_t at;		  /* where a limiter's settings hold it (printed, merged by set) */
	int merge;		  /* set merges it from .at into the running settings */
	__u64 min, max;		  /* SK_NUMBER, SK_DURATION, SK_DUR_OFF */
	const struct word *words; /* SK_WORD, and what `help --options` lists */
	__u64 mask, on;		  /* SK_SWITCH */
	int pair;		  /* SK_SWITCH: its opposite (OPT_*), given with it */
	const char *hint;	  /* after an invalid value's message */
	int conf_pos;		  /* its group's place in a config file, from 1 */
	enum setting_show show;
	const char *unset; /* SHOW_SET: the comment when it is off */
	/*
	 * Its part of load's synopsis and of set's, after IFACE (NULL: in its
	 * pair's); a leading '\n' starts a line.
	 */
	const char *form, *set_form;
};

struct settings;

/* Every setting, in load's help order; ends with a NULL name. */
extern const struct setting settings_table[];
/* The setting of option id @opt, or NULL; the id of row @s. */
const struct setting *setting_by_id(int opt);
int setting_id(const struct setting *s);
/* The value of setting @t in a limiter's settings @s (at .at). */
__u64 setting_value(const struct setting *t, const struct settings *s);
/* The setting named @name that @scope takes, or NULL. */
const struct setting *setting_named(const char *name, unsigned int scope);

/* `load`'s options and `set`'s, with their help (their commands' specs): made from settings_table. */
extern struct opt_spec settings_load_opts[];
extern struct opt_spec settings_set_opts[];
/* Their synopses, after the command's name (their commands' forms). */
extern const char *const settings_load_forms[];
extern const char *const settings_set_forms[];
/* The words of those options that take one (set has some of them). */
extern struct opt_words settings_words[];

#define SETTINGS_MAX 40 /* rows of settings_table, at most (OPT_END - OPT_LIMIT + 40 < 64 bits) */

/* What `load` and `set` were asked for; settings_given tells what was given. */
struct settings {
	struct xdp_rl_live live;
	struct xdp_rl_fixed fixed;
	struct xdp_rl_layer one;  /* --limit and --window */
	struct xdp_rl_layer rate; /* --rate N/DUR: its limit and window_ns */
	__u64 burst;		  /* --burst B, 0 if not given */
	__u64 given;		  /* a bit per option id past OPT_LIMIT */
	unsigned int max_layers;  /* --max-layers, 0 if not given */
	const char *rules_path;	  /* --rules FILE, NULL if not given */
	int new_rules;		  /* the rules below replace the limiter's (load --rules, apply) */
	struct rule_spec *rules;
	size_t nrules;
	int force;
};

/* Whether option @opt (OPT_*) was given in @s (a switch's opposite counts). */
static inline int settings_given(const struct settings *s, int opt)
{
	return !!(s->given & (1ULL << (opt - OPT_LIMIT)));
}

/*
 * `set`'s settings given in @s, merged into @next (the running ones): each
 * one set merges (the layers, and --limit and --window into the first). The
 * selector is settings_select's.
 */
void settings_merge(const struct settings *s, struct xdp_rl_live *next);
/* Whether @s gives any setting of @scope; and their names, "--a, --b or --c", in @buf. */
int settings_any(const struct settings *s, unsigned int scope);
void settings_names(unsigned int scope, char *buf, size_t len);

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
extern const struct word key_words[];
extern const struct word attach_words[];
extern const struct word pass_to_words[];

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
 * Refuse byte limits that can never pass a frame (below 60 bytes; a
 * rate's burst): -1 with why; warn about those that can never pass a
 * full-size one (on stderr, after "@cmd: "); 0.
 */
int settings_check_bytes(const struct xdp_rl_live *live, int bytes, const char *cmd,
			 struct why *why);

/*
 * The limits given in @s go together: --limit/--window or --layer, not
 * both; --rate with none of them. 0, or -1 with why.
 */
int settings_limits_given(const struct settings *s, struct why *why);

/*
 * --rate and --burst of @s into @live, whose limits are those in force
 * (set) or load's (@live is s->live): --rate makes its one layer a rate,
 * of burst --burst or N; --burst alone changes the burst of the rate in
 * force; --limit or --window alone cannot change a rate. 0, or -1 with why.
 */
int settings_rate(const struct settings *s, struct xdp_rl_live *live, struct why *why);

/*
 * What a rate refuses beside it, in @live with the rules @rs: aligned
 * windows (a rate has none to align, and keeps the precise clock). 0, or
 * -1 with why.
 */
int settings_check_rate(const struct settings *s, const struct xdp_rl_live *live,
			const struct rules_summary *rs, struct why *why);

/* Whether @s limits by a rate: its limits, or one of its rules. */
int settings_any_rate(const struct settings *s);

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
