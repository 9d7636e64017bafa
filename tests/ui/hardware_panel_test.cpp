// Hardware panel: empty state without a profile; the bundled profiles load; choosing a profile places the
// configuration's operating points on the roofline (modeled).
#include "ui/ui_fixtures.h"

#include "core/hw/profile.h"
#include "ui/panels/hardware_panel.h"

using namespace speculum;

TEST(HardwarePanel, EmptyWithoutProfile) {
    test::HeadlessImGui im;
    ui::HardwarePanel panel;
    ui::UiSnapshot snap = test::modeled_snapshot();
    ui::UiActions actions;
    EXPECT_NE(test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); }), nullptr);
    EXPECT_TRUE(snap.modeled.roofline.empty());
}

TEST(HardwarePanel, ProfilePlacesRooflinePoints) {
    auto profiles = hw::list_profiles(hw::hardware_dir());
    ASSERT_FALSE(profiles.empty());
    ui::AppConfig cfg;
    cfg.modeled.hardware_profile = profiles[0].id;
    ui::UiSnapshot snap;
    snap.config        = cfg;
    snap.profiles      = profiles;
    snap.profile_index = 0;
    snap.modeled       = ui::compute_modeled(cfg, nullptr, &profiles[0], nullptr);
    ASSERT_TRUE(snap.modeled.error.empty()) << snap.modeled.error;
    ASSERT_EQ(snap.modeled.roofline.size(), 3u);
    // Verifying k+1 tokens reads the same weights for more FLOPs: higher arithmetic intensity than 1 token.
    EXPECT_GT(snap.modeled.roofline[1].intensity, snap.modeled.roofline[0].intensity);
    ASSERT_TRUE(snap.modeled.output.timing.has_value());
    EXPECT_GT(snap.modeled.output.bpt_chain_gb, 0);

    test::HeadlessImGui im;
    ui::HardwarePanel panel;
    ui::UiActions actions;
    EXPECT_NE(test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); }), nullptr);
    EXPECT_TRUE(actions.queue.empty());
}
