#!/usr/bin/env bash
# Build the parity oracle (oracle.cpp) against a llama.cpp source tree, outside this repository.
#
#   tools/parity/build_oracle.sh SRC OUT
#
# SRC is the flat llama.cpp mirror that the npm package llama.rn ships in package/cpp (ggml symbols prefixed lm_):
#   cd /tmp/oracle && npm pack llama.rn && tar xzf llama.rn-*.tgz      # SRC = /tmp/oracle/package/cpp
# OUT receives the objects and the `oracle` binary. CPU backend only, two compile jobs.
# SPEED=1 builds as llama.cpp's CMake does by default (-O3, OpenMP threads, the CPU repack buffers for Q4_0 / IQ4_NL /
# Q4_K / Q8_0 tiles), for timing comparisons. The mirror lacks llamafile's sgemm, which llama.cpp's default build
# also uses for prompt processing; put it at SRC/ggml-cpu/llamafile/ first and SPEED=1 compiles it in:
#   for f in sgemm.cpp sgemm.h; do git -C GGML_REPO show HEAD:src/ggml-cpu/llamafile/$f |
#     sed -e 's/\bggml_/lm_ggml_/g; s/\bGGML_/LM_GGML_/g' > SRC/ggml-cpu/llamafile/$f; done
# (GGML_REPO: a clone of github.com/ggml-org/ggml; the mirror renames ggml's symbols with lm_).
set -euo pipefail
src=$(cd "${1:?usage: build_oracle.sh SRC OUT}" && pwd)
out=$(mkdir -p "${2:?usage: build_oracle.sh SRC OUT}" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

opt=(-O2)
link=()
if [ "${SPEED:-0}" = 1 ]; then
    opt=(-O3 -fopenmp -DLM_GGML_USE_OPENMP -DLM_GGML_USE_CPU_REPACK)
    link=(-fopenmp)
    [ -f "$src/ggml-cpu/llamafile/sgemm.cpp" ] && opt+=(-DLM_GGML_USE_LLAMAFILE=1)
fi
flags=("${opt[@]}" -march=native -fPIC -D_GNU_SOURCE -DNDEBUG -DLM_GGML_USE_CPU -DLM_GGML_VERSION=\"oracle\"
       -DLM_GGML_COMMIT=\"oracle\" -I"$src" -I"$src/ggml-cpu" -I"$src/common")
files=()
for f in "$src"/ggml.c "$src"/ggml-alloc.c "$src"/ggml-quants.c "$src"/ggml-backend.cpp "$src"/ggml-backend-reg.cpp \
         "$src"/ggml-threading.cpp "$src"/ggml-opt.cpp "$src"/ggml-backend-meta.cpp "$src"/ggml-backend-dl.cpp "$src"/gguf.cpp "$src"/unicode.cpp "$src"/unicode-data.cpp \
         "$src"/llama*.cpp "$src"/models/*.cpp "$src"/ggml-cpu/*.c "$src"/ggml-cpu/*.cpp "$src"/ggml-cpu/llamafile/*.cpp \
         "$src"/ggml-cpu/arch/x86/*.c "$src"/ggml-cpu/arch/x86/*.cpp "$src"/ggml-cpu/amx/*.cpp "$here/oracle.cpp"; do
    case "$f" in */llamafile/*) [ "${SPEED:-0}" = 1 ] || continue ;; esac
    [ -f "$f" ] && files+=("$f")
done

compile() {
    local f=$1 o
    o="$out/obj/$(echo "${f#/}" | tr '/' '_').o"
    [ -f "$o" ] && [ "$o" -nt "$f" ] && return 0
    case "$f" in
        *.c) gcc -std=c11 "${flags[@]}" -c "$f" -o "$o" ;;
        *) g++ -std=c++17 "${flags[@]}" -c "$f" -o "$o" ;;
    esac
}
export -f compile
export out
export flags_str="${flags[*]}"
mkdir -p "$out/obj"
printf '%s\n' "${files[@]}" | xargs -P 2 -I{} bash -c 'flags=($flags_str); '"$(declare -f compile)"'; compile "$@"' _ {}
g++ -o "$out/oracle" "$out"/obj/*.o "${link[@]}" -lpthread -ldl -lm
echo "built $out/oracle"
