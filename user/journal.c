// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* journal.c - the journal of an apply in flight (see journal.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "bpffs.h"
#include "caps.h"
#include "fault.h"
#include "journal.h"
#include "log.h"

#define JOURNAL_MAX (32 << 20)

void journal_path(char *out, size_t len)
{
	unsigned long long cookie = netns_cookie();
	struct stat st;

	if (cookie) {
		snprintf(out, len, "%s/apply-%llu.conf", JOURNAL_DIR, cookie);
		return;
	}
	/* A kernel without netns cookies: the namespace's inode. */
	snprintf(out, len, "%s/apply-ino%lu.conf", JOURNAL_DIR,
		 stat("/proc/self/ns/net", &st) ? 0UL : (unsigned long)st.st_ino);
}

int journal_exists(void)
{
	char path[PATH_MAX];
	struct stat st;

	journal_path(path, sizeof(path));
	return !lstat(path, &st);
}

/* Make what was renamed or removed in the journal's folder durable. */
static int sync_folder(void)
{
	int fd = open(JOURNAL_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

	if (fd < 0)
		return -1;
	r = fsync(fd);
	close(fd);
	return r;
}

/*
 * RUN_DIR, made if @create: root's, and nobody else may write to it (so
 * nobody else can move the journal's folder away). 0, or -1 (errno ENOENT,
 * silently, if it is not there and not to be made).
 */
static int run_dir(int create)
{
	struct stat st;

	if (create && mkdir(RUN_DIR, 0755) && errno != EEXIST) {
		log_err("cannot create %s: %m", RUN_DIR);
		return -1;
	}
	if (lstat(RUN_DIR, &st)) {
		if (errno != ENOENT || create)
			log_err("cannot use %s: %m", RUN_DIR);
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 0022)) {
		log_err("refusing %s for xdp-rl's journal: it must be a folder of root's that "
			"nobody else may write to, and it is uid %u's, mode %04o (fix it with "
			"'chown root: %s; chmod go-w %s')",
			RUN_DIR, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), RUN_DIR,
			RUN_DIR);
		errno = EPERM;
		return -1;
	}
	return 0;
}

int journal_write(const char *text, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	size_t off = 0;
	ssize_t n;
	int fd;

	if (run_dir(1) || state_folder(JOURNAL_DIR, 1))
		return -1;
	journal_path(path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	/* A temporary file left by a kill is no journal: never read, replaced here. */
	if (unlink(tmp) && errno != ENOENT) {
		log_err("cannot write the journal %s: %m", tmp);
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		log_err("cannot write the journal %s: %m", tmp);
		return -1;
	}
	while (off < len) {
		n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += n;
	}
	if (off < len || fsync(fd)) {
		log_err("cannot write the journal %s: %m", tmp);
		close(fd);
		unlink(tmp);
		return -1;
	}
	close(fd);
	fault_point("journal: written");
	if (rename(tmp, path) || sync_folder()) {
		log_err("cannot write the journal %s: %m", path);
		unlink(tmp);
		return -1;
	}
	fault_point("journal: committed");
	return 0;
}

int journal_read(char **text, size_t *len)
{
	char path[PATH_MAX];
	int fd, r;

	if (run_dir(0) || state_folder(JOURNAL_DIR, 0))
		return errno == ENOENT ? 0 : -1;
	journal_path(path, sizeof(path));
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		log_err("cannot read the journal %s: %m", path);
		return -1;
	}
	r = read_all(fd, JOURNAL_MAX, text, len);
	if (r)
		log_err("cannot read the journal %s: %m", path);
	close(fd);
	return r ? -1 : 1;
}

int journal_remove(void)
{
	char path[PATH_MAX];

	journal_path(path, sizeof(path));
	if (unlink(path)) {
		if (errno == ENOENT)
			return 0;
		log_err("cannot remove the journal %s: %m", path);
		return -1;
	}
	fault_point("journal: removed");
	return 0;
}
