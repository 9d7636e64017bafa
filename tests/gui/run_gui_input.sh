#!/usr/bin/env bash
# GUI test with real input events: the real `speculum` under Xvfb, driven by xdotool as a user would (mouse press,
# hold, move and release; window resizes; the menu by keyboard; file dialogs typed into). The app only reports
# (--log-events: measured runs, messages, and where its sliders are on the screen); nothing is scripted inside it.
#   1. drag the gamma slider from 4 to 7, then the measured re-run runs gamma 7;
#   2. shrink and re-grow the window: the slider comes back to its place; View > Reset layout puts it at the default;
#   3. open a bad GGUF through File > Open model: an error, and the loaded model keeps measuring;
#   4. Export > Save... through the save dialog writes the file;
#   5. switch the drafter kind through its combo (n-gram, self-draft, the separate model again): each is measured;
#   6. Run history: pin the two newest runs and the panel overlays their acceptance and speedups;
#   7. a pruned self-draft: Build draft GGUF writes it and warns that engines read it dense; the llama.cpp snippet
#      saved from the Export panel loads that file and carries the warning;
#   8. the settings file holds the last edit while the app runs (written on change); quit with Ctrl+Q; a new launch
#      from it, and one from the copy taken while the app ran, measures that configuration again and finds the run
#      history with its two pinned runs (the session).
# usage: run_gui_input.sh SPECULUM SOURCE_DIR OUTDIR
set -euo pipefail
app=$1 src=$2 out=$3
if [ "${SPECULUM_GUI_INNER:-}" != 1 ]; then
    command -v xvfb-run >/dev/null || { echo "xvfb-run not found: install xvfb (scripts/install-deps.sh)" >&2; exit 1; }
    command -v xdotool >/dev/null || { echo "xdotool not found: install it (scripts/install-deps.sh)" >&2; exit 1; }
    mkdir -p "$out"
    rm -rf "$out"/*.log "$out/settings.ini" "$out/settings_while_running.ini" "$out/export.txt" "$out/bad.gguf" \
        "$out/config" "$out/session.json" "$out/sweeps" "$out/pruned-draft.gguf" "$out/llama.sh"
    SPECULUM_GUI_INNER=1 exec timeout 700 xvfb-run -a -s "-screen 0 1400x900x24" bash "$0" "$@"
fi

export LIBGL_ALWAYS_SOFTWARE=1 QT_QPA_PLATFORM=xcb XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
export XDG_CONFIG_HOME="$out/config"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
model="$src/resources/models/speculum-target-bf16.gguf" dataset="$src/datasets/code_completion.jsonl"
log="$out/input.log"
pid=
fail() {
    echo "FAIL: $*" >&2
    echo "---- app log ----" >&2
    cat "$log" >&2 || true
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    exit 1
}
# Waits until LOG has at least N lines matching PATTERN (grep -E); gives up after SECONDS.
wait_for() {
    local pattern=$1 n=$2 seconds=$3 waited=0
    local seen
    while seen=$(grep -cE "$pattern" "$log" 2>/dev/null || true) && [ "${seen:-0}" -lt "$n" ]; do
        kill -0 "$pid" 2>/dev/null || fail "the app exited while waiting for: $pattern"
        sleep 0.5
        waited=$((waited + 1))
        [ "$waited" -le $((seconds * 2)) ] || fail "not seen within ${seconds} s: $pattern"
    done
}
# Keys go to the focused window; without a window manager xdotool's --window sends synthetic events Qt ignores, so
# the pointer is put over the window and it is given the focus first.
keys() {
    local w=$1
    shift
    xdotool windowfocus --sync "$w"
    xdotool key "$@"
}
# Whether two "X Y W H" places agree within 2 pixels (the proportional layout rounds fractions of the window).
near() { awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, p); split(b, q); for (i = 1; i <= n; i++) { d = p[i] - q[i];
    if (d > 2 || d < -2) exit 1 } }'; }
# The window with this title, waiting up to 20 s for it (xdotool's --sync would wait forever).
window_named() {
    local w
    for _ in $(seq 40); do
        w=$(xdotool search --onlyvisible --name "$1" 2>/dev/null | head -1 || true)
        [ -n "$w" ] && { echo "$w"; return; }
        sleep 0.5
    done
    fail "no window titled '$1' appeared"
}
# The last reported place of a probed widget: "X Y W H".
widget() { grep -E "^speculum: widget: $1 " "$log" | tail -1 | awk '{print $4, $5, $6, $7}'; }
# Presses and releases the left button over a probed widget (X + DX or its middle), a frame apart: ImGui (1.86)
# reads the button state once a frame, so a press and release between two frames would be lost.
click() {
    local x y w h
    read -r x y w h <<<"$(widget "$1")"
    [ -n "${h:-}" ] || fail "the widget $1 was never drawn"
    xdotool mousemove $((x + ${2:-$((w / 2))})) $((y + h / 2))
    sleep 0.5
    xdotool mousedown 1
    sleep 0.3
    xdotool mouseup 1
}
# A panel to the front: a click on its title bar (probed window NAME).
front() {
    local x y w h
    read -r x y w h <<<"$(widget "$1")"
    [ -n "${h:-}" ] || fail "the panel $1 was never drawn"
    xdotool mousemove $((x + 40)) $((y + 8))
    sleep 0.3
    xdotool click 1
    sleep 0.5
}
runs() { grep -c "^speculum: measured:" "$log" || true; }
last_draft() { grep "^speculum: measured:" "$log" | tail -1 | sed 's/.*, draft //'; }

: >"$log"
"$app" --model "$model" --dataset "$dataset" --settings-file "$out/settings.ini" --set gamma=4 \
    --set measure_tokens=32 --set measure_prompts=2 --set profile=rtx4090 --size 1400x860 --log-events >"$log" 2>&1 &
pid=$!
wait_for "^speculum: measured: .*gamma 4, " 1 150
wid=$(xdotool search --onlyvisible --pid "$pid" | head -1)
[ -n "$wid" ] || fail "no window of the app"
wait_for "^speculum: widget: gamma " 1 30
first=$(widget gamma)
echo "gamma slider at $first"

# 1. Press on the grab of 4, hold, move to where 7 is, release. An ImGui int slider of 1..16 puts value v at
#    x + pad + g/2 + (v-1)/15 * (w - 2 pad - g), with g = w/16 the grab and pad = 2 (GrabPadding).
read -r x y w h <<<"$first"
at() { awk -v x="$x" -v w="$w" -v v="$1" 'BEGIN { g = w / 16; printf "%d", x + 2 + g / 2 + (v - 1) / 15 * (w - 4 - g) }'; }
cy=$((y + h / 2))
xdotool mousemove "$(at 4)" "$cy"
sleep 0.3
xdotool mousedown 1
for v in 5 6 7; do
    sleep 0.15
    xdotool mousemove "$(at "$v")" "$cy"
done
sleep 0.3
xdotool mouseup 1
wait_for "^speculum: measured: .*gamma 7, " 1 150
echo "dragged: the re-run measured gamma 7"

# 2. Drag the Configuration panel by its title bar; shrink and re-grow the window (the proportional layout keeps the
#    panel where it was moved); View > Reset layout puts it back at its default place.
read -r px py pw ph <<<"$(widget configuration_window)"
xdotool mousemove $((px + 80)) $((py + 8))
sleep 0.3
xdotool mousedown 1
for step in 1 2 3 4; do
    sleep 0.1
    xdotool mousemove $((px + 80 + step * 50)) $((py + 8 + step * 20))
done
sleep 0.3
xdotool mouseup 1
sleep 1
read -r x y w h <<<"$first"
moved="$((x + 200)) $((y + 80)) $w $h"
[ "$(widget gamma)" = "$moved" ] || fail "after dragging the panel by (200, 80) the slider is at $(widget gamma), expected $moved"
xdotool windowsize "$wid" 800 560
sleep 2
xdotool windowsize "$wid" 1400 860
sleep 2
xdotool mousemove 5 30  # a mouse move renders a frame
sleep 1
near "$(widget gamma)" "$moved" || fail "after shrinking and re-growing the window the slider is at $(widget gamma), expected $moved"
keys "$wid" alt+v
sleep 1
xdotool key r
sleep 2
xdotool mousemove 6 30
sleep 1
near "$(widget gamma)" "$first" || fail "after View > Reset layout the slider is at $(widget gamma), default $first"
echo "moved the panel, resized, reset layout: the slider is back at $first"

# 3. File > Open model (Ctrl+O), type a bad file's path: an error; the model stays and measures the next edit.
printf 'not a gguf' >"$out/bad.gguf"
xdotool mousemove 700 400
keys "$wid" ctrl+o
dialog=$(window_named "Open model")
xdotool windowfocus --sync "$dialog"
xdotool type --delay 20 "$out/bad.gguf"
xdotool key Return
wait_for "^speculum: error: Loading model bad.gguf failed" 1 30
read -r x y w h <<<"$(widget gamma)"
xdotool mousemove "$(at 7)" "$((y + h / 2))"
sleep 0.3
xdotool mousedown 1
sleep 0.2
xdotool mousemove "$(at 5)" "$((y + h / 2))"
sleep 0.3
xdotool mouseup 1
wait_for "^speculum: measured: .*gamma 5, " 1 150
echo "bad file: error shown, the loaded model measured gamma 5"

# 4. View > Export shows the panel; its Save... button opens the save dialog; the typed path is written (whole:
#    write-then-rename).
if [ -z "$(widget export_save)" ]; then
    xdotool mousemove 700 400
    keys "$wid" alt+v
    sleep 1
    xdotool key Up Up Return  # from the top, up wraps to Reset layout; above it is the last panel, Export
    sleep 1
    xdotool mousemove 700 410
    sleep 1
fi
if [ -n "$(widget export_save)" ]; then
    read -r x y w h <<<"$(widget export_save)"
    # ImGui (1.86) reads the button state once a frame: a press and release between two frames would be lost.
    xdotool mousemove $((x + w / 2)) $((y + h / 2))
    sleep 0.5
    xdotool mousedown 1
    sleep 0.3
    xdotool mouseup 1
    dialog=$(window_named "Save export")
    xdotool windowfocus --sync "$dialog"
    xdotool key ctrl+a
    xdotool type --delay 20 "$out/export.txt"
    xdotool key Return
    wait_for "^speculum: info: Exported to .*export.txt" 1 30
    [ -s "$out/export.txt" ] || fail "the export was reported saved but the file is empty or missing"
    echo "export: saved $(wc -c <"$out/export.txt") bytes"
else
    fail "the Export panel's Save button was not drawn"
fi

# 5. The drafter kind, back and forth through its combo: each kind is measured (what applied only to the old kind
#    is cleared by the controller, so nothing blocks the run).
for kind in ngram self model; do
    n=$(runs)
    front configuration_window
    click drafter_kind
    wait_for "^speculum: widget: kind_$kind " 1 20
    sleep 1
    click "kind_$kind"
    wait_for "^speculum: measured:" $((n + 1)) 150
    case $kind in
    model) last_draft | grep -q "^bundled draft model" || fail "back to the separate model, measured: $(last_draft)" ;;
    *) last_draft | grep -q "^bundled draft model" && fail "kind $kind measured the separate model: $(last_draft)" ;;
    esac
    echo "kind $kind measured: draft $(last_draft | cut -c1-80)"
done

# 6. View > Run history: pin the two newest runs; the panel draws them overlaid.
xdotool mousemove 700 400
keys "$wid" alt+v
sleep 1
xdotool key Up Up Up Return  # from the top, up wraps to Reset layout; above it Export, then Run history
wait_for "^speculum: widget: history_pin_1 " 1 20
sleep 1
click history_pin_0
sleep 1
click history_pin_1
wait_for "^speculum: widget: history_overlay " 1 20
echo "pinned two runs: the overlay is drawn"

# 7. A pruned self-draft, built: the status says it is stored dense (its size, the c an engine would see); the
#    llama.cpp snippet saved from the Export panel loads that very file and carries the warning.
n=$(runs)
front configuration_window
click drafter_kind
sleep 1
click kind_self
wait_for "^speculum: measured:" $((n + 1)) 150
wait_for "^speculum: widget: prune_ratio " 1 20
n=$(runs)
read -r x y w h <<<"$(widget prune_ratio)"
click prune_ratio $((w / 2))
wait_for "^speculum: measured:" $((n + 1)) 150
front export_window
click build_draft
dialog=$(window_named "Save the draft GGUF")
xdotool windowfocus --sync "$dialog"
xdotool key ctrl+a
xdotool type --delay 20 "$out/pruned-draft.gguf"
xdotool key Return
wait_for "^speculum: info: Wrote the draft .*pruned-draft.gguf" 1 120
wait_for "^speculum: info: The draft GGUF stores its pruned or truncated weights at full size" 1 10
front export_window
click export_format
wait_for "^speculum: widget: format_speculum-llama-cpp.sh " 1 20
sleep 1
click format_speculum-llama-cpp.sh
sleep 1
click export_save
dialog=$(window_named "Save export")
xdotool windowfocus --sync "$dialog"
xdotool key ctrl+a
xdotool type --delay 20 "$out/llama.sh"
xdotool key Return
wait_for "^speculum: info: Exported to .*llama.sh" 1 30
grep -q -- "$out/pruned-draft.gguf" "$out/llama.sh" || fail "the llama.cpp snippet does not load the built draft"
grep -q "^# The draft GGUF stores its pruned" "$out/llama.sh" || fail "the saved snippet lacks the dense warning"
echo "built a pruned draft: the llama.cpp snippet loads it, with the warning"

# 8. The settings are written when they change, not only on quit: a copy of the file taken while the app still runs
#    (what a crash or a kill would leave) already holds the last edit. Then quit; a new launch from either measures
#    it again, and finds the run history with its two pinned runs.
sleep 2
cp "$out/settings.ini" "$out/settings_while_running.ini"
edited=$(last_draft | sed 's/, lossless.*//')
xdotool mousemove 700 400
keys "$wid" ctrl+q
for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
kill -0 "$pid" 2>/dev/null && fail "Ctrl+Q did not close the app"
wait "$pid" || fail "the app exited with an error"
pid=
log="$out/input_second.log"
"$app" --model "$model" --settings-file "$out/settings.ini" --exit-when-measured --timeout 150 --log-events >"$log" \
    2>&1 || fail "second launch: exit code $?"
grep -E "^speculum: measured: .*gamma 5, " "$log" | grep -qF "draft $edited" || fail "the settings did not bring back: $edited"
grep -qE "^speculum: info: Session restored: [0-9]+ runs in the history \(2 pinned\)" "$log" \
    || fail "the run history and its two pinned runs were not restored"
echo "restarted: $(grep -oE "Session restored: [0-9]+ runs in the history \(2 pinned\)" "$log")"
log="$out/input_third.log"
"$app" --model "$model" --settings-file "$out/settings_while_running.ini" --exit-when-measured --timeout 150 >"$log" \
    2>&1 || fail "launch from the settings written while running: exit code $?"
grep -E "^speculum: measured: .*gamma 5, " "$log" | grep -qF "draft $edited" || fail "the settings were not written on change"
echo "gui input: ok"
