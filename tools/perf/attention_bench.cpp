// Times decode attention (kernels::attend) as one decode step of a model with 4 layers of 16 query heads of 128 and 8
// KV heads (the synthetic GGUF of docs/performance-notebook.md, Sessions 13 and 25) runs it: per layer, two blocks of 8
// heads over m cached slots of f32 K and V rows (4 KiB each). One thread, microseconds per step, the median of 9
// batches of 5 steps, for m = 64..2048. docs/performance-notebook.md ("Session 25") cites it; build it against the
// kernels library of the commit you want to time:
//   cmake --build build --target speculum_kernels && g++ -O2 -DNDEBUG -std=c++20 -I. tools/perf/attention_bench.cpp \
//       build/kernels/libspeculum_kernels.a -lopenblas -o /tmp/attention_bench
//   /tmp/attention_bench
#include "kernels/attention.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace speculum::kernels;

int main() {
    constexpr int32_t kHeads = 16, kKvHeads = 8, kHd = 128, kLayers = 4, kBlock = 8;
    const int64_t ld = int64_t(kKvHeads) * kHd;
    if (!attend_fast_available(kHd)) std::printf("no AVX-512 attention kernel here: timing the reference\n");
    std::printf("%6s %12s %12s\n", "slots", "us/step", "KV GB/s");
    for (int32_t m : {64, 256, 768, 2048}) {
        std::mt19937 rng(1);
        std::normal_distribution<float> g;
        std::vector<float> k(size_t(m) * size_t(ld) * kLayers), v(k.size()), q(size_t(kHeads) * kHd), out(q.size());
        for (auto& x : k) x = g(rng);
        for (auto& x : v) x = g(rng);
        for (auto& x : q) x = 0.3f * g(rng);
        std::vector<int64_t> off;
        for (int32_t b = 0; b < kBlock; ++b) off.push_back(int64_t(b / (kHeads / kKvHeads)) * kHd);
        std::vector<int32_t> slots(static_cast<size_t>(m));
        for (int32_t i = 0; i < m; ++i) slots[size_t(i)] = i;
        auto step = [&] {
            for (int32_t l = 0; l < kLayers; ++l)
                for (int32_t h0 = 0; h0 < kHeads; h0 += kBlock) {
                    const int64_t base = int64_t(l) * m * ld + int64_t(h0 / (kHeads / kKvHeads)) * kHd;
                    attend(out.data() + h0 * kHd, q.data() + h0 * kHd, k.data() + base, v.data() + base, ld, off.data(),
                           slots.data(), m, kBlock, kHd, 1.0f / std::sqrt(float(kHd)), 0.0f);
                }
        };
        step();
        std::vector<double> t;
        for (int b = 0; b < 9; ++b) {
            const auto t0 = std::chrono::steady_clock::now();
            for (int r = 0; r < 5; ++r) step();
            t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 5);
        }
        std::nth_element(t.begin(), t.begin() + 4, t.end());
        std::printf("%6d %12.1f %12.2f\n", m, t[4], 2.0 * double(m) * double(ld) * 4 * kLayers / t[4] / 1e3);
    }
    return 0;
}
