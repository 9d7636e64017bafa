// Self-draft weight transforms (see weight_transforms.h).
#include "core/drafts/weight_transforms.h"

#include "core/parallel.h"
#include "kernels/fp16.h"
#include "kernels/gemv.h"
#include "kernels/mantissa.h"
#include "kernels/prune.h"
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

void check_plan(const model::WeightView& w, const MatrixTransform& tr) {
    if (!(tr.prune_ratio >= 0.0f && tr.prune_ratio < 1.0f))
        throw std::invalid_argument("transform_matrix: prune ratio must be in [0, 1), got " +
                                    std::to_string(tr.prune_ratio));
    if (!tr.channel_norm.empty() && static_cast<int64_t>(tr.channel_norm.size()) != w.cols)
        throw std::invalid_argument("transform_matrix: " + std::to_string(tr.channel_norm.size()) +
                                    " channel norms for " + std::to_string(w.cols) + " columns");
    if (tr.trunc_bits < 0 || tr.trunc_bits > 7 || (tr.trunc_bits > 0 && tr.format != WeightFormat::bf16))
        throw std::invalid_argument("transform_matrix: mantissa truncation needs format bf16 and 0..7 bits");
    if (tr.prune_ratio > 0.0f && tr.format == WeightFormat::same && !kernels::can_zero_in_place(w.type))
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
                    o[c] = kernels::truncate_mantissa_bf16_bits(kernels::f32_to_bf16(x[c]), tr.trunc_bits, tr.rounding);
            } else {
                kernels::truncate_mantissa_row_bf16(o, x, cols, 0, kernels::MantissaRounding::nearest_even);
                if (tr.trunc_bits > 0) kernels::truncate_mantissa_row_bf16_bits(o, o, cols, tr.trunc_bits, tr.rounding);
            }
            return;
        }
        case GgmlType::Q8_0:
            kernels::quantize_row_q8_0_ref(static_cast<kernels::BlockQ8_0*>(out), x, cols);
            return;
        case GgmlType::MXFP4:
            kernels::quantize_row_mxfp4_ref(static_cast<kernels::BlockMxfp4*>(out), x, cols,
                                            kernels::Fp4Rounding::nearest_even);
            return;
        default:
            kernels::quantize_row_ref(out, type, x, cols);
            return;
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
                if (ref)
                    kernels::dequantize_row_ref(x.data(), w.type, w.row(r), cols);
                else
                    kernels::dequantize_row(x.data(), w.type, w.row(r), cols);
                float* dst = tr.per_row ? s.data() : &scores[size_t(r * cols)];
                row_scores(dst, x.data(), cols, tr.channel_norm);
                if (tr.per_row) {
                    const int64_t k = prune_count(tr.prune_ratio, cols);
                    if (ref)
                        kernels::prune_select_ref(&mask[size_t(r * cols)], dst, cols, k);
                    else
                        kernels::prune_select(&mask[size_t(r * cols)], dst, cols, k);
                }
            }
        };
        if (ref)
            score_rows(0, rows);
        else
            parallel_for(0, rows, 16, score_rows);
        if (!tr.per_row) {
            const int64_t k = prune_count(tr.prune_ratio, rows * cols);
            if (ref)
                kernels::prune_select_ref(mask.data(), scores.data(), rows * cols, k);
            else
                kernels::prune_select(mask.data(), scores.data(), rows * cols, k);
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
                        if (m_row[c]) kernels::zero_element(out_type, out, c);
                continue;
            }
            if (ref)
                kernels::dequantize_row_ref(x.data(), w.type, w.row(r), cols);
            else
                kernels::dequantize_row(x.data(), w.type, w.row(r), cols);
            if (m_row)
                for (int64_t c = 0; c < cols; ++c)
                    if (m_row[c]) x[size_t(c)] = 0.0f;
            encode_row(out, out_type, x.data(), cols, tr, ref);
        }
    };
    if (ref)
        write_rows(0, rows);
    else
        parallel_for(0, rows, 16, write_rows);
    return {model::make_owned_view(out_type, rows, cols, std::move(bytes)), n_pruned};
}

}  // namespace

int64_t prune_count(float ratio, int64_t n) {
    if (!(ratio > 0.0f)) return 0;
    return std::min<int64_t>(n, static_cast<int64_t>(std::floor(static_cast<double>(ratio) * static_cast<double>(n))));
}

GgmlType output_type(WeightFormat format, GgmlType source) {
    switch (format) {
        case WeightFormat::same:
            return source;
        case WeightFormat::bf16:
            return GgmlType::BF16;
        case WeightFormat::q8_0:
            return GgmlType::Q8_0;
        case WeightFormat::mxfp4:
            return GgmlType::MXFP4;
    }
    return source;
}

TransformedMatrix transform_matrix(const model::WeightView& w, const MatrixTransform& tr) {
    return run(w, tr, false);
}
TransformedMatrix transform_matrix_ref(const model::WeightView& w, const MatrixTransform& tr) {
    return run(w, tr, true);
}

}  // namespace speculum::drafts
