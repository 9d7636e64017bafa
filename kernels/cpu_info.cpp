// CPU feature detection (GCC/Clang cpuid builtins) and the OpenBLAS configuration string.
#include "kernels/cpu_info.h"

#include <cblas.h>

#include <cstring>

namespace speculum::kernels {

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = [] {
        CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        f.avx2        = __builtin_cpu_supports("avx2");
        f.fma         = __builtin_cpu_supports("fma");
        f.avx512f     = __builtin_cpu_supports("avx512f");
        f.avx512bw    = __builtin_cpu_supports("avx512bw");
        f.avx512vl    = __builtin_cpu_supports("avx512vl");
        f.avx512dq    = __builtin_cpu_supports("avx512dq");
        f.avx512vnni  = __builtin_cpu_supports("avx512vnni");
        f.avx512vbmi2 = __builtin_cpu_supports("avx512vbmi2");
        f.avx512vbmi  = __builtin_cpu_supports("avx512vbmi");
        // GCC 12 has no builtin name for F16C, GFNI or AVX512-BF16: read cpuid directly.
        unsigned a = 0, b = 0, c = 0, d = 0;
        __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
        char vendor[13] = {};
        std::memcpy(vendor, &b, 4), std::memcpy(vendor + 4, &d, 4), std::memcpy(vendor + 8, &c, 4);
        f.vendor = std::strcmp(vendor, "GenuineIntel") == 0   ? CpuVendor::intel
                   : std::strcmp(vendor, "AuthenticAMD") == 0 ? CpuVendor::amd
                                                              : CpuVendor::other;
        __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
        f.f16c = (c >> 29) & 1u;
        __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
        f.gfni = (c >> 8) & 1u;
        __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(1));
        f.avx512bf16 = f.avx512f && ((a >> 5) & 1u);
#endif
        return f;
    }();
    return features;
}

const char* cpu_vendor_name(CpuVendor v) {
    return v == CpuVendor::intel ? "intel" : v == CpuVendor::amd ? "amd" : "other";
}

std::string cpu_features_string() {
    const CpuFeatures& f = cpu_features();
    std::string s;
    auto add = [&](bool on, const char* name) {
        if (!on) return;
        if (!s.empty()) s += ' ';
        s += name;
    };
    add(f.avx2, "avx2");
    add(f.fma, "fma");
    add(f.f16c, "f16c");
    add(f.avx512f, "avx512f");
    add(f.avx512bw, "avx512bw");
    add(f.avx512vl, "avx512vl");
    add(f.avx512dq, "avx512dq");
    add(f.avx512vnni, "avx512vnni");
    add(f.avx512bf16, "avx512bf16");
    add(f.avx512vbmi2, "avx512vbmi2");
    add(f.avx512vbmi, "avx512vbmi");
    add(f.gfni, "gfni");
    return s.empty() ? "scalar" : s;
}

std::string blas_config() {
    const char* config = openblas_get_config();
    return config ? config : "unknown";
}

}  // namespace speculum::kernels
