// Times the K-quant int8 kernels on one matrix of random super-blocks: gemm_q8act (256-bit registers, four blocks)
// against gemm_q8act_k (512-bit, a super-block per register), single thread, best of RUNS alternating calls, for
// n = 1, 4, 8 and 16 vectors. docs/performance.md ("Verification against the hardware's floors") cites it.
//   g++ -O3 -DNDEBUG -std=c++20 -I. kernels/*.cpp tools/perf/kquant_probe.cpp -o /tmp/kquant_probe -lopenblas
//   /tmp/kquant_probe [ROWS=4096] [COLS=2048] [RUNS=40]      (COLS a multiple of 256)
// Exits non-zero unless both kernels agree with gemm_q8act_k_ref within 1e-4 of the largest |output|, or a batched
// gemm_q8act_k differs from single-vector calls in any bit.
#include "kernels/gemv.h"

#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

using namespace speculum::kernels;

namespace {

double seconds(std::chrono::steady_clock::time_point a) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

// Random quants and packed scales; the f16 super-block scales set to small normal values.
std::vector<uint8_t> random_rows(GgmlType t, int64_t rows, int64_t cols, std::mt19937& rng) {
    const uint64_t rb = ggml_row_size(t, static_cast<uint64_t>(cols));
    std::vector<uint8_t> w(rows * rb);
    for (auto& b : w) b = static_cast<uint8_t>(rng());
    std::uniform_real_distribution<float> scale(5e-4f, 4e-3f);
    const uint64_t sb = rb / static_cast<uint64_t>(cols / 256);
    for (uint64_t o = 0; o < w.size(); o += sb) {
        const uint16_t d = f32_to_f16(scale(rng)), m = f32_to_f16(scale(rng));
        if (t == GgmlType::Q6_K) {
            std::memcpy(&w[o + offsetof(BlockQ6_K, d)], &d, 2);
        } else {
            std::memcpy(&w[o], &d, 2), std::memcpy(&w[o + 2], &m, 2);
        }
    }
    return w;
}

}  // namespace

int main(int argc, char** argv) {
    const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 4096, cols = argc > 2 ? std::atoll(argv[2]) : 2048;
    const int runs = argc > 3 ? std::atoi(argv[3]) : 40;
    if (rows < 1 || cols < 256 || cols % 256 != 0 || runs < 1) {
        std::fprintf(stderr, "usage: kquant_probe [ROWS] [COLS, a multiple of 256] [RUNS]\n");
        return 2;
    }
    if (!q8act_k_preferred(GgmlType::Q4_K)) {
        std::fprintf(stderr, "this CPU has no 512-bit K-quant kernel (needs AVX-512 VNNI)\n");
        return 2;
    }
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    bool ok = true;
    for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
        const auto w = random_rows(t, rows, cols, rng);
        for (int n : {1, 4, 8, 16}) {
            std::vector<float> x(static_cast<size_t>(n * cols));
            for (auto& v : x) v = nd(rng);
            std::vector<uint8_t> xa(q8act_bytes(n, cols)), xk(q8act_k_bytes(n, cols));
            quantize_q8act(xa.data(), x.data(), n, cols);
            quantize_q8act_k(xk.data(), x.data(), n, cols);
            std::vector<float> ya(n * rows), yk(n * rows), yr(n * rows), y1(rows);
            double ta = 1e9, tk = 1e9;
            for (int r = 0; r < runs; ++r) {
                auto a = std::chrono::steady_clock::now();
                gemm_q8act(ya.data(), rows, t, w.data(), xa.data(), n, cols, 0, rows);
                ta = std::min(ta, seconds(a));
                a  = std::chrono::steady_clock::now();
                gemm_q8act_k(yk.data(), rows, t, w.data(), xk.data(), n, cols, 0, rows);
                tk = std::min(tk, seconds(a));
            }
            gemm_q8act_k_ref(yr.data(), rows, t, w.data(), xk.data(), n, cols, 0, rows);
            float scale = 0, da = 0, dk = 0;
            for (size_t i = 0; i < yr.size(); ++i) {
                scale = std::max(scale, std::fabs(yr[i]));
                da = std::max(da, std::fabs(ya[i] - yr[i])), dk = std::max(dk, std::fabs(yk[i] - yr[i]));
            }
            bool same = true;
            for (int i = 0; i < n; ++i) {
                gemm_q8act_k(y1.data(), rows, t, w.data(), xk.data() + i * q8act_k_bytes(1, cols), 1, cols, 0, rows);
                same = same && std::memcmp(y1.data(), yk.data() + size_t(i) * rows, rows * sizeof(float)) == 0;
            }
            ok = ok && same && da <= 1e-4f * scale && dk <= 1e-4f * scale;
            std::printf("%s %lld x %lld  n = %2d  gemm_q8act %.3f ms  gemm_q8act_k %.3f ms  (%.2fx)%s\n",
                        ggml_type_traits(t)->name, static_cast<long long>(rows), static_cast<long long>(cols), n,
                        ta * 1e3, tk * 1e3, ta / tk, same ? "" : "  BATCHED != SINGLE");
        }
    }
    return ok ? 0 : 1;
}
