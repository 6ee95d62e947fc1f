// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* json.c - writes valid JSON or says it could not (see json.h). */
#include "json.h"

void json_begin(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->error = 0;
	j->count[0] = 0;
}

/*
 * The length of the UTF-8 sequence at @s (1..4) if it is a valid one: no
 * overlong forms, no surrogates, nothing past U+10FFFF; 0 if it is not.
 */
static int utf8_len(const unsigned char *s)
{
	unsigned int c = s[0], cp, n, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void json_put_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	int n;

	fputc('"', f);
	while (*s) {
		if (*s == '"' || *s == '\\') {
			fprintf(f, "\\%c", *s++);
			continue;
		}
		if (*s < 0x20) {
			fprintf(f, "\\u%04x", *s++);
			continue;
		}
		n = utf8_len(s);
		if (!n) {
			fputs("\\ufffd", f); /* not UTF-8: the replacement character */
			s++;
			continue;
		}
		fwrite(s, 1, n, f);
		s += n;
	}
	fputc('"', f);
}

static void member(struct json *j, const char *key)
{
	if (j->count[j->depth]++)
		fputc(',', j->f);
	if (key) {
		json_put_string(j->f, key);
		fputc(':', j->f);
	}
}

static void open_(struct json *j, const char *key, char ch, char close)
{
	if (j->depth + 1 >= JSON_MAX_DEPTH) {
		j->error = 1; /* refused, not capped: json_finish says so */
		return;
	}
	member(j, key);
	fputc(ch, j->f);
	j->count[++j->depth] = 0;
	j->close[j->depth] = close;
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
	else
		j->error = 1;
}

void json_str(struct json *j, const char *key, const char *v)
{
	member(j, key);
	json_put_string(j->f, v);
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

void json_ms(struct json *j, const char *key, __u64 ns)
{
	char frac[8];
	int n;

	member(j, key);
	fprintf(j->f, "%llu", (unsigned long long)(ns / 1000000));
	if (!(ns % 1000000))
		return;
	n = snprintf(frac, sizeof(frac), "%06llu", (unsigned long long)(ns % 1000000));
	while (n > 0 && frac[n - 1] == '0')
		frac[--n] = '\0';
	fprintf(j->f, ".%s", frac);
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

int json_finish(struct json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
	return j->error || j->depth ? -1 : 0;
}
