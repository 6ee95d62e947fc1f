// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * unit.c - the runner and the assertions of unit.h: main() of both test
 * binaries (build/test_prog, build/test_user).
 *
 *   TEST_BINARY              run every test
 *   TEST_BINARY NAME...      run the named ones (names may also be separated by commas)
 *   TEST_BINARY --list       list the names, one a line
 *
 * Exit status: 0 when every assertion held, 1 when one failed (or a test
 * skipped for want of privileges while CI is set), 2 for an unknown name.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

/* Made by the linker around the section UNIT_TEST puts each test in. */
extern const struct unit_test __start_unit_tests[], __stop_unit_tests[];

static int passed, failed, skipped; /* assertions passed and failed; tests skipped */
static const struct unit_test *current;
static int cur_checks, cur_failed, cur_skipped;

const char *unit_name(void)
{
	return current ? current->name : "?";
}

/* ---- Assertions ----------------------------------------------------------- */

/* "ok - DESCRIPTION" or "FAIL - DESCRIPTION"; the caller adds why on failure. */
static int verdict(int ok, const char *fmt, va_list ap)
{
	printf("%s - ", ok ? "ok" : "FAIL");
	vprintf(fmt, ap);
	putchar('\n');
	cur_checks++;
	if (ok) {
		passed++;
	} else {
		failed++;
		cur_failed++;
	}
	return ok;
}

static int is_neg(struct unit_val v)
{
	return v.is_signed && (long long)v.bits < 0;
}

static void put_val(struct unit_val v)
{
	if (is_neg(v)) {
		printf("%lld", (long long)v.bits);
		return;
	}
	printf("%llu", v.bits);
	if (v.bits > 0xffff)
		printf(" (%#llx)", v.bits);
}

/* -1, 0 or 1 as @a is below, equal to or above @b, as integers. */
static int val_cmp(struct unit_val a, struct unit_val b)
{
	if (is_neg(a) != is_neg(b))
		return is_neg(a) ? -1 : 1;
	if (is_neg(a)) {
		long long x = a.bits, y = b.bits;

		return x < y ? -1 : x > y;
	}
	return a.bits < b.bits ? -1 : a.bits > b.bits;
}

int unit_cmp(const char *file, int line, const char *ea, const char *eb, enum unit_op op,
	     struct unit_val a, struct unit_val b, const char *fmt, ...)
{
	static const char *const ops[] = { "==", "!=", "<", "<=", ">", ">=" };
	int c = val_cmp(a, b), ok;
	va_list ap;

	switch (op) {
	case UNIT_EQ: ok = c == 0; break;
	case UNIT_NE: ok = c != 0; break;
	case UNIT_LT: ok = c < 0; break;
	case UNIT_LE: ok = c <= 0; break;
	case UNIT_GT: ok = c > 0; break;
	default: ok = c >= 0; break;
	}
	va_start(ap, fmt);
	verdict(ok, fmt, ap);
	va_end(ap);
	if (!ok) {
		printf("  %s:%d: %s %s %s: ", file, line, ea, ops[op], eb);
		put_val(a);
		printf(" %s ", ops[op]);
		put_val(b);
		printf(" is false\n");
	}
	return ok;
}

int unit_true(const char *file, int line, const char *expr, int want, int got, const char *fmt, ...)
{
	int ok = !want == !got;
	va_list ap;

	va_start(ap, fmt);
	verdict(ok, fmt, ap);
	va_end(ap);
	if (!ok)
		printf("  %s:%d: %s is %s\n", file, line, expr, got ? "true" : "false");
	return ok;
}

/* @s in double quotes, with what is not printable ASCII escaped; or (null). */
static void put_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s) {
		fputs("(null)", stdout);
		return;
	}
	putchar('"');
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			printf("\\x%02x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static void put_strs(const char *file, int line, const char *ea, const char *how, const char *eb,
		     const char *a, const char *b)
{
	printf("  %s:%d: %s %s %s is false\n    left:  ", file, line, ea, how, eb);
	put_str(a);
	printf("\n    right: ");
	put_str(b);
	putchar('\n');
}

int unit_streq(const char *file, int line, const char *ea, const char *eb, const char *a,
	       const char *b, const char *fmt, ...)
{
	int ok = a && b ? !strcmp(a, b) : a == b;
	va_list ap;

	va_start(ap, fmt);
	verdict(ok, fmt, ap);
	va_end(ap);
	if (!ok)
		put_strs(file, line, ea, "==", eb, a, b);
	return ok;
}

int unit_strstr(const char *file, int line, const char *ea, const char *eb, const char *a,
		const char *b, const char *fmt, ...)
{
	int ok = a && b && strstr(a, b);
	va_list ap;

	va_start(ap, fmt);
	verdict(ok, fmt, ap);
	va_end(ap);
	if (!ok)
		put_strs(file, line, ea, "contains", eb, a, b);
	return ok;
}

void unit_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verdict(0, fmt, ap);
	va_end(ap);
	printf("  %s:%d: in test %s\n", file, line, unit_name());
}

static void skip(int privilege, const char *fmt, va_list ap)
{
	int fail = privilege && getenv("CI");

	printf("%s - %s: ", fail ? "FAIL" : "skip", unit_name());
	vprintf(fmt, ap);
	if (fail) {
		printf(" (CI is set: a skip for want of privileges fails)");
		failed++;
		cur_failed++;
	} else {
		skipped++;
	}
	putchar('\n');
	cur_skipped = 1;
}

void unit_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	skip(0, fmt, ap);
	va_end(ap);
}

void unit_skip_privilege(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	skip(1, fmt, ap);
	va_end(ap);
}

/* ---- The runner ----------------------------------------------------------- */

static const struct unit_test **tests;
static size_t ntests;

/*
 * The tests in the order of the files on the link line, and of the source
 * within each file (the compiler may lay out one file's entries in any order).
 */
static size_t file_rank(size_t i)
{
	const struct unit_test *t = __start_unit_tests;
	size_t j;

	for (j = 0; j < i; j++)
		if (!strcmp(t[j].file, t[i].file))
			return j;
	return i;
}

static int load_tests(void)
{
	/*
	 * cppcheck takes the two for different objects; the linker puts them
	 * around one section, so their difference is its count of tests.
	 */
	/* cppcheck-suppress comparePointers */
	size_t n = __stop_unit_tests - __start_unit_tests, i, j, *rank;
	const struct unit_test *t;

	tests = calloc(n, sizeof(*tests));
	rank = calloc(n, sizeof(*rank));
	if (!tests || !rank) {
		perror("unit");
		free(rank);
		return -1;
	}
	/* Insertion sort by (file rank, line): a few dozen entries. */
	for (i = 0; i < n; i++) {
		t = &__start_unit_tests[i];
		rank[i] = file_rank(i);
		for (j = ntests; j > 0; j--) {
			size_t r = rank[tests[j - 1] - __start_unit_tests];

			if (r < rank[i] || (r == rank[i] && tests[j - 1]->line < t->line))
				break;
			tests[j] = tests[j - 1];
		}
		tests[j] = t;
		ntests++;
	}
	free(rank);
	for (i = 0; i < ntests; i++) {
		for (j = i + 1; j < ntests; j++) {
			if (strcmp(tests[i]->name, tests[j]->name))
				continue;
			fprintf(stderr, "unit: two tests named '%s' (%s:%d and %s:%d)\n",
				tests[i]->name, tests[i]->file, tests[i]->line, tests[j]->file,
				tests[j]->line);
			return -1;
		}
	}
	return 0;
}

static const struct unit_test *find(const char *name)
{
	size_t i;

	for (i = 0; i < ntests; i++)
		if (!strcmp(tests[i]->name, name))
			return tests[i];
	return NULL;
}

static void list(FILE *f)
{
	size_t i;

	for (i = 0; i < ntests; i++)
		fprintf(f, "%s\n", tests[i]->name);
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [--list] [NAME...]\n"
		"  no NAME: run every test; NAME...: run those (also NAME,NAME);\n"
		"  --list: the names, one a line\n",
		prog);
}

static void run(const struct unit_test *t)
{
	current = t;
	cur_checks = cur_failed = cur_skipped = 0;
	printf("# %s (%s:%d)\n", t->name, t->file, t->line);
	t->fn();
	if (!cur_checks && !cur_skipped) {
		printf("FAIL - %s: asserted nothing\n", t->name);
		failed++;
		cur_failed++;
	}
	fflush(stdout);
	current = NULL;
}

/* Parse the command line into @sel: 0 to run, 1 done (--list, --help), 2 usage error. */
static int select_tests(int argc, char **argv, const struct unit_test **sel, size_t *nsel)
{
	char *name, *save;
	size_t i;
	int a;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--list") || !strcmp(argv[a], "-l")) {
			list(stdout);
			return 1;
		}
		if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
			usage(stdout, argv[0]);
			return 1;
		}
		if (argv[a][0] == '-') {
			usage(stderr, argv[0]);
			return 2;
		}
		for (name = strtok_r(argv[a], ", ", &save); name;
		     name = strtok_r(NULL, ", ", &save)) {
			sel[*nsel] = find(name);
			if (!sel[*nsel]) {
				fprintf(stderr, "%s: no test named '%s'; the tests are:\n", argv[0],
					name);
				list(stderr);
				return 2;
			}
			/* A name given twice still runs its test once. */
			for (i = 0; i < *nsel && sel[i] != sel[*nsel]; i++)
				;
			*nsel += i == *nsel;
		}
	}
	if (argc < 2) {
		memcpy(sel, tests, ntests * sizeof(*sel));
		*nsel = ntests;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const struct unit_test **sel = NULL;
	const char **failed_names = NULL;
	size_t nsel = 0, nfailed = 0, i;
	int ret = 2;

	setvbuf(stdout, NULL, _IOLBF, 0); /* every line out before a crash */
	if (load_tests())
		goto out;
	/* Room for every test, and for the one name looked up past them. */
	sel = calloc(ntests + 1, sizeof(*sel));
	failed_names = calloc(ntests + 1, sizeof(*failed_names));
	if (!sel || !failed_names) {
		perror("unit");
		goto out;
	}
	ret = select_tests(argc, argv, sel, &nsel);
	if (ret) {
		ret = ret == 1 ? 0 : 2;
		goto out;
	}
	for (i = 0; i < nsel; i++) {
		int before = failed;

		run(sel[i]);
		if (failed != before)
			failed_names[nfailed++] = sel[i]->name;
	}
	if (nfailed) {
		printf("failed:");
		for (i = 0; i < nfailed; i++)
			printf(" %s", failed_names[i]);
		printf(" (run one alone: make unit T=%s)\n", failed_names[0]);
	}
	printf("%d passed, %d failed", passed, failed);
	if (skipped)
		printf(", %d skipped", skipped);
	putchar('\n');
	ret = failed ? 1 : 0;
out:
	free(sel);
	free(failed_names);
	free(tests);
	return ret;
}
