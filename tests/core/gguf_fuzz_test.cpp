// Seeded mutation fuzzing of the GGUF reader: 200 000 inputs derived from small valid files (bit flips, byte
// sets, truncations, insertions, deletions, chunk copies and targeted rewrites of counts, lengths, types, dims
// and offsets). Each input must parse or throw GgufError; a parsed input must satisfy the reader's invariants and
// survive a rewrite with GgufWriter. Set SPECULUM_GGUF_SEED_DIR to also write the seeds (a libFuzzer corpus).
#include "core/model/gguf.h"
#include "core/model/gguf_writer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>

using namespace speculum::model;
using speculum::kernels::GgmlType;

namespace {

constexpr int kInputs    = 200000;       // mutated inputs per run (the brief asks for at least 100 000)
constexpr uint64_t kSeed = 0x5eed6a7fu;  // fixed: every run explores the same inputs
constexpr int kMaxStack  = 3;            // mutations applied to one input: 1..kMaxStack

std::vector<uint8_t> noise(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    return b;
}

void add(GgufWriter& w, const std::string& name, std::vector<uint64_t> dims, GgmlType t, uint32_t seed) {
    uint64_t rows = 1;
    for (size_t d = 1; d < dims.size(); ++d) rows *= dims[d];
    auto bytes = noise(speculum::kernels::ggml_row_size(t, dims[0]) * rows, seed);
    w.add_tensor(name, dims, t, bytes.data(), bytes.size());
}

std::vector<std::vector<uint8_t>> make_seeds() {
    std::vector<std::vector<uint8_t>> seeds;
    {  // a tiny llama-like model with a vocabulary
        GgufWriter w;
        w.set_string("general.architecture", "llama");
        w.set_uint32("llama.block_count", 1);
        w.set_uint32("llama.embedding_length", 32);
        w.set_float32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
        std::vector<std::string> tokens;
        std::vector<float> scores;
        std::vector<int32_t> types;
        for (int i = 0; i < 20; ++i) {
            std::string tok = "t";
            tokens.push_back(tok += std::to_string(i));
            scores.push_back(-static_cast<float>(i));
            types.push_back(1);
        }
        w.set_array_strings("tokenizer.ggml.tokens", tokens);
        w.set_array_float32("tokenizer.ggml.scores", scores);
        w.set_array_int32("tokenizer.ggml.token_type", types);
        add(w, "token_embd.weight", {32, 20}, GgmlType::Q8_0, 1);
        add(w, "blk.0.attn_q.weight", {32, 32}, GgmlType::F16, 2);
        add(w, "output_norm.weight", {32}, GgmlType::F32, 3);
        seeds.push_back(w.to_bytes());
    }
    {  // every scalar type, no tensors
        GgufWriter w;
        GgufValue v;
        for (uint32_t t : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u, 10u, 11u, 12u}) {
            v      = {};
            v.type = static_cast<GgufType>(t);
            v.i = v.u = (t == 7u) ? 1 : 3;
            v.f       = 0.5;
            w.set_value("k" + std::to_string(t), v);
        }
        v            = {};
        v.type       = GgufType::ARRAY;
        v.array_type = GgufType::BOOL;
        v.ints       = {1, 0, 1};
        w.set_value("bools", v);
        w.set_string("s", "hello");
        seeds.push_back(w.to_bytes());
    }
    {  // alignment 64, GGUF v2, several types and ranks
        GgufWriter w;
        w.set_uint32("general.alignment", 64);
        add(w, "a", {32, 2}, GgmlType::Q4_0, 4);
        add(w, "b", {3, 2, 2, 2}, GgmlType::BF16, 5);
        add(w, "c", {256}, GgmlType::Q4_K, 6);
        auto b = w.to_bytes();
        b[4]   = 2;
        seeds.push_back(b);
    }
    {  // the smallest valid file
        seeds.push_back(GgufWriter().to_bytes());
    }
    return seeds;
}

struct Field {
    size_t pos;
    int width;  // 4 or 8
};

uint64_t load(const std::vector<uint8_t>& b, size_t pos, int width) {
    uint64_t v = 0;
    std::memcpy(&v, b.data() + pos, static_cast<size_t>(width));
    return v;
}

// Positions of the structural fields of a VALID file: counts, lengths, types, dims, offsets.
std::vector<Field> structural_fields(const std::vector<uint8_t>& b) {
    std::vector<Field> f{{4, 4}, {8, 8}, {16, 8}};
    uint64_t n_tensors = load(b, 8, 8), n_kv = load(b, 16, 8);
    size_t p                           = 24;
    auto string_at                     = [&](size_t& q) { f.push_back({q, 8}), q += 8 + load(b, q, 8); };
    static const size_t scalar_bytes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    for (uint64_t k = 0; k < n_kv; ++k) {
        string_at(p);
        f.push_back({p, 4});
        uint32_t t = static_cast<uint32_t>(load(b, p, 4));
        p += 4;
        if (t == 9) {
            f.push_back({p, 4}), f.push_back({p + 4, 8});
            uint32_t et = static_cast<uint32_t>(load(b, p, 4));
            uint64_t n  = load(b, p + 4, 8);
            p += 12;
            if (et == 8)
                for (uint64_t e = 0; e < n; ++e) string_at(p);
            else
                p += scalar_bytes[et] * n;
        } else if (t == 8) {
            string_at(p);
        } else {
            if (scalar_bytes[t] >= 4) f.push_back({p, static_cast<int>(scalar_bytes[t] == 8 ? 8 : 4)});
            p += scalar_bytes[t];
        }
    }
    for (uint64_t k = 0; k < n_tensors; ++k) {
        string_at(p);
        uint32_t nd = static_cast<uint32_t>(load(b, p, 4));
        f.push_back({p, 4});
        p += 4;
        for (uint32_t d = 0; d < nd; ++d) f.push_back({p, 8}), p += 8;
        f.push_back({p, 4}), f.push_back({p + 4, 8});
        p += 12;
    }
    return f;
}

void mutate(std::vector<uint8_t>& b, const std::vector<Field>& fields, std::mt19937_64& rng) {
    auto pick = [&](uint64_t n) { return n ? rng() % n : 0; };
    switch (pick(8)) {
        case 0:  // bit flip
            if (!b.empty()) b[pick(b.size())] ^= static_cast<uint8_t>(1u << pick(8));
            break;
        case 1: {  // byte set to 0, 0xFF or random
            if (b.empty()) break;
            uint64_t which    = pick(3);
            b[pick(b.size())] = which == 0 ? 0 : which == 1 ? 0xFF : static_cast<uint8_t>(rng());
            break;
        }
        case 2:  // truncation
            b.resize(pick(b.size() + 1));
            break;
        case 3: {  // insertion of 1..16 random bytes
            size_t at = pick(b.size() + 1), n = 1 + pick(16);
            std::vector<uint8_t> ins(n);
            for (auto& x : ins) x = static_cast<uint8_t>(rng());
            b.insert(b.begin() + static_cast<long>(at), ins.begin(), ins.end());
            break;
        }
        case 4: {  // deletion of 1..16 bytes
            if (b.empty()) break;
            size_t at = pick(b.size()), n = std::min<size_t>(1 + pick(16), b.size() - at);
            b.erase(b.begin() + static_cast<long>(at), b.begin() + static_cast<long>(at + n));
            break;
        }
        case 5: {  // copy a chunk over another place (duplicates keys, names, headers)
            if (b.size() < 2) break;
            size_t from = pick(b.size()), to = pick(b.size());
            size_t n = std::min({static_cast<size_t>(1 + pick(64)), b.size() - from, b.size() - to});
            std::memmove(b.data() + to, b.data() + from, n);
            break;
        }
        default: {  // targeted: rewrite a count, length, type, dim or offset with an edge value
            if (fields.empty()) break;
            Field fl = fields[pick(fields.size())];
            if (fl.pos + static_cast<size_t>(fl.width) > b.size()) break;
            uint64_t old           = load(b, fl.pos, fl.width);
            const uint64_t edges[] = {0,
                                      1,
                                      2,
                                      3,
                                      4,
                                      5,
                                      8,
                                      9,
                                      12,
                                      13,
                                      31,
                                      32,
                                      33,
                                      63,
                                      64,
                                      255,
                                      0x7FFFFFFFu,
                                      0x80000000u,
                                      0xFFFFFFFFu,
                                      uint64_t(1) << 32,
                                      (uint64_t(1) << 63) - 1,
                                      uint64_t(1) << 63,
                                      ~uint64_t(0),
                                      old + 1,
                                      old - 1,
                                      old * 2,
                                      old + 32,
                                      old - 32,
                                      old + 4096,
                                      static_cast<uint64_t>(b.size()),
                                      rng()};
            uint64_t v             = edges[pick(std::size(edges))];
            std::memcpy(b.data() + fl.pos, &v, static_cast<size_t>(fl.width));
            break;
        }
    }
}

// What a successful parse must guarantee; returns "" when all holds.
std::string check_parsed(const GgufFile& f, const uint8_t* base, size_t size) {
    if (f.version() != 2 && f.version() != 3) return "bad version accepted";
    if (f.alignment() == 0 || (f.alignment() & (f.alignment() - 1))) return "bad alignment accepted";
    if (f.data_offset() % f.alignment()) return "misaligned data section";
    for (const auto& t : f.tensors()) {
        if (t.dims.empty() || t.dims.size() > 4) return "bad n_dims accepted: " + t.name;
        if (t.data != base + f.data_offset() + t.offset) return "data pointer mismatch: " + t.name;
        if (f.data_offset() + t.offset + t.n_bytes > size) return "tensor past the end accepted: " + t.name;
        if (t.offset % f.alignment()) return "misaligned tensor accepted: " + t.name;
        if (t.n_bytes != speculum::kernels::ggml_row_size(t.type, t.dims[0]) * t.rows()) return "n_bytes: " + t.name;
        if (f.tensor(t.name) != &t) return "tensor lookup: " + t.name;
    }
    for (const auto& kv : f.metadata())
        if (f.find(kv.key) != &kv.value) return "key lookup: " + kv.key;
    // A parsed file must be writable and re-readable with the same content.
    GgufWriter w;
    for (const auto& kv : f.metadata()) w.set_value(kv.key, kv.value);
    for (const auto& t : f.tensors()) w.add_tensor(t.name, t.dims, t.type, t.data, t.n_bytes);
    GgufFile g = GgufFile::from_bytes(w.to_bytes(), "rewrite");
    if (g.metadata().size() != f.metadata().size() || g.tensors().size() != f.tensors().size()) return "rewrite";
    for (size_t k = 0; k < f.metadata().size(); ++k) {
        const GgufValue &a = f.metadata()[k].value, &c = g.metadata()[k].value;
        if (g.metadata()[k].key != f.metadata()[k].key || a.type != c.type || a.array_size() != c.array_size() ||
            a.s != c.s || a.strings != c.strings || a.ints != c.ints || a.u != c.u)
            return "rewrite changed key " + f.metadata()[k].key;
    }
    for (size_t k = 0; k < f.tensors().size(); ++k) {
        const auto &a = f.tensors()[k], &c = g.tensors()[k];
        if (a.name != c.name || a.dims != c.dims || a.type != c.type || std::memcmp(a.data, c.data, a.n_bytes))
            return "rewrite changed tensor " + a.name;
    }
    return "";
}

}  // namespace

TEST(GgufFuzz, MutatedInputsParseOrThrowGgufError) {
    auto seeds = make_seeds();
    if (const char* dir = std::getenv("SPECULUM_GGUF_SEED_DIR"))
        for (size_t s = 0; s < seeds.size(); ++s)
            std::ofstream(std::string(dir) + "/seed" + std::to_string(s) + ".gguf", std::ios::binary)
                .write(reinterpret_cast<const char*>(seeds[s].data()), static_cast<std::streamsize>(seeds[s].size()));
    std::vector<std::vector<Field>> fields;
    for (const auto& s : seeds) {
        ASSERT_NO_THROW(GgufFile::from_bytes(s, "seed"));  // seeds are valid, so the walker below is exact
        fields.push_back(structural_fields(s));
    }

    std::mt19937_64 rng(kSeed);
    int parsed = 0, rejected = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kInputs; ++i) {
        size_t s                = rng() % seeds.size();
        std::vector<uint8_t> in = seeds[s];
        for (int m = 1 + static_cast<int>(rng() % kMaxStack); m > 0; --m) mutate(in, fields[s], rng);
        const uint8_t* base = in.data();  // from_bytes moves the buffer, so pointers into it stay valid
        size_t size         = in.size();
        try {
            GgufFile f      = GgufFile::from_bytes(std::move(in), "fuzz.gguf");
            std::string bad = check_parsed(f, base, size);
            ASSERT_EQ(bad, "") << "input " << i << " (seed " << s << ")";
            ++parsed;
        } catch (const GgufError& e) {
            ASSERT_EQ(std::string(e.what()).rfind("fuzz.gguf: ", 0), 0u) << e.what();
            ++rejected;
        } catch (const std::exception& e) {
            FAIL() << "input " << i << " (seed " << s << "): unexpected exception: " << e.what();
        }
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "[gguf fuzz] " << kInputs << " inputs in " << secs << " s: " << parsed << " parsed, " << rejected
              << " rejected\n";
    EXPECT_EQ(parsed + rejected, kInputs);
    // Both outcomes must be common, or the mutations are too weak (all parse) or too blunt (all rejected).
    EXPECT_GT(parsed, kInputs / 50);
    EXPECT_GT(rejected, kInputs / 2);
}
