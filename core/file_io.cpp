// Bounded reading of regular files and write-then-rename output (see file_io.h).
#include "core/file_io.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace speculum {

namespace fs = std::filesystem;

std::string byte_size_text(uint64_t bytes) {
    if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
    if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
    if (bytes >= (1ull << 10) && bytes % (1ull << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
    return std::to_string(bytes) + " bytes";
}

void check_input_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw std::runtime_error(path + ": cannot open the " + what + ": " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw std::runtime_error(path + ": is a directory, not a " + what);
    if (!S_ISREG(st.st_mode))
        throw std::runtime_error(path + ": not a regular file (a " + what +
                                 " is read from a file; devices, FIFOs and sockets are refused)");
    if (uint64_t(st.st_size) > max_bytes)
        throw std::runtime_error(path + ": the " + what + " is " + std::to_string(uint64_t(st.st_size)) +
                                 " bytes; the limit is " + byte_size_text(max_bytes));
}

std::string read_input_stream(std::istream& in, uint64_t max_bytes, const std::string& what) {
    std::string text;
    std::vector<char> chunk(1 << 16);
    while (in) {
        in.read(chunk.data(), std::streamsize(chunk.size()));
        const auto n = size_t(in.gcount());
        if (text.size() + n > max_bytes)
            throw std::runtime_error(what + ": more than " + byte_size_text(max_bytes) + " (the limit)");
        text.append(chunk.data(), n);
    }
    if (in.bad()) throw std::runtime_error(what + ": read error");
    return text;
}

std::ifstream open_input_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
    check_input_file(path, max_bytes, what);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open the " + what + ": " + std::strerror(errno));
    return in;
}

std::string read_input_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
    std::ifstream in = open_input_file(path, max_bytes, what);
    try {
        return read_input_stream(in, max_bytes, what);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
}

namespace {

mode_t default_file_mode() {
    // The process umask, read once (umask can only be read by setting it). A new file gets 0666 minus it, as an
    // ofstream would; mkstemp alone would leave 0600.
    static const mode_t mode = [] {
        const mode_t mask = ::umask(022);
        ::umask(mask);
        return mode_t(0666 & ~mask);
    }();
    return mode;
}

}  // namespace

void check_output_file(const std::string& path) {
    if (path.empty()) throw std::runtime_error("an output file needs a name");
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) throw std::runtime_error(path + ": is a directory; give a file name to write");
        if (!S_ISREG(st.st_mode))
            throw std::runtime_error(path + ": not a regular file; Speculum writes only regular files");
    }
    const fs::path target(path);
    const std::string dir = target.has_parent_path() ? target.parent_path().string() : std::string(".");
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw std::runtime_error(path + ": the folder " + dir + " does not exist");
    if (::access(dir.c_str(), W_OK) != 0)
        throw std::runtime_error(path + ": cannot write in " + dir + ": " + std::strerror(errno));
}

OutputFile::OutputFile(std::string path) : m_path(std::move(path)) {
    if (m_path.empty()) throw std::runtime_error("an output file needs a name");
    struct stat st {};
    mode_t mode = default_file_mode();
    if (::stat(m_path.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) throw std::runtime_error(m_path + ": is a directory; give a file name to write");
        if (!S_ISREG(st.st_mode))
            throw std::runtime_error(m_path + ": not a regular file; Speculum writes only regular files");
        mode = st.st_mode & 07777;  // an overwritten file keeps its permissions
    }
    const fs::path target(m_path);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::string name   = target.filename().string();
    name.insert(name.begin(), '.');
    name.append(".tmp.XXXXXX");
    std::string templ = (dir / name).string();
    const int fd      = ::mkstemp(templ.data());
    if (fd < 0) throw std::runtime_error(m_path + ": cannot write in " + dir.string() + ": " + std::strerror(errno));
    m_tmp = templ;
    (void)::fchmod(fd, mode);
    m_file = ::fdopen(fd, "wb");
    if (!m_file) {
        const int err = errno;
        ::close(fd);
        ::unlink(m_tmp.c_str());
        throw std::runtime_error(m_path + ": cannot write: " + std::strerror(err));
    }
}

OutputFile::~OutputFile() {
    if (m_committed) return;
    if (m_file) std::fclose(m_file);
    if (!m_tmp.empty()) ::unlink(m_tmp.c_str());
}

void OutputFile::fail(const std::string& why) {
    if (m_file) std::fclose(m_file);
    m_file = nullptr;
    ::unlink(m_tmp.c_str());
    m_tmp.clear();
    throw std::runtime_error(m_path + ": write failed, nothing written: " + why);
}

void OutputFile::write(std::string_view bytes) {
    if (!m_file) throw std::runtime_error(m_path + ": write after the file was closed");
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), m_file) != bytes.size())
        fail(std::strerror(errno));
}

void OutputFile::commit() {
    if (!m_file) throw std::runtime_error(m_path + ": commit after the file was closed");
    // Buffered bytes reach the disk here, so a full disk shows up at fflush or fsync, not later.
    if (std::fflush(m_file) != 0) fail(std::strerror(errno));
    if (::fsync(::fileno(m_file)) != 0 && errno != EINVAL) fail(std::strerror(errno));
    const int closed = std::fclose(m_file);
    m_file           = nullptr;
    if (closed != 0) fail(std::strerror(errno));
    if (std::rename(m_tmp.c_str(), m_path.c_str()) != 0) fail(std::strerror(errno));
    m_committed = true;
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
    OutputFile out(path);
    out.write(bytes);
    out.commit();
}

void copy_file_atomic(const std::string& src, const std::string& path) {
    std::ifstream in(src, std::ios::binary);
    if (!in) throw std::runtime_error(src + ": cannot open: " + std::strerror(errno));
    OutputFile out(path);
    std::vector<char> buf(size_t(1) << 20);
    while (in) {
        in.read(buf.data(), std::streamsize(buf.size()));
        const auto n = size_t(in.gcount());
        if (in.bad()) throw std::runtime_error(path + ": write failed, nothing written: " + src + ": read error");
        if (n > 0) out.write(std::string_view(buf.data(), n));
    }
    out.commit();
}

}  // namespace speculum
