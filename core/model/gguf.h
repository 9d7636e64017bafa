// GGUF v2/v3 reader (mmap, zero-copy tensor data) following llama.cpp's conventions. Hostile files get a
// GgufError naming the file and the field; nothing is allocated in proportion to a count before that count has
// been checked against the bytes that remain in the file.
#pragma once

#include "kernels/ggml_types.h"

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace speculum::model {

// "FILE: FIELD: reason", e.g. "tiny.gguf: tensor 'blk.0.attn_q.weight': data extends past end of file".
struct GgufError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Metadata value types, numbered as on disk.
enum class GgufType : uint32_t {
    UINT8   = 0,
    INT8    = 1,
    UINT16  = 2,
    INT16   = 3,
    UINT32  = 4,
    INT32   = 5,
    FLOAT32 = 6,
    BOOL    = 7,
    STRING  = 8,
    ARRAY   = 9,
    UINT64  = 10,
    INT64   = 11,
    FLOAT64 = 12,
};
const char* gguf_type_name(GgufType t);

// One metadata value. Scalars keep their on-disk type; arrays keep their element type, with the elements in
// `strings` (STRING), `ints` (all integer types and BOOL) or `floats` (FLOAT32/FLOAT64). Nested arrays are
// rejected by the reader (llama.cpp writes none).
struct GgufValue {
    GgufType type       = GgufType::UINT8;
    GgufType array_type = GgufType::UINT8;  // element type when type == ARRAY
    int64_t i           = 0;                // integer and bool scalars (UINT64 above INT64_MAX: see u)
    uint64_t u          = 0;                // integer scalars as unsigned (same bits as i for unsigned types)
    double f            = 0.0;              // float scalars
    std::string s;                          // STRING
    std::vector<std::string> strings;       // ARRAY of STRING
    std::vector<int64_t> ints;              // ARRAY of integers / BOOL (UINT64 elements as their bit pattern)
    std::vector<double> floats;             // ARRAY of FLOAT32 / FLOAT64

    bool is_integer() const;  // any integer type (not BOOL)
    bool is_float() const;
    uint64_t array_size() const;
};

struct GgufKv {
    std::string key;
    GgufValue value;
};

struct GgufTensorInfo {
    std::string name;
    std::vector<uint64_t> dims;  // ggml order: dims[0] is the contiguous (row) dimension
    kernels::GgmlType type = kernels::GgmlType::F32;
    uint64_t offset        = 0;  // from the start of the tensor data section
    uint64_t n_elements    = 0;
    uint64_t n_bytes       = 0;
    const uint8_t* data    = nullptr;  // into the mapping; valid while the GgufFile lives

    uint64_t rows() const;  // product of dims[1..]
    uint64_t cols() const { return dims.empty() ? 1 : dims[0]; }
};

class GgufFile {
public:
    // Maps the file read-only and parses it. Throws GgufError on any malformed or hostile content.
    static GgufFile open(const std::string& path);
    // Parses an in-memory image (fuzzing, tests); `name` is used in error messages.
    static GgufFile from_bytes(std::vector<uint8_t> bytes, const std::string& name);

    GgufFile(GgufFile&&) noexcept;
    GgufFile& operator=(GgufFile&&) noexcept;
    ~GgufFile();

    const std::string& path() const { return m_path; }
    uint32_t version() const { return m_version; }
    uint64_t alignment() const { return m_alignment; }
    uint64_t file_size() const { return m_size; }
    uint64_t data_offset() const { return m_data_offset; }  // start of the tensor data section

    const std::vector<GgufKv>& metadata() const { return m_kv; }  // in file order
    const GgufValue* find(std::string_view key) const;            // nullptr when absent

    // Typed getters for required keys: throw GgufError "FILE: KEY: missing" / "...: expected uint32, got string".
    // Integer getters accept any integer type whose value fits the requested type.
    uint64_t get_uint(std::string_view key) const;
    int64_t get_int(std::string_view key) const;
    double get_float(std::string_view key) const;  // accepts integer values too
    bool get_bool(std::string_view key) const;
    const std::string& get_string(std::string_view key) const;
    const GgufValue& get_array(std::string_view key, GgufType element_type) const;
    // Optional forms: the fallback when absent; still an error when present with the wrong type.
    uint64_t get_uint_or(std::string_view key, uint64_t fallback) const;
    double get_float_or(std::string_view key, double fallback) const;
    bool get_bool_or(std::string_view key, bool fallback) const;
    std::string get_string_or(std::string_view key, const std::string& fallback) const;

    const std::vector<GgufTensorInfo>& tensors() const { return m_tensors; }
    const GgufTensorInfo* tensor(std::string_view name) const;  // nullptr when absent

    // Drops this process's resident pages of the tensor data section (madvise MADV_DONTNEED on the mapping; nothing
    // for a heap copy): for a model whose weights were copied or repacked elsewhere, so they are resident once. The
    // bytes stay readable: a later read faults them back in from the file.
    void release_tensor_pages() const;
    // The same for the whole pages of [p, p + n) when they lie in this file's mapping; nothing otherwise (a heap
    // buffer is never touched).
    void release_pages(const void* p, uint64_t n) const;

    // "FILE: what" for errors raised by callers about this file's content.
    [[noreturn]] void fail(const std::string& field, const std::string& reason) const;

    // Format limits shared by the reader and the writer (llama.cpp's values).
    static constexpr uint64_t kDefaultAlignment = 32;
    static constexpr uint32_t kMaxDims          = 4;   // GGML_MAX_DIMS
    static constexpr uint64_t kMaxNameBytes     = 63;  // GGML_MAX_NAME - 1 (names are NUL-terminated in ggml)

private:
    GgufFile() = default;
    void parse(const uint8_t* bytes, uint64_t size);  // gguf_parse.cpp
    struct Mapping;
    std::unique_ptr<Mapping> m_map;
    std::string m_path;
    uint32_t m_version     = 0;
    uint64_t m_alignment   = 32;
    uint64_t m_size        = 0;
    uint64_t m_data_offset = 0;
    std::vector<GgufKv> m_kv;
    std::vector<GgufTensorInfo> m_tensors;
    std::map<std::string, size_t, std::less<>> m_kv_index;      // key -> index into m_kv
    std::map<std::string, size_t, std::less<>> m_tensor_index;  // name -> index into m_tensors
};

}  // namespace speculum::model
