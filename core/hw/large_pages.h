// Anonymous memory for streamed data (model weights, the bandwidth probe's buffer) aligned to 2 MiB and advised
// for transparent huge pages. On this project's reference VM (Zen 4, THP in `madvise` mode) one thread reads
// 4 KiB-page memory at 21-26 GB/s and huge-page memory at 25-29 GB/s. See docs/performance-notebook.md ("Session 4").
#pragma once

#include <cstddef>
#include <cstdint>

namespace speculum::hw {

constexpr uint64_t kLargePageBytes = 2ull << 20;

// Owns `bytes` of zero-filled, read-write memory starting on a 2 MiB boundary, advised for huge pages unless
// `advise_huge` is false (then it is plain anonymous memory, as malloc gives for large blocks). The advice is a
// request: the kernel may still back the range with 4 KiB pages (THP off, fragmented memory). Move-only.
class LargePageBuffer {
public:
    LargePageBuffer() = default;
    explicit LargePageBuffer(uint64_t bytes, bool advise_huge = true);  // throws std::bad_alloc if mmap fails
    LargePageBuffer(LargePageBuffer&& o) noexcept;
    LargePageBuffer& operator=(LargePageBuffer&& o) noexcept;
    LargePageBuffer(const LargePageBuffer&)            = delete;
    LargePageBuffer& operator=(const LargePageBuffer&) = delete;
    ~LargePageBuffer();

    uint8_t* data() const { return m_data; }
    uint64_t size() const { return m_size; }
    bool huge_page_advised() const { return m_advised; }  // madvise(MADV_HUGEPAGE) accepted the range

private:
    void release();
    uint8_t* m_data  = nullptr;
    uint64_t m_size  = 0;
    uint64_t m_bytes = 0;  // mapped length (m_size rounded up to 2 MiB)
    bool m_advised   = false;
};

// This process's anonymous memory backed by huge pages (AnonHugePages of /proc/self/smaps_rollup), or -1 where
// the kernel does not report it.
int64_t anon_huge_page_bytes();
// The process's resident memory (Rss of /proc/self/smaps_rollup: anonymous and mapped file pages); -1 when the
// kernel does not report it.
int64_t resident_bytes();

// Memory available now for new allocations without swapping (MemAvailable of /proc/meminfo: free memory plus the
// page cache that can be dropped; sysconf _SC_AVPHYS_PAGES where that is missing), or 0 when unknown.
uint64_t available_memory_bytes();

}  // namespace speculum::hw
