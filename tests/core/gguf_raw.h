// Test helper: writes GGUF bytes field by field, so tests can build files the real writer refuses to produce
// (bad counts, wrong types, misaligned offsets...). Only for tests; no validation at all.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace speculum::test {

class RawGguf {
public:
    std::vector<uint8_t> bytes;

    RawGguf& raw(const void* p, size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        size_t at     = bytes.size();
        bytes.resize(at + n);
        if (n) std::memcpy(bytes.data() + at, b, n);
        return *this;
    }
    RawGguf& u8(uint8_t v) { return raw(&v, 1); }
    RawGguf& u32(uint32_t v) { return raw(&v, 4); }
    RawGguf& u64(uint64_t v) { return raw(&v, 8); }
    RawGguf& str(const std::string& s) { return u64(s.size()).raw(s.data(), s.size()); }

    RawGguf& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        return raw("GGUF", 4).u32(version).u64(n_tensors).u64(n_kv);
    }
    RawGguf& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
    RawGguf& kv_str(const std::string& key, const std::string& v) { return str(key).u32(8).str(v); }
    // dims in ggml order; type is the ggml type id; offset from the data section.
    RawGguf& tensor(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset) {
        str(name).u32(static_cast<uint32_t>(dims.size()));
        for (uint64_t d : dims) u64(d);
        return u32(type).u64(offset);
    }
    RawGguf& pad(size_t alignment = 32) {
        bytes.resize((bytes.size() + alignment - 1) / alignment * alignment, 0);
        return *this;
    }
    RawGguf& zeros(size_t n) {
        bytes.resize(bytes.size() + n, 0);
        return *this;
    }
};

}  // namespace speculum::test
