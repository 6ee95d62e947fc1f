// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fuzz_resp.c - Redis's protocol (user/lib/resp.h), the bytes the fleet
 * agent reads from the network. Any bytes are a run of replies, then
 * either the end, a reply not all there yet, or bytes refused; never a
 * crash or a read past them (each parse sees a buffer of exactly its
 * bytes). Each reply lies inside the bytes it took; one whose first line
 * is there waits only for a bulk string's bytes or an array's elements.
 * Fed in pieces (a byte at a time, and in pieces of sizes drawn from the
 * input) through a resp_buf as the agent does, the same replies and the
 * same end. The input as the arguments of a command (split at each 0
 * byte): resp_cmd's bytes parse back as an array of those bulk strings.
 * An array's bytes are its elements, whole, each parsed in turn (nested
 * as CLUSTER SLOTS answers); an array read as a slot map (cluster.h) is
 * refused or maps slots each to a node; an error read as a redirection
 * (-MOVED, -ASK) names a slot and a port that exist.
 */
#include "cluster.h"
#include "fuzz.h"
#include "redis.h"
#include "resp.h"

/* An array's elements, walked: each parses, and together they are its bytes exactly. */
static void walk(const struct resp_reply *r, int depth)
{
	struct resp_reply e;
	size_t off = 0;
	long long i;
	long n;

	FUZZ_CHECK(depth <= RESP_MAX_DEPTH, "nested no deeper than RESP_MAX_DEPTH");
	if (r->type != RESP_ARRAY)
		return;
	for (i = 0; i < r->n; i++) {
		n = resp_parse(r->s + off, r->len - off, &e);
		FUZZ_CHECK(n > 0 && (size_t)n <= r->len - off, "element %lld of %lld parses", i,
			   r->n);
		walk(&e, depth + 1);
		off += n;
	}
	FUZZ_CHECK(off == r->len, "the elements are the array's bytes: %zu of %zu", off, r->len);
}

/* Read as Redis Cluster's replies: a slot map, a redirection. */
static void as_cluster(const struct resp_reply *r)
{
	char host[REDIS_HOST_MAX + 1], port[8];
	unsigned int slot = 0;
	struct redis c;
	long mapped;
	int kind;

	if (r->type == RESP_ARRAY) {
		redis_init(&c);
		mapped = cluster_apply_slots(&c, r, "198.18.0.1");
		FUZZ_CHECK(mapped >= -1 && mapped <= CLUSTER_NSLOTS, "slots mapped: %ld", mapped);
		if (mapped > 0)
			FUZZ_CHECK(redis_masters(&c) > 0, "slots mapped to no master");
		redis_free(&c);
	} else if (r->type == RESP_ERROR) {
		kind = cluster_parse_redirect(r, &slot, host, port);
		FUZZ_CHECK(kind >= 0 && kind <= 2, "a redirection's kind: %d", kind);
		if (kind)
			FUZZ_CHECK(slot < CLUSTER_NSLOTS && atoi(port) >= 1 &&
					   atoi(port) <= 65535 && strlen(host) <= REDIS_HOST_MAX,
				   "a redirection's slot %u and port '%s'", slot, port);
	}
}

/* What a reply was, where it starts counted from the start of the stream. */
struct rec {
	size_t at, used, s_off, len;
	enum resp_type type;
	long long n;
};

/* A stream parsed: its replies, and how it ends (0 waiting or at its end, -1 refused). */
struct run {
	struct rec *v;
	size_t n;
	long end;
};

/* resp_parse on a copy of @p[0..len) in a buffer of exactly that size. */
static long parse_exact(const char *p, size_t len, struct resp_reply *r, size_t *s_off)
{
	char *copy = malloc(len ? len : 1);
	long n;

	FUZZ_CHECK(copy != NULL, "malloc");
	memcpy(copy, p, len);
	n = resp_parse(copy, len, r);
	FUZZ_CHECK(n >= -1 && (n <= 0 || (size_t)n <= len), "took %ld of %zu bytes", n, len);
	if (n > 0) {
		FUZZ_CHECK(r->s >= copy && r->s + r->len <= copy + n,
			   "a reply's text lies inside the bytes it took");
		*s_off = r->s - copy;
		walk(r, 0);
		as_cluster(r);
		if (r->type == RESP_INT || r->type == RESP_NIL) {
			long long v = 1;

			FUZZ_CHECK(!resp_int(r, &v) && v == (r->type == RESP_INT ? r->n : 0),
				   "an integer's value is its number, nil's 0");
		} else if (r->type == RESP_BULK) {
			long long v;

			resp_int(r, &v); /* digits or not: read inside the reply */
		}
	}
	if (n == 0) {
		const char *cr = memchr(copy, '\r', len);

		if (cr && cr + 1 < copy + len && cr[1] == '\n')
			FUZZ_CHECK(copy[0] == '$' || copy[0] == '*',
				   "a first line all there waits only for a bulk or an array");
	}
	free(copy);
	return n;
}

static void record(struct run *run, size_t at, long used, const struct resp_reply *r, size_t s_off)
{
	run->v[run->n++] = (struct rec){
		.at = at, .used = used, .s_off = s_off, .len = r->len, .type = r->type, .n = r->n
	};
}

/* The whole input at once. */
static void parse_whole(const uint8_t *data, size_t size, struct run *run)
{
	struct resp_reply r;
	size_t at = 0, s_off = 0;
	long n = 0;

	while (at < size) {
		n = parse_exact((const char *)data + at, size - at, &r, &s_off);
		if (n <= 0)
			break;
		record(run, at, n, &r, s_off);
		at += n;
	}
	run->end = at < size ? n : 0;
}

/* The input in pieces of @sizes (cycled; 0 taken as 1), parsed after each. */
static void parse_pieces(const uint8_t *data, size_t size, const uint8_t *sizes, size_t nsizes,
			 struct run *run)
{
	struct resp_buf b = {};
	struct resp_reply r;
	size_t fed = 0, at = 0, piece, k = 0, s_off = 0;
	long n = 0;

	while (fed < size) {
		piece = nsizes ? sizes[k++ % nsizes] : 1;
		piece = piece ? piece : 1;
		if (piece > size - fed)
			piece = size - fed;
		FUZZ_CHECK(!resp_buf_room(&b, piece), "resp_buf_room");
		memcpy(b.p + b.len, data + fed, piece);
		b.len += piece;
		fed += piece;
		while (b.len) {
			n = parse_exact(b.p, b.len, &r, &s_off);
			if (n <= 0)
				break;
			record(run, at, n, &r, s_off);
			at += n;
			resp_buf_consume(&b, n);
		}
		if (n < 0)
			break;
	}
	run->end = b.len ? n : 0;
	resp_buf_free(&b);
}

static void same(const struct run *a, const struct run *b, const char *how)
{
	size_t i;

	FUZZ_CHECK(a->n == b->n, "%s: %zu replies, whole %zu", how, b->n, a->n);
	FUZZ_CHECK(a->end == b->end, "%s: ends %ld, whole %ld", how, b->end, a->end);
	for (i = 0; i < a->n; i++) {
		const struct rec *x = &a->v[i], *y = &b->v[i];

		FUZZ_CHECK(x->at == y->at && x->used == y->used && x->s_off == y->s_off &&
				   x->len == y->len && x->type == y->type && x->n == y->n,
			   "%s: reply %zu differs", how, i);
	}
}

/* The input as a command's arguments, split at each 0 byte: written, parsed back. */
static void command_back(const uint8_t *data, size_t size)
{
	const char *argv[64];
	size_t lens[64], at, off;
	struct resp_buf b = {};
	struct resp_reply r;
	int argc = 0, i;
	long n;

	for (at = 0; argc < 64;) {
		const uint8_t *z = memchr(data + at, 0, size - at);
		size_t end = z ? (size_t)(z - data) : size;

		argv[argc] = (const char *)data + at;
		lens[argc++] = end - at;
		if (!z)
			break;
		at = end + 1;
	}
	FUZZ_CHECK(!resp_cmd(&b, argc, argv, lens), "resp_cmd");
	n = resp_parse(b.p, b.len, &r);
	FUZZ_CHECK(n == (long)b.len, "a command parses back whole: %ld of %zu", n, b.len);
	FUZZ_CHECK(r.type == RESP_ARRAY && r.n == argc, "... as an array of %d", argc);
	off = (const char *)memchr(b.p, '\n', b.len) - b.p + 1;
	for (i = 0; i < argc; i++) {
		n = resp_parse(b.p + off, b.len - off, &r);
		FUZZ_CHECK(n > 0 && r.type == RESP_BULK && r.len == lens[i] &&
				   !memcmp(r.s, argv[i], lens[i]),
			   "... argument %d is its bytes", i);
		off += n;
	}
	FUZZ_CHECK(off == b.len, "... and nothing else");
	resp_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A reply takes 3 bytes at least ("+\r\n"). */
	struct run whole = { calloc(size / 3 + 1, sizeof(struct rec)), 0, 0 };
	struct run pieces = { calloc(size / 3 + 1, sizeof(struct rec)), 0, 0 };

	FUZZ_CHECK(whole.v && pieces.v, "calloc");
	parse_whole(data, size, &whole);
	if (size <= 1024) {
		parse_pieces(data, size, NULL, 0, &pieces);
		same(&whole, &pieces, "a byte at a time");
	}
	/* Pieces of the sizes of the last bytes (any split shows in some input). */
	pieces.n = 0;
	parse_pieces(data, size, data + size - (size < 4 ? size : 4), size < 4 ? size : 4, &pieces);
	same(&whole, &pieces, "in pieces");
	command_back(data, size);
	free(whole.v);
	free(pieces.v);
	return 0;
}
