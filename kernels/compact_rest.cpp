// Strict-subset storage (compact.h, "strict-subset storage"): the rest of a BF16 target's bits next to its draft's
// compact matrix. Encoding, the scalar reference decoder and the dispatch to the AVX-512 one.
#include "kernels/compact.h"

#include "kernels/compact_detail.h"

#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

namespace speculum::kernels {

namespace {

// The draft's presence mask and the element count of each 64-element group of row r.
void row_masks(const CompactMatrix& w, int64_t r, std::vector<uint64_t>& mask, std::vector<int64_t>& elems) {
    mask.clear();
    elems.clear();
    const CompactFormat& f = w.format();
    detail::walk_row(w, r, [&](int64_t, const uint8_t* hdr, const uint8_t*, int64_t n) {
        mask.push_back(f.sparse ? detail::header_u64(hdr) : detail::full_mask(f.dense, n));
        elems.push_back(n);
    });
}

// The low-bit fields of the stored elements (compact.h): a nibble (bits 3..0) when trunc_bits >= 4, and planes for
// the bits above it (or for all trunc_bits bits below 4).
bool rest_nibble(int trunc_bits) {
    return trunc_bits >= 4;
}
int rest_planes(int trunc_bits) {
    return trunc_bits >= 4 ? trunc_bits - 4 : trunc_bits;
}
// Bytes of one row's rest in a group: the absent elements' two bytes, and the stored ones' low-bit fields.
uint64_t rest_bytes(int trunc_bits, uint64_t mask, int64_t n) {
    const int64_t k = std::popcount(mask);
    return static_cast<uint64_t>(2 * (n - k) + (rest_nibble(trunc_bits) ? (k + 1) / 2 : 0) +
                                 rest_planes(trunc_bits) * ((k + 7) / 8));
}

void check_pair(const char* who, const CompactMatrix& draft, const CompactRest& rest) {
    if (draft.format().dense != GgmlType::BF16 || rest.tiles() != draft.tiles())
        throw std::invalid_argument(std::string(who) + ": the rest was not encoded for this draft matrix");
}

// The rest of rows [r0, r1) patched into dst, which holds the draft's decoded rows. Returns the rest's bytes of them.
uint64_t patch_rest_ref(uint8_t* dst, const CompactMatrix& draft, const CompactRest& rest, int64_t r0, int64_t r1) {
    const int tb       = draft.format().trunc_bits;
    const auto& perm   = detail::group_perm(GgmlType::BF16);
    const int64_t cols = draft.cols();
    std::vector<uint64_t> masks[kCompactTileRows];
    std::vector<int64_t> elems[kCompactTileRows];
    int64_t have  = -1;  // the tile whose masks are loaded
    uint64_t read = 0;
    for (int64_t r = r0; r < r1; ++r, dst += 2 * static_cast<uint64_t>(cols)) {
        const int64_t t = r / kCompactTileRows, j = r % kCompactTileRows, rt = draft.tile_rows(t);
        if (t != have) {
            for (int64_t i = 0; i < rt; ++i) row_masks(draft, t * kCompactTileRows + i, masks[i], elems[i]);
            have = t;
        }
        const uint8_t* p = rest.tile(t);
        for (size_t g = 0; g < masks[0].size(); ++g) {
            for (int64_t i = 0; i < j; ++i) p += rest_bytes(tb, masks[i][g], elems[i][g]);
            const uint64_t mask = masks[j][g];
            const int64_t n = elems[j][g], k = std::popcount(mask), m = n - k, pb = (k + 7) / 8;
            uint16_t v[kCompactGroup16];
            std::memcpy(v, dst + 2 * g * kCompactGroup16, static_cast<size_t>(2 * n));
            int64_t c = 0, s = 0;  // index among the absent and among the stored elements
            for (int pos = 0; pos < 64; ++pos) {
                const int e = perm[size_t(pos)];
                if (e >= n) continue;
                if (!((mask >> pos) & 1u)) {
                    v[e] = static_cast<uint16_t>(p[c] << 8 | p[m + c]);
                    ++c;
                    continue;
                }
                const uint8_t* lb = p + 2 * m;  // the low-bit fields
                if (rest_nibble(tb)) {
                    v[e] |= static_cast<uint16_t>((lb[s / 2] >> (4 * (s % 2))) & 0xFu);
                    lb += (k + 1) / 2;
                }
                for (int pl = 0; pl < rest_planes(tb); ++pl)
                    v[e] |= static_cast<uint16_t>(((lb[pl * pb + s / 8] >> (s % 8)) & 1u) << (tb - 1 - pl));
                ++s;
            }
            std::memcpy(dst + 2 * g * kCompactGroup16, v, static_cast<size_t>(2 * n));
            read += rest_bytes(tb, mask, n);
            for (int64_t i = j; i < rt; ++i) p += rest_bytes(tb, masks[i][g], elems[i][g]);
        }
    }
    return read;
}

}  // namespace

CompactRest CompactRest::encode(const CompactMatrix& draft, const void* dense, int64_t rows, int64_t cols) {
    const CompactFormat& f = draft.format();
    if (f.dense != GgmlType::BF16)
        throw std::invalid_argument(std::string("CompactRest::encode: the draft's rows are ") +
                                    ggml_type_traits(f.dense)->name + ", not bf16");
    if (draft.rows() != rows || draft.cols() != cols)
        throw std::invalid_argument("CompactRest::encode: the draft is " + std::to_string(draft.rows()) + " x " +
                                    std::to_string(draft.cols()) + ", the target " + std::to_string(rows) + " x " +
                                    std::to_string(cols));
    const int tb       = f.trunc_bits;
    const auto& perm   = detail::group_perm(GgmlType::BF16);
    const auto* src    = static_cast<const uint8_t*>(dense);
    const uint64_t row = 2 * static_cast<uint64_t>(cols);
    CompactRest out;
    out.m_offsets.reserve(static_cast<size_t>(draft.tiles()) + 1);
    std::vector<uint64_t> masks[kCompactTileRows];
    std::vector<int64_t> elems[kCompactTileRows];
    for (int64_t t = 0; t < draft.tiles(); ++t) {
        const int64_t rt = draft.tile_rows(t);
        for (int64_t i = 0; i < rt; ++i) row_masks(draft, t * kCompactTileRows + i, masks[i], elems[i]);
        for (size_t g = 0; g < masks[0].size(); ++g)
            for (int64_t i = 0; i < rt; ++i) {
                const int64_t n = elems[i][g], k = std::popcount(masks[i][g]), pb = (k + 7) / 8;
                uint16_t v[kCompactGroup16] = {};
                std::memcpy(v, src + static_cast<uint64_t>(t * kCompactTileRows + i) * row + 2 * g * kCompactGroup16,
                            static_cast<size_t>(2 * n));
                const size_t at = out.m_data.size(), m = static_cast<size_t>(n - k);
                out.m_data.resize(at + rest_bytes(tb, masks[i][g], n), 0);
                size_t c  = 0;
                int64_t s = 0;
                for (int pos = 0; pos < 64; ++pos) {
                    const int e = perm[size_t(pos)];
                    if (e >= n) continue;
                    if (!((masks[i][g] >> pos) & 1u)) {
                        out.m_data[at + c]     = static_cast<uint8_t>(v[e] >> 8);
                        out.m_data[at + m + c] = static_cast<uint8_t>(v[e] & 0xFFu);
                        ++c;
                        continue;
                    }
                    size_t lb = at + 2 * m;  // the low-bit fields
                    if (rest_nibble(tb)) {
                        out.m_data[lb + static_cast<size_t>(s / 2)] |=
                            static_cast<uint8_t>((v[e] & 0xFu) << (4 * (s % 2)));
                        lb += static_cast<size_t>((k + 1) / 2);
                    }
                    for (int pl = 0; pl < rest_planes(tb); ++pl)
                        out.m_data[lb + static_cast<size_t>(pl * pb + s / 8)] |=
                            static_cast<uint8_t>(((v[e] >> (tb - 1 - pl)) & 1u) << (s % 8));
                    ++s;
                }
            }
        out.m_offsets.push_back(out.m_data.size());
    }
    out.m_data.resize(out.m_data.size() + kCompactPad, 0);
    out.m_data.shrink_to_fit();
    // The two parts must give the target's rows back: the draft's stored bits are a prefix of the target's.
    std::vector<uint8_t> back(kCompactTileRows * row);
    for (int64_t r0 = 0; r0 < rows; r0 += kCompactTileRows) {
        const int64_t r1 = std::min(rows, r0 + kCompactTileRows);
        compact_rest_decode_rows_ref(back.data(), draft, out, r0, r1);
        for (int64_t r = r0; r < r1; ++r)
            if (std::memcmp(back.data() + static_cast<uint64_t>(r - r0) * row, src + static_cast<uint64_t>(r) * row,
                            row) != 0)
                throw std::invalid_argument("CompactRest::encode: row " + std::to_string(r) +
                                            " of the draft is not the target's row with bits left out (was the draft "
                                            "truncated toward zero from this target?)");
    }
    return out;
}

uint64_t compact_rest_decode_rows_ref(void* dst, const CompactMatrix& draft, const CompactRest& rest, int64_t r0,
                                      int64_t r1) {
    check_pair("compact_rest_decode_rows_ref", draft, rest);
    const uint64_t read = compact_decode_rows_ref(dst, draft, r0, r1);
    return read + patch_rest_ref(static_cast<uint8_t*>(dst), draft, rest, r0, r1);
}

uint64_t compact_rest_decode_rows(void* dst, const CompactMatrix& draft, const CompactRest& rest, int64_t r0,
                                  int64_t r1) {
    check_pair("compact_rest_decode_rows", draft, rest);
    if (!compact_decoder_vectorized()) return compact_rest_decode_rows_ref(dst, draft, rest, r0, r1);
    auto* out          = static_cast<uint8_t*>(dst);
    const uint64_t row = 2 * static_cast<uint64_t>(draft.cols());
    uint64_t read      = 0;
    for (int64_t r = r0; r < r1;) {
        const int64_t t = r / kCompactTileRows;
        // Runs of whole 8-row tiles take the vector decoder; a partial tile's rows the reference, one at a time.
        int64_t e = r;
        while (e % kCompactTileRows == 0 && e + kCompactTileRows <= r1 &&
               draft.tile_rows(e / kCompactTileRows) == kCompactTileRows)
            e += kCompactTileRows;
        if (e > r) {
            detail::compact_rest_decode_tiles_avx512(out + static_cast<uint64_t>(r - r0) * row, draft, rest, t,
                                                     e / kCompactTileRows);
            read += static_cast<uint64_t>(draft.tile(e / kCompactTileRows) - draft.tile(t)) +
                    static_cast<uint64_t>(rest.tile(e / kCompactTileRows) - rest.tile(t));
            r = e;
        } else {
            read += compact_rest_decode_rows_ref(out + static_cast<uint64_t>(r - r0) * row, draft, rest, r, r + 1);
            ++r;
        }
    }
    return read;
}

}  // namespace speculum::kernels
