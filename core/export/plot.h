// Plots as plain data: a small list of filled rectangles, lines and text runs in pixel coordinates (origin top
// left, text anchored at its baseline), built from the figures the app shows — acceptance per position, speedup
// bars, the design-space heatmap — and rendered by the SVG writer (plot_svg.h) and the raster writer (plot_raster.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::exporting {

struct Rgba {
    uint8_t r = 0, g = 0, b = 0, a = 255;
    bool operator==(const Rgba&) const = default;
};

struct PlotRect {
    float x = 0, y = 0, w = 0, h = 0;  // pixels
    Rgba fill;
    std::string tip;  // the datum it shows ("alpha_1 = 0.750 (3/4)"): an SVG <title>, ignored by the rasteriser
};

struct PlotLine {
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // pixels
    Rgba color;
    float width = 1;  // pixels
};

enum class TextAnchor { start, middle, end };

struct PlotText {
    float x = 0, y = 0;  // pixels; y is the baseline
    std::string text;    // UTF-8; the raster writer draws the characters its font has
    Rgba color;
    float size        = 13;  // pixel height of the font
    TextAnchor anchor = TextAnchor::start;
};

struct Plot {
    int width  = 640;  // pixels
    int height = 400;
    std::string title;  // also the SVG <title>
    Rgba background{255, 255, 255, 255};
    std::vector<PlotRect> rects;  // drawn first, in order
    std::vector<PlotLine> lines;  // then the lines
    std::vector<PlotText> texts;  // then the text
};

// ---- data the builders take (plain numbers; labelled measured or modeled by the caller) ----

struct AcceptanceData {
    std::vector<int64_t> reached;   // [i]: steps where position i + 1 was reviewed (measured; may be empty)
    std::vector<int64_t> accepted;  // [i]: of those, accepted
    std::vector<double> predicted;  // [i]: modeled α_{i+1} (may be empty)
    std::string subtitle;           // e.g. the configuration
};

struct SpeedupBar {
    std::string label;
    double value  = 0;      // x speedup over plain decoding
    bool measured = false;  // false = modeled
};

struct HeatmapData {
    std::vector<double> xs, ys;               // axis values
    std::vector<std::string> x_text, y_text;  // the values as tick text (non-numeric axes); empty = "%g" of xs, ys
    std::vector<double> values;               // ys.size() x xs.size(), row-major by y; NaN = no result
    std::string x_label, y_label, metric;
    std::string source = "modeled";  // "modeled" or "measured"
};

// Bars of measured α_i with 95 % Wilson whiskers, modeled α_i as markers, one slot per position.
Plot acceptance_plot(const AcceptanceData& d, int width = 640, int height = 400);
// Horizontal bars, one per figure, measured and modeled in different colours, with the 1x line.
Plot speedup_plot(const std::vector<SpeedupBar>& bars, const std::string& subtitle, int width = 640, int height = 400);
// One cell per (x, y) coloured by the metric (dark blue = lowest, yellow = highest), values printed when they fit.
Plot heatmap_plot(const HeatmapData& d, int width = 640, int height = 480);

// Viridis-like ramp: t in [0, 1] -> dark blue .. yellow; NaN -> grey.
Rgba heat_rgba(double t);

}  // namespace speculum::exporting
