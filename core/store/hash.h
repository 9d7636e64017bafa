// Stable content hashes for result-store keys: 64-bit FNV-1a over canonical JSON (nlohmann objects are
// key-sorted maps, so dump() is canonical), written as 16 lower-case hex digits. A key, not a security hash.
#pragma once

#include "core/cancel.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace speculum::store {

uint64_t fnv1a64(std::string_view bytes, uint64_t seed = 0xcbf29ce484222325ull);
std::string hex64(uint64_t h);

// FNV-1a of j.dump() (compact, sorted keys, shortest round-trip numbers).
std::string json_hash(const nlohmann::json& j);

// Identity of a file for model/dataset keys: FNV-1a over its size and its whole content, streamed (a multi-GB
// model takes seconds: progress by the fraction read, cancel between 1 MiB blocks). Throws std::runtime_error naming
// the file when it cannot be read, Cancelled when cancelled.
std::string file_hash(const std::filesystem::path& file, const ProgressFn& progress = {},
                      const CancelToken& cancel = {});

}  // namespace speculum::store
