// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* audit.c - a syslog record of every change (see audit.h). */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "audit.h"
#include "fault.h"
#include "log.h"

#define SYSLOG_PATH "/dev/log"
#define WHAT_MAX    2048 /* the command line in a record, at most */
#define ERROR_MAX   512
#define IDENT	    "xdp-rl"

static char what_kept[WHAT_MAX];
static int begun;

/* A byte a shell takes as itself, unquoted. */
static int plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("@%+=:,./_-", c);
}

/* Append @s to @buf (length *@n of @len), quoted if it needs to be; 0, or -1 if it does not fit. */
static int quote_one(const char *s, char *buf, size_t len, size_t *n)
{
	char tmp[WHAT_MAX];
	size_t t = 0, i, k;
	int bare = *s != '\0', printable = 1;

	for (i = 0; s[i]; i++) {
		bare &= plain((unsigned char)s[i]);
		printable &= (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f;
	}
	if (bare) {
		t = snprintf(tmp, sizeof(tmp), "%s", s);
		if (t >= sizeof(tmp))
			return -1;
	} else if (printable) {
		/* 'it'\''s': a quote ends the quoting, is escaped, and quoting starts again. */
		tmp[t++] = '\'';
		for (i = 0; s[i] && t + 6 < sizeof(tmp); i++) {
			if (s[i] == '\'') {
				memcpy(tmp + t, "'\\''", 4);
				t += 4;
			} else {
				tmp[t++] = s[i];
			}
		}
		if (s[i])
			return -1;
		tmp[t++] = '\'';
	} else {
		/* $'...': bash's quoting, where a control byte (a newline) is \xHH. */
		tmp[t++] = '$';
		tmp[t++] = '\'';
		for (i = 0; s[i] && t + 8 < sizeof(tmp); i++) {
			unsigned char c = s[i];

			if (c == '\'' || c == '\\')
				t += snprintf(tmp + t, sizeof(tmp) - t, "\\%c", c);
			else if (c < 0x20 || c >= 0x7f)
				t += snprintf(tmp + t, sizeof(tmp) - t, "\\x%02x", c);
			else
				tmp[t++] = c;
		}
		if (s[i])
			return -1;
		tmp[t++] = '\'';
	}
	tmp[t] = '\0';
	k = strlen(tmp);
	if (*n + (*n ? 1 : 0) + k + 1 > len)
		return -1;
	if (*n)
		buf[(*n)++] = ' ';
	memcpy(buf + *n, tmp, k + 1);
	*n += k;
	return 0;
}

void audit_quote(int argc, char **argv, char *buf, unsigned long len)
{
	size_t n = 0;
	int i;

	if (len < 8)
		return;
	buf[0] = '\0';
	for (i = 0; i < argc; i++) {
		/* The program's own path says nothing about the change: its name does. */
		const char *a = i ? argv[i] : IDENT;

		if (quote_one(a, buf, len - 4, &n)) {
			snprintf(buf + n, len - n, "%s...", n ? " " : "");
			return;
		}
	}
}

void audit_begin(int argc, char **argv)
{
	audit_quote(argc, argv, what_kept, sizeof(what_kept));
	begun = 1;
}

void audit_end(int code)
{
	if (begun)
		audit_log(NULL, code, NULL);
}

/* @s with every byte that is not printable ASCII as '?': one line, whatever it holds. */
static void one_line(const char *s, char *buf, size_t len)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		buf[i] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
}

/* "uid 0 (root), login uid 1000 (alice), sudo user alice" */
static void who(char *buf, size_t len)
{
	const char *sudo = getenv("SUDO_USER");
	unsigned long login = 4294967295UL;
	uid_t uid = getuid(), euid = geteuid();
	struct passwd *pw;
	char name[64];
	size_t n;
	FILE *f;

	pw = getpwuid(uid);
	n = snprintf(buf, len, "uid %u (%s)", (unsigned)uid, pw ? pw->pw_name : "?");
	if (euid != uid && n < len) {
		pw = getpwuid(euid);
		n += snprintf(buf + n, len - n, ", euid %u (%s)", (unsigned)euid,
			      pw ? pw->pw_name : "?");
	}
	/* The uid the user logged in as: the kernel keeps it across sudo and su. */
	f = fopen("/proc/self/loginuid", "re");
	if (f) {
		if (fscanf(f, "%lu", &login) != 1)
			login = 4294967295UL;
		fclose(f);
	}
	if (login < 4294967295UL && n < len) { /* 4294967295: not set (no login) */
		pw = getpwuid((uid_t)login);
		n += snprintf(buf + n, len - n, ", login uid %lu (%s)", login,
			      pw ? pw->pw_name : "?");
	}
	if (sudo && *sudo && n < len) {
		one_line(sudo, name, sizeof(name));
		snprintf(buf + n, len - n, ", sudo user %s", name);
	}
}

/* Send @msg to the syslog socket at @path as a datagram (or a stream, if that is what it is). */
static int send_to(const char *path, const char *msg, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, type = SOCK_DGRAM, ret = -1;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
again:
	fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (errno == EPROTOTYPE && type == SOCK_DGRAM) {
			close(fd);
			type = SOCK_STREAM;
			goto again;
		}
		goto out;
	}
	/* A stream carries records apart by their ending NUL, as glibc's syslog() sends them. */
	ret = send(fd, msg, len + (type == SOCK_STREAM), MSG_NOSIGNAL) < 0 ? -1 : 0;
out:
	close(fd);
	return ret;
}

void audit_log(const char *what, int code, const char *error)
{
	const char *path = test_env("XDP_RL_SYSLOG");
	char by[256], err[ERROR_MAX], stamp[32], msg[WHAT_MAX + ERROR_MAX + 512];
	int pri = LOG_AUTHPRIV | (code ? LOG_WARNING : LOG_NOTICE), e = errno;
	struct tm tm;
	time_t now;
	size_t n;

	if (!path)
		path = SYSLOG_PATH;
	if (!what)
		what = what_kept;
	if (!error)
		error = log_first_error();
	who(by, sizeof(by));
	/* RFC 3164, as glibc's syslog() writes it: <PRI>Mmm dd hh:mm:ss ident[pid]: text */
	now = time(NULL);
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S", &tm);
	n = snprintf(msg, sizeof(msg), "<%d>%s %s[%d]: %s: %s: ", pri, stamp, IDENT, (int)getpid(),
		     by, what);
	if (!code) {
		snprintf(msg + n, sizeof(msg) - n, "done");
	} else {
		one_line(error ? error : "no error was printed", err, sizeof(err));
		snprintf(msg + n, sizeof(msg) - n, "failed (exit %d): %s", code, err);
	}
	if (send_to(path, msg, strlen(msg)))
		log_dbg("cannot send the audit record to %s: %m", path);
	errno = e;
}
