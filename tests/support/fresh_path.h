// A scratch path with nothing left from an earlier run, for tests that create SQLite stores and sweep files.
#pragma once

#include "support/test_paths.h"

#include <filesystem>
#include <string>

namespace speculum::test {

// tmp_dir()/name with the file, its SQLite companions (-wal, -shm) and a sweep's in-flight list
// (.inflight.json) removed.
inline std::filesystem::path fresh_tmp_path(const std::string& name) {
    std::filesystem::path p = tmp_dir() / name;
    for (const char* suffix : {"", "-wal", "-shm", ".inflight.json"}) std::filesystem::remove(p.string() + suffix);
    return p;
}

}  // namespace speculum::test
