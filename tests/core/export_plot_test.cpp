// Plots and reports: the SVG is well-formed XML holding the plotted numbers; the raster writer fills what it should;
// PNG round-trips through libpng with the right size and non-blank pixels; reports and heatmaps from rows.
#include "core/export/plot_raster.h"
#include "core/export/plot_svg.h"
#include "core/export/report.h"
#include "core/store/csv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

using namespace speculum;
using namespace speculum::exporting;

namespace {

// A strict little XML well-formedness check: one root, balanced tags, quoted attributes, known entities only.
class XmlChecker {
public:
    explicit XmlChecker(const std::string& s) : m_s(s) {}
    std::string check() {
        skip_ws();
        if (m_s.compare(m_i, 5, "<?xml") == 0) {
            const size_t e = m_s.find("?>", m_i);
            if (e == std::string::npos) return "unterminated XML declaration";
            m_i = e + 2;
        }
        skip_ws();
        std::string err = element();
        if (!err.empty()) return err;
        skip_ws();
        return m_i == m_s.size() ? "" : "content after the root element at " + std::to_string(m_i);
    }
    int elements = 0;

private:
    void skip_ws() {
        while (m_i < m_s.size() && std::isspace(static_cast<unsigned char>(m_s[m_i]))) ++m_i;
    }
    std::string name() {
        const size_t b = m_i;
        while (m_i < m_s.size() && (std::isalnum(static_cast<unsigned char>(m_s[m_i])) || m_s[m_i] == '-' ||
                                    m_s[m_i] == ':' || m_s[m_i] == '_'))
            ++m_i;
        return m_s.substr(b, m_i - b);
    }
    std::string text_until(char stop, std::string& err) {
        std::string t;
        while (m_i < m_s.size() && m_s[m_i] != stop) {
            if (m_s[m_i] == '<' && stop != '<') err = "'<' inside an attribute";
            if (m_s[m_i] == '&') {
                const size_t e        = m_s.find(';', m_i);
                const std::string ent = e == std::string::npos ? "" : m_s.substr(m_i, e - m_i + 1);
                if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;")
                    err = "bad entity at " + std::to_string(m_i);
            }
            t += m_s[m_i++];
        }
        return t;
    }
    std::string element() {
        if (m_i >= m_s.size() || m_s[m_i] != '<') return "expected '<' at " + std::to_string(m_i);
        ++m_i;
        const std::string tag = name();
        if (tag.empty()) return "empty tag name at " + std::to_string(m_i);
        ++elements;
        for (;;) {
            skip_ws();
            if (m_s.compare(m_i, 2, "/>") == 0) {
                m_i += 2;
                return "";
            }
            if (m_i < m_s.size() && m_s[m_i] == '>') {
                ++m_i;
                break;
            }
            const std::string attr = name();
            if (attr.empty() || m_i + 1 >= m_s.size() || m_s[m_i] != '=' || m_s[m_i + 1] != '"')
                return "malformed attribute in <" + tag + "> at " + std::to_string(m_i);
            m_i += 2;
            std::string err;
            text_until('"', err);
            if (!err.empty()) return err;
            ++m_i;
        }
        for (;;) {
            std::string err;
            text_until('<', err);
            if (!err.empty()) return err;
            if (m_i >= m_s.size()) return "unclosed <" + tag + ">";
            if (m_s.compare(m_i, 2, "</") == 0) {
                m_i += 2;
                if (name() != tag) return "mismatched </...> for <" + tag + ">";
                if (m_i >= m_s.size() || m_s[m_i] != '>') return "malformed end tag";
                ++m_i;
                return "";
            }
            err = element();
            if (!err.empty()) return err;
        }
    }
    const std::string& m_s;
    size_t m_i = 0;
};

AcceptanceData sample_acceptance() {
    AcceptanceData d;
    d.reached   = {100, 80, 60, 40};
    d.accepted  = {80, 60, 40, 20};
    d.predicted = {0.8, 0.7, 0.6, 0.5};
    d.subtitle  = "mxfp4 <self> & chain";  // needs escaping
    return d;
}

HeatmapData sample_heatmap() {
    HeatmapData d;
    d.xs = {1, 2, 4}, d.ys = {0.5, 0.9};
    d.values  = {1.1, 1.4, 1.2, 1.8, 2.6, NAN};
    d.x_label = "gamma", d.y_label = "alpha", d.metric = "speedup";
    return d;
}

// A font of one glyph shape: every character a 5x7 filled block, 6 px advance.
class BlockFont final : public GlyphSource {
public:
    bool glyph(uint32_t cp, Glyph& g) const override {
        g.x0 = 0, g.y0 = 2, g.w = 5, g.h = 7, g.advance = 6, g.stride = 5;
        g.alpha = cp == ' ' ? nullptr : m_px;
        return cp < 128;
    }
    float pixel_size() const override { return 13; }
    float ascent() const override { return 9; }

private:
    uint8_t m_px[35] = {255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
                        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255};
};

size_t non_background(const Image& img, Rgba bg) {
    size_t n = 0;
    for (size_t i = 0; i < img.rgba.size(); i += 4)
        n += img.rgba[i] != bg.r || img.rgba[i + 1] != bg.g || img.rgba[i + 2] != bg.b;
    return n;
}

}  // namespace

TEST(PlotSvg, WellFormedAndHoldsTheData) {
    for (const Plot& p :
         {acceptance_plot(sample_acceptance()), speedup_plot({{"EWIF", 1.83, false}, {"measured", 1.52, true}}, "x"),
          heatmap_plot(sample_heatmap())}) {
        const std::string svg = to_svg(p);
        XmlChecker x(svg);
        EXPECT_EQ(x.check(), "") << svg.substr(0, 400);
        EXPECT_GT(x.elements, 10);
        EXPECT_NE(svg.find("width=\"" + std::to_string(p.width) + "\""), std::string::npos);
    }
    const std::string a = to_svg(acceptance_plot(sample_acceptance()));
    EXPECT_NE(a.find("<title>alpha_1 = 0.800 (80/100, measured)</title>"), std::string::npos);
    EXPECT_NE(a.find("<title>alpha_4 = 0.500 (20/40, measured)</title>"), std::string::npos);
    EXPECT_NE(a.find("mxfp4 &lt;self&gt; &amp; chain"), std::string::npos);
    const std::string s = to_svg(speedup_plot({{"EWIF", 1.83, false}, {"measured", 1.52, true}}, "x"));
    EXPECT_NE(s.find("EWIF = 1.830x (modeled)"), std::string::npos);
    EXPECT_NE(s.find(">1.52x<"), std::string::npos);
    const std::string h = to_svg(heatmap_plot(sample_heatmap()));
    EXPECT_NE(h.find("gamma = 2, alpha = 0.9: speedup = 2.6"), std::string::npos);
    EXPECT_NE(h.find("gamma = 4, alpha = 0.9: no result"), std::string::npos);
    EXPECT_EQ(xml_escape(std::string("a\x01<b")), "a&lt;b");
}

TEST(PlotRaster, FillsRectsLinesAndText) {
    Plot p;
    p.width = 40, p.height = 30;
    p.rects.push_back({10, 10, 5, 5, {255, 0, 0, 255}, ""});
    const Image img = rasterize(p, nullptr);
    auto px         = [&](int x, int y) { return &img.rgba[(size_t(y) * 40 + size_t(x)) * 4]; };
    EXPECT_EQ(px(12, 12)[0], 255);
    EXPECT_EQ(px(12, 12)[1], 0);
    EXPECT_EQ(px(9, 12)[1], 255);  // just outside: background
    EXPECT_EQ(non_background(img, p.background), 25u);
    p.lines.push_back({0, 25, 39, 25, {0, 0, 0, 255}, 1});
    EXPECT_GE(non_background(rasterize(p, nullptr), p.background), 25u + 39u);
    p.texts.push_back({2, 12, "ab", {0, 0, 255, 255}, 13});
    const size_t with_text = non_background(rasterize(p, nullptr), p.background);
    BlockFont font;
    EXPECT_GT(non_background(rasterize(p, &font), p.background), with_text + 2 * 35 - 25) << "two 5x7 glyphs drawn";
    p.width = 0;
    EXPECT_THROW(rasterize(p, nullptr), std::invalid_argument);
}

TEST(PlotPng, RoundTripsThroughLibpng) {
    BlockFont font;
    const Plot p     = acceptance_plot(sample_acceptance(), 320, 200);
    const Image img  = rasterize(p, &font);
    const auto bytes = encode_png(img);
    ASSERT_GT(bytes.size(), 8u);
    EXPECT_EQ(bytes[1], 'P');
    EXPECT_EQ(bytes[2], 'N');
    const Image back = decode_png(bytes);
    EXPECT_EQ(back.width, 320);
    EXPECT_EQ(back.height, 200);
    EXPECT_EQ(back, img);
    EXPECT_GT(non_background(back, p.background), 2000u);
    EXPECT_THROW(decode_png({1, 2, 3, 4}), std::runtime_error);
}

TEST(Reports, RunReportHeatmapRowsAndCsv) {
    nlohmann::json run      = {{"runs", nlohmann::json::array({1, 2})},
                               {"total",
                                {{"n_generated", 40},
                                 {"n_steps", 16},
                                 {"pos_reached", {16, 12}},
                                 {"pos_accepted", {12, 6}},
                                 {"tokens_per_s", 80.0},
                                 {"baseline_tokens_per_s", 40.0},
                                 {"speedup", 2.0},
                                 {"bytes_per_token", 1e6},
                                 {"lossless_checked", true},
                                 {"lossless_mismatch", -1},
                                 {"levels", {{{"cost_ratio", 1.0}}, {{"cost_ratio", 0.2}}}}}}};
    const MeasuredFigures m = measured_from_run_report(run);
    EXPECT_EQ(m.n_prompts, 2);
    EXPECT_DOUBLE_EQ(m.mean_accepted_length, 2.5);
    EXPECT_EQ(m.cost_ratio, std::vector<double>{0.2});
    run["total"].erase("pos_reached");
    try {
        (void)measured_from_run_report(run);
        ADD_FAILURE();
    } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()), "run report.total: missing \"pos_reached\"");
    }

    Manifest man;
    man.model.path              = "t.gguf";
    man.config.levels           = {drafts::DraftSpec{}};
    man.config.gamma            = {2};
    run["total"]["pos_reached"] = {16, 12};
    man.figures.measured        = measured_from_run_report(run);
    man.figures.predicted       = predict_from_measured(*man.figures.measured, man.config);
    const nlohmann::json rep    = make_report(man, run);
    EXPECT_EQ(rep.at("format"), "speculum.report");
    EXPECT_EQ(rep.at("acceptance").size(), 2u);
    EXPECT_EQ(rep.at("acceptance")[1].at("alpha"), 0.5);
    EXPECT_EQ(rep.at("acceptance")[1].at("acceptance_rate"), 6.0 / 16);
    EXPECT_EQ(rep.at("speedup").back().at("kind"), "measured");
    EXPECT_EQ(rep.at("run"), run);

    std::vector<store::ResultRow> rows(4);
    const double g[] = {2, 4, 2, 2}, r[] = {0.1, 0.1, 0.3, 0.3}, s[] = {1.2, 1.5, 0.9, 1.1};
    for (int i = 0; i < 4; ++i) {
        rows[size_t(i)].config             = {{"gamma", {g[i]}}, {"levels", {{{"prune", {{"ratio", r[i]}}}}}}};
        rows[size_t(i)].metrics["speedup"] = s[i];
        rows[size_t(i)].stats              = {{"n", 1}};
    }
    rows[1].sweep       = "a \"quoted\", name";
    const HeatmapData h = heatmap_from_rows(rows, "/gamma/0", "/levels/0/prune/ratio", "speedup");
    EXPECT_EQ(h.xs, (std::vector<double>{2, 4}));
    EXPECT_EQ(h.ys, (std::vector<double>{0.1, 0.3}));
    EXPECT_DOUBLE_EQ(h.values[0], 1.2);
    EXPECT_DOUBLE_EQ(h.values[2], 1.1) << "the best of two rows in one cell";
    EXPECT_TRUE(std::isnan(h.values[3]));
    EXPECT_EQ(h.source, "measured");
    EXPECT_THROW(heatmap_from_rows(rows, "gamma", "/x", "speedup"), std::invalid_argument);

    std::ostringstream csv;
    store::write_results_csv(csv, rows);
    EXPECT_EQ(csv.str().substr(0, 53), "config_hash,model_hash,dataset_hash,sweep,task,status");
    EXPECT_NE(csv.str().find("\"a \"\"quoted\"\", name\""), std::string::npos);
}
