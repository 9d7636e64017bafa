// Self-draft weight transforms (see weight_transforms.h).
#include "core/drafts/weight_transforms.h"

#include "core/parallel.h"
#include "kernels/fp16.h"
#include "kernels/gemv.h"
#include "kernels/mantissa.h"
#include "kernels/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace speculum::drafts {

using kernels::GgmlType;

namespace {

// Selection order: smaller score first, then smaller index; NaN sorts as +inf.
inline float key(float s) { return std::isnan(s) ? std::numeric_limits<float>::infinity() : s; }

kernels::MantissaRounding kernel_rounding(MantissaRounding r) {
    return r == MantissaRounding::toward_zero ? kernels::MantissaRounding::toward_zero
                                              : kernels::MantissaRounding::nearest_even;
}

void check_plan(const model::WeightView& w, const MatrixTransform& tr) {
    if (!(tr.prune_ratio >= 0.0f && tr.prune_ratio < 1.0f))
        throw std::invalid_argument("transform_matrix: prune ratio must be in [0, 1), got " + std::to_string(tr.prune_ratio));
    if (!tr.channel_norm.empty() && static_cast<int64_t>(tr.channel_norm.size()) != w.cols)
        throw std::invalid_argument("transform_matrix: " + std::to_string(tr.channel_norm.size()) +
                                    " channel norms for " + std::to_string(w.cols) + " columns");
    if (tr.trunc_bits < 0 || tr.trunc_bits > 7 || (tr.trunc_bits > 0 && tr.format != WeightFormat::bf16))
        throw std::invalid_argument("transform_matrix: mantissa truncation needs format bf16 and 0..7 bits");
    if (tr.prune_ratio > 0.0f && tr.format == WeightFormat::same && !can_zero_in_place(w.type))
        throw std::invalid_argument(std::string("pruning ") + kernels::ggml_type_traits(w.type)->name +
                                    " weights in place is not supported; choose weight_format bf16, q8_0 or mxfp4");
}

// Scores of one row: |w| or Wanda's |w| * ||X_j||.
void row_scores(float* s, const float* x, int64_t cols, std::span<const float> norm) {
    for (int64_t c = 0; c < cols; ++c) s[c] = std::abs(x[c]) * (norm.empty() ? 1.0f : norm[size_t(c)]);
}

// Re-encodes one pruned f32 row x (cols) into `out` of the target format.
void encode_row(void* out, GgmlType type, float* x, int64_t cols, const MatrixTransform& tr, bool ref) {
    switch (type) {
    case GgmlType::BF16: {
        auto* o = static_cast<uint16_t*>(out);
        if (ref) {
            for (int64_t c = 0; c < cols; ++c)
                o[c] = kernels::truncate_mantissa_bf16_bits(kernels::f32_to_bf16(x[c]), tr.trunc_bits,
                                                            kernel_rounding(tr.rounding));
        } else {
            kernels::truncate_mantissa_row_bf16(o, x, cols, 0, kernels::MantissaRounding::nearest_even);
            if (tr.trunc_bits > 0)
                kernels::truncate_mantissa_row_bf16_bits(o, o, cols, tr.trunc_bits, kernel_rounding(tr.rounding));
        }
        return;
    }
    case GgmlType::Q8_0: kernels::quantize_row_q8_0_ref(static_cast<kernels::BlockQ8_0*>(out), x, cols); return;
    case GgmlType::MXFP4:
        kernels::quantize_row_mxfp4_ref(static_cast<kernels::BlockMxfp4*>(out), x, cols, kernels::Fp4Rounding::nearest_even);
        return;
    default: kernels::quantize_row_ref(out, type, x, cols); return;
    }
}

TransformedMatrix run(const model::WeightView& w, const MatrixTransform& tr, bool ref) {
    check_plan(w, tr);
    const int64_t rows = w.rows, cols = w.cols;
    const GgmlType out_type = output_type(tr.format, w.type);
    const uint64_t out_row  = kernels::ggml_row_size(out_type, static_cast<uint64_t>(cols));
    std::vector<uint8_t> bytes(out_row * static_cast<uint64_t>(rows));
    const bool prune = tr.prune_ratio > 0.0f;

    // Pruning mask, (rows, cols). Per tensor needs every score before any row can be written.
    std::vector<uint8_t> mask;
    int64_t n_pruned = 0;
    if (prune) {
        mask.assign(static_cast<size_t>(rows * cols), 0);
        std::vector<float> scores(static_cast<size_t>(tr.per_row ? 0 : rows * cols));
        auto score_rows = [&](int64_t r0, int64_t r1) {
            std::vector<float> x(static_cast<size_t>(cols)), s(static_cast<size_t>(cols));
            for (int64_t r = r0; r < r1; ++r) {
                if (ref) kernels::dequantize_row_ref(x.data(), w.type, w.row(r), cols);
                else kernels::dequantize_row(x.data(), w.type, w.row(r), cols);
                float* dst = tr.per_row ? s.data() : &scores[size_t(r * cols)];
                row_scores(dst, x.data(), cols, tr.channel_norm);
                if (tr.per_row) {
                    const int64_t k = prune_count(tr.prune_ratio, cols);
                    if (ref) prune_select_ref(&mask[size_t(r * cols)], dst, cols, k);
                    else prune_select(&mask[size_t(r * cols)], dst, cols, k);
                }
            }
        };
        if (ref) score_rows(0, rows);
        else parallel_for(0, rows, 16, score_rows);
        if (!tr.per_row) {
            const int64_t k = prune_count(tr.prune_ratio, rows * cols);
            if (ref) prune_select_ref(mask.data(), scores.data(), rows * cols, k);
            else prune_select(mask.data(), scores.data(), rows * cols, k);
        }
        n_pruned = static_cast<int64_t>(std::count(mask.begin(), mask.end(), uint8_t{1}));
    }

    auto write_rows = [&](int64_t r0, int64_t r1) {
        std::vector<float> x(static_cast<size_t>(cols));
        for (int64_t r = r0; r < r1; ++r) {
            uint8_t* out         = bytes.data() + out_row * static_cast<uint64_t>(r);
            const uint8_t* m_row = prune ? &mask[size_t(r * cols)] : nullptr;
            if (tr.format == WeightFormat::same) {
                std::memcpy(out, w.row(r), out_row);
                if (m_row)
                    for (int64_t c = 0; c < cols; ++c)
                        if (m_row[c]) zero_element(out_type, out, c);
                continue;
            }
            if (ref) kernels::dequantize_row_ref(x.data(), w.type, w.row(r), cols);
            else kernels::dequantize_row(x.data(), w.type, w.row(r), cols);
            if (m_row)
                for (int64_t c = 0; c < cols; ++c)
                    if (m_row[c]) x[size_t(c)] = 0.0f;
            encode_row(out, out_type, x.data(), cols, tr, ref);
        }
    };
    if (ref) write_rows(0, rows);
    else parallel_for(0, rows, 16, write_rows);
    return {model::make_owned_view(out_type, rows, cols, std::move(bytes)), n_pruned};
}

}  // namespace

int64_t prune_count(float ratio, int64_t n) {
    if (!(ratio > 0.0f)) return 0;
    return std::min<int64_t>(n, static_cast<int64_t>(std::floor(static_cast<double>(ratio) * static_cast<double>(n))));
}

void prune_select_ref(uint8_t* pruned, const float* score, int64_t n, int64_t n_prune) {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return key(score[a]) < key(score[b]); });
    std::fill(pruned, pruned + n, uint8_t{0});
    for (int64_t i = 0; i < n_prune && i < n; ++i) pruned[idx[size_t(i)]] = 1;
}

void prune_select(uint8_t* pruned, const float* score, int64_t n, int64_t n_prune) {
    std::fill(pruned, pruned + n, uint8_t{0});
    if (n_prune <= 0) return;
    if (n_prune >= n) {
        std::fill(pruned, pruned + n, uint8_t{1});
        return;
    }
    // (score, index) is a strict total order, so the n_prune smallest are exactly the reference's set.
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    auto less = [&](int64_t a, int64_t b) {
        const float ka = key(score[a]), kb = key(score[b]);
        return ka < kb || (ka == kb && a < b);
    };
    std::nth_element(idx.begin(), idx.begin() + (n_prune - 1), idx.end(), less);
    for (int64_t i = 0; i < n_prune; ++i) pruned[idx[size_t(i)]] = 1;
}

bool can_zero_in_place(GgmlType t) {
    return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16 || t == GgmlType::Q8_0 ||
           t == GgmlType::Q4_0 || t == GgmlType::Q5_0 || t == GgmlType::MXFP4 || t == GgmlType::Q8_0_X8;
}

void zero_element(GgmlType t, void* row, int64_t j) {
    switch (t) {
    case GgmlType::F32: static_cast<float*>(row)[j] = 0.0f; return;
    case GgmlType::F16:
    case GgmlType::BF16: static_cast<uint16_t*>(row)[j] = 0; return;
    case GgmlType::Q8_0: static_cast<kernels::BlockQ8_0*>(row)[j / kernels::kQK8_0].qs[j % kernels::kQK8_0] = 0; return;
    case GgmlType::Q8_0_X8: {  // quants are stored + 128
        auto& b = static_cast<kernels::BlockQ8_0x8*>(row)[j / kernels::kQK8_0x8];
        b.qs[kernels::q8_0_x8_index(static_cast<int>(j % kernels::kQK8_0x8 / 32), static_cast<int>(j % 32))] = 128;
        return;
    }
    case GgmlType::Q4_0:
    case GgmlType::MXFP4: {
        // Both keep element i (i < 16) in the low nibble of qs[i] and element i + 16 in its high nibble.
        const uint8_t zero = t == GgmlType::Q4_0 ? 8 : 0;
        uint8_t* qs = t == GgmlType::Q4_0 ? static_cast<kernels::BlockQ4_0*>(row)[j / 32].qs
                                          : static_cast<kernels::BlockMxfp4*>(row)[j / 32].qs;
        const int64_t i = j % 32;
        uint8_t& b      = qs[i % 16];
        b = i < 16 ? static_cast<uint8_t>((b & 0xF0) | zero) : static_cast<uint8_t>((b & 0x0F) | (zero << 4));
        return;
    }
    case GgmlType::Q5_0: {  // q = 16 (low nibble 0, fifth bit set) is (16 - 16) * d = 0
        auto& b         = static_cast<kernels::BlockQ5_0*>(row)[j / 32];
        const int64_t i = j % 32;
        uint8_t& q      = b.qs[i % 16];
        q               = i < 16 ? static_cast<uint8_t>(q & 0xF0) : static_cast<uint8_t>(q & 0x0F);
        b.qh[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
        return;
    }
    default: throw std::invalid_argument("zero_element: unsupported type");
    }
}

GgmlType output_type(WeightFormat format, GgmlType source) {
    switch (format) {
    case WeightFormat::same: return source;
    case WeightFormat::bf16: return GgmlType::BF16;
    case WeightFormat::q8_0: return GgmlType::Q8_0;
    case WeightFormat::mxfp4: return GgmlType::MXFP4;
    }
    return source;
}

TransformedMatrix transform_matrix(const model::WeightView& w, const MatrixTransform& tr) { return run(w, tr, false); }
TransformedMatrix transform_matrix_ref(const model::WeightView& w, const MatrixTransform& tr) { return run(w, tr, true); }

}  // namespace speculum::drafts
