// hw::LargePageBuffer (alignment, zero fill, moves) and models whose weights are copied into large pages: the
// views move into one buffer, tied matrices stay shared, and the logits are bit-identical to the mapped model's.
#include "core/hw/large_pages.h"
#include "core/model/runtime_bench.h"
#include "model_fixtures.h"

#include "kernels/gemv.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

namespace speculum {
namespace {

using kernels::GgmlType;
using model::Model;
using model::WeightMemory;

TEST(LargePageBuffer, AlignedZeroFilledAndMovable) {
    const uint64_t bytes = hw::kLargePageBytes + 12345;  // not a multiple of the page
    hw::LargePageBuffer a(bytes);
    ASSERT_NE(a.data(), nullptr);
    EXPECT_EQ(a.size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % hw::kLargePageBytes, 0u);
    for (uint64_t i = 0; i < bytes; i += 4093) ASSERT_EQ(a.data()[i], 0) << i;
    EXPECT_EQ(a.data()[bytes - 1], 0);
    std::memset(a.data(), 7, bytes);  // writable to the last byte (ASan would flag an overrun)

    hw::LargePageBuffer b(std::move(a));
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(a.size(), 0u);
    ASSERT_EQ(b.size(), bytes);
    EXPECT_EQ(b.data()[bytes - 1], 7);
    hw::LargePageBuffer c(64, /*advise_huge=*/false);
    EXPECT_FALSE(c.huge_page_advised());
    c = std::move(b);
    EXPECT_EQ(c.size(), bytes);
    EXPECT_EQ(c.data()[0], 7);

    hw::LargePageBuffer empty(0);
    EXPECT_EQ(empty.data(), nullptr);
}

// Every matrix view of `m`, with a name for messages.
std::vector<std::pair<std::string, const model::WeightView*>> matrices(const Model& m) {
    const model::ModelWeights& w = m.weights();
    std::vector<std::pair<std::string, const model::WeightView*>> out{{"token_embd", &w.token_embd},
                                                                      {"output", &w.output}};
    for (size_t i = 0; i < w.layers.size(); ++i) {
        const model::LayerWeights& L = w.layers[i];
        const std::string p          = "blk." + std::to_string(i) + ".";
        for (auto [n, v] : {std::pair{"wq", &L.wq},
                            {"wk", &L.wk},
                            {"wv", &L.wv},
                            {"wo", &L.wo},
                            {"w_gate", &L.w_gate},
                            {"w_up", &L.w_up},
                            {"w_down", &L.w_down}})
            out.emplace_back(p + n, v);
    }
    return out;
}

TEST(LargePageWeights, SameBytesOneBufferSameLogits) {
    for (const auto& spec : {test::spec_odd_tied(GgmlType::Q8_0), test::spec_gqa(GgmlType::F16)}) {
        const std::string path = (test::tmp_dir() / "large_pages.gguf").string();
        model::write_synthetic_gguf(spec, path);
        const Model mapped = Model::load(path);
        const Model large  = Model::load(path, {}, {}, WeightMemory::large_pages);
        EXPECT_EQ(mapped.weight_memory(), WeightMemory::mapped);
        ASSERT_EQ(large.weight_memory(), WeightMemory::large_pages);
        EXPECT_STREQ(model::weight_memory_name(large.weight_memory()), "large-pages");

        const auto a = matrices(mapped), b = matrices(large);
        ASSERT_EQ(a.size(), b.size());
        const auto* lo    = static_cast<const uint8_t*>(b[0].second->data);
        const uint8_t* hi = lo;
        for (size_t i = 0; i < a.size(); ++i) {
            const model::WeightView &x = *a[i].second, &y = *b[i].second;
            ASSERT_EQ(x.n_bytes(), y.n_bytes()) << a[i].first;
            EXPECT_NE(x.data, y.data) << a[i].first << " was not copied";
            EXPECT_EQ(std::memcmp(x.data, y.data, x.n_bytes()), 0) << a[i].first;
            lo = std::min(lo, static_cast<const uint8_t*>(y.data));
            hi = std::max(hi, static_cast<const uint8_t*>(y.data) + y.n_bytes());
        }
        // One buffer starting on a 2 MiB boundary, holding every matrix once (64-byte aligned each).
        EXPECT_EQ(reinterpret_cast<uintptr_t>(lo) % hw::kLargePageBytes, 0u);
        EXPECT_LE(static_cast<uint64_t>(hi - lo), mapped.weight_bytes_total() + 64 * b.size());
        if (spec.tied_output) {
            EXPECT_EQ(large.weights().output.data, large.weights().token_embd.data);
        }

        const std::vector<int32_t> toks = {1, 5, 9, 2, 7};
        EXPECT_EQ(test::decode_all(large, toks, model::ForwardPath::fast),
                  test::decode_all(mapped, toks, model::ForwardPath::fast));
    }
}

TEST(LargePageWeights, CopyOutlivesTheSourceModelAndReportsProgress) {
    const std::string path = (test::tmp_dir() / "large_pages_outlive.gguf").string();
    model::write_synthetic_gguf(test::spec_gqa(GgmlType::Q8_0), path);
    std::vector<double> fractions;
    std::optional<Model> large;
    std::vector<std::vector<float>> want;
    {
        const Model mapped = Model::load(path);
        want               = test::decode_all(mapped, {3, 4}, model::ForwardPath::fast);
        large = Model::with_large_pages(mapped, [&](double f, const std::string&) { fractions.push_back(f); });
    }
    ASSERT_EQ(large->weight_memory(), WeightMemory::large_pages);
    EXPECT_EQ(test::decode_all(*large, {3, 4}, model::ForwardPath::fast), want);
    ASSERT_FALSE(fractions.empty());
    EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
    EXPECT_DOUBLE_EQ(fractions.back(), 1.0);

    CancelToken cancel;
    cancel.cancel();
    EXPECT_THROW(Model::with_large_pages(*large, {}, cancel), Cancelled);
}

TEST(LargePageWeights, BenchReportsWhereTheWeightsLive) {
    const Model m = Model::with_large_pages(model::make_synthetic_model(test::spec_gqa(GgmlType::Q8_0)));
    model::BenchConfig c;
    c.n_prompt = 4, c.n_decode = 2, c.batch_sizes = {1, 2}, c.repeats = 1, c.membw_bytes = 4u << 20;
    const model::BenchResult r = model::run_bench(m, c);
    EXPECT_EQ(r.weight_memory, "large-pages");
    const nlohmann::json j = r;
    EXPECT_EQ(j.at("weight_memory"), "large-pages");
    EXPECT_TRUE(j.contains("anon_huge_page_bytes"));
    EXPECT_GT(r.membw_read_gbs, 0.0);
}

// Each batched pass stands beside its floors: its bytes at the measured bandwidth, its multiply-adds at the measured
// int8 peak (where the CPU has the int8 kernels), and vs_floor is its time over the larger.
TEST(LargePageWeights, BenchSetsEachPassBesideItsFloors) {
    const Model m = model::make_synthetic_model(test::spec_gqa(GgmlType::Q8_0));
    model::BenchConfig c;
    c.n_prompt = 4, c.n_decode = 2, c.batch_sizes = {1, 4}, c.repeats = 1, c.membw_bytes = 4u << 20;
    const model::BenchResult r = model::run_bench(m, c);
    EXPECT_EQ(r.int8_peak_gmacs > 0, kernels::kernel_isa() >= kernels::KernelIsa::avx512);
    ASSERT_EQ(r.batches.size(), 2u);
    for (const model::BatchCost& b : r.batches) {
        EXPECT_GT(b.flops, 0.0);
        EXPECT_NEAR(b.floor_memory_s, double(b.bytes_weights + b.bytes_kv) / (r.membw_read_gbs * 1e9),
                    1e-12 + 1e-9 * b.floor_memory_s);
        if (r.int8_peak_gmacs > 0) {
            EXPECT_NEAR(b.floor_compute_s * r.int8_peak_gmacs * 1e9, b.flops / 2, b.flops * 1e-9);
        }
        EXPECT_DOUBLE_EQ(b.vs_floor, b.seconds / std::max(b.floor_memory_s, b.floor_compute_s));
    }
    EXPECT_NEAR(r.batches[1].flops, 4 * r.batches[0].flops, 0.5 * r.batches[0].flops);  // attention grows too
    c.peak_probe               = false;
    const model::BenchResult q = model::run_bench(m, c);
    EXPECT_EQ(q.int8_peak_gmacs, 0.0);
    EXPECT_EQ(q.batches[0].floor_compute_s, 0.0);
    EXPECT_GT(q.batches[0].vs_floor, 0.0);  // the memory floor alone
}

}  // namespace
}  // namespace speculum
