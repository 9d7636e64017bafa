// Matrix-vector and small matrix-matrix products with weights in any supported GGUF type and f32 activations.
// Single-threaded over a row range [r0, r1): callers (core) split rows across threads. No allocation.
//   W: (rows, cols) row-major, each row `ggml_row_size(t, cols)` bytes, stored in type t
//   x: (cols) f32;   X: (n, cols) f32 row-major;   y: (rows) f32;   Y: (n, ldy) f32 row-major, writes Y[i][r0..r1)
// `_ref` versions are scalar and define the numerics; the fast versions take AVX-512 or AVX2+FMA+F16C paths when
// cpu_features() has them (scalar fallback otherwise; see kernel_isa()).
// gemv/gemm keep activations f32 (exact activations): fast paths decode the exact dequantized weights and differ
// from `_ref` only in f32 summation order; dequantize_row is bit-exact with the reference. The separate integer-dot
// path below (gemm_q8act) quantizes activations to int8 and is chosen by the caller.
// No BLAS calls and no threads: safe to call concurrently from any number of worker threads.
// Unsupported types, or cols not a multiple of the type's block size, throw std::invalid_argument.
#pragma once

#include "kernels/ggml_types.h"

#include <cstdint>

namespace speculum::kernels {

// Instruction sets of the fast paths, weakest first. avx512 needs AVX-512 F, BW, VL, DQ and VNNI (Zen 4, Ice Lake
// and later); avx2 needs AVX2, FMA and F16C.
enum class KernelIsa { scalar, avx2, avx512 };

// The instruction set the fast kernels use now: the best this CPU supports, lowered by any cap set below.
KernelIsa kernel_isa();
// The best instruction set this CPU supports (ignores the cap).
KernelIsa best_kernel_isa();
// Process-wide cap, e.g. to test or time the AVX2 path on an AVX-512 machine. Set it while no kernel runs.
void set_kernel_isa_cap(KernelIsa cap);
const char* kernel_isa_name(KernelIsa isa);  // "scalar", "avx2", "avx512"

// True when gemv/gemm/dequantize support weights of type t (F32, F16, BF16, Q8_0, Q4_0, MXFP4, Q4_K, Q6_K, and the
// in-memory Q8_0_X8).
bool kernels_support(GgmlType t);

// y[r] = dot(W[r, :], x) for r in [r0, r1)
void gemv_ref(float* y, GgmlType t, const void* w, const float* x, int64_t cols, int64_t r0, int64_t r1);
void gemv(float* y, GgmlType t, const void* w, const float* x, int64_t cols, int64_t r0, int64_t r1);

// Y[i][r] = dot(W[r, :], X[i, :]) for i < n, r in [r0, r1). Each weight row is read once for all n vectors,
// so a batched verification of n tokens costs about one pass over the weights.
void gemm_ref(float* y, int64_t ldy, GgmlType t, const void* w, const float* x, int64_t n, int64_t cols, int64_t r0,
              int64_t r1);
void gemm(float* y, int64_t ldy, GgmlType t, const void* w, const float* x, int64_t n, int64_t cols, int64_t r0,
          int64_t r1);

// ---- integer-dot path with quantized activations (Q8_0, Q4_0 and MXFP4 weights) ----
// Each activation vector is quantized once per matmul to blocks of 32 int8 values with one f32 scale per block
// (ggml's q8_0 activation scheme: d = max|x| / 127, q = round-to-nearest-even(x / d)); a weight block times an
// activation block is then an exact int32 dot scaled by both block scales (AVX-512 VNNI vpdpbusd). Against the f32
// activation reference this adds, per dot, at most sum over blocks b of d_b / 2 * sum_{j in b} |w_j| (round to
// nearest), plus f32 summation order. Callers choose it (core does for decode and small batches when
// gemm_prefers_q8act says so); gemv/gemm stay exact-activation.
//   xq: the quantized activations, an opaque buffer of q8act_bytes(n, cols) bytes (n vectors of `cols`)

// True when t has an integer-dot kernel that is faster than gemm on this CPU (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL,
// MXFP4, the K-quants Q2_K .. Q6_K and IQ4_XS at KernelIsa::avx512).
bool gemm_prefers_q8act(GgmlType t);
// Bytes of the quantized-activation buffer for n vectors of cols (cols a multiple of 32).
uint64_t q8act_bytes(int64_t n, int64_t cols);
// xq = the n vectors of X (n, cols) f32 row-major, quantized. The fast version is bit-identical to the reference.
void quantize_q8act_ref(void* xq, const float* x, int64_t n, int64_t cols);
void quantize_q8act(void* xq, const float* x, int64_t n, int64_t cols);
// Y[i][r] = dot(W[r, :], dequantized xq vector i) for i < n, r in [r0, r1); t must be Q8_0, Q4_0 or MXFP4 (each
// weight block is an int8 block times its scale: q4_0 nibble - 8, mxfp4 doubled E2M1 value times half the scale).
void gemm_q8act_ref(float* y, int64_t ldy, GgmlType t, const void* w, const void* xq, int64_t n, int64_t cols,
                    int64_t r0, int64_t r1);
void gemm_q8act(float* y, int64_t ldy, GgmlType t, const void* w, const void* xq, int64_t n, int64_t cols, int64_t r0,
                int64_t r1);

// ---- repacked Q8_0 (GgmlType::Q8_0_X8, in memory only) for the int8 batched pass ----
// Q8_0 rows whose length is a multiple of 256 can be repacked (same bytes, see BlockQ8_0x8) so that the AVX-512
// VNNI kernel multiplies 8 blocks per 32-byte register and scales 8 block sums with one conversion and one FMA: the
// batched (verification) pass does about a third less pipe work than gemm_q8act on Q8_0. The activations use
// their own layout (q8act_x8_bytes; same quantization as quantize_q8act, so the block dots are the same exact
// int32 sums and only the f32 summation order differs from gemm_q8act_ref on the unpacked rows).
// gemv/gemm/dequantize_row accept Q8_0_X8 too (reference speed). docs/performance.md has the measurements.

// True when this CPU has the fast Q8_0_X8 kernel (KernelIsa::avx512); repacking elsewhere only costs speed.
bool q8_0_x8_preferred();
// dst (rows, cols) Q8_0_X8 = src (rows, cols) Q8_0, and back, bit-exact both ways. cols a multiple of 256, else
// std::invalid_argument. dst and src must not overlap.
void repack_q8_0_x8(void* dst, const void* src, int64_t rows, int64_t cols);
void unpack_q8_0_x8(void* dst, const void* src, int64_t rows, int64_t cols);
// Bytes of the activation buffer for n vectors of cols (a multiple of 256).
uint64_t q8act_x8_bytes(int64_t n, int64_t cols);
// xq = X (n, cols) quantized as quantize_q8act does, in the Q8_0_X8 activation layout. Fast = reference, bit for bit.
void quantize_q8act_x8_ref(void* xq, const float* x, int64_t n, int64_t cols);
void quantize_q8act_x8(void* xq, const float* x, int64_t n, int64_t cols);
// Y[i][r] = dot(W[r, :], dequantized xq vector i) for i < n, r in [r0, r1); W is (rows, cols) Q8_0_X8.
void gemm_q8act_x8_ref(float* y, int64_t ldy, const void* w, const void* xq, int64_t n, int64_t cols, int64_t r0,
                       int64_t r1);
void gemm_q8act_x8(float* y, int64_t ldy, const void* w, const void* xq, int64_t n, int64_t cols, int64_t r0,
                   int64_t r1);

// ---- K-quant weights (Q4_K, Q5_K, Q6_K) with int8 activations in 512-bit registers ----
// The super-block formats of the *_K_M files, in the file's layout: a 512-bit register holds 8 bytes of each of a
// super-block's eight 32-element blocks, so one vpdpbusd does twice the work of gemm_q8act's 256-bit ones and each
// row's super-block is decoded once for every vector of the pass. The activations have their own layout
// (q8act_k_bytes; the same quantization as quantize_q8act, so every block dot is the same exact int32 sum) with the
// row-independent terms computed once. Every batch size sums a row's terms in the same order, so a batched pass
// equals one vector at a time bit for bit (greedy speculative decoding stays lossless). docs/performance.md has the
// measurements.

// True when t is Q4_K, Q5_K or Q6_K and this CPU has the kernel (KernelIsa::avx512).
bool q8act_k_preferred(GgmlType t);
// Bytes of the activation buffer for n vectors of cols (a multiple of 256).
uint64_t q8act_k_bytes(int64_t n, int64_t cols);
// xq = X (n, cols) quantized as quantize_q8act does, in the K layout with its terms. Fast = reference, bit for bit.
void quantize_q8act_k_ref(void* xq, const float* x, int64_t n, int64_t cols);
void quantize_q8act_k(void* xq, const float* x, int64_t n, int64_t cols);
// Y[i][r] = dot(W[r, :], dequantized xq vector i) for i < n, r in [r0, r1); W is (rows, cols) of type t (Q4_K,
// Q5_K or Q6_K), else std::invalid_argument. The reference sums as gemm_q8act_ref does.
void gemm_q8act_k_ref(float* y, int64_t ldy, GgmlType t, const void* w, const void* xq, int64_t n, int64_t cols,
                      int64_t r0, int64_t r1);
void gemm_q8act_k(float* y, int64_t ldy, GgmlType t, const void* w, const void* xq, int64_t n, int64_t cols, int64_t r0,
                  int64_t r1);

// y[0..n) = the n elements of one row of type t, as f32 (n a multiple of the type's block size).
void dequantize_row_ref(float* y, GgmlType t, const void* x, int64_t n);
void dequantize_row(float* y, GgmlType t, const void* x, int64_t n);

}  // namespace speculum::kernels
