// Run-time dispatch of the fast GEMV/GEMM/dequantize entry points: AVX2+FMA+F16C when the CPU has them,
// else the scalar reference. Single-threaded; no BLAS calls, so no OpenBLAS thread settings are involved.
#include "kernels/gemv.h"

#include "kernels/cpu_info.h"
#include "kernels/gemv_detail.h"

namespace speculum::kernels {

namespace {

bool use_avx2() {
    static const bool ok = [] {
        const CpuFeatures& f = cpu_features();
        return f.avx2 && f.fma && f.f16c;
    }();
    return ok;
}

}  // namespace

void gemv(float* y, GgmlType t, const void* w, const float* x, int64_t cols, int64_t r0, int64_t r1) {
    gemm(y, 0, t, w, x, 1, cols, r0, r1);
}

void gemm(float* y, int64_t ldy, GgmlType t, const void* w, const float* x, int64_t n, int64_t cols, int64_t r0,
          int64_t r1) {
    detail::check_type_and_cols("gemm", t, cols);
    if (use_avx2() && detail::gemm_avx2(y, ldy, t, w, x, n, cols, r0, r1)) return;
    gemm_ref(y, ldy, t, w, x, n, cols, r0, r1);
}

void dequantize_row(float* y, GgmlType t, const void* x, int64_t n) {
    detail::check_type_and_cols("dequantize_row", t, n);
    if (use_avx2() && detail::dequantize_row_avx2(y, t, x, n)) return;
    detail::dequantize_span_ref(y, t, x, 0, n);
}

}  // namespace speculum::kernels
