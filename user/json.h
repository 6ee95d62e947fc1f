/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* json.h - a small streaming JSON writer for --json output on stdout. */
#ifndef XDP_RL_JSON_H
#define XDP_RL_JSON_H

#include <stdio.h>
#include <linux/types.h>

#define JSON_MAX_DEPTH 8

struct json {
	FILE *f;
	int depth;
	int count[JSON_MAX_DEPTH];	/* members written at each level */
	char close[JSON_MAX_DEPTH];	/* '}' or ']' */
};

/* @key is NULL for array elements and the top-level value. */
void json_begin(struct json *j, FILE *f);
void json_obj(struct json *j, const char *key);
void json_arr(struct json *j, const char *key);
void json_end(struct json *j);		/* closes the innermost object/array */
void json_str(struct json *j, const char *key, const char *v);
void json_u64(struct json *j, const char *key, __u64 v);
void json_s64(struct json *j, const char *key, __s64 v);
void json_bool(struct json *j, const char *key, int v);
void json_null(struct json *j, const char *key);
/* Ends the document with a newline and flushes it. */
void json_finish(struct json *j);

#endif
