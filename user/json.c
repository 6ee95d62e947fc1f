// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* json.c - writes valid JSON or nothing: strings are escaped here. */
#include "json.h"

void json_begin(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->count[0] = 0;
}

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = *s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void member(struct json *j, const char *key)
{
	if (j->count[j->depth]++)
		fputc(',', j->f);
	if (key) {
		put_string(j->f, key);
		fputc(':', j->f);
	}
}

static void open_(struct json *j, const char *key, char ch, char close)
{
	member(j, key);
	fputc(ch, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH) {
		j->count[++j->depth] = 0;
		j->close[j->depth] = close;
	}
}

void json_obj(struct json *j, const char *key)
{
	open_(j, key, '{', '}');
}

void json_arr(struct json *j, const char *key)
{
	open_(j, key, '[', ']');
}

void json_end(struct json *j)
{
	if (j->depth > 0)
		fputc(j->close[j->depth--], j->f);
}

void json_str(struct json *j, const char *key, const char *v)
{
	member(j, key);
	put_string(j->f, v);
}

void json_u64(struct json *j, const char *key, __u64 v)
{
	member(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void json_s64(struct json *j, const char *key, __s64 v)
{
	member(j, key);
	fprintf(j->f, "%lld", (long long)v);
}

void json_bool(struct json *j, const char *key, int v)
{
	member(j, key);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	member(j, key);
	fputs("null", j->f);
}

void json_finish(struct json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}
