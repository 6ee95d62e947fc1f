// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_lists.c - the allow and deny lists (include/xdp_rl.h): one trie of
 * both families in the `lists` map of maps, a listed prefix judging its
 * packets unless a rule of a longer or the same prefix does, whatever the
 * selectors; their matches counted as XDP_RL_LIST_*_ID; a trie put in
 * whole with one update.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "harness.h"
#include "lists.h"

/* A trie as user/lists.c makes one: its fd, or -1. */
static int trie_new(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);

	return bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "test_lists", sizeof(struct xdp_rl_rule_key6),
			      sizeof(__u32), 64, &opts);
}

/* List @prefix/@len (IPv4 as ::ffff:0:0/96) in trie @fd with @action. */
static int list_put(int fd, const char *prefix, int len, __u32 action)
{
	struct xdp_rl_rule_key6 k = {};
	__u32 v = XDP_RL_LIST_ENTRY(action, len);
	__u8 *b = (__u8 *)k.addr;

	if (strchr(prefix, ':')) {
		inet_pton(AF_INET6, prefix, k.addr);
		k.prefixlen = len;
	} else {
		b[10] = b[11] = 0xff;
		inet_pton(AF_INET, prefix, b + 12);
		k.prefixlen = 96 + len;
	}
	return bpf_map_update_elem(fd, &k, &v, 0);
}

static int lists_in(struct env *e, int fd)
{
	__u32 zero = 0;

	return bpf_map_update_elem(bpf_map__fd(e->skel->maps.lists), &zero, &fd, 0);
}

/* A rule in rules4 with its prefix length, which the lists judge it by (harness.c's rule4 leaves it 0). */
static int rule4_with_len(struct env *e, const char *prefix, int len, struct xdp_rl_rule *r)
{
	struct xdp_rl_rule_key4 k = { .prefixlen = len };

	inet_pton(AF_INET, prefix, &k.addr);
	r->prefixlen = len;
	if (!r->lsid)
		r->lsid = 100 + r->id;
	return bpf_map_update_elem(bpf_map__fd(e->skel->maps.rules4), &k, r, 0);
}

static __u64 list_hits(struct env *e, __u32 id)
{
	int n = libbpf_num_possible_cpus(), i;
	struct xdp_rl_rule_hits h[n > 0 ? n : 1];
	__u64 sum = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(e->skel->maps.rule_hits), &id, h))
		return ~0ULL;
	for (i = 0; i < n; i++)
		sum += h[i].packets;
	return sum;
}

UNIT_TEST(lists)
{
	static const struct xdp_rl_layer one[] = { { 3, 10 * SEC_NS } };
	struct xdp_rl_live live = live_of(1, one);
	struct xdp_rl_rule allow32 = { .id = 0, .action = XDP_RL_RULE_ALLOW };
	struct xdp_rl_rule limit16 = {
		.id = 1, .action = XDP_RL_RULE_LIMIT, .nlayers = 1, .layer = { { 5, 10 * SEC_NS } }
	};
	struct xdp_rl_rule same24 = { .id = 2, .action = XDP_RL_RULE_ALLOW };
	struct xdp_rl_rule syn32 = { .id = 3,
				     .action = XDP_RL_RULE_ALLOW,
				     .select = { .proto = IPPROTO_TCP, .syn = 1 } };
	struct pkt denied = build(&(struct pkt_spec){ V4, "198.18.20.9" });
	struct pkt exempt = build(&(struct pkt_spec){ V4, "198.18.20.7" });
	struct pkt in16 = build(&(struct pkt_spec){ V4, "198.18.21.1" });
	struct pkt same = build(&(struct pkt_spec){ V4, "198.18.22.1" });
	struct pkt syn_miss = build(&(struct pkt_spec){ V4, "198.18.23.5" });
	struct pkt v6 = build(&(struct pkt_spec){ V6, "2001:2:0:24::1" });
	struct pkt v6_out = build(&(struct pkt_spec){ V6, "2001:2:0:25::1" });
	struct pkt allowed = build(&(struct pkt_spec){ V4, "198.18.26.1" });
	struct pkt outside = build(&(struct pkt_spec){ V4, "198.18.99.1" });
	struct xdp_rl_stats before;
	int fd, fd2;
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "lists: load"))
		return;
	fd = trie_new();
	fd2 = trie_new();
	if (fd < 0 || fd2 < 0 || list_put(fd, "198.18.20.0", 24, XDP_RL_RULE_DENY) ||
	    list_put(fd, "198.18.21.0", 24, XDP_RL_RULE_DENY) ||
	    list_put(fd, "198.18.22.0", 24, XDP_RL_RULE_DENY) ||
	    list_put(fd, "198.18.23.0", 24, XDP_RL_RULE_DENY) ||
	    list_put(fd, "2001:2:0:24::", 64, XDP_RL_RULE_DENY) ||
	    list_put(fd, "198.18.26.0", 24, XDP_RL_RULE_ALLOW) ||
	    rule4_with_len(&e, "198.18.20.7", 32, &allow32) ||
	    rule4_with_len(&e, "198.18.0.0", 16, &limit16) ||
	    rule4_with_len(&e, "198.18.22.0", 24, &same24) ||
	    rule4_with_len(&e, "198.18.23.5", 32, &syn32) || lists_in(&e, fd)) {
		UNIT_FAIL("lists: set up: %s", strerror(errno));
		goto out;
	}
	live.nrules4 = 4;
	live.flags |= XDP_RL_F_SELECT;
	/* Without the flags the datapath does not look: as with no lists. */
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &denied, 4), 4,
		  "lists: XDP_RL_F_LISTS4 not set: the trie is not looked up (the /16's 5)");
	live.flags |= XDP_RL_F_LISTS4 | XDP_RL_F_LISTS6;
	env_live(&e, &live);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &denied, 5), 0,
		  "lists: a /24 on the deny list inside a /16 rule: "
		  "the longer prefix, the list, drops");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DENIED), 5, "lists: ... counted as denied");
	ASSERT_EQ(list_hits(&e, XDP_RL_LIST_DENY_ID), 5, "lists: ... and as the deny list's");
	ASSERT_EQ(send_n(&e, &exempt, 8), 8,
		  "lists: a /32 --allow rule inside a listed /24: the longer, the rule, passes");
	ASSERT_EQ(send_n(&e, &in16, 2), 0, "lists: another listed /24 in the /16: dropped");
	ASSERT_EQ(send_n(&e, &same, 6), 6,
		  "lists: a rule of the same prefix as a listed one: the rule judges");
	ASSERT_EQ(send_n(&e, &syn_miss, 3), 0,
		  "lists: a /32 rule whose selector misses is as if absent: the listed /24 drops");
	ASSERT_EQ(send_n(&e, &v6, 2), 0, "lists: IPv6 on the deny list: dropped");
	ASSERT_EQ(send_n(&e, &v6_out, 4), 3, "lists: IPv6 beside it: the global limit of 3");
	ASSERT_EQ(send_n(&e, &allowed, 7), 7,
		  "lists: on the allow list, inside a /16 rule of 5: the list passes all");
	ASSERT_EQ(list_hits(&e, XDP_RL_LIST_ALLOW_ID), 7, "lists: ... counted as the allow list's");
	ASSERT_EQ(send_n(&e, &outside, 6), 5, "lists: a source on no list: its rule's 5");

	/* A new trie, put in with one update: at once, whole. */
	if (list_put(fd2, "198.18.99.0", 24, XDP_RL_RULE_DENY) || lists_in(&e, fd2)) {
		UNIT_FAIL("lists: replace: %s", strerror(errno));
		goto out;
	}
	ASSERT_EQ(send_n(&e, &denied, 4), 1,
		  "lists: replaced: the old list is gone (the /16 rule's 5, 4 used before)");
	ASSERT_EQ(send_n(&e, &outside, 1), 0, "lists: replaced: the new list drops its /24");
	/* No trie at all: nothing is listed. */
	{
		__u32 zero = 0;

		bpf_map_delete_elem(bpf_map__fd(e.skel->maps.lists), &zero);
	}
	ASSERT_EQ(send_n(&e, &v6, 3), 3, "lists: no trie in `lists`: nothing is listed");
out:
	if (fd >= 0)
		close(fd);
	if (fd2 >= 0)
		close(fd2);
	env_free(&e);
}

/* @text parsed as a list file into @pl: 0, or -1 after failing the test. */
static int list_of(const char *text, struct prefix_list *pl)
{
	char why[256];

	if (!list_parse(text, strlen(text), "test", pl, why, sizeof(why)))
		return 0;
	UNIT_FAIL("%s: %s", unit_name(), why);
	return -1;
}

/* The list lists_lookup finds @addr on: LIST_ALLOW, LIST_DENY, -1 on none, -2 on error. */
static int lookup(struct env *e, const char *addr, unsigned int *len)
{
	struct list_prefix p;
	struct ip_addr a;
	int kind, r;

	*len = ~0U;
	if (parse_addr(addr, &a))
		return -2;
	r = lists_lookup(&e->lim, &a, &kind, &p);
	*len = r > 0 ? p.len : ~0U;
	return r > 0 ? kind : r ? -2 : -1;
}

/* The prefix counts lists_meta gives, [allow, deny][IPv4, IPv6], as one number: 0xA4A6D4D6. */
static __u64 counts(struct env *e)
{
	struct xdp_rl_list_meta m;

	if (lists_meta(&e->lim, &m))
		return ~0ULL;
	return m.prefixes[0][0] << 24 | m.prefixes[0][1] << 16 | m.prefixes[1][0] << 8 |
	       m.prefixes[1][1];
}

/*
 * Lists put in by lists_replace (user/lists.c): an IPv6 prefix over
 * ::ffff:0:0/96, where the trie both families share keeps IPv4, judges
 * no IPv4 source (::/0 on the allow list would allow every one, ::/8 on a
 * deny list deny every one); what reads the lists sees only what they hold.
 */
UNIT_TEST(lists_ipv6_over_mapped)
{
	static const struct xdp_rl_layer one[] = { { 3, 10 * SEC_NS } };
	struct xdp_rl_live live = live_of(1, one);
	struct pkt denied = build(&(struct pkt_spec){ V4, "198.18.30.1" });
	struct pkt free4 = build(&(struct pkt_spec){ V4, "198.18.31.1" });
	struct pkt all6 = build(&(struct pkt_spec){ V6, "2001:2:0:30::1" });
	struct pkt bogon_denied = build(&(struct pkt_spec){ V4, "198.18.32.1" });
	struct pkt bogon_free = build(&(struct pkt_spec){ V4, "198.18.33.1" });
	struct pkt all4 = build(&(struct pkt_spec){ V4, "198.18.34.1" });
	struct prefix_list pl[LIST_KINDS] = {}, got = {};
	struct xdp_rl_list_meta no_meta = {};
	__u32 k;
	unsigned int len;
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "lists_ipv6_over_mapped: load"))
		return;
	env_live(&e, &live);
	if (list_of("::/0\n", &pl[LIST_ALLOW]) || list_of("198.18.30.0/24\n", &pl[LIST_DENY]) ||
	    !ASSERT_EQ(lists_replace(&e.lim, &pl[LIST_ALLOW], &pl[LIST_DENY]), 0,
		       "lists: allow ::/0, deny an IPv4 /24: put in"))
		goto out;
	ASSERT_EQ(send_n(&e, &denied, 4), 0, "lists: allow ::/0: the denied /24 drops");
	ASSERT_EQ(send_n(&e, &free4, 5), 3,
		  "lists: allow ::/0: an IPv4 source on no IPv4 prefix: the global limit of 3");
	ASSERT_EQ(send_n(&e, &all6, 5), 5, "lists: allow ::/0: IPv6 passes all");
	ASSERT_EQ(lookup(&e, "198.18.31.1", &len), -1,
		  "lists: lists_lookup: the IPv4 source on no IPv4 prefix is on no list");
	ASSERT_EQ(lookup(&e, "198.18.30.1", &len), LIST_DENY, "lists: lists_lookup: the /24's");
	ASSERT_EQ(len, 24, "lists: lists_lookup: ... by its /24");
	ASSERT_EQ(lookup(&e, "2001:2:0:30::1", &len), LIST_ALLOW, "lists: lists_lookup: IPv6");
	ASSERT_EQ(len, 0, "lists: lists_lookup: ... by ::/0");
	ASSERT_EQ(counts(&e), 0x00010100, "lists: lists_meta: 1 IPv6 allowed, 1 IPv4 denied");
	/* No description (a replacement killed half way): counted in the trie again. */
	for (k = 0; k < 2; k++)
		bpf_map_update_elem(bpf_map__fd(e.skel->maps.list_meta), &k, &no_meta, 0);
	ASSERT_EQ(counts(&e), 0x00010100, "lists: counted in the trie: what the lists hold");
	if (ASSERT_EQ(lists_get(&e.lim, LIST_ALLOW, &got), 0, "lists: lists_get allow") &&
	    ASSERT_EQ(got.n, 1, "lists: lists_get: the allow list is ::/0 alone")) {
		ASSERT_EQ(got.v[0].addr.family, AF_INET6, "lists: lists_get: ... IPv6");
		ASSERT_EQ(got.v[0].len, 0, "lists: lists_get: ... /0");
	}
	list_free(&got);
	if (ASSERT_EQ(lists_get(&e.lim, LIST_DENY, &got), 0, "lists: lists_get deny"))
		ASSERT_EQ(got.n, 1, "lists: lists_get: the deny list is its /24 alone");
	list_free(&got);
	list_free(&pl[LIST_ALLOW]);
	list_free(&pl[LIST_DENY]);

	/* The mirror: a bogon ::/8 on the deny list, with an IPv4 /24; none allowed. */
	if (list_of("", &pl[LIST_ALLOW]) || list_of("::/8\n198.18.32.0/24\n", &pl[LIST_DENY]) ||
	    !ASSERT_EQ(lists_replace(&e.lim, &pl[LIST_ALLOW], &pl[LIST_DENY]), 0,
		       "lists: deny ::/8 and an IPv4 /24: put in"))
		goto out;
	ASSERT_EQ(send_n(&e, &bogon_denied, 4), 0, "lists: deny ::/8: the denied /24 drops");
	ASSERT_EQ(send_n(&e, &bogon_free, 5), 3,
		  "lists: deny ::/8: an IPv4 source on no IPv4 prefix: the global limit of 3");
	ASSERT_EQ(lookup(&e, "198.18.33.1", &len), -1,
		  "lists: deny ::/8: lists_lookup: on no list");
	ASSERT_EQ(counts(&e), 0x00000101, "lists: deny ::/8: 1 IPv4 and 1 IPv6 denied");
	list_free(&pl[LIST_DENY]);

	/* 0.0.0.0/0, keyed as ::ffff:0:0/96 too: listed, it judges every IPv4 source. */
	if (list_of("::/8\n0.0.0.0/0\n", &pl[LIST_DENY]) ||
	    !ASSERT_EQ(lists_replace(&e.lim, &pl[LIST_ALLOW], &pl[LIST_DENY]), 0,
		       "lists: deny ::/8 and 0.0.0.0/0: put in"))
		goto out;
	ASSERT_EQ(send_n(&e, &all4, 4), 0, "lists: deny 0.0.0.0/0: every IPv4 source drops");
	ASSERT_EQ(lookup(&e, "198.18.34.1", &len), LIST_DENY,
		  "lists: deny 0.0.0.0/0: lists_lookup: on the deny list");
	ASSERT_EQ(len, 0, "lists: deny 0.0.0.0/0: ... by /0");
	ASSERT_EQ(counts(&e), 0x00000101, "lists: deny 0.0.0.0/0: 1 IPv4 and 1 IPv6 denied");
out:
	list_free(&pl[LIST_ALLOW]);
	list_free(&pl[LIST_DENY]);
	env_free(&e);
}
