// Times the matrix products of one decode step of a compact self-draft against the dense BF16 target's, without the
// rest of the pass: the 56 matrices of the synthetic target of issue #21 (8 layers x q, k, v, o, gate, up, down),
// each split into tasks of whole 8-row tiles as InferenceContext::matmul_group split a lone matrix (Session 23; since
// Session 24 q, k, v and gate, up share a region, so the forward pass's tasks are larger), the dense ones with
// kernels::gemv and the compact ones with the kernel the forward pass picks (compact_gemm_bf16act where
// compact_bf16act_chosen, else compact_gemm). Passes alternate, dense then compact, and the figure is the median of
// the per-pair ratios, so a neighbour's load on this shared VM moves both sides of a ratio.
// docs/performance-notebook.md
// ("Session 23") cites it.
//   cmake --build build --target speculum_kernels && g++ -O2 -DNDEBUG -std=c++20 -I. \
//       tools/perf/compact_matmul_bench.cpp build/kernels/libspeculum_kernels.a -ltbb -lopenblas \
//       -o /tmp/compact_matmul_bench
//   /tmp/compact_matmul_bench [--prune P] [--trunc T] [--passes N] [--threads N] [--task-kib K]
// --task-kib K: compact tasks of K KiB (default 0: the forward pass's rule, max(64 KiB, matrix / (2 x threads))).
#include "kernels/compact.h"
#include "kernels/fp16.h"
#include "kernels/gemv.h"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace speculum::kernels;

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Matrix {
    int64_t rows = 0, cols = 0;
    std::vector<uint16_t> dense;  // the target's BF16 rows
    CompactMatrix compact;        // the draft's: pruned and truncated
};

double median(std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    double prune = 0.5;
    int trunc = 4, passes = 100, threads = 2, task_kib = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--prune" && i + 1 < argc)
            prune = std::atof(argv[++i]);
        else if (a == "--trunc" && i + 1 < argc)
            trunc = std::atoi(argv[++i]);
        else if (a == "--passes" && i + 1 < argc)
            passes = std::max(1, std::atoi(argv[++i]));
        else if (a == "--threads" && i + 1 < argc)
            threads = std::max(1, std::atoi(argv[++i]));
        else if (a == "--task-kib" && i + 1 < argc)
            task_kib = std::max(0, std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "usage: %s [--prune P] [--trunc T] [--passes N] [--threads N] [--task-kib K]\n",
                         argv[0]);
            return 2;
        }
    }
    if (prune < 0 || prune >= 1 || trunc < 0 || trunc > 7 || (prune == 0 && trunc == 0)) {
        std::fprintf(stderr, "--prune must be in [0, 1) and --trunc in [0, 7], not both 0\n");
        return 2;
    }
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, size_t(threads));
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 0.05f);
    std::bernoulli_distribution drop(prune);
    const CompactFormat fmt{GgmlType::BF16, prune > 0, trunc};
    std::vector<Matrix> ms;
    for (int l = 0; l < 8; ++l)
        for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1024, 1024},
                                  {256, 1024},
                                  {256, 1024},
                                  {1024, 1024},
                                  {2816, 1024},
                                  {2816, 1024},
                                  {1024, 2816}}) {
            Matrix m{rows, cols, std::vector<uint16_t>(size_t(rows * cols)), {}};
            std::vector<uint16_t> kept(m.dense.size());
            for (size_t i = 0; i < kept.size(); ++i) {
                m.dense[i] = f32_to_bf16(nd(rng));
                kept[i]    = drop(rng) ? uint16_t(0) : uint16_t(m.dense[i] & ~((1u << trunc) - 1u));
            }
            m.compact = CompactMatrix::encode(fmt, kept.data(), rows, cols);
            ms.push_back(std::move(m));
        }
    double dense_bytes = 0, compact_bytes = 0;
    for (const Matrix& m : ms) dense_bytes += 2.0 * double(m.dense.size()), compact_bytes += double(m.compact.bytes());
    std::vector<float> x(2816), y(2816);
    for (float& v : x) v = nd(rng) * 20;
    std::vector<uint16_t> xp(size_t(compact_bf16act_words(2816)));
    auto pass = [&](bool compact) {
        const double t0 = now();
        for (const Matrix& m : ms) {
            const bool bf16act = compact && compact_bf16act_chosen(m.compact);
            if (bf16act) compact_pack_bf16act(xp.data(), x.data(), 1, m.cols);
            const uint64_t bytes = compact ? m.compact.bytes() : 2 * m.dense.size();
            const uint64_t task  = compact && task_kib > 0 ? uint64_t(task_kib) << 10
                                   : compact ? std::max<uint64_t>(64u << 10, bytes / (2 * uint64_t(threads)))
                                             : 64u << 10;  // the dense path's tasks (forward.cpp)
            const int64_t grain  = std::max<int64_t>(1, int64_t(task / (bytes / uint64_t(m.rows))) / 8);
            tbb::parallel_for(
                tbb::blocked_range<int64_t>(0, (m.rows + 7) / 8, grain), [&](const tbb::blocked_range<int64_t>& r) {
                    thread_local std::vector<uint8_t> scratch;
                    scratch.resize(size_t(compact_gemm_scratch_bytes(m.compact)));
                    const int64_t r0 = r.begin() * 8, r1 = std::min(m.rows, r.end() * 8);
                    if (!compact)
                        gemv(y.data(), GgmlType::BF16, m.dense.data(), x.data(), m.cols, r0, r1);
                    else if (bf16act)
                        compact_gemm_bf16act(y.data(), m.rows, m.compact, xp.data(), 1, r0, r1, scratch.data());
                    else
                        compact_gemm(y.data(), m.rows, m.compact, x.data(), 1, r0, r1, scratch.data());
                });
        }
        return now() - t0;
    };
    std::vector<double> td, tc, ratio;
    for (int i = 0; i < passes; ++i) {
        td.push_back(pass(false));
        tc.push_back(pass(true));
        ratio.push_back(tc.back() / td.back());
    }
    const double d = median(td), c = median(tc);
    std::printf("%s, prune %.2f, %d threads, compact tasks %s\n", compact_dense_name(fmt), prune, threads,
                task_kib > 0 ? (std::to_string(task_kib) + " KiB").c_str() : "max(64 KiB, matrix / (2 x threads))");
    std::printf("dense   %7.1f MB  %.3f ms  %5.1f GB/s (median of %d passes)\n", dense_bytes / 1e6, d * 1e3,
                dense_bytes / d / 1e9, passes);
    std::printf("compact %7.1f MB  %.3f ms  %5.1f GB/s\n", compact_bytes / 1e6, c * 1e3, compact_bytes / c / 1e9);
    std::printf("compact / dense: time %.3f (median of the pass pairs), bytes %.3f\n", median(ratio),
                compact_bytes / dense_bytes);
    return 0;
}
