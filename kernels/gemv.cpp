// Run-time dispatch of the fast GEMV/GEMM/dequantize entry points: AVX-512 when the CPU has it (and the type has an
// AVX-512 path), else AVX2+FMA+F16C, else the scalar reference. Single-threaded; no BLAS calls, so no OpenBLAS
// thread settings are involved.
#include "kernels/gemv.h"

#include "kernels/cpu_info.h"
#include "kernels/gemv_detail.h"

#include <atomic>

namespace speculum::kernels {

namespace {

std::atomic<int>& isa_cap() {
    static std::atomic<int> cap{static_cast<int>(KernelIsa::avx512)};
    return cap;
}

}  // namespace

KernelIsa best_kernel_isa() {
    static const KernelIsa best = [] {
        const CpuFeatures& f = cpu_features();
        if (!(f.avx2 && f.fma && f.f16c)) return KernelIsa::scalar;
        if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni) return KernelIsa::avx512;
        return KernelIsa::avx2;
    }();
    return best;
}

KernelIsa kernel_isa() {
    const int cap  = isa_cap().load(std::memory_order_relaxed);
    const int best = static_cast<int>(best_kernel_isa());
    return static_cast<KernelIsa>(cap < best ? cap : best);
}

void set_kernel_isa_cap(KernelIsa cap) {
    isa_cap().store(static_cast<int>(cap), std::memory_order_relaxed);
}

const char* kernel_isa_name(KernelIsa isa) {
    switch (isa) {
        case KernelIsa::avx512:
            return "avx512";
        case KernelIsa::avx2:
            return "avx2";
        default:
            return "scalar";
    }
}

void gemv(float* y, GgmlType t, const void* w, const float* x, int64_t cols, int64_t r0, int64_t r1) {
    gemm(y, 0, t, w, x, 1, cols, r0, r1);
}

void gemm(float* y, int64_t ldy, GgmlType t, const void* w, const float* x, int64_t n, int64_t cols, int64_t r0,
          int64_t r1) {
    detail::check_type_and_cols("gemm", t, cols);
    const KernelIsa isa = kernel_isa();
    if (isa >= KernelIsa::avx512 && detail::gemm_avx512(y, ldy, t, w, x, n, cols, r0, r1)) return;
    if (isa >= KernelIsa::avx2 && detail::gemm_avx2(y, ldy, t, w, x, n, cols, r0, r1)) return;
    gemm_ref(y, ldy, t, w, x, n, cols, r0, r1);
}

void dequantize_row(float* y, GgmlType t, const void* x, int64_t n) {
    detail::check_type_and_cols("dequantize_row", t, n);
    if (kernel_isa() >= KernelIsa::avx2 && detail::dequantize_row_avx2(y, t, x, n)) return;
    detail::dequantize_span_ref(y, t, x, 0, n);
}

// ---- quantized activations ----

bool gemm_prefers_q8act(GgmlType t) {
    return (t == GgmlType::Q8_0 || t == GgmlType::Q4_0 || t == GgmlType::Q4_1 || t == GgmlType::Q5_0 ||
            t == GgmlType::Q5_1 || t == GgmlType::IQ4_NL || t == GgmlType::MXFP4 || t == GgmlType::Q4_K ||
            t == GgmlType::Q5_K || t == GgmlType::IQ4_XS || t == GgmlType::Q6_K || t == GgmlType::Q3_K ||
            t == GgmlType::Q2_K) &&
           kernel_isa() >= KernelIsa::avx512;
}

uint64_t q8act_bytes(int64_t n, int64_t cols) {
    return static_cast<uint64_t>(n) * detail::q8act_vec_bytes(cols);
}

void quantize_q8act(void* xq, const float* x, int64_t n, int64_t cols) {
    detail::check_type_and_cols("quantize_q8act", GgmlType::Q8_0, cols);
    if (kernel_isa() >= KernelIsa::avx512) {
        detail::quantize_q8act_avx512(xq, x, n, cols);
        return;
    }
    quantize_q8act_ref(xq, x, n, cols);
}

void gemm_q8act(float* y, int64_t ldy, GgmlType t, const void* w, const void* xq, int64_t n, int64_t cols, int64_t r0,
                int64_t r1) {
    detail::check_q8act_type("gemm_q8act", t, cols);
    if (kernel_isa() >= KernelIsa::avx512) {
        detail::gemm_q8act_avx512(y, ldy, t, w, xq, n, cols, r0, r1);
        return;
    }
    gemm_q8act_ref(y, ldy, t, w, xq, n, cols, r0, r1);
}

// ---- K-quant activations ----

bool q8act_k_preferred(GgmlType t) {
    return (t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K) && kernel_isa() >= KernelIsa::avx512;
}

uint64_t q8act_k_bytes(int64_t n, int64_t cols) {
    return static_cast<uint64_t>(n) * static_cast<uint64_t>(cols / 256) * sizeof(detail::Q8ActKGroup);
}

void quantize_q8act_k(void* xq, const float* x, int64_t n, int64_t cols) {
    detail::check_type_and_cols("quantize_q8act_k", GgmlType::Q4_K, cols);
    if (kernel_isa() >= KernelIsa::avx512) {
        detail::quantize_q8act_k_avx512(xq, x, n, cols);
        return;
    }
    quantize_q8act_k_ref(xq, x, n, cols);
}

void gemm_q8act_k(float* y, int64_t ldy, GgmlType t, const void* w, const void* xq, int64_t n, int64_t cols, int64_t r0,
                  int64_t r1) {
    detail::check_q8act_k_type("gemm_q8act_k", t, cols);
    if (kernel_isa() >= KernelIsa::avx512) {
        detail::gemm_q8act_k_avx512(y, ldy, t, w, xq, n, cols, r0, r1);
        return;
    }
    gemm_q8act_k_ref(y, ldy, t, w, xq, n, cols, r0, r1);
}

}  // namespace speculum::kernels
