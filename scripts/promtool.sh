#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Put promtool (Prometheus's own checker of the text exposition format) at
# OUT, taken from Debian's prometheus package without installing it: the
# package would bring a web UI's JavaScript libraries and a service that
# starts, where the tests need one binary. apt-get download fetches the
# .deb, dpkg-deb -x unpacks it aside, and only usr/bin/promtool is kept.
#   scripts/promtool.sh [OUT]      OUT: build/promtool unless given
set -euo pipefail

out=${1:-build/promtool}
[ -x "$out" ] && exit 0
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Run as root, apt would fetch as _apt, who cannot write to a private folder.
chmod 0755 "$tmp"
download() {
	(cd "$tmp" && apt-get -q -o APT::Sandbox::User=root download prometheus >/dev/null)
}
if ! download; then
	# No package lists yet (a fresh machine): fetch them, once.
	[ "$(id -u)" -eq 0 ] || { echo "promtool.sh: cannot download prometheus (run as root)" >&2; exit 1; }
	apt-get update -qq
	download
fi
dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
install -m 0755 "$tmp/x/usr/bin/promtool" "$out"
"$out" --version >/dev/null
