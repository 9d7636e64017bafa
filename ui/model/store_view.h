// StoreView: an immutable snapshot of a sweep result store (speculum-cli sweep --db, also --mpi) for the Design
// space panel: every row's configuration, metrics, status and task, the configuration fields that vary across the
// rows (the axes a heatmap can use) and the metrics present. Loaded read-only on a worker; the store is never
// modified. Not a query engine: rows are streamed from the store and what the view shows is held in memory; a store
// that would take more than half the memory available is refused with an estimate.
#pragma once

#include "core/cancel.h"

#include "core/analytic/calibration.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace speculum::store {
struct ResultRow;
}

namespace speculum::ui {

inline constexpr size_t kMaxAxisValues   = 64;   // a field with more distinct values is not offered as an axis
inline constexpr size_t kMaxConfigLeaves = 512;  // leaves walked per configuration (deeper/bigger ones ignored)

struct StoreRowView {
    nlohmann::json config;                  // the configuration the row evaluated (predict input or SpecConfig)
    std::map<std::string, double> metrics;  // finite values of store::metric_columns() present in the row
    std::string status = "done";            // "done" or "failed"
    std::string message;                    // failed: why
    std::string task;                       // task label ("" = none)
    std::string sweep;                      // the sweep that produced the row
    bool measured = false;                  // engine row (statistics present); otherwise modeled (predict)
    // A measured row repeated to an interval (its statistics' "repeated": the A/B pairs' median speedup and its
    // distribution-free interval); absent for one pass, modeled rows, or a malformed entry.
    std::optional<analytic::MedianInterval> speedup_interval;
};

// A configuration field that varies across the rows. A row without the field has the value null ("(absent)").
struct StoreAxis {
    std::string pointer;                 // JSON pointer into the configuration, "/levels/0/prune/ratio"
    std::vector<nlohmann::json> values;  // distinct values, sorted (null first, then numbers, then the rest)
};

struct StoreView {
    std::string path;                         // the file opened
    std::string title;                        // what it is ("" = an opened file; the app's sweeps name themselves)
    std::vector<std::string> preferred_axes;  // pointers of the axes to show first (the app's sweep axes)
    std::string error;                        // non-empty: the store could not be read (the rows are empty)
    std::vector<StoreRowView> rows;           // in the store's order (best objective first)
    std::vector<StoreAxis> axes;              // varying configuration fields, sorted by pointer
    // Metrics present in at least one done row: metric_columns() order, then derived_metrics().
    std::vector<std::string> metrics;
    size_t n_failed   = 0;
    size_t n_measured = 0;  // rows with measured statistics (the rest are modeled)
};

// Figures a row keeps outside the metric columns that the view shows as metrics: draft_work (gamma x c of level
// 1, the draft's work per target pass: the Pareto's cost axis), ewif and tree_speedup (modeled rows).
const std::vector<std::string>& derived_metrics();
// One stored row as the view keeps it (statistics and predictions dropped, derived metrics kept).
StoreRowView store_row_view(store::ResultRow&& row);
// Recomputes the view's metrics, axes and counts from its rows (after rows were added).
void index_store_view(StoreView& view);

// Opens `path` read-only and snapshots its rows. Never throws for a bad file: a foreign, corrupt, newer-schema,
// missing or oversized store gives a view with `error` set, naming the file. Throws Cancelled when `cancel` fires.
StoreView load_store_view(const std::string& path, const CancelToken& cancel = {}, const ProgressFn& progress = {});

// The varying leaves of the rows' configurations (scalars and empty containers; arrays are indexed "/gamma/0").
std::vector<StoreAxis> discover_axes(const std::vector<StoreRowView>& rows);

// The value of `pointer` in `config`, null when absent.
nlohmann::json config_value(const nlohmann::json& config, const std::string& pointer);
// Short text for an axis value: numbers with %g, strings as is, null as "(absent)", other JSON dumped and cut.
std::string axis_value_text(const nlohmann::json& v);

// Whether a larger value of the metric is better (speedups, accepted length, quality) or a smaller one (bpt,
// draft_bytes, memory_gb).
bool metric_higher_is_better(const std::string& metric);

enum class CellAggregate { best, mean };

struct StoreCell {
    double value   = 0;   // best or mean of the metric over the cell's done rows; NaN when count == 0
    int best_row   = -1;  // index into StoreView::rows of the best row (what a click loads); -1 = none
    int count      = 0;   // done rows with the metric in this cell
    int n_measured = 0;   // of which measured (engine rows)
    int n_failed   = 0;   // failed rows that fall in this cell
};

// What the Design space panel shows of a store: the axes by pointer (y "" = one row), the metric, the aggregate.
struct DesignSelection {
    std::string x, y, metric;
    CellAggregate aggregate                       = CellAggregate::best;
    bool operator==(const DesignSelection&) const = default;
};

// A heatmap of `metric` over two axes (y_axis < 0: a single row). Cells are ys.size() x xs.size(), row-major by y.
struct StoreGrid {
    int x_axis = -1, y_axis = -1;  // indices into StoreView::axes
    std::string metric;
    CellAggregate aggregate = CellAggregate::best;
    std::vector<nlohmann::json> xs, ys;  // ys = {null} when y_axis < 0
    std::vector<StoreCell> cells;
    const StoreCell& at(size_t ix, size_t iy) const { return cells[iy * xs.size() + ix]; }
};

// Indices of done rows with both metrics that no other such row dominates (x minimised, y maximised; at least as
// good on both and better on one), sorted by x ascending. O(n log n).
std::vector<size_t> store_pareto(const StoreView& view, const std::string& x_metric, const std::string& y_metric);

StoreGrid store_grid(const StoreView& view, int x_axis, int y_axis, const std::string& metric, CellAggregate aggregate);
// The cell of `grid` whose axis values are `config`'s (numbers equal to 1e-6 relative, as a float field stores
// 0.3), e.g. the editor's configuration, which the heatmap outlines; nullopt when it falls in no cell.
std::optional<std::pair<size_t, size_t>> grid_cell_of(const StoreView& view, const StoreGrid& grid,
                                                      const nlohmann::json& config);

// The grid of a selection (axes found by pointer; an axis the view lacks: x = the first axis, y = none).
StoreGrid store_grid(const StoreView& view, const DesignSelection& selection);

}  // namespace speculum::ui
