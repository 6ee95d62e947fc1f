/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * fuzz.h - what the libFuzzer targets of tests/fuzz share (make fuzz).
 *
 * Each target is built with clang -fsanitize=fuzzer,address,undefined
 * against the CLI's models and bottom layer (build/fuzz), every UBSan
 * report fatal: a crash, a sanitizer report, or a FUZZ_CHECK that fails is
 * a finding, written to build/fuzz/crash-TARGET-*.
 */
#ifndef XDP_RL_FUZZ_H
#define XDP_RL_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A property every input must keep; abort (a finding) with what broke. */
#define FUZZ_CHECK(cond, ...)                                                            \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "fuzz: %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                    \
			fputc('\n', stderr);                                             \
			abort();                                                         \
		}                                                                        \
	} while (0)

/*
 * @data as a string of its own, in a buffer exactly its size and a NUL, so
 * that AddressSanitizer sees a read past it. Free it.
 */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#endif
