// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* bpffs.c - bpffs, network namespaces, the state folder and its lock (see bpffs.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "log.h"
#include "bpffs.h"
#include "xdp_rl.h"

/*
 * Pins must live in the bpffs of the outer mount namespace: `ip netns exec`
 * gives its command a new mount namespace with a fresh /sys and no
 * /sys/fs/bpf, and a bpffs mounted there would vanish with it (each bpffs
 * mount is a new, empty instance). So after our own /sys/fs/bpf we look at
 * our ancestors' (the shell that ran `ip netns exec`), through
 * /proc/PID/root, up to PID 1.
 */
#define MAX_ANCESTORS 64

static int is_bpffs(const char *path)
{
	struct statfs st;

	return !statfs(path, &st) && st.f_type == BPF_FS_MAGIC;
}

static ino_t ns_inode(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : st.st_ino;
}

static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	int ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	/* pid (comm) state ppid: comm may hold spaces and parentheses. */
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 1, " %*c %d", &ppid);
	fclose(f);
	return ppid;
}

/* Our ancestors, nearest first, ending with PID 1 if we can see it. */
static int ancestors(pid_t *out, int max)
{
	pid_t pid = getpid();
	int n = 0;

	while (n < max && pid > 1 && (pid = parent_of(pid)) > 0)
		out[n++] = pid;
	return n;
}

/*
 * Mount bpffs on /sys/fs/bpf in the outermost mount namespace we can enter:
 * ours if no ancestor's is different and reachable.
 */
static int bpffs_mount(void)
{
	char path[64];
	pid_t pids[MAX_ANCESTORS];
	int n = ancestors(pids, MAX_ANCESTORS), self = -1, outer = -1, ret = -1;
	ino_t mine = ns_inode("/proc/self/ns/mnt"), ino;

	while (n-- > 0) {
		snprintf(path, sizeof(path), "/proc/%d/ns/mnt", pids[n]);
		ino = ns_inode(path);
		if (!ino)
			continue;
		if (ino == mine)
			break;
		outer = open(path, O_RDONLY | O_CLOEXEC);
		break;
	}
	if (outer < 0)
		return mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700");

	self = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (self < 0 || setns(outer, CLONE_NEWNS))
		goto out;
	ret = mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700");
	if (setns(self, CLONE_NEWNS)) {
		log_err("cannot return to this mount namespace: %m");
		ret = -1;
	}
out:
	if (self >= 0)
		close(self);
	close(outer);
	return ret;
}

/* A bpffs we could not look into; errno is EACCES after bpffs_search(). */
static char denied[64];

static int bpffs_search(char *out, size_t len)
{
	pid_t pids[MAX_ANCESTORS];
	int n, i;

	denied[0] = '\0';
	if (is_bpffs("/sys/fs/bpf")) {
		snprintf(out, len, "/sys/fs/bpf");
		return 0;
	}
	n = ancestors(pids, MAX_ANCESTORS);
	for (i = 0; i < n; i++) {
		snprintf(out, len, "/proc/%d/root/sys/fs/bpf", pids[i]);
		if (is_bpffs(out))
			return 0;
		/*
		 * An ancestor we may not look into may hold the bpffs we need. PID 1
		 * is the exception: sandboxes hide it even from root, and when it
		 * is the only one, mounting bpffs is the answer, not an error.
		 */
		if ((errno == EACCES || errno == EPERM) && !denied[0] && pids[i] != 1)
			snprintf(denied, sizeof(denied), "%s", out);
	}
	errno = denied[0] ? EACCES : ENOENT;
	return -1;
}

static int bpffs_find(char *out, size_t len, int create)
{
	if (!bpffs_search(out, len))
		return 0;
	if (errno == EACCES) {
		/* Reaching another process's root needs ptrace access to it. */
		log_err("cannot reach the outer bpffs through %s: Permission denied "
		    "(that needs CAP_SYS_PTRACE; or run 'xdp-rl -n NETNS ...' from the "
		    "root namespace)", denied);
		errno = EACCES;
		return -1;
	}
	if (!create) {
		errno = ENOENT;
		return -1;
	}
	if (bpffs_mount() || bpffs_search(out, len)) {
		log_err("cannot mount bpffs on /sys/fs/bpf: %m "
		    "(mount it with 'mount -t bpf bpf /sys/fs/bpf')");
		return -1;
	}
	return 0;
}

int netns_enter(const char *name)
{
	char path[PATH_MAX];
	int fd;

	if (strchr(name, '/') || !*name) {
		log_err("cannot enter network namespace '%s': not a name (see 'ip netns list')",
		    name);
		return -1;
	}
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		log_err("cannot enter network namespace '%s': %m (see 'ip netns list')", name);
		return -1;
	}
	if (setns(fd, CLONE_NEWNET)) {
		log_err("cannot enter network namespace '%s': %m", name);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * What to do about EACCES on our pins: they are root's, mode 0700, so a
 * process of another user needs CAP_DAC_OVERRIDE to reach them.
 */
const char *state_denied_hint(int e)
{
	return e == EACCES ? " (xdp-rl's pinned state is root's alone, mode 0700: run as "
			     "root, or with CAP_DAC_OVERRIDE)" : "";
}

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

__u64 netns_cookie(void)
{
	socklen_t len = sizeof(__u64);
	__u64 cookie = 0;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len))
		cookie = 0;
	close(fd);
	return cookie;
}

int root_dir(char *out, size_t len, int create)
{
	char fs[PATH_MAX];

	if (bpffs_find(fs, sizeof(fs), create))
		return -1;
	snprintf(out, len, "%s/%s", fs, XDP_RL_PIN_ROOT);
	if (create && mkdir(out, 0700) && errno != EEXIST) {
		log_err("cannot create %s: %m%s", out, state_denied_hint(errno));
		return -1;
	}
	return 0;
}

int state_dir(char *out, size_t len, int create)
{
	char root[PATH_MAX];

	if (root_dir(root, sizeof(root), create))
		return -1;
	snprintf(out, len, "%s/%lu", root,
		 (unsigned long)ns_inode("/proc/self/ns/net"));
	if (create && mkdir(out, 0700) && errno != EEXIST) {
		log_err("cannot create %s: %m%s", out, state_denied_hint(errno));
		return -1;
	}
	return 0;
}

int state_lock(void)
{
	char root[PATH_MAX];
	int fd;

	if (root_dir(root, sizeof(root), 1))
		return -1;
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX)) {
		log_err("cannot lock %s: %m%s", root, state_denied_hint(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;	/* released when the process exits */
}
