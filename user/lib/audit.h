/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * audit.h - a record in syslog of every change made to a limiter (the
 * journal picks it up): who (the real uid and its name, the login uid the
 * kernel keeps across sudo and su, and the sudo user), what (the command
 * line, quoted as a shell would need it, control bytes escaped) and the
 * result (done, or the exit code and the first error the command printed).
 *
 *   xdp-rl[1234]: uid 0 (root), login uid 1000 (alice), sudo user alice:
 *     xdp-rl -n web load eth0 --limit 100: done
 *
 * Facility LOG_AUTHPRIV: a record of who used root's power to change what
 * the host lets in belongs with sudo's and su's (rsyslog files it in
 * /var/log/auth.log, readable by root and adm only); severity notice when
 * done, warning when it failed. It is sent to /dev/log as glibc's syslog()
 * sends, by a client of its own so that the test build (build/xdp-rl-faults,
 * fault.h) can send it to a socket a test binds (XDP_RL_SYSLOG); the build
 * that is installed always uses /dev/log. A command never fails because its
 * record could not be sent (no syslog daemon): -v says so.
 *
 * Bottom layer: depends on nothing else of xdp-rl but log and fault.
 */
#ifndef XDP_RL_AUDIT_H
#define XDP_RL_AUDIT_H

/* This run changes state: its command line (main's whole argv) is kept for its record. */
void audit_begin(int argc, char **argv);
/* Send this run's record, if audit_begin() was called, with its exit code @code. */
void audit_end(int code);
/*
 * Send a record now: the command line @what (NULL: the one audit_begin()
 * kept), done if @code is 0, else failed with @code and @error (NULL: the
 * first error this run printed).
 */
void audit_log(const char *what, int code, const char *error);

/* @argv as a shell would need it typed: "xdp-rl load 'a b' $'\x01'" (for tests). */
void audit_quote(int argc, char **argv, char *buf, unsigned long len);

#endif
