#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The layers of user/ are its folders, and includes run one way, down
# (make lint runs this; see HACKING.md):
#   user/cmd/   the commands, one file each, and what they share (cli, output)
#   user/       the models: a limiter, its rules, settings, config, apply...
#   user/lib/   the bottom: logging, option parsers, JSON, caps, Redis...
# A file may include a header of its own folder or of one below; a header's
# name is unique across the three (so an include means one file). include/
# and the generated skeleton are free to all.
#   scripts/check-layers.sh [USER_DIR]     USER_DIR: user/ unless given
set -euo pipefail

dir=${1:-$(dirname "$0")/../user}
dir=${dir%/}
# The layers, lowest first; a folder's rank is its place here.
folders=("$dir/lib" "$dir" "$dir/cmd")
names=("user/lib/ (the bottom)" "user/ (the models)" "user/cmd/ (the commands)")

rank_of() { # the rank of the folder holding header $1, or nothing
	local i
	for i in "${!folders[@]}"; do
		if [ -e "${folders[$i]}/$1" ]; then
			echo "$i"
			return
		fi
	done
}

bad=0
declare -A seen=()
for i in "${!folders[@]}"; do
	for h in "${folders[$i]}"/*.h; do
		[ -e "$h" ] || continue
		name=$(basename "$h")
		if [ -n "${seen[$name]:-}" ]; then
			echo "$h: a header named $name is also in ${seen[$name]}: names are unique across user/'s layers" >&2
			bad=1
		fi
		seen[$name]=${folders[$i]}
	done
done

for i in "${!folders[@]}"; do
	for f in "${folders[$i]}"/*.c "${folders[$i]}"/*.h; do
		[ -e "$f" ] || continue
		while IFS=: read -r line inc; do
			r=$(rank_of "$(basename "$inc")")
			[ -n "$r" ] || continue # include/ or generated: free to all
			if [ "$r" -gt "$i" ]; then
				echo "$f:$line: includes $inc, of ${names[$r]}, a layer above ${names[$i]}" >&2
				bad=1
			fi
		done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
			sed -E 's/^([0-9]+):[^"]*"([^"]*)".*/\1:\2/')
	done
done
if [ "$bad" -ne 0 ]; then
	echo "check-layers: user/'s includes run against its layers, lib/ < user/ < cmd/ (see HACKING.md)" >&2
	exit 1
fi
