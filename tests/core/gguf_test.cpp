// GGUF reader and writer: round trips of every value type and tensor bytes, byte-identical rewrite, typed getters,
// file I/O (mmap path), and the two real llama.cpp vocabulary files from ../shared.
#include "core/model/gguf.h"
#include "core/model/gguf_writer.h"
#include "core/model/synthetic.h"
#include "model_fixtures.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <thread>

using namespace speculum::model;
using speculum::kernels::GgmlType;

namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    return b;
}

// A writer holding one of every value type and tensors of several types and ranks.
GgufWriter sample_writer() {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_uint32("u32", 4000000000u);
    w.set_int32("i32", -123456);
    w.set_uint64("u64", std::numeric_limits<uint64_t>::max());
    w.set_float32("f32", 0.1f);
    w.set_bool("yes", true);
    w.set_bool("no", false);
    w.set_string("utf8", "caf\xc3\xa9 \xe4\xb8\xad");
    w.set_string("not_utf8", std::string("\xff\xfe\x00\x80", 4));
    w.set_string("empty", "");
    w.set_array_strings("strs", {"<unk>", "<s>", "</s>", "", std::string("\x00z", 2)});
    w.set_array_int32("ints", {-1, 0, 1, std::numeric_limits<int32_t>::min()});
    w.set_array_float32("floats", {1.5f, -0.0f, std::numeric_limits<float>::infinity()});
    GgufValue v;  // types the typed setters do not cover, through set_value
    v.type = GgufType::INT8, v.i = -5, v.u = static_cast<uint64_t>(-5);
    w.set_value("i8", v);
    v      = {};
    v.type = GgufType::FLOAT64, v.f = 3.141592653589793;
    w.set_value("f64", v);
    v      = {};
    v.type = GgufType::ARRAY, v.array_type = GgufType::UINT8, v.ints = {0, 255, 7};
    w.set_value("u8s", v);
    v      = {};
    v.type = GgufType::ARRAY, v.array_type = GgufType::BOOL, v.ints = {1, 0};
    w.set_value("bools", v);
    v      = {};
    v.type = GgufType::ARRAY, v.array_type = GgufType::INT16, v.ints = {};
    w.set_value("empty_i16", v);

    auto a = random_bytes(4 * 8 * 3, 1);
    w.add_tensor("a.weight", {8, 3}, GgmlType::F32, a.data(), a.size());
    auto b = random_bytes(34 * 2 * 2 * 2, 2);  // q8_0: 34 bytes per 32 elements
    w.add_tensor("b.weight", {64, 2, 2}, GgmlType::Q8_0, b.data(), b.size());
    auto c = random_bytes(2 * 5, 3);
    w.add_tensor("c", {5}, GgmlType::F16, c.data(), c.size());
    auto d = random_bytes(2 * 2 * 1 * 3 * 2, 4);
    w.add_tensor("d.4d", {2, 1, 3, 2}, GgmlType::BF16, d.data(), d.size());
    return w;
}

}  // namespace

TEST(Gguf, RoundTripEveryValueAndTensor) {
    GgufWriter w = sample_writer();
    auto bytes   = w.to_bytes();
    GgufFile f   = GgufFile::from_bytes(bytes, "mem.gguf");
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_EQ(f.data_offset() % 32, 0u);
    EXPECT_EQ(f.file_size(), bytes.size());

    ASSERT_EQ(f.metadata().size(), 18u);
    EXPECT_EQ(f.metadata()[0].key, "general.architecture");  // insertion order
    EXPECT_EQ(f.metadata()[17].key, "empty_i16");
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
    EXPECT_EQ(f.get_uint("u32"), 4000000000u);
    EXPECT_EQ(f.get_int("i32"), -123456);
    EXPECT_EQ(f.get_uint("u64"), std::numeric_limits<uint64_t>::max());
    EXPECT_FLOAT_EQ(static_cast<float>(f.get_float("f32")), 0.1f);
    EXPECT_TRUE(f.get_bool("yes"));
    EXPECT_FALSE(f.get_bool("no"));
    EXPECT_EQ(f.get_string("utf8"), "caf\xc3\xa9 \xe4\xb8\xad");
    EXPECT_EQ(f.get_string("not_utf8"), std::string("\xff\xfe\x00\x80", 4));
    EXPECT_EQ(f.get_string("empty"), "");
    EXPECT_EQ(f.get_int("i8"), -5);
    EXPECT_DOUBLE_EQ(f.get_float("f64"), 3.141592653589793);
    EXPECT_EQ(f.get_array("strs", GgufType::STRING).strings,
              (std::vector<std::string>{"<unk>", "<s>", "</s>", "", std::string("\x00z", 2)}));
    EXPECT_EQ(f.get_array("ints", GgufType::INT32).ints,
              (std::vector<int64_t>{-1, 0, 1, std::numeric_limits<int32_t>::min()}));
    const GgufValue& fl = f.get_array("floats", GgufType::FLOAT32);
    ASSERT_EQ(fl.array_size(), 3u);
    EXPECT_EQ(fl.floats[0], 1.5);
    EXPECT_TRUE(std::signbit(fl.floats[1]));
    EXPECT_TRUE(std::isinf(fl.floats[2]));
    EXPECT_EQ(f.get_array("u8s", GgufType::UINT8).ints, (std::vector<int64_t>{0, 255, 7}));
    EXPECT_EQ(f.get_array("bools", GgufType::BOOL).ints, (std::vector<int64_t>{1, 0}));
    EXPECT_EQ(f.get_array("empty_i16", GgufType::INT16).array_size(), 0u);

    ASSERT_EQ(f.tensors().size(), 4u);
    const GgufTensorInfo* b = f.tensor("b.weight");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->type, GgmlType::Q8_0);
    EXPECT_EQ(b->dims, (std::vector<uint64_t>{64, 2, 2}));
    EXPECT_EQ(b->n_elements, 256u);
    EXPECT_EQ(b->n_bytes, 272u);
    EXPECT_EQ(b->rows(), 4u);
    EXPECT_EQ(b->cols(), 64u);
    auto expect_b = random_bytes(272, 2);
    EXPECT_EQ(std::vector<uint8_t>(b->data, b->data + b->n_bytes), expect_b);
    for (const auto& t : f.tensors()) {
        EXPECT_EQ(t.offset % 32, 0u) << t.name;
        ASSERT_LE(f.data_offset() + t.offset + t.n_bytes, bytes.size()) << t.name;
        EXPECT_EQ(0, std::memcmp(t.data, bytes.data() + f.data_offset() + t.offset, t.n_bytes)) << t.name;
    }
    EXPECT_EQ(f.tensor("d.4d")->dims, (std::vector<uint64_t>{2, 1, 3, 2}));
    EXPECT_EQ(f.tensor("missing"), nullptr);
}

TEST(Gguf, RewriteOfReadFileIsByteIdentical) {
    auto bytes = sample_writer().to_bytes();
    GgufFile f = GgufFile::from_bytes(bytes, "mem.gguf");
    GgufWriter w;
    for (const auto& kv : f.metadata()) w.set_value(kv.key, kv.value);
    for (const auto& t : f.tensors()) w.add_tensor(t.name, t.dims, t.type, t.data, t.n_bytes);
    EXPECT_EQ(w.to_bytes(), bytes);
}

TEST(Gguf, CustomAlignmentIsRespected) {
    GgufWriter w;
    w.set_uint32("general.alignment", 256);
    auto x = random_bytes(12, 5);
    w.add_tensor("x", {3}, GgmlType::F32, x.data(), x.size());
    w.add_tensor("y", {3}, GgmlType::F32, x.data(), x.size());
    auto bytes = w.to_bytes();
    EXPECT_EQ(bytes.size() % 256, 0u);
    GgufFile f = GgufFile::from_bytes(bytes, "mem.gguf");
    EXPECT_EQ(f.alignment(), 256u);
    EXPECT_EQ(f.data_offset() % 256, 0u);
    EXPECT_EQ(f.tensor("y")->offset, 256u);
    EXPECT_THROW(w.set_uint32("general.alignment", 48), std::invalid_argument);
    EXPECT_THROW(w.set_int32("general.alignment", 64), std::invalid_argument);
}

TEST(Gguf, VersionTwoIsAccepted) {
    auto bytes = sample_writer().to_bytes();
    bytes[4]   = 2;
    GgufFile f = GgufFile::from_bytes(bytes, "v2.gguf");
    EXPECT_EQ(f.version(), 2u);
    EXPECT_EQ(f.tensors().size(), 4u);
}

TEST(Gguf, TypedGettersReportKeyAndType) {
    GgufFile f   = GgufFile::from_bytes(sample_writer().to_bytes(), "mem.gguf");
    auto message = [&](auto&& fn) -> std::string {
        try {
            fn();
        } catch (const GgufError& e) {
            return e.what();
        }
        return "no error";
    };
    EXPECT_EQ(message([&] { f.get_uint("nope"); }), "mem.gguf: nope: missing");
    EXPECT_EQ(message([&] { f.get_uint("i32"); }), "mem.gguf: i32: expected a non-negative integer, got int32 -123456");
    EXPECT_EQ(message([&] { f.get_string("u32"); }), "mem.gguf: u32: expected string, got uint32 4000000000");
    EXPECT_EQ(message([&] { f.get_int("u64"); }).find("u64: expected an integer that fits int64"), 10u);
    EXPECT_NE(
        message([&] { f.get_array("strs", GgufType::INT32); }).find("expected array of int32, got array of 5 string"),
        std::string::npos);
    EXPECT_NE(message([&] { f.get_bool("utf8"); }).find("expected bool, got string"), std::string::npos);
    EXPECT_NE(message([&] { f.get_float("strs"); }).find("expected a number"), std::string::npos);
    EXPECT_EQ(f.get_float("u32"), 4000000000.0);  // integers are accepted as numbers
    EXPECT_EQ(f.get_uint_or("absent", 7), 7u);
    EXPECT_EQ(f.get_float_or("absent", 2.5), 2.5);
    EXPECT_TRUE(f.get_bool_or("absent", true));
    EXPECT_EQ(f.get_string_or("absent", "x"), "x");
    EXPECT_THROW(f.get_uint_or("utf8", 7), GgufError);  // present with the wrong type is still an error
    EXPECT_THROW(f.fail("field", "why"), GgufError);
}

TEST(Gguf, WriterRejectsBadTensors) {
    GgufWriter w;
    float x[4] = {};
    EXPECT_THROW(w.add_tensor("x", {4}, GgmlType::F32, x, 12), std::invalid_argument);   // size mismatch
    EXPECT_THROW(w.add_tensor("x", {0}, GgmlType::F32, x, 0), std::invalid_argument);    // zero dim
    EXPECT_THROW(w.add_tensor("x", {4}, GgmlType::Q8_0, x, 16), std::invalid_argument);  // not a block multiple
    EXPECT_THROW(w.add_tensor("x", {1, 1, 1, 1, 4}, GgmlType::F32, x, 16), std::invalid_argument);
    EXPECT_THROW(w.add_tensor(std::string(64, 'n'), {4}, GgmlType::F32, x, 16), std::invalid_argument);
    w.add_tensor("x", {4}, GgmlType::F32, x, 16);
    EXPECT_THROW(w.add_tensor("x", {4}, GgmlType::F32, x, 16), std::invalid_argument);  // duplicate
}

TEST(Gguf, WriteAndOpenFileThroughMmap) {
    auto path    = (speculum::test::tmp_dir() / "gguf_roundtrip.gguf").string();
    GgufWriter w = sample_writer();
    w.write(path);
    GgufFile f = GgufFile::open(path);
    EXPECT_EQ(f.path(), path);
    EXPECT_EQ(f.tensors().size(), 4u);
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(disk, w.to_bytes());
    for (const auto& e : std::filesystem::directory_iterator(speculum::test::tmp_dir()))  // no temporary left behind
        EXPECT_NE(e.path().filename().string().rfind("gguf_roundtrip.gguf.tmp", 0), 0u) << e.path();
    GgufFile moved = std::move(f);  // data pointers stay valid across a move
    EXPECT_EQ(moved.tensor("c")->data[0], random_bytes(10, 3)[0]);
}

TEST(Gguf, OpenReportsMissingFileAndDirectory) {
    try {
        GgufFile::open("/nonexistent/model.gguf");
        FAIL();
    } catch (const GgufError& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf: cannot open"), std::string::npos);
    }
    EXPECT_THROW(GgufFile::open(speculum::test::tmp_dir().string()), GgufError);
    EXPECT_THROW(GgufWriter().write("/nonexistent/dir/x.gguf"), std::runtime_error);
}

TEST(Gguf, RealLlamaCppVocabFilesLoad) {
    SPECULUM_SHARED_OR_SKIP(shared);
    {
        GgufFile f = GgufFile::open((shared / "vocab" / "ggml-vocab-llama-spm.gguf").string());
        EXPECT_EQ(f.version(), 3u);
        EXPECT_TRUE(f.tensors().empty());
        EXPECT_EQ(f.get_string("general.architecture"), "llama");
        EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
        const GgufValue& tokens = f.get_array("tokenizer.ggml.tokens", GgufType::STRING);
        ASSERT_EQ(tokens.array_size(), 32000u);
        EXPECT_EQ(tokens.strings[0], "<unk>");
        EXPECT_EQ(tokens.strings[1], "<s>");
        EXPECT_EQ(tokens.strings[2], "</s>");
        EXPECT_EQ(f.get_array("tokenizer.ggml.scores", GgufType::FLOAT32).array_size(), 32000u);
        EXPECT_EQ(f.get_array("tokenizer.ggml.token_type", GgufType::INT32).array_size(), 32000u);
        EXPECT_EQ(f.get_uint("tokenizer.ggml.bos_token_id"), 1u);
    }
    {
        GgufFile f = GgufFile::open((shared / "vocab" / "ggml-vocab-gpt-2.gguf").string());
        EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
        const GgufValue& tokens = f.get_array("tokenizer.ggml.tokens", GgufType::STRING);
        EXPECT_EQ(tokens.array_size(), 50257u);
        EXPECT_EQ(tokens.strings[0], "!");
        EXPECT_EQ(f.get_array("tokenizer.ggml.merges", GgufType::STRING).array_size(), 50000u);
    }
}

// Two writers of the same path at once (parallel tests do this) both succeed and leave one whole file.
TEST(Gguf, ConcurrentWritersOfOnePathBothSucceed) {
    auto path    = (speculum::test::tmp_dir() / "gguf_concurrent.gguf").string();
    GgufWriter w = sample_writer();
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 20; ++i) {
                try {
                    w.write(path);
                } catch (const std::exception&) {
                    ++failures;
                }
            }
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(disk, w.to_bytes());
}

// Released pages of the mapping read back the same bytes (they fault in from the file again); a heap image is never
// touched, and ranges outside the mapping are ignored (issue #49: a repacked copy releases the file's pages).
TEST(Gguf, ReleasedPagesReadBackTheFile) {
    const SyntheticSpec spec = speculum::test::spec_gqa(speculum::kernels::GgmlType::Q8_0);
    const std::string path   = (speculum::test::tmp_dir() / "release_pages.gguf").string();
    write_synthetic_gguf(spec, path);
    const GgufFile f        = GgufFile::open(path);
    const GgufTensorInfo* t = f.tensor("blk.0.ffn_down.weight");
    ASSERT_NE(t, nullptr);
    const std::vector<uint8_t> before(static_cast<const uint8_t*>(t->data),
                                      static_cast<const uint8_t*>(t->data) + t->n_bytes);
    f.release_pages(t->data, t->n_bytes);
    f.release_tensor_pages();
    EXPECT_TRUE(std::equal(before.begin(), before.end(), static_cast<const uint8_t*>(t->data)));
    std::vector<uint8_t> heap(4096, 7);
    f.release_pages(heap.data(), heap.size());  // not in the mapping: nothing happens
    EXPECT_EQ(heap[100], 7);
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const GgufFile img       = GgufFile::from_bytes(std::move(bytes), "image");
    const GgufTensorInfo* ti = img.tensor("blk.0.ffn_down.weight");
    img.release_pages(ti->data, ti->n_bytes);  // a heap image: nothing happens
    img.release_tensor_pages();
    EXPECT_TRUE(std::equal(before.begin(), before.end(), static_cast<const uint8_t*>(ti->data)));
}
