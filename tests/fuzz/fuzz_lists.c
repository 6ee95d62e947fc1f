// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fuzz_lists.c - the list file parser (user/lists.h: list_parse): any text
 * is read or refused with a reason naming the file, never a crash; what it
 * reads is sorted, each prefix once, no bits set past its length, counted
 * by family; printed a prefix a line and read again, the same list.
 */
#include <arpa/inet.h>

#include "fuzz.h"
#include "lists.h"
#include "options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[512], pfx[INET6_ADDRSTRLEN + 8], *text = fuzz_string(data, size), *out = NULL;
	struct prefix_list pl, again;
	struct ip_addr m;
	size_t i, len = 0;
	__u64 n[2] = { 0, 0 };
	FILE *f;

	if (list_parse(text, size, "fuzz.netset", &pl, why, sizeof(why))) {
		FUZZ_CHECK(!strncmp(why, "fuzz.netset", 11), "a refusal names the file: '%s'", why);
		free(text);
		return 0;
	}
	f = open_memstream(&out, &len);
	FUZZ_CHECK(f != NULL, "open_memstream");
	for (i = 0; i < pl.n; i++) {
		m = pl.v[i].addr;
		mask_addr(&m, pl.v[i].len);
		FUZZ_CHECK(!memcmp(&m, &pl.v[i].addr, sizeof(m)), "no bits past the length");
		FUZZ_CHECK(pl.v[i].len <= (pl.v[i].addr.family == AF_INET ? 32U : 128U),
			   "a length the family has");
		n[pl.v[i].addr.family == AF_INET6]++;
		fmt_prefix(&pl.v[i].addr, pl.v[i].len, pfx, sizeof(pfx));
		fprintf(f, "%s\n", pfx);
	}
	fclose(f);
	FUZZ_CHECK(n[0] == pl.count[0] && n[1] == pl.count[1], "counted by family");
	FUZZ_CHECK(!list_parse(out, len, "fuzz.netset", &again, why, sizeof(why)),
		   "printed, it reads again: %s", why);
	FUZZ_CHECK(again.n == pl.n && again.hash == pl.hash, "... as the same list");
	for (i = 0; i < pl.n; i++)
		FUZZ_CHECK(again.v[i].len == pl.v[i].len &&
				   !memcmp(&again.v[i].addr, &pl.v[i].addr, sizeof(pl.v[i].addr)),
			   "... prefix by prefix");
	list_free(&again);
	list_free(&pl);
	free(out);
	free(text);
	return 0;
}
