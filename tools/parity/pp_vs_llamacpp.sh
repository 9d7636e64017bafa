#!/usr/bin/env bash
# pp512 / tg128 of Speculum and llama.cpp on the same GGUFs, interleaved A B A B (issue #23; docs/performance.md).
#   tools/parity/pp_vs_llamacpp.sh ORACLE DIR [REPEATS] [THREADS] [PROMPT]
# DIR holds the files to compare (*.gguf); ORACLE is tools/parity's oracle. PROMPT (default 512) is the prompt's
# length: tg128 is decoded after it (16 measures decode at a short context). Prints the medians, one line per file.
set -euo pipefail
oracle=${1:?usage: pp_vs_llamacpp.sh ORACLE DIR [REPEATS] [THREADS] [PROMPT]}
dir=${2:?usage: pp_vs_llamacpp.sh ORACLE DIR [REPEATS] [THREADS] [PROMPT]}
reps=${3:-3}
th=${4:-2}
pp=${5:-512}
cli=$(cd "$(dirname "$0")/../.." && pwd)/build/app/speculum-cli
for f in "$dir"/*.gguf; do
    name=$(basename "$f" .gguf)
    pp_l=(); tg_l=(); pp_s=(); tg_s=()
    for _ in $(seq "$reps"); do
        read -r l_pp l_tg < <("$oracle" bench "$f" "$pp" 128 "$th" | awk '{print $2, $5}')
        pp_l+=("$l_pp"); tg_l+=("$l_tg")
        out=$("$cli" bench -m "$f" -t "$th" --prompt-tokens "$pp" --tokens 128 --batches 1 --repeats 1 --membw-mb 0 --json)
        pp_s+=("$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["prompt_tokens_per_s"])')")
        tg_s+=("$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["decode_tokens_per_s"])')")
    done
    python3 - "$name" "$pp" "${pp_l[*]}" "${tg_l[*]}" "${pp_s[*]}" "${tg_s[*]}" <<'PY'
import statistics as st, sys
name, pp, ppl, tgl, pps, tgs = sys.argv[1], sys.argv[2], *[list(map(float, a.split())) for a in sys.argv[3:]]
m = st.median
print(f"{name:8s} pp{pp} llama.cpp {m(ppl):8.1f}  speculum {m(pps):8.1f}  ratio {m(pps)/m(ppl):5.2f}x | "
      f"tg128 llama.cpp {m(tgl):7.1f}  speculum {m(tgs):7.1f}  ratio {m(tgs)/m(tgl):5.2f}x")
PY
done
