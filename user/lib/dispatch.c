// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* dispatch.c - other XDP programs beside xdp-rl's, through libxdp (see dispatch.h). */
#include <errno.h>
#include <limits.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "bpffs.h"
#include "dispatch.h"
#include "log.h"
#include "probe.skel.h"

/* libxdp's last warning, for an error to quote; all it says goes to -vv. */
static char said[256];

static int libxdp_say(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	if (level <= LIBXDP_WARN && n)
		snprintf(said, sizeof(said), "%s", line);
	log_dbg("libxdp: %s", line);
	return 0;
}

/*
 * libxdp keeps its dispatchers' pins in the bpffs xdp-rl's state is in,
 * wherever this process sees it (bpffs.h: `ip netns exec` hides
 * /sys/fs/bpf), so that every tool finds the same dispatcher. libxdp reads
 * LIBXDP_BPFFS at each use (secure_getenv: xdp-rl is not setuid).
 */
static void dispatch_init(void)
{
	static int printing, found;
	char root[PATH_MAX], *slash;

	if (!printing) {
		printing = 1;
		libxdp_set_print(libxdp_say);
	}
	if (found || getenv("LIBXDP_BPFFS") || root_dir(root, sizeof(root), 0))
		return;
	slash = strrchr(root, '/');
	if (slash)
		*slash = '\0';
	setenv("LIBXDP_BPFFS", root, 1);
	found = 1;
}

int dispatch_probe(char *why, size_t len)
{
	static int known = -1;
	static char reason[200];
	struct probe *target = NULL, *ext = NULL;
	struct bpf_link *link = NULL;
	int e = 0;

	if (known >= 0) {
		snprintf(why, len, "%s", reason);
		return known;
	}
	target = probe__open();
	ext = probe__open();
	if (!target || !ext) {
		e = errno;
		snprintf(reason, sizeof(reason), "cannot open the probe program: %s", strerror(e));
		goto out;
	}
	bpf_program__set_autoload(target->progs.probe_ext, false);
	if (probe__load(target)) {
		e = errno;
		snprintf(reason, sizeof(reason), "cannot load an XDP program: %s", strerror(e));
		goto out;
	}
	bpf_program__set_autoload(ext->progs.probe_target, false);
	if (bpf_program__set_attach_target(ext->progs.probe_ext,
					   bpf_program__fd(target->progs.probe_target),
					   "probe_slot") ||
	    probe__load(ext)) {
		e = errno ? errno : EOPNOTSUPP;
		snprintf(reason, sizeof(reason),
			 "the kernel does not load extension programs (freplace): %s", strerror(e));
		goto out;
	}
	link = bpf_program__attach_freplace(
		ext->progs.probe_ext, bpf_program__fd(target->progs.probe_target), "probe_slot");
	if (!link) {
		e = errno ? errno : EOPNOTSUPP;
		snprintf(reason, sizeof(reason),
			 "the kernel refuses to attach an extension program (freplace): %s",
			 strerror(e));
	}
out:
	bpf_link__destroy(link);
	probe__destroy(ext);
	probe__destroy(target);
	known = e;
	snprintf(why, len, "%s", reason);
	return e;
}

static enum xdp_attach_mode attach_mode(__u32 xdp_mode)
{
	return xdp_mode == XDP_FLAGS_SKB_MODE ? XDP_MODE_SKB : XDP_MODE_NATIVE;
}

int dispatch_attach(const struct dispatch_attach *a, char *why, size_t len)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, o, .obj = a->obj, .prog_name = a->prog);
	struct xdp_multiprog *mp;
	struct xdp_program *p;
	int err, fd, legacy;

	dispatch_init();
	*said = '\0';
	*why = '\0';
	p = xdp_program__create(&o);
	err = libxdp_get_error(p);
	if (err) {
		snprintf(why, len, "%s", said);
		errno = -err;
		return -1;
	}
	if (xdp_program__set_run_prio(p, a->priority) ||
	    xdp_program__set_chain_call_enabled(p, XDP_PASS, !!a->pass_next)) {
		xdp_program__close(p);
		errno = EINVAL;
		return -1;
	}
	err = xdp_program__attach(p, (int)a->ifindex, attach_mode(a->xdp_mode), 0);
	if (err) {
		snprintf(why, len, "%s", said);
		xdp_program__close(p);
		errno = -err;
		return -1;
	}
	/*
	 * libxdp falls back to attaching one program alone when the kernel
	 * cannot run its dispatcher: not what was asked (dispatch_probe was
	 * to rule it out). Undone, and said.
	 */
	mp = xdp_multiprog__get_from_ifindex((int)a->ifindex);
	legacy = !libxdp_get_error(mp) && mp && xdp_multiprog__is_legacy(mp);
	xdp_multiprog__close(mp);
	if (legacy) {
		xdp_program__detach(p, (int)a->ifindex, attach_mode(a->xdp_mode), 0);
		xdp_program__close(p);
		snprintf(why, len, "libxdp attached the program alone, not through its dispatcher");
		errno = EOPNOTSUPP;
		return -1;
	}
	fd = bpf_program__fd(bpf_object__find_program_by_name(a->obj, a->prog));
	/* The program stays: the dispatcher's link holds it (pinned by libxdp), and the object's fd. */
	xdp_program__close(p);
	return fd;
}

int dispatch_detach(unsigned int ifindex, __u32 prog_id)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p = NULL;
	int err = 0;

	dispatch_init();
	mp = xdp_multiprog__get_from_ifindex((int)ifindex);
	if (libxdp_get_error(mp) || !mp)
		return 0;
	if (!xdp_multiprog__is_legacy(mp)) {
		while ((p = xdp_multiprog__next_prog(p, mp)))
			if (xdp_program__id(p) == prog_id)
				break;
	}
	/* In the dispatcher's own mode: 0 would ask the kernel for native, where generic runs. */
	if (p) {
		err = xdp_program__detach(p, (int)ifindex, xdp_multiprog__attach_mode(mp), 0);
		if (err)
			errno = -err;
	}
	xdp_multiprog__close(mp);
	return err ? -1 : 0;
}

static void prog_of(struct xdp_program *p, struct dispatch_prog *d)
{
	unsigned int a;

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", xdp_program__name(p));
	d->id = xdp_program__id(p);
	d->priority = xdp_program__run_prio(p);
	for (a = XDP_ABORTED; a <= XDP_REDIRECT; a++)
		if (xdp_program__chain_call_enabled(p, a))
			d->chain |= 1U << a;
}

int dispatch_list(unsigned int ifindex, struct dispatch_prog *out, int max, int *shared)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p = NULL;
	int n = 0;

	dispatch_init();
	*shared = 0;
	mp = xdp_multiprog__get_from_ifindex((int)ifindex);
	if (libxdp_get_error(mp) || !mp)
		return 0;
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		if (p && max > 0)
			prog_of(p, &out[0]);
		n = !!p;
	} else {
		*shared = 1;
		while ((p = xdp_multiprog__next_prog(p, mp))) {
			if (n < max)
				prog_of(p, &out[n]);
			n++;
		}
	}
	xdp_multiprog__close(mp);
	return n;
}

int dispatch_has(unsigned int ifindex, __u32 prog_id)
{
	struct dispatch_prog progs[16];
	int shared, n, i;

	n = dispatch_list(ifindex, progs, 16, &shared);
	for (i = 0; shared && i < n && i < 16; i++)
		if (progs[i].id == prog_id)
			return 1;
	return 0;
}

void dispatch_chain_str(__u32 chain, char *out, size_t len)
{
	static const char *const names[] = { "XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX",
					     "XDP_REDIRECT" };
	size_t at = 0;
	unsigned int a;

	*out = '\0';
	for (a = 0; a < 5 && at < len; a++)
		if (chain & (1U << a))
			at += snprintf(out + at, len - at, "%s%s", at ? "," : "", names[a]);
	if (!at)
		snprintf(out, len, "none");
}

/* Whether pin @path is a link that runs program @prog_id. */
static int pin_runs(const char *path, __u32 prog_id)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);
	int fd = bpf_obj_get(path), r;

	if (fd < 0)
		return 0;
	memset(&info, 0, sizeof(info));
	r = !bpf_obj_get_info_by_fd(fd, &info, &len) && info.prog_id == prog_id;
	close(fd);
	return r;
}

int dispatch_forget(unsigned int ifindex, __u32 prog_id)
{
	char root[PATH_MAX], dir[PATH_MAX + NAME_MAX + 2], path[PATH_MAX * 2 + 2];
	struct dirent *a, *b;
	unsigned int ifx;
	__u32 id;
	int found, removed = 0;
	DIR *r, *d;

	dispatch_init();
	if (!prog_id || !getenv("LIBXDP_BPFFS"))
		return 0;
	snprintf(root, sizeof(root), "%s/xdp", getenv("LIBXDP_BPFFS"));
	r = opendir(root);
	if (!r)
		return 0;
	while ((a = readdir(r))) {
		if (sscanf(a->d_name, "dispatch-%u-%u", &ifx, &id) != 2 || ifx != ifindex)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", root, a->d_name);
		d = opendir(dir);
		if (!d)
			continue;
		found = 0;
		while (!found && (b = readdir(d))) {
			snprintf(path, sizeof(path), "%s/%s", dir, b->d_name);
			found = b->d_name[0] != '.' && pin_runs(path, prog_id);
		}
		rewinddir(d);
		while (found && (b = readdir(d))) {
			if (b->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, b->d_name);
			unlink(path);
		}
		closedir(d);
		if (found && !rmdir(dir))
			removed++;
	}
	closedir(r);
	return removed;
}
