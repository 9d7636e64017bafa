// glibc malloc settings for the pool's threads (see allocator_tuning.h).
#include "core/jobs/allocator_tuning.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace speculum::jobs {

AllocatorTuning tune_allocator_for_workers() {
    static AllocatorTuning result;
    static std::once_flag once;
    std::call_once(once, [] {
        const char* off = std::getenv("SPECULUM_MALLOC_TUNING");
        if (off && std::strcmp(off, "0") == 0) {
            result.disabled = true;
            return;
        }
        const char* tunables = std::getenv("GLIBC_TUNABLES");
        if (tunables && std::strstr(tunables, "glibc.malloc.")) {
            result.user_tunables = true;
            return;
        }
#if defined(__GLIBC__)
        result.applied = mallopt(M_MXFAST, 0) == 1 && mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes) == 1 &&
                         mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes) == 1;
#endif
    });
    return result;
}

}  // namespace speculum::jobs
