#!/usr/bin/env bash
# Installs kverify's dependencies (Debian 12), builds it into build/.
# Usage: scripts/setup.sh            (as root, or with sudo available)
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(build-essential cmake pkg-config libvulkan-dev libshaderc-dev glslc glslang-dev spirv-tools
      libcjson-dev zlib1g-dev libzip-dev libopenblas-openmp-dev mesa-vulkan-drivers vulkan-validationlayers libcmocka-dev
      python3 python3-numpy patch libxml2-utils chromium)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$(nproc)"
