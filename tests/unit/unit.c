// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * unit.c - the runner and the assertions of unit.h: main() of both test
 * binaries (build/test_prog, build/test_user).
 *
 *   TEST_BINARY              run every test
 *   TEST_BINARY PATTERN...   run the tests whose names match (shell globs:
 *                            'lru_*'; also PATTERN,PATTERN)
 *   TEST_BINARY --list [PATTERN...]  list the names, one a line
 *   -v, XDP_RL_UNIT_VERBOSE=1  print every assertion, passed or not
 *   --no-fork, XDP_RL_UNIT_FORK=0  run the tests in this process (a debugger)
 *
 * Quiet by default: a line per test ("ok - NAME (its checks, its
 * seconds)", "FAIL - NAME: why", "skip - NAME: why"), every failed
 * assertion before it with file:line, and a summary. Each test runs in a
 * child process of its own: a crash (a signal, a sanitizer's report, an
 * exit) fails that test alone, named with the signal or the status, and
 * the run goes on. A test still running after XDP_RL_UNIT_TIMEOUT seconds
 * (300; 0: no limit), plus twice
 * XDP_RL_MODEL_SECONDS when that is set (the model test runs that long), is
 * killed and fails.
 *
 * Exit status: 0 when every test passed or skipped, 1 when one failed (or a
 * test skipped for want of privileges while CI is set), 2 for a pattern
 * that matches no test, or a bad option.
 */
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "unit.h"

/* Made by the linker around the section UNIT_TEST puts each test in. */
extern const struct unit_test __start_unit_tests[], __stop_unit_tests[];

/*
 * The counts of a run. The running test's are in memory shared with the
 * child process that runs it, so that they outlive a crash.
 */
struct unit_counts {
	int passed, failed;	/* assertions, in every test run so far */
	int checks, cur_failed; /* the running test's assertions, and its failures */
	int skipped;		/* the running test skipped */
	int header;		/* the running test's "# NAME" line is out */
	char why[160];		/* why it skipped */
};

static struct unit_counts local_counts, *cnt = &local_counts;
static const struct unit_test *current;
static int verbose;

const char *unit_name(void)
{
	return current ? current->name : "?";
}

/* ---- Assertions ----------------------------------------------------------- */

/* The "# NAME (FILE:LINE)" line above what a test prints: always with -v, else before a failure. */
static void header(void)
{
	if (cnt->header || !current)
		return;
	printf("# %s (%s:%d)\n", current->name, current->file, current->line);
	cnt->header = 1;
}

/* "FAIL - DESCRIPTION" (the caller adds why), or "ok - DESCRIPTION" with -v. */
static void verdict(int ok, const char *fmt, va_list ap)
{
	cnt->checks++;
	if (ok) {
		cnt->passed++;
	} else {
		cnt->failed++;
		cnt->cur_failed++;
	}
	if (ok && !verbose)
		return;
	header();
	printf("%s - ", ok ? "ok" : "FAIL");
	vprintf(fmt, ap);
	putchar('\n');
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

/* The reason is kept for the test's line ("skip - NAME: why"); a CI failure is printed at once. */
static void skip(int privilege, const char *fmt, va_list ap)
{
	int fail = privilege && getenv("CI");

	vsnprintf(cnt->why, sizeof(cnt->why), fmt, ap);
	if (fail) {
		header();
		printf("FAIL - %s: %s (CI is set: a skip for want of privileges fails)\n",
		       unit_name(), cnt->why);
		cnt->checks++;
		cnt->failed++;
		cnt->cur_failed++;
	}
	cnt->skipped = 1;
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

static void list(FILE *f, const struct unit_test **sel, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		fprintf(f, "%s\n", sel[i]->name);
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [-v] [--no-fork] [--list] [PATTERN...]\n"
		"  no PATTERN: run every test; PATTERN...: the tests whose names match\n"
		"  (shell globs, 'lru_*'; also PATTERN,PATTERN);\n"
		"  --list: the names, one a line; -v: every assertion, passed or not;\n"
		"  --no-fork: every test in this process (no crash isolation, no time limit)\n",
		prog);
}

/* An environment variable as a number, or @def. */
static long env_long(const char *name, long def)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return def;
	n = strtol(v, &end, 10);
	return *end || n < 0 ? def : n;
}

/* Add the tests whose names match @pat to @sel (each once): how many match it. */
static size_t select_pattern(const char *pat, const struct unit_test **sel, size_t *nsel)
{
	size_t i, j, matched = 0;

	for (i = 0; i < ntests; i++) {
		if (fnmatch(pat, tests[i]->name, 0))
			continue;
		matched++;
		for (j = 0; j < *nsel && sel[j] != tests[i]; j++)
			;
		*nsel += j == *nsel;
		sel[j] = tests[i];
	}
	return matched;
}

/* Parse the command line into @sel: 0 to run, 1 done (--list, --help), 2 usage error. */
static int select_tests(int argc, char **argv, const struct unit_test **sel, size_t *nsel,
			int *fork_each)
{
	int a, listing = 0, patterns = 0;
	char *pat, *save;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--list") || !strcmp(argv[a], "-l")) {
			listing = 1;
		} else if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
			usage(stdout, argv[0]);
			return 1;
		} else if (!strcmp(argv[a], "--verbose") || !strcmp(argv[a], "-v")) {
			verbose = 1;
		} else if (!strcmp(argv[a], "--no-fork")) {
			*fork_each = 0;
		} else if (argv[a][0] == '-') {
			usage(stderr, argv[0]);
			return 2;
		} else {
			for (pat = strtok_r(argv[a], ", ", &save); pat;
			     pat = strtok_r(NULL, ", ", &save)) {
				patterns++;
				if (select_pattern(pat, sel, nsel))
					continue;
				fprintf(stderr, "%s: no test matches '%s'; the tests are:\n",
					argv[0], pat);
				list(stderr, tests, ntests);
				return 2;
			}
		}
	}
	if (!patterns) {
		memcpy(sel, tests, ntests * sizeof(*sel));
		*nsel = ntests;
	}
	if (listing) {
		list(stdout, sel, *nsel);
		return 1;
	}
	return 0;
}

static void run_here(const struct unit_test *t)
{
	current = t;
	if (verbose)
		header();
	t->fn();
	fflush(stdout);
	current = NULL;
}

/*
 * Run @t in a child process, waiting at most @timeout seconds (0: no limit).
 * 0 when it ran to its end, else why not, in @why.
 */
static int run_child(const struct unit_test *t, long timeout, char *why, size_t len)
{
	struct timespec left = { timeout, 0 }, t0, t1;
	sigset_t chld;
	int status;
	pid_t pid;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(why, len, "cannot fork: %s", strerror(errno));
		return -1;
	}
	if (!pid) {
		sigprocmask(SIG_UNBLOCK, &chld, NULL);
		run_here(t);
		exit(0); /* exit, not _exit: stdio flushed, the leak checker run */
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (!timeout) {
			if (waitpid(pid, &status, 0) == pid)
				break;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (sigtimedwait(&chld, NULL, &left) < 0 && errno == EAGAIN) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			snprintf(why, len, "still running after %ld s, killed", timeout);
			return -1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		left.tv_sec -= t1.tv_sec - t0.tv_sec;
		left.tv_nsec -= t1.tv_nsec - t0.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_nsec += 1000000000L;
			left.tv_sec--;
		}
		if (left.tv_sec < 0)
			left.tv_sec = left.tv_nsec = 0;
	}
	if (WIFSIGNALED(status)) {
		snprintf(why, len, "crashed: signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
		return -1;
	}
	if (WEXITSTATUS(status)) {
		snprintf(why, len, "exited with status %d (a sanitizer's report above?)",
			 WEXITSTATUS(status));
		return -1;
	}
	return 0;
}

/* Run @t and print its line: 1 if it failed. */
static int run(const struct unit_test *t, int fork_each, long timeout)
{
	char why[200] = "";
	struct timespec t0, t1;
	double secs;
	int ended = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	cnt->checks = cnt->cur_failed = cnt->skipped = cnt->header = 0;
	cnt->why[0] = '\0';
	if (fork_each)
		ended = run_child(t, timeout, why, sizeof(why));
	else
		run_here(t);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (!ended && !cnt->checks && !cnt->skipped) {
		snprintf(why, sizeof(why), "asserted nothing");
		ended = -1;
	}
	if (ended) {
		cnt->failed++;
		printf("FAIL - %s: %s\n", t->name, why);
		return 1;
	}
	if (cnt->cur_failed) {
		printf("FAIL - %s: %d of %d checks failed\n", t->name, cnt->cur_failed,
		       cnt->checks);
		return 1;
	}
	if (cnt->skipped)
		printf("skip - %s: %s\n", t->name, cnt->why);
	else
		printf("ok - %s (%d check%s, %.1f s)\n", t->name, cnt->checks,
		       cnt->checks == 1 ? "" : "s", secs);
	return 0;
}

int main(int argc, char **argv)
{
	const struct unit_test **sel = NULL;
	const char **failed_names = NULL;
	size_t nsel = 0, nfailed = 0, nskipped = 0, i;
	int ret = 2, fork_each = env_long("XDP_RL_UNIT_FORK", 1) != 0;
	long timeout = env_long("XDP_RL_UNIT_TIMEOUT", 300);
	sigset_t chld;

	setvbuf(stdout, NULL, _IOLBF, 0); /* every line out before a crash */
	verbose = env_long("XDP_RL_UNIT_VERBOSE", 0) != 0;
	if (timeout)
		timeout += 2 * env_long("XDP_RL_MODEL_SECONDS", 0);
	if (load_tests())
		goto out;
	sel = calloc(ntests + 1, sizeof(*sel));
	failed_names = calloc(ntests + 1, sizeof(*failed_names));
	if (!sel || !failed_names) {
		perror("unit");
		goto out;
	}
	ret = select_tests(argc, argv, sel, &nsel, &fork_each);
	if (ret) {
		ret = ret == 1 ? 0 : 2;
		goto out;
	}
	if (fork_each) {
		cnt = mmap(NULL, sizeof(*cnt), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			   -1, 0);
		if (cnt == MAP_FAILED) {
			perror("unit: mmap");
			cnt = &local_counts;
			ret = 2;
			goto out;
		}
		memset(cnt, 0, sizeof(*cnt));
		/* SIGCHLD waits in its queue for sigtimedwait (the children unblock it). */
		sigemptyset(&chld);
		sigaddset(&chld, SIGCHLD);
		sigprocmask(SIG_BLOCK, &chld, NULL);
	}
	for (i = 0; i < nsel; i++) {
		if (run(sel[i], fork_each, timeout))
			failed_names[nfailed++] = sel[i]->name;
		else
			nskipped += cnt->skipped != 0;
		if (unit_between_tests)
			unit_between_tests();
	}
	if (nfailed) {
		printf("failed:");
		for (i = 0; i < nfailed; i++)
			printf(" %s", failed_names[i]);
		printf(" (run one alone: make unit T=%s)\n", failed_names[0]);
	}
	/* "N passed" first: tests/kernels/suite.sh takes the line that starts so. */
	printf("%zu passed, %zu failed", nsel - nfailed - nskipped, nfailed);
	if (nskipped)
		printf(", %zu skipped", nskipped);
	printf(" of %zu test%s (%d assertions, %d failed)\n", nsel, nsel == 1 ? "" : "s",
	       cnt->passed + cnt->failed, cnt->failed);
	ret = nfailed ? 1 : 0;
out:
	if (cnt != &local_counts)
		munmap(cnt, sizeof(*cnt));
	free(sel);
	free(failed_names);
	free(tests);
	return ret;
}
