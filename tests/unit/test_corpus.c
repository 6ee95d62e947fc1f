// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_corpus.c - an adversarial corpus: frames shaped to hide what a
 * selector looks at (extension-header chains of every length to past the
 * parser's walk, fragments cut at every byte of the TCP header, tiny later
 * fragments, VLAN stacks deeper than the parser goes, IPv4 options,
 * truncated headers, wrong lengths), each with the verdict it must get from
 * a limit of 1 per hour on TCP SYNs to port 80 (--proto tcp --dport 80
 * --syn): selected (counted: the second of two is dropped), unselected (both
 * pass untouched) or malformed (both dropped). The rule (bpf/select.h): a
 * field that could not be read counts as one the selector wants; a chain
 * longer than the walk, whose transport is not found, is dropped. The same
 * shapes through the stack: tests/e2e/test_adversary.py.
 */
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/if_ether.h>

#include "harness.h"

#define SYN 0x02
#define ACK 0x10

enum expect { SELECTED, UNSELECTED, MALFORMED };
enum frag { WHOLE, FIRST, LATER };

struct cspec {
	int v6;
	int vlans;	/* tags before the IP header */
	int ihl;	/* IPv4: 0 is 5 */
	int bad_totlen; /* IPv4: a total length shorter than the header */
	int ext;	/* IPv6: destination options headers */
	int ext_trunc;	/* IPv6: the last options header runs past the frame */
	int ah;		/* IPv6: an authentication header before the transport */
	enum frag frag; /* a first or later fragment */
	int later_next; /* IPv6 later fragment: its next header (0: the transport) */
	int udp;	/* UDP, not TCP */
	int cut;	/* transport bytes in the frame (0: all) */
	__u16 dport;
	__u8 flags;
};

/* A frame from source number @n as @c says, built byte by byte. */
static struct pkt corpus_frame(const struct cspec *c, int n)
{
	struct pkt p = {};
	__u8 *q = p.b, th[20] = {};
	int i, proto = c->udp ? IPPROTO_UDP : IPPROTO_TCP, tlen = c->udp ? 8 : 20;
	int keep = c->cut ? c->cut : tlen, hl;

	memset(q, 0x02, 12);
	q += 12;
	for (i = 0; i < c->vlans; i++) {
		put16(q, i == 0 && c->vlans > 1 ? ETH_P_8021AD : ETH_P_8021Q);
		put16(q + 2, 100 + i);
		q += 4;
	}
	put16(q, c->v6 ? ETH_P_IPV6 : ETH_P_IP);
	q += 2;
	put16(th, 40000);
	put16(th + 2, c->dport);
	if (!c->udp) {
		th[12] = 5 << 4;
		th[13] = c->flags;
	} else {
		put16(th + 4, 8);
	}
	if (!c->v6) {
		hl = 4 * (c->ihl ? c->ihl : 5);
		memset(q, 0, hl);
		q[0] = 0x40 | hl / 4;
		put16(q + 2, c->bad_totlen ? hl - 4 : hl + keep);
		put16(q + 6, c->frag == FIRST ? 0x2000 : c->frag == LATER ? 1 : 0);
		q[8] = 64;
		q[9] = proto;
		q[12] = 198, q[13] = 18, q[14] = 90 + n / 250, q[15] = 1 + n % 250;
		q[16] = 198, q[17] = 18, q[18] = 0, q[19] = 2;
		if (hl > 20)
			q[20] = 1; /* NOP options */
		q += hl;
	} else {
		__u8 *ip6 = q, *nh = q + 6;
		int payload;

		memset(q, 0, 40);
		q[0] = 0x60;
		q[7] = 64;
		/* 2001:2:5a:N::1: a /64 of its own (the default key) */
		q[8] = 0x20, q[9] = 0x01, q[10] = 0, q[11] = 2, q[12] = 0, q[13] = 90;
		q[14] = n >> 8, q[15] = n & 0xff, q[23] = 1;
		q[24] = 0x20, q[25] = 0x01, q[26] = 0, q[27] = 2, q[39] = 2;
		q += 40;
		for (i = 0; i < c->ext; i++) {
			*nh = IPPROTO_DSTOPTS;
			memset(q, 0, 8);
			q[2] = 1, q[3] = 4; /* PadN */
			nh = q;
			/* The last one claims 16 bytes more than the frame holds. */
			if (c->ext_trunc && i == c->ext - 1) {
				q[1] = 2;
				*nh = IPPROTO_TCP;
				q += 8;
				goto done;
			}
			q += 8;
		}
		if (c->ah) {
			*nh = IPPROTO_AH;
			memset(q, 0, 12);
			q[1] = 1; /* (1 + 2) * 4 = 12 bytes */
			nh = q;
			q += 12;
		}
		if (c->frag != WHOLE) {
			*nh = IPPROTO_FRAGMENT;
			memset(q, 0, 8);
			put16(q + 2,
			      c->frag == LATER ? 1 << 3 : 1); /* offset 8; or more, offset 0 */
			nh = q;
			q += 8;
			if (c->frag == LATER && c->later_next) {
				*nh = c->later_next;
				payload = q - ip6 - 40 + 8;
				put16(ip6 + 4, payload);
				memset(q, 0, 8);
				q += 8;
				goto done;
			}
		}
		*nh = proto;
		payload = q - ip6 - 40 + (c->frag == LATER ? 8 : keep);
		put16(ip6 + 4, payload);
	}
	if (c->frag == LATER) {
		memset(q, 0, 8); /* a later fragment's payload: no transport header */
		q += 8;
	} else {
		memcpy(q, th, keep);
		q += keep;
	}
done:
	p.len = q - p.b;
	if (p.len < 60) /* the minimum Ethernet frame: padding past the IP length */
		p.len = 60;
	return p;
}

struct ccase {
	char desc[96];
	struct cspec spec;
	enum expect want;
};

static const char *const expect_word[] = { "selected", "unselected", "malformed" };

UNIT_TEST(corpus)
{
	static struct ccase cases[160];
	struct xdp_rl_select sel = {
		.proto = IPPROTO_TCP, .syn = 1, .nports = 1, .port_lo = { 80 }, .port_hi = { 80 }
	};
	struct xdp_rl_live live = { .nlayers = 1, .flags = XDP_RL_F_SELECT };
	struct xdp_rl_stats before;
	struct env e;
	int n = 0, i, c, first, second, want1, want2;

#define ADD(w, ...)                                                          \
	do {                                                                 \
		snprintf(cases[n].desc, sizeof(cases[n].desc), __VA_ARGS__); \
		cases[n].want = (w);                                         \
		n++;                                                         \
	} while (0)
	for (c = 0; c <= XDP_RL_MAX_EXT_HDRS + 4; c++) {
		cases[n].spec = (struct cspec){ .v6 = 1, .ext = c, .dport = 80, .flags = SYN };
		/* Past the walk the transport is not found: no limit can be named, dropped. */
		ADD(c > XDP_RL_MAX_EXT_HDRS ? MALFORMED : SELECTED,
		    "IPv6 SYN to 80 behind %d options headers", c);
		cases[n].spec = (struct cspec){ .v6 = 1, .ext = c, .dport = 22, .flags = SYN };
		ADD(c > XDP_RL_MAX_EXT_HDRS ? MALFORMED : UNSELECTED,
		    "IPv6 SYN to 22 behind %d options headers", c);
	}
	for (c = 1; c < 20; c++) {
		cases[n].spec =
			(struct cspec){ .frag = FIRST, .cut = c, .dport = 22, .flags = SYN };
		ADD(c < 4 ? SELECTED : UNSELECTED, "IPv4 first fragment, SYN to 22, cut at %d", c);
		cases[n].spec =
			(struct cspec){ .frag = FIRST, .cut = c, .dport = 80, .flags = SYN };
		ADD(SELECTED, "IPv4 first fragment, SYN to 80, cut at %d", c);
		cases[n].spec =
			(struct cspec){ .frag = FIRST, .cut = c, .dport = 80, .flags = ACK };
		ADD(c < 14 ? SELECTED : UNSELECTED, "IPv4 first fragment, ACK to 80, cut at %d", c);
		cases[n].spec = (struct cspec){
			.v6 = 1, .frag = FIRST, .cut = c, .dport = 80, .flags = ACK
		};
		ADD(c < 14 ? SELECTED : UNSELECTED, "IPv6 first fragment, ACK to 80, cut at %d", c);
	}
	cases[n].spec = (struct cspec){ .frag = LATER, .dport = 80, .flags = SYN };
	ADD(SELECTED, "IPv4 later TCP fragment at offset 8 (a tiny overlap)");
	cases[n].spec = (struct cspec){ .frag = LATER, .udp = 1 };
	ADD(UNSELECTED, "IPv4 later UDP fragment");
	cases[n].spec = (struct cspec){ .v6 = 1, .frag = LATER };
	ADD(SELECTED, "IPv6 later TCP fragment");
	cases[n].spec = (struct cspec){ .v6 = 1, .frag = LATER, .later_next = IPPROTO_DSTOPTS };
	ADD(SELECTED, "IPv6 later fragment whose part starts with an options header");
	cases[n].spec = (struct cspec){ .v6 = 1, .frag = LATER, .udp = 1 };
	ADD(UNSELECTED, "IPv6 later UDP fragment");
	for (c = 6; c <= 15; c += 3) {
		cases[n].spec = (struct cspec){ .ihl = c, .dport = 80, .flags = SYN };
		ADD(SELECTED, "IPv4 with options (ihl %d), SYN to 80", c);
		cases[n].spec = (struct cspec){ .ihl = c, .dport = 80, .flags = ACK };
		ADD(UNSELECTED, "IPv4 with options (ihl %d), ACK to 80", c);
	}
	cases[n].spec = (struct cspec){ .v6 = 1, .ext = 2, .ext_trunc = 1, .dport = 22 };
	ADD(SELECTED, "IPv6 options header running past the frame");
	cases[n].spec = (struct cspec){ .v6 = 1, .ah = 1, .dport = 80, .flags = SYN };
	ADD(SELECTED, "IPv6 AH, then a SYN to 80");
	cases[n].spec = (struct cspec){ .v6 = 1, .ah = 1, .dport = 80, .flags = ACK };
	ADD(UNSELECTED, "IPv6 AH, then an ACK to 80");
	cases[n].spec = (struct cspec){ .cut = 10, .dport = 80, .flags = ACK };
	ADD(SELECTED, "IPv4 TCP header cut short (not a fragment), ACK to 80");
	cases[n].spec = (struct cspec){ .udp = 1, .dport = 80 };
	ADD(UNSELECTED, "IPv4 UDP to 80");
	for (c = 0; c <= 4; c++) {
		cases[n].spec = (struct cspec){ .vlans = c, .dport = 80, .flags = SYN };
		ADD(c <= XDP_RL_MAX_VLAN_DEPTH ? SELECTED : MALFORMED, "%d VLAN tags, SYN to 80",
		    c);
	}
	cases[n].spec = (struct cspec){ .bad_totlen = 1, .dport = 80, .flags = SYN };
	ADD(MALFORMED, "IPv4 total length shorter than its header");
#undef ADD
	if (env_open(&e, &(struct load_opts){ 0 }, "corpus: load"))
		return;
	live.layer[0].limit = 1;
	live.layer[0].window_ns = 3600 * SEC_NS;
	live.select = sel;
	live.link_local = XDP_RL_LL_ADDRESS;
	env_live(&e, &live);
	for (i = 0; i < n; i++) {
		struct pkt p = corpus_frame(&cases[i].spec, i);
		const char *w = expect_word[cases[i].want];

		want1 = cases[i].want == MALFORMED ? XDP_DROP : XDP_PASS;
		want2 = cases[i].want == UNSELECTED ? XDP_PASS : XDP_DROP;
		stats(&e, &before);
		first = run(&e, &p, 1);
		second = run(&e, &p, 1);
		ASSERT_EQ(first, want1, "corpus: %s: %s [first]", cases[i].desc, w);
		ASSERT_EQ(second, want2, "corpus: %s: %s [second]", cases[i].desc, w);
		ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_UNSELECTED),
			  cases[i].want == UNSELECTED ? 2 : 0, "corpus: %s: %s [unselected]",
			  cases[i].desc, w);
		ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_MALFORMED),
			  cases[i].want == MALFORMED ? 2 : 0, "corpus: %s: %s [malformed]",
			  cases[i].desc, w);
	}
	env_free(&e);
}
