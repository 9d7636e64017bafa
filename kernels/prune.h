// Unstructured pruning at the element level: which entries of a score vector to prune (exact count, deterministic
// ties), and zeroing one element inside a row stored in a GGML block layout without touching the others. Scalar
// `_ref` selection by full stable sort, the fast one by nth_element; the tests hold them equal.
#pragma once

#include "kernels/ggml_types.h"

#include <cstdint>

namespace speculum::kernels {

// pruned[i] = 1 for the n_prune entries of smallest score (ties: the lower index is pruned first; NaN scores
// count as +inf, never pruned before a number), 0 for the rest.
//   pruned: (n);  score: (n)
void prune_select_ref(uint8_t* pruned, const float* score, int64_t n, int64_t n_prune);  // full stable sort
void prune_select(uint8_t* pruned, const float* score, int64_t n, int64_t n_prune);      // nth_element

// Sets element j of a row stored in type t to exactly 0 without touching any other element (F32, F16, BF16:
// +0 bits; Q8_0: q = 0; Q8_0_X8: stored 128; Q4_0: code 8; Q5_0: q = 16; MXFP4: code 0). Throws
// std::invalid_argument for other types; can_zero_in_place says which.
void zero_element(GgmlType t, void* row, int64_t j);
bool can_zero_in_place(GgmlType t);

}  // namespace speculum::kernels
