// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_user_resp.c - Redis's protocol (user/lib/resp.h): commands written
 * byte for byte, replies parsed, cut short, refused, and read as numbers.
 * No root, no kernel, no Redis; built into build/test_user.
 */
#include <stdlib.h>
#include <string.h>

#include "resp.h"
#include "unit.h"

/* ---- resp ------------------------------------------------------------------------- */

UNIT_TEST(resp_cmd)
{
	const char *argv[] = { "INCRBY", "xdp-rl:a:b", "12" };
	struct resp_buf b = {};

	ASSERT_EQ(resp_cmd(&b, 3, argv, NULL), 0, "resp_cmd: a command is written");
	ASSERT_EQ(b.len, strlen("*3\r\n$6\r\nINCRBY\r\n$10\r\nxdp-rl:a:b\r\n$2\r\n12\r\n"),
		  "resp_cmd: an array of three bulk strings");
	ASSERT_TRUE(!memcmp(b.p, "*3\r\n$6\r\nINCRBY\r\n$10\r\nxdp-rl:a:b\r\n$2\r\n12\r\n", b.len),
		    "resp_cmd: byte for byte");
	resp_buf_consume(&b, 4);
	ASSERT_TRUE(!memcmp(b.p, "$6\r\n", 4), "resp_buf_consume: what is left moves up");
	resp_buf_free(&b);
}

UNIT_TEST(resp_parse)
{
	static const struct {
		const char *in;
		enum resp_type type;
		long long n;
		const char *s;
	} ok[] = {
		{ "+OK\r\n", RESP_STATUS, 0, "OK" },
		{ "-ERR wrong type\r\n", RESP_ERROR, 0, "ERR wrong type" },
		{ ":42\r\n", RESP_INT, 42, NULL },
		{ ":-7\r\n", RESP_INT, -7, NULL },
		{ "$3\r\nabc\r\n", RESP_BULK, 3, "abc" },
		{ "$0\r\n\r\n", RESP_BULK, 0, "" },
		{ "$-1\r\n", RESP_NIL, -1, NULL },
		{ "*-1\r\n", RESP_NIL, -1, NULL },
		{ "*2\r\n:1\r\n$1\r\na\r\n", RESP_ARRAY, 2, NULL },
	};
	static const char *const bad[] = {
		"?what\r\n",
		":12a\r\n",
		":\r\n",
		"$-2\r\n",
		"$3\r\nabcd\r\n",
		":1\r\r",
		":99999999999999999999\r\n",
		"\r\n", /* no type byte: once it waited for more, forever (fuzz_resp) */
	};
	struct resp_reply r;
	size_t i, k, len;
	long n;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		len = strlen(ok[i].in);
		n = resp_parse(ok[i].in, len, &r);
		ASSERT_EQ(n, (long)len, "resp_parse: %zu: all of it is one reply", i);
		ASSERT_EQ(r.type, ok[i].type, "resp_parse: %zu: its type", i);
		if (ok[i].type == RESP_INT || ok[i].type == RESP_ARRAY || ok[i].type == RESP_NIL)
			ASSERT_EQ(r.n, ok[i].n, "resp_parse: %zu: its number", i);
		if (ok[i].s)
			ASSERT_TRUE(r.len == strlen(ok[i].s) && !memcmp(r.s, ok[i].s, r.len),
				    "resp_parse: %zu: its text", i);
		/* Every cut short is "not all there yet", never an error or a reply. */
		for (k = 0; k < len; k++)
			if (resp_parse(ok[i].in, k, &r) != 0)
				break;
		ASSERT_EQ(k, len, "resp_parse: %zu: each prefix waits for more", i);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_EQ(resp_parse(bad[i], strlen(bad[i]), &r), -1L,
			  "resp_parse: bad reply %zu is refused", i);
	ASSERT_EQ(resp_parse(":1\r\n:2\r\n", 8, &r), 4L, "resp_parse: one reply at a time");
	/* A line past 64 KiB is refused whole as in pieces (it was taken whole). */
	{
		size_t big = 70000;
		char *line = malloc(big + 2);

		ASSERT_TRUE(line != NULL, "resp_parse: memory for a long line");
		if (line) {
			memset(line, 'a', big);
			line[0] = '+';
			memcpy(line + big, "\r\n", 2);
			ASSERT_EQ(resp_parse(line, big + 2, &r), -1L,
				  "resp_parse: a 70000-byte line, whole, is refused");
			ASSERT_EQ(resp_parse(line, big, &r), -1L,
				  "resp_parse: its first 70000 bytes are refused too");
			free(line);
		}
	}
}

UNIT_TEST(resp_int)
{
	struct resp_reply r;
	long long v;

	resp_parse("$3\r\n123\r\n", 9, &r);
	ASSERT_TRUE(!resp_int(&r, &v) && v == 123, "resp_int: a bulk of digits (GET) is a number");
	resp_parse("$3\r\n12a\r\n", 9, &r);
	ASSERT_EQ(resp_int(&r, &v), -1, "resp_int: a bulk of anything else is not");
	resp_parse("$-1\r\n", 5, &r);
	ASSERT_TRUE(!resp_int(&r, &v) && v == 0, "resp_int: nil (no key) is 0");
}
