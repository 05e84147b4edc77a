#!/usr/bin/env bash
# Installs what kverify needs (Debian 12) and builds it into build/.
# Usage: scripts/setup.sh          the tool: compilers, Vulkan, shaderc, cJSON, zlib,
#                                  libzip, OpenBLAS and lavapipe (as root, or with sudo)
#        scripts/setup.sh --test   also what the tests need (cmocka, the Khronos
#                                  validation layers, python3 with numpy, patch,
#                                  xmllint, chromium for the HTML checks); builds nothing
#                                  (scripts/test.sh calls it, then builds its own trees)
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(build-essential cmake pkg-config libvulkan-dev libshaderc-dev glslc glslang-dev spirv-tools
      libcjson-dev zlib1g-dev libzip-dev libopenblas-openmp-dev mesa-vulkan-drivers)
test=0
case "${1:-}" in
  "") ;;
  --test) test=1 ;;
  -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "setup.sh: unknown argument '$1' (scripts/setup.sh [--test])" >&2; exit 2 ;;
esac
[ "$test" = 0 ] || pkgs+=(libcmocka-dev vulkan-validationlayers python3 python3-numpy patch libxml2-utils chromium)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "$test" = 0 ] || exit 0
# The tool alone: the tests' build (cmocka) is scripts/test.sh's.
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF
cmake --build build -j "$(nproc)"
