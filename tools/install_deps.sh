#!/usr/bin/env bash
# Installs every build and test dependency of dynsparse from Debian packages.
# Called by README's setup command and by .ci/run; safe to run repeatedly.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libabsl-dev libyaml-cpp-dev libeigen3-dev nlohmann-json3-dev libicu-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libbz2-dev  # HellaSwag's .txt.bz2 (datasets/tasks)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "dynsparse dependencies present: ${packages[*]}"
