#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The layers of user/ run one way (make lint runs this; see HACKING.md):
#   commands  cmd_*.c, cmd_*.h, cli.c, cli.h, commands.h, main.c
#   models    every other file but the bottom layer's (limiter, rules, ...)
#   bottom    log, options, json, caps, mtable, skel, fault, audit, resp, redis (.c and .h)
# Fails when a file that is not a command includes a command header, or a
# bottom-layer file includes a header of user/ from outside its layer. Only
# "..." includes of user/'s own headers count: include/xdp_rl.h and the
# generated skeleton are free to all.
#   scripts/check-layers.sh [DIR]     DIR: user/ unless given
set -euo pipefail

dir=${1:-$(dirname "$0")/../user}
bottom=" log options json caps mtable skel fault audit resp redis "

is_command() {
	case $1 in
	cmd_*.c | cmd_*.h | cli.c | cli.h | commands.h | main.c) return 0 ;;
	*) return 1 ;;
	esac
}

bad=0
for f in "$dir"/*.c "$dir"/*.h; do
	[ -e "$f" ] || continue
	name=$(basename "$f")
	base=${name%.*}
	while IFS=: read -r line inc; do
		inc=$(basename "$inc")
		[ -e "$dir/$inc" ] || continue # not a header of user/
		if ! is_command "$name" && is_command "$inc"; then
			echo "user/$name:$line: includes the command header $inc, and is no command" >&2
			bad=1
		elif [[ $bottom == *" $base "* && $bottom != *" ${inc%.h} "* ]]; then
			echo "user/$name:$line: a bottom-layer file includes $inc, of a layer above" >&2
			bad=1
		fi
	done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
		sed -E 's/^([0-9]+):[^"]*"([^"]*)".*/\1:\2/')
done
if [ "$bad" -ne 0 ]; then
	echo "check-layers: user/ includes against its layers (see HACKING.md)" >&2
	exit 1
fi
