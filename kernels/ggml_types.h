// Tensor element types as numbered by ggml/GGUF, with their block geometry. The one table every layer uses to
// size tensor data; the kernels for each type live in their own files.
#pragma once

#include <cstddef>
#include <cstdint>

namespace speculum::kernels {

// Values are GGUF's on-disk type ids (ggml.h `enum ggml_type`); gaps are types ggml removed.
enum class GgmlType : uint32_t {
    F32     = 0,
    F16     = 1,
    Q4_0    = 2,
    Q4_1    = 3,
    Q5_0    = 6,
    Q5_1    = 7,
    Q8_0    = 8,
    Q8_1    = 9,
    Q2_K    = 10,
    Q3_K    = 11,
    Q4_K    = 12,
    Q5_K    = 13,
    Q6_K    = 14,
    Q8_K    = 15,
    IQ2_XXS = 16,
    IQ2_XS  = 17,
    IQ3_XXS = 18,
    IQ1_S   = 19,
    IQ4_NL  = 20,
    IQ3_S   = 21,
    IQ2_S   = 22,
    IQ4_XS  = 23,
    I8      = 24,
    I16     = 25,
    I32     = 26,
    I64     = 27,
    F64     = 28,
    IQ1_M   = 29,
    BF16    = 30,
    TQ1_0   = 34,
    TQ2_0   = 35,
    MXFP4   = 39,
    // Speculum's in-memory layouts: never read from or written to a file (GgmlTypeTraits::in_files is false).
    Q8_0_X8 = 0x10008,  // Q8_0 repacked for the int8 batched kernels: see BlockQ8_0x8 in quant_blocks.h
};

struct GgmlTypeTraits {
    const char* name;     // "q8_0", as ggml names it
    uint32_t block_size;  // elements per block (1 for plain scalars)
    uint32_t type_size;   // bytes per block
    bool quantized;
    bool in_files = true;  // a GGUF type id; false for in-memory layouts such as Q8_0_X8
};

// Traits of a type id, or nullptr when the id is unknown (or a removed type). Never throws. File readers and
// writers must also refuse ids whose traits say !in_files.
inline const GgmlTypeTraits* ggml_type_traits(uint32_t type_id) {
    static constexpr struct {
        uint32_t id;
        GgmlTypeTraits traits;
    } table[] = {
        {0, {"f32", 1, 4, false}},
        {1, {"f16", 1, 2, false}},
        {2, {"q4_0", 32, 18, true}},
        {3, {"q4_1", 32, 20, true}},
        {6, {"q5_0", 32, 22, true}},
        {7, {"q5_1", 32, 24, true}},
        {8, {"q8_0", 32, 34, true}},
        {9, {"q8_1", 32, 36, true}},
        {10, {"q2_K", 256, 84, true}},
        {11, {"q3_K", 256, 110, true}},
        {12, {"q4_K", 256, 144, true}},
        {13, {"q5_K", 256, 176, true}},
        {14, {"q6_K", 256, 210, true}},
        {15, {"q8_K", 256, 292, true}},
        {16, {"iq2_xxs", 256, 66, true}},
        {17, {"iq2_xs", 256, 74, true}},
        {18, {"iq3_xxs", 256, 98, true}},
        {19, {"iq1_s", 256, 50, true}},
        {20, {"iq4_nl", 32, 18, true}},
        {21, {"iq3_s", 256, 110, true}},
        {22, {"iq2_s", 256, 82, true}},
        {23, {"iq4_xs", 256, 136, true}},
        {24, {"i8", 1, 1, false}},
        {25, {"i16", 1, 2, false}},
        {26, {"i32", 1, 4, false}},
        {27, {"i64", 1, 8, false}},
        {28, {"f64", 1, 8, false}},
        {29, {"iq1_m", 256, 56, true}},
        {30, {"bf16", 1, 2, false}},
        {34, {"tq1_0", 256, 54, true}},
        {35, {"tq2_0", 256, 66, true}},
        {39, {"mxfp4", 32, 17, true}},
        {0x10008, {"q8_0_x8", 256, 272, true, false}},
    };
    for (const auto& e : table)
        if (e.id == type_id) return &e.traits;
    return nullptr;
}

inline const GgmlTypeTraits* ggml_type_traits(GgmlType t) {
    return ggml_type_traits(static_cast<uint32_t>(t));
}

// Bytes of a row of n elements; n must be a multiple of the block size (the caller checks, see row_size_ok).
inline uint64_t ggml_row_size(GgmlType t, uint64_t n) {
    const GgmlTypeTraits* tr = ggml_type_traits(t);
    return tr ? n / tr->block_size * tr->type_size : 0;
}

}  // namespace speculum::kernels
