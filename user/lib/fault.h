/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * fault.h - kill points for the crash test (tests/e2e/test_crash.py).
 *
 * Every step of a change to pinned state is marked with fault_point().
 * In build/xdp-rl-faults (built with -DXDP_RL_FAULTS, never installed) the
 * process kills itself with SIGKILL at the Nth point reached when
 * XDP_RL_FAULT_AT=N, and lists the points it passes on stderr when
 * XDP_RL_FAULT_TRACE is set. In build/xdp-rl it does nothing.
 * test_env() is that build's other switch.
 */
#ifndef XDP_RL_FAULT_H
#define XDP_RL_FAULT_H

void fault_point(const char *name);

/*
 * The environment variable @name in the test build (build/xdp-rl-faults);
 * NULL in build/xdp-rl, whatever the environment says. For switches only a
 * test may throw, such as where audit records go (audit.h: XDP_RL_SYSLOG).
 */
const char *test_env(const char *name);

#endif
