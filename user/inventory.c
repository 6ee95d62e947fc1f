// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* inventory.c - every limiter pinned on this host (see inventory.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

#include "bpffs.h"
#include "inventory.h"
#include "log.h"
#include "vec.h"

const char *ns_state_name(enum ns_state s)
{
	return s == NS_HERE ? "here" : s == NS_OTHER ? "other" : "gone";
}

/* The memlock of the BPF object @fd, from its fdinfo: the kernel's own accounting. */
static __u64 fd_memlock(int fd)
{
	char path[64], line[128];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

__u64 maps_memory(const int *fd, int *maps)
{
	__u32 zero = 0, id;
	__u64 sum = 0;
	int i, inner;

	if (maps)
		*maps = 0;
	for (i = PIN_FIRST_MAP; i < PIN_MAX; i++) {
		if (fd[i] < 0)
			continue;
		sum += fd_memlock(fd[i]);
		if (maps)
			(*maps)++;
	}
	/* The lists' trie is held by `lists`, not pinned: its memory counts too. */
	if (fd[PIN_LISTS] >= 0 && !bpf_map_lookup_elem(fd[PIN_LISTS], &zero, &id)) {
		inner = bpf_map_get_fd_by_id(id);
		if (inner >= 0) {
			sum += fd_memlock(inner);
			close(inner);
		}
	}
	return sum;
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* ---- live namespaces ---------------------------------------------------- */

struct ns_ref {
	unsigned long ino;
	__u64 cookie; /* 0: not known */
	char path[64];
	char name[NAME_MAX + 1];
};

struct ns_list {
	struct ns_ref *v;
	size_t n, cap;
	dev_t nsfs; /* the device of namespace files (nsfs) */
};

static void ns_add(struct ns_list *l, const char *path, const char *name)
{
	struct stat st;
	size_t i;

	if (stat(path, &st) || st.st_dev != l->nsfs)
		return;
	for (i = 0; i < l->n; i++) {
		if (l->v[i].ino == st.st_ino) {
			if (name && !l->v[i].name[0])
				snprintf(l->v[i].name, sizeof(l->v[i].name), "%s", name);
			return;
		}
	}
	if (vec_room(l->v, l->n, l->cap, 1, 64))
		return;
	memset(&l->v[l->n], 0, sizeof(l->v[l->n]));
	l->v[l->n].ino = st.st_ino;
	snprintf(l->v[l->n].path, sizeof(l->v[l->n].path), "%s", path);
	if (name)
		snprintf(l->v[l->n].name, sizeof(l->v[l->n].name), "%s", name);
	l->n++;
}

/* The namespaces a process holds open: its fds that are "net:[ino]". */
static void ns_add_fds(struct ns_list *l, const char *pid)
{
	char dir[64], path[64 + NAME_MAX], link[64];
	struct dirent *d;
	ssize_t n;
	DIR *fds;

	snprintf(dir, sizeof(dir), "/proc/%s/fd", pid);
	fds = opendir(dir);
	if (!fds)
		return;
	while ((d = readdir(fds))) {
		if (!all_digits(d->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 5)
			continue;
		link[n] = '\0';
		if (!strncmp(link, "net:[", 5))
			ns_add(l, path, NULL);
	}
	closedir(fds);
}

/* This namespace first, then every other one the kernel shows, each with its cookie. */
static int ns_scan(struct ns_list *l)
{
	char path[64 + NAME_MAX];
	struct dirent *d, *t;
	struct stat st;
	DIR *dir, *tasks;
	int self;
	size_t i;

	memset(l, 0, sizeof(*l));
	if (stat("/proc/self/ns/net", &st))
		return -1;
	l->nsfs = st.st_dev;
	ns_add(l, "/proc/self/ns/net", NULL);
	if (l->n)
		l->v[0].cookie = netns_cookie();
	dir = opendir("/run/netns");
	while (dir && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/run/netns/%s", d->d_name);
		ns_add(l, path, d->d_name);
	}
	if (dir)
		closedir(dir);
	dir = opendir("/proc");
	while (dir && (d = readdir(dir))) {
		if (!all_digits(d->d_name))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/ns/net", d->d_name);
		ns_add(l, path, NULL);
		/* A thread may have entered a namespace of its own (setns). */
		snprintf(path, sizeof(path), "/proc/%s/task", d->d_name);
		tasks = opendir(path);
		while (tasks && (t = readdir(tasks))) {
			if (!all_digits(t->d_name) || !strcmp(t->d_name, d->d_name))
				continue;
			snprintf(path, sizeof(path), "/proc/%s/task/%s/ns/net", d->d_name,
				 t->d_name);
			ns_add(l, path, NULL);
		}
		if (tasks)
			closedir(tasks);
		ns_add_fds(l, d->d_name);
	}
	if (dir)
		closedir(dir);

	/* Each one's cookie: entered, asked, and back (CAP_SYS_ADMIN; else unknown). */
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	for (i = 1; self >= 0 && i < l->n; i++) {
		int fd = open(l->v[i].path, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			continue;
		if (!setns(fd, CLONE_NEWNET)) {
			l->v[i].cookie = netns_cookie();
			if (setns(self, CLONE_NEWNET)) {
				log_err("cannot return to this network namespace: %m");
				close(fd);
				close(self);
				return -1;
			}
		}
		close(fd);
	}
	if (self >= 0)
		close(self);
	return 0;
}

/* Where @p's namespace is: here, another one still there, or gone. */
static void ns_judge(const struct ns_list *l, struct pinned *p)
{
	__u64 cookie = p->has_config ? p->cfg.fixed.netns_cookie : 0;
	size_t i;

	p->ns = NS_GONE;
	for (i = 0; i < l->n; i++) {
		if (l->v[i].ino != p->netns)
			continue;
		/* The same inode, but a namespace made later: the limiter's is gone. */
		if (cookie && l->v[i].cookie && cookie != l->v[i].cookie)
			return;
		p->ns = i == 0 ? NS_HERE : NS_OTHER;
		snprintf(p->ns_name, sizeof(p->ns_name), "%s", l->v[i].name);
		return;
	}
}

/* ---- limiters --------------------------------------------------------------- */

void pinned_link(struct pinned *p)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);
	int fd = pin_open(p->dir, pin_names[PIN_LINK]);

	p->attached = 0;
	p->link_ifindex = p->link_id = p->prog_id = 0;
	if (fd < 0) {
		/* Shared through libxdp's dispatcher: no link of its own. */
		if (!limiter_attach_state(p->dir, &p->prog_id, &p->link_ifindex))
			p->attached = p->link_ifindex != 0;
		else
			p->attached = 1; /* another namespace's: judged by it (but see below) */
		return;
	}
	memset(&info, 0, sizeof(info));
	if (!bpf_obj_get_info_by_fd(fd, &info, &len)) {
		p->link_id = info.id;
		p->prog_id = info.prog_id;
		p->link_ifindex = info.xdp.ifindex;
		p->attached = info.xdp.ifindex != 0;
	}
	close(fd);
}

static void pinned_read(struct pinned *p)
{
	int fd[PIN_MAX], i;
	__u32 zero = 0;

	for (i = 0; i < PIN_MAX; i++)
		fd[i] = i >= PIN_FIRST_MAP ? pin_open(p->dir, pin_names[i]) : -1;
	p->has_config = fd[PIN_CONFIG] >= 0 && !bpf_map_lookup_elem(fd[PIN_CONFIG], &zero, &p->cfg);
	p->memory = maps_memory(fd, &p->maps);
	for (i = 0; i < PIN_MAX; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	pinned_link(p);
}

int pinned_foreach(pinned_fn fn, void *ctx)
{
	char root[PATH_MAX], ns[PATH_MAX + NAME_MAX + 2];
	struct dirent *a, *b;
	struct ns_list live;
	struct pinned *p;
	DIR *r, *n;
	int ret = 0;

	if (root_dir(root, sizeof(root), 0))
		return errno == ENOENT ? 0 : -1;
	r = opendir(root);
	if (!r) {
		log_err("cannot list %s: %m%s", root, state_denied_hint(errno));
		return -1;
	}
	p = malloc(sizeof(*p));
	if (!p || ns_scan(&live)) {
		log_err("cannot list the network namespaces: %m");
		free(p);
		closedir(r);
		return -1;
	}
	while (!ret && (a = readdir(r))) {
		if (!all_digits(a->d_name)) /* netns folders are inode numbers */
			continue;
		snprintf(ns, sizeof(ns), "%s/%s", root, a->d_name);
		n = opendir(ns);
		if (!n)
			continue;
		while (!ret && (b = readdir(n))) {
			if (!all_digits(b->d_name))
				continue;
			memset(p, 0, sizeof(*p));
			snprintf(p->dir, sizeof(p->dir), "%s/%s", ns, b->d_name);
			p->netns = strtoul(a->d_name, NULL, 10);
			p->ifindex = strtoul(b->d_name, NULL, 10);
			pinned_read(p);
			ns_judge(&live, p);
			/* Shared, in a deleted namespace: its interface, and the dispatcher, went with it. */
			if (p->ns == NS_GONE && p->has_config &&
			    p->cfg.fixed.attach == XDP_RL_ATTACH_SHARED)
				p->attached = 0;
			ret = fn(p, ctx) ? 1 : 0;
		}
		closedir(n);
	}
	closedir(r);
	free(live.v);
	free(p);
	return ret;
}

void fmt_bytes(__u64 bytes, char *buf, size_t len)
{
	if (bytes >= 1000000000ULL)
		snprintf(buf, len, "%.1f GB", bytes / 1e9);
	else if (bytes >= 1000000)
		snprintf(buf, len, "%.1f MB", bytes / 1e6);
	else if (bytes >= 1000)
		snprintf(buf, len, "%.1f kB", bytes / 1e3);
	else
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
}

static int keep_one(struct pinned *p, void *ctx)
{
	struct pinned_list *l = ctx;

	if (vec_room(l->v, l->n, l->cap, 1, 8))
		return 1;
	l->v[l->n++] = *p;
	return 0;
}

int pinned_all(struct pinned_list *l)
{
	int r;

	memset(l, 0, sizeof(*l));
	r = pinned_foreach(keep_one, l);
	if (r > 0)
		log_err("cannot list the limiters: out of memory");
	if (r)
		free(l->v);
	return r ? -1 : 0;
}

void pinned_ifname(const struct pinned *p, char *buf, size_t len)
{
	char now[IF_NAMESIZE];

	if (p->ns == NS_HERE && p->attached && if_indextoname(p->link_ifindex, now))
		snprintf(buf, len, "%s", now);
	else if (p->has_config)
		snprintf(buf, len, "%.*s", (int)sizeof(p->cfg.fixed.ifname), p->cfg.fixed.ifname);
	else
		snprintf(buf, len, "if%u", p->ifindex);
}

void pinned_where(const struct pinned *p, char *buf, size_t len)
{
	if (p->ns == NS_HERE)
		snprintf(buf, len, "this namespace");
	else if (p->ns == NS_GONE)
		snprintf(buf, len, "netns %lu, deleted", p->netns);
	else if (p->ns_name[0])
		snprintf(buf, len, "netns %lu (%s)", p->netns, p->ns_name);
	else
		snprintf(buf, len, "netns %lu", p->netns);
}

const char *pinned_gone(const struct pinned *p)
{
	if (p->attached)
		return NULL;
	return p->ns == NS_GONE ? "its namespace is gone" : "its interface is gone";
}
