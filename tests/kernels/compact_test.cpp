// Compact draft formats (issue #21): encode -> decode gives the dense pruned / truncated rows back bit for bit, the
// vectorized decoder equals the scalar one, each decoder reads exactly the bytes the matrix accounts for, the
// GEMMs equal the dense kernels on the same (decoded) weights bit for bit at every ISA and batch size, and the
// stream sizes follow the bit accounting (16 - t bits per kept weight, one mask bit per weight).
#include "kernels/compact.h"

#include "kernels/fp16.h"
#include "kernels/gemm_bf16.h"
#include "kernels/gemv.h"
#include "kernels/mantissa.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

using namespace speculum::kernels;

namespace {

// |fused - dense| <= tol * sum_j |w_j x_j|: both accumulate exact products in f32, only the order differs (as
// kGemvRelTol in gemv_test).
constexpr double kCompactFusedRelTol = 2e-6;

// BF16 activations (compact_gemm_bf16act): |fast - ref| <= tol * sum_j |w_j x_j| with x the BF16-rounded activations;
// both sum exact products of BF16 values in f32, the fast kernel in lane pairs.
constexpr double kCompactBf16ActRelTol = 2e-6;

struct IsaCapGuard {
    ~IsaCapGuard() { set_kernel_isa_cap(KernelIsa::avx512); }
};

// A (rows, cols) dense matrix of type t with about `prune` of its elements zeroed (as a pruned draft stores them)
// and, for BF16, the low t mantissa bits of the rest cleared toward zero.
std::vector<uint8_t> pruned_matrix(GgmlType t, int64_t rows, int64_t cols, double prune, int trunc, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 0.05f);
    std::bernoulli_distribution drop(prune);
    std::vector<float> f(static_cast<size_t>(rows * cols));
    for (auto& v : f) v = drop(rng) ? 0.0f : dist(rng);
    if (cols > 5) f[3] = -0.0f, f[5] = 1e-40f;  // a negative zero is stored (not +0 bits), a subnormal too
    const uint64_t rb = ggml_row_size(t, cols);
    std::vector<uint8_t> out(static_cast<size_t>(rows) * rb);
    for (int64_t r = 0; r < rows; ++r) {
        const float* src = &f[static_cast<size_t>(r * cols)];
        uint8_t* dst     = &out[static_cast<size_t>(r) * rb];
        if (t == GgmlType::BF16) {
            truncate_mantissa_row_bf16_ref(reinterpret_cast<uint16_t*>(dst), src, cols, trunc);
        } else if (t == GgmlType::F16) {
            for (int64_t c = 0; c < cols; ++c) {
                const uint16_t h = f32_to_f16(src[c]);
                std::memcpy(dst + 2 * c, &h, 2);
            }
        } else {
            quantize_row_ref(dst, t, src, cols);
        }
    }
    return out;
}

std::vector<float> random_x(int64_t n, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n * cols));
    for (auto& v : x) v = dist(rng);
    return x;
}

struct Case {
    CompactFormat f;
    double prune;
    int64_t cols;
};

std::vector<Case> cases() {
    return {
        {{GgmlType::BF16, true, 0}, 0.5, 256},
        {{GgmlType::BF16, true, 4}, 0.5, 1024},
        {{GgmlType::BF16, true, 7}, 0.25, 200},
        {{GgmlType::BF16, false, 3}, 0.0, 320},
        {{GgmlType::BF16, false, 6}, 0.0, 77},
        {{GgmlType::BF16, true, 2}, 0.9, 128},
        {{GgmlType::F16, true, 0}, 0.3, 192},
        {{GgmlType::Q8_0, true, 0}, 0.5, 512},
        {{GgmlType::Q8_0, true, 0}, 0.05, 96},
        {{GgmlType::BF16, true, 4}, 0.0, 64},
        {{GgmlType::BF16, true, 5}, 0.4, 192},
        {{GgmlType::BF16, false, 1}, 0.0, 100},  // three planes
        // Every sparse width with bit planes walks its tiles' rows (Step16); short last groups included.
        {{GgmlType::BF16, true, 1}, 0.5, 136},
        {{GgmlType::BF16, true, 3}, 0.6, 72},
        {{GgmlType::BF16, true, 6}, 0.5, 1088},
    };
}

std::string name_of(const Case& c) {
    return std::string(compact_dense_name(c.f)) + " p" + std::to_string(c.prune) + " cols " + std::to_string(c.cols);
}

}  // namespace

TEST(Compact, FormatValidationNamesTheField) {
    EXPECT_THROW((CompactFormat{GgmlType::Q4_0, true, 0}.validate()), std::invalid_argument);
    EXPECT_THROW((CompactFormat{GgmlType::F16, true, 2}.validate()), std::invalid_argument);
    EXPECT_THROW((CompactFormat{GgmlType::Q8_0, false, 0}.validate()), std::invalid_argument);
    EXPECT_THROW((CompactFormat{GgmlType::BF16, false, 0}.validate()), std::invalid_argument);
    EXPECT_THROW((CompactFormat{GgmlType::BF16, true, 8}.validate()), std::invalid_argument);
    try {
        CompactFormat{GgmlType::BF16, true, -1}.validate();
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("trunc_bits"), std::string::npos);
    }
    EXPECT_NO_THROW((CompactFormat{GgmlType::BF16, false, 4}.validate()));
}

TEST(Compact, EncodeRefusesLowBitsThatWouldBeLost) {
    const auto dense = pruned_matrix(GgmlType::BF16, 2, 64, 0.0, 0, 1);  // t = 0 data has low bits set
    EXPECT_THROW(CompactMatrix::encode({GgmlType::BF16, false, 4}, dense.data(), 2, 64), std::invalid_argument);
    EXPECT_THROW(CompactMatrix::encode({GgmlType::Q8_0, true, 0}, dense.data(), 1, 33), std::invalid_argument);
}

TEST(Compact, DecodeGivesTheDenseRowsBackAndReadsExactlyTheAccountedBytes) {
    const IsaCapGuard guard;
    for (const Case& c : cases()) {
        SCOPED_TRACE(name_of(c));
        const int64_t rows    = 19;
        const auto dense      = pruned_matrix(c.f.dense, rows, c.cols, c.prune, c.f.trunc_bits, 7);
        const CompactMatrix m = CompactMatrix::encode(c.f, dense.data(), rows, c.cols);
        std::vector<uint8_t> ref(dense.size(), 0xAB), fast(dense.size(), 0xCD);
        const uint64_t read_ref = compact_decode_rows_ref(ref.data(), m, 0, rows);
        EXPECT_EQ(ref, dense);
        // What a pass reads = the streams + 8 bytes of offset per tile of 8 rows = bytes(), and the reference
        // decoder walks every row's groups.
        EXPECT_EQ(m.tiles(), (rows + kCompactTileRows - 1) / kCompactTileRows);
        EXPECT_EQ(read_ref + 8u * uint64_t(m.tiles()), m.bytes());
        for (int64_t r = 0; r < rows; ++r) {
            std::vector<uint8_t> one(m.dense_row_bytes());
            EXPECT_EQ(compact_decode_rows_ref(one.data(), m, r, r + 1), m.row_stream_bytes(r));
        }
        for (KernelIsa isa : {KernelIsa::scalar, KernelIsa::avx2, KernelIsa::avx512}) {
            set_kernel_isa_cap(isa);
            std::fill(fast.begin(), fast.end(), 0xCD);
            EXPECT_EQ(compact_decode_rows(fast.data(), m, 0, rows), read_ref);
            EXPECT_EQ(fast, dense) << kernel_isa_name(isa);
            // A row range in the middle.
            std::vector<uint8_t> part(3 * m.dense_row_bytes());
            compact_decode_rows(part.data(), m, 5, 8);
            EXPECT_EQ(0, std::memcmp(part.data(), dense.data() + 5 * m.dense_row_bytes(), part.size()));
        }
    }
}

TEST(Compact, GemmEqualsTheDenseKernelOnThePrunedWeights) {
    const IsaCapGuard guard;
    for (const Case& c : cases()) {
        SCOPED_TRACE(name_of(c));
        const int64_t rows    = 21;
        const auto dense      = pruned_matrix(c.f.dense, rows, c.cols, c.prune, c.f.trunc_bits, 11);
        const CompactMatrix m = CompactMatrix::encode(c.f, dense.data(), rows, c.cols);
        std::vector<uint8_t> scratch(compact_gemm_scratch_bytes(m));
        for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13}) {
            const auto x = random_x(n, c.cols, 3 + static_cast<uint32_t>(n));
            std::vector<float> yd(static_cast<size_t>(n * rows)), yc(yd.size());
            gemm_ref(yd.data(), rows, c.f.dense, dense.data(), x.data(), n, c.cols, 0, rows);
            compact_gemm_ref(yc.data(), rows, m, x.data(), n, 0, rows, scratch.data());
            EXPECT_EQ(yd, yc) << "ref, n = " << n;
            for (KernelIsa isa : {KernelIsa::scalar, KernelIsa::avx2, KernelIsa::avx512}) {
                set_kernel_isa_cap(isa);
                std::fill(yd.begin(), yd.end(), 0.0f);
                std::fill(yc.begin(), yc.end(), -1.0f);
                gemm(yd.data(), rows, c.f.dense, dense.data(), x.data(), n, c.cols, 2, rows - 1);
                compact_gemm(yc.data(), rows, m, x.data(), n, 2, rows - 1, scratch.data());
                // The fused AVX-512 kernel of 16-bit rows sums in its own order: within kCompactFusedRelTol of
                // sum |w x|. Every other path runs the dense kernel on decoded rows: bit for bit.
                const bool fused = c.f.dense != GgmlType::Q8_0 && compact_decoder_vectorized();
                for (int64_t i = 0; i < n; ++i)
                    for (int64_t r = 2; r < rows - 1; ++r) {
                        const float a = yd[size_t(i * rows + r)], b = yc[size_t(i * rows + r)];
                        if (!fused) {
                            ASSERT_EQ(a, b) << kernel_isa_name(isa) << " n = " << n << " row " << r;
                            continue;
                        }
                        std::vector<float> wr(static_cast<size_t>(c.cols));
                        dequantize_row_ref(wr.data(), c.f.dense, dense.data() + r * m.dense_row_bytes(), c.cols);
                        double mag = 0;
                        for (int64_t j = 0; j < c.cols; ++j)
                            mag += std::fabs(double(wr[size_t(j)]) * x[size_t(i * c.cols + j)]);
                        ASSERT_LE(std::fabs(double(a) - double(b)), kCompactFusedRelTol * mag + 1e-30)
                            << kernel_isa_name(isa) << " n = " << n << " row " << r;
                    }
            }
            if (c.f.dense == GgmlType::Q8_0 && c.cols % 32 == 0) {
                std::vector<uint8_t> xq(q8act_bytes(n, c.cols));
                quantize_q8act_ref(xq.data(), x.data(), n, c.cols);
                gemm_q8act_ref(yd.data(), rows, GgmlType::Q8_0, dense.data(), xq.data(), n, c.cols, 0, rows);
                compact_gemm_q8act_ref(yc.data(), rows, m, xq.data(), n, 0, rows, scratch.data());
                EXPECT_EQ(yd, yc) << "q8act ref, n = " << n;
                gemm_q8act(yd.data(), rows, GgmlType::Q8_0, dense.data(), xq.data(), n, c.cols, 0, rows);
                compact_gemm_q8act(yc.data(), rows, m, xq.data(), n, 0, rows, scratch.data());
                EXPECT_EQ(yd, yc) << "q8act, n = " << n;
            }
        }
    }
}

TEST(Compact, StreamSizesFollowTheBitAccounting) {
    // Every group of 64 keeps exactly 32: 8 mask bytes + 32 high bytes + (8 - t) planes of 4 bytes.
    const int64_t cols = 1024;
    std::vector<uint16_t> row(cols);
    for (int64_t c = 0; c < cols; ++c) row[size_t(c)] = c % 2 ? uint16_t(0x3F80) : uint16_t(0);  // 1.0 or +0
    for (int t : {0, 2, 4, 6}) {
        const CompactMatrix m = CompactMatrix::encode({GgmlType::BF16, true, t}, row.data(), 1, cols);
        EXPECT_EQ(m.row_stream_bytes(0), 16u * (8 + 32 + 4u * (8 - t)));
        EXPECT_EQ(m.stored_elements(), cols / 2);
        // (1 - p) (16 - t) + 1 bits per element, plus the offset of the row's tile (a tile of one row here).
        EXPECT_DOUBLE_EQ(8.0 * double(m.bytes()) / cols, 0.5 * (16 - t) + 1 + 64.0 / cols);
        std::vector<int64_t> per_group(16, 32);
        EXPECT_EQ(compact_row_stream_bytes(m.format(), cols, per_group.data()), m.row_stream_bytes(0));
    }
    // The modeled expectation for uniformly spread pruning sits within a bit of the ideal (1 - p)(16 - t) + 1.
    const double b = compact_bits_per_element({GgmlType::BF16, true, 4}, 2816, 0.5);
    EXPECT_GT(b, 7.0);
    EXPECT_LT(b, 7.4);
    // A row's share of its tile's 8-byte offset: one byte.
    EXPECT_NEAR(compact_bits_per_element({GgmlType::BF16, false, 4}, 1024, 1.0), 12.0 + 8.0 / 1024, 1e-9);
    EXPECT_NEAR(compact_bits_per_element({GgmlType::Q8_0, true, 0}, 1024, 0.5), 5.5 + 8.0 / 1024, 0.05);
}

TEST(Compact, GemmNeedsScratchAndQ8ActNeedsQ8Rows) {
    const auto dense      = pruned_matrix(GgmlType::BF16, 2, 64, 0.5, 0, 1);
    const CompactMatrix m = CompactMatrix::encode({GgmlType::BF16, true, 0}, dense.data(), 2, 64);
    std::vector<float> x(64, 1.0f), y(2);
    EXPECT_THROW(compact_gemm(y.data(), 2, m, x.data(), 1, 0, 2, nullptr), std::invalid_argument);
    std::vector<uint16_t> xp(static_cast<size_t>(compact_bf16act_words(64)));
    compact_pack_bf16act(xp.data(), x.data(), 1, 64);
    EXPECT_THROW(compact_gemm_bf16act(y.data(), 2, m, xp.data(), 1, 0, 2, nullptr), std::invalid_argument);
    std::vector<uint8_t> scratch(compact_gemm_scratch_bytes(m)), xq(q8act_bytes(1, 64));
    EXPECT_THROW(compact_gemm_q8act(y.data(), 2, m, xq.data(), 1, 0, 2, scratch.data()), std::invalid_argument);
}

// The BF16-activation kernel (vdpbf16ps on the decoded words) against its reference, and the reference against the
// dense BF16-activation GEMM on the decoded rows (the same products of BF16 values, summed in another order), for
// every BF16 format of cases(), ragged columns, batch sizes 1-9 and 13 and a row range inside the matrix. The
// activations are packed once, as the forward pass packs them; unpacking them gives round_bf16act's words back.
TEST(Compact, Bf16ActivationGemmMatchesItsReference) {
    bool differed = false;  // the fast kernel sums in its own order: some result must differ where it ran
    for (const Case& c : cases()) {
        if (c.f.dense != GgmlType::BF16) continue;
        SCOPED_TRACE(name_of(c));
        const int64_t rows    = 21;
        const auto dense      = pruned_matrix(c.f.dense, rows, c.cols, c.prune, c.f.trunc_bits, 12);
        const CompactMatrix m = CompactMatrix::encode(c.f, dense.data(), rows, c.cols);
        std::vector<uint8_t> scratch(compact_gemm_scratch_bytes(m));
        const int64_t words = compact_bf16act_words(c.cols);
        ASSERT_EQ(words % 64, 0);
        ASSERT_GE(words, c.cols);
        for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13}) {
            const auto x = random_x(n, c.cols, 5 + static_cast<uint32_t>(n));
            std::vector<uint16_t> xp(static_cast<size_t>(n * words), 0xFFFF), xb(static_cast<size_t>(n * c.cols));
            compact_pack_bf16act(xp.data(), x.data(), n, c.cols);
            round_bf16act(xb.data(), x.data(), n, c.cols);
            // Every rounded activation is in the packed vector once; the padding is zero.
            for (int64_t i = 0; i < n; ++i) {
                std::vector<uint16_t> seen(xp.begin() + i * words, xp.begin() + (i + 1) * words);
                std::vector<uint16_t> want(xb.begin() + i * c.cols, xb.begin() + (i + 1) * c.cols);
                want.resize(static_cast<size_t>(words), 0);
                std::sort(seen.begin(), seen.end());
                std::sort(want.begin(), want.end());
                ASSERT_EQ(seen, want) << "vector " << i;
            }
            std::vector<float> yr(static_cast<size_t>(n * rows), -1.0f), yd(yr.size(), -2.0f), yf(yr.size(), -3.0f);
            compact_gemm_bf16act_ref(yr.data(), rows, m, xp.data(), n, 0, rows, scratch.data());
            gemm_bf16act_ref(yd.data(), rows, dense.data(), xb.data(), n, c.cols, 0, rows);
            compact_gemm_bf16act(yf.data(), rows, m, xp.data(), n, 2, rows - 1, scratch.data());
            for (int64_t i = 0; i < n; ++i)
                for (int64_t r = 0; r < rows; ++r) {
                    const size_t at = static_cast<size_t>(i * rows + r);
                    EXPECT_EQ(yr[at], yd[at]) << "ref vs dense ref, n = " << n << " row " << r;  // both in k order
                    if (r < 2 || r >= rows - 1) {
                        EXPECT_EQ(yf[at], -3.0f) << "wrote outside its rows";
                        continue;
                    }
                    double mag = 0;
                    for (int64_t j = 0; j < c.cols; ++j)
                        mag += std::fabs(double(bf16_to_f32(reinterpret_cast<const uint16_t*>(
                                             dense.data())[static_cast<size_t>(r * c.cols + j)])) *
                                         bf16_to_f32(xb[static_cast<size_t>(i * c.cols + j)]));
                    ASSERT_LE(std::fabs(double(yf[at]) - double(yr[at])), kCompactBf16ActRelTol * mag + 1e-30)
                        << "n = " << n << " row " << r;
                    differed = differed || yf[at] != yr[at];
                }
        }
    }
    const bool fast = compact_decoder_vectorized() && gemm_bf16act_available();
    EXPECT_EQ(differed, fast) << "the AVX-512 BF16 kernel should run exactly where the CPU has it";
    const CompactMatrix q =
        CompactMatrix::encode({GgmlType::Q8_0, true, 0}, pruned_matrix(GgmlType::Q8_0, 2, 64, 0.5, 0, 1).data(), 2, 64);
    std::vector<uint8_t> scratch(compact_gemm_scratch_bytes(q));
    std::vector<uint16_t> xp(64);
    std::vector<float> y(2);
    EXPECT_FALSE(compact_bf16act_available(q));
    EXPECT_THROW(compact_gemm_bf16act_ref(y.data(), 2, q, xp.data(), 1, 0, 2, scratch.data()), std::invalid_argument);
}

// Which activations decode passes of compact rows take, per CPU (compact_bf16act_preferred): BF16 for sparse BF16
// rows on AMD, where vdpbf16ps runs at full rate and measured faster; f32 for truncation alone, on Intel and others.
// The packed activations of the fast path equal the reference's words bit for bit: whole and short groups, several
// vectors, and values where rounding to BF16 has its edge cases (ties to even, denormals, infinities, NaNs).
TEST(CompactBf16Act, PackedActivationsEqualTheReferenceWords) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-4.0f, 4.0f);
    const float specials[] = {0.0f,
                              -0.0f,
                              1.0f + 1.0f / 256.0f,  // a tie, rounds to even
                              1.0f + 3.0f / 256.0f,  // a tie, rounds up
                              1e-40f,                // denormal
                              -3e-39f,
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN(),
                              std::bit_cast<float>(0x7f800001u),  // a signalling NaN
                              std::numeric_limits<float>::max()};
    for (int64_t cols : {int64_t(30), int64_t(64), int64_t(100), int64_t(1000), int64_t(1024)})
        for (int64_t n : {int64_t(1), int64_t(3)}) {
            SCOPED_TRACE("cols " + std::to_string(cols) + ", n " + std::to_string(n));
            std::vector<float> x(static_cast<size_t>(n * cols));
            for (size_t i = 0; i < x.size(); ++i) x[i] = i % 5 == 0 ? specials[(i / 5) % std::size(specials)] : u(rng);
            const int64_t words = compact_bf16act_words(cols);
            std::vector<uint16_t> fast(static_cast<size_t>(n * words), 0xdead), ref(fast.size(), 0xbeef);
            compact_pack_bf16act(fast.data(), x.data(), n, cols);
            compact_pack_bf16act_ref(ref.data(), x.data(), n, cols);
            EXPECT_EQ(fast, ref);
        }
}

TEST(CompactBf16Act, TheKernelChoiceFollowsTheCpuAndTheFormat) {
    const CompactFormat sparse{GgmlType::BF16, true, 4}, sparse_t0{GgmlType::BF16, true, 0},
        trunc{GgmlType::BF16, false, 4}, f16{GgmlType::F16, true, 0}, q8{GgmlType::Q8_0, true, 0};
    EXPECT_TRUE(compact_bf16act_preferred(sparse, CpuVendor::amd));
    EXPECT_TRUE(compact_bf16act_preferred(sparse_t0, CpuVendor::amd));
    EXPECT_FALSE(compact_bf16act_preferred(trunc, CpuVendor::amd));
    for (CpuVendor v : {CpuVendor::intel, CpuVendor::other}) {
        EXPECT_FALSE(compact_bf16act_preferred(sparse, v));
        EXPECT_FALSE(compact_bf16act_preferred(trunc, v));
    }
    EXPECT_FALSE(compact_bf16act_preferred(f16, CpuVendor::amd));
    EXPECT_FALSE(compact_bf16act_preferred(q8, CpuVendor::amd));
    const CompactMatrix m =
        CompactMatrix::encode(sparse_t0, pruned_matrix(GgmlType::BF16, 2, 64, 0.5, 0, 1).data(), 2, 64);
    EXPECT_EQ(compact_bf16act_chosen(m), compact_bf16act_available(m) && cpu_features().vendor == CpuVendor::amd);
}

// ---- strict-subset storage (CompactRest) ----

namespace {
// A BF16 target and its draft: about `prune` of the elements zeroed and the low `trunc` mantissa bits of the rest
// cleared (toward zero, as Cassandra truncates), so the draft's stored bits are a prefix of the target's.
struct SubsetPair {
    std::vector<uint8_t> target, draft;
};
SubsetPair subset_pair(int64_t rows, int64_t cols, double prune, int trunc, uint32_t seed) {
    SubsetPair p;
    p.target = pruned_matrix(GgmlType::BF16, rows, cols, 0.0, 0, seed);
    p.draft  = p.target;
    std::mt19937 rng(seed + 1);
    std::bernoulli_distribution drop(prune);
    auto* d = reinterpret_cast<uint16_t*>(p.draft.data());
    for (int64_t i = 0; i < rows * cols; ++i)
        d[i] = drop(rng) ? uint16_t{0} : static_cast<uint16_t>(d[i] & ~((1u << trunc) - 1u));
    return p;
}
}  // namespace

// The draft's compact matrix plus the rest give the target's rows back bit for bit, at every ISA and over partial
// tiles; the decoders read exactly both parts' bytes; and the two parts together cost what the target costs plus the
// draft's masks (so the draft costs no memory of its own).
TEST(CompactRest, DraftPlusRestGiveTheTargetBackAndCostOnlyTheMasks) {
    const IsaCapGuard guard;
    struct RestCase {
        bool sparse;
        int trunc;
        double prune;
        int64_t rows, cols;
    };
    for (const RestCase& c :
         {RestCase{true, 4, 0.5, 24, 1024}, RestCase{true, 0, 0.5, 19, 200}, RestCase{false, 4, 0.0, 16, 256},
          RestCase{false, 3, 0.0, 21, 77}, RestCase{true, 7, 0.9, 8, 128}, RestCase{true, 2, 0.25, 17, 320},
          RestCase{true, 1, 0.0, 9, 64}, RestCase{true, 5, 1.0, 16, 192}, RestCase{true, 6, 0.5, 16, 136}}) {
        SCOPED_TRACE("sparse " + std::to_string(c.sparse) + " t " + std::to_string(c.trunc) + " p " +
                     std::to_string(c.prune) + " " + std::to_string(c.rows) + " x " + std::to_string(c.cols));
        const SubsetPair p    = subset_pair(c.rows, c.cols, c.prune, c.trunc, 11);
        const CompactFormat f = {GgmlType::BF16, c.sparse, c.trunc};
        const CompactMatrix d = CompactMatrix::encode(f, p.draft.data(), c.rows, c.cols);
        const CompactRest r   = CompactRest::encode(d, p.target.data(), c.rows, c.cols);
        EXPECT_EQ(r.tiles(), d.tiles());
        const uint64_t streams = d.bytes() + r.bytes() - 16u * uint64_t(d.tiles());
        std::vector<uint8_t> ref(p.target.size(), 0xAB);
        EXPECT_EQ(compact_rest_decode_rows_ref(ref.data(), d, r, 0, c.rows), streams);
        EXPECT_EQ(ref, p.target);
        for (KernelIsa isa : {KernelIsa::scalar, KernelIsa::avx512}) {
            set_kernel_isa_cap(isa);
            std::vector<uint8_t> fast(p.target.size(), 0xCD);
            EXPECT_EQ(compact_rest_decode_rows(fast.data(), d, r, 0, c.rows), streams) << kernel_isa_name(isa);
            EXPECT_EQ(fast, p.target) << kernel_isa_name(isa);
            const int64_t a = std::min<int64_t>(3, c.rows - 1), b = std::min<int64_t>(c.rows, 17);
            const uint64_t rb = 2 * static_cast<uint64_t>(c.cols);
            std::vector<uint8_t> part(static_cast<size_t>(b - a) * rb);
            compact_rest_decode_rows(part.data(), d, r, a, b);
            EXPECT_EQ(0, std::memcmp(part.data(), p.target.data() + a * rb, part.size())) << kernel_isa_name(isa);
        }
        // Both parts: every target bit once, plus one mask bit per element when sparse, plus the rounding of the
        // planes and nibbles to whole bytes per group (at most 1 + trunc bytes per group) and the tiles' offsets.
        const int64_t groups = c.rows * ((c.cols + 63) / 64);
        const uint64_t dense = p.target.size();
        const uint64_t masks = c.sparse ? 8u * uint64_t(groups) : 0u;
        const uint64_t slack = uint64_t(groups) * uint64_t(1 + c.trunc) + 16u * uint64_t(d.tiles());
        EXPECT_GE(d.bytes() + r.bytes(), dense + masks);
        EXPECT_LE(d.bytes() + r.bytes(), dense + masks + slack);
    }
}

TEST(CompactRest, RefusesADraftThatIsNotTheTargetWithBitsLeftOut) {
    const SubsetPair p    = subset_pair(16, 128, 0.5, 4, 3);
    const CompactMatrix d = CompactMatrix::encode({GgmlType::BF16, true, 4}, p.draft.data(), 16, 128);
    // Another target: the draft's stored bits are not a prefix of its bits.
    const SubsetPair other = subset_pair(16, 128, 0.0, 0, 4);
    EXPECT_THROW(CompactRest::encode(d, other.target.data(), 16, 128), std::invalid_argument);
    // A shape that does not match, and rows that are not BF16.
    EXPECT_THROW(CompactRest::encode(d, p.target.data(), 8, 128), std::invalid_argument);
    const auto f16         = pruned_matrix(GgmlType::F16, 16, 128, 0.5, 0, 5);
    const CompactMatrix dh = CompactMatrix::encode({GgmlType::F16, true, 0}, f16.data(), 16, 128);
    EXPECT_THROW(CompactRest::encode(dh, f16.data(), 16, 128), std::invalid_argument);
    // A rest used with another draft matrix.
    const CompactRest r    = CompactRest::encode(d, p.target.data(), 16, 128);
    const SubsetPair small = subset_pair(8, 128, 0.5, 4, 6);
    const CompactMatrix d8 = CompactMatrix::encode({GgmlType::BF16, true, 4}, small.draft.data(), 8, 128);
    std::vector<uint8_t> out(16 * 256);
    EXPECT_THROW(compact_rest_decode_rows(out.data(), d8, r, 0, 8), std::invalid_argument);
}
