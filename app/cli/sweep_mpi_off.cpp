// `sweep --mpi` in a speculum-cli built without MPI (SPECULUM_WITH_MPI=OFF): a clear error instead of the run.
// With MPI, app/cli/mpi/ defines these functions and this file compiles to nothing.
#include "sweep_mpi.h"

#include <stdexcept>

#ifndef SPECULUM_WITH_MPI
namespace speculum::cli {

int run_sweep_mpi(const MpiSweepOptions&) {
    throw std::runtime_error(
        "--mpi: this speculum-cli was built without MPI (SPECULUM_WITH_MPI=OFF); install libopenmpi-dev and "
        "openmpi-bin, then configure again with cmake -DSPECULUM_WITH_MPI=ON (docs/cluster.md)");
}

std::string mpi_library_version() {
    return "";
}

}  // namespace speculum::cli
#endif
