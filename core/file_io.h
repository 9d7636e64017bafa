// Files from outside and files we write, with the two rules a hostile input or a full disk cannot get past.
//
// Reading: every input file is read through read_input_file (or open_input_file when it is streamed). It must be a
// regular file (a directory, /dev/zero, a FIFO or a socket is refused by name before anything is read) and at most
// the limit of its kind; the limit is in the message. The limits are listed below and in CONTRIBUTING.md.
//
// Writing: every file Speculum writes (reports, profiles, drafts, exports, settings, screenshots, CSV) goes through
// OutputFile or write_file_atomic: the bytes go to a temporary file in the same folder, are flushed, synced and
// checked, and only then renamed over the target. A failed write throws (the CLI exits 1) and leaves the target as
// it was: complete or absent, never partial. An existing target that is not a regular file (/dev/full, a folder)
// is refused: renaming over it would replace a device node when run as root.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <istream>
#include <string>
#include <string_view>

namespace speculum {

// Per-kind input limits, in bytes.
inline constexpr uint64_t kMaxConfigFileBytes = 16ull << 20;  // SpecConfig, draft and synthetic specs, manifests,
                                                              // predict inputs, hardware profiles, sweep specs
inline constexpr uint64_t kMaxReportFileBytes = 64ull << 20;  // run reports (per-prompt token lists)
inline constexpr uint64_t kMaxTextFileBytes   = 1ull << 30;   // tokenize --file (streamed, never held whole)

// "16 MiB", "1 GiB", "512 bytes": a limit as the messages show it.
std::string byte_size_text(uint64_t bytes);

// Throws std::runtime_error "PATH: ..." when PATH is missing, a directory, not a regular file, or larger than
// max_bytes ("PATH: the config file is 17825792 bytes; the limit is 16 MiB"). `what` names the kind of file.
void check_input_file(const std::string& path, uint64_t max_bytes, const std::string& what);
// check_input_file, then the whole file. A file that grows past the limit while being read is refused too.
std::string read_input_file(const std::string& path, uint64_t max_bytes, const std::string& what);
// At most max_bytes from a stream (standard input); more is refused with `what` and the limit in the message.
std::string read_input_stream(std::istream& in, uint64_t max_bytes, const std::string& what);
// check_input_file, then an open binary stream for callers that read in pieces (tokenize).
std::ifstream open_input_file(const std::string& path, uint64_t max_bytes, const std::string& what);

// A file written whole or not at all. Bytes go to a temporary sibling; commit() flushes, syncs, checks and
// renames it over the target. Destroyed without commit (an exception on the way), the temporary is removed and
// the target is untouched. Every failure throws std::runtime_error "PATH: ..." with the system's reason.
class OutputFile {
public:
    explicit OutputFile(std::string path);
    ~OutputFile();
    OutputFile(const OutputFile&)            = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void write(std::string_view bytes);
    void commit();
    const std::string& path() const { return m_path; }

private:
    [[noreturn]] void fail(const std::string& why);

    std::string m_path, m_tmp;
    std::FILE* m_file = nullptr;
    bool m_committed  = false;
};

// The checks OutputFile makes before it writes (not a folder or device; the folder exists and is writable), for a
// command to refuse a bad output path before its work starts. Throws std::runtime_error "PATH: ...".
void check_output_file(const std::string& path);

// OutputFile for bytes already in memory.
void write_file_atomic(const std::string& path, std::string_view bytes);
// OutputFile for a copy of the file at `src` (read in chunks): a full disk or a read error leaves `path` as it was and
// says "write failed, nothing written" (std::filesystem::copy_file left a partial file and printed its own text).
void copy_file_atomic(const std::string& src, const std::string& path);

}  // namespace speculum
