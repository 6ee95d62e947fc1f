/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * tls.h - TLS for the fleet agent's connections to Redis (OpenSSL): one
 * context for every connection (the CA to verify the server by, or the
 * system's trust store; a client certificate and key, for a Redis with
 * tls-auth-clients), and each connection's session. The server's
 * certificate is always verified, and so is its name (the host of the
 * address, or the name given), as an IP address when it is one. Every step
 * is non-blocking: it says what it waits for (POLLIN, POLLOUT), and the
 * caller polls with its own deadline (redis.c). Bottom layer: nothing of
 * xdp-rl's.
 */
#ifndef XDP_RL_TLS_H
#define XDP_RL_TLS_H

#include <stddef.h>
#include <sys/types.h>

struct ssl_ctx_st;
struct ssl_st;

/* What --tls and its options make: shared by every connection. */
struct redis_tls {
	struct ssl_ctx_st *ctx;
	const char *server_name; /* NULL: the host of each address */
};

/*
 * A context: @ca (NULL: the system's trust store), @cert and @key (both, or
 * neither). 0, or -1 with why in @why (the file and OpenSSL's reason).
 */
int tls_setup(struct redis_tls *t, const char *ca, const char *cert, const char *key,
	      const char *server_name, char *why, size_t len);
void tls_free(struct redis_tls *t);

/* A session on connected socket @fd to @host: NULL with why in @why. */
struct ssl_st *tls_new(const struct redis_tls *t, int fd, const char *host, char *why, size_t len);
void tls_close(struct ssl_st *s);

/*
 * One step of the handshake: 1 done; 0 wait for *@events; -1 failed, why
 * in @why (what failed: the certificate and why, the name, the server's
 * alert), errno set.
 */
int tls_handshake(struct ssl_st *s, short *events, char *why, size_t len);

/*
 * Read or write what the session takes now: bytes (> 0); 0 (read: the
 * peer closed); -1 with errno EAGAIN and *@events to wait for, or another
 * errno and why in @why.
 */
ssize_t tls_read(struct ssl_st *s, void *buf, size_t n, short *events, char *why, size_t len);
ssize_t tls_write(struct ssl_st *s, const void *buf, size_t n, short *events, char *why,
		  size_t len);

#endif
