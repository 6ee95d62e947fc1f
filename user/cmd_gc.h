/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* cmd_gc.h - `status --all`, which cmd_gc.c shows beside `gc`. */
#ifndef XDP_RL_CMD_GC_H
#define XDP_RL_CMD_GC_H

/*
 * `status --all`: every limiter in every namespace's folder, those whose
 * namespace or interface is gone included, with the memory their maps hold.
 */
int status_all(int as_json);

#endif
