// Design space over a result store: pickers, heatmap of stored rows (click loads the best row), Pareto scatter.
#include "ui/panels/design_space_store.h"

#include "ui/model/app_sweep.h"
#include "ui/model/measured.h"
#include "ui/model/result_config.h"
#include "ui/widgets.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace speculum::ui {

namespace {

constexpr size_t kMaxScatterPoints = 4000;  // drawn per frame; larger stores are thinned evenly (the front is not)

const char* axis_label(const StoreView& v, int axis) {
    return axis >= 0 && size_t(axis) < v.axes.size() ? v.axes[size_t(axis)].pointer.c_str() : "(none: one row)";
}

std::string cell_label(const StoreGrid& g, const StoreView& v, size_t ix, size_t iy) {
    std::string s = v.axes[size_t(g.x_axis)].pointer + " = " + axis_value_text(g.xs[ix]);
    if (g.y_axis >= 0) s += ", " + v.axes[size_t(g.y_axis)].pointer + " = " + axis_value_text(g.ys[iy]);
    return s;
}

std::string format_value(double v) {
    char text[32];
    std::snprintf(text, sizeof text, std::abs(v) >= 1000 ? "%.3g" : "%.2f", v);
    return text;
}

}  // namespace

bool StoreDesignView::set_axes(const std::shared_ptr<const StoreView>& view, const std::string& x,
                               const std::string& y) {
    sync(view);
    auto find = [&](const std::string& p) {
        for (size_t i = 0; i < view->axes.size(); ++i)
            if (view->axes[i].pointer == p) return int(i);
        return -1;
    };
    int ix = find(x), iy = y.empty() ? -1 : find(y);
    if (ix < 0 || (!y.empty() && iy < 0)) return false;
    m_x = ix, m_y = iy, m_grid_valid = false;
    return true;
}

void StoreDesignView::sync(const std::shared_ptr<const StoreView>& view) {
    if (m_seen.lock() == view && m_grid_valid) return;
    auto has = [&](const std::string& m) {
        return std::find(view->metrics.begin(), view->metrics.end(), m) != view->metrics.end();
    };
    auto find = [&](const std::string& p) {
        for (size_t i = 0; i < view->axes.size(); ++i)
            if (view->axes[i].pointer == p) return int(i);
        return -1;
    };
    if (m_seen.lock() != view) {
        // The same file again (a streaming sweep's next rows): keep the pickers by pointer. Another file: defaults,
        // the sweep's own axes first.
        const bool same_file = view->path == m_seen_path && !m_seen_path.empty();
        const std::string x = same_file && m_x >= 0 && size_t(m_x) < m_axes_seen.size() ? m_axes_seen[size_t(m_x)] : "";
        const std::string y = same_file && m_y >= 0 && size_t(m_y) < m_axes_seen.size() ? m_axes_seen[size_t(m_y)] : "";
        m_seen              = view;
        m_seen_path         = view->path;
        m_axes_seen.clear();
        for (const StoreAxis& a : view->axes) m_axes_seen.push_back(a.pointer);
        if (same_file && find(x) >= 0) {
            m_x = find(x), m_y = y.empty() ? -1 : find(y);
        } else {
            m_x = view->axes.empty() ? -1 : 0;
            m_y = view->axes.size() > 1 ? 1 : -1;
            if (view->preferred_axes.size() >= 1 && find(view->preferred_axes[0]) >= 0)
                m_x = find(view->preferred_axes[0]), m_y = -1;
            if (view->preferred_axes.size() >= 2 && find(view->preferred_axes[1]) >= 0)
                m_y = find(view->preferred_axes[1]);
            if (m_y == m_x) m_y = -1;
        }
        if (!same_file || !has(m_metric)) {
            m_metric = view->metrics.empty() ? "" : view->metrics.front();
            for (const char* preferred : {"speedup", "predicted_speedup"})
                if (has(preferred)) {
                    m_metric = preferred;
                    break;
                }
        }
        m_speed_metric = has("speedup") ? "speedup" : "predicted_speedup";
        m_cost_metric  = has("draft_bytes") ? "draft_bytes" : "draft_work";
        m_front        = store_pareto(*view, m_cost_metric, m_speed_metric);
        m_grid_valid   = false;
    }
    if (!m_grid_valid) {
        m_grid = store_grid(*view, m_x, m_y, m_metric, m_aggregate);
        ++m_grid_revision;
        m_grid_valid = true;
    }
}

DesignSelection StoreDesignView::selection() const {
    DesignSelection s;
    if (m_x >= 0 && size_t(m_x) < m_axes_seen.size()) s.x = m_axes_seen[size_t(m_x)];
    if (m_y >= 0 && size_t(m_y) < m_axes_seen.size()) s.y = m_axes_seen[size_t(m_y)];
    s.metric    = m_metric;
    s.aggregate = m_aggregate;
    return s;
}

void StoreDesignView::draw(const std::shared_ptr<const StoreView>& view_ptr, const AppConfig& current,
                           UiActions& actions) {
    const StoreView& view = *view_ptr;
    text_wrapped("%s", view.path.c_str());
    if (!view.error.empty()) {
        ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), "Cannot open results:");
        text_wrapped("%s", view.error.c_str());
        return;
    }
    sync(view_ptr);
    text_wrapped("%zu rows (%zu measured, the rest modeled; %zu failed)", view.rows.size(), view.n_measured,
                 view.n_failed);
    if (view.rows.empty() || view.metrics.empty()) {
        empty_state("The store has no finished rows with metrics yet.");
        return;
    }
    if (view.axes.empty()) {
        empty_state("Every row has the same configuration: there is no field to put on an axis.");
        return;
    }
    ImGui::PushItemWidth(ImGui::GetWindowWidth() * 0.45f);
    auto axis_combo = [&](const char* label, int& axis, bool allow_none) {
        if (!ImGui::BeginCombo(label, axis_label(view, axis))) return;
        if (allow_none && ImGui::Selectable("(none: one row)", axis < 0)) axis = -1, m_grid_valid = false;
        for (size_t i = 0; i < view.axes.size(); ++i) {
            std::string text = view.axes[i].pointer + "  (" + std::to_string(view.axes[i].values.size()) + " values)";
            if (ImGui::Selectable(text.c_str(), int(i) == axis)) axis = int(i), m_grid_valid = false;
        }
        ImGui::EndCombo();
    };
    axis_combo("x field", m_x, false);
    axis_combo("y field", m_y, true);
    if (ImGui::BeginCombo("metric##store", m_metric.c_str())) {
        for (const std::string& m : view.metrics)
            if (ImGui::Selectable(m.c_str(), m == m_metric)) set_metric(m);
        ImGui::EndCombo();
    }
    ImGui::PopItemWidth();
    int agg = m_aggregate == CellAggregate::best ? 0 : 1;
    if (ImGui::RadioButton("best per cell", &agg, 0)) set_aggregate(CellAggregate::best);
    ImGui::SameLine();
    if (ImGui::RadioButton("mean per cell", &agg, 1)) set_aggregate(CellAggregate::mean);
    sync(view_ptr);
    ImGui::SameLine();
    if (view.n_measured == view.rows.size())
        measured_tag();
    else if (view.n_measured == 0)
        modeled_tag();
    else
        measured_tag(), ImGui::SameLine(), modeled_tag();
    if (const DesignSelection sel = selection(); !(sel == m_sent)) {
        actions.push(ActionSelectDesignGrid{sel});
        m_sent = sel;
    }
    float avail = ImGui::GetContentRegionAvail().y;
    heatmap(view, current, actions, std::max(120.0f, avail * 0.62f));
    text_wrapped("Pareto front: %s (up) vs %s (left is smaller)", m_speed_metric.c_str(), m_cost_metric.c_str());
    pareto(view, std::max(60.0f, ImGui::GetContentRegionAvail().y - 4));
}

void StoreDesignView::heatmap(const StoreView& view, const AppConfig& current, UiActions& actions, float height) {
    const StoreGrid& g = m_grid;
    if (g.xs.empty()) return;
    if (!m_current || !(*m_current == current) || m_cell_revision != m_grid_revision) {
        m_current       = current;
        m_current_cell  = grid_cell_of(view, g, editor_config_json(current));
        m_cell_revision = m_grid_revision;
    }
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const StoreCell& c : g.cells)
        if (c.count > 0) lo = std::min(lo, c.value), hi = std::max(hi, c.value);
    const bool higher = metric_higher_is_better(g.metric);
    ImVec2 size(ImGui::GetContentRegionAvail().x, height);
    ImVec2 p0 = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("store heatmap", size);
    bool hovered = ImGui::IsItemHovered(), clicked = ImGui::IsItemClicked();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    float left = g.y_axis >= 0 ? 64.0f : 8.0f, bottom = 16;
    float cw = (size.x - left) / float(g.xs.size()), ch = (size.y - bottom) / float(g.ys.size());
    ImVec2 mouse = ImGui::GetIO().MousePos;
    for (size_t iy = 0; iy < g.ys.size(); ++iy) {
        for (size_t ix = 0; ix < g.xs.size(); ++ix) {
            const StoreCell& c = g.at(ix, iy);
            double t           = c.count == 0 ? NAN : hi > lo ? (c.value - lo) / (hi - lo) : 0.5;
            if (!higher && std::isfinite(t)) t = 1.0 - t;  // bright = good for every metric
            ImVec2 a(p0.x + left + cw * float(ix), p0.y + ch * float(g.ys.size() - 1 - iy));
            ImVec2 b(a.x + cw - 1, a.y + ch - 1);
            dl->AddRectFilled(a, b, heat_color(t));
            if (m_current_cell && m_current_cell->first == ix && m_current_cell->second == iy)  // the editor's cell
                dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(b.x + 1, b.y + 1), IM_COL32_WHITE, 0, 0, 2.5f);
            const char* source = c.count == 0              ? ""
                                 : c.n_measured == c.count ? "measured"
                                 : c.n_measured            ? "mixed"
                                                           : "modeled";
            // The best row's interval when it was repeated to one (a measured sweep's cells are runs: A/B passes
            // until the speedup's interval is narrow enough, within the run's budget).
            const std::optional<analytic::MedianInterval>* interval =
                c.best_row >= 0 && g.metric == "speedup" ? &view.rows[size_t(c.best_row)].speedup_interval : nullptr;
            if (cw > 34 && ch > 14 && c.count > 0) {
                ImU32 ink = t > 0.6 ? IM_COL32_BLACK : IM_COL32_WHITE;
                dl->AddText(ImVec2(a.x + 3, a.y + (ch - 13) / 2 - (ch > 30 ? 7 : 0)), ink,
                            format_value(c.value).c_str());
                std::string second = source;
                char bounds[48];
                if (interval && *interval) {
                    std::snprintf(bounds, sizeof bounds, "[%.2f, %.2f]", (*interval)->lo, (*interval)->hi);
                    second = bounds;
                }
                if (ch > 30 && text_width(second.c_str()) <= cw - 6)
                    dl->AddText(ImVec2(a.x + 3, a.y + (ch - 13) / 2 + 7), ink, second.c_str());
            }
            bool over = mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y;
            if (!over || !hovered) continue;
            std::string label = cell_label(g, view, ix, iy);
            if (c.best_row < 0) {
                ImGui::SetTooltip("%s\nno finished row with %s here (%d failed)", label.c_str(), g.metric.c_str(),
                                  c.n_failed);
                continue;
            }
            const StoreRowView& row  = view.rows[size_t(c.best_row)];
            ResultConfigLoad preview = app_config_from_result(row.config, current);
            std::string missing;
            if (interval && *interval) {
                char best[96];
                std::snprintf(best, sizeof best, "\nbest row: %.2fx [%.2f, %.2f], ", (*interval)->median,
                              (*interval)->lo, (*interval)->hi);
                missing += best + interval_text((*interval)->coverage, (*interval)->n);
            }
            for (const std::string& n : preview.not_loaded) missing += "\n  not loaded: " + n;
            ImGui::SetTooltip(
                "%s\n%s %s = %s over %d rows (%s; %d failed)%s%s\nclick to load the best row's "
                "configuration%s",
                label.c_str(), g.aggregate == CellAggregate::best ? "best" : "mean", g.metric.c_str(),
                format_value(c.value).c_str(), c.count, source, c.n_failed, row.task.empty() ? "" : "\ntask ",
                row.task.c_str(), missing.c_str());
            if (clicked) actions.push(ActionLoadResultConfig{row.config, label});
        }
    }
    if (g.y_axis >= 0)
        for (size_t iy = 0; iy < g.ys.size(); iy += std::max<size_t>(1, g.ys.size() / 8)) {
            std::string text = axis_value_text(g.ys[iy]).substr(0, 10);
            dl->AddText(ImVec2(p0.x, p0.y + ch * float(g.ys.size() - 1 - iy) + (ch - 13) / 2),
                        IM_COL32(170, 170, 170, 255), text.c_str());
        }
    for (size_t ix = 0; ix < g.xs.size(); ix += std::max<size_t>(1, g.xs.size() / 8)) {
        std::string text = axis_value_text(g.xs[ix]).substr(0, size_t(std::max(4.0f, cw / 7)));
        dl->AddText(ImVec2(p0.x + left + cw * float(ix) + 2, p0.y + size.y - 14), IM_COL32(170, 170, 170, 255),
                    text.c_str());
    }
}

void StoreDesignView::pareto(const StoreView& view, float height) {
    double xmax = 1e-9, ymax = 1e-9;
    std::vector<size_t> pts;
    for (size_t r = 0; r < view.rows.size(); ++r) {
        const auto& m = view.rows[r].metrics;
        auto x = m.find(m_cost_metric), y = m.find(m_speed_metric);
        if (view.rows[r].status != "done" || x == m.end() || y == m.end()) continue;
        xmax = std::max(xmax, x->second), ymax = std::max(ymax, y->second);
        pts.push_back(r);
    }
    ImVec2 size(ImGui::GetContentRegionAvail().x, height);
    ImVec2 p0 = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("store pareto", size);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(p0, ImVec2(p0.x + size.x, p0.y + size.y), IM_COL32(25, 27, 32, 255));
    if (pts.empty()) {
        dl->AddText(ImVec2(p0.x + 6, p0.y + 4), IM_COL32(170, 170, 170, 255),
                    ("no row has both " + m_cost_metric + " and " + m_speed_metric).c_str());
        return;
    }
    auto at = [&](size_t r) {
        const auto& m = view.rows[r].metrics;
        return ImVec2(p0.x + 6 + float(m.at(m_cost_metric) / xmax) * (size.x - 12),
                      p0.y + size.y - 6 - float(m.at(m_speed_metric) / ymax) * (size.y - 12));
    };
    size_t stride = std::max<size_t>(1, pts.size() / kMaxScatterPoints);
    for (size_t k = 0; k < pts.size(); k += stride) {
        ImU32 col = view.rows[pts[k]].measured ? IM_COL32(120, 190, 140, 200) : IM_COL32(140, 140, 160, 200);
        dl->AddCircleFilled(at(pts[k]), 2.5f, col);
    }
    for (size_t k = 0; k < m_front.size(); ++k) {
        dl->AddCircleFilled(at(m_front[k]), 4, IM_COL32(250, 210, 80, 255));
        if (k > 0) dl->AddLine(at(m_front[k - 1]), at(m_front[k]), IM_COL32(250, 210, 80, 255), 1.5f);
    }
}

}  // namespace speculum::ui
