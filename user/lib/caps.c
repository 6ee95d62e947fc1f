// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* caps.c - capability checks with libcap, never euid == 0. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <string.h>
#include <sys/capability.h>

#include "caps.h"
#include "log.h"
#include "vec.h"

static const struct {
	unsigned int need;
	cap_value_t cap;
	const char *name;
} table[] = {
	{ NEED_BPF, CAP_BPF, "CAP_BPF" },
	{ NEED_NET_ADMIN, CAP_NET_ADMIN, "CAP_NET_ADMIN" },
	{ NEED_SYS_ADMIN, CAP_SYS_ADMIN, "CAP_SYS_ADMIN" },
	{ NEED_PERFMON, CAP_PERFMON, "CAP_PERFMON" },
};

/*
 * The names of the capabilities in @need that are not effective, into
 * @missing (empty: none): 0, or -1 if the process's cannot be read.
 */
static int caps_lacking(unsigned int need, char *missing, size_t size)
{
	cap_flag_value_t v;
	cap_t caps;
	size_t i;

	*missing = 0;
	caps = cap_get_proc();
	if (!caps)
		return -1;
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (!(need & table[i].need))
			continue;
		/* A kernel older than CAP_BPF and CAP_PERFMON grants both with CAP_SYS_ADMIN. */
		if (cap_get_flag(caps, table[i].cap, CAP_EFFECTIVE, &v) || v != CAP_SET) {
			if ((table[i].cap == CAP_BPF || table[i].cap == CAP_PERFMON) &&
			    !CAP_IS_SUPPORTED(table[i].cap) &&
			    !cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &v) && v == CAP_SET)
				continue;
			snprintf(missing + strlen(missing), size - strlen(missing), "%s%s",
				 *missing ? ", " : "", table[i].name);
		}
	}
	cap_free(caps);
	return 0;
}

int caps_check(unsigned int need, const char *what)
{
	char missing[128];

	if (caps_lacking(need, missing, sizeof(missing))) {
		log_err("%s: cannot read this process's capabilities: %m", what);
		return -1;
	}
	if (!*missing)
		return 0;
	log_err("%s: missing capabilities %s (run as root, e.g. with sudo)", what, missing);
	return -1;
}

int caps_have(unsigned int need)
{
	char missing[128];

	return !caps_lacking(need, missing, sizeof(missing)) && !*missing;
}

int open_as_caller(const char *path)
{
	static const cap_value_t dac[] = { CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER };
	cap_t saved = NULL, lowered = NULL;
	int fd, e, fsuid = -1, fsgid = -1;
	struct stat st;

	if (getuid() != 0) {
		/* Not root: whatever overrides file permissions came with the binary. */
		saved = cap_get_proc();
		lowered = saved ? cap_dup(saved) : NULL;
		if (!lowered ||
		    cap_set_flag(lowered, CAP_EFFECTIVE, sizeof(dac) / sizeof(dac[0]), dac,
				 CAP_CLEAR) ||
		    cap_set_proc(lowered)) {
			cap_free(saved);
			cap_free(lowered);
			errno = EPERM;
			return -1;
		}
		fsuid = setfsuid(getuid());
		fsgid = setfsgid(getgid());
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	e = errno;
	if (saved) {
		setfsuid(fsuid);
		setfsgid(fsgid);
		cap_set_proc(saved);
		cap_free(saved);
		cap_free(lowered);
	}
	if (fd < 0) {
		errno = e;
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

int read_all(int fd, size_t max, char **text, size_t *len)
{
	size_t cap = 0, n = 0;
	char *buf = NULL;
	ssize_t r;
	int e;

	for (;;) {
		/* Room for a byte more and the NUL. */
		if (vec_room(buf, n, cap, 2, 4096)) {
			free(buf);
			errno = ENOMEM;
			return -1;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += r;
		if (n > max) {
			free(buf);
			errno = EFBIG;
			return -1;
		}
	}
	if (r < 0) {
		e = errno;
		free(buf);
		errno = e;
		return -1;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
}

int read_as_caller(const char *path, size_t max, char **text, size_t *len)
{
	int fd = open_as_caller(path), r, e;

	if (fd < 0)
		return -1;
	r = read_all(fd, max, text, len);
	e = errno;
	close(fd);
	errno = e;
	return r;
}
