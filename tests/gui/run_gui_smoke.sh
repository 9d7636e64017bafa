#!/usr/bin/env bash
# GUI smoke test: runs the real `speculum` under Xvfb (Mesa software OpenGL), saves a screenshot after a few
# frames, and checks the image shows the ImGui panel. usage: run_gui_smoke.sh SPECULUM CHECKER OUTDIR
set -euo pipefail
app=$1 checker=$2 out=$3
mkdir -p "$out"
rm -f "$out/main.png"
command -v xvfb-run >/dev/null || { echo "xvfb-run not found: install xvfb (scripts/install-deps.sh)" >&2; exit 1; }
export LIBGL_ALWAYS_SOFTWARE=1 QT_QPA_PLATFORM=xcb XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
export XDG_CONFIG_HOME="$out/config"   # do not read or write the user's saved window layout
# Qt and Mesa keep allocations for the whole process; under ASan only report our own errors.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
timeout 180 xvfb-run -a -s "-screen 0 1280x800x24" "$app" --screenshot "$out/main.png" --frames 4 --size 1100x700
"$checker" "$out/main.png"
