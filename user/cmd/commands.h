/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* commands.h - every command's spec (cli.h), one file each: user/cmd_NAME.c. */
#ifndef XDP_RL_COMMANDS_H
#define XDP_RL_COMMANDS_H

#include "cli.h"

extern const struct cmd_spec cmd_load_spec;
extern const struct cmd_spec cmd_set_spec;
extern const struct cmd_spec cmd_unload_spec;
extern const struct cmd_spec cmd_status_spec;
extern const struct cmd_spec cmd_stats_spec;
extern const struct cmd_spec cmd_get_spec;
extern const struct cmd_spec cmd_reset_spec;
extern const struct cmd_spec cmd_charge_spec;
extern const struct cmd_spec cmd_top_spec;
extern const struct cmd_spec cmd_rule_spec;
extern const struct cmd_spec cmd_apply_spec;
extern const struct cmd_spec cmd_config_spec;
extern const struct cmd_spec cmd_metrics_spec;
extern const struct cmd_spec cmd_exporter_spec;
extern const struct cmd_spec cmd_gc_spec;
extern const struct cmd_spec cmd_fleet_spec;
extern const struct cmd_spec cmd_lists_spec;
extern const struct cmd_spec cmd_capture_spec;
extern const struct cmd_spec cmd_events_spec;

#endif
