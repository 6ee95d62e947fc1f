// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_user_sentinel.c - Redis Sentinel without one (user/lib/sentinel.h):
 * the list of sentinels and the master's name parsed, and the reply that
 * names the master read. No root, no kernel; built into build/test_user.
 */
#include <string.h>

#include "sentinel.h"
#include "unit.h"

UNIT_TEST(sentinel_parse)
{
	struct sentinel s;

	memset(&s, 0, sizeof(s));
	ASSERT_TRUE(!sentinel_parse(&s, "198.18.201.1:26380,198.18.201.2,[2001:2::5],2001:2::6"),
		    "sentinel: a list of four");
	ASSERT_EQ(s.n, (size_t)4, "sentinel: four sentinels");
	ASSERT_TRUE(!strcmp(s.addr[0].host, "198.18.201.1") && !strcmp(s.addr[0].port, "26380"),
		    "sentinel: HOST:PORT");
	ASSERT_TRUE(!strcmp(s.addr[1].port, "26379"), "sentinel: HOST alone: Sentinel's port");
	ASSERT_TRUE(!strcmp(s.addr[2].host, "2001:2::5") && !strcmp(s.addr[2].port, "26379"),
		    "sentinel: [IPV6] alone: Sentinel's port");
	ASSERT_TRUE(!strcmp(s.addr[3].host, "2001:2::6") && !strcmp(s.addr[3].port, "26379"),
		    "sentinel: a bare IPv6 address: Sentinel's port");
	ASSERT_TRUE(sentinel_parse(&s, "198.18.201.1,,198.18.201.2") != NULL,
		    "sentinel: an empty address is refused");
	ASSERT_TRUE(sentinel_parse(&s, "198.18.201.1:0") != NULL, "sentinel: port 0 is refused");
	ASSERT_TRUE(!sentinel_name(&s, "mymaster") && !strcmp(s.name, "mymaster"),
		    "sentinel: a master's name");
	ASSERT_TRUE(sentinel_name(&s, "my master") != NULL && sentinel_name(&s, "") != NULL,
		    "sentinel: names with spaces, or empty, are refused");
}

UNIT_TEST(sentinel_reply)
{
	static const char named[] = "*2\r\n$12\r\n198.18.201.9\r\n$4\r\n6390\r\n";
	static const char *const bad[] = {
		"*1\r\n$12\r\n198.18.201.9\r\n",
		"*2\r\n$12\r\n198.18.201.9\r\n$4\r\n63x0\r\n",
		"*2\r\n:1\r\n$4\r\n6390\r\n",
		"-ERR unknown\r\n",
	};
	struct redis_addr a;
	struct resp_reply r;
	size_t i;

	ASSERT_EQ(resp_parse(named, strlen(named), &r), (long)strlen(named), "sentinel: parsed");
	ASSERT_EQ(sentinel_reply(&r, &a), 0, "sentinel: the master is named");
	ASSERT_TRUE(!strcmp(a.host, "198.18.201.9") && !strcmp(a.port, "6390"),
		    "sentinel: its host and port");
	resp_parse("*-1\r\n", 5, &r);
	ASSERT_EQ(sentinel_reply(&r, &a), 1, "sentinel: nil: no such master");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_TRUE(resp_parse(bad[i], strlen(bad[i]), &r) > 0, "sentinel: bad %zu parses",
			    i);
		ASSERT_EQ(sentinel_reply(&r, &a), -1, "sentinel: bad reply %zu is refused", i);
	}
}
