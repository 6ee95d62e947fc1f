// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* tls.c - TLS sessions for the connections to Redis, non-blocking (see tls.h). */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "caps.h"
#include "tls.h"

/* The largest CA bundle, certificate or key file read (the system's bundle is ~200 KiB). */
#define TLS_FILE_MAX (1024 * 1024)

/*
 * OpenSSL's reason for the last error of this thread (a system error, as
 * a missing file, before any other), and its queue emptied.
 */
static const char *reason(char *buf, size_t len)
{
	unsigned long e, last = 0, sys = 0, own = 0;
	const char *s;

	while ((e = ERR_get_error())) {
		last = e;
		if (ERR_SYSTEM_ERROR(e) && !sys)
			sys = e;
		/* A library's own reason (100 and up), not "PEM lib" passed up. */
		else if (!ERR_SYSTEM_ERROR(e) && ERR_GET_REASON(e) >= 100)
			own = e;
	}
	if (own)
		last = own;
	if (sys) {
		snprintf(buf, len, "%s", strerror(ERR_GET_REASON(sys)));
		return buf;
	}
	s = last ? ERR_reason_error_string(last) : NULL;
	if (s)
		snprintf(buf, len, "%s", s);
	else if (last)
		ERR_error_string_n(last, buf, len);
	else
		snprintf(buf, len, "unknown error");
	return buf;
}

/*
 * File @path of a --tls- option, read with the caller's own rights (caps.h:
 * the binary may have CAP_DAC_OVERRIDE, and OpenSSL would open it with
 * that; a FIFO would block): a BIO over its bytes, which are in *@text
 * (*@len bytes) for the caller to free after the BIO. NULL with the reason
 * in @why.
 */
static BIO *file_bio(const char *path, char **text, size_t *len, char *why, size_t wlen)
{
	BIO *b;

	*text = NULL;
	if (read_as_caller(path, TLS_FILE_MAX, text, len)) {
		snprintf(why, wlen, "%s",
			 errno == EINVAL ? "not a regular file" :
			 errno == EFBIG	 ? "larger than 1 MiB" :
					   strerror(errno));
		return NULL;
	}
	b = BIO_new_mem_buf(*text, (int)*len);
	if (!b) {
		snprintf(why, wlen, "out of memory");
		free(*text);
		*text = NULL;
	}
	return b;
}

/* A file's bytes done with: wiped first (a key's), then freed. */
static void file_done(BIO *b, char *text, size_t len)
{
	BIO_free(b);
	if (text)
		OPENSSL_cleanse(text, len);
	free(text);
}

/* Every certificate (and CRL) of PEM @b into the context's trust store: 0, or -1. */
static int load_ca(SSL_CTX *ctx, BIO *b)
{
	X509_STORE *store = SSL_CTX_get_cert_store(ctx);
	STACK_OF(X509_INFO) *infos = PEM_X509_INFO_read_bio(b, NULL, NULL, NULL);
	X509_INFO *info;
	int i, n = 0, rc = 0;

	if (!infos)
		return -1;
	/* As SSL_CTX_load_verify_locations does with a file: certificates and CRLs. */
	for (i = 0; i < sk_X509_INFO_num(infos) && !rc; i++) {
		info = sk_X509_INFO_value(infos, i);
		if (info->x509 && X509_STORE_add_cert(store, info->x509) == 1)
			n++;
		else if (info->x509)
			rc = -1;
		if (info->crl && X509_STORE_add_crl(store, info->crl) == 1)
			n++;
		else if (info->crl)
			rc = -1;
	}
	sk_X509_INFO_pop_free(infos, X509_INFO_free);
	if (!rc && !n) {
		ERR_raise(ERR_LIB_X509, X509_R_NO_CERTIFICATE_OR_CRL_FOUND);
		rc = -1;
	}
	return rc;
}

/*
 * PEM @b as SSL_CTX_use_certificate_chain_file takes a file: the first
 * certificate the client's, the others its chain. 0, or -1.
 */
static int load_cert(SSL_CTX *ctx, BIO *b)
{
	pem_password_cb *cb = SSL_CTX_get_default_passwd_cb(ctx);
	void *u = SSL_CTX_get_default_passwd_cb_userdata(ctx);
	X509 *x = PEM_read_bio_X509_AUX(b, NULL, cb, u);
	unsigned long e;

	if (!x || SSL_CTX_use_certificate(ctx, x) != 1 || SSL_CTX_clear_chain_certs(ctx) != 1) {
		X509_free(x);
		return -1;
	}
	X509_free(x);
	while ((x = PEM_read_bio_X509(b, NULL, cb, u))) {
		if (SSL_CTX_add0_chain_cert(ctx, x) != 1) {
			X509_free(x);
			return -1;
		}
	}
	/* The end of the file: no more PEM; anything else is an error. */
	e = ERR_peek_last_error();
	if (ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE) {
		ERR_clear_error();
		return 0;
	}
	return -1;
}

/* PEM @b's private key as the client's: 0, or -1. */
static int load_key(SSL_CTX *ctx, BIO *b)
{
	EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, SSL_CTX_get_default_passwd_cb(ctx),
					      SSL_CTX_get_default_passwd_cb_userdata(ctx));
	int rc = k && SSL_CTX_use_PrivateKey(ctx, k) == 1 ? 0 : -1;

	EVP_PKEY_free(k);
	return rc;
}

/*
 * File @path (of option @opt, holding @what) read and loaded by @load:
 * 0, or -1 with why in @why.
 */
static int load_file(SSL_CTX *ctx, const char *path, const char *opt, const char *what,
		     int (*load)(SSL_CTX *, BIO *), char *why, size_t len)
{
	char r[160], *text = NULL;
	size_t n = 0;
	BIO *b = file_bio(path, &text, &n, r, sizeof(r));
	int rc = -1;

	if (b) {
		ERR_clear_error();
		rc = load(ctx, b);
		if (rc)
			reason(r, sizeof(r));
	}
	if (rc)
		snprintf(why, len, "cannot read the %s of %s '%s': %s", what, opt, path, r);
	file_done(b, text, n);
	return rc;
}

int tls_setup(struct redis_tls *t, const char *ca, const char *cert, const char *key,
	      const char *server_name, char *why, size_t len)
{
	char r[160];

	memset(t, 0, sizeof(*t));
	t->server_name = server_name;
	ERR_clear_error();
	t->ctx = SSL_CTX_new(TLS_client_method());
	if (!t->ctx) {
		snprintf(why, len, "cannot make a TLS context: %s", reason(r, sizeof(r)));
		return -1;
	}
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(t->ctx,
			 SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
	SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
	/* The files the user named are read as the user (file_bio); the system's store by OpenSSL. */
	if (ca ? load_file(t->ctx, ca, "--tls-ca", "CA certificates", load_ca, why, len) :
		 SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
		if (!ca)
			snprintf(why, len,
				 "cannot read the CA certificates of the system's trust store: %s",
				 reason(r, sizeof(r)));
		goto fail;
	}
	if (cert && load_file(t->ctx, cert, "--tls-cert", "certificate", load_cert, why, len))
		goto fail;
	if (key && load_file(t->ctx, key, "--tls-key", "key", load_key, why, len))
		goto fail;
	if (cert && key && SSL_CTX_check_private_key(t->ctx) != 1) {
		snprintf(why, len, "the key of --tls-key '%s' is not that of --tls-cert '%s': %s",
			 key, cert, reason(r, sizeof(r)));
		goto fail;
	}
	return 0;
fail:
	tls_free(t);
	return -1;
}

void tls_free(struct redis_tls *t)
{
	SSL_CTX_free(t->ctx);
	t->ctx = NULL;
}

struct ssl_st *tls_new(const struct redis_tls *t, int fd, const char *host, char *why, size_t len)
{
	const char *name = t->server_name ? t->server_name : host;
	unsigned char ip[16];
	char r[160];
	int is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
	SSL *s;

	ERR_clear_error();
	s = SSL_new(t->ctx);
	if (!s || SSL_set_fd(s, fd) != 1)
		goto fail;
	SSL_set_hostflags(s, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	if (is_ip) {
		/* An address: the certificate must name it (subjectAltName IP); no SNI. */
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), name) != 1)
			goto fail;
	} else if (SSL_set_tlsext_host_name(s, name) != 1 || SSL_set1_host(s, name) != 1) {
		goto fail;
	}
	return s;
fail:
	snprintf(why, len, "cannot start TLS: %s", reason(r, sizeof(r)));
	SSL_free(s);
	return NULL;
}

void tls_close(struct ssl_st *s)
{
	/* No close_notify: the socket is closed next, and nothing may wait for it. */
	SSL_free(s);
}

int tls_handshake(struct ssl_st *s, short *events, char *why, size_t len)
{
	char r[160];
	long v;
	int rc, e;

	ERR_clear_error();
	errno = 0;
	rc = SSL_connect(s);
	if (rc == 1)
		return 1;
	e = SSL_get_error(s, rc);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		*events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
		return 0;
	}
	v = SSL_get_verify_result(s);
	if (v != X509_V_OK) {
		snprintf(why, len, "TLS handshake failed: certificate verify failed: %s",
			 X509_verify_cert_error_string(v));
		ERR_clear_error();
		errno = EPROTO;
	} else if (e == SSL_ERROR_SYSCALL && errno) {
		snprintf(why, len, "TLS handshake failed: %s", strerror(errno));
		ERR_clear_error();
	} else if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN) {
		snprintf(why, len, "TLS handshake failed: the server closed the connection");
		ERR_clear_error();
		errno = ECONNRESET;
	} else {
		snprintf(why, len, "TLS handshake failed: %s", reason(r, sizeof(r)));
		errno = EPROTO;
	}
	return -1;
}

/* A read or write that did not go through: -1 with errno, *events or @why. */
static ssize_t io_failed(struct ssl_st *s, int rc, short *events, char *why, size_t len,
			 int reading)
{
	char r[160];
	int e = SSL_get_error(s, rc);

	switch (e) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		*events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		ERR_clear_error();
		if (reading)
			return 0;
		errno = ECONNRESET;
		snprintf(why, len, "TLS: the server closed the connection");
		return -1;
	case SSL_ERROR_SYSCALL:
		ERR_clear_error();
		if (!errno) {
			if (reading)
				return 0;
			errno = ECONNRESET;
		}
		snprintf(why, len, "%s", strerror(errno));
		return -1;
	default:
		snprintf(why, len, "TLS: %s", reason(r, sizeof(r)));
		errno = EPROTO;
		return -1;
	}
}

ssize_t tls_read(struct ssl_st *s, void *buf, size_t n, short *events, char *why, size_t len)
{
	int rc;

	ERR_clear_error();
	errno = 0;
	rc = SSL_read(s, buf, n > INT_MAX ? INT_MAX : (int)n);
	return rc > 0 ? rc : io_failed(s, rc, events, why, len, 1);
}

ssize_t tls_write(struct ssl_st *s, const void *buf, size_t n, short *events, char *why, size_t len)
{
	int rc;

	ERR_clear_error();
	errno = 0;
	rc = SSL_write(s, buf, n > INT_MAX ? INT_MAX : (int)n);
	return rc > 0 ? rc : io_failed(s, rc, events, why, len, 0);
}
