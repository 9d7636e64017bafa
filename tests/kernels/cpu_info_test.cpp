// CPU feature detection is consistent with what the compiler was told it may use.
#include "kernels/cpu_info.h"
#include "kernels/gemv.h"
#include "kernels/peak.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

TEST(CpuInfo, FeaturesStringIsStable) {
    EXPECT_EQ(speculum::kernels::cpu_features_string(), speculum::kernels::cpu_features_string());
    EXPECT_FALSE(speculum::kernels::cpu_features_string().empty());
}

TEST(CpuInfo, BlasConfigNamesOpenBlas) {
    EXPECT_NE(speculum::kernels::blas_config().find("OpenBLAS"), std::string::npos);
}

#if defined(__AVX2__)
TEST(CpuInfo, CompiledForAvx2ImpliesDetected) {
    EXPECT_TRUE(speculum::kernels::cpu_features().avx2);
}
#endif

// The vendor comes from cpuid leaf 0 and agrees with /proc/cpuinfo's vendor_id where Linux has one.
TEST(CpuInfo, VendorMatchesProcCpuinfo) {
    using speculum::kernels::CpuVendor;
    std::ifstream in("/proc/cpuinfo");
    std::string line, vendor_id;
    while (vendor_id.empty() && std::getline(in, line))
        if (line.rfind("vendor_id", 0) == 0) vendor_id = line.substr(line.find(':') + 2);
    if (vendor_id.empty()) GTEST_SKIP() << "no vendor_id in /proc/cpuinfo";
    const CpuVendor expect = vendor_id == "GenuineIntel"   ? CpuVendor::intel
                             : vendor_id == "AuthenticAMD" ? CpuVendor::amd
                                                           : CpuVendor::other;
    EXPECT_EQ(speculum::kernels::cpu_features().vendor, expect) << vendor_id;
    EXPECT_STREQ(speculum::kernels::cpu_vendor_name(CpuVendor::amd), "amd");
}

// The int8 peak burst counts its multiply-accumulates (12 chains x 64 per round) where the AVX-512 int8 kernels run,
// nothing elsewhere or for no rounds; a long burst (its checksum wraps) is well defined (the sanitizer build checks).
TEST(CpuInfo, Int8PeakBurstCountsItsMultiplyAccumulates) {
    using namespace speculum::kernels;
    EXPECT_EQ(int8_peak_burst(0), 0);
    EXPECT_EQ(int8_peak_burst(-5), 0);
    if (kernel_isa() < KernelIsa::avx512) {
        EXPECT_EQ(int8_peak_burst(100), 0) << "no AVX-512 int8 kernel: no peak";
        return;
    }
    EXPECT_EQ(int8_peak_burst(100), 100 * 12 * 64);
    EXPECT_EQ(int8_peak_burst(1 << 21), int64_t(1 << 21) * 12 * 64);
}
