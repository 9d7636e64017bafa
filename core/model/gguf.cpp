// GgufFile: opening (read-only mmap, or a plain read when mmap fails), typed metadata getters and lookups.
// The byte-level parsing and every hostile-file check live in gguf_parse.cpp.
#include "core/model/gguf.h"

#include <cerrno>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace speculum::model {

const char* gguf_type_name(GgufType t) {
    switch (t) {
        case GgufType::UINT8:
            return "uint8";
        case GgufType::INT8:
            return "int8";
        case GgufType::UINT16:
            return "uint16";
        case GgufType::INT16:
            return "int16";
        case GgufType::UINT32:
            return "uint32";
        case GgufType::INT32:
            return "int32";
        case GgufType::FLOAT32:
            return "float32";
        case GgufType::BOOL:
            return "bool";
        case GgufType::STRING:
            return "string";
        case GgufType::ARRAY:
            return "array";
        case GgufType::UINT64:
            return "uint64";
        case GgufType::INT64:
            return "int64";
        case GgufType::FLOAT64:
            return "float64";
    }
    return "unknown";
}

bool GgufValue::is_integer() const {
    switch (type) {
        case GgufType::UINT8:
        case GgufType::INT8:
        case GgufType::UINT16:
        case GgufType::INT16:
        case GgufType::UINT32:
        case GgufType::INT32:
        case GgufType::UINT64:
        case GgufType::INT64:
            return true;
        default:
            return false;
    }
}

bool GgufValue::is_float() const {
    return type == GgufType::FLOAT32 || type == GgufType::FLOAT64;
}

uint64_t GgufValue::array_size() const {
    if (type != GgufType::ARRAY) return 0;
    if (array_type == GgufType::STRING) return strings.size();
    if (array_type == GgufType::FLOAT32 || array_type == GgufType::FLOAT64) return floats.size();
    return ints.size();
}

uint64_t GgufTensorInfo::rows() const {
    uint64_t r = 1;
    for (size_t i = 1; i < dims.size(); ++i) r *= dims[i];
    return r;
}

// ---- mapping ----

// Owns the file bytes: an mmap'd region, or a heap copy (from_bytes, or when mmap is unavailable).
struct GgufFile::Mapping {
    void* map_base   = nullptr;
    size_t map_bytes = 0;
    std::vector<uint8_t> owned;
    const uint8_t* data = nullptr;
    uint64_t size       = 0;

    ~Mapping() {
        if (map_base) munmap(map_base, map_bytes);
    }
};

GgufFile::GgufFile(GgufFile&&) noexcept            = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile()                              = default;

namespace {

// Closes a POSIX file descriptor on scope exit.
struct FdGuard {
    int fd;
    ~FdGuard() {
        if (fd >= 0) ::close(fd);
    }
};

[[noreturn]] void fail_io(const std::string& path, const std::string& what, int err) {
    throw GgufError(path + ": " + what + ": " + std::strerror(err));
}

}  // namespace

void GgufFile::release_tensor_pages() const {
    if (!m_map || !m_map->map_base || m_data_offset >= m_map->map_bytes) return;
    const uintptr_t page  = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t base  = reinterpret_cast<uintptr_t>(m_map->map_base);
    const uintptr_t start = (base + m_data_offset + page - 1) / page * page;  // whole pages of tensor data only
    const uintptr_t end   = base + m_map->map_bytes;
    if (start < end) ::madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
}

void GgufFile::release_pages(const void* p, uint64_t n) const {
    if (!m_map || !m_map->map_base || !p) return;
    const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t base = reinterpret_cast<uintptr_t>(m_map->map_base);
    const uintptr_t a = reinterpret_cast<uintptr_t>(p), b = a + n;
    if (a < base || b > base + m_map->map_bytes) return;
    const uintptr_t start = (a + page - 1) / page * page, end = b / page * page;
    if (start < end) ::madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
}

GgufFile GgufFile::open(const std::string& path) {
    FdGuard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (fd.fd < 0) fail_io(path, "cannot open", errno);
    struct stat st {};
    if (::fstat(fd.fd, &st) != 0) fail_io(path, "cannot stat", errno);
    if (!S_ISREG(st.st_mode)) throw GgufError(path + ": not a regular file");

    auto map  = std::make_unique<Mapping>();
    map->size = static_cast<uint64_t>(st.st_size);
    if (map->size > 0) {
        void* p = ::mmap(nullptr, map->size, PROT_READ, MAP_PRIVATE, fd.fd, 0);
        if (p != MAP_FAILED) {
            map->map_base  = p;
            map->map_bytes = map->size;
            map->data      = static_cast<const uint8_t*>(p);
        } else {
            // Some file systems cannot map; read the file instead (the size is the file's own, so bounded).
            map->owned.resize(map->size);
            uint64_t got = 0;
            while (got < map->size) {
                ssize_t n = ::pread(fd.fd, map->owned.data() + got, map->size - got, static_cast<off_t>(got));
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) fail_io(path, "read failed", errno);
                if (n == 0) throw GgufError(path + ": file shrank while being read");
                got += static_cast<uint64_t>(n);
            }
            map->data = map->owned.data();
        }
    }

    GgufFile f;
    f.m_path = path;
    f.m_map  = std::move(map);
    f.parse(f.m_map->data, f.m_map->size);
    return f;
}

GgufFile GgufFile::from_bytes(std::vector<uint8_t> bytes, const std::string& name) {
    auto map   = std::make_unique<Mapping>();
    map->owned = std::move(bytes);
    map->data  = map->owned.data();
    map->size  = map->owned.size();
    GgufFile f;
    f.m_path = name;
    f.m_map  = std::move(map);
    f.parse(f.m_map->data, f.m_map->size);
    return f;
}

// ---- lookups and typed getters ----

void GgufFile::fail(const std::string& field, const std::string& reason) const {
    throw GgufError(m_path + ": " + field + ": " + reason);
}

const GgufValue* GgufFile::find(std::string_view key) const {
    auto it = m_kv_index.find(key);
    return it == m_kv_index.end() ? nullptr : &m_kv[it->second].value;
}

const GgufTensorInfo* GgufFile::tensor(std::string_view name) const {
    auto it = m_tensor_index.find(name);
    return it == m_tensor_index.end() ? nullptr : &m_tensors[it->second];
}

namespace {

bool is_unsigned(GgufType t) {
    return t == GgufType::UINT8 || t == GgufType::UINT16 || t == GgufType::UINT32 || t == GgufType::UINT64;
}

std::string describe(const GgufValue& v) {
    if (v.type == GgufType::ARRAY)
        return std::string("array of ") + std::to_string(v.array_size()) + " " + gguf_type_name(v.array_type);
    if (v.is_integer())
        return std::string(gguf_type_name(v.type)) + " " +
               (is_unsigned(v.type) ? std::to_string(v.u) : std::to_string(v.i));
    return gguf_type_name(v.type);
}

}  // namespace

static const GgufValue& require(const GgufFile& f, std::string_view key) {
    const GgufValue* v = f.find(key);
    if (!v) f.fail(std::string(key), "missing");
    return *v;
}

uint64_t GgufFile::get_uint(std::string_view key) const {
    const GgufValue& v = require(*this, key);
    if (v.is_integer() && is_unsigned(v.type)) return v.u;
    if (v.is_integer() && v.i >= 0) return static_cast<uint64_t>(v.i);
    fail(std::string(key), "expected a non-negative integer, got " + describe(v));
}

int64_t GgufFile::get_int(std::string_view key) const {
    const GgufValue& v = require(*this, key);
    if (v.is_integer() && !is_unsigned(v.type)) return v.i;
    if (v.is_integer() && v.u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return static_cast<int64_t>(v.u);
    fail(std::string(key), "expected an integer that fits int64, got " + describe(v));
}

double GgufFile::get_float(std::string_view key) const {
    const GgufValue& v = require(*this, key);
    if (v.is_float()) return v.f;
    if (v.is_integer()) return is_unsigned(v.type) ? static_cast<double>(v.u) : static_cast<double>(v.i);
    fail(std::string(key), "expected a number, got " + describe(v));
}

bool GgufFile::get_bool(std::string_view key) const {
    const GgufValue& v = require(*this, key);
    if (v.type == GgufType::BOOL) return v.i != 0;
    fail(std::string(key), "expected bool, got " + describe(v));
}

const std::string& GgufFile::get_string(std::string_view key) const {
    const GgufValue& v = require(*this, key);
    if (v.type == GgufType::STRING) return v.s;
    fail(std::string(key), "expected string, got " + describe(v));
}

const GgufValue& GgufFile::get_array(std::string_view key, GgufType element_type) const {
    const GgufValue& v = require(*this, key);
    if (v.type == GgufType::ARRAY && v.array_type == element_type) return v;
    fail(std::string(key), std::string("expected array of ") + gguf_type_name(element_type) + ", got " + describe(v));
}

uint64_t GgufFile::get_uint_or(std::string_view key, uint64_t fallback) const {
    return find(key) ? get_uint(key) : fallback;
}

double GgufFile::get_float_or(std::string_view key, double fallback) const {
    return find(key) ? get_float(key) : fallback;
}

bool GgufFile::get_bool_or(std::string_view key, bool fallback) const {
    return find(key) ? get_bool(key) : fallback;
}

std::string GgufFile::get_string_or(std::string_view key, const std::string& fallback) const {
    return find(key) ? get_string(key) : fallback;
}

}  // namespace speculum::model
