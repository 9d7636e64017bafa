// Draft KV selection and truncation (see kv_transforms.h).
#include "core/drafts/kv_transforms.h"

#include "core/drafts/weight_transforms.h"
#include "kernels/fp16.h"
#include "kernels/mantissa.h"
#include "kernels/prune.h"

#include <cmath>
#include <vector>

namespace speculum::drafts {

namespace {

void apply(float* rows, int32_t n, int64_t width, const KvTransform& t, bool ref) {
    const int64_t k = prune_count(t.drop_ratio, width);
    std::vector<float> score(size_t(k > 0 ? width : 0));
    std::vector<uint8_t> drop(size_t(k > 0 ? width : 0));
    for (int32_t i = 0; i < n; ++i) {
        float* r = rows + static_cast<int64_t>(i) * width;
        if (k > 0) {
            for (int64_t c = 0; c < width; ++c) score[size_t(c)] = std::abs(r[c]);
            if (ref)
                kernels::prune_select_ref(drop.data(), score.data(), width, k);
            else
                kernels::prune_select(drop.data(), score.data(), width, k);
            for (int64_t c = 0; c < width; ++c)
                if (drop[size_t(c)]) r[c] = 0.0f;
        }
        if (t.trunc_bits > 0)
            for (int64_t c = 0; c < width; ++c)
                r[c] = kernels::bf16_to_f32(
                    kernels::truncate_mantissa_bf16_bits(kernels::f32_to_bf16(r[c]), t.trunc_bits, t.rounding));
    }
}

}  // namespace

void kv_transform_rows_ref(float* rows, int32_t n, int64_t width, const KvTransform& t) {
    apply(rows, n, width, t, true);
}
void kv_transform_rows(float* rows, int32_t n, int64_t width, const KvTransform& t) {
    apply(rows, n, width, t, false);
}

std::function<void(int32_t, float*, float*, int32_t, int64_t)> make_kv_hook(const KvTransform& t) {
    if (t.identity()) return {};
    return [t](int32_t, float* k, float* v, int32_t n, int64_t width) {
        kv_transform_rows(k, n, width, t);
        kv_transform_rows(v, n, width, t);
    };
}

}  // namespace speculum::drafts
