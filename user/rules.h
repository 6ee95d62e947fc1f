/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * rules.h - per-prefix rules as a model: parsed from the command line or a
 * rules file, kept in the limiter's tries (the longest prefix wins), and
 * published to the datapath.
 */
#ifndef XDP_RL_RULES_H
#define XDP_RL_RULES_H

#include <stddef.h>
#include "options.h"
#include "limiter.h"
#include "live.h"

struct rule_spec {
	struct ip_addr addr;
	unsigned int prefix;
	struct xdp_rl_rule rule; /* id assigned when inserted */
	unsigned int line;	 /* in the rules file, 0 if not from one */
};

/* Which rule ids are taken: one byte per id, filled by rule_ids_used(). */
typedef __u8 rule_ids[XDP_RL_MAX_RULES];

/* allow, deny, limit (enum xdp_rl_action), as `rule list --json` names them. */
extern const struct word rule_action_words[];

/*
 * A rule's options, with their help (`rule --help`, cmd/rule.c): what
 * rule_parse takes and rule_format prints, in that order; and their words.
 */
extern const struct opt_spec rule_opts[];
extern const struct opt_words rule_words[];

/*
 * Parse `CIDR (--allow | --deny | --layer N/DUR ... [--shared] | --rate N/DUR
 * [--burst B] [--shared]) [--ban DUR] ...` from
 * argv[0..argc) (getopt style: argv[0] is skipped). On error, writes why to
 * @why and returns -1.
 */
int rule_parse(int argc, char **argv, struct rule_spec *r, char *why, size_t len);

/* The largest rules file (or config file) read: 16 MiB. */
#define RULES_FILE_MAX (16 << 20)
/* The longest rule_format() or rule_describe() text. */
#define RULE_TEXT_MAX 512

/*
 * Every rule in @path (one a line, as rule_parse takes them after its
 * argv[0]; '#' starts a comment), sorted (rules_sort), or a usage error
 * naming the line; nothing is applied.
 */
int rules_file(const char *path, struct rule_spec **out, size_t *n, const char *cmd);
/*
 * The rules of the text @text (@len bytes) of the rules file called @name:
 * 0 and the rules in *out (sorted, to free) and *n, or -1 with "NAME:LINE:
 * what is wrong" in @why.
 */
int rules_parse_text(const char *text, size_t len, const char *name, struct rule_spec **out,
		     size_t *n, char *why, size_t wlen);

/* Make room for one rule more in *@v (of *@n, room for *@cap): 0, or -1. */
int rules_add(struct rule_spec **v, size_t *n, size_t *cap);
/* The order of rules by prefix: IPv4 first, then by address, then by length. */
int rule_prefix_cmp(const struct rule_spec *a, const struct rule_spec *b);
/* Sort rules by prefix (rule_prefix_cmp), then by line. */
void rules_sort(struct rule_spec *v, size_t n);
/*
 * Sort @v and find a second rule for a prefix: the one on the earliest
 * line that repeats a prefix (and in *@first, the rule before it), or NULL.
 */
const struct rule_spec *rules_duplicate(struct rule_spec *v, size_t n,
					const struct rule_spec **first);
/*
 * Sort @v and find a rule with a selector nested in more than
 * XDP_RL_SELECT_NEST rules with selectors, each inside the next, with no
 * rule without a selector between (the datapath judges a packet that a
 * rule's selector misses by the next shorter rule, and looks that far at
 * most): the innermost such rule, with the chain, outermost first, in
 * @why; or NULL.
 */
const struct rule_spec *rules_too_nested(struct rule_spec *v, size_t n, char *why, size_t len);

/*
 * rules_too_nested for the rules in the tries of @fd with @adding too: 1
 * (why in @why), 0, or -1 (errno) if they cannot be read.
 */
int rules_too_nested_with(const int *fd, const struct rule_spec *adding, char *why, size_t len);

/* Every rule in the tries of @fd, sorted, in *@out (to free): 0, or -1 (errno). */
int rules_collect(const int *fd, struct rule_spec **out, size_t *n);

/* The per-source rule in @r that needs the most layers, or NULL. */
const struct rule_spec *rules_widest(const struct rule_spec *r, size_t n);
/* Most layers a per-source rule in the tries of @fd needs (0 if none). */
unsigned int rules_max_layers_fd(const int *fd);

/* Call @fn for every rule in the tries of @fd (PIN_* indexed); 1 if @fn stopped it. */
typedef int (*rule_fn)(const struct rule_spec *r, void *ctx);
int rules_foreach(const int *fd, rule_fn fn, void *ctx);

/* Mark the ids of the rules in the tries of @fd in @used. */
void rule_ids_used(const int *fd, rule_ids used);
/*
 * Insert @r (its lsid set) with an id free in @used (which it then marks)
 * into the tries of @fd (PIN_* indexed), its counters zeroed and its shared
 * budget started afresh first: by the program of @l if it runs (admin.h),
 * else in the maps.
 * Returns 0, or -1 with errno (EEXIST if the prefix has a rule, ENOSPC if no
 * id is free: the table holds XDP_RL_MAX_RULES).
 */
int rule_insert(const int *fd, struct rule_spec *r, rule_ids used, const struct limiter *l);
/*
 * Change the rule for @r's prefix in place to @r (its id and limit set as
 * given): one map update, which packets see whole. 0, or -1 with errno
 * (ENOENT: no rule for the prefix).
 */
int rule_update(const int *fd, const struct rule_spec *r);
/* Delete the rule for @r's prefix: 0, or -1 with errno (ENOENT: none). */
int rule_delete(const int *fd, const struct rule_spec *r);

/* The shortest window of any rule (0 if none), for the clock choice. */
__u64 rules_min_window(const int *fd);
/* The longest window of any rule (0 if none). */
__u64 rules_max_window(const int *fd);
/* Count @r in @rs (rules_summarize) too. */
void rules_summary_add(struct rules_summary *rs, const struct rule_spec *r);
/* What of the rules in the tries of @fd the live settings depend on (live.h), with @adding. */
void rules_summarize(const int *fd, const struct rule_spec *adding, struct rules_summary *rs);
/* Rules per family. */
void rules_count(const int *fd, __u32 *n4, __u32 *n6);
/*
 * The rule counts and the clock choice for the rules in the tries go live,
 * counting @adding too (NULL: none), a rule about to be inserted, which is
 * given its limit set (the config's next_lsid, published with it). The
 * datapath looks rules up only while a count says there are some, so a
 * count is published before a rule is inserted, and after one is deleted:
 * a kill between the two leaves a count too high, which costs a lookup
 * that finds nothing, never a rule that is not enforced.
 */
int rules_publish(struct limiter *l, struct rule_spec *adding);

/* The rule for address @a (longest prefix), copied into @r; NULL if none. */
/*
 * The longest rule of a prefix of at most @maxlen bits that holds @a, into
 * @r (as the datapath walks past a rule whose selector misses): @r, or NULL.
 */
const struct xdp_rl_rule *rule_lookup_within(const struct limiter *l, const struct ip_addr *a,
					     unsigned int maxlen, struct xdp_rl_rule *r);
const struct xdp_rl_rule *rule_lookup(const struct limiter *l, const struct ip_addr *a,
				      struct xdp_rl_rule *r);
/*
 * The prefix of the rule @id that matches @a: the shortest length at which a
 * lookup (which finds the longest rule no longer than it) still finds it.
 */
void rule_prefix_of(const struct limiter *l, const struct ip_addr *a, __u32 id, struct ip_addr *out,
		    unsigned int *prefix);

/* "198.18.0.0/24 --layer 10/1s --layer 100/1m --shared": as rule_parse takes it. */
void rule_format(const struct rule_spec *r, char *buf, size_t len);
/* Whether @a and @b are the same rule (prefix, action, layers, flags, selector). */
int rule_same(const struct rule_spec *a, const struct rule_spec *b);
/* "198.18.0.0/24 limit 10/1s 100/1m shared", "... rate 10/1s burst 20" (no hits). */
void rule_describe(const struct rule_spec *r, char *buf, size_t len);

/* What to say to a rule set past XDP_RL_MAX_RULES (a %u: XDP_RL_MAX_PREFIXES). */
#define LISTS_HINT                                                                          \
	" (a block list of plain --allow or --deny prefixes goes on the lists, which hold " \
	"up to %u: 'xdp-rl lists IFACE --deny FILE', or deny-list FILE in a config file)"

#endif
