// AVX2 + FMA + F16C GEMV/GEMM kernels (placeholder-free: until the SIMD paths land, every type reports
// "no AVX2 path" and the dispatcher uses the scalar reference).
#include "kernels/gemv_detail.h"

namespace speculum::kernels::detail {

bool gemm_avx2(float*, int64_t, GgmlType, const void*, const float*, int64_t, int64_t, int64_t, int64_t) {
    return false;
}

bool dequantize_row_avx2(float*, GgmlType, const void*, int64_t) { return false; }

}  // namespace speculum::kernels::detail
