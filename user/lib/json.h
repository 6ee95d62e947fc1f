/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * json.h - a small streaming JSON writer for --json output.
 *
 * What it writes is valid JSON in UTF-8 whatever it is given: strings are
 * escaped, and bytes that are not UTF-8 (an interface name may hold any
 * byte) are written as U+FFFD. It checks its own use: nesting deeper than
 * JSON_MAX_DEPTH, or a document finished with something left open, is an
 * error json_finish() reports, never a silently different document.
 * Bottom layer: depends on nothing else of xdp-rl.
 */
#ifndef XDP_RL_JSON_H
#define XDP_RL_JSON_H

#include <stdio.h>
#include <linux/types.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	int error;		    /* misuse seen: too deep, or closed too often */
	int count[JSON_MAX_DEPTH];  /* members written at each level */
	char close[JSON_MAX_DEPTH]; /* '}' or ']' */
};

/* @key is NULL for array elements and the top-level value. */
void json_begin(struct json *j, FILE *f);
void json_obj(struct json *j, const char *key);
void json_arr(struct json *j, const char *key);
void json_end(struct json *j); /* closes the innermost object or array */
void json_str(struct json *j, const char *key, const char *v);
void json_u64(struct json *j, const char *key, __u64 v);
void json_s64(struct json *j, const char *key, __s64 v);
/* @ns as a number of ms, exact: 1000, 1.5 (a fraction only when it has one). */
void json_ms(struct json *j, const char *key, __u64 ns);
void json_bool(struct json *j, const char *key, int v);
void json_null(struct json *j, const char *key);
/*
 * Ends the document with a newline and flushes it. Returns 0, or -1 if the
 * writer was misused (something left open, too deep, closed too often).
 */
int json_finish(struct json *j);

/* Write @s as a JSON string (quotes included) to @f. */
void json_put_string(FILE *f, const char *s);

#endif
