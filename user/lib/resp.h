/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * resp.h - the part of Redis's protocol (RESP2) the fleet agent speaks:
 * commands written as arrays of bulk strings into a buffer, and replies
 * parsed from bytes as they come, one at a time, without copying. Pure:
 * no I/O, so the unit tests check it byte for byte. Bottom layer.
 */
#ifndef XDP_RL_RESP_H
#define XDP_RL_RESP_H

#include <stddef.h>
#include <linux/types.h>

/* A growing byte buffer: what is to be sent, or what has come in. */
struct resp_buf {
	char *p;
	size_t len, cap;
};

void resp_buf_free(struct resp_buf *b);
/* Make room for @n more bytes: 0, or -1 (ENOMEM). */
int resp_buf_room(struct resp_buf *b, size_t n);
/* Drop the first @n bytes (consumed). */
void resp_buf_consume(struct resp_buf *b, size_t n);

/*
 * Append the command @argv[0..argc) (each @lens[i] bytes; NULL @lens: C
 * strings) as RESP: *argc, then $len and the bytes of each. 0, or -1.
 */
int resp_cmd(struct resp_buf *b, int argc, const char *const *argv, const size_t *lens);

enum resp_type {
	RESP_STATUS, /* +OK */
	RESP_ERROR,  /* -ERR ... */
	RESP_INT,    /* :42 */
	RESP_BULK,   /* $3 abc */
	RESP_NIL,    /* $-1 or *-1 */
	RESP_ARRAY,  /* *N and its N elements (parsed whole, walked with resp_parse) */
};

/*
 * One reply. @s points into the parsed bytes (not terminated); @n: integer
 * or array size. An array's @s and @len are its elements' bytes, whole:
 * resp_parse them in turn (CLUSTER SLOTS answers arrays of arrays).
 */
struct resp_reply {
	enum resp_type type;
	const char *s;
	size_t len;
	long long n;
};

/* How deep arrays of arrays may nest before a reply is refused. */
#define RESP_MAX_DEPTH 8

/*
 * Parse the reply at the start of @p[0..len): the bytes it takes (> 0), 0
 * if it is not all there yet, or -1 if it is not RESP (the connection is
 * then unusable).
 */
long resp_parse(const char *p, size_t len, struct resp_reply *r);

/*
 * The value of a reply that holds an integer: an integer reply, or a bulk
 * string of decimal digits (GET); nil is 0. 0 and *v, or -1.
 */
int resp_int(const struct resp_reply *r, long long *v);

#endif
