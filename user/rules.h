/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* rules.h - per-prefix rules: parsing, the rules file, and the rule tries. */
#ifndef XDP_RL_RULES_H
#define XDP_RL_RULES_H

#include <stddef.h>
#include "options.h"
#include "pin.h"

struct rule_spec {
	struct ip_addr addr;
	unsigned int prefix;
	struct xdp_rl_rule rule;	/* id assigned when inserted */
	unsigned int line;		/* in the rules file, 0 if not from one */
};

/* Which rule ids are taken: one byte per id, filled by rule_ids_used(). */
typedef __u8 rule_ids[XDP_RL_MAX_RULES];

/*
 * Parse `CIDR (--allow | --deny | --layer N/DUR ... [--shared])` from
 * argv[0..argc) (getopt style: argv[0] is skipped). On error, writes why to
 * @why and returns -1.
 */
int rule_parse(int argc, char **argv, struct rule_spec *r, char *why, size_t len);

/* Every rule in @path, or a usage error naming the line; nothing is applied. */
int rules_file(const char *path, struct rule_spec **out, size_t *n, const char *cmd);

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
 * Insert @r with an id free in @used (which it then marks) into the tries of
 * @fd (PIN_* indexed), zeroing its counters and shared windows first.
 * Returns 0, or -1 with errno (EEXIST if the prefix has a rule, ENOSPC if no
 * id is free: the table holds XDP_RL_MAX_RULES).
 */
int rule_insert(const int *fd, struct rule_spec *r, rule_ids used);

/* The shortest window of any rule (0 if none), for the clock choice. */
__u64 rules_min_window(const int *fd);
/* Rules per family. */
void rules_count(const int *fd, __u32 *n4, __u32 *n6);

/* Print "198.18.0.0/24 limit 10/1s 100/1m shared" (no hits). */
void rule_describe(const struct rule_spec *r, char *buf, size_t len);

int cmd_rule(int argc, char **argv);

#endif
