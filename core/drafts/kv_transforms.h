// Cassandra's draft-KV transforms, applied where the draft writes K/V (ForwardOptions::kv_transform): per token
// vector, zero the floor(p_kv * width) values of smallest magnitude (Mustafar-style selection), then reduce the
// rest to their BF16 form with the low t_kv mantissa bits cleared. The cache stays f32; the values are exact.
#pragma once

#include "core/drafts/draft_spec.h"
#include "core/model/forward.h"

#include <cstdint>
#include <functional>

namespace speculum::drafts {

struct KvTransform {
    float drop_ratio          = 0.0f;  // p_kv in [0, 1)
    int32_t trunc_bits        = 0;     // t_kv in 0..7; 0 = the f32 values are kept (no BF16 rounding)
    MantissaRounding rounding = MantissaRounding::toward_zero;
    bool identity() const { return drop_ratio <= 0.0f && trunc_bits == 0; }
};

// In place on n rows of `width` values (one row = one layer's K or V vector of one token, all KV heads).
//   rows: (n, width) f32
void kv_transform_rows_ref(float* rows, int32_t n, int64_t width, const KvTransform& t);
void kv_transform_rows(float* rows, int32_t n, int64_t width, const KvTransform& t);

// The hook for ForwardOptions::kv_transform (empty function when t is the identity).
std::function<void(int32_t, float*, float*, int32_t, int64_t)> make_kv_hook(const KvTransform& t);

}  // namespace speculum::drafts
