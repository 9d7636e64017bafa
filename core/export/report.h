// Reports: the JSON report of a chosen configuration (its manifest, the acceptance per position and speedup
// figures the plots show, the full run report when there is one), and the plain data the plot builders take —
// from a manifest, a `speculum-cli run --report` file or result-store rows.
#pragma once

#include "core/export/manifest.h"
#include "core/export/plot.h"
#include "core/store/result_store.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace speculum::exporting {

constexpr const char* kReportFormat = "speculum.report";
constexpr int32_t kReportVersion    = 1;

// The totals of a `speculum-cli run --report` file as measured figures. Throws std::invalid_argument naming the
// key when the file is not such a report.
MeasuredFigures measured_from_run_report(const nlohmann::json& report);

// Plot data from a manifest's figures (measured when present; modeled markers and bars from the prediction).
AcceptanceData acceptance_data(const Manifest& m);
std::vector<SpeedupBar> speedup_bars(const Manifest& m);

// A heatmap over two numeric fields of the stored configurations (JSON pointers such as "/gamma/0" or
// "/levels/0/prune/ratio") of one metric column (or "objective"); each cell keeps its best (largest) value. Rows
// without either field or the metric are skipped. Throws std::invalid_argument on a malformed pointer.
HeatmapData heatmap_from_rows(const std::vector<store::ResultRow>& rows, const std::string& x_pointer,
                              const std::string& y_pointer, const std::string& metric);

// {"format": "speculum.report", "version": 1, "manifest": ..., "acceptance": ..., "speedup": ..., "run": ...}.
// `run_report` may be null (no run).
nlohmann::json make_report(const Manifest& m, const nlohmann::json& run_report = nullptr);

// One-line description of the manifest's configuration for plot subtitles ("self: mxfp4, chain gamma 4, greedy").
std::string describe_config(const engine::SpecConfig& c);

}  // namespace speculum::exporting
