#!/usr/bin/env bash
# Installs the Debian 12 packages ppsched's build, tests and tools need, when some are missing.
# As root it runs `apt-get update` once and installs what is missing; otherwise it says what to
# install and fails. Used by scripts/test-all.sh and scripts/run-example.sh.
set -euo pipefail

packages=(catch2 libfmt-dev libbenchmark-dev ninja-build cmake g++ clang clang-format
          libxml2-utils librsvg2-bin openmpi-bin libopenmpi-dev libclang-rt-14-dev
          chromium chromium-driver python3-selenium python3-pulp coinor-cbc cadical)

missing=()
for p in "${packages[@]}"; do
  if [[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) != installed ]]; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root, or: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
