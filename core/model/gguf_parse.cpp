// GGUF v2/v3 parser over an in-memory image (the mmap or a heap copy). Every count and length is checked against
// the bytes that remain before anything is allocated for it, so a hostile file costs at most a small multiple of
// its own size in memory and a single pass in time. Errors read "FILE: FIELD: reason".
#include "core/model/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

namespace speculum::model {

static_assert(std::endian::native == std::endian::little, "GGUF is little-endian; big-endian hosts are unsupported");

namespace {

// Smallest on-disk size of one key-value pair (8-byte key length + 4-byte type + 1-byte value) and of one
// tensor info (8-byte name length + 4-byte n_dims + one 8-byte dim + 4-byte type + 8-byte offset).
constexpr uint64_t kMinKvBytes         = 13;
constexpr uint64_t kMinTensorInfoBytes = 32;

// On-disk bytes of one element of a metadata type; strings count their 8-byte length prefix (the minimum).
uint64_t element_bytes(uint32_t type) {
    switch (static_cast<GgufType>(type)) {
        case GgufType::UINT8:
        case GgufType::INT8:
        case GgufType::BOOL:
            return 1;
        case GgufType::UINT16:
        case GgufType::INT16:
            return 2;
        case GgufType::UINT32:
        case GgufType::INT32:
        case GgufType::FLOAT32:
            return 4;
        case GgufType::STRING:
        case GgufType::UINT64:
        case GgufType::INT64:
        case GgufType::FLOAT64:
            return 8;
        case GgufType::ARRAY:
            return 0;
    }
    return 0;  // unknown
}

std::string quoted(const std::string& s) {
    // Names may hold any bytes; keep messages on one printable line.
    std::string out = "'";
    for (unsigned char c : s.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
    if (s.size() > 80) out += "...";
    return out + "'";
}

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) {
    return __builtin_mul_overflow(a, b, out);
}
bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) {
    return __builtin_add_overflow(a, b, out);
}

// A bounds-checked little-endian reader. `field` names what is being read for the error message.
class Cursor {
public:
    Cursor(const uint8_t* data, uint64_t size, const std::string& file) : m_data(data), m_size(size), m_file(file) {}

    uint64_t pos() const { return m_pos; }
    uint64_t remaining() const { return m_size - m_pos; }

    [[noreturn]] void fail(const std::string& field, const std::string& reason) const {
        throw GgufError(m_file + ": " + field + ": " + reason);
    }

    void need(uint64_t n, const std::string& field) const {
        if (n > remaining())
            fail(field, "truncated: needs " + std::to_string(n) + " bytes at offset " + std::to_string(m_pos) +
                            ", the file has " + std::to_string(remaining()) + " left");
    }

    template <typename T>
    T read(const std::string& field) {
        need(sizeof(T), field);
        T v;
        std::memcpy(&v, m_data + m_pos, sizeof(T));
        m_pos += sizeof(T);
        return v;
    }

    std::string read_string(const std::string& field) {
        uint64_t n = read<uint64_t>(field);
        if (n > remaining())
            fail(field, "string length " + std::to_string(n) + " exceeds the " + std::to_string(remaining()) +
                            " bytes left in the file");
        std::string s(reinterpret_cast<const char*>(m_data + m_pos), n);
        m_pos += n;
        return s;
    }

private:
    const uint8_t* m_data;
    uint64_t m_size;
    uint64_t m_pos = 0;
    const std::string& m_file;
};

// One scalar of type `t` into v (t is a known non-array type).
void read_scalar(Cursor& c, GgufType t, GgufValue& v, const std::string& field) {
    v.type = t;
    switch (t) {
        case GgufType::UINT8:
            v.u = c.read<uint8_t>(field);
            v.i = static_cast<int64_t>(v.u);
            break;
        case GgufType::UINT16:
            v.u = c.read<uint16_t>(field);
            v.i = static_cast<int64_t>(v.u);
            break;
        case GgufType::UINT32:
            v.u = c.read<uint32_t>(field);
            v.i = static_cast<int64_t>(v.u);
            break;
        case GgufType::UINT64:
            v.u = c.read<uint64_t>(field);
            v.i = static_cast<int64_t>(v.u);
            break;
        case GgufType::INT8:
            v.i = c.read<int8_t>(field);
            v.u = static_cast<uint64_t>(v.i);
            break;
        case GgufType::INT16:
            v.i = c.read<int16_t>(field);
            v.u = static_cast<uint64_t>(v.i);
            break;
        case GgufType::INT32:
            v.i = c.read<int32_t>(field);
            v.u = static_cast<uint64_t>(v.i);
            break;
        case GgufType::INT64:
            v.i = c.read<int64_t>(field);
            v.u = static_cast<uint64_t>(v.i);
            break;
        case GgufType::FLOAT32:
            v.f = c.read<float>(field);
            break;
        case GgufType::FLOAT64:
            v.f = c.read<double>(field);
            break;
        case GgufType::BOOL: {
            uint8_t b = c.read<uint8_t>(field);
            if (b > 1) c.fail(field, "bool value " + std::to_string(b) + " is neither 0 nor 1");
            v.i = v.u = b;
            break;
        }
        case GgufType::STRING:
            v.s = c.read_string(field);
            break;
        case GgufType::ARRAY:
            c.fail(field, "internal: array passed as scalar");
    }
}

void read_array(Cursor& c, GgufValue& v, const std::string& field) {
    v.type      = GgufType::ARRAY;
    uint32_t et = c.read<uint32_t>(field + ": array element type");
    if (et == static_cast<uint32_t>(GgufType::ARRAY)) c.fail(field, "nested arrays are not supported");
    uint64_t elem = element_bytes(et);
    if (elem == 0) c.fail(field, "unknown array element type " + std::to_string(et));
    v.array_type = static_cast<GgufType>(et);
    uint64_t n   = c.read<uint64_t>(field + ": array length");
    if (n > c.remaining() / elem)
        c.fail(field, "array of " + std::to_string(n) + " " + gguf_type_name(v.array_type) + " cannot fit in the " +
                          std::to_string(c.remaining()) + " bytes left in the file");
    GgufValue e;
    if (v.array_type == GgufType::STRING) {
        v.strings.reserve(n);
        for (uint64_t k = 0; k < n; ++k) v.strings.push_back(c.read_string(field));
    } else if (v.array_type == GgufType::FLOAT32 || v.array_type == GgufType::FLOAT64) {
        v.floats.reserve(n);
        for (uint64_t k = 0; k < n; ++k) {
            read_scalar(c, v.array_type, e, field);
            v.floats.push_back(e.f);
        }
    } else {
        v.ints.reserve(n);
        for (uint64_t k = 0; k < n; ++k) {
            read_scalar(c, v.array_type, e, field);
            v.ints.push_back(e.i);
        }
    }
}

}  // namespace

void GgufFile::parse(const uint8_t* bytes, uint64_t size) {
    Cursor c(bytes, size, m_path);
    m_size = size;

    // ---- header: magic, version, counts ----
    if (size < 4) c.fail("magic", "file is " + std::to_string(size) + " bytes, too short to be GGUF");
    if (std::memcmp(bytes, "GGUF", 4) != 0) {
        std::string seen;
        for (int k = 0; k < 4; ++k) seen += (bytes[k] >= 0x20 && bytes[k] < 0x7f) ? static_cast<char>(bytes[k]) : '?';
        c.fail("magic", "expected 'GGUF', found '" + seen + "' (not a GGUF file)");
    }
    c.read<uint32_t>("magic");
    m_version = c.read<uint32_t>("version");
    if (m_version == 1)
        c.fail("version", "GGUF v1 is not supported (only v2 and v3); re-convert the model with a current llama.cpp");
    if (m_version != 2 && m_version != 3) {
        std::string hint = (m_version & 0xFFFFu) == 0 ? " (a big-endian file?)" : "";
        c.fail("version", "unsupported GGUF version " + std::to_string(m_version) + hint + "; expected 2 or 3");
    }
    uint64_t n_tensors = c.read<uint64_t>("n_tensors");
    uint64_t n_kv      = c.read<uint64_t>("n_kv");
    if (n_kv > c.remaining() / kMinKvBytes)
        c.fail("n_kv", std::to_string(n_kv) + " key-value pairs cannot fit in the " + std::to_string(c.remaining()) +
                           " bytes left in the file");
    if (n_tensors > c.remaining() / kMinTensorInfoBytes)
        c.fail("n_tensors", std::to_string(n_tensors) + " tensor infos cannot fit in the " +
                                std::to_string(c.remaining()) + " bytes left in the file");

    // ---- metadata ----
    m_kv.reserve(n_kv);
    for (uint64_t k = 0; k < n_kv; ++k) {
        std::string where = "key #" + std::to_string(k);
        std::string key   = c.read_string(where);
        where             = "key " + quoted(key) + " (#" + std::to_string(k) + ")";
        if (auto it = m_kv_index.find(key); it != m_kv_index.end())
            c.fail(where, "duplicate key (first seen as #" + std::to_string(it->second) + ")");
        uint32_t type = c.read<uint32_t>(where + ": value type");
        GgufValue v;
        if (type == static_cast<uint32_t>(GgufType::ARRAY))
            read_array(c, v, where);
        else if (element_bytes(type) == 0)
            c.fail(where, "unknown value type " + std::to_string(type));
        else
            read_scalar(c, static_cast<GgufType>(type), v, where);
        m_kv_index.emplace(key, m_kv.size());
        m_kv.push_back({std::move(key), std::move(v)});
    }

    // general.alignment: uint32, a nonzero power of two (llama.cpp reads it with gguf_get_val_u32).
    m_alignment = kDefaultAlignment;
    if (const GgufValue* a = find("general.alignment")) {
        if (a->type != GgufType::UINT32)
            c.fail("general.alignment", std::string("expected uint32, got ") + gguf_type_name(a->type));
        if (a->u == 0 || !std::has_single_bit(a->u))
            c.fail("general.alignment", std::to_string(a->u) + " is not a nonzero power of two");
        m_alignment = a->u;
    }

    // ---- tensor infos ----
    m_tensors.reserve(n_tensors);
    for (uint64_t k = 0; k < n_tensors; ++k) {
        std::string where = "tensor #" + std::to_string(k);
        GgufTensorInfo t;
        t.name = c.read_string(where + " name");
        where  = "tensor " + quoted(t.name) + " (#" + std::to_string(k) + ")";
        if (t.name.size() > kMaxNameBytes)
            c.fail(where, "name is " + std::to_string(t.name.size()) + " bytes, ggml's limit is " +
                              std::to_string(kMaxNameBytes));
        if (auto it = m_tensor_index.find(t.name); it != m_tensor_index.end())
            c.fail(where, "duplicate tensor name (first seen as #" + std::to_string(it->second) + ")");

        uint32_t n_dims = c.read<uint32_t>(where + ": n_dims");
        if (n_dims == 0 || n_dims > kMaxDims)
            c.fail(where, "n_dims is " + std::to_string(n_dims) + ", expected 1 to " + std::to_string(kMaxDims));
        t.n_elements = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            uint64_t dim = c.read<uint64_t>(where + ": dims[" + std::to_string(d) + "]");
            if (dim == 0) c.fail(where, "dims[" + std::to_string(d) + "] is 0");
            if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                c.fail(where, "dims[" + std::to_string(d) + "] is " + std::to_string(dim) + ", above INT64_MAX");
            if (mul_overflows(t.n_elements, dim, &t.n_elements) ||
                t.n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                c.fail(where, "element count overflows at dims[" + std::to_string(d) + "]");
            t.dims.push_back(dim);
        }

        uint32_t type_id                      = c.read<uint32_t>(where + ": type");
        const kernels::GgmlTypeTraits* traits = kernels::ggml_type_traits(type_id);
        if (!traits || !traits->in_files) c.fail(where, "unknown tensor type " + std::to_string(type_id));
        t.type = static_cast<kernels::GgmlType>(type_id);
        if (t.dims[0] % traits->block_size != 0)
            c.fail(where, "row length " + std::to_string(t.dims[0]) + " is not a multiple of the " + traits->name +
                              " block size " + std::to_string(traits->block_size));
        // Bytes = blocks per row * block bytes * rows (what kernels::ggml_row_size computes, but checked).
        uint64_t row_bytes = 0;
        if (mul_overflows(t.dims[0] / traits->block_size, traits->type_size, &row_bytes) ||
            mul_overflows(row_bytes, t.rows(), &t.n_bytes))
            c.fail(where, "byte size overflows");
        t.offset = c.read<uint64_t>(where + ": offset");

        m_tensor_index.emplace(t.name, m_tensors.size());
        m_tensors.push_back(std::move(t));
    }

    // ---- data section: starts at the next multiple of the alignment; tensors must lie inside the file ----
    m_data_offset = (c.pos() + m_alignment - 1) / m_alignment * m_alignment;  // pos < 2^63, alignment < 2^32
    for (size_t k = 0; k < m_tensors.size(); ++k) {
        GgufTensorInfo& t = m_tensors[k];
        std::string where = "tensor " + quoted(t.name) + " (#" + std::to_string(k) + ")";
        if (t.offset % m_alignment != 0)
            c.fail(where, "offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                              std::to_string(m_alignment));
        uint64_t begin = 0, end = 0;
        if (add_overflows(m_data_offset, t.offset, &begin) || add_overflows(begin, t.n_bytes, &end) || end > size)
            c.fail(where, "offset " + std::to_string(t.offset) + " + " + std::to_string(t.n_bytes) +
                              " bytes extends past the end of the file (" + std::to_string(size) +
                              " bytes, data section at " + std::to_string(m_data_offset) + ")");
        t.data = bytes + begin;
    }

    // Overlap: sort by offset and compare neighbours (n log n; zero-sized tensors cannot occur).
    std::vector<size_t> order(m_tensors.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return m_tensors[a].offset < m_tensors[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
        const GgufTensorInfo& prev = m_tensors[order[k - 1]];
        const GgufTensorInfo& cur  = m_tensors[order[k]];
        if (prev.offset + prev.n_bytes > cur.offset)
            c.fail("tensor " + quoted(cur.name) + " (#" + std::to_string(order[k]) + ")",
                   "data at offset " + std::to_string(cur.offset) + " overlaps tensor " + quoted(prev.name) +
                       " (offset " + std::to_string(prev.offset) + ", " + std::to_string(prev.n_bytes) + " bytes)");
    }
}

}  // namespace speculum::model
