#!/usr/bin/env bash
# Regenerates docs/images/: the main window and one picture per panel, rendered by the real app under Xvfb with a
# tiny synthetic GGUF (the bundled models are not in the tree yet). Not part of ctest.
# usage: tests/gui/make_doc_screenshots.sh BUILD_DIR   (from the repository root)
set -euo pipefail
build=${1:-build}
app=$build/app/speculum out=docs/images tmp=$(mktemp -d)
export LIBGL_ALWAYS_SOFTWARE=1 QT_QPA_PLATFORM=xcb XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$tmp} XDG_CONFIG_HOME=$tmp/config
"$build/tests/make_test_gguf" "$tmp/tiny.gguf"
shot() {  # shot FILE SIZE ARGS...
    local file=$1 size=$2
    shift 2
    xvfb-run -a -s "-screen 0 1400x900x24" "$app" --screenshot "$out/$file" --frames 4 --size "$size" "$@" >/dev/null
}
common=(--model "$tmp/tiny.gguf" --set profile=rtx4090)
shot main.png 1400x860 "${common[@]}" --set tree=budget --set budget=12 --sweep gamma,alpha
shot panel_configuration.png 520x760 "${common[@]}" --panel Configuration
shot panel_model_data.png 640x560 "${common[@]}" --panel "Model and data"
shot panel_speedup.png 640x360 "${common[@]}" --set cascade=1 --set horizontal=2 --set tree=budget --panel Speedup
shot panel_acceptance.png 640x480 "${common[@]}" --panel Acceptance
shot panel_live_decode.png 640x360 "${common[@]}" --panel "Live decode"
shot panel_tree_view.png 640x480 "${common[@]}" --set tree=budget --set budget=16 --panel "Tree view"
shot panel_cascade_view.png 640x480 "${common[@]}" --set cascade=2 --set horizontal=2 --panel "Cascade view"
shot panel_hardware.png 640x520 "${common[@]}" --panel Hardware
shot panel_design_space.png 640x620 "${common[@]}" --sweep gamma,alpha --panel "Design space"
shot panel_export.png 700x620 "${common[@]}" --panel Export
rm -rf "$tmp"
echo "wrote $(ls $out/*.png | wc -l) images to $out"
