#!/usr/bin/env bash
# Installs the servers and the browser the test suite talks to, from Debian's
# packages, when they are missing. Without root it says what to install.
set -euo pipefail
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-benchmark >/dev/null || need+=(redis-tools)
command -v nats-server >/dev/null || need+=(nats-server)
# scripts/cluster.sh (the compose topology as local processes) and its e2e test.
command -v haproxy >/dev/null || need+=(haproxy)
command -v prometheus >/dev/null || need+=(prometheus)
command -v chromium >/dev/null || command -v chromium-browser >/dev/null || need+=(chromium)
command -v node >/dev/null || need+=(nodejs)
# The README's curl examples (cmd/wsgateway/readme_test.go).
command -v curl >/dev/null || need+=(curl)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
	echo "missing: ${need[*]}; install with: apt-get install -y ${need[*]}" >&2
	exit 1
fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "installing ${need[*]} from Debian's packages" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
