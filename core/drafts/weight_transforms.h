// The weight transforms of self-drafts as pure functions on one matrix: unstructured pruning (magnitude or Wanda
// score, exact count, deterministic ties), zeroing in the storage format, BF16 mantissa truncation and re-encoding
// as BF16 / Q8_0 / MXFP4. Each has a scalar reference (`_ref`) that the tests hold the fast version to. The
// element-level pieces (prune selection, zeroing inside a block layout) are kernels (kernels/prune.h).
#pragma once

#include "core/drafts/draft_spec.h"
#include "core/model/model.h"

#include <cstdint>
#include <span>
#include <vector>

namespace speculum::drafts {

// Number of weights pruned from a group of n at ratio p: floor(p * n) (so the achieved ratio is exactly that).
int64_t prune_count(float ratio, int64_t n);

// Per-matrix plan: what happens to one weight matrix.
struct MatrixTransform {
    float prune_ratio = 0.0f;             // 0 = no pruning
    bool per_row      = true;             // rank within each output row, else over the whole matrix
    std::span<const float> channel_norm;  // Wanda: (cols) ||X_j||; empty = magnitude
    WeightFormat format       = WeightFormat::same;
    int32_t trunc_bits        = 0;  // BF16 mantissa bits dropped (format bf16 only)
    MantissaRounding rounding = MantissaRounding::toward_zero;

    bool identity() const { return prune_ratio <= 0.0f && format == WeightFormat::same; }
};

struct TransformedMatrix {
    model::WeightView view;  // new owned storage
    int64_t n_pruned = 0;    // weights set to zero by pruning
};

// The storage type `format` gives a matrix of type `source` (same: the source type).
kernels::GgmlType output_type(WeightFormat format, kernels::GgmlType source);

// Applies `tr` to w (not identity). Pruning zeroes in the source format when the format stays `same`
// (numerically exact: the other weights keep their bits); otherwise the pruned f32 values are re-encoded:
// BF16 as the weight's BF16 form (RNE f32 -> bf16; the identity for BF16 sources) with its low trunc_bits then
// cleared by `rounding` (Cassandra truncates the BF16 weight), Q8_0 and MXFP4 by the reference quantizers
// (MXFP4: E8M0 scale 2^(floor(log2 amax) - 2), E2M1 round-to-nearest-even, clamp +-6). Rows run in parallel.
TransformedMatrix transform_matrix(const model::WeightView& w, const MatrixTransform& tr);
// Scalar, serial reference of transform_matrix (sort-based selection, element-wise conversions).
TransformedMatrix transform_matrix_ref(const model::WeightView& w, const MatrixTransform& tr);

}  // namespace speculum::drafts
