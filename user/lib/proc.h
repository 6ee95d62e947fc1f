/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * proc.h - what /proc/PID/stat says of a process: the one reader of it.
 * Bottom layer.
 */
#ifndef XDP_RL_PROC_H
#define XDP_RL_PROC_H

#include <sys/types.h>

/* Fields of /proc/PID/stat, numbered as proc(5) numbers them. */
#define PROC_STAT_PPID	    4  /* the parent's pid */
#define PROC_STAT_STARTTIME 22 /* when it started, in clock ticks since boot */

/*
 * Numeric field @field (PROC_STAT_*: 4 or later) of /proc/@pid/stat, or 0
 * if there is no such process or field. The name before them, in
 * parentheses, may hold spaces and parentheses: fields count from its end.
 */
unsigned long long proc_stat_field(unsigned long long pid, int field);

/* The parent of @pid, 0 if unknown. */
pid_t proc_parent(pid_t pid);

/* When process @pid started (ticks since boot), 0 if there is none. */
unsigned long long proc_start_ticks(unsigned long long pid);

#endif
