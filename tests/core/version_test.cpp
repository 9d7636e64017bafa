// Build identity: the fields `speculum-cli version` and the About box show are filled in.
#include "core/version.h"

#include <gtest/gtest.h>

TEST(Version, BuildInfoIsComplete) {
    speculum::BuildInfo info = speculum::build_info();
    EXPECT_EQ(info.version, SPECULUM_VERSION);
    EXPECT_FALSE(info.build_type.empty());
    EXPECT_FALSE(info.compiler.empty());
    ASSERT_GE(info.libraries.size(), 4u);
    for (const auto& [name, version] : info.libraries) EXPECT_FALSE(version.empty()) << name;
    std::string text = speculum::build_info_text(info);
    EXPECT_NE(text.find("oneTBB"), std::string::npos);
}
