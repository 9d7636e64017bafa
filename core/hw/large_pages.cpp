// LargePageBuffer: an over-sized anonymous mapping trimmed to a 2 MiB-aligned range, then madvise(MADV_HUGEPAGE).
#include "core/hw/large_pages.h"

#include <fstream>
#include <new>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace speculum::hw {

LargePageBuffer::LargePageBuffer(uint64_t bytes, bool advise_huge) {
    if (bytes == 0) return;
    const uint64_t len = (bytes + kLargePageBytes - 1) / kLargePageBytes * kLargePageBytes;
    if (len < bytes) throw std::bad_alloc();  // wrapped
    void* raw = ::mmap(nullptr, len + kLargePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    // Trim the head and tail so that [base, base + len) starts on a 2 MiB boundary.
    const auto start     = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t base = (start + kLargePageBytes - 1) & ~static_cast<uintptr_t>(kLargePageBytes - 1);
    if (base > start) ::munmap(raw, base - start);
    if (const uintptr_t tail = start + len + kLargePageBytes - (base + len); tail > 0)
        ::munmap(reinterpret_cast<void*>(base + len), tail);
    m_data  = reinterpret_cast<uint8_t*>(base);
    m_size  = bytes;
    m_bytes = len;
#ifdef MADV_HUGEPAGE
    m_advised = advise_huge && ::madvise(m_data, m_bytes, MADV_HUGEPAGE) == 0;
#else
    (void)advise_huge;
#endif
}

LargePageBuffer::LargePageBuffer(LargePageBuffer&& o) noexcept
    : m_data(o.m_data), m_size(o.m_size), m_bytes(o.m_bytes), m_advised(o.m_advised) {
    o.m_data = nullptr, o.m_size = 0, o.m_bytes = 0, o.m_advised = false;
}

LargePageBuffer& LargePageBuffer::operator=(LargePageBuffer&& o) noexcept {
    if (this != &o) {
        release();
        m_data = o.m_data, m_size = o.m_size, m_bytes = o.m_bytes, m_advised = o.m_advised;
        o.m_data = nullptr, o.m_size = 0, o.m_bytes = 0, o.m_advised = false;
    }
    return *this;
}

LargePageBuffer::~LargePageBuffer() {
    release();
}

void LargePageBuffer::release() {
    if (m_data) ::munmap(m_data, m_bytes);
    m_data = nullptr, m_size = 0, m_bytes = 0, m_advised = false;
}

namespace {

// A field of /proc/self/smaps_rollup in bytes ("AnonHugePages:", "Rss:"); -1 when the kernel does not report it.
int64_t smaps_rollup_bytes(const char* field) {
    std::ifstream in("/proc/self/smaps_rollup");
    std::string key;
    while (in >> key) {
        if (key == field) {
            int64_t kb = -1;
            in >> kb;
            return kb < 0 ? -1 : kb * 1024;
        }
        in.ignore(1 << 16, '\n');
    }
    return -1;
}

}  // namespace

int64_t anon_huge_page_bytes() {
    return smaps_rollup_bytes("AnonHugePages:");
}

int64_t resident_bytes() {
    return smaps_rollup_bytes("Rss:");
}

uint64_t available_memory_bytes() {
    if (std::ifstream in("/proc/meminfo"); in) {
        std::string key;
        while (in >> key) {
            if (key == "MemAvailable:") {
                uint64_t kb = 0;
                if (in >> kb) return kb * 1024;
                break;
            }
            in.ignore(1 << 16, '\n');
        }
    }
    const long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

}  // namespace speculum::hw
