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
