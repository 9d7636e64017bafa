#!/usr/bin/env bash
# Installs, with apt-get, exactly the Debian 12 packages Speculum needs that are not installed yet.
# Idempotent: a second run installs nothing. Runs as root, or through sudo when not root.
#   scripts/install-deps.sh            build + test + app dependencies
#   scripts/install-deps.sh --dev      also the development-time tools (python3-torch for tools/train)
#   scripts/install-deps.sh --list     print the package list and exit
set -euo pipefail

packages=(
    # toolchain
    build-essential cmake pkg-config git
    # libraries (see CMakeLists.txt)
    qt6-base-dev libqt6opengl6-dev libgl-dev libimgui-dev libstb-dev libtbb-dev libopenblas-dev
    libgtest-dev libgmock-dev nlohmann-json3-dev libsqlite3-dev libpcre2-dev
    # export: SHA-256 of model files (libcrypto) and PNG plots
    libssl-dev libpng-dev
    # cluster sweeps (optional at build time, SPECULUM_WITH_MPI)
    libopenmpi-dev openmpi-bin
    # GUI tests: a virtual X server, Mesa's software OpenGL, and real mouse and keyboard input (xdotool)
    xvfb xauth libgl1-mesa-dri libglx-mesa0 libegl1 fonts-dejavu-core xdotool
    # house style: the test suite checks every source file with clang-format 14 (style.clang_format)
    clang-format
)
dev_packages=(python3 python3-torch python3-numpy python3-sympy python3-mpmath bible-kjv bible-kjv-text sqlite3-doc)

case "${1:-}" in
    --list) printf '%s\n' "${packages[@]}"; exit 0 ;;
    --dev) packages+=("${dev_packages[@]}") ;;
    "") ;;
    *) echo "usage: $0 [--dev|--list]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install-deps: all ${#packages[@]} packages already installed"
    exit 0
fi

echo "install-deps: installing ${#missing[@]} missing package(s): ${missing[*]}"
sudo=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-deps: not root and no sudo; install as root: apt-get install ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
