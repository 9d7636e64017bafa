// `speculum-cli sweep SPEC.json --bench`: the worker pool's overhead against a serial loop on the same work, the
// sweep machinery's throughput with the result store, and the cancellation latency. Prints every figure.
#pragma once

#include "core/sweep/evaluator.h"
#include "core/sweep/sweep_spec.h"

namespace speculum::cli {

// jobs: the pool's threads for the sweep variants (as `sweep --jobs`); repeats: runs per measurement (medians).
int run_sweep_bench(const sweep::SweepSpec& spec, sweep::Evaluator& ev, int jobs, int repeats);

}  // namespace speculum::cli
