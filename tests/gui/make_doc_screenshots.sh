#!/usr/bin/env bash
# Regenerates docs/images/: the main window and one picture per panel, rendered by the real app under Xvfb on the
# bundled target and the prose suite (the task the default configuration was chosen on), each after the real
# engine has measured the configuration (every screenshot waits until no job runs). Not part of ctest. Timings in
# the pictures are whatever this machine measured at that moment.
# usage: tests/gui/make_doc_screenshots.sh BUILD_DIR   (from the repository root)
set -euo pipefail
build=${1:-build}
app=$build/app/speculum out=docs/images tmp=$(mktemp -d)
export LIBGL_ALWAYS_SOFTWARE=1 QT_QPA_PLATFORM=xcb XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$tmp} XDG_CONFIG_HOME=$tmp/config XDG_CACHE_HOME=$tmp/cache
shot() {  # shot FILE SIZE ARGS...
    local file=$1 size=$2
    shift 2
    xvfb-run -a -s "-screen 0 1400x900x24" "$app" --screenshot "$out/$file" --frames 4 --size "$size" --timeout 300 "$@" \
        | grep "measured:" || { echo "no measured run for $file" >&2; exit 1; }
}
common=(--model resources/models/speculum-target-bf16.gguf --dataset datasets/prose_continuation.jsonl
        --set profile=rtx4090 --set measure_prompts=2 --set measure_tokens=48 --exit-when-measured)
shot main.png 1400x860 "${common[@]}" --sweep gamma,alpha
shot panel_configuration.png 520x760 "${common[@]}" --panel Configuration
shot panel_model_data.png 640x560 "${common[@]}" --panel "Model and data"
shot panel_speedup.png 640x640 "${common[@]}" --panel Speedup
shot panel_acceptance.png 640x560 "${common[@]}" --set tree=budget --set budget=12 --panel Acceptance
shot panel_live_decode.png 640x420 "${common[@]}" --panel "Live decode"
shot panel_tree_view.png 640x480 "${common[@]}" --set tree=budget --set budget=16 --panel "Tree view"
shot panel_cascade_view.png 640x480 "${common[@]}" --set cascade=1 --set horizontal=2 --panel "Cascade view"
shot panel_hardware.png 640x520 "${common[@]}" --panel Hardware
shot panel_design_space.png 640x620 "${common[@]}" --sweep gamma,alpha --panel "Design space"
shot panel_tune.png 760x820 "${common[@]}" --tune 60 --timeout 900 --panel Tune
# A result store written by the CLI (the modeled example sweep: fast), opened read-only with --results.
"$build/app/speculum-cli" sweep docs/examples/sweep_predict.json --db "$tmp/results.sqlite" > /dev/null
shot panel_design_space_results.png 640x620 "${common[@]}" --results "$tmp/results.sqlite" --panel "Design space"
shot panel_export.png 700x620 "${common[@]}" --panel Export
# The run history with both runs pinned: what they differ in, their acceptance and speedups overlaid (issue #55).
shot panel_run_history.png 980x760 "${common[@]}" --then-set gamma=4 --pin-runs --panel "Run history"
# A session: one launch measures two runs, pins them and keeps the session on quit (session.json beside the
# settings); the next launch with the same settings finds them and measures once more.
sess=(--settings-file "$tmp/session/settings.ini")
xvfb-run -a -s "-screen 0 1400x900x24" "$app" "${common[@]}" "${sess[@]}" --then-set gamma=3 --pin-runs >/dev/null
shot panel_run_history_session.png 980x760 "${common[@]}" "${sess[@]}" --set gamma=6 --panel "Run history"
# Suffix decoding (draft kind "ngram", issue #28) on the copy-from-context suite: its editor and what it measured.
ngram=(--model resources/models/speculum-target-bf16.gguf --dataset datasets/copy_from_context.jsonl
       --set profile=rtx4090 --set measure_prompts=4 --set measure_tokens=48 --exit-when-measured
       --set '/levels/0={"kind":"ngram","ngram":{"method":"suffix"}}' --set /gamma/0=4)
shot panel_configuration_ngram.png 520x330 "${ngram[@]}" --panel Configuration
shot panel_speedup_ngram.png 640x400 "${ngram[@]}" --panel Speedup
# The bundled target's EAGLE-3 head (draft kind "eagle3", issue #28): its editor, and what it measured as a chain of
# 3 on the prose suite.
eagle3=(--model resources/models/speculum-target-bf16.gguf --dataset datasets/prose_continuation.jsonl
        --set profile=rtx4090 --set measure_prompts=4 --set measure_tokens=48 --exit-when-measured
        --set '/levels/0={"kind":"eagle3"}' --set /gamma/0=3)
shot panel_configuration_eagle3.png 520x200 "${eagle3[@]}" --panel Configuration
shot panel_speedup_eagle3.png 640x400 "${eagle3[@]}" --panel Speedup
# The bundled target's MTP layer (draft kind "mtp" with the bundled MTP module): its editor, and what it measured as
# a chain of 3 on the prose suite beside the cost its file models.
mtp=(--model resources/models/speculum-target-bf16.gguf --dataset datasets/prose_continuation.jsonl
     --set profile=rtx4090 --set measure_prompts=4 --set measure_tokens=48 --exit-when-measured
     --set '/levels/0={"kind":"mtp"}' --set /gamma/0=3)
shot panel_configuration_mtp.png 520x240 "${mtp[@]}" --panel Configuration
shot panel_speedup_mtp.png 640x420 "${mtp[@]}" --panel Speedup
# The bundled target's DSpark block draft (draft kind "dspark", issue #56): its editor, and the acceptance per
# position it measured beside what its confidence head predicted.
dspark=(--model resources/models/speculum-target-bf16.gguf --dataset datasets/prose_continuation.jsonl
        --set profile=rtx4090 --set measure_prompts=4 --set measure_tokens=48 --exit-when-measured
        --set '/levels/0={"kind":"dspark"}' --set /gamma/0=4)
shot panel_configuration_dspark.png 520x260 "${dspark[@]}" --panel Configuration
shot panel_acceptance_dspark.png 640x560 "${dspark[@]}" --panel Acceptance
rm -rf "$tmp"
echo "wrote $(ls $out/*.png | wc -l) images to $out"
