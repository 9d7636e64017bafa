// Quantized block layouts, bit for bit those of ggml (ggml-common.h), so GGUF files from llama.cpp load as is.
// Only layouts and tiny decode helpers live here; the kernels that use them are in gemv*.cpp / quantize.cpp.
#pragma once

#include <cstdint>
#include <cstring>

namespace speculum::kernels {

constexpr int kQK8_0      = 32;   // elements per Q8_0 block
constexpr int kQK4_0      = 32;   // elements per Q4_0 block
constexpr int kQKMxfp4    = 32;   // elements per MXFP4 block
constexpr int kQK_K       = 256;  // elements per K-quant super-block
constexpr int kKScaleSize = 12;   // bytes of packed 6-bit scales/mins in Q4_K

// value = qs[j] * d
struct BlockQ8_0 {
    uint16_t d;         // f16 scale
    int8_t qs[kQK8_0];  // quants
};
static_assert(sizeof(BlockQ8_0) == 2 + kQK8_0, "wrong q8_0 block size/padding");

// element j (j < 16) in the low nibble of qs[j], element j + 16 in its high nibble; value = (q - 8) * d
struct BlockQ4_0 {
    uint16_t d;              // f16 scale
    uint8_t qs[kQK4_0 / 2];  // nibbles
};
static_assert(sizeof(BlockQ4_0) == 2 + kQK4_0 / 2, "wrong q4_0 block size/padding");

// Nibble order as Q4_0; value = q * d + m (q in 0..15).
struct BlockQ4_1 {
    uint16_t d, m;           // f16 scale and minimum
    uint8_t qs[kQK4_0 / 2];  // nibbles
};
static_assert(sizeof(BlockQ4_1) == 4 + kQK4_0 / 2, "wrong q4_1 block size/padding");

// Nibble order as Q4_0, plus a fifth bit per element: bit j of qh (a little-endian u32) is bit 4 of element j.
// Q5_0: value = (q - 16) * d; Q5_1: value = q * d + m (q in 0..31).
struct BlockQ5_0 {
    uint16_t d;              // f16 scale
    uint8_t qh[4];           // fifth bits
    uint8_t qs[kQK4_0 / 2];  // low nibbles
};
static_assert(sizeof(BlockQ5_0) == 2 + 4 + kQK4_0 / 2, "wrong q5_0 block size/padding");
struct BlockQ5_1 {
    uint16_t d, m;           // f16 scale and minimum
    uint8_t qh[4];           // fifth bits
    uint8_t qs[kQK4_0 / 2];  // low nibbles
};
static_assert(sizeof(BlockQ5_1) == 4 + 4 + kQK4_0 / 2, "wrong q5_1 block size/padding");
inline uint32_t q5_high_bits(const uint8_t qh[4]) {
    uint32_t h;
    std::memcpy(&h, qh, 4);
    return h;
}

// Non-linear 4-bit: nibble order as Q4_0; value = kIq4nlValues[code] * d.
struct BlockIq4Nl {
    uint16_t d;              // f16 scale
    uint8_t qs[kQK4_0 / 2];  // codes
};
static_assert(sizeof(BlockIq4Nl) == 2 + kQK4_0 / 2, "wrong iq4_nl block size/padding");
// ggml's kvalues_iq4nl: the 16 levels of IQ4_NL and IQ4_XS.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// OCP MX FP4: E8M0 shared exponent e (scale 2^(e-127)) and E2M1 codes, nibble order as Q4_0.
// value = kMxfp4Values[code] * e8m0_to_f32_half(e)   (the table holds doubled E2M1 values, hence "half")
struct BlockMxfp4 {
    uint8_t e;                 // E8M0 exponent, bias 127
    uint8_t qs[kQKMxfp4 / 2];  // E2M1 codes: sign bit 3, exponent bits 2..1, mantissa bit 0
};
static_assert(sizeof(BlockMxfp4) == 1 + kQKMxfp4 / 2, "wrong mxfp4 block size/padding");

// Q8_0_X8 (in memory only, never in a file): 8 consecutive Q8_0 blocks of a row repacked so that the AVX-512 VNNI
// kernels need no rearranging: 32-bit lane j of every 32-byte run holds 4 quants of block j, and the 8 scales sit
// together. Byte 32 k + 4 j + i of qs is element 4 k + i of block j, stored + 128 (vpdpbusd's unsigned operand).
// value of element 32 j + m = (qs[32 (m / 4) + 4 j + m % 4] - 128) * d[j]. Same bytes per element as Q8_0.
constexpr int kQK8_0x8 = 8 * kQK8_0;  // elements per Q8_0_X8 block
struct BlockQ8_0x8 {
    uint16_t d[8];         // f16 scales of the 8 blocks
    uint8_t qs[kQK8_0x8];  // quants + 128, interleaved as above
};
static_assert(sizeof(BlockQ8_0x8) == 8 * sizeof(BlockQ8_0), "wrong q8_0_x8 block size/padding");
inline constexpr int q8_0_x8_index(int j, int m) {
    return 32 * (m / 4) + 4 * j + m % 4;
}

// Q4_K super-block: 8 sub-blocks of 32, each with a 6-bit scale and 6-bit min packed in `scales`;
// value = d * sc * q - dmin * m, q in 0..15.
struct BlockQ4_K {
    uint16_t d;                   // f16 super-block scale for the quantized scales
    uint16_t dmin;                // f16 super-block scale for the quantized mins
    uint8_t scales[kKScaleSize];  // 6-bit scales and mins
    uint8_t qs[kQK_K / 2];        // 4-bit quants
};
static_assert(sizeof(BlockQ4_K) == 2 * 2 + kKScaleSize + kQK_K / 2, "wrong q4_K block size/padding");

// Q6_K super-block: 16 sub-blocks of 16 with int8 scales; value = d * scales[s] * (q - 32), q in 0..63.
struct BlockQ6_K {
    uint8_t ql[kQK_K / 2];      // quants, lower 4 bits
    uint8_t qh[kQK_K / 4];      // quants, upper 2 bits
    int8_t scales[kQK_K / 16];  // 8-bit sub-block scales
    uint16_t d;                 // f16 super-block scale
};
static_assert(sizeof(BlockQ6_K) == kQK_K / 2 + kQK_K / 4 + kQK_K / 16 + 2, "wrong q6_K block size/padding");

// E2M1 code -> 2 * value (ggml's kvalues_mxfp4): 0, 0.5, 1, 1.5, 2, 3, 4, 6 doubled; codes 8..15 negative.
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// E8M0 exponent byte -> 2^(e-127) / 2 (ggml's GGML_E8M0_TO_FP32_HALF; e = 0 and 1 give f32 subnormals).
// 0xFF (NaN in OCP MX) is not special-cased, like ggml.
inline float e8m0_to_f32_half(uint8_t e) {
    const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// Q4_K: 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes (ggml's get_scale_min_k4).
inline void q4_k_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m  = q[j + 4] & 63;
    } else {
        *sc = static_cast<uint8_t>((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
        *m  = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// Q5_K super-block: Q4_K's scales and nibbles plus a fifth bit: bit s of qh[l] (l < 32) is bit 4 of element
// 32 s + l; value = d * sc * q - dmin * m, q in 0..31.
struct BlockQ5_K {
    uint16_t d, dmin;             // f16 super-block scales
    uint8_t scales[kKScaleSize];  // 6-bit scales and mins, packed as Q4_K's
    uint8_t qh[kQK_K / 8];        // fifth bits
    uint8_t qs[kQK_K / 2];        // low nibbles: sub-blocks 2g and 2g + 1 in the low and high nibbles of qs[32 g ..]
};
static_assert(sizeof(BlockQ5_K) == 4 + kKScaleSize + kQK_K / 8 + kQK_K / 2, "wrong q5_K block size/padding");

// Q3_K super-block: 16 sub-blocks of 16 with 6-bit scales (packed in 12 bytes, stored + 32); 2-bit quants, four per
// byte of qs, and a high bit in hmask whose absence subtracts 4. Element 128 n + 32 j + l (l < 32): bits 2j of
// qs[32 n + l], bit 4n + j of hmask[l]; sub-block 8 n + 2 j + l / 16. value = d * (sc - 32) * (q - (h ? 0 : 4)).
struct BlockQ3_K {
    uint8_t hmask[kQK_K / 8];
    uint8_t qs[kQK_K / 4];
    uint8_t scales[12];
    uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == kQK_K / 8 + kQK_K / 4 + 12 + 2, "wrong q3_K block size/padding");
// The 16 scales of a Q3_K super-block (each - 32), unpacked as ggml does: low nibbles from bytes 0..7, high 2-bit
// pairs from bytes 8..11.
inline void q3_k_scales(const uint8_t packed[12], int8_t out[16]) {
    for (int i = 0; i < 16; ++i) {
        const int low  = i < 8 ? packed[i] & 0x0f : packed[i - 8] >> 4;
        const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
        out[i]         = static_cast<int8_t>((low | (high << 4)) - 32);
    }
}

// Q2_K super-block: 16 sub-blocks of 16, each a 4-bit scale (low nibble) and a 4-bit min (high nibble); 2-bit quants
// laid out as Q3_K's. value = d * (sc & 15) * q - dmin * (sc >> 4).
struct BlockQ2_K {
    uint8_t scales[kQK_K / 16];
    uint8_t qs[kQK_K / 4];
    uint16_t d, dmin;
};
static_assert(sizeof(BlockQ2_K) == kQK_K / 16 + kQK_K / 4 + 4, "wrong q2_K block size/padding");

// IQ4_XS super-block: 8 sub-blocks of 32 with 6-bit scales (low nibble in scales_l, two high bits in scales_h, stored
// + 32), codes into kIq4nlValues in IQ4_NL's nibble order. value = d * (ls - 32) * kIq4nlValues[code].
struct BlockIq4Xs {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[kQK_K / 64];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockIq4Xs) == 4 + kQK_K / 64 + kQK_K / 2, "wrong iq4_xs block size/padding");
inline int iq4_xs_scale(const BlockIq4Xs& b, int ib) {
    return (((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f) | (((b.scales_h >> (2 * ib)) & 3) << 4)) - 32;
}

}  // namespace speculum::kernels
