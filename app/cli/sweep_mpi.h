// `speculum-cli sweep --mpi`: one sweep across the ranks of an MPI job (docs/cluster.md). Rank 0 plans, looks up
// cache hits, hands configurations out one at a time to whichever rank asks (its own evaluation thread included,
// unless coordinator_only) and writes each result to the store as it arrives. Built only with SPECULUM_WITH_MPI
// (app/cli/mpi/); without it, cmd_sweep refuses --mpi with a clear error.
#pragma once

#include <string>

namespace speculum::cli {

struct MpiSweepOptions {
    std::string spec_file;          // read by rank 0 and broadcast, so every rank runs the same spec
    std::string db;                 // opened by rank 0 only
    std::string resources;          // resources directory (hardware profiles) on every rank
    int slow_ms           = 0;      // testing: predict evaluator sleeps this long per configuration
    bool recompute        = false;  // evaluate stored configurations again
    bool quiet            = false;  // rank 0 prints only the summary
    bool coordinator_only = false;  // rank 0 evaluates nothing itself
    double timeout_s      = 60;     // a rank silent this long while it holds a configuration is lost (0 = never)
};

// Runs on every rank (all ranks get the same options from their own argv). Returns the exit status: rank 0's is
// the sweep's (0 done, 1 configurations left unevaluated, 130 interrupted); workers return 0 (1 when they failed).
// Throws std::runtime_error (rank 0) for errors that stop the sweep, after telling the workers to stop.
int run_sweep_mpi(const MpiSweepOptions& options);

// "Open MPI v4.1.4" (MPI_Get_library_version, first clause); "" when built without MPI.
std::string mpi_library_version();

}  // namespace speculum::cli
