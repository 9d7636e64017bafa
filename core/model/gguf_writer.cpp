// GGUF v3 writer with llama.cpp's layout: header, metadata in insertion order, tensor infos, zero padding to the
// alignment, then each tensor's bytes followed by zero padding to the alignment (the last tensor too).
#include "core/model/gguf_writer.h"

#include "core/file_io.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace speculum::model {

namespace {

void put_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
    // resize + memcpy rather than insert(): GCC 12 reports a false -Wstringop-overflow on the latter.
    size_t at = out.size();
    out.resize(at + n);
    if (n > 0) std::memcpy(out.data() + at, p, n);
}

template <typename T>
void put_pod(std::vector<uint8_t>& out, T v) {
    put_bytes(out, &v, sizeof(T));
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
    put_pod<uint64_t>(out, s.size());
    put_bytes(out, s.data(), s.size());
}

// One element of type t whose value is held as integer bits `i` or float `f`.
void put_number(std::vector<uint8_t>& out, GgufType t, int64_t i, double f) {
    switch (t) {
        case GgufType::UINT8:
            put_pod(out, static_cast<uint8_t>(i));
            break;
        case GgufType::INT8:
            put_pod(out, static_cast<int8_t>(i));
            break;
        case GgufType::UINT16:
            put_pod(out, static_cast<uint16_t>(i));
            break;
        case GgufType::INT16:
            put_pod(out, static_cast<int16_t>(i));
            break;
        case GgufType::UINT32:
            put_pod(out, static_cast<uint32_t>(i));
            break;
        case GgufType::INT32:
            put_pod(out, static_cast<int32_t>(i));
            break;
        case GgufType::UINT64:
            put_pod(out, static_cast<uint64_t>(i));
            break;
        case GgufType::INT64:
            put_pod(out, i);
            break;
        case GgufType::BOOL:
            put_pod(out, static_cast<uint8_t>(i != 0));
            break;
        case GgufType::FLOAT32:
            put_pod(out, static_cast<float>(f));
            break;
        case GgufType::FLOAT64:
            put_pod(out, f);
            break;
        case GgufType::STRING:
        case GgufType::ARRAY:
            throw std::logic_error("put_number: not a number type");
    }
}

bool known_scalar(GgufType t) {
    return static_cast<uint32_t>(t) <= 12 && t != GgufType::ARRAY;
}

bool is_float_type(GgufType t) {
    return t == GgufType::FLOAT32 || t == GgufType::FLOAT64;
}

void put_value(std::vector<uint8_t>& out, const GgufValue& v) {
    put_pod(out, static_cast<uint32_t>(v.type));
    if (v.type == GgufType::STRING) return put_string(out, v.s);
    if (v.type != GgufType::ARRAY) {
        // Unsigned types are taken from `u`, signed ones and BOOL from `i` (GgufValue keeps both).
        bool is_unsigned = v.type == GgufType::UINT8 || v.type == GgufType::UINT16 || v.type == GgufType::UINT32 ||
                           v.type == GgufType::UINT64;
        int64_t bits = is_unsigned ? static_cast<int64_t>(v.u) : v.i;
        return put_number(out, v.type, bits, v.f);
    }
    put_pod(out, static_cast<uint32_t>(v.array_type));
    put_pod<uint64_t>(out, v.array_size());
    if (v.array_type == GgufType::STRING)
        for (const auto& s : v.strings) put_string(out, s);
    else if (is_float_type(v.array_type))
        for (double f : v.floats) put_number(out, v.array_type, 0, f);
    else
        for (int64_t i : v.ints) put_number(out, v.array_type, i, 0.0);
}

uint64_t pad_to(uint64_t n, uint64_t alignment) {
    return (n + alignment - 1) / alignment * alignment;
}

}  // namespace

// ---- metadata ----

void GgufWriter::put(const std::string& key, GgufValue v) {
    if (v.type == GgufType::ARRAY ? !known_scalar(v.array_type) : !known_scalar(v.type))
        throw std::invalid_argument("gguf writer: key '" + key + "': invalid value type");
    if (key == "general.alignment" && (v.type != GgufType::UINT32 || v.u == 0 || !std::has_single_bit(v.u)))
        throw std::invalid_argument("gguf writer: general.alignment must be a uint32 nonzero power of two");
    for (auto& kv : m_kv)
        if (kv.key == key) {
            kv.value = std::move(v);  // setting a key again replaces its value and keeps its position
            return;
        }
    m_kv.push_back({key, std::move(v)});
}

static GgufValue integer_value(GgufType t, int64_t i, uint64_t u) {
    GgufValue v;
    v.type = t;
    v.i    = i;
    v.u    = u;
    return v;
}

void GgufWriter::set_uint32(const std::string& key, uint32_t v) {
    put(key, integer_value(GgufType::UINT32, v, v));
}
void GgufWriter::set_int32(const std::string& key, int32_t v) {
    put(key, integer_value(GgufType::INT32, v, static_cast<uint64_t>(static_cast<int64_t>(v))));
}
void GgufWriter::set_uint64(const std::string& key, uint64_t v) {
    put(key, integer_value(GgufType::UINT64, static_cast<int64_t>(v), v));
}
void GgufWriter::set_bool(const std::string& key, bool v) {
    put(key, integer_value(GgufType::BOOL, v, v));
}

void GgufWriter::set_float32(const std::string& key, float v) {
    GgufValue val;
    val.type = GgufType::FLOAT32;
    val.f    = v;
    put(key, std::move(val));
}

void GgufWriter::set_string(const std::string& key, const std::string& v) {
    GgufValue val;
    val.type = GgufType::STRING;
    val.s    = v;
    put(key, std::move(val));
}

void GgufWriter::set_array_strings(const std::string& key, const std::vector<std::string>& v) {
    GgufValue val;
    val.type       = GgufType::ARRAY;
    val.array_type = GgufType::STRING;
    val.strings    = v;
    put(key, std::move(val));
}

void GgufWriter::set_array_int32(const std::string& key, const std::vector<int32_t>& v) {
    GgufValue val;
    val.type       = GgufType::ARRAY;
    val.array_type = GgufType::INT32;
    val.ints.assign(v.begin(), v.end());
    put(key, std::move(val));
}

void GgufWriter::set_array_float32(const std::string& key, const std::vector<float>& v) {
    GgufValue val;
    val.type       = GgufType::ARRAY;
    val.array_type = GgufType::FLOAT32;
    val.floats.assign(v.begin(), v.end());
    put(key, std::move(val));
}

void GgufWriter::set_value(const std::string& key, const GgufValue& v) {
    put(key, v);
}

// ---- tensors ----

void GgufWriter::add_tensor(const std::string& name, const std::vector<uint64_t>& dims, kernels::GgmlType type,
                            const void* data, uint64_t n_bytes) {
    auto bad = [&](const std::string& why) {
        throw std::invalid_argument("gguf writer: tensor '" + name + "': " + why);
    };
    if (name.size() > GgufFile::kMaxNameBytes) bad("name is longer than 63 bytes");
    for (const auto& t : m_tensors)
        if (t.name == name) bad("duplicate tensor name");
    if (dims.empty() || dims.size() > GgufFile::kMaxDims) bad("expected 1 to 4 dims");
    const kernels::GgmlTypeTraits* traits = kernels::ggml_type_traits(type);
    if (!traits) bad("unknown type");
    if (!traits->in_files) bad(std::string("type ") + traits->name + " is an in-memory layout, not a GGUF type");
    uint64_t rows = 1;
    for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] == 0) bad("dims[" + std::to_string(d) + "] is 0");
        if (d > 0 && __builtin_mul_overflow(rows, dims[d], &rows)) bad("size overflows");
    }
    if (dims[0] % traits->block_size != 0) bad("row length is not a multiple of the block size");
    uint64_t expected = 0;
    if (__builtin_mul_overflow(kernels::ggml_row_size(type, dims[0]), rows, &expected)) bad("size overflows");
    if (n_bytes != expected)
        bad("got " + std::to_string(n_bytes) + " bytes, type and dims need " + std::to_string(expected));
    const auto* p = static_cast<const uint8_t*>(data);
    m_tensors.push_back({name, dims, type, std::vector<uint8_t>(p, p + n_bytes)});
}

// ---- serialisation ----

// Header, metadata, tensor infos and the padding up to the data section; `alignment` receives the alignment.
static std::vector<uint8_t> serialize_meta(const std::vector<GgufKv>& kvs, const auto& tensors, uint64_t& alignment) {
    alignment = GgufFile::kDefaultAlignment;
    for (const auto& kv : kvs)
        if (kv.key == "general.alignment") alignment = kv.value.u;

    std::vector<uint8_t> out;
    put_bytes(out, "GGUF", 4);
    put_pod<uint32_t>(out, 3);
    put_pod<uint64_t>(out, tensors.size());
    put_pod<uint64_t>(out, kvs.size());
    for (const auto& kv : kvs) {
        put_string(out, kv.key);
        put_value(out, kv.value);
    }
    uint64_t offset = 0;
    for (const auto& t : tensors) {
        put_string(out, t.name);
        put_pod<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
        for (uint64_t d : t.dims) put_pod(out, d);
        put_pod<uint32_t>(out, static_cast<uint32_t>(t.type));
        put_pod(out, offset);
        offset += pad_to(t.bytes.size(), alignment);
    }
    out.resize(pad_to(out.size(), alignment), 0);
    return out;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
    uint64_t alignment       = 0;
    std::vector<uint8_t> out = serialize_meta(m_kv, m_tensors, alignment);
    for (const auto& t : m_tensors) {
        put_bytes(out, t.bytes.data(), t.bytes.size());
        out.resize(pad_to(out.size(), alignment), 0);
    }
    return out;
}

void GgufWriter::write(const std::string& path) const {
    uint64_t alignment        = 0;
    std::vector<uint8_t> meta = serialize_meta(m_kv, m_tensors, alignment);
    // OutputFile: a temporary sibling of our own (mkstemp), then an atomic rename; two writers of the same path (e.g.
    // parallel tests) never remove each other's half-written file, a reader never sees a partial one, and a full
    // disk leaves the target as it was.
    OutputFile out(path);
    static const char zeros[4096] = {};  // alignment is at most 2^31 only in theory; padding is written in chunks
    out.write(std::string_view(reinterpret_cast<const char*>(meta.data()), meta.size()));
    for (const auto& t : m_tensors) {
        out.write(std::string_view(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size()));
        for (uint64_t pad = pad_to(t.bytes.size(), alignment) - t.bytes.size(); pad > 0;) {
            const size_t n = pad < sizeof(zeros) ? static_cast<size_t>(pad) : sizeof(zeros);
            out.write(std::string_view(zeros, n));
            pad -= n;
        }
    }
    out.commit();
}

}  // namespace speculum::model
