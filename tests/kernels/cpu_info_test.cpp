// CPU feature detection is consistent with what the compiler was told it may use.
#include "kernels/cpu_info.h"

#include <gtest/gtest.h>

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
