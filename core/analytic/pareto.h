// The one Pareto front of two objectives, for every caller: sweep results in the store (speculum-cli results
// --pareto), the app's store view and its modeled design-space sweep.
#pragma once

#include <cstddef>
#include <vector>

namespace speculum::analytic {

enum class Goal { minimize, maximize };

// Indices of the points that no other point dominates (at least as good on both objectives and better on one),
// ordered by x ascending (ties by index). Points equal on both objectives are all kept; a point with a NaN
// coordinate is never on the front. x and y are parallel (std::invalid_argument otherwise).
std::vector<size_t> pareto_front(const std::vector<double>& x, const std::vector<double>& y, Goal x_goal, Goal y_goal);

}  // namespace speculum::analytic
