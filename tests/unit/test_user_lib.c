// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_user_lib.c - the bottom layer's small helpers, no root and no
 * kernel: growing arrays (user/lib/vec.h), what /proc/PID/stat says
 * (user/lib/proc.h), the length of a map's mapping (user/lib/mapmem.h).
 * Built into build/test_user.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "mapmem.h"
#include "proc.h"
#include "unit.h"
#include "vec.h"

struct pair {
	int a, b;
};

/* ---- vec_room --------------------------------------------------------------------------- */

UNIT_TEST(vec_room_grows)
{
	struct pair *v = NULL;
	size_t n = 0, cap = 0, i;
	int ok = 1;

	ASSERT_EQ(vec_room(v, n, cap, 1, 4), 0, "room for the first: allocated");
	ASSERT_EQ(cap, (size_t)4, "the first allocation is @first elements");
	if (!ASSERT_TRUE(v, "an array"))
		return;
	for (i = 0; i < 100; i++) {
		if (vec_room(v, n, cap, 1, 4)) {
			ok = 0;
			break;
		}
		v[n].a = (int)i;
		v[n].b = (int)-i;
		n++;
	}
	ASSERT_TRUE(ok, "100 elements pushed");
	ASSERT_EQ(cap, (size_t)128, "4 doubled until 100 fit");
	for (i = 0; i < n; i++)
		ok &= v[i].a == (int)i && v[i].b == (int)-i;
	ASSERT_TRUE(ok, "every element kept across the moves");
	ASSERT_EQ(vec_room(v, n, cap, 28, 4), 0, "room already there");
	ASSERT_EQ(cap, (size_t)128, "... nothing allocated");
	ASSERT_EQ(vec_room(v, n, cap, 29, 4), 0, "one past the room");
	ASSERT_EQ(cap, (size_t)256, "... doubled once");
	ASSERT_EQ(vec_room(v, n, cap, 1000, 4), 0, "far past it");
	ASSERT_EQ(cap, (size_t)2048, "... doubled until it fits");
	free(v);
}

UNIT_TEST(vec_room_first_zero)
{
	char *v = NULL;
	size_t cap = 0;

	ASSERT_EQ(vec_room(v, 0, cap, 3, 0), 0, "no first size: grows from one");
	ASSERT_EQ(cap, (size_t)4, "1, 2, 4");
	free(v);
}

UNIT_TEST(vec_room_overflow_refused)
{
	struct pair *v = NULL, *was;
	size_t n = 0, cap = 0;

	if (!ASSERT_EQ(vec_room(v, n, cap, 1, 8), 0, "a small array"))
		return;
	was = v;
	errno = 0;
	ASSERT_EQ(vec_room(v, n, cap, SIZE_MAX / sizeof(*v) + 1, 8), -1,
		  "more elements than bytes can count: refused");
	ASSERT_EQ(errno, ENOMEM, "... ENOMEM");
	ASSERT_TRUE(v == was && cap == 8, "... the array as it was");
	errno = 0;
	ASSERT_EQ(vec_room(v, SIZE_MAX - 1, cap, 2, 8), -1, "n + more past SIZE_MAX: refused");
	ASSERT_EQ(errno, ENOMEM, "... ENOMEM");
	ASSERT_TRUE(v == was && cap == 8, "... the array as it was");
	errno = 0;
	ASSERT_EQ(vec_room(v, n, cap, SIZE_MAX / 2 + 2, 8), -1,
		  "doubling would pass SIZE_MAX: refused");
	ASSERT_EQ(errno, ENOMEM, "... ENOMEM");
	ASSERT_TRUE(v == was && cap == 8, "... the array as it was");
	free(v);
}

/* ---- proc_stat_field -------------------------------------------------------------------- */

UNIT_TEST(proc_stat_reader)
{
	ASSERT_EQ(proc_parent(getpid()), getppid(), "our parent, from /proc/self's stat");
	ASSERT_GT(proc_start_ticks((unsigned long long)getpid()), 0ULL, "our start time");
	ASSERT_EQ(proc_start_ticks(0), 0ULL, "no process 0: 0");
	ASSERT_EQ(proc_stat_field((unsigned long long)getpid(), 3), 0ULL,
		  "the state is not a number: 0");
	ASSERT_EQ(proc_stat_field((unsigned long long)getpid(), 1000), 0ULL, "no such field: 0");
}

/* ---- mapmem_len ------------------------------------------------------------------------- */

UNIT_TEST(mapmem_len_pages)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	ASSERT_EQ(mapmem_len(1), page, "a byte: a page");
	ASSERT_EQ(mapmem_len(page), page, "a page: a page");
	ASSERT_EQ(mapmem_len(page + 1), 2 * page, "a byte more: two");
	ASSERT_EQ(mapmem_len(SIZE_MAX), (size_t)0, "past SIZE_MAX: 0");
}
