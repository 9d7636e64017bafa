// Measures the model runtime on this machine: prompt and decode tokens/s, bytes read per decoded token (weights +
// KV), the effective bandwidth that implies next to a STREAM-like measurement, and the cost of a batched
// verification pass of n tokens relative to a single-token decode. Figures are measured, never modeled.
#pragma once

#include "core/cancel.h"
#include "core/model/model.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::model {

struct BenchConfig {
    int32_t n_prompt                 = 64;                // prompt tokens (prefill) before decoding
    int32_t n_decode                 = 32;                // timed single-token decode steps
    std::vector<int32_t> batch_sizes = {1, 2, 4, 8, 16};  // forward_batch sizes timed after decoding
    int32_t repeats                  = 5;  // timed passes per batch size (the fastest counts), and of the
                                           // bandwidth probe
    uint64_t membw_bytes = 512ull << 20;   // buffer of the bandwidth probe; 0 = skip the probe
    bool peak_probe      = true;           // measure the int8 multiply-accumulate peak (the compute floor)
    // Time with the calling thread's CPU clock instead of wall time (needs 1 thread): on a machine shared with other
    // jobs, time the thread spends descheduled is not counted, so the figures describe the code, not the load.
    bool thread_cpu_time                      = false;
    bool operator==(const BenchConfig&) const = default;
    void validate() const;  // throws std::invalid_argument naming the field
};
void to_json(nlohmann::json& j, const BenchConfig& c);
void from_json(const nlohmann::json& j, BenchConfig& c);

struct BatchCost {
    int32_t n                = 0;    // tokens in the pass
    double seconds           = 0.0;  // fastest of the repeats
    double vs_single         = 0.0;  // seconds / seconds of the n = 1 pass
    uint64_t bytes_weights   = 0;    // weights the pass read (counted from the shapes and, for experts, the routing)
    double experts_per_layer = 0.0;  // mixture of experts: distinct experts the pass read per layer; 0 = dense
    uint64_t bytes_kv        = 0;    // K and V the pass read and wrote
    double flops             = 0.0;  // 2 per multiply-add (ForwardCost::flops)
    // The pass's floors on this machine: its weight and KV bytes at the measured read bandwidth, and its
    // multiply-adds at the measured int8 peak (0 when the probe was skipped). vs_floor = seconds / the larger.
    double floor_memory_s  = 0.0;
    double floor_compute_s = 0.0;
    double vs_floor        = 0.0;
};

// A hybrid model's recurrent state at one verification width, per rollback strategy (recurrent_state.h): the pass of
// n tokens keeping what a rollback needs, and the rollback to half of them accepted, against the same pass keeping
// nothing (`none`, which could not roll back). Fastest of the repeats, measured interleaved.
struct RollbackCost {
    int32_t n = 0;
    std::string strategy;       // "none", "snapshot" or "rerun"
    double pass_s       = 0.0;  // the pass
    double restore_s    = 0.0;  // truncate to the first n / 2 tokens (0 for none)
    uint64_t held_bytes = 0;    // bytes held for rollback after the pass
};

struct BenchResult {
    int threads                     = 0;      // worker threads available to parallel_for
    bool thread_cpu_time            = false;  // timings are thread CPU time (see BenchConfig)
    uint64_t weight_bytes_per_token = 0;      // weights read by one decode step
    double kv_bytes_per_token       = 0.0;    // KV read + written by one decode step, averaged over the timed steps
    double prompt_tps               = 0.0;    // prompt tokens / prefill seconds
    double decode_tps               = 0.0;    // 1 / median decode step seconds
    double decode_tps_mean          = 0.0;    // timed steps / total seconds
    double effective_gbs            = 0.0;    // (weights + KV bytes per token) * decode_tps / 1e9
    double membw_read_gbs           = 0.0;    // STREAM-like all-thread read bandwidth (core/hw); 0 when skipped
    uint64_t membw_bytes            = 0;      // buffer size of that probe
    double bandwidth_ratio          = 0.0;    // effective_gbs / membw_read_gbs (0 when skipped)
    double int8_peak_gmacs          = 0.0;  // int8 multiply-adds per second of all threads, 1e9 (hw::bench_int8_peak);
                                            // 0 when skipped or the CPU has no int8 kernel
    std::string weight_memory;              // weight_memory_name(model.weight_memory())
    int64_t resident_bytes       = -1;      // the process's resident memory after the timed passes; -1 unknown
    int64_t anon_huge_page_bytes = -1;      // the process's huge-page-backed memory after the timed passes; -1
                                            // when the kernel does not report it
    std::vector<BatchCost> batches;
    uint64_t recurrent_state_bytes = 0;  // a hybrid model's live recurrent state (all DeltaNet layers); 0 = none
    std::vector<RollbackCost> rollback;  // a hybrid model: per batch size, none / snapshot / rerun
};
void to_json(nlohmann::json& j, const BenchResult& r);

// Runs the benchmark on the fast path with the threads the caller allows (tbb::global_control). Throws Cancelled.
BenchResult run_bench(const Model& model, const BenchConfig& cfg, const ProgressFn& progress = {},
                      const CancelToken& cancel = {});

}  // namespace speculum::model
