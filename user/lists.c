// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* lists.c - a limiter's allow and deny lists (see lists.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <bpf/bpf.h>

#include "caps.h"
#include "fault.h"
#include "lists.h"
#include "log.h"
#include "vec.h"

const char *const list_names[LIST_KINDS] = { "allow", "deny" };

/* A list file, at most (a million prefixes take some 20 MB). */
#define LIST_FILE_MAX (1024U << 20)

void list_free(struct prefix_list *pl)
{
	free(pl->v);
	pl->v = NULL;
	pl->n = pl->cap = 0;
}

static int list_push(struct prefix_list *pl, const struct list_prefix *p)
{
	if (vec_room(pl->v, pl->n, pl->cap, 1, 1024))
		return -1;
	pl->v[pl->n++] = *p;
	return 0;
}

static int prefix_cmp(const struct list_prefix *a, const struct list_prefix *b)
{
	int c = a->addr.family - b->addr.family;

	if (!c)
		c = memcmp(a->addr.bytes, b->addr.bytes, sizeof(a->addr.bytes));
	if (!c)
		c = (int)a->len - (int)b->len;
	return c;
}

static int prefix_qcmp(const void *a, const void *b)
{
	int c = prefix_cmp(a, b);

	/* Of two the same, the earlier line first: it is the one kept. */
	return c ? c :
		   (int)((const struct list_prefix *)a)->line -
			       (int)((const struct list_prefix *)b)->line;
}

/* Sort @pl, keep each prefix once, count the families and hash what is left. */
static void list_finish(struct prefix_list *pl)
{
	__u64 h = 0xcbf29ce484222325ULL; /* FNV-1a */
	unsigned char rec[18];
	size_t i, j, k;

	if (pl->n)
		qsort(pl->v, pl->n, sizeof(*pl->v), prefix_qcmp);
	pl->count[0] = pl->count[1] = 0;
	for (i = j = 0; i < pl->n; i++) {
		if (j && !prefix_cmp(&pl->v[j - 1], &pl->v[i]))
			continue;
		pl->v[j++] = pl->v[i];
	}
	pl->n = j;
	for (i = 0; i < pl->n; i++) {
		pl->count[pl->v[i].addr.family == AF_INET6]++;
		rec[0] = pl->v[i].addr.family == AF_INET6;
		rec[1] = pl->v[i].len;
		memcpy(rec + 2, pl->v[i].addr.bytes, 16);
		for (k = 0; k < sizeof(rec); k++) {
			h ^= rec[k];
			h *= 0x100000001b3ULL;
		}
	}
	pl->hash = pl->n ? h : 0;
}

int list_parse(const char *text, size_t len, const char *name, struct prefix_list *pl, char *why,
	       size_t wlen)
{
	const char *p = text, *end = text + len, *eol, *e;
	char line[256], *tok, *rest;
	struct list_prefix lp;
	unsigned int no = 0;
	size_t n;

	memset(pl, 0, sizeof(*pl));
	while (p < end) {
		eol = memchr(p, '\n', end - p);
		if (!eol)
			eol = end;
		no++;
		n = eol - p;
		if (n >= sizeof(line)) {
			snprintf(why, wlen, "%s:%u: a line longer than %zu characters", name, no,
				 sizeof(line) - 1);
			goto fail;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p = eol + 1;
		line[strcspn(line, "#;")] = '\0';
		for (tok = line; isspace((unsigned char)*tok); tok++)
			;
		if (!*tok)
			continue;
		for (rest = tok; *rest && !isspace((unsigned char)*rest); rest++)
			;
		if (*rest) {
			*rest++ = '\0';
			while (isspace((unsigned char)*rest))
				rest++;
		}
		if (*rest) {
			snprintf(why, wlen, "%s:%u: '%.40s' after the prefix (one prefix a line)",
				 name, no, rest);
			goto fail;
		}
		memset(&lp, 0, sizeof(lp));
		e = parse_cidr(tok, &lp.addr, &lp.len);
		if (e) {
			snprintf(why, wlen, "%s:%u: invalid prefix '%.50s': %s", name, no, tok, e);
			goto fail;
		}
		if (pl->n >= XDP_RL_MAX_PREFIXES) {
			snprintf(why, wlen, "%s:%u: more than %u prefixes", name, no,
				 XDP_RL_MAX_PREFIXES);
			goto fail;
		}
		lp.line = no;
		if (list_push(pl, &lp)) {
			snprintf(why, wlen, "%s: out of memory", name);
			goto fail;
		}
	}
	list_finish(pl);
	snprintf(pl->path, sizeof(pl->path), "%s", name);
	return 0;
fail:
	list_free(pl);
	return -1;
}

int list_read_file(const char *path, struct prefix_list *pl, char *why, size_t len)
{
	size_t n;
	char *text;
	int r;

	memset(pl, 0, sizeof(pl[0]));
	if (strlen(path) >= XDP_RL_LIST_PATH) {
		snprintf(why, len, "%.60s...: a path longer than %d characters", path,
			 XDP_RL_LIST_PATH - 1);
		errno = ENAMETOOLONG;
		return -1;
	}
	if (read_as_caller(path, LIST_FILE_MAX, &text, &n)) {
		snprintf(why, len, "%s: %s", path,
			 errno == EINVAL ? "not a regular file" :
			 errno == EFBIG	 ? "larger than 1 GiB" :
					   strerror(errno));
		return -1;
	}
	r = list_parse(text, n, path, pl, why, len);
	free(text);
	return r;
}

/* ---- the lists in force ---------------------------------------------------------- */

/* The id of the trie in `lists`, 0 if none; -1 with errno if it cannot be read. */
static long trie_id(const struct limiter *l)
{
	__u32 zero = 0, id = 0;

	if (!bpf_map_lookup_elem(l->fd[PIN_LISTS], &zero, &id))
		return id;
	return errno == ENOENT ? 0 : -1;
}

/* ::ffff:0:0/96, where the trie keeps IPv4: its first 12 bytes. */
static const __u8 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* The key of @p in the trie: IPv4 as ::ffff:0:0/96. */
static void trie_key(const struct ip_addr *a, unsigned int len, struct xdp_rl_rule_key6 *k)
{
	memset(k, 0, sizeof(*k));
	if (a->family == AF_INET6) {
		k->prefixlen = len;
		memcpy(k->addr, a->bytes, 16);
		return;
	}
	k->prefixlen = 96 + len;
	memcpy(k->addr, mapped, sizeof(mapped));
	memcpy((__u8 *)k->addr + 12, a->bytes, 4);
}

static void trie_prefix(const struct xdp_rl_rule_key6 *k, struct list_prefix *p)
{
	memset(p, 0, sizeof(*p));
	if (k->prefixlen >= 96 && !memcmp(k->addr, mapped, sizeof(mapped))) {
		p->addr.family = AF_INET;
		memcpy(p->addr.bytes, (const __u8 *)k->addr + 12, 4);
		p->len = k->prefixlen - 96;
	} else {
		p->addr.family = AF_INET6;
		memcpy(p->addr.bytes, k->addr, 16);
		p->len = k->prefixlen;
	}
}

typedef int (*entry_fn)(const struct list_prefix *p, __u32 action, void *ctx);

/* Call @fn for every prefix of the trie @id (none for 0). 0, or -1 with errno. */
static int trie_foreach(__u32 id, entry_fn fn, void *ctx)
{
	struct xdp_rl_rule_key6 k, next;
	struct list_prefix p;
	void *prev = NULL;
	int fd, r = 0;
	__u32 v;

	if (!id)
		return 0;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return -1;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &v))
			continue;
		trie_prefix(&k, &p);
		if (fn(&p, v, ctx)) {
			r = -1;
			break;
		}
	}
	close(fd);
	return r;
}

static int count_one(const struct list_prefix *p, __u32 v, void *ctx)
{
	struct xdp_rl_list_meta *m = ctx;
	__u32 a = XDP_RL_LIST_ACTION(v);

	if (a == XDP_RL_RULE_ALLOW || a == XDP_RL_RULE_DENY)
		m->prefixes[a == XDP_RL_RULE_DENY][p->addr.family == AF_INET6]++;
	return 0;
}

/* The slot of `list_meta` that describes trie @id: 0 or 1, or -1 if neither does. */
static int meta_slot(const struct limiter *l, __u32 id, struct xdp_rl_list_meta *m)
{
	__u32 k;

	for (k = 0; k < 2; k++)
		if (!bpf_map_lookup_elem(l->fd[PIN_LIST_META], &k, m) && m->map_id == id)
			return k;
	return -1;
}

int lists_meta(const struct limiter *l, struct xdp_rl_list_meta *m)
{
	long id = trie_id(l);

	if (id < 0)
		return -1;
	if (meta_slot(l, id, m) >= 0)
		return 0;
	memset(m, 0, sizeof(*m));
	m->map_id = id;
	return trie_foreach(id, count_one, m);
}

struct get_walk {
	struct prefix_list *pl;
	__u32 action;
};

static int get_one(const struct list_prefix *p, __u32 v, void *ctx)
{
	struct get_walk *w = ctx;

	if (XDP_RL_LIST_ACTION(v) != w->action)
		return 0;
	return list_push(w->pl, p);
}

int lists_get(const struct limiter *l, int kind, struct prefix_list *pl)
{
	struct get_walk w = { pl, kind == LIST_DENY ? XDP_RL_RULE_DENY : XDP_RL_RULE_ALLOW };
	struct xdp_rl_list_meta m;

	memset(pl, 0, sizeof(*pl));
	if (lists_meta(l, &m))
		return -1;
	/* None of it: no walk through the other list's million. */
	if (!m.prefixes[kind][0] && !m.prefixes[kind][1]) {
		snprintf(pl->path, sizeof(pl->path), "%s", m.path[kind]);
		return 0;
	}
	if (trie_foreach(m.map_id, get_one, &w)) {
		list_free(pl);
		return -1;
	}
	list_finish(pl);
	snprintf(pl->path, sizeof(pl->path), "%s", m.path[kind]);
	return 0;
}

__u32 lists_flags(const struct xdp_rl_list_meta *m)
{
	return (m->prefixes[0][0] || m->prefixes[1][0] ? XDP_RL_F_LISTS4 : 0) |
	       (m->prefixes[0][1] || m->prefixes[1][1] ? XDP_RL_F_LISTS6 : 0);
}

/* A prefix on both lists, or NULL: the allow list's entry, its match in *@d. */
static const struct list_prefix *on_both(const struct prefix_list *a, const struct prefix_list *b,
					 const struct list_prefix **d)
{
	size_t i = 0, j = 0;
	int c;

	while (i < a->n && j < b->n) {
		c = prefix_cmp(&a->v[i], &b->v[j]);
		if (!c) {
			*d = &b->v[j];
			return &a->v[i];
		}
		if (c < 0)
			i++;
		else
			j++;
	}
	return NULL;
}

/* Publish @flags for the lists bits of what runs, if they differ. 0, or -1 (said). */
static int publish_flags(struct limiter *l, __u32 flags)
{
	struct xdp_rl_live next = *limiter_live(l);

	if ((next.flags & (XDP_RL_F_LISTS4 | XDP_RL_F_LISTS6)) == flags)
		return 0;
	next.flags = (next.flags & ~(XDP_RL_F_LISTS4 | XDP_RL_F_LISTS6)) | flags;
	if (limiter_publish(l, &next)) {
		log_err("cannot change the lists of '%s': cannot publish the settings: %m",
			l->ifname);
		return -1;
	}
	return 0;
}

/* Whether @p is an IPv6 prefix shorter than /96 that holds ::ffff:0:0/96 (IPv4, in the trie). */
static int over_mapped(const struct list_prefix *p)
{
	struct ip_addr m = { .family = AF_INET6 };

	if (p->addr.family != AF_INET6 || p->len >= 96)
		return 0;
	memcpy(m.bytes, mapped, sizeof(mapped));
	mask_addr(&m, p->len);
	return !memcmp(m.bytes, p->addr.bytes, sizeof(m.bytes));
}

/* A new trie holding @allow and @deny: its fd, or -1 after saying why. */
static int trie_build(const struct limiter *l, const struct prefix_list *const lists[LIST_KINDS])
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
	struct xdp_rl_rule_key6 k;
	size_t n = lists[0]->n + lists[1]->n, i;
	char pa[INET6_ADDRSTRLEN + 8];
	int fd, kind, over = 0;
	__u32 v;

	for (kind = 0; kind < LIST_KINDS; kind++)
		for (i = 0; i < lists[kind]->n && !over; i++)
			over = over_mapped(&lists[kind]->v[i]);
	fd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "xdp_rl_lists", sizeof(k), sizeof(v),
			    n ? n + over : 1, &opts);
	if (fd < 0) {
		log_err("cannot change the lists of '%s': the kernel cannot make a trie of %zu "
			"prefixes: %m",
			l->ifname, n);
		return -1;
	}
	/*
	 * The trie keeps IPv4 as ::ffff:0:0/96, and an IPv6 prefix over it
	 * (::/0 allowed as "all of IPv6", ::/8 denied as a bogon; parse_cidr
	 * refuses only /96 and longer there) would be the longest match of
	 * every IPv4 source no IPv4 prefix holds: all of IPv4 allowed, never
	 * limited, or denied. So ::ffff:0:0/96 itself goes in, first, with
	 * action 0: such a source is judged by no list (the datapath and
	 * lists_lookup), and counted and listed nowhere (count_one, get_one).
	 * An IPv4 prefix is longer (96 + its length) and wins; 0.0.0.0/0, the
	 * same key, overwrites it below. Only when such a prefix is listed:
	 * any other IPv6 prefix matches no IPv4 source.
	 */
	if (over) {
		trie_key(&(struct ip_addr){ .family = AF_INET }, 0, &k);
		v = XDP_RL_LIST_ENTRY(0, 0);
		if (bpf_map_update_elem(fd, &k, &v, BPF_ANY)) {
			log_err("cannot change the lists of '%s': cannot add ::ffff:0:0/96 to the "
				"trie: %m",
				l->ifname);
			close(fd);
			return -1;
		}
	}
	for (kind = 0; kind < LIST_KINDS; kind++) {
		for (i = 0; i < lists[kind]->n; i++) {
			const struct list_prefix *p = &lists[kind]->v[i];

			trie_key(&p->addr, p->len, &k);
			v = XDP_RL_LIST_ENTRY(
				kind == LIST_DENY ? XDP_RL_RULE_DENY : XDP_RL_RULE_ALLOW, p->len);
			if (bpf_map_update_elem(fd, &k, &v, BPF_ANY)) {
				fmt_prefix(&p->addr, p->len, pa, sizeof(pa));
				log_err("cannot change the lists of '%s': cannot add %s of the %s "
					"list to the trie: %m",
					l->ifname, pa, list_names[kind]);
				close(fd);
				return -1;
			}
		}
	}
	return fd;
}

/* Where @p of @pl was read: "FILE:LINE", or "in force, from FILE" (kept from the trie). */
static void where(const struct prefix_list *pl, const struct list_prefix *p, char *buf, size_t len)
{
	if (p->line)
		snprintf(buf, len, "%s:%u", pl->path, p->line);
	else
		snprintf(buf, len, "in force%s%s", *pl->path ? ", from " : "", pl->path);
}

int lists_replace(struct limiter *l, const struct prefix_list *allow,
		  const struct prefix_list *deny)
{
	char wa[XDP_RL_LIST_PATH + 32], wd[XDP_RL_LIST_PATH + 32];
	const struct prefix_list *const lists[LIST_KINDS] = { allow, deny };
	const struct list_prefix *a, *d;
	struct xdp_rl_list_meta cur, next;
	struct bpf_map_info info;
	__u32 zero = 0, len = sizeof(info), slot;
	char pa[INET6_ADDRSTRLEN + 8];
	int fd = -1, kind, r = -1;
	long id = trie_id(l);

	a = on_both(allow, deny, &d);
	if (a) {
		fmt_prefix(&a->addr, a->len, pa, sizeof(pa));
		where(allow, a, wa, sizeof(wa));
		where(deny, d, wd, sizeof(wd));
		log_err("cannot change the lists of '%s': %s is on both the allow list (%s) and "
			"the deny list (%s)",
			l->ifname, pa, wa, wd);
		errno = EINVAL;
		return -1;
	}
	if (id < 0 || lists_meta(l, &cur)) {
		log_err("cannot change the lists of '%s': cannot read the lists in force: %m",
			l->ifname);
		return -1;
	}
	memset(&next, 0, sizeof(next));
	next.replaced_unix = time(NULL);
	for (kind = 0; kind < LIST_KINDS; kind++) {
		next.prefixes[kind][0] = lists[kind]->count[0];
		next.prefixes[kind][1] = lists[kind]->count[1];
		next.hash[kind] = lists[kind]->hash;
		snprintf(next.path[kind], sizeof(next.path[kind]), "%s", lists[kind]->path);
	}
	if (allow->n || deny->n) {
		fd = trie_build(l, lists);
		if (fd < 0)
			return -1;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
			log_err("cannot change the lists of '%s': %m", l->ifname);
			goto out;
		}
		next.map_id = info.id;
	}
	fault_point("lists: trie built");
	/* The datapath looks in the trie for every family either list holds now or will. */
	if (publish_flags(l, lists_flags(&cur) | lists_flags(&next)))
		goto out;
	/* The slot the lists in force are not described by: a kill leaves theirs. */
	slot = meta_slot(l, id, &cur) == 0;
	if (bpf_map_update_elem(l->fd[PIN_LIST_META], &slot, &next, BPF_ANY)) {
		log_err("cannot change the lists of '%s': cannot write their description: %m",
			l->ifname);
		goto out;
	}
	fault_point("lists: described");
	/* The commit: every packet from here on sees the new lists, whole. */
	if (fd >= 0 ? bpf_map_update_elem(l->fd[PIN_LISTS], &zero, &fd, BPF_ANY) :
		      bpf_map_delete_elem(l->fd[PIN_LISTS], &zero) && errno != ENOENT) {
		log_err("cannot change the lists of '%s': cannot put the new trie in: %m",
			l->ifname);
		goto out;
	}
	fault_point("lists: replaced (committed)");
	r = publish_flags(l, lists_flags(&next));
out:
	if (fd >= 0)
		close(fd);
	return r;
}

int lists_lookup(const struct limiter *l, const struct ip_addr *a, int *kind, struct list_prefix *p)
{
	struct xdp_rl_rule_key6 k;
	long id = trie_id(l);
	int fd, r;
	__u32 v;

	if (id <= 0)
		return id < 0 ? -1 : 0;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return -1;
	trie_key(a, a->family == AF_INET6 ? 128 : 32, &k);
	r = !bpf_map_lookup_elem(fd, &k, &v);
	close(fd);
	if (!r)
		return errno == ENOENT ? 0 : -1;
	/* ::ffff:0:0/96 of trie_build, under an IPv6 prefix over IPv4: on no list. */
	if (XDP_RL_LIST_ACTION(v) != XDP_RL_RULE_ALLOW && XDP_RL_LIST_ACTION(v) != XDP_RL_RULE_DENY)
		return 0;
	*kind = XDP_RL_LIST_ACTION(v) == XDP_RL_RULE_DENY ? LIST_DENY : LIST_ALLOW;
	memset(p, 0, sizeof(*p));
	p->addr = *a;
	p->len = XDP_RL_LIST_LEN(v);
	mask_addr(&p->addr, p->len);
	return 1;
}

int lists_hold(const struct limiter *l, int *fd, struct xdp_rl_list_meta *m)
{
	*fd = -1;
	if (lists_meta(l, m))
		return -1;
	if (m->map_id) {
		*fd = bpf_map_get_fd_by_id(m->map_id);
		if (*fd < 0)
			return -1;
	}
	return 0;
}

int lists_restore(struct limiter *l, int fd, const struct xdp_rl_list_meta *m)
{
	struct xdp_rl_list_meta cur;
	__u32 zero = 0;

	/* Its description is still in its slot: a replacement writes the other. */
	if (lists_meta(l, &cur) || publish_flags(l, lists_flags(&cur) | lists_flags(m)) ||
	    (fd >= 0 ? bpf_map_update_elem(l->fd[PIN_LISTS], &zero, &fd, BPF_ANY) :
		       bpf_map_delete_elem(l->fd[PIN_LISTS], &zero) && errno != ENOENT)) {
		log_err("cannot put back the lists of '%s': %m", l->ifname);
		return -1;
	}
	return publish_flags(l, lists_flags(m));
}

int lists_same(const struct xdp_rl_list_meta *m, const struct prefix_list *allow,
	       const struct prefix_list *deny)
{
	const struct prefix_list *const pl[LIST_KINDS] = { allow, deny };
	int k;

	for (k = 0; k < LIST_KINDS; k++)
		if (pl[k]->hash != m->hash[k] || strcmp(pl[k]->path, m->path[k]) ||
		    pl[k]->count[0] != m->prefixes[k][0] || pl[k]->count[1] != m->prefixes[k][1])
			return 0;
	return 1;
}
