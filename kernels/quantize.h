// Reference (scalar) quantizers from f32 rows into ggml block types: used to write test models and to build
// MXFP4 drafts. Deterministic and slow-ish on purpose; not on the decode path.
#pragma once

#include "kernels/ggml_types.h"
#include "kernels/quant_blocks.h"

#include <cstdint>

namespace speculum::kernels {

// How the MXFP4 direct cast rounds a scaled value onto the E2M1 grid {0, .5, 1, 1.5, 2, 3, 4, 6}.
enum class Fp4Rounding {
    nearest_even,  // ties to the even code (even E2M1 mantissa bit); IEEE-style, our default
    ties_away,     // ties away from zero (microsoft/microxcaling's 'nearest')
    ggml,          // bit-identical to ggml's quantize_row_mxfp4_ref: ties to the smaller magnitude, and the
                   // exponent from floorf(log2f(max)) (clamped to [0, 254] instead of wrapping)
};

// ggml's quantize_row_q8_0_ref: d = amax / 127 (stored f16), q = roundf(x / d).
//   y: (n / 32) blocks;  x: (n) f32;  n a multiple of 32
void quantize_row_q8_0_ref(BlockQ8_0* y, const float* x, int64_t n);

// ggml's quantize_row_q4_0_ref: d = (signed value of largest magnitude) / -8, q = min(15, trunc(x / d + 8.5)).
//   y: (n / 32) blocks;  x: (n) f32;  n a multiple of 32
void quantize_row_q4_0_ref(BlockQ4_0* y, const float* x, int64_t n);

// ggml's quantize_row_q4_1_ref / q5_1_ref: d = (max - min) / 15 (31), m = min (both f16),
// q = trunc((x - min) / d + 0.5) clamped to 15 (31). And q5_0_ref: d = (signed value of largest magnitude) / -16,
// q = min(31, trunc(x / d + 16.5)). The llama.cpp file quantizers search better scales (llama-quantize); these are
// for test data and drafts.
//   y: (n / 32) blocks;  x: (n) f32;  n a multiple of 32
void quantize_row_q4_1_ref(BlockQ4_1* y, const float* x, int64_t n);
void quantize_row_q5_0_ref(BlockQ5_0* y, const float* x, int64_t n);
void quantize_row_q5_1_ref(BlockQ5_1* y, const float* x, int64_t n);
// IQ4_NL the simple way (not llama.cpp's scale search): d = (signed value of largest magnitude) / -127, each element
// to the nearest level of kIq4nlValues (ties to the lower code).
void quantize_row_iq4_nl_ref(BlockIq4Nl* y, const float* x, int64_t n);

// ML-SpecQD / OCP MX direct cast: per 32-element block, E8M0 exponent e = floor(log2 max|v|) - 2 + 127 (so the
// scaled block max lies in [4, 8)), elements v / 2^(e-127) rounded onto E2M1 and clamped to +-6.
//   y: (n / 32) blocks;  x: (n) f32;  n a multiple of 32
// Same exponent rule as ggml's quantize_row_mxfp4_ref, except that we take floor(log2) exactly (ilogb) where
// ggml's floorf(log2f(max)) can come out one higher when max|v| is within about an ulp below a power of two
// >= 8 (log2f rounds up to the integer). Element rounding: ggml differs only on exact ties, which it sends to the
// smaller magnitude (its best_index_mxfp4 keeps the first of equal errors): 0.75 -> 0.5, 1.75 -> 1.5, 3.5 -> 3,
// where nearest-even gives 1, 2, 4. An all-zero block stores e = 0 and all-zero codes (as ggml). Exponents are
// clamped to [0, 254] (0xFF is NaN in E8M0); inf elements clamp to +-6, NaN elements encode as 0. A value that
// rounds to zero gets code 0 (+0), never 8 (-0), again as ggml.
void quantize_row_mxfp4_ref(BlockMxfp4* y, const float* x, int64_t n, Fp4Rounding rounding = Fp4Rounding::nearest_even);

// One row of n f32 values into type t (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4), `ggml_row_size(t,
// n)` bytes at y. Throws std::invalid_argument for other types or when n is not a multiple of the block size.
void quantize_row_ref(void* y, GgmlType t, const float* x, int64_t n);

// E2M1 code (0..15) of one already-scaled value (v / 2^(e-127)); exposed for tests.
uint8_t e2m1_encode(float scaled, Fp4Rounding rounding);

}  // namespace speculum::kernels
