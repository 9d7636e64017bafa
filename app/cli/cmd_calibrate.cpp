// `speculum-cli calibrate`: measure this machine (memory bandwidth, SGEMV/SGEMM throughput, per-call overhead)
// and print or write it as a hardware profile JSON for `speculum-cli predict --profile-file`.
#include "cli.h"

#include "core/hw/microbench.h"

#include <nlohmann/json.hpp>

#include <iostream>

namespace speculum::cli {

int cmd_calibrate(int argc, char** argv) {
    Args args("calibrate",
              {{"out", 'o', true, "FILE", "write the profile JSON here (default: print it)"},
               {"quick", 0, false, "", "smaller buffers and fewer repetitions (well under a second)"},
               {"threads", 't', true, "N", "threads for the all-thread figures (default: all)"},
               {"id", 0, true, "ID", "profile id (default: this_machine)"}},
              {});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
            "Measure this machine and write a hardware profile: memory read bandwidth (1 and all threads, buffers "
            "larger than the LLC), OpenBLAS SGEMV and SGEMM throughput (1 and all threads) and the per-call "
            "overhead of a tiny dispatched call. Takes a few seconds (--quick: well under one). The profile's "
            "memory_bandwidth_gbps is the all-thread read bandwidth and fp32_tflops the all-thread SGEMM rate.");
        return 0;
    }
    hw::MicrobenchOptions opt;
    opt.quick   = args.has("quick");
    opt.threads = int(args.int_or("threads", 0, 0, 4096));
    auto r      = hw::run_microbenchmarks(opt, CancelToken{}, [](double f, const std::string& what) {
        std::cerr << "\rcalibrating: " << int(f * 100) << "% " << what << "            " << std::flush;
    });
    std::cerr << "\r" << std::string(60, ' ') << "\r";
    auto p = hw::profile_from_microbench(r, args.value_or("id", "this_machine"));
    nlohmann::json j;
    hw::to_json(j, p);
    j["microbench"] = {{"threads", r.threads},
                       {"read_bw_1t_gbps", r.read_bw_1t_gbps},
                       {"read_bw_all_gbps", r.read_bw_all_gbps},
                       {"sgemv_1t_gflops", r.sgemv_1t_gflops},
                       {"sgemv_all_gflops", r.sgemv_all_gflops},
                       {"sgemm_1t_gflops", r.sgemm_1t_gflops},
                       {"sgemm_all_gflops", r.sgemm_all_gflops},
                       {"call_overhead_us", r.call_overhead_us},
                       {"seconds", r.seconds}};
    if (auto out = args.value("out")) {
        hw::save_profile(p, *out);
        std::cerr << "wrote " << *out << '\n';
    }
    std::cout << j.dump(2) << '\n';
    return 0;
}

}  // namespace speculum::cli
