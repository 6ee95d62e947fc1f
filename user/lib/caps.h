/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* caps.h - name the capabilities a command needs and the caller lacks. */
#ifndef XDP_RL_CAPS_H
#define XDP_RL_CAPS_H

#include <stddef.h>

enum {
	NEED_BPF = 1 << 0,	 /* load programs, create and read maps */
	NEED_NET_ADMIN = 1 << 1, /* attach to an interface */
	NEED_SYS_ADMIN = 1 << 2, /* enter a netns, reach or mount bpffs */
	/*
	 * Load the XDP program: the verifier lets a program do arithmetic on
	 * pointers to map values (the source tables' slots) only with
	 * CAP_PERFMON beside CAP_BPF.
	 */
	NEED_PERFMON = 1 << 3,
};

/* 0 if every capability in @need is effective; else print which are not. */
int caps_check(unsigned int need, const char *what);
/* Whether every capability in @need is effective, saying nothing. */
int caps_have(unsigned int need);

/*
 * Open a file a user named (such as --rules FILE) for reading with that
 * user's own rights: a binary given CAP_DAC_OVERRIDE by setcap, run by
 * another user, must not read for them what they could not read themselves
 * (and print it in an error). Anything but a regular file is refused before
 * it is read: a FIFO would block for ever. Returns an fd, or -1 with errno
 * (EINVAL: not a regular file).
 */
int open_as_caller(const char *path);

/*
 * The whole of the file @fd reads, at most @max bytes: 0, with the text in
 * *text (NUL-terminated, for the caller to free) and its length in *len;
 * or -1 with errno (EFBIG: longer than @max).
 */
int read_all(int fd, size_t max, char **text, size_t *len);
/* read_all of the file @path a user named, opened by open_as_caller. */
int read_as_caller(const char *path, size_t max, char **text, size_t *len);

#endif
