// Resource lookup finds the source tree's resources and names every place it looked when something is missing.
#include "core/resources.h"

#include <gtest/gtest.h>

#include <cstdlib>

TEST(Resources, FindsSourceTreeResources) {
    auto dir = speculum::resources_dir();
    ASSERT_TRUE(dir.has_value());
    EXPECT_TRUE(std::filesystem::is_directory(*dir));
}

TEST(Resources, MissingResourceNamesPlacesLooked) {
    try {
        speculum::resource_path("models/definitely-not-here.gguf");
        FAIL() << "no error for a missing resource";
    } catch (const std::runtime_error& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("definitely-not-here.gguf"), std::string::npos);
        EXPECT_NE(msg.find("looked in"), std::string::npos);
        EXPECT_NE(msg.find("SPECULUM_RESOURCES"), std::string::npos);
    }
}

TEST(Resources, EnvironmentOverrideComesFirst) {
    setenv("SPECULUM_RESOURCES", "/nonexistent/speculum-res", 1);
    auto c = speculum::resource_candidates();
    unsetenv("SPECULUM_RESOURCES");
    ASSERT_FALSE(c.empty());
    EXPECT_EQ(c.front(), "/nonexistent/speculum-res");
}
