// Ghidorah's verification-width choice (see ghidorah.h).
#include "core/analytic/ghidorah.h"

#include "core/analytic/checks.h"

#include <cmath>

namespace speculum::analytic {

WidthTable ghidorah_table1(const std::string& dataset) {
    const std::vector<int> w{1, 2, 4, 8, 16, 32, 64};
    if (dataset == "MT-bench") return {w, {1, 1.72, 2.28, 2.59, 2.93, 3.19, 3.34}};
    if (dataset == "GSM8K") return {w, {1, 1.76, 2.43, 2.69, 3.08, 3.34, 3.56}};
    if (dataset == "MBPP") return {w, {1, 1.78, 2.54, 2.89, 3.27, 3.55, 3.74}};
    if (dataset == "Human-eval") return {w, {1, 1.77, 2.49, 2.8, 3.19, 3.48, 3.71}};
    throw InvalidInput("ghidorah.dataset '" + dataset + "' is not in Table I (MT-bench, GSM8K, MBPP, Human-eval)");
}

std::vector<std::string> ghidorah_datasets() {
    return {"MT-bench", "GSM8K", "MBPP", "Human-eval"};
}

WidthChoice choose_width(const WidthTable& table, const std::function<double(int)>& step_time, double t_seq,
                         bool root_counted) {
    if (table.widths.empty() || table.widths.size() != table.tau.size())
        throw InvalidInput("ghidorah: widths and tau must be non-empty and of equal length");
    require_positive(t_seq, "ghidorah.t_seq");
    WidthChoice c;
    c.widths       = table.widths;
    c.tau          = table.tau;
    c.best_speedup = -1;
    for (size_t i = 0; i < table.widths.size(); ++i) {
        require_count(table.widths[i], 1, 4096, "ghidorah.widths[" + std::to_string(i) + "]");
        if (!(table.tau[i] >= 1.0) || !std::isfinite(table.tau[i]))
            throw InvalidInput("ghidorah.tau[" + std::to_string(i) + "] must be >= 1");
        double t = step_time(root_counted ? table.widths[i] : table.widths[i] + 1);
        require_positive(t, "ghidorah.step_time(" + std::to_string(table.widths[i]) + ")");
        c.step_time.push_back(t);
        c.speedup.push_back(table.tau[i] * t_seq / t);
        if (c.speedup.back() > c.best_speedup) c.best_speedup = c.speedup.back(), c.best_width = table.widths[i];
    }
    return c;
}

}  // namespace speculum::analytic
