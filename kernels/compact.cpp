// Compact draft formats: validation, encoding, the scalar reference decoder and the GEMM dispatch (see compact.h).
#include "kernels/compact.h"
#include "kernels/fp16.h"
#include "kernels/gemm_bf16.h"

#include "kernels/compact_detail.h"

#include "kernels/cpu_info.h"
#include "kernels/gemv.h"
#include "kernels/quant_blocks.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace speculum::kernels {

// ---- group decoders and tiling ----

namespace {

constexpr int64_t kTileRows = kCompactTileRows;  // rows decoded per dense-kernel call: one stream tile

bool is16(GgmlType t) {
    return t == GgmlType::F16 || t == GgmlType::BF16;
}
using detail::group_size;
using detail::n_groups;
using detail::walk_row;
uint64_t group_bytes(const CompactFormat& f, int64_t stored) {
    return detail::compact_group_bytes(f, stored);
}

// One 16-bit group of `n` elements (n <= 64) into out (n dense 16-bit values), from its header and body.
void decode_group16_ref(uint16_t* out, const uint8_t* hdr, const uint8_t* body, int64_t n, const CompactFormat& f) {
    const uint64_t mask = f.sparse ? detail::header_u64(hdr) : detail::full_mask(f.dense, n);
    const int64_t k     = std::popcount(mask);
    const uint8_t* hi   = body;
    const uint8_t* lo   = body + k;  // the byte or nibble field
    const uint8_t* pl   = lo + (detail::low_is_byte(f) ? k : detail::low_has_nibble(f) ? (k + 1) / 2 : 0);
    const int64_t pb    = (k + 7) / 8;  // bytes per plane
    const auto& perm    = detail::group_perm(f.dense);
    for (int64_t e = 0; e < n; ++e) out[e] = 0;
    int64_t c = 0;  // index among the stored elements
    for (int pos = 0; pos < 64; ++pos) {
        if (!((mask >> pos) & 1u)) continue;
        uint32_t low = 0;
        if (detail::low_is_byte(f)) low = lo[c];
        if (detail::low_has_nibble(f)) low = static_cast<uint32_t>((lo[c / 2] >> (4 * (c % 2))) & 0xFu) << 4;
        for (int j = 0; j < detail::low_planes(f); ++j)
            low |= static_cast<uint32_t>((pl[j * pb + c / 8] >> (c % 8)) & 1u) << detail::plane_bit(f, j);
        out[perm[size_t(pos)]] = static_cast<uint16_t>(static_cast<uint32_t>(hi[c]) << 8 | low);
        ++c;
    }
}

// One Q8_0 group of four blocks into out (the blocks below `blocks` are written), from its header and body.
void decode_group_q8_ref(BlockQ8_0* out, const uint8_t* hdr, const uint8_t* body, int64_t blocks) {
    uint32_t mask[4];
    std::memcpy(mask, hdr + 8, 16);
    const auto* q = reinterpret_cast<const int8_t*>(body);
    int64_t c     = 0;
    for (int64_t j = 0; j < blocks; ++j) {
        std::memcpy(&out[j].d, hdr + 2 * j, 2);
        std::memset(out[j].qs, 0, sizeof out[j].qs);
    }
    for (int k = 0; k < 4; ++k)
        for (int pos = 0; pos < 32; ++pos) {
            if (!((mask[k] >> pos) & 1u)) continue;
            const int j = detail::q8_block_of(k, pos);
            if (j < blocks) out[j].qs[detail::q8_elem_of(k, pos)] = q[c];
            ++c;
        }
}

// Encodes one row: per group its header (header_bytes each, appended to hdr) and body (appended to body, group g
// from boff[g] to boff[g + 1]). Returns the stored elements.
int64_t encode_row(const CompactFormat& f, const uint8_t* row, int64_t r, int64_t cols, std::vector<uint8_t>& hdr,
                   std::vector<uint8_t>& body, std::vector<uint64_t>& boff) {
    int64_t stored = 0;
    boff.assign(1, 0);
    if (f.dense == GgmlType::Q8_0) {
        const int64_t blocks = cols / kQK8_0;
        for (int64_t b0 = 0; b0 < blocks; b0 += detail::kCompactQ8Blocks) {
            BlockQ8_0 blk[detail::kCompactQ8Blocks] = {};
            const int64_t nblk                      = std::min<int64_t>(detail::kCompactQ8Blocks, blocks - b0);
            std::memcpy(blk, row + static_cast<uint64_t>(b0) * sizeof(BlockQ8_0),
                        static_cast<size_t>(nblk) * sizeof(BlockQ8_0));
            uint8_t head[24] = {};
            uint32_t mask[4] = {};
            for (int k = 0; k < 4; ++k)
                for (int pos = 0; pos < 32; ++pos) {
                    const int8_t q = blk[detail::q8_block_of(k, pos)].qs[detail::q8_elem_of(k, pos)];
                    if (q == 0) continue;
                    mask[k] |= 1u << pos;
                    body.push_back(static_cast<uint8_t>(q));
                    ++stored;
                }
            for (int j = 0; j < 4; ++j) std::memcpy(head + 2 * j, &blk[j].d, 2);
            std::memcpy(head + 8, mask, 16);
            hdr.insert(hdr.end(), head, head + 24);
            boff.push_back(body.size());
        }
        return stored;
    }
    const auto& perm        = detail::group_perm(f.dense);
    const uint32_t low_mask = (1u << f.trunc_bits) - 1u;
    for (int64_t g0 = 0; g0 < cols; g0 += kCompactGroup16) {
        const int64_t n             = cols - g0 < kCompactGroup16 ? cols - g0 : kCompactGroup16;
        uint16_t v[kCompactGroup16] = {};
        std::memcpy(v, row + 2 * g0, static_cast<size_t>(2 * n));  // rows of odd length are unaligned
        uint64_t mask = 0;
        for (int pos = 0; pos < 64; ++pos) {
            const int e = perm[size_t(pos)];
            if (e >= n) continue;
            if (v[e] & low_mask)
                throw std::invalid_argument("CompactMatrix::encode: row " + std::to_string(r) + " element " +
                                            std::to_string(g0 + e) + " has nonzero low bits below trunc_bits");
            if (!f.sparse || v[e] != 0) mask |= 1ull << pos;
        }
        const int64_t k  = std::popcount(mask);
        const int64_t pb = (k + 7) / 8;
        if (f.sparse) {
            const size_t at = hdr.size();
            hdr.resize(at + 8);
            std::memcpy(&hdr[at], &mask, 8);
        }
        const size_t hi = body.size();
        body.resize(hi + detail::compact_body_bytes(f, k), 0);
        const size_t lo = hi + static_cast<size_t>(k);
        const size_t pl = lo + static_cast<size_t>(detail::low_is_byte(f)      ? k
                                                   : detail::low_has_nibble(f) ? (k + 1) / 2
                                                                               : 0);
        int64_t c       = 0;
        for (int pos = 0; pos < 64; ++pos) {
            if (!((mask >> pos) & 1u)) continue;
            const uint16_t h     = v[perm[size_t(pos)]];
            const uint8_t low    = static_cast<uint8_t>(h & 0xFFu);
            body[hi + size_t(c)] = static_cast<uint8_t>(h >> 8);
            if (detail::low_is_byte(f)) body[lo + size_t(c)] = low;
            if (detail::low_has_nibble(f))
                body[lo + size_t(c / 2)] |= static_cast<uint8_t>((low >> 4) << (4 * (c % 2)));
            for (int j = 0; j < detail::low_planes(f); ++j)
                body[pl + size_t(j * pb + c / 8)] |=
                    static_cast<uint8_t>(((low >> detail::plane_bit(f, j)) & 1u) << (c % 8));
            ++c;
        }
        stored += k;
        boff.push_back(body.size());
    }
    return stored;
}

void check_scratch(const char* who, const void* scratch) {
    if (!scratch) throw std::invalid_argument(std::string(who) + ": no scratch (compact_gemm_scratch_bytes)");
}

template <class Decode, class Dense>
void tiled(const CompactMatrix& w, int64_t r0, int64_t r1, void* scratch, Decode&& decode, Dense&& dense) {
    auto* buf = static_cast<uint8_t*>(scratch);
    for (int64_t r = r0; r < r1;) {
        const int64_t re = std::min(r1, (r / kTileRows + 1) * kTileRows);  // to the end of r's tile
        decode(buf, w, r, re);
        dense(buf, r, re);
        r = re;
    }
}

}  // namespace

// ---- formats ----

void CompactFormat::validate() const {
    if (dense != GgmlType::F16 && dense != GgmlType::BF16 && dense != GgmlType::Q8_0)
        throw std::invalid_argument("CompactFormat.dense: must be f16, bf16 or q8_0");
    if (trunc_bits < 0 || trunc_bits > 7)
        throw std::invalid_argument("CompactFormat.trunc_bits: must be in [0, 7], got " + std::to_string(trunc_bits));
    if (trunc_bits > 0 && dense != GgmlType::BF16)
        throw std::invalid_argument("CompactFormat.trunc_bits: only bf16 rows are truncated");
    if (dense == GgmlType::Q8_0 && !sparse) throw std::invalid_argument("CompactFormat.sparse: q8_0 must be sparse");
    if (!sparse && trunc_bits == 0)
        throw std::invalid_argument(
            "CompactFormat: neither sparse nor truncated stores every bit (use the dense type)");
}

std::optional<CompactFormat> compact_format_for(GgmlType dense, bool pruned, int32_t trunc_bits) {
    if (trunc_bits < 0 || trunc_bits > 7 || (trunc_bits > 0 && dense != GgmlType::BF16)) return std::nullopt;
    if (dense != GgmlType::F16 && dense != GgmlType::BF16 && dense != GgmlType::Q8_0) return std::nullopt;
    if (dense == GgmlType::Q8_0 && !pruned) return std::nullopt;
    if (!pruned && trunc_bits == 0) return std::nullopt;
    return CompactFormat{dense, pruned, trunc_bits};
}

const char* compact_dense_name(const CompactFormat& f) {
    static const char* names[] = {
        "f16 sparse",     "bf16 sparse",    "q8_0 sparse",    "bf16 t1",        "bf16 t2",        "bf16 t3",
        "bf16 t4",        "bf16 t5",        "bf16 t6",        "bf16 t7",        "bf16 sparse t1", "bf16 sparse t2",
        "bf16 sparse t3", "bf16 sparse t4", "bf16 sparse t5", "bf16 sparse t6", "bf16 sparse t7"};
    if (f.trunc_bits > 0 && f.trunc_bits <= 7) return names[(f.sparse ? 9 : 2) + f.trunc_bits];
    return f.dense == GgmlType::F16 ? names[0] : f.dense == GgmlType::BF16 ? names[1] : names[2];
}

// ---- encoding ----

CompactMatrix CompactMatrix::encode(const CompactFormat& f, const void* dense, int64_t rows, int64_t cols) {
    f.validate();
    const int64_t bs = f.dense == GgmlType::Q8_0 ? kQK8_0 : 1;
    if (rows < 0 || cols <= 0 || cols % bs != 0)
        throw std::invalid_argument("CompactMatrix::encode: " + std::to_string(rows) + " x " + std::to_string(cols) +
                                    " is not a matrix of whole " + ggml_type_traits(f.dense)->name + " blocks");
    CompactMatrix m;
    m.m_format = f;
    m.m_rows   = rows;
    m.m_cols   = cols;
    m.m_offsets.reserve(static_cast<size_t>((rows + kCompactTileRows - 1) / kCompactTileRows) + 1);
    const uint64_t row_bytes  = ggml_row_size(f.dense, static_cast<uint64_t>(cols));
    const auto* src           = static_cast<const uint8_t*>(dense);
    const uint64_t hb         = detail::compact_header_bytes(f);
    const int64_t groups      = n_groups(f, cols);
    std::vector<uint8_t>& out = m.m_data;
    std::vector<uint8_t> hdr[kCompactTileRows], body[kCompactTileRows];
    std::vector<uint64_t> boff[kCompactTileRows];
    for (int64_t t0 = 0; t0 < rows; t0 += kCompactTileRows) {
        const int64_t rt = std::min(kCompactTileRows, rows - t0);
        for (int64_t j = 0; j < rt; ++j) {
            hdr[j].clear();
            body[j].clear();
            m.m_stored +=
                encode_row(f, src + static_cast<uint64_t>(t0 + j) * row_bytes, t0 + j, cols, hdr[j], body[j], boff[j]);
        }
        for (int64_t g = 0; g < groups; ++g) {  // the step of group g: the rows' headers, then their bodies
            for (int64_t j = 0; j < rt; ++j)
                out.insert(out.end(), hdr[j].begin() + static_cast<int64_t>(hb) * g,
                           hdr[j].begin() + static_cast<int64_t>(hb) * (g + 1));
            for (int64_t j = 0; j < rt; ++j)
                out.insert(out.end(), body[j].begin() + static_cast<int64_t>(boff[j][size_t(g)]),
                           body[j].begin() + static_cast<int64_t>(boff[j][size_t(g) + 1]));
        }
        m.m_offsets.push_back(out.size());
    }
    out.resize(out.size() + kCompactPad, 0);
    out.shrink_to_fit();
    return m;
}

uint64_t CompactMatrix::row_stream_bytes(int64_t r) const {
    return walk_row(*this, r, [](int64_t, const uint8_t*, const uint8_t*, int64_t) {});
}

// ---- sizes ----

uint64_t compact_row_stream_bytes(const CompactFormat& f, int64_t cols, const int64_t* stored_per_group) {
    uint64_t b = 0;
    for (int64_t g = 0; g < n_groups(f, cols); ++g) b += group_bytes(f, stored_per_group[g]);
    return b;
}

double compact_bits_per_element(const CompactFormat& f, int64_t cols, double kept) {
    f.validate();
    if (cols <= 0) throw std::invalid_argument("compact_bits_per_element: cols must be positive");
    kept = kept < 0 ? 0 : kept > 1 ? 1 : kept;
    // Expected bytes of a group of n elements with Binomial(n, kept) stored (all of them when not sparse).
    auto expected = [&](int64_t n) {
        if (!f.sparse) return static_cast<double>(group_bytes(f, n));
        double e = 0, lp = 0;
        for (int64_t k = 0; k <= n; ++k) {
            lp              = std::lgamma(double(n) + 1) - std::lgamma(double(k) + 1) - std::lgamma(double(n - k) + 1);
            const double pk = kept <= 0 ? (k == 0)
                              : kept >= 1
                                  ? (k == n)
                                  : std::exp(lp + double(k) * std::log(kept) + double(n - k) * std::log1p(-kept));
            e += pk * static_cast<double>(group_bytes(f, k));
        }
        return e;
    };
    const int64_t gs = group_size(f), full = cols / gs, rest = cols % gs;
    // + the row's share of its tile's 8-byte offset
    double bytes = double(full) * expected(gs) + (rest ? expected(rest) : 0.0) + 8.0 / double(kCompactTileRows);
    return 8.0 * bytes / double(cols);
}

// ---- row decoding ----

uint64_t compact_decode_rows_ref(void* dst, const CompactMatrix& w, int64_t r0, int64_t r1) {
    const CompactFormat& f = w.format();
    auto* out              = static_cast<uint8_t*>(dst);
    uint64_t read          = 0;
    for (int64_t r = r0; r < r1; ++r, out += w.dense_row_bytes()) {
        read += walk_row(w, r, [&](int64_t g, const uint8_t* hdr, const uint8_t* body, int64_t n) {
            if (f.dense == GgmlType::Q8_0) {
                const int64_t b0 = g * detail::kCompactQ8Blocks;
                decode_group_q8_ref(reinterpret_cast<BlockQ8_0*>(out) + b0, hdr, body, n / kQK8_0);
            } else {
                uint16_t tmp[kCompactGroup16];
                decode_group16_ref(tmp, hdr, body, n, f);
                std::memcpy(out + 2 * g * kCompactGroup16, tmp, static_cast<size_t>(2 * n));
            }
        });
    }
    return read;
}

bool compact_decoder_vectorized() {
    const CpuFeatures& c = cpu_features();
    return kernel_isa() >= KernelIsa::avx512 && c.avx512vbmi2 && c.avx512vbmi && c.gfni;
}

uint64_t compact_decode_rows(void* dst, const CompactMatrix& w, int64_t r0, int64_t r1) {
    if (!compact_decoder_vectorized() || !detail::compact_decode_rows_avx512(dst, w, r0, r1))
        return compact_decode_rows_ref(dst, w, r0, r1);
    if (r0 % kCompactTileRows == 0 && (r1 % kCompactTileRows == 0 || r1 == w.rows()))  // whole tiles
        return r1 > r0 ? static_cast<uint64_t>(w.tile((r1 + kCompactTileRows - 1) / kCompactTileRows) -
                                               w.tile(r0 / kCompactTileRows))
                       : 0;
    uint64_t read = 0;
    for (int64_t r = r0; r < r1; ++r) read += w.row_stream_bytes(r);
    return read;
}

// ---- GEMM dispatch ----

uint64_t compact_gemm_scratch_bytes(const CompactMatrix& w) {
    // Twice the tile: the dense kernels prefetch the rows a tile ahead, which then stay inside the scratch.
    return 2 * kTileRows * w.dense_row_bytes() + kCompactPad;
}

void compact_gemm_ref(float* y, int64_t ldy, const CompactMatrix& w, const float* x, int64_t n, int64_t r0, int64_t r1,
                      void* scratch) {
    check_scratch("compact_gemm_ref", scratch);
    tiled(w, r0, r1, scratch, compact_decode_rows_ref, [&](const uint8_t* buf, int64_t a, int64_t b) {
        gemm_ref(y + a, ldy, w.format().dense, buf, x, n, w.cols(), 0, b - a);
    });
}

void compact_gemm(float* y, int64_t ldy, const CompactMatrix& w, const float* x, int64_t n, int64_t r0, int64_t r1,
                  void* scratch) {
    check_scratch("compact_gemm", scratch);
    if (is16(w.format().dense) && compact_decoder_vectorized()) {  // decoded in registers, no scratch round trip
        detail::compact_gemm16_avx512(y, ldy, w, x, n, r0, r1);
        return;
    }
    tiled(w, r0, r1, scratch, compact_decode_rows, [&](const uint8_t* buf, int64_t a, int64_t b) {
        gemm(y + a, ldy, w.format().dense, buf, x, n, w.cols(), 0, b - a);
    });
}

bool compact_bf16act_available(const CompactMatrix& w) {
    return w.format().dense == GgmlType::BF16 && compact_decoder_vectorized() && gemm_bf16act_available();
}

bool compact_bf16act_preferred(const CompactFormat& f, CpuVendor vendor) {
    return f.dense == GgmlType::BF16 && f.sparse && vendor == CpuVendor::amd;
}

bool compact_bf16act_chosen(const CompactMatrix& w) {
    return compact_bf16act_available(w) && compact_bf16act_preferred(w.format(), cpu_features().vendor);
}

int64_t compact_bf16act_words(int64_t cols) {
    return (cols + kCompactGroup16 - 1) / kCompactGroup16 * kCompactGroup16;
}

namespace {

// Word e of a packed 64-element group holds element pair_element(e) of the group.
int64_t pair_element(int64_t e) {
    const int64_t half = e / 32, j = (e % 32) / 2;
    return 32 * half + j + 16 * (e % 2);
}

}  // namespace

void compact_pack_bf16act_ref(uint16_t* xp, const float* x, int64_t n, int64_t cols) {
    const int64_t words = compact_bf16act_words(cols);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t g = 0; g < words; g += kCompactGroup16)
            for (int64_t e = 0; e < kCompactGroup16; ++e) {
                const int64_t k       = g + pair_element(e);
                xp[i * words + g + e] = k < cols ? f32_to_bf16(x[i * cols + k]) : uint16_t(0);
            }
}

// Whole groups with AVX-512 (a scalar loop with pair_element per word took ~3 us per 1024-wide vector, 4 % of a
// prune 0.5 + t 4 draft pass), the short last group by the reference.
void compact_pack_bf16act(uint16_t* xp, const float* x, int64_t n, int64_t cols) {
    if (!compact_decoder_vectorized()) {
        compact_pack_bf16act_ref(xp, x, n, cols);
        return;
    }
    const int64_t words = compact_bf16act_words(cols), whole = cols / kCompactGroup16;
    for (int64_t i = 0; i < n; ++i) {
        detail::compact_pack_bf16act_avx512(xp + i * words, x + i * cols, whole);
        if (whole * kCompactGroup16 < cols)
            compact_pack_bf16act_ref(xp + i * words + whole * kCompactGroup16, x + i * cols + whole * kCompactGroup16,
                                     1, cols - whole * kCompactGroup16);
    }
}

void compact_gemm_bf16act_ref(float* y, int64_t ldy, const CompactMatrix& w, const uint16_t* xp, int64_t n, int64_t r0,
                              int64_t r1, void* scratch) {
    check_scratch("compact_gemm_bf16act_ref", scratch);
    if (w.format().dense != GgmlType::BF16) throw std::invalid_argument("compact_gemm_bf16act_ref: rows are not bf16");
    const int64_t cols = w.cols(), words = compact_bf16act_words(cols);
    tiled(w, r0, r1, scratch, compact_decode_rows_ref, [&](const uint8_t* buf, int64_t a, int64_t b) {
        const auto* rows = reinterpret_cast<const uint16_t*>(buf);
        for (int64_t r = a; r < b; ++r)
            for (int64_t i = 0; i < n; ++i) {
                float s = 0.0f;
                for (int64_t k = 0; k < cols; ++k) {
                    const int64_t g = k / kCompactGroup16 * kCompactGroup16, in = k - g;
                    const int64_t e = 32 * (in / 32) + 2 * (in % 16) + (in % 32) / 16;  // pair_element's inverse
                    s += bf16_to_f32(rows[(r - a) * cols + k]) * bf16_to_f32(xp[i * words + g + e]);
                }
                y[i * ldy + r] = s;
            }
    });
}

void compact_gemm_bf16act(float* y, int64_t ldy, const CompactMatrix& w, const uint16_t* xp, int64_t n, int64_t r0,
                          int64_t r1, void* scratch) {
    check_scratch("compact_gemm_bf16act", scratch);  // as compact_gemm: callers pass it whichever path runs
    if (!compact_bf16act_available(w)) {
        compact_gemm_bf16act_ref(y, ldy, w, xp, n, r0, r1, scratch);
        return;
    }
    detail::compact_gemm_bf16act_avx512(y, ldy, w, xp, n, r0, r1);
}

void compact_gemm_q8act_ref(float* y, int64_t ldy, const CompactMatrix& w, const void* xq, int64_t n, int64_t r0,
                            int64_t r1, void* scratch) {
    check_scratch("compact_gemm_q8act_ref", scratch);
    if (w.format().dense != GgmlType::Q8_0) throw std::invalid_argument("compact_gemm_q8act_ref: rows are not q8_0");
    tiled(w, r0, r1, scratch, compact_decode_rows_ref, [&](const uint8_t* buf, int64_t a, int64_t b) {
        gemm_q8act_ref(y + a, ldy, GgmlType::Q8_0, buf, xq, n, w.cols(), 0, b - a);
    });
}

void compact_gemm_q8act(float* y, int64_t ldy, const CompactMatrix& w, const void* xq, int64_t n, int64_t r0,
                        int64_t r1, void* scratch) {
    check_scratch("compact_gemm_q8act", scratch);
    if (w.format().dense != GgmlType::Q8_0) throw std::invalid_argument("compact_gemm_q8act: rows are not q8_0");
    if (compact_decoder_vectorized() && gemm_prefers_q8act(GgmlType::Q8_0)) {  // decoded in registers
        detail::compact_gemm_q8act_avx512(y, ldy, w, xq, n, r0, r1);
        return;
    }
    tiled(w, r0, r1, scratch, compact_decode_rows, [&](const uint8_t* buf, int64_t a, int64_t b) {
        gemm_q8act(y + a, ldy, GgmlType::Q8_0, buf, xq, n, w.cols(), 0, b - a);
    });
}

}  // namespace speculum::kernels
