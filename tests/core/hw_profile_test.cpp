// Hardware profiles: every bundled profile loads, validates and has a source per figure; JSON round-trip;
// malformed profiles are rejected with the field named.
#include "core/hw/profile.h"

#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace speculum::hw;

TEST(HwProfile, BundledProfilesLoadWithSources) {
    auto dir      = hardware_dir(speculum::test::source_dir() / "resources");
    auto profiles = list_profiles(dir);
    std::set<std::string> ids;
    for (const auto& p : profiles) {
        ids.insert(p.id);
        EXPECT_GT(p.mem_bw_gbps, 0) << p.id;
        EXPECT_FALSE(p.sources.empty()) << p.id;
        // Every estimate is a field that has a citation saying "estimate".
        for (const auto& e : p.estimates) {
            ASSERT_TRUE(p.sources.count(e)) << p.id << " " << e;
            EXPECT_NE(p.sources.at(e).find("estimate"), std::string::npos) << p.id << " " << e;
        }
    }
    for (const char* id :
         {"rtx4090", "jetson_agx_orin", "jetson_xavier_nx", "a100", "h100", "apple_m3_max", "intel_core_ultra9_285k"})
        EXPECT_TRUE(ids.count(id)) << id;
    EXPECT_DOUBLE_EQ(find_profile(dir, "rtx4090").mem_bw_gbps, 1008);
    EXPECT_DOUBLE_EQ(find_profile(dir, "intel_core_ultra9_285k").mem_bw_gbps, 104);
    EXPECT_THROW(find_profile(dir, "no_such_device"), std::runtime_error);
}

TEST(HwProfile, JsonRoundTrip) {
    auto p = find_profile(hardware_dir(speculum::test::source_dir() / "resources"), "jetson_agx_orin");
    nlohmann::json j;
    to_json(j, p);
    HardwareProfile q;
    from_json(j, q);
    EXPECT_EQ(p, q);
    auto file = speculum::test::tmp_dir() / "profile_roundtrip.json";
    save_profile(p, file);
    EXPECT_EQ(load_profile(file), p);
}

TEST(HwProfile, RejectsBadProfiles) {
    auto base         = find_profile(hardware_dir(speculum::test::source_dir() / "resources"), "a100");
    auto expect_field = [](HardwareProfile p, const std::string& field) {
        try {
            validate(p);
            ADD_FAILURE() << "accepted a profile with a bad " << field;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
        }
    };
    auto p        = base;
    p.mem_bw_gbps = -1;
    expect_field(p, "memory_bandwidth_gbps");
    p      = base;
    p.kind = "tpu";
    expect_field(p, "kind");
    p = base;
    p.sources.erase("fp32_tflops");
    expect_field(p, "sources");
    p = base;
    p.estimates.push_back("speed");
    expect_field(p, "estimates");

    nlohmann::json j;
    to_json(j, base);
    j["bandwidth"] = 3;
    HardwareProfile q;
    EXPECT_THROW(from_json(j, q), std::invalid_argument);
    auto file = speculum::test::tmp_dir() / "profile_bad.json";
    std::ofstream(file) << "{ not json";
    try {
        load_profile(file);
        ADD_FAILURE();
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("profile_bad.json"), std::string::npos);
    }
}
