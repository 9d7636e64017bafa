// Q8_0_X8, the in-memory repacked Q8_0 layout: repacking and unpacking, the scalar reference of its activation
// quantization and integer-dot GEMM, and the run-time dispatch to the AVX-512 VNNI kernels (gemv_q8x8_avx512.cpp).
// The reference sums exactly what gemm_q8act_ref sums on the unpacked rows, in the same order, so the two agree
// bit for bit; the fast kernel differs from both only in f32 summation order.
#include "kernels/gemv.h"

#include "kernels/fp16.h"
#include "kernels/gemv_detail.h"
#include "kernels/quant_blocks.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace speculum::kernels {

namespace detail {

void check_q8_0_x8_cols(const char* who, int64_t cols) {
    if (cols <= 0 || cols % kQK8_0x8 != 0)
        throw std::invalid_argument(std::string(who) + ": " + std::to_string(cols) +
                                    " columns is not a positive multiple of 256 (the q8_0_x8 block)");
}

}  // namespace detail

bool q8_0_x8_preferred() {
    return kernel_isa() >= KernelIsa::avx512;
}

void repack_q8_0_x8(void* dst, const void* src, int64_t rows, int64_t cols) {
    detail::check_q8_0_x8_cols("repack_q8_0_x8", cols);
    const auto* in  = static_cast<const BlockQ8_0*>(src);
    auto* out       = static_cast<BlockQ8_0x8*>(dst);
    const int64_t n = rows * (cols / kQK8_0x8);  // super-blocks; rows are whole numbers of them
    for (int64_t s = 0; s < n; ++s)
        for (int j = 0; j < 8; ++j) {
            const BlockQ8_0& b = in[8 * s + j];
            out[s].d[j]        = b.d;
            for (int m = 0; m < kQK8_0; ++m) out[s].qs[q8_0_x8_index(j, m)] = static_cast<uint8_t>(b.qs[m] + 128);
        }
}

void unpack_q8_0_x8(void* dst, const void* src, int64_t rows, int64_t cols) {
    detail::check_q8_0_x8_cols("unpack_q8_0_x8", cols);
    const auto* in  = static_cast<const BlockQ8_0x8*>(src);
    auto* out       = static_cast<BlockQ8_0*>(dst);
    const int64_t n = rows * (cols / kQK8_0x8);
    for (int64_t s = 0; s < n; ++s)
        for (int j = 0; j < 8; ++j) {
            BlockQ8_0& b = out[8 * s + j];
            b.d          = in[s].d[j];
            for (int m = 0; m < kQK8_0; ++m) b.qs[m] = static_cast<int8_t>(in[s].qs[q8_0_x8_index(j, m)] - 128);
        }
}

uint64_t q8act_x8_bytes(int64_t n, int64_t cols) {
    return static_cast<uint64_t>(n) * static_cast<uint64_t>(cols / kQK8_0x8) * sizeof(detail::Q8ActX8Group);
}

void quantize_q8act_x8_ref(void* xq, const float* x, int64_t n, int64_t cols) {
    detail::check_q8_0_x8_cols("quantize_q8act_x8", cols);
    for (int64_t i = 0; i < n; ++i) {
        auto* groups = const_cast<detail::Q8ActX8Group*>(detail::q8act_x8_vec(xq, i, cols));
        for (int64_t g = 0; g < cols / kQK8_0x8; ++g)
            for (int j = 0; j < 8; ++j) {
                int8_t q[detail::kQ8ActBlock];
                int32_t sum      = 0;
                groups[g].d[j]   = detail::quantize_block_q8act_ref(x + i * cols + g * kQK8_0x8 + j * kQK8_0, q, &sum);
                groups[g].off[j] = -128 * sum;
                for (int m = 0; m < kQK8_0; ++m) groups[g].q[q8_0_x8_index(j, m)] = q[m];
            }
    }
}

void gemm_q8act_x8_ref(float* y, int64_t ldy, const void* w, const void* xq, int64_t n, int64_t cols, int64_t r0,
                       int64_t r1) {
    detail::check_q8_0_x8_cols("gemm_q8act_x8", cols);
    const int64_t ng = cols / kQK8_0x8;
    for (int64_t r = r0; r < r1; ++r) {
        const BlockQ8_0x8* row = static_cast<const BlockQ8_0x8*>(w) + r * ng;
        for (int64_t i = 0; i < n; ++i) {
            const detail::Q8ActX8Group* groups = detail::q8act_x8_vec(xq, i, cols);
            float sum                          = 0.0f;
            for (int64_t g = 0; g < ng; ++g)
                for (int j = 0; j < 8; ++j) {  // blocks in row order, as gemm_q8act_ref
                    int32_t isum = 0;          // exact: |isum| <= 32 * 128 * 127
                    for (int m = 0; m < kQK8_0; ++m) {
                        const int k = q8_0_x8_index(j, m);
                        isum += (row[g].qs[k] - 128) * groups[g].q[k];
                    }
                    sum += f16_to_f32(row[g].d[j]) * groups[g].d[j] * static_cast<float>(isum);
                }
            y[i * ldy + r] = sum;
        }
    }
}

void quantize_q8act_x8(void* xq, const float* x, int64_t n, int64_t cols) {
    detail::check_q8_0_x8_cols("quantize_q8act_x8", cols);
    if (kernel_isa() >= KernelIsa::avx512) {
        detail::quantize_q8act_x8_avx512(xq, x, n, cols);
        return;
    }
    quantize_q8act_x8_ref(xq, x, n, cols);
}

void gemm_q8act_x8(float* y, int64_t ldy, const void* w, const void* xq, int64_t n, int64_t cols, int64_t r0,
                   int64_t r1) {
    detail::check_q8_0_x8_cols("gemm_q8act_x8", cols);
    if (kernel_isa() >= KernelIsa::avx512) {
        detail::gemm_q8act_x8_avx512(y, ldy, w, xq, n, cols, r0, r1);
        return;
    }
    gemm_q8act_x8_ref(y, ldy, w, xq, n, cols, r0, r1);
}

}  // namespace speculum::kernels
