// CPU feature detection and BLAS identity for the kernels: what fast paths this machine can take.
#pragma once

#include <string>

namespace speculum::kernels {

enum class CpuVendor { other, intel, amd };

struct CpuFeatures {
    CpuVendor vendor = CpuVendor::other;  // cpuid leaf 0: "GenuineIntel", "AuthenticAMD"
    bool avx2        = false;             // 256-bit integer/float SIMD
    bool fma         = false;             // fused multiply-add (FMA3)
    bool f16c        = false;             // half <-> float conversion instructions
    bool avx512f     = false;             // 512-bit foundation
    bool avx512bw    = false;             // 512-bit byte/word integer instructions
    bool avx512vl    = false;             // AVX-512 instructions on 128/256-bit registers
    bool avx512dq    = false;             // 512-bit dword/qword extras
    bool avx512vnni  = false;             // vpdpbusd: u8 x s8 dot products into int32
    bool avx512bf16  = false;             // vdpbf16ps and bf16 conversions
    bool avx512vbmi2 = false;             // vpexpandb / vpcompressb (the compact draft formats' decoder)
    bool avx512vbmi  = false;             // vpermb (the compact formats' bit planes)
    bool gfni        = false;             // vgf2p8affineqb (the compact formats' bit planes: 8 x 8 bit transposes)
};

// Detected once at first call (cpuid); the result never changes during the process.
const CpuFeatures& cpu_features();

const char* cpu_vendor_name(CpuVendor v);  // "intel", "amd", "other"

// One line such as "avx2 fma f16c avx512f" (or "scalar" when none of the fast paths apply).
std::string cpu_features_string();

// OpenBLAS build configuration string, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64".
std::string blas_config();

}  // namespace speculum::kernels
