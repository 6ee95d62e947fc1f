// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* bpffs.c - bpffs, network namespaces, the state folder and its lock (see bpffs.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "log.h"
#include "bpffs.h"
#include "proc.h"
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

/* Our ancestors, nearest first, ending with PID 1 if we can see it. */
static int ancestors(pid_t *out, int max)
{
	pid_t pid = getpid();
	int n = 0;

	while (n < max && pid > 1 && (pid = proc_parent(pid)) > 0)
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
			"root namespace)",
			denied);
		errno = EACCES;
		return -1;
	}
	if (!create) {
		errno = ENOENT;
		return -1;
	}
	if (bpffs_mount() || bpffs_search(out, len)) {
		log_err("cannot mount bpffs on /sys/fs/bpf: %m "
			"(mount it with 'mount -t bpf -o mode=0700 bpf /sys/fs/bpf')");
		return -1;
	}
	return 0;
}

/* "ip -n NETNS link" and "netns NETNS" once entered. */
static char ip_link[NAME_MAX + 16] = "ip link";
static char ns_label[NAME_MAX + 8];

const char *netns_ip_link(void)
{
	return ip_link;
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
	snprintf(ip_link, sizeof(ip_link), "ip -n %s link", name);
	snprintf(ns_label, sizeof(ns_label), "netns %s", name);
	return 0;
}

/*
 * What to do about EACCES on our pins: they are root's, mode 0700, so a
 * process of another user needs CAP_DAC_OVERRIDE to reach them.
 */
const char *state_denied_hint(int e)
{
	return e == EACCES ? " (xdp-rl's pinned state is root's alone, mode 0700: run as "
			     "root, or with CAP_DAC_OVERRIDE)" :
			     "";
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

/*
 * Whether @path, a folder of xdp-rl's state, is safe to keep state in: a
 * folder (not a symlink) of root's, mode 0700, so that no other user can
 * add, move or replace anything in it, or hold its lock. 0, or -1 after
 * saying why and what to do.
 */
static int state_dir_safe(const char *path)
{
	struct stat st;

	if (lstat(path, &st)) {
		log_err("cannot use %s: %m%s", path, state_denied_hint(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		log_err("refusing %s as xdp-rl's state folder: it is not a folder%s (remove it: "
			"'rm %s')",
			path, S_ISLNK(st.st_mode) ? " but a symlink" : "", path);
		errno = EPERM;
		return -1;
	}
	if (st.st_uid != 0 || (st.st_mode & 07777) != 0700) {
		log_err("refusing %s as xdp-rl's state folder: it must be root's and mode 0700, "
			"and it is uid %u's, mode %04o (another user may have made it: remove it "
			"with 'rm -r %s', or fix it with 'chown root: %s; chmod 0700 %s')",
			path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), path, path,
			path);
		errno = EPERM;
		return -1;
	}
	return 0;
}

/*
 * Make @path, a state folder, root's and 0700. A capable user other than
 * root makes it as their own: give it to root (CAP_CHOWN), or take it back.
 */
static int state_dir_make(const char *path)
{
	int r = state_mkdir(path);

	if (!r || (r == -1 && errno == EEXIST))
		return 0;
	if (r == -2)
		return -1;
	/* Denied: it may well exist, in a folder this user may not look into. */
	log_err("cannot %s %s: %m%s", errno == EACCES ? "reach" : "create", path,
		state_denied_hint(errno));
	return -1;
}

int state_mkdir(const char *path)
{
	int e;

	if (mkdir(path, 0700))
		return -1;
	if (state_own(path)) {
		e = errno;
		rmdir(path);
		errno = e;
		return -2;
	}
	chmod(path, 0700); /* whatever the umask left */
	return 0;
}

int state_own(const char *path)
{
	struct stat st;

	if (lstat(path, &st) || st.st_uid == 0)
		return 0;
	if (!lchown(path, 0, 0))
		return 0;
	log_err("cannot make %s root's: %m (xdp-rl's state is root's alone: a user other "
		"than root needs CAP_CHOWN too, or run it as root)",
		path);
	return -1;
}

/*
 * The bpffs itself: if others may write to it and it has no sticky bit,
 * they could move xdp-rl's folder away or put their own in its place.
 */
static int bpffs_safe(const char *fs)
{
	struct stat st;

	if (stat(fs, &st))
		return 0; /* said by whoever uses it next */
	if ((st.st_mode & 0022) && !(st.st_mode & S_ISVTX)) {
		log_err("refusing the bpffs at %s: other users may write to it (mode %04o) and "
			"it has no sticky bit, so they could replace xdp-rl's state (remount it: "
			"'mount -o remount,mode=0700 %s')",
			fs, (unsigned)(st.st_mode & 07777), fs);
		errno = EPERM;
		return -1;
	}
	return 0;
}

int root_dir(char *out, size_t len, int create)
{
	char fs[PATH_MAX];
	struct stat st;

	if (bpffs_find(fs, sizeof(fs), create) || bpffs_safe(fs))
		return -1;
	snprintf(out, len, "%s/%s", fs, XDP_RL_PIN_ROOT);
	if (create && state_dir_make(out))
		return -1;
	if (!create && lstat(out, &st) && errno == ENOENT)
		return -1; /* nothing was ever loaded: errno ENOENT */
	return state_dir_safe(out);
}

int state_dir(char *out, size_t len, int create)
{
	char root[PATH_MAX];

	if (root_dir(root, sizeof(root), create))
		return -1;
	snprintf(out, len, "%s/%lu", root, (unsigned long)ns_inode("/proc/self/ns/net"));
	if (create && state_dir_make(out))
		return -1;
	return 0;
}

int state_folder(const char *path, int create)
{
	struct stat st;

	if (create && state_dir_make(path))
		return -1;
	if (!create && lstat(path, &st) && errno == ENOENT)
		return -1;
	return state_dir_safe(path);
}

/* How long to wait for the lock before giving up (XDP_RL_LOCK_WAIT, seconds). */
#define LOCK_WAIT_S 30

/* The process holding a flock on the file @st is, from /proc/locks: its pid, or 0. */
static pid_t lock_holder(const struct stat *st)
{
	unsigned int maj, min;
	unsigned long ino;
	char line[256], kind[16];
	pid_t pid, found = 0;
	FILE *f = fopen("/proc/locks", "re");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		/* "1: FLOCK  ADVISORY  WRITE 1234 00:2a:5678 0 EOF" */
		if (sscanf(line, "%*d: %15s %*s %*s %d %x:%x:%lu", kind, &pid, &maj, &min, &ino) ==
			    5 &&
		    !strcmp(kind, "FLOCK") && ino == st->st_ino && maj == major(st->st_dev) &&
		    min == minor(st->st_dev) && pid != getpid())
			found = pid;
	}
	fclose(f);
	return found;
}

/* "pid 1234 (xdp-rl set eth0 --limit 5)", as far as /proc tells. */
static void describe_pid(pid_t pid, char *buf, size_t len)
{
	char path[64], cmd[160] = "";
	size_t n = 0, i;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	f = fopen(path, "re");
	if (f) {
		n = fread(cmd, 1, sizeof(cmd) - 1, f);
		fclose(f);
	}
	for (i = 0; i + 1 < n; i++)
		if (!cmd[i])
			cmd[i] = ' ';
	cmd[n] = '\0';
	if (*cmd)
		snprintf(buf, len, "pid %d (%.120s)", pid, cmd);
	else
		snprintf(buf, len, "pid %d", pid);
}

/*
 * The lock this process holds on its namespace's folder (state_lock), and
 * that folder: removed when the lock is let go if nothing is left in it
 * (the namespace's last limiter went), while still held, so that no other
 * command is then using it.
 */
static int held_fd = -1;
static char held_dir[PATH_MAX];

static void let_go(void)
{
	if (held_fd < 0)
		return;
	rmdir(held_dir); /* only if empty */
	close(held_fd);
	held_fd = -1;
}

/* "netns web" after -n web, else "this network namespace". */
const char *netns_label(void)
{
	return *ns_label ? ns_label : "this network namespace";
}

int folder_lock(const char *dir, int nowait, const char *whose)
{
	const char *env = getenv("XDP_RL_LOCK_WAIT");
	long wait_ms = (env && atoi(env) >= 0 ? atoi(env) : LOCK_WAIT_S) * 1000L, waited = 0;
	struct stat st, now;
	char who[200];
	int fd, tries = 0;
	pid_t holder;

again:
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		/* Removed by the holder before us as it let go: make it again. */
		else if (errno == ENOENT && !nowait && tries++ < 100 && !state_folder(dir, 1))
			goto again;
		return -1;
	}
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		if (nowait && errno == EWOULDBLOCK) {
			close(fd);
			errno = EWOULDBLOCK;
			return -1;
		}
		if (errno != EWOULDBLOCK || waited >= wait_ms) {
			if (errno == EWOULDBLOCK) {
				holder = lock_holder(&st);
				describe_pid(holder, who, sizeof(who));
				log_err("cannot lock the limiters of %s (%s): held for %lds by %s (is "
					"it stuck? end it, or wait and try again)",
					whose, dir, waited / 1000,
					holder ? who : "another process");
				errno = EWOULDBLOCK;
			} else {
				log_err("cannot lock %s: %m", dir);
			}
			close(fd);
			return -1;
		}
		if (waited == 1000) {
			holder = lock_holder(&st);
			describe_pid(holder, who, sizeof(who));
			log_warn("waiting for the lock on the limiters of %s (%s), held by %s",
				 whose, dir, holder ? who : "another process");
		}
		usleep(50000);
		waited += 50;
	}
	/*
	 * Its holder may have removed the folder (its last limiter went) before
	 * letting go: a lock on a folder no longer there locks nothing. Take
	 * the one there now, if any.
	 */
	if (lstat(dir, &now) || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
		close(fd);
		if (!nowait && tries++ < 100 && !state_folder(dir, 1))
			goto again;
		errno = ENOENT;
		return -1;
	}
	return fd;
}

int state_lock(int nowait)
{
	char ns[PATH_MAX];
	int fd;

	/* A command that only reads (@nowait) makes nothing: no folder, nothing loaded here. */
	if (state_dir(ns, sizeof(ns), !nowait))
		return -1;
	fd = folder_lock(ns, nowait, netns_label());
	if (fd < 0) {
		if (errno != EWOULDBLOCK && errno != ENOENT)
			log_err("cannot lock %s: %m%s", ns, state_denied_hint(errno));
		return -1;
	}
	if (held_fd < 0) {
		static int registered;

		if (!registered++)
			atexit(let_go);
		held_fd = fd;
		snprintf(held_dir, sizeof(held_dir), "%s", ns);
	}
	return fd; /* until state_unlock, or the process exits */
}

void state_unlock(int fd)
{
	if (fd >= 0 && fd == held_fd)
		let_go();
	else if (fd >= 0)
		close(fd);
}
