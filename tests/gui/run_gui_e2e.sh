#!/usr/bin/env bash
# GUI end-to-end test: the real `speculum` under Xvfb opens a GGUF (loaded on a worker thread), applies a scripted
# setting change (gamma=6 and a hardware profile, as a panel's ActionSetConfig), waits until no job runs, saves a
# screenshot, and reports its messages. Also checks that a bad GGUF becomes a message, not a crash.
# usage: run_gui_e2e.sh SPECULUM CHECKER MAKE_GGUF OUTDIR
set -euo pipefail
app=$1 checker=$2 make_gguf=$3 out=$4
mkdir -p "$out"
rm -f "$out/e2e.png" "$out/e2e_bad.png"
command -v xvfb-run >/dev/null || { echo "xvfb-run not found: install xvfb (scripts/install-deps.sh)" >&2; exit 1; }
export LIBGL_ALWAYS_SOFTWARE=1 QT_QPA_PLATFORM=xcb XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
export XDG_CONFIG_HOME="$out/config"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
"$make_gguf" "$out/tiny.gguf"

log=$(timeout 180 xvfb-run -a -s "-screen 0 1400x900x24" "$app" --model "$out/tiny.gguf" --set gamma=6 \
      --set profile=rtx4090 --screenshot "$out/e2e.png" --frames 4 --size 1400x860 2>&1)
echo "$log"
grep -q "speculum: info: Loaded" <<<"$log" || { echo "FAIL: the model was not reported as loaded" >&2; exit 1; }
"$checker" "$out/e2e.png"

printf 'not a gguf' > "$out/bad.gguf"
log=$(timeout 180 xvfb-run -a -s "-screen 0 1400x900x24" "$app" --model "$out/bad.gguf" \
      --screenshot "$out/e2e_bad.png" --frames 2 --size 1000x700 2>&1)
echo "$log"
grep -q "speculum: error: Loading model bad.gguf failed: .*bad.gguf" <<<"$log" \
    || { echo "FAIL: a bad GGUF must appear as an error message naming the file" >&2; exit 1; }
"$checker" "$out/e2e_bad.png"
echo "gui e2e: ok"
