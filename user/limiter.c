// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* limiter.c - a running limiter's pinned objects and settings (see limiter.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "bpffs.h"
#include "limiter.h"
#include "log.h"

#define PIN_MAP_NAME(id, name, kind) [PIN_##id] = #name,
const char *const pin_names[PIN_MAX] = {
	[PIN_LINK] = XDP_RL_PIN_LINK,
	XDP_RL_MAPS(PIN_MAP_NAME)
};
#undef PIN_MAP_NAME

#define PIN_MAP_KIND(id, name, kind) [PIN_##id] = kind,
const int pin_kinds[PIN_MAX] = {
	XDP_RL_MAPS(PIN_MAP_KIND)
};
#undef PIN_MAP_KIND

int iface_resolve(const char *name, unsigned int *ifindex, const char *what)
{
	if (strlen(name) >= IF_NAMESIZE) {
		log_err("%s '%s': interface name too long (see 'ip link')", what, name);
		return -1;
	}
	*ifindex = if_nametoindex(name);
	if (!*ifindex) {
		log_err("%s '%s': %s (see 'ip link')", what, name,
		    errno == ENODEV || errno == ENXIO ? "No such device" : strerror(errno));
		return -1;
	}
	return 0;
}

void pin_path(char *out, size_t len, const char *dir, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}


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
	int fd = pin_open(l->dir, pin_names[PIN_STATS]), same;

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
	fd = pin_open(dir, pin_names[PIN_CONFIG]);
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

	l->fd[PIN_CONFIG] = *ns ? pin_open(l->dir, pin_names[PIN_CONFIG]) : -1;
	if (!*ns)
		errno = ENOENT;
	if (l->fd[PIN_CONFIG] < 0) {
		if (errno == ENOENT)
			log_err("%s '%s': xdp-rl is not loaded there (see 'xdp-rl status', "
			    "or 'xdp-rl load %s')", what, ifname, ifname);
		else
			log_err("%s '%s': cannot open %s/%s: %m%s", what, ifname, l->dir,
			    pin_names[PIN_CONFIG], state_denied_hint(errno));
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
		log_err("%s '%s': xdp-rl is not loaded there (see 'xdp-rl status', "
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
		log_err("%s '%s': the pinned state in %s is incomplete: %m "
		    "(run 'xdp-rl unload %s' and load again)", what, ifname, l->dir, ifname);
		limiter_close(l);
		return -1;
	}
	return 0;
}

int pin_is_v6(int id)
{
	return id == PIN_SRC6 || id == PIN_AGG6;
}

int limiter_table(const struct limiter *l, int id, struct mtable *t, const char *what)
{
	int v6 = pin_is_v6(id);

	if (mt_map(t, l->fd[id], v6, l->cfg.fixed.max_layers, l->cfg.fixed.seed)) {
		log_err("%s '%s': cannot map its table %s: %m%s", what, l->ifname, pin_names[id],
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

int pins_add_maps(const int *fd, const char *dir)
{
	char path[PATH_MAX];
	int id, old;

	for (id = PIN_FIRST_MAP; id < PIN_MAX; id++) {
		pin_path(path, sizeof(path), dir, pin_names[id]);
		old = bpf_obj_get(path);
		if (old >= 0) {
			int same = obj_id(old) == obj_id(fd[id]);

			close(old);
			if (same)
				continue;	/* a map the replacement kept */
			unlink(path);
		}
		if (bpf_obj_pin(fd[id], path)) {
			log_err("cannot pin %s: %m", path);
			return -1;
		}
	}
	return 0;
}

int limiter_find_by_name(const char *ifname, char *dir, size_t len)
{
	char ns[PATH_MAX];
	struct xdp_rl_config cfg;
	struct dirent *d;
	__u32 zero = 0;
	int fd, found = 0;
	DIR *n;

	if (state_dir(ns, sizeof(ns), 0))
		return -1;
	n = opendir(ns);
	if (!n)
		return -1;
	while (!found && (d = readdir(n))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(dir, len, "%s/%s", ns, d->d_name);
		fd = pin_open(dir, pin_names[PIN_CONFIG]);
		if (fd < 0)
			continue;
		found = !bpf_map_lookup_elem(fd, &zero, &cfg) &&
			!strncmp(cfg.fixed.ifname, ifname, sizeof(cfg.fixed.ifname));
		close(fd);
	}
	closedir(n);
	return found ? 0 : -1;
}
