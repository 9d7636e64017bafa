// FNV-1a 64-bit hashing of canonical JSON and of files (see hash.h).
#include "core/store/hash.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace speculum::store {

namespace {
constexpr uint64_t kFnvPrime = 0x100000001b3ull;
}

uint64_t fnv1a64(std::string_view bytes, uint64_t seed) {
    uint64_t h = seed;
    for (unsigned char c : bytes) {
        h ^= c;
        h *= kFnvPrime;
    }
    return h;
}

std::string hex64(uint64_t h) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

std::string json_hash(const nlohmann::json& j) {
    return hex64(fnv1a64(j.dump()));
}

std::string file_hash(const std::filesystem::path& file, const ProgressFn& progress, const CancelToken& cancel) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + file.string());
    std::error_code ec;
    auto size  = std::filesystem::file_size(file, ec);
    uint64_t h = fnv1a64(std::to_string(ec ? 0 : size));
    std::vector<char> buf(1 << 20);
    uint64_t done = 0;
    while (in) {
        cancel.throw_if_cancelled();
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        h = fnv1a64(std::string_view(buf.data(), static_cast<size_t>(in.gcount())), h);
        done += static_cast<uint64_t>(in.gcount());
        if (size > 0 && !ec) report(progress, double(done) / double(size), "identifying the model (hashing the file)");
    }
    return hex64(h);
}

}  // namespace speculum::store
