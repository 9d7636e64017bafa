// Paths tests need: the source tree, a scratch directory, the CLI binary, and ../shared when it exists.
// Tests that use ../shared call shared_dir_or_skip(): a user's clone has no ../shared and must skip cleanly.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace speculum::test {

inline std::filesystem::path source_dir() {
    return SPECULUM_SOURCE_DIR;
}
inline std::filesystem::path tmp_dir() {
    return SPECULUM_TEST_TMP;
}
inline std::filesystem::path cli_path() {
    return SPECULUM_CLI_PATH;
}

// ../shared beside the checkout, or empty when absent.
inline std::filesystem::path shared_dir() {
    std::filesystem::path p = source_dir().parent_path() / "shared";
    return std::filesystem::is_directory(p) ? p : std::filesystem::path();
}

}  // namespace speculum::test

// Use at the top of a TEST body: skips when ../shared is absent.
#define SPECULUM_SHARED_OR_SKIP(var)                                  \
    const std::filesystem::path var = ::speculum::test::shared_dir(); \
    if (var.empty()) GTEST_SKIP() << "../shared is absent (a user's clone has none)"
