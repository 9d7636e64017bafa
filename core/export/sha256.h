// SHA-256 of files and byte strings through OpenSSL's libcrypto (EVP), written as 64 lower-case hex digits: the
// model identity a deployment manifest records. Not a key for the result store (that is store::file_hash).
#pragma once

#include "core/cancel.h"

#include <cstddef>
#include <filesystem>
#include <string>

namespace speculum::exporting {

// Digest of `n` bytes at `data`.
std::string sha256_hex(const void* data, size_t n);

// Digest of a whole file, streamed in 1 MiB chunks. Checks `cancel` and reports progress once per chunk. Throws
// std::runtime_error naming the file when it cannot be read, Cancelled when cancelled.
std::string sha256_file(const std::filesystem::path& file, const CancelToken& cancel = {},
                        const ProgressFn& progress = {});

// True for a string of exactly 64 lower-case hex digits.
bool is_sha256_hex(const std::string& s);

}  // namespace speculum::exporting
