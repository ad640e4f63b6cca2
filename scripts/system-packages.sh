#!/usr/bin/env bash
# The Debian packages the tests and the providers need: installed when missing, as root,
# non-interactively (`make test` and `.ci/run` call this). Without root or apt-get it only says
# what is missing.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
base=(make python3-pip util-linux bubblewrap curl firejail)
# os-sandbox=qemu: QEMU, a Debian kernel with the 9p modules, a static busybox
vm=(qemu-system-x86 linux-image-amd64 busybox-static)
missing() { for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || echo "$pkg"; done; }
command -v dpkg >/dev/null || exit 0
mapfile -t need < <(missing "${base[@]}")
mapfile -t need_vm < <(missing "${vm[@]}")
[ $((${#need[@]} + ${#need_vm[@]})) -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "note: not installed (some provider tests will fail): ${need[*]} ${need_vm[*]}" >&2
  echo "      install them with: apt-get install ${need[*]} ${need_vm[*]}" >&2
  exit 0
fi
apt-get update -qq
if [ ${#need[@]} -gt 0 ]; then apt-get install -y -qq "${need[@]}"; fi
if [ ${#need_vm[@]} -gt 0 ]; then apt-get install -y -qq --no-install-recommends "${need_vm[@]}"; fi
