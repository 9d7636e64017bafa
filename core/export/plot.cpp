// The plot builders: acceptance per position, speedup bars and the design-space heatmap as Plot lists (see plot.h).
#include "core/export/plot.h"
#include "core/analytic/calibration.h"
#include "core/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace speculum::exporting {

namespace {

constexpr Rgba kInk{30, 30, 36, 255};
constexpr Rgba kGrid{215, 215, 222, 255};
constexpr Rgba kAxisText{90, 90, 100, 255};
constexpr Rgba kMeasured{66, 133, 220, 255};
constexpr Rgba kModeled{230, 150, 40, 255};
constexpr Rgba kModeledFill{230, 150, 40, 90};
constexpr Rgba kSpeedupMeasured{70, 170, 90, 255};
constexpr float kCharW = 7.0f;  // advance of a 13 px monospace glyph (ImGui's ProggyClean), for layout

void header(Plot& p, const std::string& title, const std::string& subtitle) {
    p.title = title;
    p.texts.push_back({16, 26, title, kInk, 16});
    if (!subtitle.empty()) p.texts.push_back({16, 44, subtitle, kAxisText, 12});
}

void legend(Plot& p, float x, float y, Rgba c, const std::string& text) {
    p.rects.push_back({x, y - 10, 12, 12, c, ""});
    p.texts.push_back({x + 18, y, text, kInk, 12});
}

}  // namespace

Rgba heat_rgba(double t) {
    if (!std::isfinite(t)) return {150, 150, 150, 255};
    t                             = std::clamp(t, 0.0, 1.0);
    static const float stops[][3] = {{0.27f, 0.00f, 0.33f},
                                     {0.23f, 0.32f, 0.55f},
                                     {0.13f, 0.57f, 0.55f},
                                     {0.37f, 0.79f, 0.38f},
                                     {0.99f, 0.91f, 0.14f}};
    const double x                = t * 4.0;
    const int i                   = std::min(3, int(x));
    const float f                 = float(x - i);
    auto ch = [&](int k) { return uint8_t(std::lround(255.0f * (stops[i][k] + f * (stops[i + 1][k] - stops[i][k])))); };
    return {ch(0), ch(1), ch(2), 255};
}

Plot acceptance_plot(const AcceptanceData& d, int width, int height) {
    Plot p;
    p.width = width, p.height = height;
    header(p, "Acceptance per draft position", d.subtitle);
    legend(p, 16, 66, kMeasured, "measured alpha_i (95% Wilson)");
    legend(p, 260, 66, kModeled, "modeled");
    const size_t n   = std::max(d.reached.size(), d.predicted.size());
    const float left = 52, right = float(width) - 16, top = 80, bottom = float(height) - 40;
    auto y_of = [&](double v) { return bottom - float(std::clamp(v, 0.0, 1.0)) * (bottom - top); };
    for (double g : {0.0, 0.25, 0.5, 0.75, 1.0}) {
        p.lines.push_back({left, y_of(g), right, y_of(g), g == 0.0 ? kInk : kGrid, 1});
        p.texts.push_back({left - 6, y_of(g) + 4, fmt("%.2f", g), kAxisText, 12, TextAnchor::end});
    }
    p.texts.push_back({(left + right) / 2, float(height) - 8, "draft position", kAxisText, 12, TextAnchor::middle});
    if (n == 0) {
        p.texts.push_back(
            {(left + right) / 2, (top + bottom) / 2, "no acceptance data", kAxisText, 13, TextAnchor::middle});
        return p;
    }
    const float slot = (right - left) / float(n);
    for (size_t i = 0; i < n; ++i) {
        const float x0 = left + slot * float(i) + slot * 0.15f, x1 = left + slot * float(i + 1) - slot * 0.15f;
        const float xm          = (x0 + x1) / 2;
        const bool has_measured = i < d.reached.size() && i < d.accepted.size();
        if (has_measured) {
            const int64_t r = d.reached[i], a = d.accepted[i];
            const double alpha = r > 0 ? double(a) / double(r) : 0.0;
            p.rects.push_back({x0, y_of(alpha), x1 - x0, y_of(0) - y_of(alpha), kMeasured,
                               "alpha_" + std::to_string(i + 1) + " = " + fmt("%.3f", alpha) + " (" +
                                   std::to_string(a) + "/" + std::to_string(r) + ", measured)"});
            if (r > 0) {
                const auto [lo, hi] = analytic::wilson_interval(a, r);
                p.lines.push_back({xm, y_of(lo), xm, y_of(hi), kInk, 1.5f});
                p.lines.push_back({xm - 4, y_of(hi), xm + 4, y_of(hi), kInk, 1});
                p.lines.push_back({xm - 4, y_of(lo), xm + 4, y_of(lo), kInk, 1});
            }
            if (slot >= 30)
                p.texts.push_back({xm, y_of(0) - 4, fmt("%.2f", alpha), {255, 255, 255, 255}, 11, TextAnchor::middle});
        }
        if (i < d.predicted.size()) {
            const double m = d.predicted[i];
            if (!has_measured)
                p.rects.push_back({x0, y_of(m), x1 - x0, y_of(0) - y_of(m), kModeledFill,
                                   "alpha_" + std::to_string(i + 1) + " = " + fmt("%.3f", m) + " (modeled)"});
            p.lines.push_back({x0 - 2, y_of(m), x1 + 2, y_of(m), kModeled, 3});
        }
        if (n <= 24 || i % ((n + 23) / 24) == 0)
            p.texts.push_back({xm, bottom + 16, std::to_string(i + 1), kAxisText, 12, TextAnchor::middle});
    }
    return p;
}

Plot speedup_plot(const std::vector<SpeedupBar>& bars, const std::string& subtitle, int width, int height) {
    Plot p;
    p.width = width, p.height = height;
    header(p, "Speedup over plain decoding", subtitle);
    legend(p, 16, 66, kSpeedupMeasured, "measured");
    legend(p, 120, 66, kModeled, "modeled");
    if (bars.empty()) {
        p.texts.push_back(
            {float(width) / 2, float(height) / 2, "no speedup figures", kAxisText, 13, TextAnchor::middle});
        return p;
    }
    size_t longest = 0;
    double top     = 1.0;
    for (const auto& b : bars) longest = std::max(longest, b.label.size()), top = std::max(top, b.value);
    top *= 1.1;  // room for the value text
    const float left  = std::min(float(width) * 0.45f, 24 + kCharW * float(longest));
    const float right = float(width) - 60, y0 = 84, bottom = float(height) - 28;
    const float row = std::min(30.0f, (bottom - y0) / float(bars.size()));
    auto x_of       = [&](double v) { return left + float(std::max(0.0, v) / top) * (right - left); };
    for (size_t i = 0; i < bars.size(); ++i) {
        const SpeedupBar& b = bars[i];
        const float y       = y0 + row * float(i);
        p.rects.push_back(
            {left, y + 3, x_of(b.value) - left, row - 8, b.measured ? kSpeedupMeasured : kModeled,
             b.label + " = " + fmt("%.3f", b.value) + "x (" + (b.measured ? "measured" : "modeled") + ")"});
        p.texts.push_back({left - 8, y + row / 2 + 3, b.label, kInk, 12, TextAnchor::end});
        p.texts.push_back({x_of(b.value) + 6, y + row / 2 + 3, fmt("%.2fx", b.value), kInk, 12});
    }
    const float x1 = x_of(1.0), yb = y0 + row * float(bars.size());
    p.lines.push_back({x1, y0, x1, yb, kAxisText, 1});
    p.lines.push_back({left, y0, left, yb, kInk, 1});
    p.texts.push_back({x1, yb + 16, "1x", kAxisText, 12, TextAnchor::middle});
    return p;
}

Plot heatmap_plot(const HeatmapData& d, int width, int height) {
    Plot p;
    p.width = width, p.height = height;
    header(p, d.metric + " over " + d.x_label + " and " + d.y_label, "source: " + d.source);
    const size_t nx = d.xs.size(), ny = d.ys.size();
    auto x_tick = [&](size_t i) { return i < d.x_text.size() ? d.x_text[i] : fmt("%g", d.xs[i]); };
    auto y_tick = [&](size_t i) { return i < d.y_text.size() ? d.y_text[i] : fmt("%g", d.ys[i]); };
    if (nx == 0 || ny == 0 || d.values.size() != nx * ny) {
        p.texts.push_back({float(width) / 2, float(height) / 2, "no sweep results", kAxisText, 13, TextAnchor::middle});
        return p;
    }
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (double v : d.values)
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    const float left = 64, right = float(width) - 16, top = 92, bottom = float(height) - 44;
    const float cw = (right - left) / float(nx), ch = (bottom - top) / float(ny);
    if (std::isfinite(lo)) {
        legend(p, 16, 66, heat_rgba(0), "lowest " + fmt("%.3g", lo));
        legend(p, 180, 66, heat_rgba(1), "highest " + fmt("%.3g", hi));
    }
    for (size_t iy = 0; iy < ny; ++iy)
        for (size_t ix = 0; ix < nx; ++ix) {
            const double v = d.values[iy * nx + ix];
            const double t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
            const float x = left + cw * float(ix), y = top + ch * float(ny - 1 - iy);  // y grows upwards
            const std::string where = d.x_label + " = " + x_tick(ix) + ", " + d.y_label + " = " + y_tick(iy);
            p.rects.push_back({x, y, cw - 1, ch - 1, heat_rgba(std::isfinite(v) ? t : NAN),
                               where + ": " + (std::isfinite(v) ? d.metric + " = " + fmt("%.4g", v) : "no result")});
            if (std::isfinite(v) && cw >= 44 && ch >= 16)
                p.texts.push_back({x + cw / 2, y + ch / 2 + 4, fmt("%.2f", v),
                                   t > 0.6 ? Rgba{0, 0, 0, 255} : Rgba{255, 255, 255, 255}, 12, TextAnchor::middle});
        }
    const size_t xstep = std::max<size_t>(1, size_t(std::ceil(float(nx) * 48.0f / (right - left))));
    for (size_t ix = 0; ix < nx; ix += xstep)
        p.texts.push_back({left + cw * (float(ix) + 0.5f), bottom + 16, x_tick(ix), kAxisText, 12, TextAnchor::middle});
    const size_t ystep = std::max<size_t>(1, size_t(std::ceil(float(ny) * 18.0f / (bottom - top))));
    for (size_t iy = 0; iy < ny; iy += ystep)
        p.texts.push_back(
            {left - 6, top + ch * (float(ny - 1 - iy) + 0.5f) + 4, y_tick(iy), kAxisText, 12, TextAnchor::end});
    p.texts.push_back({(left + right) / 2, float(height) - 8, d.x_label + " (x)", kAxisText, 12, TextAnchor::middle});
    p.texts.push_back({left, top - 8, d.y_label + " (y)", kAxisText, 12});
    return p;
}

}  // namespace speculum::exporting
