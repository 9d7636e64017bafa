// Compact weight formats for drafts derived from a target (issue #21): a pruned and/or mantissa-truncated matrix
// stored so that a pass reads only what the draft keeps, not a dense copy with zeros and cleared bits in it.
//
//   Each row is a sequence of groups, and each group a header and a body.
//   16-bit rows (F16, BF16), in groups of kCompactGroup16 = 64 elements (the last group of a row may be shorter):
//     header: [presence mask, u64 little-endian] when sparse; none otherwise
//     body:   [high bytes: bits 15..8 of each stored element, k bytes]      k = stored elements of the group
//             [the top w = 8 - trunc_bits bits of each stored element's low byte: the whole byte (w = 8, k bytes);
//              else bits 7..4 as nibbles when w >= 4 (element c in byte c / 2, low nibble first, ceil(k / 2)
//              bytes), then one bit plane per remaining bit, highest first (bit 7 - j, or 3 - j after a nibble),
//              packed LSB-first, ceil(k / 8) bytes each]
//     Elements go in the order of the kernels' registers, not the row's (compact_detail.h, group_perm).
//     A BF16 element with its t low mantissa bits dropped therefore costs 16 - t bits (plus one mask bit when
//     sparse), as Cassandra's draft (paper Sec. 2.5, packed mantissas; bitmap sparsity for unstructured pruning).
//   Q8_0 rows (sparse only), one group per four 32-element blocks (the int8 kernel's activation groups):
//     header: [4 f16 scales][4 u32 presence masks]; body: the stored int8 quants. Mask k covers 8 elements of each
//     block, in the order of the VNNI kernel's register k (compact_detail.h), so the fused kernel expands straight
//     into it.
//   Rows are stored in tiles of kCompactTileRows = 8 (the last tile may have fewer rows). A tile is one contiguous
//   stream that interleaves its rows' groups: for each group index g, the headers of the tile's rows' group g, then
//   their bodies, in row order. A kernel that multiplies a tile's rows together reads memory strictly in order (the
//   hardware prefetchers follow one stream; eight interleaved row streams defeated them), and the headers at the
//   start of a step give every body's offset at once.
// An absent element decodes to +0.0 bits (16-bit types) or q = 0 (Q8_0); with `sparse`, encode() leaves out
// exactly the elements whose bits are +0 (q = 0), so decoding gives back the dense input bit for bit.
//
// Two GEMM paths. 16-bit rows on AVX-512 VBMI2 take a fused kernel: each group is decoded in registers (vpexpandb,
// byte unpacks; the encoder stores a group's elements in the order that leaves them in) and multiplied at
// once, eight rows interleaved; it accumulates the same 16-lane partial sums as the dense AVX-512 kernel (tests hold
// it to kCompactFusedRelTol of sum |w x|), and Q8_0 rows against int8 activations take a fused VNNI kernel equal
// to gemm_q8act on the decoded rows bit for bit. Every other case decodes a tile of rows into caller scratch (L1/L2-
// resident) and runs the dense kernel of the same ISA on it, equal to that kernel on the decoded rows bit for bit.
// Only the compact bytes stream from memory either way. Decoders: scalar `_ref`, and AVX-512 VBMI2 chosen at run
// time. No threads, no allocation in the kernels.
#pragma once

#include "kernels/cpu_info.h"
#include "kernels/ggml_types.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace speculum::kernels {

constexpr int64_t kCompactGroup16  = 64;  // elements per group of a 16-bit row
constexpr int64_t kCompactPad      = 64;  // bytes after the last stream: fast decoders may over-read into them
constexpr int64_t kCompactTileRows = 8;   // rows whose groups one stream interleaves

struct CompactFormat {
    GgmlType dense     = GgmlType::BF16;  // what rows decode to: F16, BF16 or Q8_0
    bool sparse        = false;           // presence masks; zero elements are not stored
    int32_t trunc_bits = 0;               // BF16 only: low mantissa bits not stored (decode as 0), in [0, 7]
    bool operator==(const CompactFormat&) const = default;
    // Throws std::invalid_argument naming the field (Q8_0 must be sparse and untruncated; F16 untruncated; a
    // format that stores everything, neither sparse nor truncated, is refused: it would only cost a decode).
    void validate() const;
};
// "bf16 sparse t4", "q8_0 sparse", "bf16 t3"
const char* compact_dense_name(const CompactFormat& f);

// The compact format for a matrix of `dense` type that was pruned and/or had trunc_bits mantissa bits dropped, or
// nullopt when there is none (other types, or nothing to leave out).
std::optional<CompactFormat> compact_format_for(GgmlType dense, bool pruned, int32_t trunc_bits);

// An immutable (rows, cols) matrix in a compact format: one byte stream per tile of kCompactTileRows rows and the
// tiles' byte offsets.
class CompactMatrix {
public:
    CompactMatrix() = default;
    // dense: (rows, cols) in f.dense, each row ggml_row_size(f.dense, cols) bytes. cols must be a positive multiple
    // of the dense type's block size. With trunc_bits > 0 every element's low trunc_bits must already be 0 (the
    // caller truncated them; std::invalid_argument otherwise, so nothing is silently rounded).
    static CompactMatrix encode(const CompactFormat& f, const void* dense, int64_t rows, int64_t cols);

    const CompactFormat& format() const { return m_format; }
    int64_t rows() const { return m_rows; }
    int64_t cols() const { return m_cols; }
    int64_t tiles() const { return static_cast<int64_t>(m_offsets.size()) - 1; }
    // Tile t's stream (rows [t * kCompactTileRows, + tile_rows(t))).
    const uint8_t* tile(int64_t t) const { return m_data.data() + m_offsets[static_cast<size_t>(t)]; }
    int tile_rows(int64_t t) const {
        return static_cast<int>(std::min<int64_t>(kCompactTileRows, m_rows - t * kCompactTileRows));
    }
    // The bytes of row r's groups (headers and bodies) inside its tile's stream.
    uint64_t row_stream_bytes(int64_t r) const;
    // Every byte one pass over all rows reads: the streams plus each tile's 8-byte offset. What a draft's cost
    // accounting counts (bytes_modeled false).
    uint64_t bytes() const { return m_offsets.back() + 8ull * static_cast<uint64_t>(tiles()); }
    int64_t stored_elements() const { return m_stored; }  // elements present in the streams
    // Bytes of one dense row (ggml_row_size of the dense type).
    uint64_t dense_row_bytes() const { return ggml_row_size(m_format.dense, static_cast<uint64_t>(m_cols)); }

private:
    CompactFormat m_format;
    int64_t m_rows = 0, m_cols = 0, m_stored = 0;
    std::vector<uint64_t> m_offsets{0};  // (tiles + 1) byte offsets of the tile streams
    std::vector<uint8_t> m_data;         // streams, then kCompactPad zero bytes
};

// Bytes of a row's groups, from the stored count of each group (the same formula encode() lays out; the bit
// accounting uses it for drafts not built yet). stored_per_group: (groups) counts; groups of 64 (16-bit) or 32
// (Q8_0) elements, the last possibly shorter.
uint64_t compact_row_stream_bytes(const CompactFormat& f, int64_t cols, const int64_t* stored_per_group);
// Expected bits per element of a matrix whose rows keep a fraction `kept` of their elements spread uniformly over
// the groups (binomial counts per group), the masks, scales and the row's share of its tile's offset included. For
// modeled figures only.
double compact_bits_per_element(const CompactFormat& f, int64_t cols, double kept);

// Decodes rows [r0, r1) into dst: (r1 - r0) dense rows of dense_row_bytes() each. Returns the bytes of those rows'
// groups (the _ref walks the streams and counts; the fast one sums row_stream_bytes). Fast = ref, bit for bit.
uint64_t compact_decode_rows_ref(void* dst, const CompactMatrix& w, int64_t r0, int64_t r1);
uint64_t compact_decode_rows(void* dst, const CompactMatrix& w, int64_t r0, int64_t r1);

// Scratch the GEMMs need per call: a tile of decoded rows.
uint64_t compact_gemm_scratch_bytes(const CompactMatrix& w);

// Y[i][r] = dot(decoded row r, X[i, :]) for i < n, r in [r0, r1) (shapes as kernels::gemm). The _ref equals
// gemm_ref on the decoded rows bit for bit; the fast one equals gemm (same ISA) on them bit for bit, except the
// fused AVX-512 path of 16-bit rows (same products, summed within a named tolerance; see above).
//   scratch: compact_gemm_scratch_bytes(w) bytes, not shared with another thread
void compact_gemm_ref(float* y, int64_t ldy, const CompactMatrix& w, const float* x, int64_t n, int64_t r0, int64_t r1,
                      void* scratch);
void compact_gemm(float* y, int64_t ldy, const CompactMatrix& w, const float* x, int64_t n, int64_t r0, int64_t r1,
                  void* scratch);
// The int8-activation path for Q8_0 rows (xq from quantize_q8act); equals gemm_q8act(_ref) on the decoded rows
// bit for bit. Throws std::invalid_argument for other dense types.
void compact_gemm_q8act_ref(float* y, int64_t ldy, const CompactMatrix& w, const void* xq, int64_t n, int64_t r0,
                            int64_t r1, void* scratch);
void compact_gemm_q8act(float* y, int64_t ldy, const CompactMatrix& w, const void* xq, int64_t n, int64_t r0,
                        int64_t r1, void* scratch);

// BF16 rows times BF16-rounded activations (vdpbf16ps), as the dense BF16 path multiplies them (gemm_bf16.h): two
// products per f32 lane on the words the decoder leaves, so the kernel neither widens the weights nor does a second
// multiply. The activations are packed once per matmul in the pair order of the decoded words: per 64-element group
// g, word 2j = x[64g + j] and 2j + 1 = x[64g + 16 + j], then words 32 + 2j and 33 + 2j = x[64g + 32 + j] and
// x[64g + 48 + j] (j < 16), rounded to BF16 (nearest even); a short last group is padded with zeros.
//   xp: compact_bf16act_words(cols) words per vector, n vectors
// The _ref sums the products in k order in f32 on the decoded rows; the fast kernel in lane pairs (within
// kCompactBf16ActRelTol of the reference, tests/kernels/compact_test.cpp).
bool compact_bf16act_available(const CompactMatrix& w);  // BF16 rows, AVX-512 BF16 and VBMI2 within the kernel cap
// Whether decode and verification passes (below prompt size) of rows in format `f` should take BF16 activations
// rather than the fused f32 kernel, on a CPU from `vendor` (both kernels present). Measured,
// docs/performance-notebook.md (Sessions 20 and 22): on Zen 4 the BF16 kernel was 5-26 % faster for 11 of the 12 sparse
// formats and 4-8 % slower for truncation alone, whose groups need no expand and whose two dependent vdpbf16ps per row
// then bind; on a Sapphire/Emerald Rapids Xeon, which issues vdpbf16ps on one port against two for FMA, it was 0-10 %
// slower in 14 of the 16 formats. So: sparse BF16 formats on AMD; f32 everywhere else. Either choice gives the same
// bytes read.
bool compact_bf16act_preferred(const CompactFormat& f, CpuVendor vendor);
// compact_bf16act_available(w) and compact_bf16act_preferred for this CPU.
bool compact_bf16act_chosen(const CompactMatrix& w);
int64_t compact_bf16act_words(int64_t cols);
void compact_pack_bf16act_ref(uint16_t* xp, const float* x, int64_t n, int64_t cols);
void compact_pack_bf16act(uint16_t* xp, const float* x, int64_t n, int64_t cols);  // the same words, bit for bit
void compact_gemm_bf16act_ref(float* y, int64_t ldy, const CompactMatrix& w, const uint16_t* xp, int64_t n, int64_t r0,
                              int64_t r1, void* scratch);
void compact_gemm_bf16act(float* y, int64_t ldy, const CompactMatrix& w, const uint16_t* xp, int64_t n, int64_t r0,
                          int64_t r1, void* scratch);

// True when this CPU decodes compact rows with vector instructions (AVX-512 VBMI2, VBMI and GFNI), not the scalar
// decoder.
bool compact_decoder_vectorized();

// ---- strict-subset storage (Cassandra's headline, paper Sec. 2.5) ----
// A BF16 target matrix kept as two parts: the draft's own compact matrix (pruned and/or truncated, above) and the
// rest of the target's bits. The draft's pass reads only its part; the target's pass reads both and gets its dense
// rows back bit for bit. The draft then costs no memory beyond the target's.
//   The rest has one stream per tile of kCompactTileRows rows, walked in step with the draft's: for each group g,
//   the rest of each of the tile's rows in row order, namely
//     [high bytes of the elements the draft does not store, in position order]
//     [their low bytes, same order]
//     [the trunc_bits low bits of the elements it stores: when trunc_bits >= 4, bits 3..0 as nibbles (element c in
//      byte c / 2, low nibble first, ceil(k / 2) bytes); then one bit plane per remaining bit, highest first
//      (bits trunc_bits - 1 .. 4, or .. 0 below 4), packed LSB-first, ceil(k / 8) bytes each]
//   Each group's sizes follow from the draft's mask, so the rest has no header. kCompactPad zero bytes follow the
//   streams, as for CompactMatrix.
class CompactRest {
public:
    CompactRest() = default;
    // dense: the target's (rows, cols) BF16 rows. draft: a BF16 compact matrix of the same shape whose stored
    // elements are those rows' elements with their low trunc_bits cleared (its absent ones may be anything). Throws
    // std::invalid_argument naming the first row that breaks this, so a mismatched pair is never stored.
    static CompactRest encode(const CompactMatrix& draft, const void* dense, int64_t rows, int64_t cols);

    int64_t tiles() const { return static_cast<int64_t>(m_offsets.size()) - 1; }
    const uint8_t* tile(int64_t t) const { return m_data.data() + m_offsets[static_cast<size_t>(t)]; }
    // Every byte one pass reads: the streams plus each tile's 8-byte offset (as CompactMatrix::bytes()).
    uint64_t bytes() const { return m_offsets.back() + 8ull * static_cast<uint64_t>(tiles()); }

private:
    std::vector<uint64_t> m_offsets{0};
    std::vector<uint8_t> m_data;
};

// Rows [r0, r1) of the target that draft + rest store, into dst as dense BF16 rows (2 * cols bytes each). Returns the
// bytes of both parts that those rows' groups take. The fast one (AVX-512 VBMI2 for whole tiles) equals the _ref bit
// for bit.
uint64_t compact_rest_decode_rows_ref(void* dst, const CompactMatrix& draft, const CompactRest& rest, int64_t r0,
                                      int64_t r1);
uint64_t compact_rest_decode_rows(void* dst, const CompactMatrix& draft, const CompactRest& rest, int64_t r0,
                                  int64_t r1);

}  // namespace speculum::kernels
