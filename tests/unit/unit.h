/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * unit.h - tests registered by name, and the assertions they make. Shared by
 * build/test_prog (the XDP program, tests/unit/harness.h) and
 * build/test_user (user-space code only, tests/unit/test_user*.c).
 *
 * A test:
 *
 *	UNIT_TEST(window)
 *	{
 *		ASSERT_EQ(send_n(&e, &a, 8), 5, "window: 8 offered, limit 5 -> 5 pass");
 *	}
 *
 * is registered under its name (here "window") in the section unit_tests;
 * the binary runs every test, or those whose names match the patterns on
 * its command line ('window*'), or lists them (--list), each test in a
 * child process of its own (unit.c). Names are unique across both
 * binaries: `make unit T=PATTERN` runs the matches in each binary. Name a
 * test for what it checks, one thing a test.
 *
 * An assertion that holds returns 1 and prints nothing ("ok - DESCRIPTION"
 * with -v or XDP_RL_UNIT_VERBOSE=1); one that fails prints
 * "FAIL - DESCRIPTION", then file:line, the expression and its values, and
 * returns 0; the test goes on to its end either way unless it returns (do so
 * only where going on is meaningless: `if (!ASSERT_...) return;`).
 * Integer values are compared and printed as 64-bit integers, each with the
 * signedness of its own type, so -1 is never taken for 2^64 - 1.
 */
#ifndef XDP_RL_UNIT_H
#define XDP_RL_UNIT_H

#include <stddef.h>

struct unit_test {
	const char *name;
	void (*fn)(void);
	const char *file;
	int line;
};

/*
 * Define and register a test. The section name is a C identifier, so the
 * linker provides __start_unit_tests and __stop_unit_tests around it (and
 * the sanitizers leave such sections unpadded).
 */
#define UNIT_TEST(name)                                                                      \
	static void unit_fn_##name(void);                                                    \
	static const struct unit_test unit_reg_##name                                        \
		__attribute__((used, section("unit_tests"),                                  \
			       aligned(8))) = { #name, unit_fn_##name, __FILE__, __LINE__ }; \
	static void unit_fn_##name(void)

/* ---- Assertions ----------------------------------------------------------- */

/* A value as compared: its bits, and whether its type is signed. */
struct unit_val {
	unsigned long long bits;
	int is_signed;
};

#define UNIT_SIGNED(x)                                                                \
	_Generic((x), char                                                            \
		 : (char)-1 < (char)0, signed char : 1, short : 1, int : 1, long : 1, \
		   long long : 1, default : 0)
/* Evaluates @x once (_Generic does not evaluate its controlling expression). */
#define UNIT_VAL(x) ((struct unit_val){ (unsigned long long)(x), UNIT_SIGNED(x) })

enum unit_op { UNIT_EQ, UNIT_NE, UNIT_LT, UNIT_LE, UNIT_GT, UNIT_GE };

#define UNIT_FMT(a, b) __attribute__((format(printf, a, b)))

int unit_cmp(const char *file, int line, const char *ea, const char *eb, enum unit_op op,
	     struct unit_val a, struct unit_val b, const char *fmt, ...) UNIT_FMT(8, 9);
int unit_true(const char *file, int line, const char *expr, int want, int got, const char *fmt, ...)
	UNIT_FMT(6, 7);
int unit_streq(const char *file, int line, const char *ea, const char *eb, const char *a,
	       const char *b, const char *fmt, ...) UNIT_FMT(7, 8);
int unit_strstr(const char *file, int line, const char *ea, const char *eb, const char *a,
		const char *b, const char *fmt, ...) UNIT_FMT(7, 8);

/* Integers: a OP b, each taken as a 64-bit integer of its own signedness. */
#define ASSERT_EQ(a, b, ...) \
	unit_cmp(__FILE__, __LINE__, #a, #b, UNIT_EQ, UNIT_VAL(a), UNIT_VAL(b), __VA_ARGS__)
#define ASSERT_NE(a, b, ...) \
	unit_cmp(__FILE__, __LINE__, #a, #b, UNIT_NE, UNIT_VAL(a), UNIT_VAL(b), __VA_ARGS__)
#define ASSERT_LT(a, b, ...) \
	unit_cmp(__FILE__, __LINE__, #a, #b, UNIT_LT, UNIT_VAL(a), UNIT_VAL(b), __VA_ARGS__)
#define ASSERT_LE(a, b, ...) \
	unit_cmp(__FILE__, __LINE__, #a, #b, UNIT_LE, UNIT_VAL(a), UNIT_VAL(b), __VA_ARGS__)
#define ASSERT_GT(a, b, ...) \
	unit_cmp(__FILE__, __LINE__, #a, #b, UNIT_GT, UNIT_VAL(a), UNIT_VAL(b), __VA_ARGS__)
#define ASSERT_GE(a, b, ...) \
	unit_cmp(__FILE__, __LINE__, #a, #b, UNIT_GE, UNIT_VAL(a), UNIT_VAL(b), __VA_ARGS__)
/*
 * Truth: any scalar (a pointer too). Each returns what unit_true does (1 when
 * the assertion holds), computed here from @c so that the static analyzer
 * sees that after `if (ASSERT_TRUE(p, ...))` p is not NULL.
 */
#define ASSERT_TRUE(c, ...)                                                 \
	({                                                                  \
		int unit_c_ = !!(c);                                        \
		unit_true(__FILE__, __LINE__, #c, 1, unit_c_, __VA_ARGS__); \
		unit_c_;                                                    \
	})
#define ASSERT_FALSE(c, ...)                                                \
	({                                                                  \
		int unit_c_ = !!(c);                                        \
		unit_true(__FILE__, __LINE__, #c, 0, unit_c_, __VA_ARGS__); \
		!unit_c_;                                                   \
	})
/* Strings, either of which may be NULL (equal only to NULL). */
#define ASSERT_STREQ(a, b, ...) unit_streq(__FILE__, __LINE__, #a, #b, a, b, __VA_ARGS__)
/* String @a contains @b. */
#define ASSERT_STRSTR(a, b, ...) unit_strstr(__FILE__, __LINE__, #a, #b, a, b, __VA_ARGS__)

/* A failure outside any assertion (a setup step): counted, with file:line. */
#define UNIT_FAIL(...) unit_fail(__FILE__, __LINE__, __VA_ARGS__)
void unit_fail(const char *file, int line, const char *fmt, ...) UNIT_FMT(3, 4);

/*
 * Skip the running test, saying why; the test then returns. A missing
 * privilege (root, CAP_BPF) is a failure when the environment variable CI
 * is set: a CI run must not pass by skipping.
 */
void unit_skip(const char *fmt, ...) UNIT_FMT(1, 2);
void unit_skip_privilege(const char *fmt, ...) UNIT_FMT(1, 2);

/* The name of the running test. */
const char *unit_name(void);

/*
 * Run by the runner between two tests, in its own process, where a test
 * binary defines it (build/test_prog: tests/unit/kept.c resets and keeps
 * loaded programs there).
 */
void unit_between_tests(void) __attribute__((weak));

#endif
