// Internal to the kernels: the layout rules of the compact 16-bit groups that the encoder, the scalar reference and
// the AVX-512 kernels share (not a public API; see compact.h for the format).
#pragma once

#include "kernels/compact.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

namespace speculum::kernels::detail {

// Low-byte fields of a stored 16-bit element: its top w = 8 - trunc_bits bits, as one byte (w = 8), or a nibble
// (bits 7..4, when w >= 4) plus one bit plane per remaining bit (bits 3.. or 7.. down to trunc_bits).
inline int low_width(const CompactFormat& f) {
    return 8 - f.trunc_bits;
}
inline bool low_is_byte(const CompactFormat& f) {
    return low_width(f) == 8;
}
inline bool low_has_nibble(const CompactFormat& f) {
    return low_width(f) >= 4 && low_width(f) < 8;
}
inline int low_planes(const CompactFormat& f) {
    return low_is_byte(f) ? 0 : low_width(f) % 4;
}
inline int plane_bit(const CompactFormat& f, int j) {
    return (low_has_nibble(f) ? 3 : 7) - j;
}

// Bytes of a group's header: the mask (sparse 16-bit rows), none (truncated dense rows), or Q8_0's four scales and
// four masks.
inline uint64_t compact_header_bytes(const CompactFormat& f) {
    return f.dense == GgmlType::Q8_0 ? 4 * (2 + 4) : f.sparse ? 8 : 0;
}
// Bytes of a group's body with k stored elements (16-bit rows: high bytes and low fields; Q8_0: the quants).
inline uint64_t compact_body_bytes(const CompactFormat& f, int64_t stored) {
    const uint64_t k = static_cast<uint64_t>(stored);
    if (f.dense == GgmlType::Q8_0) return k;
    uint64_t lo = low_is_byte(f) ? k : (low_has_nibble(f) ? (k + 1) / 2 : 0);
    lo += static_cast<uint64_t>(low_planes(f)) * ((k + 7) / 8);
    return k + lo;
}
// Bytes of one group with k stored elements: header and body.
inline uint64_t compact_group_bytes(const CompactFormat& f, int64_t stored) {
    return compact_header_bytes(f) + compact_body_bytes(f, stored);
}

// Element order inside a 64-element group. Stored elements go in the order of their position p = 0..63 (mask bit
// p), and position p holds element perm(p) of the group: the order in which the AVX-512 kernel leaves the values, so
// that its four f32 vectors come out as elements 0..15, 16..31, 32..47, 48..63 and the activations are read in their
// natural order, with no shuffles. The kernel interleaves the expanded low and high bytes with vpunpcklbw /
// vpunpckhbw, so position p = 16 l + 8 h + i (i < 8) becomes word j = 8 l + i of register h (A or B).
//   BF16 (word j of a 32-bit lane pair, even words widened by a shift and odd ones by a mask): element
//   32 h + 16 (j % 2) + j / 2.
//   F16 (vcvtph2ps of 16 consecutive words): element 32 h + j.
inline int perm_bf16(int p) {
    const int h = (p / 8) % 2, j = 8 * (p / 16) + p % 8;
    return 32 * h + 16 * (j % 2) + j / 2;
}
inline int perm_f16(int p) {
    const int h = (p / 8) % 2, j = 8 * (p / 16) + p % 8;
    return 32 * h + j;
}
// position -> element of the dense type's order.
inline const std::array<uint8_t, 64>& group_perm(GgmlType dense) {
    static const auto make = [](int (*fn)(int)) {
        std::array<uint8_t, 64> a{};
        for (int p = 0; p < 64; ++p) a[size_t(p)] = static_cast<uint8_t>(fn(p));
        return a;
    };
    static const std::array<uint8_t, 64> bf16 = make(perm_bf16), f16 = make(perm_f16);
    return dense == GgmlType::F16 ? f16 : bf16;
}
// Positions whose element is below n: the mask of a group of n < 64 elements that keeps all of them.
inline uint64_t full_mask(GgmlType dense, int64_t n) {
    if (n >= 64) return ~0ull;
    uint64_t m = 0;
    for (int p = 0; p < 64; ++p)
        if (group_perm(dense)[size_t(p)] < n) m |= 1ull << p;
    return m;
}

// Q8_0 rows: groups of four 32-element blocks (kCompactQ8Blocks), each [4 f16 scales][4 u32 masks] | [quants]; mask k
// covers register k of the int8 kernel's layout: bit 8j + i = element 8k + i of block j (the activations' Q8ActGroup
// order), and its quants follow in that order after those of masks 0..k-1. Blocks past the row's end have scale 0
// and mask 0.
constexpr int kCompactQ8Blocks    = 4;
constexpr int64_t kCompactQ8Group = 32 * kCompactQ8Blocks;  // elements per group
inline int q8_block_of(int k, int pos) {
    return pos / 8;
}  // register k, bit pos -> block
inline int q8_elem_of(int k, int pos) {
    return 8 * k + pos % 8;
}  // -> element of that block

// ---- one row's groups, as the scalar code walks them ----
inline uint64_t header_u64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}
inline int64_t group_size(const CompactFormat& f) {
    return f.dense == GgmlType::Q8_0 ? kCompactQ8Group : kCompactGroup16;
}
inline int64_t n_groups(const CompactFormat& f, int64_t cols) {
    return (cols + group_size(f) - 1) / group_size(f);
}
// Elements of group g of a row of `cols` (the last group may be shorter).
inline int64_t group_elems(const CompactFormat& f, int64_t cols, int64_t g) {
    return std::min(group_size(f), cols - g * group_size(f));
}
// Stored elements of a group of n elements, from its header (16-bit rows that are not sparse store all n).
inline int64_t stored_at(const CompactFormat& f, const uint8_t* hdr, int64_t n) {
    if (f.dense == GgmlType::Q8_0) return std::popcount(header_u64(hdr + 8)) + std::popcount(header_u64(hdr + 16));
    if (f.sparse) return std::popcount(header_u64(hdr));
    return n;
}
// Calls fn(g, header, body, n) for every group of row r, walking its tile's steps; returns the bytes of the row's
// groups.
template <class Fn>
uint64_t walk_row(const CompactMatrix& w, int64_t r, Fn&& fn) {
    const CompactFormat& f = w.format();
    const int64_t t = r / kCompactTileRows, j = r % kCompactTileRows;
    const int64_t rt = w.tile_rows(t), hb = static_cast<int64_t>(compact_header_bytes(f));
    const uint8_t* p = w.tile(t);
    uint64_t own     = 0;
    for (int64_t g = 0; g < n_groups(f, w.cols()); ++g) {
        const int64_t n  = group_elems(f, w.cols(), g);
        const uint8_t* q = p + rt * hb;  // the bodies
        for (int64_t i = 0; i < rt; ++i) {
            const uint8_t* hdr = p + i * hb;
            const uint64_t bb  = compact_body_bytes(f, stored_at(f, hdr, n));
            if (i == j) {
                fn(g, hdr, q, n);
                own += static_cast<uint64_t>(hb) + bb;
            }
            q += bb;
        }
        p = q;
    }
    return own;
}

// AVX-512 kernels (compact_avx512.cpp), used when compact_decoder_vectorized(). Decoders of rows [r0, r1) into
// dense rows; the fused GEMM over 16-bit rows (f32 activations, decoded in registers: no scratch).
bool compact_decode_rows_avx512(void* dst, const CompactMatrix& w, int64_t r0, int64_t r1);
void compact_gemm16_avx512(float* y, int64_t ldy, const CompactMatrix& w, const float* x, int64_t n, int64_t r0,
                           int64_t r1);
// Q8_0 rows against quantized activations (quantize_q8act), decoded in registers: equals gemm_q8act_avx512 on the
// decoded rows bit for bit (the same exact int32 block dots, scaled and summed in the same order).
void compact_gemm_bf16act_avx512(float* y, int64_t ldy, const CompactMatrix& w, const uint16_t* xp, int64_t n,
                                 int64_t r0, int64_t r1);
void compact_gemm_q8act_avx512(float* y, int64_t ldy, const CompactMatrix& w, const void* xq, int64_t n, int64_t r0,
                               int64_t r1);
// Whole 8-row tiles [t0, t1) of a BF16 target kept as draft w + rest (CompactRest) into dense rows.
void compact_rest_decode_tiles_avx512(uint8_t* out, const CompactMatrix& w, const CompactRest& rest, int64_t t0,
                                      int64_t t1);
// compact_pack_bf16act for `groups` whole 64-element groups of one vector: the same words bit for bit.
void compact_pack_bf16act_avx512(uint16_t* xp, const float* x, int64_t groups);

}  // namespace speculum::kernels::detail
