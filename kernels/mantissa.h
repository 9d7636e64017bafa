// Cassandra mantissa truncation (issue #5): keep the top m = 7 - t of BF16's 7 mantissa bits and zero the low t.
// Pure bit functions, scalar `_ref` plus an AVX2 row version with the same signature. Not quantization: with the
// default toward_zero mode the result is a strict subset of the bits of the BF16 value.
#pragma once

#include <cstdint>

namespace speculum::kernels {

constexpr int kBf16MantissaBits = 7;

enum class MantissaRounding {
    // Cassandra's choice (paper Sec. 2.5 / Fig. 4b): "naive mantissa truncation" keeps the high mantissa bits of
    // the BF16 weight as the draft and zero-pads the truncated bits, so the draft is a strict subset of the target's
    // bits. Rounds toward zero in magnitude; the default.
    toward_zero,
    // Round to nearest, ties to even at the kept LSB: the closest value with t zero low bits. A carry may bump the
    // exponent (and the largest finite values may round to inf). Not a subset of the target's bits.
    nearest_even,
};

// One value: f32 (any, e.g. an activation or a BF16 weight widened to f32) -> bf16 bits whose low t mantissa bits
// are 0, in ONE rounding step (no double rounding through bf16). t in [0, 7]; t = 0 is f32 -> bf16 in that mode,
// the identity on values already representable in bf16. +-0, +-inf and subnormals follow the same bit rule (a
// subnormal can round toward 0 or up to the smallest normal); NaN stays NaN: the result is the quiet NaN
// sign | 0x7FC0 for every t, the one case where the low bits are not all zero (with t = 7 no NaN has them).
uint16_t truncate_mantissa_bf16(float v, int t, MantissaRounding mode = MantissaRounding::toward_zero);

// The same on bf16 bits (bf16 -> bf16).
uint16_t truncate_mantissa_bf16_bits(uint16_t h, int t, MantissaRounding mode = MantissaRounding::toward_zero);

// Rows: out[i] = truncate_mantissa_bf16(in[i], t, mode) for i < n.
//   out: (n) bf16 bits;  in: (n) f32
void truncate_mantissa_row_bf16_ref(uint16_t* out, const float* in, int64_t n, int t,
                                    MantissaRounding mode = MantissaRounding::toward_zero);
void truncate_mantissa_row_bf16(uint16_t* out, const float* in, int64_t n, int t,
                                MantissaRounding mode = MantissaRounding::toward_zero);

// Rows on bf16 storage (in place allowed: out == in).
//   out: (n) bf16 bits;  in: (n) bf16 bits
void truncate_mantissa_row_bf16_bits_ref(uint16_t* out, const uint16_t* in, int64_t n, int t,
                                         MantissaRounding mode = MantissaRounding::toward_zero);
void truncate_mantissa_row_bf16_bits(uint16_t* out, const uint16_t* in, int64_t n, int t,
                                     MantissaRounding mode = MantissaRounding::toward_zero);

}  // namespace speculum::kernels
