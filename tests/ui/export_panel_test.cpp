// Export panel and its content, headless: the manifest, snippets, report, CSV and plots built from a snapshot; the
// target hashed off the GUI thread; PNG text from ImGui's built-in font; saving; the panel's place in the dashboard.
#include "ui/ui_fixtures.h"

#include "core/engine/acceptance_profile.h"

#include "core/export/manifest.h"
#include "core/export/plot_raster.h"
#include "core/export/sha256.h"
#include "ui/dashboard.h"
#include "ui/model/engine_measurer.h"
#include "ui/model/export_content.h"
#include "ui/panels/export_panel.h"
#include "ui/plot_font.h"

#include <fstream>
#include <sstream>

using namespace speculum;

namespace {

ui::UiSnapshot snapshot_with_model() {
    ui::UiSnapshot s = test::modeled_snapshot();
    s.model          = ui::summarize_gguf(model::GgufFile::open(test::synthetic_gguf()));
    s.build.version  = "0.1.0";
    return s;
}

size_t non_white(const exporting::Image& img) {
    size_t n = 0;
    for (size_t i = 0; i < img.rgba.size(); i += 4)
        n += img.rgba[i] != 255 || img.rgba[i + 1] != 255 || img.rgba[i + 2] != 255;
    return n;
}

}  // namespace

TEST(PlotFont, ImGuiDefaultFontWithoutAContext) {
    const exporting::GlyphSource& f = ui::plot_glyphs();
    EXPECT_FLOAT_EQ(f.pixel_size(), 13.0f);
    EXPECT_GT(f.ascent(), 5.0f);
    exporting::GlyphSource::Glyph g;
    ASSERT_TRUE(f.glyph('A', g));
    EXPECT_GT(g.w, 2);
    EXPECT_GT(g.h, 5);
    ASSERT_NE(g.alpha, nullptr);
    int lit = 0;
    for (int y = 0; y < g.h; ++y)
        for (int x = 0; x < g.w; ++x) lit += g.alpha[size_t(y) * size_t(g.stride) + size_t(x)] > 128;
    EXPECT_GT(lit, 5) << "an 'A' has ink";
    ASSERT_TRUE(f.glyph(' ', g));
    EXPECT_GT(g.advance, 0);
    exporting::Plot p;
    p.width = 120, p.height = 30;
    p.texts.push_back({4, 20, "speedup 1.50x", {0, 0, 0, 255}, 13});
    EXPECT_GT(non_white(exporting::rasterize(p, &f)), 40u);
}

TEST(ExportContent, ManifestConfigIsTheMeasuredConfig) {
    ui::UiSnapshot snap = test::modeled_snapshot();
    ui::AppConfig& cfg  = snap.config;
    cfg.spec.gamma[0] = 6, cfg.spec.p_min = 0.4f, cfg.spec.sampling.temperature = 0.0f;
    cfg.draft().kind          = drafts::DraftKind::self;
    cfg.draft().weight_format = drafts::WeightFormat::mxfp4;
    ASSERT_EQ(ui::set_config_value(cfg, "cascade", "1"), "");
    cfg.spec.gamma[1] = 3;
    std::vector<std::string> notes;
    engine::SpecConfig s = ui::export_spec_config(snap, notes);
    EXPECT_NO_THROW(s.validate());
    EXPECT_EQ(s, ui::spec_config_from_app(cfg, {})) << "what the app measures is what the manifest carries";
    ASSERT_EQ(s.levels.size(), 2u);
    EXPECT_EQ(s.levels[1].kind, drafts::DraftKind::maxgram);
    EXPECT_EQ(s.gamma, (std::vector<int32_t>{6, 3}));
    EXPECT_FLOAT_EQ(s.p_min, 0.4f);
    EXPECT_TRUE(notes.empty());
    cfg.modeled.horizontal = {{0.7, 0.01, 2}};
    ui::export_spec_config(snap, notes);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("horizontal split"), std::string::npos);
    set_tree_mode(cfg, ui::TreeMode::budget);
    EXPECT_THROW(ui::export_spec_config(snap, notes), std::invalid_argument) << "a tree takes one draft level";
    ASSERT_EQ(ui::set_config_value(cfg, "cascade", "0"), "");
    cfg.spec.tree.node_budget = 15;
    s                         = ui::export_spec_config(snap, notes);
    EXPECT_EQ(s.verification, engine::Verification::tree);
    EXPECT_EQ(s.tree.node_budget, 15);
}

TEST(ExportContent, DocumentsFromASnapshot) {
    ui::UiSnapshot snap = test::modeled_snapshot();
    EXPECT_NE(ui::make_export(ui::ExportFormat::manifest, snap, "").error.find("open a model first"),
              std::string::npos);
    EXPECT_NE(ui::make_export(ui::ExportFormat::csv, snap, "").error.find("no sweep yet"), std::string::npos);
    snap           = snapshot_with_model();
    snap.measured  = test::sample_measured();
    const auto man = ui::make_export(ui::ExportFormat::manifest, snap, "");
    ASSERT_EQ(man.error, "");
    const auto m = nlohmann::json::parse(man.text).get<exporting::Manifest>();
    EXPECT_NO_THROW(m.validate());
    EXPECT_EQ(m.model.path, test::synthetic_gguf());
    EXPECT_EQ(m.figures.measured->pos_reached, (std::vector<int64_t>{100, 80, 60, 40}));
    EXPECT_GT(m.figures.predicted->ewif, 1.0);
    const auto l = ui::make_export(ui::ExportFormat::llama_cpp, snap, "");
    EXPECT_NE(l.text.find("llama-server"), std::string::npos) << l.error;
    EXPECT_NE(ui::make_export(ui::ExportFormat::vllm, snap, "").text.find("--speculative-config"), std::string::npos);
    EXPECT_NE(ui::make_export(ui::ExportFormat::sglang, snap, "").text.find("--speculative-algorithm"),
              std::string::npos);
    EXPECT_NE(ui::make_export(ui::ExportFormat::report, snap, "").text.find("speculum.report"), std::string::npos);
    EXPECT_NE(
        ui::make_export(ui::ExportFormat::svg_acceptance, snap, "").text.find("alpha_1 = 0.800 (80/100, measured)"),
        std::string::npos);
    EXPECT_NE(ui::make_export(ui::ExportFormat::svg_speedup, snap, "").text.find("measured = 2.400x (measured)"),
              std::string::npos);
    // The measured run's acceptance as speculation_profile.json, with the synthetic-replay settings as notes.
    const auto profile = ui::make_export(ui::ExportFormat::acceptance_profile, snap, "");
    ASSERT_EQ(profile.error, "");
    const auto p = nlohmann::json::parse(profile.text).get<engine::AcceptanceProfile>();
    EXPECT_DOUBLE_EQ(p.conditional[0], 0.8);
    EXPECT_EQ(p.marginal.size(), 4u);
    ASSERT_EQ(profile.notes.size(), 2u);
    EXPECT_NE(profile.notes[0].find("--spec-synth-rates 0.800,"), std::string::npos) << profile.notes[0];
    EXPECT_NE(profile.notes[1].find("\"rejection_sample_method\":\"synthetic\""), std::string::npos);
    ui::UiSnapshot no_run = snap;
    no_run.measured.reset();
    EXPECT_NE(ui::make_export(ui::ExportFormat::acceptance_profile, no_run, "").error.find("no finished measured run"),
              std::string::npos);
    const auto png = ui::make_export(ui::ExportFormat::png_speedup, snap, "", &ui::plot_glyphs());
    ASSERT_EQ(png.error, "");
    const exporting::Image img = exporting::decode_png(png.bytes);
    EXPECT_EQ(img.width, 640);
    EXPECT_EQ(img.height, 400);
    EXPECT_GT(non_white(img), 3000u);

    // The sweep as the Design space panel shows it: every row of its store view, and the heatmap of its selection.
    auto view = std::make_shared<ui::StoreView>();
    for (int g : {1, 2})
        for (double a : {0.5, 0.7}) {
            ui::StoreRowView r;
            r.config  = {{"gamma", {g}}, {"modeled", {{"levels", {{{"alpha", a}, {"c", 0.1}}}}}}};
            r.metrics = {{"predicted_speedup", g + a}, {"draft_work", 0.1 * g}};
            view->rows.push_back(r);
        }
    view->rows.back().status = "failed", view->rows.back().metrics.clear();
    ui::index_store_view(*view);
    snap.store            = view;
    snap.design_selection = {"/gamma/0", "/modeled/levels/0/alpha", "predicted_speedup", ui::CellAggregate::best};
    const auto csv        = ui::make_export(ui::ExportFormat::csv, snap, "");
    EXPECT_EQ(csv.text,
              "status,source,task,/gamma/0,/modeled/levels/0/alpha,predicted_speedup,draft_work\n"
              "done,modeled,,1,0.5,1.5,0.1\ndone,modeled,,1,0.7,1.7,0.1\ndone,modeled,,2,0.5,2.5,0.2\n"
              "failed,modeled,,2,0.7,,\n");
    const std::string svg = ui::make_export(ui::ExportFormat::svg_heatmap, snap, "").text;
    EXPECT_NE(svg.find("best predicted_speedup over /gamma/0 and /modeled/levels/0/alpha"), std::string::npos) << svg;
    EXPECT_NE(svg.find("source: modeled"), std::string::npos);
    EXPECT_NE(ui::make_export(ui::ExportFormat::svg_heatmap, snap, "").text.find("<svg"), std::string::npos);
}

// The panel emits actions and does no work itself (issue #53): it asks for the target's digest once per file, shows
// the snapshot's, and hands the document as shown to the app for saving.
TEST(ExportPanel, AsksForTheDigestSwitchesFormatsAndHandsOverWhatToSave) {
    test::HeadlessImGui im;
    ui::ExportPanel panel;
    panel.visible = true;
    ui::UiActions actions;
    ui::UiSnapshot snap = test::modeled_snapshot();
    ASSERT_NE(test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); }), nullptr);
    EXPECT_NE(panel.document().error.find("open a model first"), std::string::npos);
    EXPECT_TRUE(actions.queue.empty()) << "no model, no digest to ask for";

    snap = snapshot_with_model();
    test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); });
    test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); });
    ASSERT_EQ(actions.queue.size(), 1u) << "asked once per file";
    const auto* ask = std::get_if<ui::ActionHashModel>(&actions.queue[0]);
    ASSERT_NE(ask, nullptr);
    EXPECT_EQ(ask->path, snap.model->path);
    EXPECT_TRUE(panel.model_sha256().empty());

    const std::string want = exporting::sha256_file(test::synthetic_gguf());
    snap.model_digest      = {snap.model->path, want, ""};
    test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); });
    EXPECT_EQ(panel.model_sha256(), want);
    EXPECT_NE(panel.document().text.find(want), std::string::npos) << "the manifest records the digest";
    snap.model_digest = {"/another/model.gguf", "00", ""};
    test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); });
    EXPECT_TRUE(panel.model_sha256().empty()) << "a digest of another file is not this model's";

    panel.set_format(ui::ExportFormat::vllm);
    snap.config.spec.p_min = 0.3f;
    test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); });
    EXPECT_NE(panel.document().text.find("vllm serve"), std::string::npos);
    ASSERT_FALSE(panel.document().notes.empty());
    EXPECT_NE(panel.document().notes[0].find("vllm cannot express: stopping a draft below a draft probability"),
              std::string::npos)
        << panel.document().notes[0];

    const ui::ActionSaveExport save = panel.save_action("/tmp/x/export_panel_vllm.sh");
    EXPECT_EQ(save.path, "/tmp/x/export_panel_vllm.sh");
    EXPECT_EQ(save.text, panel.document().text);
    EXPECT_TRUE(save.bytes.empty());
    EXPECT_STREQ(panel.suggested_path(), "/tmp/x/export_panel_vllm.sh");
    EXPECT_EQ(actions.queue.size(), 1u) << "nothing was clicked";
}

TEST(ExportPanel, ListedInTheDashboard) {
    ui::Dashboard d;
    bool found = false;
    for (const auto& p : d.panels()) found |= std::string(p.title) == ui::ExportPanel::title;
    EXPECT_TRUE(found);
    EXPECT_TRUE(d.set_solo(ui::ExportPanel::title));
    EXPECT_TRUE(d.export_panel.visible);
}
