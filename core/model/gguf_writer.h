// GGUF v3 writer: metadata in insertion order, tensors aligned to general.alignment (default 32), laid out the
// way llama.cpp's gguf writer does, so files we write load in llama.cpp and re-read byte-identically here.
#pragma once

#include "core/model/gguf.h"

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::model {

class GgufWriter {
public:
    void set_uint32(const std::string& key, uint32_t v);
    void set_int32(const std::string& key, int32_t v);
    void set_uint64(const std::string& key, uint64_t v);
    void set_float32(const std::string& key, float v);
    void set_bool(const std::string& key, bool v);
    void set_string(const std::string& key, const std::string& v);
    void set_array_strings(const std::string& key, const std::vector<std::string>& v);
    void set_array_int32(const std::string& key, const std::vector<int32_t>& v);
    void set_array_float32(const std::string& key, const std::vector<float>& v);
    // Copies any value (e.g. from a GgufFile). Unsigned scalars are written from `u`, signed ones and BOOL from `i`.
    void set_value(const std::string& key, const GgufValue& v);

    // dims in ggml order (dims[0] contiguous). `data` must hold exactly the bytes the type and dims require;
    // it is copied. Throws std::invalid_argument on a size mismatch or a duplicate name.
    void add_tensor(const std::string& name, const std::vector<uint64_t>& dims, kernels::GgmlType type,
                    const void* data, uint64_t n_bytes);

    // Writes the file (to PATH.tmp, then renames). Throws std::runtime_error with the path on I/O failure.
    void write(const std::string& path) const;
    std::vector<uint8_t> to_bytes() const;

private:
    struct Tensor {
        std::string name;
        std::vector<uint64_t> dims;
        kernels::GgmlType type;
        std::vector<uint8_t> bytes;
    };
    void put(const std::string& key, GgufValue v);
    std::vector<GgufKv> m_kv;
    std::vector<Tensor> m_tensors;
};

}  // namespace speculum::model
