// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_keys.c - what a budget is for (load --key, include/xdp_rl.h): the
 * source (the default) or the destination address, with the destination
 * port or not. A port that cannot be read (not TCP/UDP, a later fragment)
 * is port 0: one budget. Rules and --link-local match the key's address;
 * aggregates keep the port; user space finds a key with its port.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "admin.h"
#include "events.h"
#include "harness.h"
#include "live.h"
#include "options.h"
#include "sources.h"

#define HOUR  (3600 * SEC_NS)
#define LIMIT 3 /* the global limit of these tests: 3 per hour */
#define SYN   0x02

/* A packet from @s->src to @dst (build() sends to 198.18.0.2 or 2001:2::2); no VLAN tags. */
static struct pkt pkt_to(struct pkt_spec s, const char *dst)
{
	struct pkt p = build(&s);

	if (s.family == V4)
		inet_pton(AF_INET, dst, p.b + ETH_HLEN + 16);
	else
		inet_pton(AF_INET6, dst, p.b + ETH_HLEN + 24);
	return p;
}

/* UDP from @src to @dst port @dport. */
static struct pkt udp(int family, const char *src, const char *dst, __u16 dport)
{
	return pkt_to((struct pkt_spec){ family, src, .proto = IPPROTO_UDP, .dport = dport }, dst);
}

/* The key of @addr (as the table keys it: masked) and @port, laid out as key_make does. */
static void key_of(const char *addr, int port, __u32 k[4])
{
	memset(k, 0, 16);
	if (strchr(addr, ':')) {
		inet_pton(AF_INET6, addr, k);
		if (port >= 0)
			k[3] |= htonl(port);
	} else {
		inet_pton(AF_INET, addr, k);
		if (port >= 0)
			k[1] = htonl(port);
	}
}

/*
 * What key @k of table @mt (enum xdp_rl_table @t) was offered in its window
 * under limit set @lsid, as count4_layer reads it (drops counted apart
 * included), or -1 if it has no slot.
 */
static long long count_in(struct env *e, const struct mtable *mt, __u32 t, const __u32 k[4],
			  __u32 lsid)
{
	struct mt_entry en;
	__u64 c;

	if (mt_get(mt, k, lsid, &en) <= 0)
		return -1;
	c = en.w[0].count_gen;
	if (mt->lru && !xdp_rl_gen_of_count(c))
		return 0;
	drops_forget();
	return xdp_rl_count(c) + window_drops(&e->lim, t, en.id, 0, xdp_rl_gen_of_count(c),
					      en.has_words ? &en.drops[0] : NULL);
}

/* The count of source-table key @addr/@port (port -1: a key without one), or -1. */
static long long count_key(struct env *e, const char *addr, int port)
{
	__u32 k[4];
	int v6 = strchr(addr, ':') != NULL;

	key_of(addr, port, k);
	return count_in(e, v6 ? &e->t6 : &e->t4, v6 ? XDP_RL_T_SRC6 : XDP_RL_T_SRC4, k, TEST_LSID);
}

/* One layer of LIMIT per hour, link-local sources as @link_local says, under limit set @lsid. */
static void keys_live(struct env *e, __u32 link_local, __u32 lsid)
{
	struct xdp_rl_live live = { .nlayers = 1, .link_local = link_local, .lsid = lsid };

	live.layer[0].limit = LIMIT;
	live.layer[0].window_ns = HOUR;
	env_live(e, &live);
}

static int keys_open(struct env *e, __u32 key, int v6_prefix, int admin, const char *what)
{
	if (env_open(e, &(struct load_opts){ .key = key, .v6_prefix = v6_prefix, .admin = admin },
		     what))
		return -1;
	keys_live(e, XDP_RL_LL_ADDRESS, 0);
	return 0;
}

/* Live keys in a table, by mt_foreach. */
struct key_walk {
	int n;
	__u32 k[8][4];
};

static int key_collect(const struct mt_entry *en, void *ctx)
{
	struct key_walk *w = ctx;

	if (w->n < 8)
		memcpy(w->k[w->n], en->k, 16);
	w->n++;
	return 0;
}

/* Whether the walk saw key @k. */
static int key_seen(const struct key_walk *w, const __u32 k[4])
{
	int i;

	for (i = 0; i < w->n && i < 8; i++)
		if (!memcmp(w->k[i], k, 16))
			return 1;
	return 0;
}

/* ---- src,dport ------------------------------------------------------------------ */

UNIT_TEST(keys_src_dport_v4)
{
	struct pkt u80 = udp(V4, "198.18.40.1", "198.18.0.2", 80);
	struct pkt t80 = pkt_to((struct pkt_spec){ V4, "198.18.40.1", .proto = IPPROTO_TCP,
						   .dport = 80, .tcp_flags = SYN },
				"198.18.0.2");
	struct pkt u443 = udp(V4, "198.18.40.1", "198.18.0.2", 443);
	struct pkt other = udp(V4, "198.18.40.2", "198.18.0.2", 80);
	struct xdp_rl_stats before;
	struct env e;

	if (keys_open(&e, XDP_RL_KEY_SRC_DPORT, 0, 0, "keys src,dport v4: load"))
		return;
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &u80, 5), LIMIT, "keys src,dport v4: port 80: 3 of 5 pass");
	ASSERT_EQ(send_n(&e, &u443, 5), LIMIT,
		  "keys src,dport v4: the same source to port 443: a budget of its own, 3 of 5");
	ASSERT_EQ(send_n(&e, &t80, 2), 0,
		  "keys src,dport v4: TCP to port 80: the same key as UDP to 80 (spent)");
	ASSERT_EQ(send_n(&e, &other, 4), LIMIT,
		  "keys src,dport v4: another source to port 80: its own budget");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_INSERTS), 3,
		  "keys src,dport v4: three keys inserted");
	ASSERT_EQ(count_key(&e, "198.18.40.1", 80), 7,
		  "keys src,dport v4: key {198.18.40.1, 80} was offered 7");
	ASSERT_EQ(count_key(&e, "198.18.40.1", 443), 5,
		  "keys src,dport v4: key {198.18.40.1, 443} was offered 5");
	ASSERT_EQ(count_key(&e, "198.18.40.1", 0), -1,
		  "keys src,dport v4: no key of port 0 (every port was read)");
	env_free(&e);
}

UNIT_TEST(keys_src_dport_v6)
{
	struct pkt a53 = udp(V6, "2001:2:0:41::1", "2001:2::2", 53);
	struct pkt b53 = udp(V6, "2001:2:0:41::2", "2001:2::2", 53);
	struct pkt a443 = udp(V6, "2001:2:0:41::1", "2001:2::2", 443);
	struct pkt b443 = udp(V6, "2001:2:0:41::2", "2001:2::2", 443);
	struct pkt c53 = udp(V6, "2001:2:0:42::1", "2001:2::2", 53);
	struct env e;

	if (keys_open(&e, XDP_RL_KEY_SRC_DPORT, 0, 0, "keys src,dport v6: load"))
		return;
	ASSERT_EQ(send_n(&e, &a53, 2) + send_n(&e, &b53, 2), LIMIT,
		  "keys src,dport v6: two sources of one /64 to port 53 share its 3");
	ASSERT_EQ(send_n(&e, &a443, 2) + send_n(&e, &b443, 2), LIMIT,
		  "keys src,dport v6: ... to port 443 another budget of 3");
	ASSERT_EQ(send_n(&e, &c53, 4), LIMIT, "keys src,dport v6: another /64 to 53: its own 3");
	ASSERT_EQ(count_key(&e, "2001:2:0:41::", 53), 4,
		  "keys src,dport v6: key 2001:2:0:41::/64 port 53 (in its last 16 bits): 4");
	ASSERT_EQ(count_key(&e, "2001:2:0:41::", 443), 4,
		  "keys src,dport v6: key 2001:2:0:41::/64 port 443: 4");
	ASSERT_EQ(count_key(&e, "2001:2:0:41::", -1), -1,
		  "keys src,dport v6: no key of the /64 without a port");
	env_free(&e);
}

/* --v6-prefix 112, the longest a key with a port may have: the address's 112 bits and the port. */
UNIT_TEST(keys_src_dport_v6_112)
{
	struct pkt a = udp(V6, "2001:2::5:7", "2001:2::2", 80);
	struct pkt b = udp(V6, "2001:2::5:8", "2001:2::2", 80);
	struct pkt c = udp(V6, "2001:2::6:7", "2001:2::2", 80);
	struct pkt a81 = udp(V6, "2001:2::5:7", "2001:2::2", 81);
	struct env e;

	if (keys_open(&e, XDP_RL_KEY_SRC_DPORT, 112, 0, "keys src,dport /112: load"))
		return;
	ASSERT_EQ(send_n(&e, &a, 2) + send_n(&e, &b, 2), LIMIT,
		  "keys src,dport /112: 2001:2::5:7 and ::5:8 share 2001:2::5:0/112 port 80");
	ASSERT_EQ(send_n(&e, &c, 4), LIMIT, "keys src,dport /112: ::6:7, another /112: its own 3");
	ASSERT_EQ(send_n(&e, &a81, 4), LIMIT, "keys src,dport /112: port 81: its own 3");
	ASSERT_EQ(count_key(&e, "2001:2::5:0", 80), 4,
		  "keys src,dport /112: key 2001:2::5:50 (the /112 and port 80): 4");
	ASSERT_EQ(count_key(&e, "2001:2::5:0", 81), 4, "keys src,dport /112: port 81's key: 4");
	env_free(&e);
}

/* ---- dst, dst,dport -------------------------------------------------------------- */

UNIT_TEST(keys_dst)
{
	struct pkt to1[10], to2, from1, six[4], six2;
	char src[40];
	struct env e;
	int i, ok;

	for (i = 0; i < 10; i++) {
		snprintf(src, sizeof(src), "198.18.%d.%d", 100 + i, i + 1);
		to1[i] = udp(V4, src, "198.18.50.1", 1000 + i);
	}
	to2 = udp(V4, "198.18.100.1", "198.18.50.2", 80);
	from1 = udp(V4, "198.18.50.1", "198.18.0.2", 80);
	for (i = 0; i < 4; i++) {
		snprintf(src, sizeof(src), "2001:2:%x::1", 0x100 + i);
		six[i] = udp(V6, src, "2001:2:0:51::1", 80 + i);
	}
	six2 = udp(V6, "2001:2:100::1", "2001:2:0:52::1", 80);
	if (keys_open(&e, XDP_RL_KEY_DST, 0, 0, "keys dst: load"))
		return;
	for (ok = 0, i = 0; i < 10; i++)
		ok += send_n(&e, &to1[i], 1);
	ASSERT_EQ(ok, LIMIT, "keys dst: 10 sources (and ports) to 198.18.50.1 share its 3");
	ASSERT_EQ(send_n(&e, &to2, 4), LIMIT, "keys dst: 198.18.50.2: a budget of its own");
	ASSERT_EQ(send_n(&e, &from1, 4), LIMIT,
		  "keys dst: a packet *from* 198.18.50.1 is keyed by its destination, not it");
	ASSERT_EQ(count4(&e, "198.18.50.1"), 10, "keys dst: key 198.18.50.1 was offered 10");
	ASSERT_EQ(count4(&e, "198.18.0.2"), 4, "keys dst: key 198.18.0.2 was offered 4");
	ASSERT_EQ(count4(&e, "198.18.100.1"), -1, "keys dst: no key of a source");
	for (ok = 0, i = 0; i < 4; i++)
		ok += send_n(&e, &six[i], 1);
	ASSERT_EQ(ok, LIMIT, "keys dst: IPv6: 4 sources to 2001:2:0:51::1 share its /64's 3");
	ASSERT_EQ(send_n(&e, &six2, 4), LIMIT, "keys dst: IPv6: another /64: its own 3");
	ASSERT_EQ(count_key(&e, "2001:2:0:51::", -1), 4,
		  "keys dst: IPv6 key 2001:2:0:51::/64 offered 4");
	env_free(&e);
}

UNIT_TEST(keys_dst_dport)
{
	struct pkt d1p80[4], d1p443, d2p80, six80[2], six443;
	char src[40];
	struct env e;
	int i, ok;

	for (i = 0; i < 4; i++) {
		snprintf(src, sizeof(src), "198.18.%d.1", 110 + i);
		d1p80[i] = udp(V4, src, "198.18.52.1", 80);
	}
	d1p443 = udp(V4, "198.18.110.1", "198.18.52.1", 443);
	d2p80 = udp(V4, "198.18.110.1", "198.18.52.2", 80);
	six80[0] = udp(V6, "2001:2:110::1", "2001:2:0:53::1", 80);
	six80[1] = udp(V6, "2001:2:111::1", "2001:2:0:53::2", 80);
	six443 = udp(V6, "2001:2:110::1", "2001:2:0:53::1", 443);
	if (keys_open(&e, XDP_RL_KEY_DST_DPORT, 0, 0, "keys dst,dport: load"))
		return;
	for (ok = 0, i = 0; i < 4; i++)
		ok += send_n(&e, &d1p80[i], 1);
	ASSERT_EQ(ok, LIMIT, "keys dst,dport: 4 sources to 198.18.52.1 port 80 share its 3");
	ASSERT_EQ(send_n(&e, &d1p443, 4), LIMIT,
		  "keys dst,dport: 198.18.52.1 port 443: a budget of its own");
	ASSERT_EQ(send_n(&e, &d2p80, 4), LIMIT,
		  "keys dst,dport: 198.18.52.2 port 80: a budget of its own");
	ASSERT_EQ(count_key(&e, "198.18.52.1", 80), 4, "keys dst,dport: {198.18.52.1, 80}: 4");
	ASSERT_EQ(count_key(&e, "198.18.52.1", 443), 4, "keys dst,dport: {198.18.52.1, 443}: 4");
	ASSERT_EQ(count_key(&e, "198.18.110.1", 80), -1, "keys dst,dport: no key of a source");
	ASSERT_EQ(send_n(&e, &six80[0], 2) + send_n(&e, &six80[1], 2), LIMIT,
		  "keys dst,dport: IPv6: two destinations of one /64, port 80: one budget");
	ASSERT_EQ(send_n(&e, &six443, 4), LIMIT, "keys dst,dport: IPv6: port 443: its own 3");
	ASSERT_EQ(count_key(&e, "2001:2:0:53::", 80), 4, "keys dst,dport: IPv6 /64 port 80: 4");
	env_free(&e);
}

/* ---- port 0 ---------------------------------------------------------------------- */

/*
 * A later fragment of @s whose payload starts as a transport header to
 * port @fake would: a parser that took it for one would give each @fake a
 * budget of its own.
 */
static struct pkt fragment(struct pkt_spec s, __u16 fake)
{
	struct pkt p;
	__u32 off;

	s.later_fragment = 1;
	p = build(&s);
	off = s.family == V4 ? ETH_HLEN + 20 : ETH_HLEN + 40 + 8 * s.ext + 8;
	put16(p.b + off, 40000);
	put16(p.b + off + 2, fake);
	return p;
}

UNIT_TEST(keys_port_zero_v4)
{
	static const char *const flood_what = "keys port 0 v4: a flood hiding its port "
					      "(ICMP, later fragments of TCP and UDP)";
	struct pkt icmp = build(&(struct pkt_spec){ V4, "198.18.54.1", .proto = IPPROTO_ICMP });
	struct pkt frag_u =
		fragment((struct pkt_spec){ V4, "198.18.54.1", .proto = IPPROTO_UDP }, 80);
	struct pkt frag_t =
		fragment((struct pkt_spec){ V4, "198.18.54.1", .proto = IPPROTO_TCP }, 443);
	struct pkt flood;
	struct pkt first = build(&(struct pkt_spec){ V4, "198.18.54.1", .proto = IPPROTO_TCP,
						     .dport = 80, .first_cut = 1 });
	struct pkt u80 = build(&(struct pkt_spec){ V4, "198.18.54.1", .dport = 80 });
	struct pkt other = build(&(struct pkt_spec){ V4, "198.18.54.2", .proto = IPPROTO_ICMP });
	struct env e;
	int i, ok;

	if (keys_open(&e, XDP_RL_KEY_SRC_DPORT, 0, 0, "keys port 0 v4: load"))
		return;
	ASSERT_EQ(send_n(&e, &icmp, 1) + send_n(&e, &frag_u, 1) + send_n(&e, &frag_t, 1), LIMIT,
		  "keys port 0 v4: ICMP and later fragments spend one budget: 3 pass");
	ASSERT_EQ(send_n(&e, &icmp, 1) + send_n(&e, &frag_u, 1) + send_n(&e, &frag_t, 1), 0,
		  "keys port 0 v4: ... and then none of them");
	ASSERT_EQ(send_n(&e, &u80, 2), 2,
		  "keys port 0 v4: UDP to port 80 keeps its own budget (untouched by port 0)");
	ASSERT_EQ(send_n(&e, &first, 2), 1,
		  "keys port 0 v4: a first fragment's port is read: port 80's budget, 1 left");
	for (ok = 0, i = 0; i < 30; i++) {
		flood = fragment((struct pkt_spec){ V4, "198.18.54.1",
						    .proto = i % 2 ? IPPROTO_TCP : IPPROTO_UDP },
				 1000 + i);
		ok += send_n(&e, i % 3 == 0 ? &icmp : &flood, 1);
	}
	ASSERT_EQ(ok, 0, "%s: nothing past the one budget", flood_what);
	ASSERT_EQ(send_n(&e, &other, 5), LIMIT,
		  "keys port 0 v4: another address's ICMP: its own port 0 budget");
	ASSERT_EQ(count_key(&e, "198.18.54.1", 0), 36,
		  "keys port 0 v4: key {198.18.54.1, 0} was offered all 36 portless packets");
	ASSERT_EQ(count_key(&e, "198.18.54.1", 80), 4,
		  "keys port 0 v4: key {198.18.54.1, 80}: 2 UDP and 2 first fragments");
	env_free(&e);
}

UNIT_TEST(keys_port_zero_v6)
{
	struct pkt icmp =
		build(&(struct pkt_spec){ V6, "2001:2:0:55::1", .proto = IPPROTO_ICMPV6 });
	struct pkt frag_u =
		fragment((struct pkt_spec){ V6, "2001:2:0:55::2", .proto = IPPROTO_UDP }, 53);
	struct pkt frag_t = fragment(
		(struct pkt_spec){ V6, "2001:2:0:55::3", .proto = IPPROTO_TCP, .ext = 2 }, 443);
	struct pkt flood;
	struct pkt first = build(&(struct pkt_spec){ V6, "2001:2:0:55::1", .proto = IPPROTO_UDP,
						     .dport = 53, .first_cut = 1 });
	struct pkt ext = build(&(struct pkt_spec){ V6, "2001:2:0:55::1", .proto = IPPROTO_UDP,
						   .dport = 53, .ext = 3 });
	struct pkt u53 = build(&(struct pkt_spec){ V6, "2001:2:0:55::1", .dport = 53 });
	struct pkt other =
		build(&(struct pkt_spec){ V6, "2001:2:0:56::1", .proto = IPPROTO_ICMPV6 });
	struct env e;
	int i, ok;

	if (keys_open(&e, XDP_RL_KEY_SRC_DPORT, 0, 0, "keys port 0 v6: load"))
		return;
	ASSERT_EQ(send_n(&e, &icmp, 1) + send_n(&e, &frag_u, 1) + send_n(&e, &frag_t, 1), LIMIT,
		  "keys port 0 v6: ICMPv6 and later fragments of one /64 spend one budget");
	for (ok = 0, i = 0; i < 30; i++) {
		flood = fragment((struct pkt_spec){ V6, "2001:2:0:55::4",
						    .proto = i % 2 ? IPPROTO_TCP : IPPROTO_UDP,
						    .ext = i % 3 },
				 1000 + i);
		ok += send_n(&e, i % 3 == 0 ? &icmp : &flood, 1);
	}
	ASSERT_EQ(ok, 0, "keys port 0 v6: a flood hiding its port: nothing past the one budget");
	ASSERT_EQ(send_n(&e, &u53, 1) + send_n(&e, &first, 1) + send_n(&e, &ext, 1), LIMIT,
		  "keys port 0 v6: UDP to 53 (plain, a first fragment, after extension headers) "
		  "keeps its own budget");
	ASSERT_EQ(send_n(&e, &u53, 1), 0, "keys port 0 v6: ... of 3");
	ASSERT_EQ(send_n(&e, &other, 5), LIMIT, "keys port 0 v6: another /64: its own budget");
	ASSERT_EQ(count_key(&e, "2001:2:0:55::", 0), 33, "keys port 0 v6: the /64's port 0: 33");
	ASSERT_EQ(count_key(&e, "2001:2:0:55::", 53), 4, "keys port 0 v6: the /64's port 53: 4");
	env_free(&e);
}

/* --key dst,dport: what cannot say its port is charged to the destination's port 0. */
UNIT_TEST(keys_port_zero_dst)
{
	struct pkt icmp[3], frag[3], u80;
	char src[40];
	struct env e;
	int i, ok;

	for (i = 0; i < 3; i++) {
		snprintf(src, sizeof(src), "198.18.%d.9", 120 + i);
		icmp[i] =
			pkt_to((struct pkt_spec){ V4, src, .proto = IPPROTO_ICMP }, "198.18.57.1");
		frag[i] = fragment((struct pkt_spec){ V4, src, .proto = IPPROTO_UDP }, 80 + i);
		inet_pton(AF_INET, "198.18.57.1", frag[i].b + ETH_HLEN + 16);
	}
	u80 = udp(V4, "198.18.120.9", "198.18.57.1", 80);
	if (keys_open(&e, XDP_RL_KEY_DST_DPORT, 0, 0, "keys port 0 dst: load"))
		return;
	for (ok = 0, i = 0; i < 3; i++)
		ok += send_n(&e, &icmp[i], 2) + send_n(&e, &frag[i], 2);
	ASSERT_EQ(ok, LIMIT, "keys port 0 dst: 12 portless packets to 198.18.57.1: one budget");
	ASSERT_EQ(send_n(&e, &u80, 4), LIMIT, "keys port 0 dst: its port 80: its own budget");
	ASSERT_EQ(count_key(&e, "198.18.57.1", 0), 12, "keys port 0 dst: {198.18.57.1, 0}: 12");
	env_free(&e);
}

/* ---- src, the default ------------------------------------------------------------ */

UNIT_TEST(keys_src_default)
{
	struct pkt u80 = udp(V4, "198.18.58.1", "198.18.0.2", 80);
	struct pkt u443 = udp(V4, "198.18.58.1", "198.18.0.2", 443);
	struct pkt icmp = build(&(struct pkt_spec){ V4, "198.18.58.1", .proto = IPPROTO_ICMP });
	struct pkt other_dst = udp(V4, "198.18.58.1", "198.18.58.200", 22);
	struct pkt s80 = udp(V6, "2001:2:0:58::1", "2001:2::2", 80);
	struct pkt s443 = udp(V6, "2001:2:0:58::1", "2001:2::2", 443);
	struct env e;

	if (keys_open(&e, XDP_RL_KEY_SRC, 0, 0, "keys src: load"))
		return;
	ASSERT_EQ(send_n(&e, &u80, 2) + send_n(&e, &u443, 2) + send_n(&e, &icmp, 1) +
			  send_n(&e, &other_dst, 1),
		  LIMIT, "keys src: ports, protocols and destinations of one source: one budget");
	ASSERT_EQ(count4(&e, "198.18.58.1"), 6, "keys src: the source's narrow key: 6");
	ASSERT_EQ(e.t4.wide, 0, "keys src: the IPv4 table keeps 4-byte keys");
	ASSERT_EQ(send_n(&e, &s80, 2) + send_n(&e, &s443, 2), LIMIT,
		  "keys src: IPv6: ports of one /64: one budget");
	ASSERT_EQ(count_key(&e, "2001:2:0:58::", -1), 4, "keys src: the /64's key, no port: 4");
	env_free(&e);
}

/* ---- link-local ------------------------------------------------------------------ */

UNIT_TEST(keys_link_local)
{
	struct pkt v4a80 = udp(V4, "169.254.7.1", "198.18.0.2", 80);
	struct pkt v4a443 = udp(V4, "169.254.7.1", "198.18.0.2", 443);
	struct pkt v4b80 = udp(V4, "169.254.7.2", "198.18.0.2", 80);
	struct pkt n1p80 = udp(V6, "fe80::1", "2001:2::2", 80);
	struct pkt n1p443 = udp(V6, "fe80::1", "2001:2::2", 443);
	struct pkt n1icmp = build(&(struct pkt_spec){ V6, "fe80::1", .proto = IPPROTO_ICMPV6 });
	struct pkt n2p80 = udp(V6, "fe80::2", "2001:2::2", 80);
	struct pkt n50 = udp(V6, "fe80::50", "2001:2::2", 80);
	struct env e;

	if (env_open(&e, &(struct load_opts){ .key = XDP_RL_KEY_SRC_DPORT, .v4_prefix = 16 },
		     "keys link-local: load"))
		return;
	keys_live(&e, XDP_RL_LL_ADDRESS, 0);
	ASSERT_EQ(send_n(&e, &v4a80, 5), LIMIT, "keys link-local: 169.254.7.1 port 80: 3 of 5");
	ASSERT_EQ(send_n(&e, &v4a443, 5), LIMIT,
		  "keys link-local: 169.254.7.1 port 443: IPv4 keeps its port, its own 3");
	ASSERT_EQ(send_n(&e, &v4b80, 5), LIMIT,
		  "keys link-local: 169.254.7.2 port 80: keyed per address, its own 3");
	ASSERT_EQ(count_key(&e, "169.254.7.1", 443), 5,
		  "keys link-local: key {169.254.7.1/32, 443}: 5");
	ASSERT_EQ(count_key(&e, "169.254.0.0", 80), -1,
		  "keys link-local: no key of the /16 (keyed per address)");
	ASSERT_EQ(send_n(&e, &n1p80, 2) + send_n(&e, &n1p443, 2) + send_n(&e, &n1icmp, 2), LIMIT,
		  "keys link-local: fe80::1 keyed whole: its ports share one budget");
	ASSERT_EQ(send_n(&e, &n2p80, 4), LIMIT, "keys link-local: fe80::2: its own budget");
	ASSERT_EQ(count_key(&e, "fe80::1", -1), 6,
		  "keys link-local: key fe80::1, whole, no port: 6");
	ASSERT_EQ(count_key(&e, "fe80::", 80), -1, "keys link-local: no key of fe80::/64 port 80");
	ASSERT_EQ(send_n(&e, &n50, 4), LIMIT,
		  "keys link-local: fe80::50 (its last 16 bits 80) to port 80: its own budget");
	ASSERT_EQ(count_key(&e, "fe80::50", -1), 4, "keys link-local: key fe80::50 whole: 4");

	/* Keyed by the prefix, as any source: the /64 and the port. */
	keys_live(&e, XDP_RL_LL_PREFIX, 9);
	ASSERT_EQ(send_n(&e, &n1p80, 2) + send_n(&e, &n2p80, 2), LIMIT,
		  "keys link-local prefix: fe80::1 and fe80::2 to port 80 share fe80::/64 port 80");
	ASSERT_EQ(send_n(&e, &n1p443, 4), LIMIT,
		  "keys link-local prefix: port 443 of the /64: its own budget");
	env_free(&e);
}

/* --key dst: --link-local judges the destination. */
UNIT_TEST(keys_link_local_dst)
{
	struct pkt p80 = udp(V6, "2001:2:0:59::1", "fe80::5", 80);
	struct pkt p443 = udp(V6, "2001:2:0:59::2", "fe80::5", 443);
	struct pkt other = udp(V6, "2001:2:0:59::1", "fe80::6", 80);
	struct pkt from_ll = udp(V6, "fe80::7", "2001:2:0:5a::1", 80);
	struct xdp_rl_stats before;
	struct env e;

	if (keys_open(&e, XDP_RL_KEY_DST_DPORT, 0, 0, "keys link-local dst: load"))
		return;
	ASSERT_EQ(send_n(&e, &p80, 2) + send_n(&e, &p443, 2), LIMIT,
		  "keys link-local dst: to fe80::5, keyed whole: its ports share one budget");
	ASSERT_EQ(send_n(&e, &other, 4), LIMIT, "keys link-local dst: fe80::6: its own budget");
	ASSERT_EQ(count_key(&e, "fe80::5", -1), 4, "keys link-local dst: key fe80::5 whole: 4");
	keys_live(&e, XDP_RL_LL_EXEMPT, 0);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &p80, 4), 4, "keys link-local dst: exempt: to fe80::5 passes");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_UNSELECTED), 4,
		  "keys link-local dst: exempt: counted unselected");
	ASSERT_EQ(send_n(&e, &from_ll, 4), LIMIT,
		  "keys link-local dst: exempt: *from* fe80::7 to a global address is limited");
	env_free(&e);
}

/* ---- rules and lists ------------------------------------------------------------- */

/* Rule @r on @addr/@len (IPv4 or IPv6), its --shared budget closed. 0, or -1. */
static int put_rule(struct env *e, const char *addr, __u32 len, struct xdp_rl_rule r)
{
	struct xdp_rl_layers zero = {};

	r.prefixlen = len;
	if (!r.lsid)
		r.lsid = 100 + r.id;
	bpf_map_update_elem(bpf_map__fd(e->skel->maps.shared), &r.id, &zero, 0);
	if (strchr(addr, ':')) {
		struct xdp_rl_rule_key6 k = { .prefixlen = len };

		inet_pton(AF_INET6, addr, k.addr);
		return bpf_map_update_elem(bpf_map__fd(e->skel->maps.rules6), &k, &r, 0);
	} else {
		struct xdp_rl_rule_key4 k = { .prefixlen = len };

		inet_pton(AF_INET, addr, &k.addr);
		return bpf_map_update_elem(bpf_map__fd(e->skel->maps.rules4), &k, &r, 0);
	}
}

UNIT_TEST(keys_rules_dst)
{
	struct xdp_rl_live live = { .nlayers = 1, .nrules4 = 3, .nrules6 = 1 };
	struct pkt to_denied = udp(V4, "198.18.130.1", "198.18.60.5", 80);
	struct pkt from_denied = udp(V4, "198.18.60.5", "198.18.61.200", 80);
	struct pkt to_allowed = udp(V4, "198.18.130.1", "198.18.62.5", 80);
	struct pkt to_own1 = udp(V4, "198.18.130.1", "198.18.63.1", 80);
	struct pkt to_own2 = udp(V4, "198.18.130.2", "198.18.63.1", 80);
	struct pkt to_own3 = udp(V4, "198.18.130.1", "198.18.63.2", 80);
	struct pkt six_denied = udp(V6, "2001:2:130::1", "2001:2:0:60::5", 80);
	struct pkt six_from = udp(V6, "2001:2:0:60::5", "2001:2:0:61::1", 80);
	struct xdp_rl_stats before;
	struct env e;

	if (env_open(&e, &(struct load_opts){ .key = XDP_RL_KEY_DST }, "keys rules dst: load"))
		return;
	if (put_rule(&e, "198.18.60.0", 24,
		     (struct xdp_rl_rule){ .id = 0, .action = XDP_RL_RULE_DENY }) ||
	    put_rule(&e, "198.18.62.0", 24,
		     (struct xdp_rl_rule){ .id = 1, .action = XDP_RL_RULE_ALLOW }) ||
	    put_rule(&e, "198.18.63.0", 24,
		     (struct xdp_rl_rule){ .id = 2,
					   .action = XDP_RL_RULE_LIMIT,
					   .nlayers = 1,
					   .layer = { { 6, HOUR } } }) ||
	    put_rule(&e, "2001:2:0:60::", 64,
		     (struct xdp_rl_rule){ .id = 3, .action = XDP_RL_RULE_DENY })) {
		UNIT_FAIL("keys rules dst: insert: %s", strerror(errno));
		env_free(&e);
		return;
	}
	live.layer[0].limit = LIMIT;
	live.layer[0].window_ns = HOUR;
	env_live(&e, &live);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &to_denied, 3), 0,
		  "keys rules dst: to a destination in a --deny /24: dropped");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DENIED), 3, "keys rules dst: ... as denied");
	ASSERT_EQ(send_n(&e, &from_denied, 5), LIMIT,
		  "keys rules dst: *from* that /24 to elsewhere: the global 3, not denied");
	ASSERT_EQ(send_n(&e, &to_allowed, 8), 8, "keys rules dst: to an --allow /24: all pass");
	ASSERT_EQ(send_n(&e, &to_own1, 4) + send_n(&e, &to_own2, 4), 6,
		  "keys rules dst: a /24 rule of 6/h: two sources to one destination share its 6");
	ASSERT_EQ(send_n(&e, &to_own3, 8), 6,
		  "keys rules dst: ... another destination of the /24: its own 6");
	ASSERT_EQ(count_in(&e, &e.t4, XDP_RL_T_SRC4, (__u32[4]){ addr4("198.18.63.1") }, 102), 8,
		  "keys rules dst: key 198.18.63.1 under the rule's limit set: 8");
	ASSERT_EQ(send_n(&e, &six_denied, 2), 0, "keys rules dst: IPv6 to a --deny /64: dropped");
	ASSERT_EQ(send_n(&e, &six_from, 5), LIMIT,
		  "keys rules dst: IPv6 *from* the /64: the global 3");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DENIED), 5,
		  "keys rules dst: 5 denied in all");
	env_free(&e);
}

/* A per-key rule under --key dst,dport: its limit for each destination and port. */
UNIT_TEST(keys_rules_dst_dport)
{
	struct xdp_rl_live live = { .nlayers = 1, .nrules4 = 1 };
	struct pkt p80 = udp(V4, "198.18.131.1", "198.18.64.1", 80);
	struct pkt p80b = udp(V4, "198.18.131.2", "198.18.64.1", 80);
	struct pkt p443 = udp(V4, "198.18.131.1", "198.18.64.1", 443);
	struct pkt out = udp(V4, "198.18.64.1", "198.18.65.1", 80);
	struct env e;

	if (env_open(&e, &(struct load_opts){ .key = XDP_RL_KEY_DST_DPORT },
		     "keys rules dst,dport: load"))
		return;
	if (put_rule(&e, "198.18.64.0", 24,
		     (struct xdp_rl_rule){ .id = 0,
					   .action = XDP_RL_RULE_LIMIT,
					   .nlayers = 1,
					   .layer = { { 6, HOUR } } })) {
		UNIT_FAIL("keys rules dst,dport: insert: %s", strerror(errno));
		env_free(&e);
		return;
	}
	live.layer[0].limit = LIMIT;
	live.layer[0].window_ns = HOUR;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &p80, 4) + send_n(&e, &p80b, 4), 6,
		  "keys rules dst,dport: to 198.18.64.1 port 80: the rule's 6");
	ASSERT_EQ(send_n(&e, &p443, 8), 6, "keys rules dst,dport: ... port 443: another 6");
	ASSERT_EQ(send_n(&e, &out, 5), LIMIT,
		  "keys rules dst,dport: from 198.18.64.1 elsewhere: the global 3");
	env_free(&e);
}

/* --key dst: the allow and deny lists hold destinations. */
UNIT_TEST(keys_lists_dst)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
	struct xdp_rl_live live = { .nlayers = 1, .flags = XDP_RL_F_LISTS4 };
	struct xdp_rl_rule_key6 k = { .prefixlen = 96 + 24 };
	__u32 v = XDP_RL_LIST_ENTRY(XDP_RL_RULE_DENY, 24), zero = 0;
	__u8 *b = (__u8 *)k.addr;
	struct pkt to = udp(V4, "198.18.132.1", "198.18.66.7", 80);
	struct pkt from = udp(V4, "198.18.66.7", "198.18.67.1", 80);
	struct env e;
	int fd;

	if (env_open(&e, &(struct load_opts){ .key = XDP_RL_KEY_DST_DPORT },
		     "keys lists dst: load"))
		return;
	fd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "test_keys", sizeof(struct xdp_rl_rule_key6),
			    sizeof(__u32), 64, &opts);
	b[10] = b[11] = 0xff;
	inet_pton(AF_INET, "198.18.66.0", b + 12);
	if (fd < 0 || bpf_map_update_elem(fd, &k, &v, 0) ||
	    bpf_map_update_elem(bpf_map__fd(e.skel->maps.lists), &zero, &fd, 0)) {
		UNIT_FAIL("keys lists dst: set up: %s", strerror(errno));
		goto out;
	}
	live.layer[0].limit = LIMIT;
	live.layer[0].window_ns = HOUR;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &to, 3), 0, "keys lists dst: to a destination on the deny list");
	ASSERT_EQ(send_n(&e, &from, 5), LIMIT,
		  "keys lists dst: from it to elsewhere: the global 3, not denied");
out:
	if (fd >= 0)
		close(fd);
	env_free(&e);
}

/* ---- aggregates ------------------------------------------------------------------ */

/* The new-source cap of 1 per hour, refused keys aggregated. */
static void keys_live_agg(struct env *e)
{
	struct xdp_rl_live live = { .nlayers = 1, .link_local = XDP_RL_LL_ADDRESS };

	live.layer[0].limit = LIMIT;
	live.layer[0].window_ns = HOUR;
	live.new_sources = (struct xdp_rl_layer){ 1, HOUR };
	live.on_full = XDP_RL_FULL_AGGREGATE;
	env_live(e, &live);
}

UNIT_TEST(keys_aggregate_port)
{
	struct pkt first = udp(V4, "198.18.68.1", "198.18.0.2", 80);
	struct pkt b80 = udp(V4, "198.18.68.2", "198.18.0.2", 80);
	struct pkt c80 = udp(V4, "198.18.68.3", "198.18.0.2", 80);
	struct pkt b443 = udp(V4, "198.18.68.2", "198.18.0.2", 443);
	struct pkt icmp = build(&(struct pkt_spec){ V4, "198.18.68.4", .proto = IPPROTO_ICMP });
	struct pkt other = udp(V4, "198.18.69.2", "198.18.0.2", 80);
	struct xdp_rl_stats before;
	struct mtable agg;
	__u32 k[4];
	struct env e;

	if (env_open(&e, &(struct load_opts){ .key = XDP_RL_KEY_SRC_DPORT },
		     "keys aggregate: load"))
		return;
	if (mt_map(&agg, bpf_map__fd(e.skel->maps.agg4), XDP_RL_T_AGG4, 1, TEST_SEED,
		   XDP_RL_KEY_SRC_DPORT)) {
		UNIT_FAIL("keys aggregate: map agg4: %s", strerror(errno));
		env_free(&e);
		return;
	}
	keys_live_agg(&e);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &first, 4), LIMIT, "keys aggregate: the one new key the cap lets in");
	ASSERT_EQ(send_n(&e, &b80, 2) + send_n(&e, &c80, 2), LIMIT,
		  "keys aggregate: two refused sources to port 80 share 198.18.68.0/24 port 80");
	ASSERT_EQ(send_n(&e, &b443, 4), LIMIT,
		  "keys aggregate: to port 443: the /24's aggregate of port 443, its own 3");
	ASSERT_EQ(send_n(&e, &icmp, 4), LIMIT, "keys aggregate: ICMP: the /24's port 0, its own 3");
	ASSERT_EQ(send_n(&e, &other, 4), LIMIT, "keys aggregate: another /24: its own 3");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_AGGREGATED), 16,
		  "keys aggregate: 16 packets aggregated");
	key_of("198.18.68.0", 80, k);
	ASSERT_EQ(count_in(&e, &agg, XDP_RL_T_AGG4, k, TEST_LSID), 4,
		  "keys aggregate: agg4 key {198.18.68.0, 80}: 4");
	key_of("198.18.68.0", 443, k);
	ASSERT_EQ(count_in(&e, &agg, XDP_RL_T_AGG4, k, TEST_LSID), 4,
		  "keys aggregate: agg4 key {198.18.68.0, 443}: 4");
	key_of("198.18.68.0", 0, k);
	ASSERT_EQ(count_in(&e, &agg, XDP_RL_T_AGG4, k, TEST_LSID), 4,
		  "keys aggregate: agg4 key {198.18.68.0, 0}: 4");
	mt_unmap(&agg);
	env_free(&e);
}

/* IPv6 aggregates of destinations: the /48 and the port. */
UNIT_TEST(keys_aggregate_dst_v6)
{
	struct pkt first = udp(V6, "2001:2:140::1", "2001:2:70:1::1", 53);
	struct pkt a = udp(V6, "2001:2:140::1", "2001:2:71:1::1", 53);
	struct pkt b = udp(V6, "2001:2:141::1", "2001:2:71:2::1", 53);
	struct pkt c = udp(V6, "2001:2:140::1", "2001:2:71:1::1", 443);
	struct mtable agg;
	__u32 k[4];
	struct env e;

	if (env_open(&e, &(struct load_opts){ .key = XDP_RL_KEY_DST_DPORT },
		     "keys aggregate v6: load"))
		return;
	if (mt_map(&agg, bpf_map__fd(e.skel->maps.agg6), XDP_RL_T_AGG6, 1, TEST_SEED,
		   XDP_RL_KEY_DST_DPORT)) {
		UNIT_FAIL("keys aggregate v6: map agg6: %s", strerror(errno));
		env_free(&e);
		return;
	}
	keys_live_agg(&e);
	ASSERT_EQ(send_n(&e, &first, 4), LIMIT, "keys aggregate v6: the one new key");
	ASSERT_EQ(send_n(&e, &a, 2) + send_n(&e, &b, 2), LIMIT,
		  "keys aggregate v6: two /64 destinations of one /48, port 53: one aggregate");
	ASSERT_EQ(send_n(&e, &c, 4), LIMIT, "keys aggregate v6: port 443 of the /48: its own");
	key_of("2001:2:71::", 53, k);
	ASSERT_EQ(count_in(&e, &agg, XDP_RL_T_AGG6, k, TEST_LSID), 4,
		  "keys aggregate v6: agg6 key 2001:2:71::/48 port 53: 4");
	mt_unmap(&agg);
	env_free(&e);
}

/* ---- user space: the keys read, found and reset with their port ------------------- */

/*
 * The test clock set to the window clock user space reads (window_clock_ns):
 * then it takes the windows the program opens for open ones.
 */
static void clock_as_user(struct env *e)
{
	e->skel->bss->fake_now_ns = window_clock_ns(limiter_live(&e->lim));
}

struct src_walk {
	int n, ports; /* sources seen, of them with a port */
	unsigned int port_sum;
	__u64 count_sum;
};

static int src_collect(const struct source *src, void *ctx)
{
	struct src_walk *w = ctx;

	w->n++;
	w->ports += src->has_port;
	w->port_sum += src->port;
	w->count_sum += src->count[0];
	return 0;
}

UNIT_TEST(keys_user_reset_one_port)
{
	struct pkt p80 = udp(V4, "198.18.72.1", "198.18.0.2", 80);
	struct pkt p443 = udp(V4, "198.18.72.1", "198.18.0.2", 443);
	struct pkt p8080 = udp(V4, "198.18.72.1", "198.18.0.2", 8080);
	struct key_walk kw = {};
	struct src_walk sw = {};
	struct target t, t443;
	struct source src;
	struct ip_addr a;
	__u32 k80[4], k443[4];
	struct env e;

	if (keys_open(&e, XDP_RL_KEY_SRC_DPORT, 0, 1, "keys user: load"))
		return;
	clock_as_user(&e);
	send_n(&e, &p80, 5);
	send_n(&e, &p443, 2);
	key_of("198.18.72.1", 80, k80);
	key_of("198.18.72.1", 443, k443);
	ASSERT_EQ(e.t4.wide, 1, "keys user: mt_map: the IPv4 table is wide");
	ASSERT_EQ(mt_foreach(&e.t4, key_collect, &kw), 0, "keys user: mt_foreach");
	ASSERT_EQ(kw.n, 2, "keys user: mt_foreach: two keys");
	ASSERT_TRUE(key_seen(&kw, k80) && key_seen(&kw, k443),
		    "keys user: mt_foreach: {198.18.72.1, 80} and {198.18.72.1, 443}");
	ASSERT_EQ(foreach_source(&e.lim, PIN_SRC4, src_collect, &sw), 0,
		  "keys user: foreach_source");
	ASSERT_TRUE(sw.n == 2 && sw.ports == 2 && sw.port_sum == 80 + 443 && sw.count_sum == 7,
		    "keys user: foreach_source: 2 sources with ports 80 and 443, counts 5 + 2 "
		    "(%d, %d, %u, %llu)",
		    sw.n, sw.ports, sw.port_sum, (unsigned long long)sw.count_sum);

	parse_addr("198.18.72.1", &a);
	target_of(&e.lim, &a, 80, &t);
	target_of(&e.lim, &a, 443, &t443);
	ASSERT_TRUE(t.kind == TARGET_KEY && t.id == PIN_SRC4 && t.has_port && t.port == 80,
		    "keys user: target_of: a key of src4 with port 80");
	ASSERT_TRUE(!memcmp(t.k, k80, 16), "keys user: target_of: its key as the datapath's");
	ASSERT_EQ(target_read(&e.lim, &t, &src), 1, "keys user: target_read: found");
	ASSERT_TRUE(src.has_port && src.port == 80 && src.count[0] == 5,
		    "keys user: target_read: port 80, count 5 (%d, %u, %llu)", src.has_port,
		    src.port, (unsigned long long)src.count[0]);
	ASSERT_EQ(admin_reset(&e.lim, t.id, t.k, t.set.lsid, 0, t.set.n, 0, t.set.lay), 1,
		  "keys user: reset 198.18.72.1 port 80: found");
	ASSERT_EQ(target_read(&e.lim, &t443, &src), 1, "keys user: port 443's key still there");
	ASSERT_EQ(src.count[0], 2, "keys user: reset of port 80 leaves port 443's count of 2");
	ASSERT_EQ(send_n(&e, &p80, 5), LIMIT, "keys user: port 80 afresh: 3 of 5");
	ASSERT_EQ(send_n(&e, &p443, 3), 1, "keys user: port 443: 1 left of its window");
	/* A charge gives a port never seen a slot of its own: the wide admin insert. */
	target_of(&e.lim, &a, 8080, &t);
	ASSERT_EQ(admin_charge(&e.lim, t.id, t.k, t.set.lsid, 0, t.set.n, LIMIT, t.set.lay), 1,
		  "keys user: charge 3 to 198.18.72.1 port 8080, never seen");
	ASSERT_EQ(count_key(&e, "198.18.72.1", 8080), LIMIT, "keys user: port 8080's key holds 3");
	ASSERT_EQ(send_n(&e, &p8080, 2), 0, "keys user: port 8080: its budget spent by the charge");
	ASSERT_EQ(count_key(&e, "198.18.72.1", 80), 5, "keys user: port 80's key: 5, uncharged");
	env_free(&e);
}

/* A flood of one key, its drops counted apart (bpf/hot.h): the port's key, no other. */
UNIT_TEST(keys_flood)
{
	struct pkt p80 = udp(V4, "198.18.76.1", "198.18.0.2", 80);
	struct pkt p443 = udp(V4, "198.18.76.1", "198.18.0.2", 443);
	struct pkt s80 = udp(V6, "2001:2:0:76::1", "2001:2::2", 80);
	struct pkt s443 = udp(V6, "2001:2:0:76::1", "2001:2::2", 443);
	struct xdp_rl_stats before;
	struct env e;

	if (keys_open(&e, XDP_RL_KEY_SRC_DPORT, 0, 0, "keys flood: load"))
		return;
	stats(&e, &before);
	run(&e, &p80, 5000);
	run(&e, &s80, 5000);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_PASSED), 2 * LIMIT,
		  "keys flood: 5000 each to port 80, IPv4 and IPv6: 3 pass of each");
	ASSERT_EQ(count_key(&e, "198.18.76.1", 80), 5000,
		  "keys flood: IPv4 port 80's key was offered 5000");
	ASSERT_EQ(count_key(&e, "2001:2:0:76::", 80), 5000,
		  "keys flood: IPv6 port 80's key was offered 5000");
	ASSERT_EQ(send_n(&e, &p443, 4) + send_n(&e, &s443, 4), 2 * LIMIT,
		  "keys flood: port 443 of each keeps its own budget");
	ASSERT_EQ(count_key(&e, "198.18.76.1", 443), 4, "keys flood: IPv4 port 443's key: 4");
	ASSERT_EQ(count_key(&e, "2001:2:0:76::", 443), 4, "keys flood: IPv6 port 443's key: 4");
	env_free(&e);
}

/* --ban bans the key: one port of a source, not its others. */
UNIT_TEST(keys_ban_port)
{
	struct xdp_rl_live live = { .nlayers = 1, .flags = XDP_RL_F_BANS, .ban_ns = HOUR };
	struct pkt p80 = udp(V4, "198.18.77.1", "198.18.0.2", 80);
	struct pkt p443 = udp(V4, "198.18.77.1", "198.18.0.2", 443);
	struct pkt s80 = udp(V6, "2001:2:0:77::1", "2001:2::2", 80);
	struct pkt s443 = udp(V6, "2001:2:0:77::1", "2001:2::2", 443);
	struct xdp_rl_stats before;
	struct env e;

	if (env_open(&e, &(struct load_opts){ .key = XDP_RL_KEY_SRC_DPORT }, "keys ban: load"))
		return;
	live.layer[0].limit = LIMIT;
	live.layer[0].window_ns = SEC_NS;
	env_live(&e, &live);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &p80, 5) + send_n(&e, &s80, 5), 2 * LIMIT,
		  "keys ban: port 80 over 3/1s, IPv4 and IPv6: banned");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_BANS), 2, "keys ban: two bans");
	ASSERT_EQ(send_n(&e, &p443, 3) + send_n(&e, &s443, 3), 2 * LIMIT,
		  "keys ban: port 443 of the banned sources: not banned");
	e.skel->bss->fake_now_ns += 2 * SEC_NS;
	ASSERT_EQ(send_n(&e, &p80, 2) + send_n(&e, &s80, 2), 0,
		  "keys ban: port 80 a window later: still banned");
	ASSERT_EQ(send_n(&e, &p443, 2) + send_n(&e, &s443, 2), 4,
		  "keys ban: port 443 a window later: passes");
	env_free(&e);
}

UNIT_TEST(keys_user_v6)
{
	struct pkt p53 = udp(V6, "2001:2:0:73::9", "2001:2::2", 53);
	struct pkt p54 = udp(V6, "2001:2:0:73::9", "2001:2::2", 54);
	struct pkt ll = udp(V6, "fe80::9", "2001:2::2", 53);
	struct target t, t54, tll;
	struct source src;
	struct ip_addr a;
	__u32 k[4];
	struct env e;

	if (keys_open(&e, XDP_RL_KEY_SRC_DPORT, 0, 1, "keys user v6: load"))
		return;
	clock_as_user(&e);
	send_n(&e, &p53, 4);
	send_n(&e, &p54, 1);
	send_n(&e, &ll, 2);
	parse_addr("2001:2:0:73::9", &a);
	target_of(&e.lim, &a, 53, &t);
	target_of(&e.lim, &a, 54, &t54);
	key_of("2001:2:0:73::", 53, k);
	ASSERT_TRUE(t.kind == TARGET_KEY && t.id == PIN_SRC6 && t.has_port && t.port == 53 &&
			    !memcmp(t.k, k, 16),
		    "keys user v6: target_of: the /64 with port 53 in its last 16 bits");
	ASSERT_EQ(target_read(&e.lim, &t, &src), 1, "keys user v6: target_read: found");
	ASSERT_TRUE(src.has_port && src.port == 53 && src.count[0] == 4 && src.key.bytes[15] == 0,
		    "keys user v6: target_read: port 53, count 4, the address without the port "
		    "(%d, %u, %llu, %u)",
		    src.has_port, src.port, (unsigned long long)src.count[0], src.key.bytes[15]);
	ASSERT_EQ(admin_reset(&e.lim, t.id, t.k, t.set.lsid, 0, t.set.n, 0, t.set.lay), 1,
		  "keys user v6: reset port 53: found");
	ASSERT_EQ(target_read(&e.lim, &t54, &src), 1, "keys user v6: port 54 still there");
	ASSERT_EQ(src.count[0], 1, "keys user v6: reset of port 53 leaves port 54's count of 1");
	ASSERT_EQ(send_n(&e, &p53, 4), LIMIT, "keys user v6: port 53 afresh: 3 of 4");

	parse_addr("fe80::9", &a);
	target_of(&e.lim, &a, 53, &tll);
	key_of("fe80::9", -1, k);
	ASSERT_TRUE(tll.kind == TARGET_KEY && !tll.has_port && tll.prefix == 128 &&
			    !memcmp(tll.k, k, 16),
		    "keys user v6: target_of fe80::9 port 53: the whole address, no port");
	ASSERT_EQ(target_read(&e.lim, &tll, &src), 1, "keys user v6: target_read fe80::9: found");
	ASSERT_TRUE(!src.has_port && src.prefix == 128 && src.count[0] == 2,
		    "keys user v6: fe80::9: no port, /128, count 2 (%d, %u, %llu)", src.has_port,
		    src.prefix, (unsigned long long)src.count[0]);
	env_free(&e);
}

/* ---- events: the key and its port ------------------------------------------------- */

struct evs {
	struct xdp_rl_event ev[8];
	int n;
};

static int ev_add(void *ctx, void *data, size_t size)
{
	struct evs *s = ctx;

	if (size >= sizeof(struct xdp_rl_event) && s->n < 8)
		memcpy(&s->ev[s->n], data, sizeof(struct xdp_rl_event));
	s->n++;
	return 0;
}

/* The records in the ring now (consumed), into @s: how many, or -1. */
static int events_take(struct env *e, struct evs *s)
{
	struct ring_buffer *rb;

	s->n = 0;
	rb = ring_buffer__new(bpf_map__fd(e->skel->maps.events), ev_add, s, NULL);
	if (!rb)
		return -1;
	ring_buffer__consume(rb);
	ring_buffer__free(rb);
	return s->n;
}

/* The key of the one record @send_n(@p, LIMIT + 1) makes, as events_key says it; its port or -1. */
static int event_of(struct env *e, const struct pkt *p, char *buf, size_t len)
{
	unsigned int port;
	struct evs s;

	send_n(e, p, LIMIT + 1);
	if (events_take(e, &s) != 1) {
		snprintf(buf, len, "%d records", s.n);
		return -2;
	}
	return events_key(&e->lim, &s.ev[0], buf, len, &port) ? (int)port : -1;
}

UNIT_TEST(keys_events)
{
	struct xdp_rl_ev_lease l = { .until_ns = ~0ULL, .pid = 1 };
	struct pkt v4 = udp(V4, "198.18.133.1", "198.18.75.1", 80);
	struct pkt v6 = udp(V6, "2001:2:133::1", "2001:2:0:75::1", 53);
	struct pkt ll = udp(V6, "2001:2:133::1", "fe80::9", 53);
	struct pkt icmp = pkt_to((struct pkt_spec){ V4, "198.18.133.1", .proto = IPPROTO_ICMP },
				 "198.18.75.2");
	char buf[80];
	__u32 zero = 0;
	struct env e;

	if (keys_open(&e, XDP_RL_KEY_DST_DPORT, 0, 0, "keys events: load"))
		return;
	bpf_map_update_elem(bpf_map__fd(e.skel->maps.ev_lease), &zero, &l, 0);
	ASSERT_EQ(event_of(&e, &v4, buf, sizeof(buf)), 80, "keys events: IPv4: port 80 (%s)", buf);
	ASSERT_STREQ(buf, "198.18.75.1/32", "keys events: IPv4: the destination");
	ASSERT_EQ(event_of(&e, &v6, buf, sizeof(buf)), 53, "keys events: IPv6: port 53 (%s)", buf);
	ASSERT_STREQ(buf, "2001:2:0:75::/64", "keys events: IPv6: the destination's /64");
	ASSERT_EQ(event_of(&e, &ll, buf, sizeof(buf)), -1,
		  "keys events: fe80::9 keyed whole: no port (%s)", buf);
	ASSERT_STREQ(buf, "fe80::9/128", "keys events: fe80::9 keyed whole: all of it");
	ASSERT_EQ(event_of(&e, &icmp, buf, sizeof(buf)), 0, "keys events: ICMP: port 0 (%s)", buf);
	ASSERT_STREQ(buf, "198.18.75.2/32", "keys events: ICMP: the destination");
	env_free(&e);
}

/*
 * An IPv6 header chain longer than the parser walks hides the transport,
 * and the stack delivers it whole. Counted by whichever limit a hidden
 * field would pick (a key with port 0, a rule whose selector a hidden
 * field cannot rule out, an --allow rule's), it would be a second budget
 * beside the one its real port owns: TCP to 22 behind 9 headers was
 * charged to a UDP 53 rule, or allowed by an ICMPv6 --allow rule. Where a
 * selector or a key needs the transport it is dropped (malformed); where
 * nothing does, it is charged to its source as any packet.
 */
UNIT_TEST(keys_deep_chain_gets_no_second_budget)
{
	const struct pkt_spec tcp22 = { V6, "2001:2:0:57::1", .proto = IPPROTO_TCP, .dport = 22,
					.tcp_flags = 0x02 };
	struct pkt plain = build(&tcp22), deep;
	struct pkt_spec s = tcp22;
	struct xdp_rl_live live = { .nlayers = 1, .flags = XDP_RL_F_SELECT, .nrules6 = 3 };
	struct xdp_rl_stats before;
	struct env e;

	s.ext = XDP_RL_MAX_EXT_HDRS + 1;
	deep = build(&s);
	/* --key src,dport: port 22's budget, and none under port 0 for the hidden ones. */
	if (keys_open(&e, XDP_RL_KEY_SRC_DPORT, 0, 0, "keys deep chain: load"))
		return;
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &plain, LIMIT + 1), LIMIT, "keys deep chain: TCP to 22: its %d",
		  LIMIT);
	ASSERT_EQ(send_n(&e, &deep, LIMIT), 0,
		  "keys deep chain: the same behind %d headers: no budget under port 0",
		  XDP_RL_MAX_EXT_HDRS + 1);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_MALFORMED), LIMIT,
		  "keys deep chain: ... dropped as malformed");
	ASSERT_EQ(count_key(&e, "2001:2:0:57::", 0), -1, "keys deep chain: no key with port 0");
	env_free(&e);

	/* Rules with selectors: a UDP 53 limit, an ICMPv6 allow under a deny. */
	if (env_open(&e, &(struct load_opts){ 0 }, "keys deep chain rules: load"))
		return;
	if (put_rule(&e, "2001:2:0:57::", 64,
		     (struct xdp_rl_rule){ .id = 0,
					   .action = XDP_RL_RULE_LIMIT,
					   .nlayers = 1,
					   .layer = { { LIMIT, HOUR } },
					   .select = { .proto = IPPROTO_UDP,
						       .nports = 1,
						       .port_lo = { 53 },
						       .port_hi = { 53 } } }) ||
	    put_rule(&e, "2001:2:0:58::", 64,
		     (struct xdp_rl_rule){ .id = 1, .action = XDP_RL_RULE_DENY }) ||
	    put_rule(&e, "2001:2:0:58::1", 128,
		     (struct xdp_rl_rule){ .id = 2,
					   .action = XDP_RL_RULE_ALLOW,
					   .select = { .proto = IPPROTO_ICMPV6 } })) {
		UNIT_FAIL("keys deep chain rules: insert: %s", strerror(errno));
		env_free(&e);
		return;
	}
	live.layer[0].limit = LIMIT;
	live.layer[0].window_ns = HOUR;
	env_live(&e, &live);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &plain, LIMIT + 1), LIMIT,
		  "keys deep chain rules: TCP to 22, missed by the UDP 53 rule: the global %d",
		  LIMIT);
	ASSERT_EQ(send_n(&e, &deep, LIMIT), 0,
		  "keys deep chain rules: behind %d headers: not the UDP 53 rule's budget",
		  XDP_RL_MAX_EXT_HDRS + 1);
	s.src = "2001:2:0:58::1";
	deep = build(&s);
	ASSERT_EQ(
		send_n(&e, &deep, 4), 0,
		"keys deep chain rules: from an ICMPv6 --allow /128 in a --deny /64: not allowed");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_ALLOWED), 0,
		  "keys deep chain rules: ... none counted as allowed");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_MALFORMED), LIMIT + 4,
		  "keys deep chain rules: the hidden ones dropped as malformed");

	/* In dry run it passes, counted as malformed all the same. */
	live.flags |= XDP_RL_F_DRY_RUN;
	env_live(&e, &live);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &deep, 2), 2, "keys deep chain rules: dry run passes it");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_MALFORMED), 2,
		  "keys deep chain rules: ... counted as malformed");

	/* Nothing needs the transport: charged to its source as any packet. */
	live = (struct xdp_rl_live){ .nlayers = 1, .lsid = 5 };
	live.layer[0].limit = LIMIT;
	live.layer[0].window_ns = HOUR;
	env_live(&e, &live);
	s.src = "2001:2:0:59::1";
	deep = build(&s);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &deep, LIMIT + 2), LIMIT,
		  "keys deep chain: no selector, no port key: limited by its source");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_MALFORMED), 0,
		  "keys deep chain: ... none malformed");
	env_free(&e);
}
