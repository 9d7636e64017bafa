// Scalar IEEE half (f16) and bfloat16 (bf16) <-> f32 conversions, bit exact, with no CPU-specific instructions.
// f32 -> f16/bf16 round to nearest, ties to even; NaN stays a (quiet) NaN; subnormals are kept, not flushed.
#pragma once

#include <cstdint>
#include <cstring>

namespace speculum::kernels {

inline uint32_t f32_to_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

inline float f32_from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

// f16 bits -> f32 (exact: every f16 value is an f32 value).
inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp  = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        // zero or subnormal: mant * 2^-24, exact in f32
        const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
        return f32_from_bits(f32_to_bits(v) | sign);
    }
    if (exp == 31) return f32_from_bits(sign | 0x7f800000u | (mant << 13));  // inf, NaN (payload kept)
    return f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
}

// f32 -> f16 bits, round to nearest even; overflow gives inf; NaN gives a quiet NaN with the high payload bits.
inline uint16_t f32_to_f16(float f) {
    const uint32_t u    = f32_to_bits(f);
    const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
    uint32_t a          = u & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN
    if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf (or is inf)
    if (a < 0x38800000u) {
        // Below the smallest f16 normal (2^-14): adding 0.5f aligns the value to multiples of 2^-24 (the f16
        // subnormal step); the FPU's round-to-nearest-even does the rounding. Result may be 0x400 (= 2^-14).
        const float r = f32_from_bits(a) + 0.5f;
        return static_cast<uint16_t>(sign | (f32_to_bits(r) - 0x3f000000u));
    }
    const uint32_t odd = (a >> 13) & 1u;
    a += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + odd;  // rebias; add half-ulp minus tie breaker
    return static_cast<uint16_t>(sign | (a >> 13));
}

// bf16 bits -> f32 (exact).
inline float bf16_to_f32(uint16_t h) {
    return f32_from_bits(static_cast<uint32_t>(h) << 16);
}

// f32 -> bf16 bits, round to nearest even; overflow gives inf; NaN gives a quiet NaN (never turns into inf).
inline uint16_t f32_to_bf16(float f) {
    const uint32_t u = f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
    const uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>((u + rounding_bias) >> 16);
}

}  // namespace speculum::kernels
