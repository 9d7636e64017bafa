// Hostile GGUF files, one test per case: each must be rejected with a GgufError "FILE: FIELD: reason" that names
// the field, before anything is allocated in proportion to a bogus count.
#include "core/model/gguf.h"
#include "core/model/gguf_writer.h"
#include "gguf_raw.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace speculum::model;
using speculum::test::RawGguf;
using testing::HasSubstr;
using testing::StartsWith;

namespace {

constexpr uint32_t kF32  = 0;
constexpr uint32_t kQ8_0 = 8;

// The error message for these bytes, or "parsed" when they load.
std::string error_of(const std::vector<uint8_t>& bytes) {
    try {
        GgufFile::from_bytes(bytes, "bad.gguf");
    } catch (const GgufError& e) {
        return e.what();
    }
    return "parsed";
}

// One F32 tensor of n elements at the given offset (one key so there is something to parse first).
std::vector<uint8_t> one_tensor(const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset, size_t data) {
    RawGguf g;
    g.header(1, 1).kv_str("general.architecture", "llama").tensor("w", dims, type, offset).pad().zeros(data);
    return g.bytes;
}

}  // namespace

TEST(GgufHostile, ValidBaselineParses) {
    EXPECT_EQ(error_of(one_tensor({4, 2}, kF32, 0, 32)), "parsed");
}

TEST(GgufHostile, BadMagic) {
    auto b = one_tensor({4}, kF32, 0, 16);
    b[0]   = 'X';
    EXPECT_THAT(error_of(b), StartsWith("bad.gguf: magic: expected 'GGUF', found 'XGUF'"));
    EXPECT_THAT(error_of({'G', 'G'}), StartsWith("bad.gguf: magic: file is 2 bytes"));
    EXPECT_THAT(error_of({}), StartsWith("bad.gguf: magic:"));
}

TEST(GgufHostile, BadVersion) {
    EXPECT_THAT(error_of(RawGguf().header(0, 0, 1).bytes), HasSubstr("version: GGUF v1 is not supported"));
    EXPECT_THAT(error_of(RawGguf().header(0, 0, 4).bytes), HasSubstr("version: unsupported GGUF version 4"));
    EXPECT_THAT(error_of(RawGguf().header(0, 0, 0).bytes), HasSubstr("version: unsupported GGUF version 0"));
    EXPECT_THAT(error_of(RawGguf().header(0, 0, 0x03000000).bytes), HasSubstr("big-endian"));
}

TEST(GgufHostile, TruncatedAtEveryLength) {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_array_strings("tokens", {"a", "bc"});
    w.set_array_int32("types", {1, 2});
    w.set_float32("eps", 1e-5f);
    float x[8] = {};
    w.add_tensor("a", {8}, speculum::kernels::GgmlType::F32, x, sizeof x);
    auto full = w.to_bytes();
    for (size_t n = 0; n < full.size(); ++n) {  // the tensor fills its 32 bytes: no trailing padding
        std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<long>(n));
        std::string err = error_of(cut);
        EXPECT_THAT(err, StartsWith("bad.gguf: ")) << "cut at " << n;
        EXPECT_NE(err, "parsed") << "cut at " << n;
    }
    RawGguf mid;  // cut inside the first key's string
    mid.header(0, 1).u64(20).raw("general", 7);
    EXPECT_THAT(error_of(mid.bytes), HasSubstr("key #0: string length 20 exceeds the 7 bytes left"));
    RawGguf in_value;  // cut inside a uint32 value
    in_value.header(0, 1).str("general.alignment").u32(4).u8(0);
    EXPECT_THAT(error_of(in_value.bytes), HasSubstr("key 'general.alignment' (#0): truncated: needs 4 bytes"));
    std::vector<uint8_t> in_count(full.begin(), full.begin() + 20);
    EXPECT_THAT(error_of(in_count), HasSubstr("n_kv: truncated"));
}

TEST(GgufHostile, AbsurdKvCount) {
    EXPECT_THAT(error_of(RawGguf().header(0, uint64_t(1) << 62).zeros(64).bytes),
                HasSubstr("n_kv: 4611686018427387904 key-value pairs cannot fit in the 64 bytes left"));
}

TEST(GgufHostile, AbsurdTensorCount) {
    EXPECT_THAT(error_of(RawGguf().header(~uint64_t(0), 0).zeros(64).bytes),
                HasSubstr("n_tensors: 18446744073709551615 tensor infos cannot fit"));
}

TEST(GgufHostile, AbsurdArrayLength) {
    RawGguf g;
    g.header(0, 1).str("tokens").u32(9).u32(8).u64(uint64_t(1) << 60).zeros(100);
    EXPECT_THAT(error_of(g.bytes), HasSubstr("key 'tokens' (#0): array of 1152921504606846976 string cannot fit"));
    RawGguf h;
    h.header(0, 1).str("ids").u32(9).u32(10).u64(13).zeros(100);  // 13 uint64 need 104 bytes
    EXPECT_THAT(error_of(h.bytes), HasSubstr("key 'ids' (#0): array of 13 uint64 cannot fit in the 100 bytes"));
}

TEST(GgufHostile, AbsurdStringLength) {
    RawGguf g;
    g.header(0, 1).u64(~uint64_t(0)).zeros(40);
    EXPECT_THAT(error_of(g.bytes), HasSubstr("key #0: string length 18446744073709551615 exceeds the 40 bytes"));
    RawGguf h;
    h.header(0, 1).str("name").u32(8).u64(1000).zeros(20);
    EXPECT_THAT(error_of(h.bytes), HasSubstr("key 'name' (#0): string length 1000 exceeds"));
    RawGguf t;
    t.header(1, 0).u64(uint64_t(1) << 40).zeros(40);
    EXPECT_THAT(error_of(t.bytes), HasSubstr("tensor #0 name: string length 1099511627776 exceeds"));
}

TEST(GgufHostile, NDimsZeroOrAboveFour) {
    EXPECT_THAT(error_of(one_tensor({}, kF32, 0, 64)), HasSubstr("tensor 'w' (#0): n_dims is 0, expected 1 to 4"));
    EXPECT_THAT(error_of(one_tensor({1, 1, 1, 1, 4}, kF32, 0, 64)), HasSubstr("tensor 'w' (#0): n_dims is 5"));
}

TEST(GgufHostile, ZeroDim) {
    EXPECT_THAT(error_of(one_tensor({4, 0}, kF32, 0, 64)), HasSubstr("tensor 'w' (#0): dims[1] is 0"));
}

TEST(GgufHostile, AbsurdDim) {
    EXPECT_THAT(error_of(one_tensor({uint64_t(1) << 63}, kF32, 0, 64)),
                HasSubstr("tensor 'w' (#0): dims[0] is 9223372036854775808, above INT64_MAX"));
    EXPECT_THAT(error_of(one_tensor({uint64_t(1) << 40, 2}, kF32, 0, 64)),
                HasSubstr("tensor 'w' (#0): offset 0 + 8796093022208 bytes extends past the end of the file"));
}

TEST(GgufHostile, ElementCountOverflow) {
    uint64_t big = uint64_t(1) << 32;
    EXPECT_THAT(error_of(one_tensor({big, big, big}, kF32, 0, 64)),
                HasSubstr("tensor 'w' (#0): element count overflows at dims[1]"));
}

TEST(GgufHostile, ByteSizeOverflow) {
    // 2^62 elements fit int64, but 2^62 * 4 bytes does not fit uint64.
    EXPECT_THAT(error_of(one_tensor({uint64_t(1) << 62}, kF32, 0, 64)),
                HasSubstr("tensor 'w' (#0): byte size overflows"));
}

TEST(GgufHostile, RowNotMultipleOfBlockSize) {
    EXPECT_THAT(error_of(one_tensor({48, 2}, kQ8_0, 0, 128)),
                HasSubstr("tensor 'w' (#0): row length 48 is not a multiple of the q8_0 block size 32"));
}

TEST(GgufHostile, OffsetPastTheEnd) {
    std::string err = error_of(one_tensor({1024}, kF32, 0, 4000));
    EXPECT_THAT(err, HasSubstr("tensor 'w' (#0): offset 0 + 4096 bytes extends past the end of the file"));
    EXPECT_THAT(error_of(one_tensor({4}, kF32, ~uint64_t(0) - 31, 64)), HasSubstr("extends past the end"));
}

TEST(GgufHostile, MisalignedOffset) {
    EXPECT_THAT(error_of(one_tensor({4}, kF32, 8, 64)),
                HasSubstr("tensor 'w' (#0): offset 8 is not a multiple of the alignment 32"));
}

TEST(GgufHostile, OverlappingTensors) {
    RawGguf g;
    g.header(2, 0).tensor("a", {16}, kF32, 0).tensor("b", {8}, kF32, 32).pad().zeros(128);
    EXPECT_THAT(error_of(g.bytes), HasSubstr("tensor 'b' (#1): data at offset 32 overlaps tensor 'a'"));
    RawGguf same;
    same.header(2, 0).tensor("a", {8}, kF32, 0).tensor("b", {8}, kF32, 0).pad().zeros(64);
    EXPECT_THAT(error_of(same.bytes), HasSubstr("overlaps tensor"));
}

TEST(GgufHostile, UnknownTensorType) {
    EXPECT_THAT(error_of(one_tensor({4}, 4, 0, 64)), HasSubstr("tensor 'w' (#0): unknown tensor type 4"));
    EXPECT_THAT(error_of(one_tensor({4}, 1000, 0, 64)), HasSubstr("unknown tensor type 1000"));
    // Speculum's in-memory layouts (kernels::GgmlType::Q8_0_X8) are not file types.
    EXPECT_THAT(error_of(one_tensor({256}, 0x10008, 0, 272)), HasSubstr("unknown tensor type 65544"));
}

TEST(GgufHostile, UnknownMetadataValueType) {
    RawGguf g;
    g.header(0, 1).str("k").u32(13).u32(0);
    EXPECT_THAT(error_of(g.bytes), HasSubstr("key 'k' (#0): unknown value type 13"));
    RawGguf a;
    a.header(0, 1).str("arr").u32(9).u32(77).u64(0);
    EXPECT_THAT(error_of(a.bytes), HasSubstr("key 'arr' (#0): unknown array element type 77"));
}

TEST(GgufHostile, NestedArray) {
    RawGguf g;
    g.header(0, 1).str("nest").u32(9).u32(9).u64(1).u32(4).u64(1).u32(7);
    EXPECT_THAT(error_of(g.bytes), HasSubstr("key 'nest' (#0): nested arrays are not supported"));
}

TEST(GgufHostile, InvalidAlignment) {
    EXPECT_THAT(error_of(RawGguf().header(0, 1).kv_u32("general.alignment", 0).bytes),
                HasSubstr("general.alignment: 0 is not a nonzero power of two"));
    EXPECT_THAT(error_of(RawGguf().header(0, 1).kv_u32("general.alignment", 48).bytes),
                HasSubstr("general.alignment: 48 is not a nonzero power of two"));
    EXPECT_THAT(error_of(RawGguf().header(0, 1).kv_str("general.alignment", "32").bytes),
                HasSubstr("general.alignment: expected uint32, got string"));
    EXPECT_EQ(error_of(RawGguf().header(0, 1).kv_u32("general.alignment", 64).bytes), "parsed");
}

TEST(GgufHostile, DuplicateKey) {
    RawGguf g;
    g.header(0, 3).kv_u32("a", 1).kv_u32("b", 2).kv_str("a", "x");
    EXPECT_THAT(error_of(g.bytes), HasSubstr("key 'a' (#2): duplicate key (first seen as #0)"));
}

TEST(GgufHostile, DuplicateTensorName) {
    RawGguf g;
    g.header(2, 0).tensor("w", {8}, kF32, 0).tensor("w", {8}, kF32, 32).pad().zeros(64);
    EXPECT_THAT(error_of(g.bytes), HasSubstr("tensor 'w' (#1): duplicate tensor name (first seen as #0)"));
}

TEST(GgufHostile, TensorNameTooLong) {
    RawGguf g;
    g.header(1, 0).tensor(std::string(64, 'n'), {8}, kF32, 0).pad().zeros(32);
    EXPECT_THAT(error_of(g.bytes), HasSubstr("name is 64 bytes, ggml's limit is 63"));
}

TEST(GgufHostile, BoolNotZeroOrOne) {
    RawGguf g;
    g.header(0, 1).str("flag").u32(7).u8(2);
    EXPECT_THAT(error_of(g.bytes), HasSubstr("key 'flag' (#0): bool value 2 is neither 0 nor 1"));
}

TEST(GgufHostile, NonUtf8BytesAreAllowed) {
    RawGguf g;
    std::string odd("\xff\xc0\x80\x00k", 5);
    g.header(1, 1).kv_str(odd, std::string("\xfe\xff", 2));
    g.tensor(std::string("\xe0\x80", 2), {8}, kF32, 0).pad().zeros(32);
    GgufFile f = GgufFile::from_bytes(g.bytes, "odd.gguf");
    EXPECT_EQ(f.get_string(odd), std::string("\xfe\xff", 2));
    EXPECT_NE(f.tensor(std::string("\xe0\x80", 2)), nullptr);
    // Unprintable bytes in names are shown as '?' in messages so they stay on one line.
    RawGguf d;
    d.header(0, 2).kv_u32(odd, 1).kv_u32(odd, 2);
    EXPECT_THAT(error_of(d.bytes), HasSubstr("key '???\?k' (#1): duplicate key"));
}

TEST(GgufHostile, NoTensorsMayEndBeforeThePaddedDataSection) {
    // llama.cpp's older Python writer does not pad a tensor-less file; such files (the vocab files) are valid.
    RawGguf g;
    g.header(0, 1).kv_u32("x", 1);
    GgufFile f = GgufFile::from_bytes(g.bytes, "meta.gguf");
    EXPECT_EQ(f.data_offset(), 64u);
    EXPECT_EQ(f.file_size(), g.bytes.size());
}
