// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * limiter.c - a running limiter's pinned objects, settings and changes
 * (see limiter.h).
 *
 * How a change survives a crash. A limiter is its folder
 * <bpffs>/xdp-rl/<netns>/<ifindex>/: the link that attaches its program,
 * the program, and its maps, each pinned. What the datapath does is decided
 * by the link (which program runs) and by the maps that program uses; what
 * commands show is read from the folder. Every change keeps the two in
 * step with one atomic step that is the commit, and a journal that is the
 * folders themselves:
 *
 *   load      builds <ifindex>-new: pins the maps and the program, attaches
 *             (a link an unpinned fd holds dies with the process, and
 *             detaches), pins the link there [commit], then renames
 *             <ifindex>-new to <ifindex>.
 *   replace   (load --force) builds <ifindex>-new with the maps it keeps,
 *             its new ones, the new program and a second pin of the link;
 *             swaps the program under the link [commit]; exchanges the two
 *             folders (renameat2 RENAME_EXCHANGE, atomic); removes the old,
 *             now named <ifindex>-new.
 *   unload    renames <ifindex> to <ifindex>-del [commit], detaches the
 *             link, removes the pins.
 *   set       writes the spare settings slot, flips the active byte
 *             [commit] (one map update each; limiter_publish).
 *   rule add  publishes rule counts that include the new rule, inserts it
 *             [commit]; rule del deletes it [commit], waits for the
 *             packets that may still use it, publishes the counts (rules.c).
 *
 * Recovery (sweep_ns, under the namespace's lock, at the start of every command,
 * of this namespace's folder alone):
 *   <ifindex>-del  exists: the unload committed; detach and remove it.
 *   <ifindex>-new  exists: if the link (the limiter's, or the one pinned
 *                  in -new for a first load) is attached and runs the
 *                  program pinned in -new, the change committed: finish it
 *                  (exchange or rename, remove what is left); otherwise it
 *                  did not: remove -new. After the exchange -new holds the
 *                  old program, which the link no longer runs: the same
 *                  rule removes it.
 *   rule counts    are recounted from the tries and published if they
 *                  differ (a kill between a count and the trie; rules.c).
 * A limiter shared with other XDP programs (--attach shared: libxdp's
 * dispatcher runs it, user/lib/dispatch.h) has no link: its program is one
 * of the dispatcher's, and it counts packets while the handover map holds
 * its generation (config's fixed.gen), so the commits are:
 *   load      attaches the program to the dispatcher (it passes packets on
 *             untouched), pins it in <ifindex>-new, writes its generation
 *             to the handover map [commit], renames the folder.
 *   replace   the same, beside the old program: the handover word moves
 *             from the old generation to the new [commit]; after the
 *             exchange the old program leaves the dispatcher.
 *   unload    renames the folder [commit], takes the program off the
 *             dispatcher, removes the pins.
 * A staged program is committed if it is in the dispatcher and the word
 * holds its generation. A program of xdp-rl's in the dispatcher that no
 * folder pins (a load killed between its attach and its pin) passes packets
 * on untouched, and recovery takes it off.
 * A folder whose link is defunct (its interface is gone) is removed. So
 * after any kill, the next command sees the old limiter or the new one,
 * never a mix, and says what it finished or undid.
 *
 * apply (apply.c) takes several of these steps; it journals its target
 * first (journal.h); the state lock (lock.h) runs this recovery and then
 * applies a journal it finds again.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <linux/if_link.h>

#include "bpffs.h"
#include "dispatch.h"
#include "fault.h"
#include "limiter.h"
#include "log.h"

#define STAGE_SUFFIX "-new"
#define GONE_SUFFIX  "-del"

/* clang-format off */
#define PIN_MAP_NAME(id, name, kind) [PIN_##id] = #name,
const char *const pin_names[PIN_MAX] = {
	[PIN_LINK] = XDP_RL_PIN_LINK,
	[PIN_PROG] = XDP_RL_PIN_PROG,
	[PIN_ADMIN] = XDP_RL_PIN_ADMIN,
	XDP_RL_MAPS(PIN_MAP_NAME)
};
#undef PIN_MAP_NAME

#define PIN_MAP_KIND(id, name, kind) [PIN_##id] = kind,
const int pin_kinds[PIN_MAX] = {
	XDP_RL_MAPS(PIN_MAP_KIND)
};
#undef PIN_MAP_KIND

#define PIN_TABLE(id, name, v6) [XDP_RL_T_##id] = PIN_##id,
const int pin_tables[XDP_RL_T_SHARED] = {
	XDP_RL_TABLES(PIN_TABLE)
};
#undef PIN_TABLE
/* clang-format on */

int iface_resolve(const char *name, unsigned int *ifindex, const char *what)
{
	if (strlen(name) >= IF_NAMESIZE) {
		log_err("%s '%s': interface name too long (see '%s')", what, name, netns_ip_link());
		return -1;
	}
	*ifindex = if_nametoindex(name);
	if (!*ifindex) {
		log_err("%s '%s': %s (see '%s')", what, name,
			errno == ENODEV || errno == ENXIO ? "No such device" : strerror(errno),
			netns_ip_link());
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

__u32 obj_id(int fd)
{
	union {
		struct bpf_map_info map;
		struct bpf_prog_info prog;
		struct bpf_link_info link;
	} info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	/* Each of the three starts with its type and its id. */
	return info.map.id;
}

/* What a link runs, and where: its program's id and its interface (0: detached). */
static int link_state(int fd, __u32 *prog_id, __u32 *ifindex)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	*prog_id = *ifindex = 0;
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return -1;
	*prog_id = info.prog_id;
	*ifindex = info.xdp.ifindex;
	return 0;
}

__u32 pinned_id(const char *dir, const char *name)
{
	int fd = pin_open(dir, name);
	__u32 id = obj_id(fd);

	if (fd >= 0)
		close(fd);
	return id;
}

/* The config pinned in @dir, if it can be read. */
static int dir_config(const char *dir, struct xdp_rl_config *cfg)
{
	int fd = pin_open(dir, pin_names[PIN_CONFIG]), r;
	__u32 zero = 0;

	if (fd < 0)
		return -1;
	r = bpf_map_lookup_elem(fd, &zero, cfg);
	close(fd);
	return r;
}

/* Whether the limiter in @dir runs through libxdp's dispatcher (its config says so). */
static int dir_shared(const char *dir, struct xdp_rl_config *cfg)
{
	return !dir_config(dir, cfg) && cfg->fixed.attach == XDP_RL_ATTACH_SHARED;
}

/* The generation the handover map pinned in @dir holds (0 if none). */
static __u64 dir_handover(const char *dir)
{
	int fd = pin_open(dir, pin_names[PIN_HANDOVER]);
	__u64 gen = 0;
	__u32 zero = 0;

	if (fd >= 0) {
		if (bpf_map_lookup_elem(fd, &zero, &gen))
			gen = 0;
		close(fd);
	}
	return gen;
}

/*
 * Shared: take off the dispatcher on @ifindex every program of xdp-rl's
 * (named xdp_rl) but @keep and @keep2: what a killed load left there. They
 * pass packets on untouched (not their generation), so this only saves
 * their cost. This namespace's interfaces only.
 */
void limiter_orphans_remove(unsigned int ifindex, __u32 keep, __u32 keep2)
{
	struct dispatch_prog p[16];
	int n, i, shared;

	n = dispatch_list(ifindex, p, 16, &shared);
	for (i = 0; shared && i < n && i < 16; i++) {
		if (strcmp(p[i].name, "xdp_rl") || p[i].id == keep || p[i].id == keep2)
			continue;
		log_warn("took off the dispatcher on ifindex %u a program of xdp-rl's (id %u) "
			 "that a killed command left there",
			 ifindex, p[i].id);
		dispatch_detach(ifindex, p[i].id);
	}
}

/*
 * What runs the limiter in @dir: the id of its program, if it is attached
 * (through its link, or in the dispatcher holding the handover word), and
 * the interface (0 if detached). Shared limiters are judged in this
 * namespace only (an ifindex is a namespace's own): -1 elsewhere.
 */
static int attach_state(const char *dir, const char *link_dir, __u32 *prog_id, __u32 *ifindex)
{
	struct xdp_rl_config cfg;
	int fd, r;

	*prog_id = *ifindex = 0;
	if (dir_shared(dir, &cfg)) {
		if (cfg.fixed.netns_cookie && cfg.fixed.netns_cookie != netns_cookie())
			return -1;
		*prog_id = pinned_id(dir, pin_names[PIN_PROG]);
		if (*prog_id && dispatch_has(cfg.fixed.ifindex, *prog_id) &&
		    dir_handover(dir) == cfg.fixed.gen)
			*ifindex = cfg.fixed.ifindex;
		return 0;
	}
	fd = pin_open(link_dir, XDP_RL_PIN_LINK);
	r = link_state(fd, prog_id, ifindex);
	if (fd >= 0)
		close(fd);
	return r;
}

int limiter_attach_state(const char *dir, __u32 *prog_id, __u32 *ifindex)
{
	return attach_state(dir, dir, prog_id, ifindex);
}

int limiter_pinned(const struct limiter *l)
{
	return pinned_id(l->dir, pin_names[PIN_STATS]) == obj_id(l->fd[PIN_STATS]);
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

/*
 * A grace period on demand: updating a map-in-map makes the kernel wait
 * (synchronize_rcu) until every program that may still use the old inner
 * map has returned, so that user space can rely on the new one. XDP
 * programs run under RCU, so the same wait covers every packet in flight.
 */
int sync_programs(void)
{
	static int inner = -1, outer = -1;
	__u32 zero = 0;

	if (outer < 0) {
		LIBBPF_OPTS(bpf_map_create_opts, o);

		inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, "xdp_rl_sync", 4, 4, 1, NULL);
		o.inner_map_fd = inner;
		outer = inner < 0 ? -1 :
				    bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "xdp_rl_sync", 4, 4,
						   1, &o);
		if (outer < 0)
			return -1;
	}
	return bpf_map_update_elem(outer, &zero, &inner, 0);
}

static int publish(struct limiter *l, const struct xdp_rl_live *live, int running)
{
	struct xdp_rl_config next = l->cfg;
	__u32 zero = 0, spare = !(l->cfg.active & 1);

	if (running && sync_programs())
		return -1;
	/* 1: fill the slot the datapath does not read. */
	next.slot[spare] = *live;
	if (bpf_map_update_elem(l->fd[PIN_CONFIG], &zero, &next, BPF_EXIST))
		return -1;
	fault_point("publish: spare slot written");
	/* 2: flip to it; only the byte holding `active` changes. */
	next.active = spare;
	if (bpf_map_update_elem(l->fd[PIN_CONFIG], &zero, &next, BPF_EXIST))
		return -1;
	l->cfg = next;
	fault_point("publish: flipped");
	if (running && sync_programs())
		return -1;
	return 0;
}

int limiter_publish(struct limiter *l, const struct xdp_rl_live *live)
{
	return publish(l, live, 1);
}

int limiter_publish_new(struct limiter *l, const struct xdp_rl_live *live)
{
	return publish(l, live, 0);
}

/* Whether @path exists (lstat: no permission check by the real user). */
static int exists(const char *path)
{
	struct stat st;

	return !lstat(path, &st);
}

/* Whether @name is a limiter's folder: an ifindex, digits only. */
static int is_ifindex(const char *name)
{
	if (!*name)
		return 0;
	for (; *name; name++)
		if (!isdigit((unsigned char)*name))
			return 0;
	return 1;
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
		return 1; /* let the caller say why */
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

static void not_loaded(const char *what, const char *ifname)
{
	log_err("%s '%s': xdp-rl is not loaded there (see 'xdp-rl status', or 'xdp-rl load %s')",
		what, ifname, ifname);
}

int limiter_open(const char *ifname, struct limiter *l, const char *what)
{
	unsigned int ifindex;
	__u32 prog, on;

	if (iface_resolve(ifname, &ifindex, what) || limiter_open_index(ifindex, ifname, l, what))
		return -1;
	/*
	 * A limiter whose interface was deleted keeps its pins until the next
	 * change removes them; an interface made since may have its index
	 * (and name), but that limiter is not on it.
	 */
	if (!link_state(l->fd[PIN_LINK], &prog, &on) && on != ifindex) {
		limiter_close(l);
		not_loaded(what, ifname);
		errno = ENOENT;
		return -1;
	}
	return 0;
}

int limiter_open_index(unsigned int ifindex, const char *ifname, struct limiter *l,
		       const char *what)
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
		/* No bpffs or no state anywhere: nothing was ever loaded. */
		ns[0] = '\0';
	}
	snprintf(l->dir, sizeof(l->dir), "%s/%u", ns, l->ifindex);

	l->fd[PIN_CONFIG] = *ns ? pin_open(l->dir, pin_names[PIN_CONFIG]) : -1;
	if (!*ns)
		errno = ENOENT;
	if (l->fd[PIN_CONFIG] < 0) {
		if (errno == ENOENT)
			not_loaded(what, ifname);
		else
			log_err("%s '%s': cannot open %s/%s: %m%s", what, ifname, l->dir,
				pin_names[PIN_CONFIG], state_denied_hint(errno));
		return -1;
	}
	if (!limiter_read_config(l) && l->cfg.fixed.netns_cookie &&
	    l->cfg.fixed.netns_cookie != netns_cookie()) {
		/*
		 * Left by a namespace that was deleted, whose inode this one
		 * reuses: not this namespace's limiter. The next change removes
		 * it (its link died with its interface).
		 */
		limiter_close(l);
		not_loaded(what, ifname);
		errno = ENOENT;
		return -1;
	}
	for (i = 0; i < PIN_MAX; i++) {
		/* A limiter shared through libxdp's dispatcher has no link of its own. */
		if (i == PIN_LINK && l->cfg.fixed.attach == XDP_RL_ATTACH_SHARED)
			continue;
		if (i != PIN_CONFIG)
			l->fd[i] = pin_open(l->dir, pin_names[i]);
		if (l->fd[i] < 0)
			break;
	}
	if (i < PIN_MAX || limiter_read_config(l)) {
		log_err("%s '%s': cannot open %s/%s: %m (loaded by another version of xdp-rl? "
			"'xdp-rl unload %s' removes it)",
			what, ifname, l->dir, pin_names[i < PIN_MAX ? i : PIN_CONFIG], ifname);
		limiter_close(l);
		return -1;
	}
	log_dbg("opened the limiter in %s (link %u, program %u)", l->dir, obj_id(l->fd[PIN_LINK]),
		obj_id(l->fd[PIN_PROG]));
	return 0;
}

/* clang-format off */
#define TABLE_V6(id, name, v6) [XDP_RL_T_##id] = v6,
static const int table_v6[XDP_RL_T_SHARED] = {
	XDP_RL_TABLES(TABLE_V6)
};
#undef TABLE_V6
/* clang-format on */

int pin_is_v6(int id)
{
	int t;

	for (t = 0; t < XDP_RL_T_SHARED; t++)
		if (pin_tables[t] == id)
			return table_v6[t];
	return 0;
}

int pin_table(int id)
{
	int t;

	for (t = 0; t < XDP_RL_T_SHARED; t++)
		if (pin_tables[t] == id)
			return t;
	return XDP_RL_T_AGG6; /* as before for an @id that is not a table's */
}

int limiter_table(const struct limiter *l, int id, struct mtable *t, const char *what)
{
	if (mt_map(t, l->fd[id], pin_table(id), l->cfg.fixed.max_layers, l->cfg.fixed.seed,
		   l->cfg.fixed.key)) {
		log_err("%s '%s': cannot map its table %s: %m%s", what, l->ifname, pin_names[id],
			errno == EPROTO ? " (loaded by another version of xdp-rl? 'xdp-rl "
					  "load --force' replaces it)" :
					  "");
		return -1;
	}
	return 0;
}

int pins_remove(const char *dir)
{
	char path[PATH_MAX];
	int ret = 0, i;

	for (i = 0; i < PIN_MAX; i++) {
		pin_path(path, sizeof(path), dir, pin_names[i]);
		if (unlink(path) && errno != ENOENT)
			ret = -1;
	}
	if (rmdir(dir) && errno != ENOENT)
		ret = -1;
	/* The netns folder goes when its last limiter does: as its lock is let go (state_unlock). */
	return ret;
}

/*
 * A pinned link whose interface went away reports ifindex 0; no link at
 * all is as defunct, unless @need_link.
 */
static int link_defunct(const char *dir, int need_link)
{
	struct xdp_rl_config cfg;
	__u32 prog, on;
	int fd, defunct;

	if (dir_shared(dir, &cfg)) {
		/*
		 * Shared: defunct if its interface no longer runs its program
		 * (gone, or taken off by another tool). Judged in this
		 * namespace only: an ifindex is a namespace's own.
		 */
		if (cfg.fixed.netns_cookie && cfg.fixed.netns_cookie != netns_cookie())
			return 0;
		prog = pinned_id(dir, pin_names[PIN_PROG]);
		return !prog || !dispatch_has(cfg.fixed.ifindex, prog);
	}
	fd = pin_open(dir, XDP_RL_PIN_LINK);
	if (fd < 0)
		return errno == ENOENT && !need_link;
	defunct = !link_state(fd, &prog, &on) && !on;
	close(fd);
	return defunct;
}

/* Detach the link pinned in @dir, if any and attached; or take its program off the dispatcher. */
static void detach_pinned(const char *dir)
{
	struct xdp_rl_config cfg;
	int fd;

	if (dir_shared(dir, &cfg)) {
		if (!cfg.fixed.netns_cookie || cfg.fixed.netns_cookie == netns_cookie())
			dispatch_detach(cfg.fixed.ifindex, pinned_id(dir, pin_names[PIN_PROG]));
		return;
	}
	fd = pin_open(dir, XDP_RL_PIN_LINK);
	if (fd >= 0) {
		bpf_link_detach(fd);
		close(fd);
	}
}

/*
 * "'veth0' in netns web (/sys/fs/bpf/xdp-rl/4026532246/7-del)": what a
 * recovery acted on, by the interface its config names.
 */
static const char *change_where(const char *dir)
{
	static char buf[PATH_MAX + IF_NAMESIZE + NAME_MAX + 32];
	struct xdp_rl_config cfg;
	char name[IF_NAMESIZE + 2] = "";
	__u32 zero = 0;
	int fd = pin_open(dir, pin_names[PIN_CONFIG]);

	if (fd >= 0 && !bpf_map_lookup_elem(fd, &zero, &cfg))
		snprintf(name, sizeof(name), "%.*s", (int)sizeof(cfg.fixed.ifname),
			 cfg.fixed.ifname);
	if (fd >= 0)
		close(fd);
	snprintf(buf, sizeof(buf), "'%s' in %s (%s)", *name ? name : "?", netns_label(), dir);
	return buf;
}

/* Finish or undo the change left in @ns/@name (<ifindex>-new or -del); see above. */
static void recover_one(const char *ns, const char *name)
{
	char dir[PATH_MAX], main[PATH_MAX], base[32];
	size_t n = strlen(name);
	struct xdp_rl_config cfg;
	__u32 prog, on, staged;
	int has_main, shared;

	snprintf(dir, sizeof(dir), "%s/%s", ns, name);
	if (n > 4 && !strcmp(name + n - 4, GONE_SUFFIX)) {
		log_warn("finished an unload of %s that was interrupted", change_where(dir));
		detach_pinned(dir);
		pins_remove(dir);
		return;
	}
	if (n <= 4 || strcmp(name + n - 4, STAGE_SUFFIX) || n - 4 >= sizeof(base))
		return;
	snprintf(base, sizeof(base), "%.*s", (int)(n - 4), name);
	snprintf(main, sizeof(main), "%s/%s", ns, base);
	has_main = exists(main);
	shared = dir_shared(dir, &cfg);
	staged = pinned_id(dir, XDP_RL_PIN_PROG);
	if (!attach_state(dir, has_main ? main : dir, &prog, &on) && on && staged &&
	    prog == staged) {
		/* Committed: the link runs the staged program. */
		if (has_main ? renameat2(AT_FDCWD, dir, AT_FDCWD, main, RENAME_EXCHANGE) :
			       rename(dir, main)) {
			log_warn("cannot finish an interrupted load of %s: %m", change_where(dir));
		} else {
			if (has_main)
				pins_remove(dir);
			log_warn("finished a load of %s that was interrupted", change_where(main));
		}
	} else {
		log_warn("undid a load of %s that was interrupted before it took effect",
			 change_where(dir));
		/* A staged program in the dispatcher (not counting) leaves it. */
		if (shared)
			detach_pinned(dir);
		pins_remove(dir);
	}
	/* And one killed before its pin, which no folder names. */
	if (shared)
		limiter_orphans_remove(cfg.fixed.ifindex, pinned_id(main, pin_names[PIN_PROG]), 0);
}

/*
 * In the folder @ns: with @recover, finish or undo what a killed command
 * left half done there (this namespace's, under its lock); with @gc,
 * remove the limiters whose interface is gone (in another namespace's
 * folder, only those whose link says so: its half-done changes are its
 * own commands' to finish).
 */
static void sweep_ns(const char *ns, int recover, int gc)
{
	struct xdp_rl_config cfg;
	char dir[PATH_MAX * 2];
	struct dirent *b;
	DIR *n;

	n = opendir(ns);
	if (!n)
		return;
	while ((b = readdir(n))) {
		if (b->d_name[0] == '.')
			continue;
		if (!is_ifindex(b->d_name) && recover) {
			recover_one(ns, b->d_name);
			continue;
		}
		snprintf(dir, sizeof(dir), "%s/%s", ns, b->d_name);
		if (gc && link_defunct(dir, !recover)) {
			log_dbg("removing %s: its interface is gone", dir);
			pins_remove(dir);
		} else if (recover && dir_shared(dir, &cfg)) {
			limiter_orphans_remove(cfg.fixed.ifindex,
					       pinned_id(dir, pin_names[PIN_PROG]), 0);
		}
	}
	closedir(n);
}

/*
 * Recovery in this namespace's folder (its lock held), and with @gc the
 * limiters whose interface is gone: here, and in the folders of other
 * namespaces whose lock is free at once (a namespace that was deleted
 * leaves its limiters to whoever comes next). Nothing waits on another
 * namespace, and nothing of another namespace is finished or undone.
 */
void limiter_recover(int gc)
{
	char root[PATH_MAX], here[PATH_MAX], ns[PATH_MAX + 300];
	struct dirent *a;
	DIR *r;
	int fd;

	if (state_dir(here, sizeof(here), 0))
		return;
	sweep_ns(here, 1, gc);
	if (!gc || root_dir(root, sizeof(root), 0))
		return;
	r = opendir(root);
	if (!r)
		return;
	while ((a = readdir(r))) {
		if (!is_ifindex(a->d_name)) /* netns folders are inode numbers */
			continue;
		snprintf(ns, sizeof(ns), "%s/%s", root, a->d_name);
		if (!strcmp(ns, here))
			continue;
		fd = folder_lock(ns, 1, a->d_name);
		if (fd < 0)
			continue; /* busy: its own command is at work */
		sweep_ns(ns, 0, 1);
		rmdir(ns); /* only if now empty, and before its lock goes */
		close(fd);
	}
	closedir(r);
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
		if (!is_ifindex(d->d_name))
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

/* ---- changes ---------------------------------------------------------------- */

int stage_begin(struct stage *st, unsigned int ifindex)
{
	char ns[PATH_MAX];
	int r;

	memset(st, 0, sizeof(*st));
	if (state_dir(ns, sizeof(ns), 1))
		return -1;
	snprintf(st->main, sizeof(st->main), "%s/%u", ns, ifindex);
	snprintf(st->dir, sizeof(st->dir), "%s%s", st->main, STAGE_SUFFIX);
	r = state_mkdir(st->dir);
	if (r) {
		if (r == -1)
			log_err("cannot create %s: %m", st->dir);
		return -1;
	}
	st->made = 1;
	fault_point("stage: folder made");
	return 0;
}

int stage_pin(struct stage *st, const int *fd)
{
	char path[PATH_MAX];
	int id;

	for (id = 0; id < PIN_MAX; id++) {
		if (fd[id] < 0)
			continue;
		pin_path(path, sizeof(path), st->dir, pin_names[id]);
		if (bpf_obj_pin(fd[id], path)) {
			log_err("cannot pin %s: %m", path);
			return -1;
		}
		if (state_own(path))
			return -1;
		fault_point("stage: pinned");
	}
	return 0;
}

int stage_attach(struct stage *st, int prog_fd, unsigned int ifindex, __u32 mode, int *err)
{
	LIBBPF_OPTS(bpf_link_create_opts, o, .flags = mode);
	char path[PATH_MAX];
	int link;

	*err = 0;
	link = bpf_link_create(prog_fd, ifindex, BPF_XDP, &o);
	if (link < 0) {
		*err = errno;
		return -1;
	}
	/* Killed here, the process's fd was the link's only reference: it detaches. */
	fault_point("stage: attached");
	pin_path(path, sizeof(path), st->dir, pin_names[PIN_LINK]);
	if (bpf_obj_pin(link, path)) {
		log_err("cannot pin %s: %m", path);
		close(link);
		return -1;
	}
	close(link);
	state_own(path); /* a link pinned is the commit: said if not root's, kept */
	fault_point("stage: link pinned (committed)");
	return 0;
}

int stage_swap(struct stage *st, int link_fd, int prog_fd)
{
	(void)st;
	if (bpf_link_update(link_fd, prog_fd, NULL))
		return -1;
	fault_point("stage: program swapped (committed)");
	return 0;
}

int stage_handover(struct stage *st, int prog_fd, int handover_fd, __u64 gen)
{
	char path[PATH_MAX];
	__u32 zero = 0;

	/* Killed before the pin, the program is an orphan in the dispatcher (orphans_remove). */
	fault_point("stage: in the dispatcher");
	pin_path(path, sizeof(path), st->dir, pin_names[PIN_PROG]);
	if (bpf_obj_pin(prog_fd, path)) {
		log_err("cannot pin %s: %m", path);
		return -1;
	}
	state_own(path);
	fault_point("stage: program pinned");
	if (bpf_map_update_elem(handover_fd, &zero, &gen, BPF_ANY))
		return -1;
	fault_point("stage: handed over (committed)");
	return 0;
}

int stage_finish(struct stage *st)
{
	struct xdp_rl_config cfg;
	int has_main = exists(st->main);

	if (has_main ? renameat2(AT_FDCWD, st->dir, AT_FDCWD, st->main, RENAME_EXCHANGE) :
		       rename(st->dir, st->main)) {
		log_err("cannot move %s to %s: %m (the next xdp-rl command finishes it)", st->dir,
			st->main);
		return -1;
	}
	fault_point("stage: folders switched");
	st->made = 0;
	/* Shared: the old program, which no longer counts, leaves the dispatcher. */
	if (has_main && dir_shared(st->dir, &cfg))
		detach_pinned(st->dir);
	if (has_main && pins_remove(st->dir))
		log_warn("cannot remove the replaced limiter's pins in %s: %m (the next xdp-rl "
			 "command removes them)",
			 st->dir);
	return 0;
}

void stage_abort(struct stage *st)
{
	if (st->made)
		pins_remove(st->dir);
	st->made = 0;
}

int limiter_remove(struct limiter *l)
{
	char gone[PATH_MAX + 8];

	snprintf(gone, sizeof(gone), "%s%s", l->dir, GONE_SUFFIX);
	if (rename(l->dir, gone)) {
		log_err("cannot unload from '%s': cannot move %s: %m", l->ifname, l->dir);
		return -1;
	}
	fault_point("unload: folder renamed (committed)");
	if (l->cfg.fixed.attach == XDP_RL_ATTACH_SHARED) {
		if (dispatch_detach(l->ifindex, obj_id(l->fd[PIN_PROG])))
			log_warn("cannot take xdp-rl off the dispatcher of '%s': %m (it passes "
				 "packets on untouched; 'xdp-loader unload' removes it)",
				 l->ifname);
	} else if (bpf_link_detach(l->fd[PIN_LINK]) && errno != ENOLINK && errno != EINVAL) {
		log_warn("cannot detach from '%s': %m (its link goes with its pins)", l->ifname);
	}
	fault_point("unload: detached");
	if (pins_remove(gone)) {
		log_err("detached from '%s', but cannot remove %s: %m (the next xdp-rl command "
			"removes it)",
			l->ifname, gone);
		return -1;
	}
	return 0;
}
