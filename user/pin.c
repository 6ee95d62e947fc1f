// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* pin.c - bpffs, network namespaces, pinned maps and the state lock. */
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
#include <bpf/bpf.h>

#include "log.h"
#include "pin.h"

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
		err("cannot return to this mount namespace: %m");
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
		err("cannot reach the outer bpffs through %s: Permission denied "
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
		err("cannot mount bpffs on /sys/fs/bpf: %m "
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
		err("cannot enter network namespace '%s': not a name (see 'ip netns list')",
		    name);
		return -1;
	}
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err("cannot enter network namespace '%s': %m (see 'ip netns list')", name);
		return -1;
	}
	if (setns(fd, CLONE_NEWNET)) {
		err("cannot enter network namespace '%s': %m", name);
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
static const char *denied_hint(int e)
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

static int root_dir(char *out, size_t len, int create)
{
	char fs[PATH_MAX];

	if (bpffs_find(fs, sizeof(fs), create))
		return -1;
	snprintf(out, len, "%s/%s", fs, XDP_RL_PIN_ROOT);
	if (create && mkdir(out, 0700) && errno != EEXIST) {
		err("cannot create %s: %m%s", out, denied_hint(errno));
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
		err("cannot create %s: %m%s", out, denied_hint(errno));
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
		err("cannot lock %s: %m%s", root, denied_hint(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;	/* released when the process exits */
}

int iface_resolve(const char *name, unsigned int *ifindex, const char *what)
{
	if (strlen(name) >= IF_NAMESIZE) {
		err("%s '%s': interface name too long (see 'ip link')", what, name);
		return -1;
	}
	*ifindex = if_nametoindex(name);
	if (!*ifindex) {
		err("%s '%s': %s (see 'ip link')", what, name,
		    errno == ENODEV || errno == ENXIO ? "No such device" : strerror(errno));
		return -1;
	}
	return 0;
}

void pin_path(char *out, size_t len, const char *dir, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

const char *const pin_names[PIN_MAX] = {
	[PIN_LINK] = XDP_RL_PIN_LINK,
	[PIN_CONFIG] = XDP_RL_MAP_CONFIG,
	[PIN_STATS] = XDP_RL_MAP_STATS,
	[PIN_SRC4] = XDP_RL_MAP_SRC4,
	[PIN_SRC6] = XDP_RL_MAP_SRC6,
	[PIN_RULES4] = XDP_RL_MAP_RULES4,
	[PIN_RULES6] = XDP_RL_MAP_RULES6,
	[PIN_RULE_HITS] = XDP_RL_MAP_RULE_HITS,
	[PIN_SHARED] = XDP_RL_MAP_SHARED,
	[PIN_AGG4] = XDP_RL_MAP_AGG4,
	[PIN_AGG6] = XDP_RL_MAP_AGG6,
	[PIN_NEWSRC] = XDP_RL_MAP_NEWSRC,
	[PIN_LOCKS] = XDP_RL_MAP_LOCKS,
};

int pin_open(const char *dir, const char *name)
{
	char path[PATH_MAX];

	pin_path(path, sizeof(path), dir, name);
	return bpf_obj_get(path);
}

static __u32 obj_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

int limiter_pinned(const struct limiter *l)
{
	int fd = pin_open(l->dir, XDP_RL_MAP_STATS), same;

	if (fd < 0)
		return 0;
	same = obj_id(fd) == obj_id(l->fd[PIN_STATS]);
	close(fd);
	return same;
}

int limiter_read_config(struct limiter *l)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(l->fd[PIN_CONFIG], &zero, &l->cfg);
}

const struct xdp_rl_live *limiter_live(const struct limiter *l)
{
	return &l->cfg.slot[l->cfg.active & 1];
}

int limiter_publish(struct limiter *l, const struct xdp_rl_live *live)
{
	struct xdp_rl_config next = l->cfg;
	__u32 zero = 0, spare = !(l->cfg.active & 1);

	/* 1: fill the slot the datapath does not read. */
	next.slot[spare] = *live;
	if (bpf_map_update_elem(l->fd[PIN_CONFIG], &zero, &next, BPF_EXIST))
		return -1;
	/* 2: flip to it; only the byte holding `active` changes. */
	next.active = spare;
	if (bpf_map_update_elem(l->fd[PIN_CONFIG], &zero, &next, BPF_EXIST))
		return -1;
	l->cfg = next;
	return 0;
}

int limiter_here(unsigned int ifindex)
{
	char ns[PATH_MAX], dir[PATH_MAX + 16];
	struct xdp_rl_config cfg;
	__u32 zero = 0;
	int fd, here = 1;

	if (state_dir(ns, sizeof(ns), 0))
		return 1;
	snprintf(dir, sizeof(dir), "%s/%u", ns, ifindex);
	fd = pin_open(dir, XDP_RL_MAP_CONFIG);
	if (fd < 0)
		return 1;	/* let the caller say why */
	if (!bpf_map_lookup_elem(fd, &zero, &cfg) && cfg.fixed.netns_cookie)
		here = cfg.fixed.netns_cookie == netns_cookie();
	close(fd);
	return here;
}

void limiter_close(struct limiter *l)
{
	int i;

	for (i = 0; i < PIN_MAX; i++) {
		if (l->fd[i] >= 0)
			close(l->fd[i]);
		l->fd[i] = -1;
	}
}

int limiter_open(const char *ifname, struct limiter *l, const char *what)
{
	unsigned int ifindex;

	if (iface_resolve(ifname, &ifindex, what))
		return -1;
	return limiter_open_index(ifindex, ifname, l, what);
}

int limiter_open_index(unsigned int ifindex, const char *ifname,
		       struct limiter *l, const char *what)
{
	char ns[PATH_MAX];
	int i;

	memset(l, 0, sizeof(*l));
	for (i = 0; i < PIN_MAX; i++)
		l->fd[i] = -1;
	l->ifindex = ifindex;
	snprintf(l->ifname, sizeof(l->ifname), "%s", ifname);
	if (state_dir(ns, sizeof(ns), 0)) {
		if (errno != ENOENT)
			return -1;
		/* No bpffs anywhere: nothing was ever loaded. */
		ns[0] = '\0';
	}
	snprintf(l->dir, sizeof(l->dir), "%s/%u", ns, l->ifindex);

	l->fd[PIN_CONFIG] = *ns ? pin_open(l->dir, XDP_RL_MAP_CONFIG) : -1;
	if (!*ns)
		errno = ENOENT;
	if (l->fd[PIN_CONFIG] < 0) {
		if (errno == ENOENT)
			err("%s '%s': xdp-rl is not loaded there (see 'xdp-rl status', "
			    "or 'xdp-rl load %s')", what, ifname, ifname);
		else
			err("%s '%s': cannot open %s/%s: %m%s", what, ifname, l->dir,
			    XDP_RL_MAP_CONFIG, denied_hint(errno));
		return -1;
	}
	if (!limiter_read_config(l) && l->cfg.fixed.netns_cookie &&
	    l->cfg.fixed.netns_cookie != netns_cookie()) {
		/*
		 * Left by a namespace that was deleted, whose inode this one
		 * reuses: not this namespace's limiter. The next `load` or
		 * `unload` removes it (its link died with its interface).
		 */
		limiter_close(l);
		err("%s '%s': xdp-rl is not loaded there (see 'xdp-rl status', "
		    "or 'xdp-rl load %s')", what, ifname, ifname);
		errno = ENOENT;
		return -1;
	}
	for (i = 0; i < PIN_MAX; i++) {
		if (i != PIN_CONFIG)
			l->fd[i] = pin_open(l->dir, pin_names[i]);
		if (l->fd[i] < 0)
			break;
	}
	if (i < PIN_MAX || limiter_read_config(l)) {
		err("%s '%s': the pinned state in %s is incomplete: %m "
		    "(run 'xdp-rl unload %s' and load again)", what, ifname, l->dir, ifname);
		limiter_close(l);
		return -1;
	}
	return 0;
}

int limiter_table(const struct limiter *l, int id, struct table *t, const char *what)
{
	int v6 = id == PIN_SRC6 || id == PIN_AGG6;

	if (table_map(t, l->fd[id], v6, l->cfg.fixed.max_layers, l->cfg.fixed.seed)) {
		err("%s '%s': cannot map its table %s: %m%s", what, l->ifname, pin_names[id],
		    errno == EPROTO ? " (loaded by another version of xdp-rl? 'xdp-rl "
				      "load --force' replaces it)" : "");
		return -1;
	}
	return 0;
}

int pins_remove(const char *dir)
{
	char path[PATH_MAX], *slash;
	int ret = 0, i;

	for (i = 0; i < PIN_MAX; i++) {
		pin_path(path, sizeof(path), dir, pin_names[i]);
		if (unlink(path) && errno != ENOENT)
			ret = -1;
	}
	if (rmdir(dir) && errno != ENOENT)
		ret = -1;
	/* The netns folder goes when its last limiter does. */
	snprintf(path, sizeof(path), "%s", dir);
	slash = strrchr(path, '/');
	if (slash) {
		*slash = '\0';
		rmdir(path);
	}
	return ret;
}

/* A pinned link whose interface went away reports ifindex 0. */
static int link_defunct(const char *dir)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);
	int fd, defunct;

	fd = pin_open(dir, XDP_RL_PIN_LINK);
	if (fd < 0)
		return errno == ENOENT;
	memset(&info, 0, sizeof(info));
	defunct = !bpf_obj_get_info_by_fd(fd, &info, &len) && !info.xdp.ifindex;
	close(fd);
	return defunct;
}

void pins_gc(void)
{
	char root[PATH_MAX], ns[PATH_MAX + 300], dir[PATH_MAX * 2];
	struct dirent *a, *b;
	DIR *r, *n;

	if (root_dir(root, sizeof(root), 0))
		return;
	r = opendir(root);
	if (!r)
		return;
	while ((a = readdir(r))) {
		if (a->d_name[0] == '.')
			continue;
		snprintf(ns, sizeof(ns), "%s/%s", root, a->d_name);
		n = opendir(ns);
		if (!n)
			continue;
		while ((b = readdir(n))) {
			if (b->d_name[0] == '.')
				continue;
			snprintf(dir, sizeof(dir), "%s/%s", ns, b->d_name);
			if (link_defunct(dir))
				pins_remove(dir);
		}
		closedir(n);
		rmdir(ns);	/* only succeeds if now empty */
	}
	closedir(r);
}
