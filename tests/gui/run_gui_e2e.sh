#!/usr/bin/env bash
# GUI end-to-end test: the real `speculum` under Xvfb opens the bundled target and a bundled dataset (on worker
# jobs), measures the configuration with the real engine, then applies a scripted edit (--then-set gamma=6, one
# ActionSetConfig as a slider emits), waits for the debounced measured re-run, prints it, saves a screenshot and
# exits; the image and the printed measurements are checked. A second run with the same settings file must come
# back with the edited configuration and the saved window layout. A bad GGUF must be a message, not a crash.
# usage: run_gui_e2e.sh SPECULUM CHECKER SOURCE_DIR OUTDIR
set -euo pipefail
app=$1 checker=$2 src=$3 out=$4
mkdir -p "$out"
rm -f "$out/e2e.png" "$out/e2e_bad.png" "$out/settings.ini"
command -v xvfb-run >/dev/null || { echo "xvfb-run not found: install xvfb (scripts/install-deps.sh)" >&2; exit 1; }
export LIBGL_ALWAYS_SOFTWARE=1 QT_QPA_PLATFORM=xcb XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
export XDG_CONFIG_HOME="$out/config"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
model="$src/resources/models/speculum-target-bf16.gguf" dataset="$src/datasets/code_completion.jsonl"
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { timeout 150 xvfb-run -a -s "-screen 0 1400x900x24" "$app" "$@" 2>&1; }

# 1. Measure, edit, wait for the re-run, screenshot. Small runs: 2 prompts x 32 new tokens.
log=$(run --model "$model" --dataset "$dataset" --settings-file "$out/settings.ini" --set gamma=4 \
      --set measure_tokens=32 --set measure_prompts=2 --set profile=rtx4090 --then-set gamma=6 --exit-when-measured \
      --screenshot "$out/e2e.png" --frames 4 --size 1400x860 --timeout 120) || { rc=$?; echo "$log"; fail "exit code $rc"; }
echo "$log"
grep -q "speculum: info: Loaded" <<<"$log" || fail "the model was not reported as loaded"
measured=$(grep "^speculum: measured: " <<<"$log") || fail "no measured result printed"
[ "$(wc -l <<<"$measured")" -eq 2 ] || fail "expected two measured runs (before and after the edit)"
first=$(sed -n 1p <<<"$measured") second=$(sed -n 2p <<<"$measured")
grep -q "gamma 4, 2 prompts, 64 tokens" <<<"$first" || fail "first run: expected gamma 4, 2 prompts, 64 tokens"
grep -q "gamma 6, 2 prompts, 64 tokens" <<<"$second" || fail "the re-run after the edit did not measure gamma 6"
grep -Eq "speedup [0-9]+\.[0-9]+x \([0-9.]+ tokens/s, baseline [0-9.]+\)" <<<"$second" || fail "no measured speedup"
grep -Eq "speedup 0\.000x" <<<"$second" && fail "measured speedup is zero"
# Repeated A/B passes (the app's default): the median speedup and its interval.
grep -Eq "speedup median [0-9]+\.[0-9]+x \[[0-9.]+, [0-9.]+\] \([0-9]+ % interval, [0-9]+ pairs in [0-9]+ passes\)" <<<"$second" \
    || fail "no median speedup with its interval"
grep -q "lossless on 2/2 prompts" <<<"$second" || fail "greedy speculative output differs from plain decoding"
# At most gamma positions, each a rate in [0, 1].
alphas=$(sed -E 's/.*alpha_i(( [0-9]\.[0-9]+)*), gamma.*/\1/' <<<"$second" | wc -w)
[ "$alphas" -ge 1 ] && [ "$alphas" -le 6 ] || fail "expected 1..6 measured alpha_i, got $alphas"
"$checker" "$out/e2e.png"

# 2. The settings file now holds the edited configuration and the ImGui layout; a new run starts from them.
grep -q 'imgui_layout' "$out/settings.ini" || fail "the window layout was not saved"
grep -q 'gamma' "$out/settings.ini" || fail "the configuration was not saved"
log=$(run --model "$model" --settings-file "$out/settings.ini" --exit-when-measured --timeout 120) \
    || { rc=$?; echo "$log"; fail "second run: exit code $rc"; }
echo "$log"
grep -q "^speculum: measured: .*gamma 6, " <<<"$log" || fail "the saved configuration (gamma 6) was not restored"
grep -q "speculum: info: Opened code_completion.jsonl" <<<"$log" || fail "the last dataset was not reopened"

# 3. A bad GGUF is an error message naming the file, not a crash.
printf 'not a gguf' > "$out/bad.gguf"
log=$(run --model "$out/bad.gguf" --screenshot "$out/e2e_bad.png" --frames 2 --size 1000x700)
echo "$log"
grep -q "speculum: error: Loading model bad.gguf failed: .*bad.gguf" <<<"$log" \
    || fail "a bad GGUF must appear as an error message naming the file"
"$checker" "$out/e2e_bad.png"
echo "gui e2e: ok"
