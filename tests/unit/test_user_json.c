// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_user_json.c - the JSON writer (user/lib/json.h), into memory. No
 * root, no kernel; built into build/test_user.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "unit.h"

/* ---- JSON ------------------------------------------------------------------ */

/* A FILE writing to memory. */
struct mem {
	FILE *f;
	char *buf;
	size_t len;
};

static FILE *mem_open(struct mem *m)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	if (!m->f)
		UNIT_FAIL("%s: open_memstream: %s", unit_name(), strerror(errno));
	return m->f;
}

/* What was written; the caller frees it. */
static char *mem_close(struct mem *m)
{
	fclose(m->f);
	return m->buf;
}

/* @s as json_put_string writes it (in a buffer of its own, to free). */
static char *jstr(const char *s)
{
	struct mem m;

	if (!mem_open(&m))
		return NULL;
	json_put_string(m.f, s);
	return mem_close(&m);
}

/* Assert json_put_string(@in) writes @out (quotes included). */
#define ASSERT_JSTR(in, out, ...)                   \
	do {                                        \
		char *_s = jstr(in);                \
		ASSERT_STREQ(_s, out, __VA_ARGS__); \
		free(_s);                           \
	} while (0)

UNIT_TEST(json_strings)
{
	ASSERT_JSTR("eth0", "\"eth0\"", "json: a plain string in quotes");
	ASSERT_JSTR("", "\"\"", "json: the empty string");
	ASSERT_JSTR("a\"b", "\"a\\\"b\"", "json: a quote is escaped");
	ASSERT_JSTR("a\\b", "\"a\\\\b\"", "json: a backslash is escaped");
	ASSERT_JSTR("\x01\t\n\r\x1f", "\"\\u0001\\u0009\\u000a\\u000d\\u001f\"",
		    "json: control characters are \\u escapes");
	ASSERT_JSTR(" ~\x7f", "\" ~\x7f\"", "json: DEL and printable ASCII pass as they are");
	ASSERT_JSTR("/", "\"/\"", "json: a slash needs no escape");
}

UNIT_TEST(json_utf8)
{
	ASSERT_JSTR("caf\xc3\xa9", "\"caf\xc3\xa9\"", "json: 2-byte UTF-8 (U+00E9) passes");
	ASSERT_JSTR("\xe2\x82\xac", "\"\xe2\x82\xac\"", "json: 3-byte UTF-8 (U+20AC) passes");
	ASSERT_JSTR("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"",
		    "json: 4-byte UTF-8 (U+1F600) passes");
	ASSERT_JSTR("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"",
		    "json: the last code point (U+10FFFF) passes");
	ASSERT_JSTR("\xef\xbf\xbd", "\"\xef\xbf\xbd\"", "json: U+FFFD itself passes");
	ASSERT_JSTR("\x80", "\"\\ufffd\"", "json: a lone continuation byte 0x80 is U+FFFD");
	ASSERT_JSTR("\xff", "\"\\ufffd\"", "json: 0xff, never UTF-8, is U+FFFD");
	ASSERT_JSTR("a\xfe"
		    "b",
		    "\"a\\ufffdb\"", "json: a bad byte between good ones");
	ASSERT_JSTR("\xc0\xaf", "\"\\ufffd\\ufffd\"",
		    "json: overlong 0xc0 0xaf ('/'): each byte U+FFFD");
	ASSERT_JSTR("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"",
		    "json: overlong 3-byte 0xe0 0x80 0xaf: each byte U+FFFD");
	ASSERT_JSTR("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"",
		    "json: surrogate 0xed 0xa0 0x80 (U+D800): each byte U+FFFD");
	ASSERT_JSTR("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"",
		    "json: past U+10FFFF: each byte U+FFFD");
	ASSERT_JSTR("\xe2\x82", "\"\\ufffd\\ufffd\"",
		    "json: a sequence cut by the end of the string, not read past it");
	ASSERT_JSTR("\xe2\x82"
		    "b",
		    "\"\\ufffd\\ufffdb\"", "json: a sequence cut by an ASCII byte, which is kept");
}

UNIT_TEST(json_writer)
{
	struct json j;
	struct mem m;
	char *s;

	if (!mem_open(&m))
		return;
	json_begin(&j, m.f);
	json_obj(&j, NULL);
	json_str(&j, "name", "eth0");
	json_u64(&j, "max", ~0ULL);
	json_s64(&j, "min", -9223372036854775807LL - 1);
	json_bool(&j, "yes", 1);
	json_bool(&j, "no", 0);
	json_null(&j, "none");
	json_arr(&j, "list");
	json_u64(&j, NULL, 1);
	json_str(&j, NULL, "two");
	json_obj(&j, NULL);
	json_end(&j);
	json_arr(&j, NULL);
	json_end(&j);
	json_end(&j);
	json_str(&j, "k\"ey", "v\n");
	json_end(&j);
	ASSERT_EQ(json_finish(&j), 0, "json: a whole document finishes");
	s = mem_close(&m);
	ASSERT_STREQ(s,
		     "{\"name\":\"eth0\",\"max\":18446744073709551615,"
		     "\"min\":-9223372036854775808,\"yes\":true,\"no\":false,\"none\":null,"
		     "\"list\":[1,\"two\",{},[]],\"k\\\"ey\":\"v\\u000a\"}\n",
		     "json: members, commas, nesting and escaped keys, exactly");
	free(s);

	if (!mem_open(&m))
		return;
	json_begin(&j, m.f);
	ASSERT_EQ(json_finish(&j), 0, "json: an empty document finishes");
	s = mem_close(&m);
	ASSERT_STREQ(s, "\n", "json: an empty document is a newline");
	free(s);
}

UNIT_TEST(json_nesting)
{
	char want[2 * JSON_MAX_DEPTH + 2];
	struct json j;
	struct mem m;
	char *s;
	int i;

	/* Left open. */
	if (!mem_open(&m))
		return;
	json_begin(&j, m.f);
	json_obj(&j, NULL);
	json_u64(&j, "a", 1);
	ASSERT_EQ(json_finish(&j), -1, "json: an object left open fails json_finish");
	s = mem_close(&m);
	ASSERT_STREQ(s, "{\"a\":1\n", "json: ... after writing what it was given");
	free(s);

	/* Closed once too often. */
	if (!mem_open(&m))
		return;
	json_begin(&j, m.f);
	json_arr(&j, NULL);
	json_end(&j);
	json_end(&j);
	ASSERT_EQ(json_finish(&j), -1, "json: closed once too often fails json_finish");
	s = mem_close(&m);
	ASSERT_STREQ(s, "[]\n", "json: ... and the extra close writes nothing");
	free(s);

	/* As deep as allowed: JSON_MAX_DEPTH - 1 levels. */
	if (!mem_open(&m))
		return;
	json_begin(&j, m.f);
	for (i = 0; i < JSON_MAX_DEPTH - 1; i++)
		json_arr(&j, NULL);
	for (i = 0; i < JSON_MAX_DEPTH - 1; i++)
		json_end(&j);
	ASSERT_EQ(json_finish(&j), 0, "json: %d levels of nesting finish", JSON_MAX_DEPTH - 1);
	s = mem_close(&m);
	memset(want, '[', JSON_MAX_DEPTH - 1);
	memset(want + JSON_MAX_DEPTH - 1, ']', JSON_MAX_DEPTH - 1);
	strcpy(want + 2 * (JSON_MAX_DEPTH - 1), "\n");
	ASSERT_STREQ(s, want, "json: ... written in full");
	free(s);

	/* One deeper: refused, not capped. */
	if (!mem_open(&m))
		return;
	json_begin(&j, m.f);
	for (i = 0; i < JSON_MAX_DEPTH; i++)
		json_arr(&j, NULL);
	for (i = 0; i < JSON_MAX_DEPTH; i++)
		json_end(&j);
	ASSERT_EQ(json_finish(&j), -1, "json: %d levels of nesting (JSON_MAX_DEPTH) fail",
		  JSON_MAX_DEPTH);
	free(mem_close(&m));

	/* json_begin starts afresh after a failure. */
	if (!mem_open(&m))
		return;
	json_begin(&j, m.f);
	json_end(&j);
	json_begin(&j, m.f);
	json_obj(&j, NULL);
	json_end(&j);
	ASSERT_EQ(json_finish(&j), 0, "json: json_begin forgets an earlier misuse");
	free(mem_close(&m));
}
