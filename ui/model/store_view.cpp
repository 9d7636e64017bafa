// StoreView: read-only snapshot of a result store, axis discovery over the rows' configurations, heatmap cells.
#include "ui/model/store_view.h"

#include "core/analytic/pareto.h"

#include "core/hw/large_pages.h"
#include "core/store/result_store.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

namespace speculum::ui {

namespace {

using nlohmann::json;

// RFC 6901 escaping of one reference token.
std::string escape_token(const std::string& key) {
    std::string out;
    for (char ch : key) {
        if (ch == '~')
            out += "~0";
        else if (ch == '/')
            out += "~1";
        else
            out += ch;
    }
    return out;
}

void walk(const json& j, const std::string& pointer, std::map<std::string, json>& leaves, int depth) {
    if (leaves.size() >= kMaxConfigLeaves || depth > 16) return;
    if (j.is_object() && !j.empty()) {
        for (const auto& [k, v] : j.items()) walk(v, pointer + "/" + escape_token(k), leaves, depth + 1);
    } else if (j.is_array() && !j.empty()) {
        for (size_t i = 0; i < j.size(); ++i) walk(j[i], pointer + "/" + std::to_string(i), leaves, depth + 1);
    } else {
        leaves.emplace(pointer, j);
    }
}

int type_rank(const json& v) {
    if (v.is_null()) return 0;
    if (v.is_number()) return 1;
    if (v.is_boolean()) return 2;
    if (v.is_string()) return 3;
    return 4;
}

// Total order for axis values: null, numbers by value, booleans, strings, then any other JSON by its text.
bool value_less(const json& a, const json& b) {
    int ra = type_rank(a), rb = type_rank(b);
    if (ra != rb) return ra < rb;
    switch (ra) {
        case 0:
            return false;
        case 1:
            return a.get<double>() < b.get<double>();
        case 2:
            return !a.get<bool>() && b.get<bool>();
        case 3:
            return a.get_ref<const std::string&>() < b.get_ref<const std::string&>();
        default:
            return a.dump() < b.dump();
    }
}

bool value_equal(const json& a, const json& b) {
    return !value_less(a, b) && !value_less(b, a);
}

int index_of(const std::vector<json>& values, const json& v) {
    for (size_t i = 0; i < values.size(); ++i)
        if (value_equal(values[i], v)) return int(i);
    return -1;
}

}  // namespace

json config_value(const json& config, const std::string& pointer) {
    try {
        json::json_pointer p(pointer);
        if (config.contains(p)) return config.at(p);
    } catch (const std::exception&) {  // a malformed pointer or a type mismatch on the way: absent
    }
    return nullptr;
}

std::string axis_value_text(const json& v) {
    if (v.is_null()) return "(absent)";
    if (v.is_number()) {
        char text[32];
        std::snprintf(text, sizeof text, "%g", v.get<double>());
        return text;
    }
    if (v.is_string()) return v.get<std::string>();
    std::string s = v.dump();
    return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

bool metric_higher_is_better(const std::string& metric) {
    return !(metric == "bpt" || metric == "draft_bytes" || metric == "memory_gb" || metric == "draft_work");
}

std::vector<StoreAxis> discover_axes(const std::vector<StoreRowView>& rows) {
    std::vector<std::map<std::string, json>> leaves(rows.size());
    std::set<std::string> pointers;
    for (size_t r = 0; r < rows.size(); ++r) {
        walk(rows[r].config, "", leaves[r], 0);
        for (const auto& [p, v] : leaves[r]) pointers.insert(p);
    }
    std::vector<StoreAxis> axes;
    for (const std::string& p : pointers) {
        if (p.empty()) continue;  // the configuration itself is a scalar: nothing to walk
        StoreAxis axis{p, {}};
        bool too_many = false;
        for (size_t r = 0; r < rows.size() && !too_many; ++r) {
            auto it      = leaves[r].find(p);
            const json v = it == leaves[r].end() ? json(nullptr) : it->second;
            if (index_of(axis.values, v) < 0) axis.values.push_back(v);
            too_many = axis.values.size() > kMaxAxisValues;
        }
        if (too_many || axis.values.size() < 2) continue;
        std::sort(axis.values.begin(), axis.values.end(), value_less);
        axes.push_back(std::move(axis));
    }
    return axes;
}

const std::vector<std::string>& derived_metrics() {
    static const std::vector<std::string> m = {"draft_work", "ewif", "tree_speedup"};
    return m;
}

StoreRowView store_row_view(store::ResultRow&& r) {
    StoreRowView v;
    v.config   = std::move(r.config);
    v.status   = std::move(r.status);
    v.message  = std::move(r.message);
    v.task     = std::move(r.task);
    v.sweep    = std::move(r.sweep);
    v.measured = r.stats.is_object() && !r.stats.empty();
    for (const auto& [name, value] : r.metrics)
        if (std::isfinite(value)) v.metrics[name] = value;
    // Figures kept in the statistics (measured) or the predictions (modeled) that a heatmap or Pareto can use.
    if (v.measured)
        if (auto rep = r.stats.find("repeated"); rep != r.stats.end() && rep->is_object())
            if (auto sp = rep->find("speedup"); sp != rep->end() && sp->is_object()) {
                analytic::MedianInterval m;
                auto num = [&](const char* k, double& out) {
                    auto it = sp->find(k);
                    if (it == sp->end() || !it->is_number() || !std::isfinite(it->get<double>())) return false;
                    out = it->get<double>();
                    return true;
                };
                double n = 0;
                if (num("median", m.median) && num("lo", m.lo) && num("hi", m.hi) && num("n", n) &&
                    num("coverage", m.coverage) && m.lo <= m.median && m.median <= m.hi && n >= 2 && n < 1e6) {
                    m.n                = int(n);
                    v.speedup_interval = m;
                }
            }
    const json& from = v.measured ? r.stats : r.predictions;
    if (from.is_object())
        for (const std::string& name : derived_metrics())
            if (auto it = from.find(name); it != from.end() && it->is_number() && std::isfinite(it->get<double>()))
                v.metrics[name] = it->get<double>();
    return v;
}

void index_store_view(StoreView& view) {
    std::set<std::string> present;
    view.n_failed = view.n_measured = 0;
    for (const StoreRowView& row : view.rows) {
        if (row.status == "done")
            for (const auto& [name, value] : row.metrics) present.insert(name);
        else
            ++view.n_failed;
        view.n_measured += row.measured ? 1 : 0;
    }
    view.metrics.clear();
    for (const std::string& m : store::metric_columns())
        if (present.count(m)) view.metrics.push_back(m);
    for (const std::string& m : derived_metrics())
        if (present.count(m)) view.metrics.push_back(m);
    view.axes = discover_axes(view.rows);
}

StoreView load_store_view(const std::string& path, const CancelToken& cancel, const ProgressFn& progress) {
    StoreView view;
    view.path = path;
    try {
        report(progress, 0.0, "opening");
        auto store     = store::ResultStore::open(path, store::ResultStore::Mode::read_only);
        const size_t n = store->count();
        cancel.throw_if_cancelled();
        report(progress, 0.05, "reading " + std::to_string(n) + " rows");
        // Rows are streamed and only what the view shows is kept (statistics and predictions are dropped as each
        // row arrives), so the limit is memory, not a row count: after the first rows, the rest are estimated
        // from them and a store that would take more than half the memory available is refused, named.
        size_t seen = 0, sampled_bytes = 0;
        const uint64_t avail = hw::available_memory_bytes();
        store->for_each({}, [&](store::ResultRow&& r) {
            if (seen < 256) sampled_bytes += 6 * r.config.dump().size() + 640;  // nlohmann nodes, maps, strings
            if (seen == 256 || (seen + 1 == n && seen < 256)) {
                const double per_row = double(sampled_bytes) / double(std::min<size_t>(seen + 1, 256));
                if (avail > 0 && per_row * double(n) > double(avail) / 2)
                    throw std::runtime_error(path + ": " + std::to_string(n) + " rows would take about " +
                                             std::to_string(int64_t(per_row * double(n) / double(1 << 20))) +
                                             " MiB here, more than half the memory available; export a subset "
                                             "with speculum-cli results --filter");
            }
            if (++seen % 4096 == 0) {
                cancel.throw_if_cancelled();
                report(progress, 0.05 + 0.85 * double(seen) / double(std::max<size_t>(n, 1)), "reading rows");
            }
            view.rows.push_back(store_row_view(std::move(r)));
            return true;
        });
        cancel.throw_if_cancelled();
        report(progress, 0.9, "indexing");
        index_store_view(view);
        report(progress, 1.0, "done");
    } catch (const Cancelled&) {
        throw;
    } catch (const std::exception& e) {  // StoreError names the file; keep the view empty but explained
        view.rows.clear();
        view.axes.clear();
        view.metrics.clear();
        view.n_failed = view.n_measured = 0;
        view.error                      = e.what();
        if (view.error.find(path) == std::string::npos) view.error = path + ": " + view.error;
    }
    return view;
}

std::vector<size_t> store_pareto(const StoreView& view, const std::string& x_metric, const std::string& y_metric) {
    std::vector<size_t> ids;
    std::vector<double> xs, ys;
    for (size_t r = 0; r < view.rows.size(); ++r) {
        const StoreRowView& row = view.rows[r];
        auto x = row.metrics.find(x_metric), y = row.metrics.find(y_metric);
        if (row.status == "done" && x != row.metrics.end() && y != row.metrics.end())
            ids.push_back(r), xs.push_back(x->second), ys.push_back(y->second);
    }
    std::vector<size_t> front;
    for (size_t i : analytic::pareto_front(xs, ys, analytic::Goal::minimize, analytic::Goal::maximize))
        front.push_back(ids[i]);
    return front;
}

StoreGrid store_grid(const StoreView& view, int x_axis, int y_axis, const std::string& metric,
                     CellAggregate aggregate) {
    StoreGrid g;
    g.x_axis = x_axis, g.y_axis = y_axis, g.metric = metric, g.aggregate = aggregate;
    auto valid = [&](int a) { return a >= 0 && size_t(a) < view.axes.size(); };
    if (!valid(x_axis)) return g;
    if (!valid(y_axis)) g.y_axis = y_axis = -1;
    g.xs = view.axes[size_t(x_axis)].values;
    g.ys = y_axis >= 0 ? view.axes[size_t(y_axis)].values : std::vector<json>{json(nullptr)};
    g.cells.assign(g.xs.size() * g.ys.size(), StoreCell{});
    std::vector<double> sums(g.cells.size(), 0.0);
    const bool higher = metric_higher_is_better(metric);
    for (size_t r = 0; r < view.rows.size(); ++r) {
        const StoreRowView& row = view.rows[r];
        int ix                  = index_of(g.xs, config_value(row.config, view.axes[size_t(x_axis)].pointer));
        int iy = y_axis >= 0 ? index_of(g.ys, config_value(row.config, view.axes[size_t(y_axis)].pointer)) : 0;
        if (ix < 0 || iy < 0) continue;  // cannot happen for rows of this view; defensive for foreign views
        size_t k     = size_t(iy) * g.xs.size() + size_t(ix);
        StoreCell& c = g.cells[k];
        if (row.status != "done") {
            ++c.n_failed;
            continue;
        }
        auto it = row.metrics.find(metric);
        if (it == row.metrics.end()) continue;
        double v   = it->second;
        bool first = c.count == 0;
        if (first || (higher ? v > view.rows[size_t(c.best_row)].metrics.at(metric)
                             : v < view.rows[size_t(c.best_row)].metrics.at(metric)))
            c.best_row = int(r);
        ++c.count;
        c.n_measured += row.measured ? 1 : 0;
        sums[k] += v;
    }
    for (size_t k = 0; k < g.cells.size(); ++k) {
        StoreCell& c = g.cells[k];
        if (c.count == 0)
            c.value = std::numeric_limits<double>::quiet_NaN();
        else if (aggregate == CellAggregate::mean)
            c.value = sums[k] / c.count;
        else
            c.value = view.rows[size_t(c.best_row)].metrics.at(metric);
    }
    return g;
}

StoreGrid store_grid(const StoreView& view, const DesignSelection& sel) {
    auto find = [&](const std::string& p) {
        for (size_t i = 0; i < view.axes.size(); ++i)
            if (view.axes[i].pointer == p) return int(i);
        return -1;
    };
    int x = find(sel.x), y = sel.y.empty() ? -1 : find(sel.y);
    if (x < 0) x = view.axes.empty() ? -1 : 0;
    return store_grid(view, x, y == x ? -1 : y, sel.metric, sel.aggregate);
}

std::optional<std::pair<size_t, size_t>> grid_cell_of(const StoreView& view, const StoreGrid& g, const json& config) {
    if (g.x_axis < 0 || size_t(g.x_axis) >= view.axes.size()) return std::nullopt;
    auto same = [](const json& a, const json& b) {
        if (a.is_number() && b.is_number()) {
            const double x = a.get<double>(), y = b.get<double>();
            return std::abs(x - y) <= 1e-6 * std::max({1.0, std::abs(x), std::abs(y)});
        }
        return a == b;
    };
    auto find = [&](const std::vector<json>& values, const json& v) -> std::optional<size_t> {
        for (size_t i = 0; i < values.size(); ++i)
            if (same(values[i], v)) return i;
        return std::nullopt;
    };
    const auto ix = find(g.xs, config_value(config, view.axes[size_t(g.x_axis)].pointer));
    const auto iy = g.y_axis >= 0 ? find(g.ys, config_value(config, view.axes[size_t(g.y_axis)].pointer))
                                  : std::optional<size_t>(0);
    if (!ix || !iy) return std::nullopt;
    return std::make_pair(*ix, *iy);
}

}  // namespace speculum::ui
