// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_user_redis.c - the connection to Redis (user/lib/redis.h) without
 * one: the address parsed and said back, and the back-off between
 * attempts. No root, no kernel; built into build/test_user.
 */
#include <stddef.h>

#include "redis.h"
#include "unit.h"

/* ---- redis: the address, the back-off ---------------------------------------------- */

UNIT_TEST(redis_parse_addr)
{
	static const struct {
		const char *in, *host, *port;
	} ok[] = {
		{ "198.18.200.1:6379", "198.18.200.1", "6379" },
		{ "[2001:2::1]:6380", "2001:2::1", "6380" },
		{ "[2001:2::1]", "2001:2::1", "6379" },
		{ "2001:2::1", "2001:2::1", "6379" },
		{ "redis.example:7000", "redis.example", "7000" },
		{ "redis", "redis", "6379" },
	};
	static const char *const bad[] = { "",	   ":6379",  "host:0", "host:65536", "host:6x",
					   "[::1", "[::1]x", "a b:1",  "host:" };
	struct redis r;
	size_t i;

	redis_init(&r);
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ASSERT_STREQ(redis_parse_addr(&r, ok[i].in), NULL, "redis_parse_addr: '%s'",
			     ok[i].in);
		ASSERT_STREQ(r.host, ok[i].host, "redis_parse_addr: '%s': the host", ok[i].in);
		ASSERT_STREQ(r.port, ok[i].port, "redis_parse_addr: '%s': the port", ok[i].in);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_TRUE(redis_parse_addr(&r, bad[i]) != NULL,
			    "redis_parse_addr: '%s' is refused", bad[i]);
	redis_free(&r);
}

/* Said back as it is written: an IPv6 address in brackets. */
UNIT_TEST(redis_where)
{
	struct redis r;

	redis_init(&r);
	ASSERT_STREQ(redis_parse_addr(&r, "[2001:2::1]:7000"), NULL, "redis_where: parsed");
	ASSERT_STREQ(redis_where(&r), "[2001:2::1]:7000", "redis_where: IPv6 in brackets");
	ASSERT_STREQ(redis_parse_addr(&r, "198.18.0.1"), NULL, "redis_where: parsed");
	ASSERT_STREQ(redis_where(&r), "198.18.0.1:6379", "redis_where: IPv4 bare");
	redis_free(&r);
}

UNIT_TEST(backoff)
{
	struct backoff b = { .base_ms = 100, .cap_ms = 1000 };
	static const __u64 low[] = { 50, 100, 200, 400, 500, 500 };
	static const __u64 high[] = { 100, 200, 400, 800, 1000, 1000 };
	size_t i;

	for (i = 0; i < 6; i++)
		ASSERT_EQ(backoff_next(&b, 0), low[i], "backoff: failure %zu, the shortest draw",
			  i);
	b.failures = 0;
	for (i = 0; i < 6; i++)
		ASSERT_EQ(backoff_next(&b, high[i] / 2), high[i],
			  "backoff: failure %zu, the longest draw", i);
	b.failures = 0;
	for (i = 0; i < 6; i++) {
		__u64 d = backoff_next(&b, 7919 * (i + 1));

		ASSERT_TRUE(d >= low[i] && d <= high[i], "backoff: failure %zu within [%llu, %llu]",
			    i, (unsigned long long)low[i], (unsigned long long)high[i]);
	}
	backoff_reset(&b);
	ASSERT_TRUE(backoff_next(&b, 12345) <= 100, "backoff: after a success, the base again");
	b.failures = 1000;
	ASSERT_TRUE(backoff_next(&b, 1) <= 1000, "backoff: never past the cap, however many");
}
