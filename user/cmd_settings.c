// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd_settings.c - the options load and set share (see cmd_settings.h). */
#include <string.h>
#include <linux/if_link.h>

#include "cmd_settings.h"
#include "live.h"
#include "log.h"

const struct word link_local_words[] = {
	{ "per-address", XDP_RL_LL_ADDRESS },
	{ "prefix", XDP_RL_LL_PREFIX },
	{ "exempt", XDP_RL_LL_EXEMPT },
	{ NULL, 0 },
};

const struct word mode_words[] = {
	{ "native", XDP_FLAGS_DRV_MODE },
	{ "generic", XDP_FLAGS_SKB_MODE },
	{ NULL, 0 },
};

/* One of a pair of opposite options (@on sets @flag): both is a usage error. */
static int either(struct settings *s, int *given, __u32 flag, int on, const char *cmd,
		  const char *pair)
{
	if (*given && !!(s->live.flags & flag) != on)
		return usage_err(cmd, "%s: %s exclude each other", cmd, pair);
	if (on)
		s->live.flags |= flag;
	*given = 1;
	return 0;
}

int settings_option(int opt, const char *arg, const char *cmd, struct settings *s)
{
	unsigned int v;
	const char *why;

	switch (opt) {
	case OPT_LIMIT:
		why = parse_u64(arg, 1, XDP_RL_LIMIT_MAX, &s->one.limit);
		if (why)
			return usage_err(cmd, "%s: invalid --limit '%s': %s", cmd, arg, why);
		s->has_limit = 1;
		return 0;
	case OPT_WINDOW:
		why = parse_duration(arg, WINDOW_MIN_NS, WINDOW_MAX_NS, &s->one.window_ns);
		if (why)
			return usage_err(cmd, "%s: invalid --window '%s': %s", cmd, arg, why);
		s->has_window = 1;
		return 0;
	case OPT_LAYER:
		if (s->live.nlayers == XDP_RL_MAX_LAYERS)
			return usage_err(cmd, "%s: at most %d --layer options", cmd,
					 XDP_RL_MAX_LAYERS);
		why = parse_layer(arg, &s->live.layer[s->live.nlayers]);
		if (why)
			return usage_err(cmd, "%s: invalid --layer '%s': %s", cmd, arg, why);
		s->live.nlayers++;
		return 0;
	case OPT_PER_KEY:
	case OPT_ALIGNED:
		return either(s, &s->has_align, XDP_RL_F_ALIGNED, opt == OPT_ALIGNED, cmd,
			      "--per-key and --aligned");
	case OPT_DRY_RUN:
	case OPT_ENFORCE:
		return either(s, &s->has_dry, XDP_RL_F_DRY_RUN, opt == OPT_DRY_RUN, cmd,
			      "--dry-run and --enforce");
	case OPT_NEW_SOURCES:
		s->has_new = 1;
		if (!strcmp(arg, "off")) {
			memset(&s->live.new_sources, 0, sizeof(s->live.new_sources));
			return 0;
		}
		why = parse_layer(arg, &s->live.new_sources);
		if (why)
			return usage_err(cmd, "%s: invalid --new-sources '%s': %s (or 'off')", cmd,
					 arg, why);
		return 0;
	case OPT_PROTO:
		why = word_parse(proto_words, arg, &v);
		if (why)
			return usage_err(cmd, "%s: invalid --proto '%s': %s", cmd, arg, why);
		s->live.select.proto = v;
		s->has_proto = 1;
		return 0;
	case OPT_DPORT:
		why = parse_ports(arg, &s->live.select);
		if (why)
			return usage_err(
				cmd,
				"%s: invalid --dport '%.40s': %s (e.g. 80,443,8000-8100, or "
				"any)",
				cmd, arg, why);
		s->has_dport = 1;
		return 0;
	case OPT_SYN:
	case OPT_NO_SYN:
		if (s->has_syn && s->live.select.syn != (opt == OPT_SYN))
			return usage_err(cmd, "%s: --syn and --no-syn exclude each other", cmd);
		s->live.select.syn = opt == OPT_SYN;
		s->has_syn = 1;
		return 0;
	case OPT_LINK_LOCAL:
		why = word_parse(link_local_words, arg, &v);
		if (why)
			return usage_err(cmd, "%s: invalid --link-local '%s': %s", cmd, arg, why);
		s->live.link_local = v;
		s->has_link_local = 1;
		return 0;
	case OPT_ON_FULL:
		why = word_parse(on_full_words, arg, &s->live.on_full);
		if (why)
			return usage_err(cmd, "%s: invalid --on-table-full '%s': %s", cmd, arg,
					 why);
		s->has_on_full = 1;
		return 0;
	}
	return 1;
}

int settings_layers(struct settings *s, const char *cmd, const struct xdp_rl_layer *base)
{
	if (s->live.nlayers && (s->has_limit || s->has_window))
		return usage_err(cmd, "%s: give either --limit/--window or --layer, not both", cmd);
	if (s->live.nlayers)
		return 0;
	s->live.layer[0] = *base;
	if (s->has_limit)
		s->live.layer[0].limit = s->one.limit;
	if (s->has_window)
		s->live.layer[0].window_ns = s->one.window_ns;
	s->live.nlayers = 1;
	return 0;
}

int settings_select(const struct settings *s, struct xdp_rl_live *live, const char *cmd)
{
	struct xdp_rl_select sel = live->select;
	const char *why;

	if (s->has_proto)
		sel.proto = s->live.select.proto;
	if (s->has_dport) {
		sel.nports = s->live.select.nports;
		memcpy(sel.port_lo, s->live.select.port_lo, sizeof(sel.port_lo));
		memcpy(sel.port_hi, s->live.select.port_hi, sizeof(sel.port_hi));
	}
	if (s->has_syn)
		sel.syn = s->live.select.syn;
	why = check_select(&sel);
	if (why)
		return usage_err(cmd, "%s: %s", cmd, why);
	live->select = sel;
	if (s->has_link_local)
		live->link_local = s->live.link_local;
	return 0;
}

/* The smallest Ethernet frame, and a full-size one, as XDP sees them (no FCS). */
#define FRAME_MIN  60
#define FRAME_FULL 1514

int settings_check_bytes(const struct xdp_rl_live *live, int bytes, const char *cmd)
{
	__u32 i;

	for (i = 0; bytes && i < live->nlayers && i < XDP_RL_MAX_LAYERS; i++) {
		if (live->layer[i].limit < FRAME_MIN)
			return usage_err(cmd,
					 "%s: a limit of %llu bytes can never pass a frame (the "
					 "smallest is %d bytes)",
					 cmd, (unsigned long long)live->layer[i].limit, FRAME_MIN);
		if (live->layer[i].limit < FRAME_FULL)
			log_warn(
				"%s: with a limit of %llu bytes per window, frames of more than %llu "
				"bytes can never pass (a full-size frame is %d)",
				cmd, (unsigned long long)live->layer[i].limit,
				(unsigned long long)live->layer[i].limit, FRAME_FULL);
	}
	return 0;
}
