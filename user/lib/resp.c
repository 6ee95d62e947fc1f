// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* resp.c - Redis's protocol, the part the fleet agent speaks (see resp.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"
#include "vec.h"

/* The longest bulk string taken: Redis's own proto-max-bulk-len. */
#define RESP_BULK_MAX (512LL * 1024 * 1024)

void resp_buf_free(struct resp_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

int resp_buf_room(struct resp_buf *b, size_t n)
{
	return vec_room(b->p, b->len, b->cap, n, 4096);
}

void resp_buf_consume(struct resp_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}

/* "<c><n>\r\n" */
static int put_head(struct resp_buf *b, char c, size_t n)
{
	int w;

	if (resp_buf_room(b, 32))
		return -1;
	w = snprintf(b->p + b->len, 32, "%c%zu\r\n", c, n);
	b->len += w;
	return 0;
}

int resp_cmd(struct resp_buf *b, int argc, const char *const *argv, const size_t *lens)
{
	size_t n, old = b->len;
	int i;

	if (put_head(b, '*', argc))
		return -1;
	for (i = 0; i < argc; i++) {
		n = lens ? lens[i] : strlen(argv[i]);
		if (put_head(b, '$', n) || resp_buf_room(b, n + 2)) {
			b->len = old; /* never half a command */
			return -1;
		}
		memcpy(b->p + b->len, argv[i], n);
		b->len += n;
		b->p[b->len++] = '\r';
		b->p[b->len++] = '\n';
	}
	return 0;
}

/* No line is longer (the limit is on the line, however its bytes come in). */
#define RESP_LINE_MAX (64 * 1024)

/*
 * The line at @p (up to "\r\n"): its length without them, 0 if not all
 * there, -1 if bad (empty, with no type byte, or too long).
 */
static long line_len(const char *p, size_t len)
{
	const char *cr = memchr(p, '\r', len > RESP_LINE_MAX ? RESP_LINE_MAX + 1 : len);

	if (!cr)
		return len > RESP_LINE_MAX ? -1 : 0;
	if (cr == p)
		return -1;
	if ((size_t)(cr - p) + 1 >= len)
		return 0;
	return cr[1] == '\n' ? cr - p : -1;
}

/* A decimal integer, optionally negative, exactly @len bytes: 0, or -1. */
static int parse_ll(const char *s, size_t len, long long *v)
{
	unsigned long long x = 0, lim = (unsigned long long)__LONG_LONG_MAX__;
	int neg = 0;
	size_t i = 0;

	if (len && s[0] == '-') {
		neg = 1;
		i = 1;
		lim++;
	}
	if (i == len || len > 20)
		return -1;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (x > (lim - (s[i] - '0')) / 10)
			return -1;
		x = x * 10 + (s[i] - '0');
	}
	*v = neg ? (long long)(0 - x) : (long long)x;
	return 0;
}

static long parse_at(const char *p, size_t len, struct resp_reply *r, int depth)
{
	struct resp_reply sub;
	long l, used, n;
	long long i;

	if (!len)
		return 0;
	l = line_len(p, len);
	if (l <= 0)
		return l;
	r->s = p + 1;
	r->len = l - 1;
	used = l + 2;
	switch (p[0]) {
	case '+': r->type = RESP_STATUS; return used;
	case '-': r->type = RESP_ERROR; return used;
	case ':': r->type = RESP_INT; return parse_ll(p + 1, l - 1, &r->n) ? -1 : used;
	case '$':
		if (parse_ll(p + 1, l - 1, &r->n) || r->n < -1 || r->n > RESP_BULK_MAX)
			return -1;
		if (r->n == -1) {
			r->type = RESP_NIL;
			return used;
		}
		if ((size_t)used + r->n + 2 > len)
			return 0;
		if (p[used + r->n] != '\r' || p[used + r->n + 1] != '\n')
			return -1;
		r->type = RESP_BULK;
		r->s = p + used;
		r->len = r->n;
		return used + r->n + 2;
	case '*':
		if (parse_ll(p + 1, l - 1, &r->n) || r->n < -1 || depth >= RESP_MAX_DEPTH)
			return -1;
		if (r->n == -1) {
			r->type = RESP_NIL;
			return used;
		}
		r->type = RESP_ARRAY;
		for (i = 0; i < r->n; i++) {
			n = parse_at(p + used, len - used, &sub, depth + 1);
			if (n <= 0)
				return n;
			used += n;
		}
		/* Its elements, whole: resp_parse them one after another. */
		r->s = p + l + 2;
		r->len = used - (l + 2);
		return used;
	}
	return -1;
}

long resp_parse(const char *p, size_t len, struct resp_reply *r)
{
	memset(r, 0, sizeof(*r));
	return parse_at(p, len, r, 0);
}

int resp_int(const struct resp_reply *r, long long *v)
{
	switch (r->type) {
	case RESP_INT: *v = r->n; return 0;
	case RESP_NIL: *v = 0; return 0;
	case RESP_BULK: return parse_ll(r->s, r->len, v);
	default: return -1;
	}
}
