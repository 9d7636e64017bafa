// Other processes' CPU share from /proc/stat and getrusage (see cpu_load.h).
#include "core/hw/cpu_load.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

namespace speculum::hw {

CpuSample cpu_sample() {
    CpuSample s;
    s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        s.own_cpu_s = double(ru.ru_utime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec) + double(ru.ru_stime.tv_sec) +
                      1e-6 * double(ru.ru_stime.tv_usec);
    std::ifstream in("/proc/stat");
    std::string line;
    if (!in || !std::getline(in, line) || line.rfind("cpu ", 0) != 0) return s;
    // cpu  user nice system idle iowait irq softirq steal ...  (in clock ticks)
    std::istringstream fields(line.substr(4));
    long long v[8] = {};
    for (long long& x : v)
        if (!(fields >> x)) return s;
    const long tick = sysconf(_SC_CLK_TCK);
    if (tick <= 0) return s;
    const long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];  // idle and iowait are not busy
    s.machine_busy_s     = double(busy) / double(tick);
    s.cores              = int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
    s.valid              = true;
    return s;
}

std::optional<double> other_load(const CpuSample& a, const CpuSample& b) {
    if (!a.valid || !b.valid || b.wall_s <= a.wall_s || b.cores <= 0) return std::nullopt;
    const double other = (b.machine_busy_s - a.machine_busy_s) - (b.own_cpu_s - a.own_cpu_s);
    return std::clamp(other / ((b.wall_s - a.wall_s) * double(b.cores)), 0.0, 1.0);
}

std::optional<uint64_t> last_level_cache_bytes() {
    int best_level = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < 16; ++i) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
        std::ifstream level_in(dir + "level"), size_in(dir + "size"), type_in(dir + "type");
        int level = 0;
        std::string size, type;
        if (!(level_in >> level) || !(size_in >> size) || !(type_in >> type)) continue;
        if (type == "Instruction" || level < best_level || size.empty()) continue;
        uint64_t n = 0;
        size_t k   = 0;
        while (k < size.size() && size[k] >= '0' && size[k] <= '9') n = n * 10 + uint64_t(size[k++] - '0');
        if (k < size.size() && (size[k] == 'K' || size[k] == 'k')) n <<= 10;
        if (k < size.size() && (size[k] == 'M' || size[k] == 'm')) n <<= 20;
        if (n > 0) best_level = level, bytes = n;
    }
    if (bytes == 0) return std::nullopt;
    return bytes;
}

}  // namespace speculum::hw
