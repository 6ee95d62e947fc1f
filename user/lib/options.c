// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* options.c - strict parsers: "80abc", "", "-1" and overflow are refused. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

static const struct {
	const char *name;
	__u64 ns;
} units[] = {
	{ "ns", 1ULL },
	{ "us", 1000ULL },
	{ "ms", 1000000ULL },
	{ "s", 1000000000ULL },
	{ "m", 60ULL * 1000000000ULL },
	{ "h", 3600ULL * 1000000000ULL },
	{ "d", 86400ULL * 1000000000ULL },
};

/* Digits only, and the end of them in *end. */
static const char *parse_digits(const char *s, __u64 *out, const char **end)
{
	unsigned long long v;
	char *e;

	if (!s || !*s)
		return "empty value";
	if (!isdigit((unsigned char)*s))
		return *s == '-' ? "must not be negative" : "not a number";
	errno = 0;
	v = strtoull(s, &e, 10);
	if (errno == ERANGE)
		return "too large";
	*out = v;
	*end = e;
	return NULL;
}

const char *parse_u64(const char *s, __u64 min, __u64 max, __u64 *out)
{
	static char why[64];
	const char *end, *e;
	__u64 v;

	e = parse_digits(s, &v, &end);
	if (e)
		return e;
	if (*end)
		return "not a number";
	if (v < min || v > max) {
		snprintf(why, sizeof(why), "must be %s %llu", v < min ? "at least" : "at most",
			 (unsigned long long)(v < min ? min : max));
		return why;
	}
	*out = v;
	return NULL;
}

const char *parse_duration(const char *s, __u64 min_ns, __u64 max_ns, __u64 *ns)
{
	static char why[80];
	const char *end, *e, *frac_end;
	__u64 v, frac = 0, scale = 1, part;
	char lo[16], hi[16];
	int digits = 0;
	size_t i;

	e = parse_digits(s, &v, &end);
	if (e)
		return e;
	/* A decimal fraction: 1.5s is 1500ms, if it is a whole number of ns. */
	if (*end == '.') {
		frac_end = end + 1;
		while (isdigit((unsigned char)*frac_end) && digits < 18) {
			frac = frac * 10 + (__u64)(*frac_end++ - '0');
			scale *= 10;
			digits++;
		}
		if (!digits || isdigit((unsigned char)*frac_end))
			return "not a number";
		end = frac_end;
	}
	if (!*end)
		return "needs a unit: ns, us, ms, s, m, h or d (e.g. 500ms, 1s, 1.5s)";
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].name))
			continue;
		if (digits && (frac > ~0ULL / units[i].ns || frac * units[i].ns % scale))
			return "not a whole number of nanoseconds";
		part = digits ? frac * units[i].ns / scale : 0;
		if (v > max_ns / units[i].ns || v * units[i].ns + part < min_ns ||
		    v * units[i].ns > max_ns - part) {
			fmt_duration(min_ns, lo, sizeof(lo));
			fmt_duration(max_ns, hi, sizeof(hi));
			snprintf(why, sizeof(why), "out of range %s..%s", lo, hi);
			return why;
		}
		*ns = v * units[i].ns + part;
		return NULL;
	}
	return "unknown unit: use ns, us, ms, s, m, h or d (e.g. 500ms, 1s, 1.5s)";
}

const char *parse_addr(const char *s, struct ip_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (!s || !*s)
		return "empty address";
	if (inet_pton(AF_INET, s, a->bytes) == 1) {
		a->family = AF_INET;
		return NULL;
	}
	if (inet_pton(AF_INET6, s, a->bytes) == 1) {
		a->family = AF_INET6;
		return NULL;
	}
	return "not an IPv4 or IPv6 address";
}

const char *parse_layer(const char *s, struct xdp_rl_layer *l)
{
	static char why[160];
	char num[32];
	const char *slash = s ? strchr(s, '/') : NULL, *e;
	__u64 limit, window_ns;

	if (!slash)
		return "needs the form N/DUR, e.g. 100/1s";
	if ((size_t)(slash - s) >= sizeof(num))
		return "limit too large";
	memcpy(num, s, slash - s);
	num[slash - s] = '\0';
	e = parse_u64(num, 1, XDP_RL_LIMIT_MAX, &limit);
	if (e) {
		snprintf(why, sizeof(why), "limit '%s': %s", num, e);
		return why;
	}
	e = parse_duration(slash + 1, WINDOW_MIN_NS, WINDOW_MAX_NS, &window_ns);
	if (e) {
		snprintf(why, sizeof(why), "window '%s': %s", slash + 1, e);
		return why;
	}
	/* A window, whole: none of a rate's fields (include/xdp_rl.h). */
	*l = (struct xdp_rl_layer){ .limit = limit, .window_ns = window_ns };
	return NULL;
}

/* The ns a unit may cost at most for xdp_rl_rate_fill to keep the rate (its 40.24 fixed point). */
static __u64 rate_per_max(void)
{
	return XDP_RL_RATE_PER_MAX - 1;
}

/* Why the rate @n per @window_ns (@w) with @burst cannot be kept: the slowest, the longest burst. */
static const char *rate_why(__u64 n, __u64 window_ns, const char *w, __u64 burst)
{
	static char why[220];
	char tau[32];

	if ((unsigned __int128)window_ns > (unsigned __int128)n * rate_per_max()) {
		snprintf(why, sizeof(why),
			 "%llu/%s is slower than the slowest rate, one per %.1fs (give a larger N "
			 "or a shorter DUR, or a window: --limit and --window)",
			 (unsigned long long)n, w, rate_per_max() / 1e9);
		return why;
	}
	fmt_duration(
		(__u64)((unsigned __int128)burst * window_ns / n / 1000000000ULL * 1000000000ULL),
		tau, sizeof(tau));
	snprintf(why, sizeof(why),
		 "a burst of %llu at %llu/%s takes %s to earn back, more than the longest, 4h53m "
		 "(give a smaller burst or a faster rate)",
		 (unsigned long long)burst, (unsigned long long)n, w, tau);
	return why;
}

const char *rate_fill(struct xdp_rl_layer *l, __u64 n, __u64 window_ns, __u64 burst)
{
	struct xdp_rl_layer t = {};
	char w[32];

	if (!n || !burst)
		return "needs N and a burst of at least 1";
	fmt_duration(window_ns, w, sizeof(w));
	if ((unsigned __int128)window_ns > (unsigned __int128)n * rate_per_max() ||
	    xdp_rl_rate_fill(&t, n, window_ns, burst))
		return rate_why(n, window_ns, w, burst);
	*l = t;
	return NULL;
}

const char *parse_cidr(const char *s, struct ip_addr *a, unsigned int *prefix)
{
	static char why[128];
	char addr[INET6_ADDRSTRLEN + 1], canon[INET6_ADDRSTRLEN + 8];
	const char *slash = s ? strchr(s, '/') : NULL, *e;
	struct ip_addr m;
	__u64 len;

	if (!s || !*s)
		return "empty prefix";
	if ((size_t)(slash ? slash - s : (long)strlen(s)) >= sizeof(addr))
		return "not an IPv4 or IPv6 prefix";
	snprintf(addr, sizeof(addr), "%.*s", (int)(slash ? slash - s : (long)strlen(s)), s);
	e = parse_addr(addr, a);
	if (e)
		return e;
	if (!slash) {
		len = a->family == AF_INET ? 32 : 128;
	} else {
		e = parse_u64(slash + 1, 0, a->family == AF_INET ? 32 : 128, &len);
		if (e) {
			snprintf(why, sizeof(why), "prefix length '%s': %s", slash + 1, e);
			return why;
		}
	}
	*prefix = len;
	/*
	 * ::ffff:0:0/96 holds IPv4 addresses in IPv6's form, which no packet on
	 * the wire carries: an IPv4 packet is matched as IPv4. A rule there
	 * would match nothing.
	 */
	if (a->family == AF_INET6 && len >= 96 &&
	    !memcmp(a->bytes, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
		snprintf(why, sizeof(why),
			 "an IPv4-mapped address, which no packet carries: write it as IPv4 "
			 "(%u.%u.%u.%u/%u)",
			 a->bytes[12], a->bytes[13], a->bytes[14], a->bytes[15],
			 (unsigned int)len - 96);
		return why;
	}
	if (!slash)
		return NULL;
	m = *a;
	mask_addr(&m, *prefix);
	if (memcmp(&m, a, sizeof(m))) {
		fmt_prefix(&m, *prefix, canon, sizeof(canon));
		snprintf(why, sizeof(why), "bits set past /%u (did you mean %s?)", *prefix, canon);
		return why;
	}
	return NULL;
}

void fmt_duration(__u64 ns, char *buf, size_t len)
{
	int i;

	for (i = sizeof(units) / sizeof(units[0]) - 1; i > 0; i--)
		if (ns % units[i].ns == 0)
			break;
	snprintf(buf, len, "%llu%s", (unsigned long long)(ns / units[i].ns), units[i].name);
}

void mask_addr(struct ip_addr *a, unsigned int prefix)
{
	unsigned int bits = a->family == AF_INET ? 32 : 128, i;

	for (i = prefix; i < bits; i++)
		a->bytes[i / 8] &= ~(0x80 >> (i % 8));
}

void fmt_prefix(const struct ip_addr *a, unsigned int prefix, char *buf, size_t len)
{
	char s[INET6_ADDRSTRLEN];

	inet_ntop(a->family, a->bytes, s, sizeof(s));
	snprintf(buf, len, "%s/%u", s, prefix);
}

int addr_link_local(const struct ip_addr *a)
{
	const __u8 *b = a->bytes;

	return a->family == AF_INET6 ? b[0] == 0xfe && (b[1] & 0xc0) == 0x80 :
				       b[0] == 169 && b[1] == 254;
}

int key_decode(const __u32 k[4], int v6, __u32 kind, int ll_whole, struct ip_addr *a,
	       unsigned int *port)
{
	int has = xdp_rl_key_port(kind);

	memset(a, 0, sizeof(*a));
	a->family = v6 ? AF_INET6 : AF_INET;
	memcpy(a->bytes, k, v6 ? 16 : 4);
	*port = 0;
	if (has && v6 && ll_whole && addr_link_local(a))
		has = 0;
	if (!has)
		return 0;
	/* IPv4's port is in k[1], IPv6's in the address's last 16 bits. */
	*port = ntohl(k[v6 ? 3 : 1]) & 0xffff;
	if (v6)
		a->bytes[14] = a->bytes[15] = 0;
	return 1;
}

void word_list(const struct word *w, char *buf, size_t len)
{
	size_t off = 0, i;

	buf[0] = '\0';
	for (i = 0; w[i].name && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%s",
				i == 0	      ? "" :
				w[i + 1].name ? ", " :
						" or ",
				w[i].name);
}

const char *word_parse(const struct word *w, const char *s, unsigned int *val)
{
	static char why[128];
	char list[96];
	size_t i;

	for (i = 0; s && w[i].name; i++) {
		if (!strcmp(s, w[i].name)) {
			*val = w[i].val;
			return NULL;
		}
	}
	word_list(w, list, sizeof(list));
	snprintf(why, sizeof(why), "use %s", list);
	return why;
}

const char *word_name(const struct word *w, unsigned int val)
{
	size_t i;

	for (i = 0; w[i].name; i++)
		if (w[i].val == val)
			return w[i].name;
	return "?";
}

const struct word proto_words[] = {
	{ "tcp", IPPROTO_TCP },	      { "udp", IPPROTO_UDP }, { "icmp", IPPROTO_ICMP },
	{ "icmpv6", IPPROTO_ICMPV6 }, { "any", 0 },	      { NULL, 0 },
};

/* One port, 1..65535. */
static const char *parse_port(const char *s, size_t n, __u16 *port)
{
	char num[8];
	const char *e;
	__u64 v;

	if (!n || n >= sizeof(num))
		return n ? "port out of range 1..65535" : "empty port";
	memcpy(num, s, n);
	num[n] = '\0';
	e = parse_u64(num, 1, 65535, &v);
	if (e)
		return e;
	*port = v;
	return NULL;
}

const char *parse_ports(const char *s, struct xdp_rl_select *sel)
{
	static char why[96];
	const char *p = s, *comma, *dash, *e;
	__u16 lo, hi;
	size_t n;

	sel->nports = 0;
	if (!s || !*s)
		return "empty port list";
	if (!strcmp(s, "any"))
		return NULL;
	for (;;) {
		comma = strchr(p, ',');
		n = comma ? (size_t)(comma - p) : strlen(p);
		dash = memchr(p, '-', n);
		e = parse_port(p, dash ? (size_t)(dash - p) : n, &lo);
		if (!e)
			e = dash ? parse_port(dash + 1, n - (dash + 1 - p), &hi) : (hi = lo, NULL);
		if (e) {
			snprintf(why, sizeof(why), "'%.*s': %s", (int)(n < 20 ? n : 20), p, e);
			return why;
		}
		if (hi < lo) {
			snprintf(why, sizeof(why), "range %u-%u runs backwards", lo, hi);
			return why;
		}
		if (sel->nports == XDP_RL_MAX_PORT_RANGES) {
			snprintf(why, sizeof(why), "more than %d ports and ranges",
				 XDP_RL_MAX_PORT_RANGES);
			return why;
		}
		sel->port_lo[sel->nports] = lo;
		sel->port_hi[sel->nports] = hi;
		sel->nports++;
		if (!comma)
			return NULL;
		p = comma + 1;
	}
}

const char *check_select(const struct xdp_rl_select *sel)
{
	if (sel->syn && sel->proto && sel->proto != IPPROTO_TCP)
		return "--syn is TCP's: it goes with --proto tcp (or no --proto)";
	if (sel->nports && sel->proto && sel->proto != IPPROTO_TCP && sel->proto != IPPROTO_UDP)
		return "--dport goes with --proto tcp or udp (or no --proto)";
	return NULL;
}

void fmt_ports(const struct xdp_rl_select *sel, char *buf, size_t len)
{
	size_t off = 0;
	int i;

	buf[0] = '\0';
	if (!sel->nports) {
		snprintf(buf, len, "any");
		return;
	}
	for (i = 0; i < sel->nports && i < XDP_RL_MAX_PORT_RANGES && off < len; i++)
		off += sel->port_lo[i] == sel->port_hi[i] ?
			       snprintf(buf + off, len - off, "%s%u", i ? "," : "",
					sel->port_lo[i]) :
			       snprintf(buf + off, len - off, "%s%u-%u", i ? "," : "",
					sel->port_lo[i], sel->port_hi[i]);
}

void fmt_select(const struct xdp_rl_select *sel, char *buf, size_t len)
{
	char ports[XDP_RL_MAX_PORT_RANGES * 12 + 1];
	size_t off = 0;

	buf[0] = '\0';
	if (xdp_rl_select_all(sel)) {
		snprintf(buf, len, "all");
		return;
	}
	if (sel->proto)
		off += snprintf(buf + off, len - off, "%s", word_name(proto_words, sel->proto));
	if (sel->nports && off < len) {
		fmt_ports(sel, ports, sizeof(ports));
		off += snprintf(buf + off, len - off, "%sdport %s", off ? " " : "", ports);
	}
	if (sel->syn && off < len)
		snprintf(buf + off, len - off, "%ssyn", off ? " " : "");
}

const struct opt_spec *opt_find(const struct opt_spec *opts, const char *name)
{
	for (; opts && opts->name; opts++)
		if (!strcmp(opts->name, name))
			return opts;
	return NULL;
}

const struct opt_spec *opt_by_id(const struct opt_spec *opts, int id)
{
	for (; opts && opts->name; opts++)
		if (opts->id == id)
			return opts;
	return NULL;
}

void lines_begin(struct lines *it, const char *text, size_t len)
{
	it->text = text;
	it->len = len;
	it->pos = 0;
	it->no = 0;
}

int lines_next(struct lines *it, char **words, int max, const char **why)
{
	const char *start = it->text + it->pos, *nl;
	size_t n;
	char *p, *save;
	int count = 0;

	if (it->pos >= it->len)
		return -1;
	nl = memchr(start, '\n', it->len - it->pos);
	n = nl ? (size_t)(nl - start) : it->len - it->pos;
	it->pos += n + !!nl;
	it->no++;
	if (n > LINE_MAX_LEN) {
		*why = "line too long";
		return -2;
	}
	if (memchr(start, '\0', n)) {
		*why = "a NUL byte in the line";
		return -2;
	}
	memcpy(it->buf, start, n);
	it->buf[n] = '\0';
	p = strchr(it->buf, '#');
	if (p)
		*p = '\0';
	for (p = strtok_r(it->buf, " \t\r", &save); p; p = strtok_r(NULL, " \t\r", &save)) {
		if (count == max) {
			*why = "too many words";
			return -2;
		}
		words[count++] = p;
	}
	words[count] = NULL;
	return count;
}
