// Nanoseconds per 64-weight group of the compact kernels on one thread, cache-resident: a 256 x 1024 BF16 matrix (about
// 300 KiB compact) multiplied by one vector again and again, for every truncation t = 0..7, sparse at prune 0.5 with
// f32 activations (compact_gemm) and BF16 ones (compact_gemm_bf16act), and truncated only (compact_gemm). Isolates the
// decode's instruction cost from DRAM (compact_matmul_bench streams the whole draft). Best of 5 timings of R passes.
// docs/performance-notebook.md ("Session 28") cites it.
//   cmake --build build --target speculum_kernels && g++ -O2 -DNDEBUG -std=c++20 -I. \
//       tools/perf/compact_group_bench.cpp build/kernels/libspeculum_kernels.a -lopenblas -o /tmp/compact_group_bench
//   /tmp/compact_group_bench [R]
#include "kernels/compact.h"
#include "kernels/fp16.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace speculum::kernels;

int main(int argc, char** argv) {
    constexpr int64_t rows = 256, cols = 1024;
    const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 300;
    if (!compact_decoder_vectorized())
        std::printf("note: no AVX-512 VBMI2 decoder on this CPU; timing the scalar path\n");
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 0.05f);
    std::bernoulli_distribution drop(0.5);
    std::vector<float> x(cols);
    for (float& v : x) v = nd(rng);
    std::vector<uint16_t> xp(static_cast<size_t>(compact_bf16act_words(cols)));
    compact_pack_bf16act(xp.data(), x.data(), 1, cols);
    std::vector<float> y(rows);
    const char* names[3] = {"sparse, f32 activations", "truncated only, f32 act.", "sparse, BF16 activations"};
    std::printf("ns per 64-weight group, one thread, %lld x %lld, %d passes (best of 5)\n",
                static_cast<long long>(rows), static_cast<long long>(cols), reps);
    for (int mode = 0; mode < 3; ++mode) {
        std::printf("%-26s", names[mode]);
        const bool sparse = mode != 1;
        for (int t = 0; t < 8; ++t) {
            if (!sparse && t == 0) {  // neither pruned nor truncated: no compact format
                std::printf("  t%d  -   ", t);
                continue;
            }
            std::vector<uint16_t> d(static_cast<size_t>(rows * cols));
            for (uint16_t& v : d) {
                uint16_t b = f32_to_bf16(nd(rng));
                b &= static_cast<uint16_t>(~((1u << t) - 1u));
                if (b == 0) b = 0x3f80;  // only pruning leaves zeros
                v = sparse && drop(rng) ? uint16_t(0) : b;
            }
            const CompactMatrix m =
                CompactMatrix::encode(CompactFormat{GgmlType::BF16, sparse, t}, d.data(), rows, cols);
            std::vector<uint8_t> scratch(static_cast<size_t>(compact_gemm_scratch_bytes(m)));
            double best = 1e9;
            for (int k = 0; k < 5; ++k) {
                const auto t0 = std::chrono::steady_clock::now();
                for (int r = 0; r < reps; ++r)
                    if (mode == 2)
                        compact_gemm_bf16act(y.data(), rows, m, xp.data(), 1, 0, rows, scratch.data());
                    else
                        compact_gemm(y.data(), rows, m, x.data(), 1, 0, rows, scratch.data());
                best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            }
            std::printf("  t%d %5.2f", t, best * 1e9 / (double(reps) * double(rows) * double(cols / 64)));
        }
        std::printf("\n");
    }
}
