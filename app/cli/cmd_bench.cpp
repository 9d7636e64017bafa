// `speculum-cli bench`: measured prompt/decode speed of the model runtime, bytes per token, effective bandwidth next to
// this machine's measured memory bandwidth, and the cost of batched verification passes. Works on a GGUF file or
// on a random-weight model built in memory (--synthetic), sized to exceed the last-level cache.
#include "cli.h"

#include "core/resources.h"

#include "core/analytic/cost.h"
#include "core/model/runtime_bench.h"
#include "core/model/synthetic.h"
#include "kernels/cpu_info.h"
#include "kernels/gemv.h"

#include <oneapi/tbb/global_control.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

namespace speculum::cli {

namespace {

std::vector<int32_t> parse_sizes(const std::string& s) {
    std::vector<int32_t> out;
    std::istringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) {
        size_t used = 0;
        long long v = 0;
        try {
            v = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != item.size() || v < 1 || v > 4096)
            throw UsageError("--batches: '" + item + "' is not a batch size in [1, 4096]");
        out.push_back(static_cast<int32_t>(v));
    }
    if (out.empty()) throw UsageError("--batches: empty list");
    return out;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
    Args args("bench",
              {{"model", 'm', true, "FILE", "GGUF model to measure (default: the bundled target)"},
               {"synthetic", 0, true, "TYPE", "measure a random-weight model built in memory: f16, q8_0, ..."},
               {"arch", 0, true, "ARCH",
                "synthetic: architecture (default llama; qwen3moe or gpt-oss for a mixture of experts; qwen35 or "
                "qwen35moe for Gated DeltaNet hybrids, with Qwen 3.5's proportions)"},
               {"experts", 0, true, "N", "synthetic MoE: experts per layer (default 128; gpt-oss 32)"},
               {"experts-used", 0, true, "K", "synthetic MoE: experts per token (default 8; gpt-oss 4)"},
               {"ff-exp", 0, true, "F", "synthetic MoE: one expert's width (default 3 D / 8; gpt-oss D)"},
               {"layers", 0, true, "N", "synthetic: blocks (default 4)"},
               {"embd", 0, true, "D", "synthetic: width (default 2048; ~660 MB of f16 weights with 4 layers)"},
               {"ff", 0, true, "F", "synthetic: feed-forward width (default 8/3 D rounded up to 256)"},
               {"vocab", 0, true, "V", "synthetic: vocabulary (default 32000)"},
               {"heads", 0, true, "H", "synthetic: query heads (default D / 64)"},
               {"kv-heads", 0, true, "H", "synthetic: KV heads (default = heads)"},
               {"threads", 't', true, "N", "worker threads; 0 = all cores (default 0)"},
               {"tokens", 0, true, "N", "timed decode steps (default 32)"},
               {"prompt-tokens", 0, true, "N", "prompt length evaluated first (default 64)"},
               {"batches", 0, true, "LIST", "batched pass sizes (default 1,2,4,8,16)"},
               {"repeats", 0, true, "N", "timed passes per batch size, fastest counts (default 5)"},
               {"membw-mb", 0, true, "MB", "bandwidth probe buffer in MiB; 0 = skip (default 512)"},
               {"no-peak", 0, false, "", "skip the int8 peak probe (the compute floor beside each batched pass)"},
               {"cpu-time", 0, false, "",
                "time with the thread CPU clock (needs --threads 1): ignores time other "
                "jobs take the CPU away"},
               {"large-pages", 0, false, "",
                "copy the weights into 2 MiB-aligned memory advised for huge pages, in the file's layout; the "
                "bandwidth probe then reads such memory too"},
               {"repack", 0, false, "",
                "--large-pages, with Q8_0 matrices repacked (q8_0_x8) for the AVX-512 VNNI kernels; ignored on "
                "CPUs without them (the default repacks too, but copies nothing when there is nothing to repack)"},
               {"no-repack", 0, false, "",
                "keep the weights where they are, in the file's layout: the file's mapping, or the synthetic "
                "model's heap buffers (default: as --repack where the CPU has the kernels and the model has "
                "Q8_0 matrices to repack, else this)"},
               {"isa", 0, true, "ISA",
                "cap the kernels' instruction set: scalar, avx2 or avx512 (default: the best this CPU has)"},
               {"json", 0, false, "", "print the figures as JSON"}},
              {});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
            "Measure the model runtime: prompt and decode tokens/s, bytes read per token, "
            "effective GB/s against measured memory bandwidth, and batched verification cost.");
        return 0;
    }
    if (args.has("model") && args.has("synthetic")) throw UsageError("give at most one of --model and --synthetic");
    model::BenchConfig bc;
    bc.n_decode    = static_cast<int32_t>(args.int_or("tokens", bc.n_decode, 1, 1 << 20));
    bc.n_prompt    = static_cast<int32_t>(args.int_or("prompt-tokens", bc.n_prompt, 1, 1 << 20));
    bc.repeats     = static_cast<int32_t>(args.int_or("repeats", bc.repeats, 1, 1000));
    bc.membw_bytes = static_cast<uint64_t>(args.int_or("membw-mb", 512, 0, 65536)) << 20;
    if (args.has("batches")) bc.batch_sizes = parse_sizes(*args.value("batches"));
    const int threads  = static_cast<int>(args.int_or("threads", 0, 0, 4096));
    bc.thread_cpu_time = args.has("cpu-time");
    bc.peak_probe      = !args.has("no-peak");
    if (bc.thread_cpu_time && threads != 1) throw UsageError("--cpu-time needs --threads 1");
    if (args.has("isa")) {
        const std::string isa = *args.value("isa");
        if (isa == "scalar")
            kernels::set_kernel_isa_cap(kernels::KernelIsa::scalar);
        else if (isa == "avx2")
            kernels::set_kernel_isa_cap(kernels::KernelIsa::avx2);
        else if (isa == "avx512")
            kernels::set_kernel_isa_cap(kernels::KernelIsa::avx512);
        else
            throw UsageError("--isa: expected scalar, avx2 or avx512, got '" + isa + "'");
    }
    if (args.has("no-repack") && (args.has("repack") || args.has("large-pages")))
        throw UsageError("--no-repack keeps the weights where they are: it excludes --repack and --large-pages");
    const model::WeightMemory memory = args.has("repack")        ? model::WeightMemory::large_pages_repacked
                                       : args.has("large-pages") ? model::WeightMemory::large_pages
                                       : args.has("no-repack")   ? model::WeightMemory::mapped
                                                                 : model::WeightMemory::automatic;
    std::unique_ptr<tbb::global_control> limit;
    if (threads > 0)
        limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);

    std::optional<model::Model> m;
    if (args.has("synthetic")) {
        model::SyntheticSpec s;
        const auto type = model::parse_weight_type(*args.value("synthetic"));
        if (!type)
            throw UsageError("--synthetic: unknown type '" + *args.value("synthetic") +
                             "' (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4)");
        s.type      = *type;
        s.n_layer   = static_cast<int32_t>(args.int_or("layers", 4, 1, 1024));
        s.n_embd    = static_cast<int32_t>(args.int_or("embd", 2048, 32, 65536));
        s.n_ff      = static_cast<int32_t>(args.int_or("ff", (8 * s.n_embd / 3 + 255) / 256 * 256, 32, 262144));
        s.n_vocab   = static_cast<int32_t>(args.int_or("vocab", 32000, 1, 1 << 20));
        s.n_head    = static_cast<int32_t>(args.int_or("heads", std::max(1, s.n_embd / 64), 1, 4096));
        s.n_head_kv = static_cast<int32_t>(args.int_or("kv-heads", s.n_head, 1, 4096));
        s.n_ctx     = bc.n_prompt + bc.n_decode + 4096 + 1;
        s.arch      = args.value("arch").value_or("llama");
        if (s.arch == "qwen35" || s.arch == "qwen35moe") {
            // Qwen 3.5's proportions: heads of 256 with a quarter rotated, 4 query heads per KV head; DeltaNet heads
            // with a 128-wide state, 2 value heads per 128 of width (at most 32), as many key heads up to 16.
            s.n_embd_head = s.n_embd % 256 == 0 && s.n_embd >= 512 ? 256 : 64;
            s.n_head      = static_cast<int32_t>(args.int_or("heads", std::max(1, s.n_embd / 128), 1, 4096));
            s.n_head_kv   = static_cast<int32_t>(args.int_or("kv-heads", std::max(1, s.n_head / 4), 1, 4096));
            s.n_rot       = s.n_embd_head / 4;
            s.ssm_d_state = 128;
            s.ssm_dt_rank = std::min(32, std::max(1, s.n_embd / 64));
            s.ssm_n_group = s.ssm_dt_rank > 16 ? s.ssm_dt_rank / 2 : s.ssm_dt_rank;
        }
        if (s.arch == "qwen3moe" || s.arch == "gpt-oss" || s.arch == "qwen35moe") {
            // Qwen3-30B-A3B's proportions (128 experts, 8 per token, width 3/8 of the model's) or gpt-oss-20b's
            // (32 experts, 4 per token, the model's width).
            const bool oss  = s.arch == "gpt-oss";
            s.n_expert      = static_cast<int32_t>(args.int_or("experts", oss ? 32 : 128, 1, 1024));
            s.n_expert_used = static_cast<int32_t>(args.int_or("experts-used", oss ? 4 : 8, 1, 1024));
            s.n_ff_exp      = static_cast<int32_t>(
                args.int_or("ff-exp", oss ? s.n_embd : (3 * s.n_embd / 8 + 31) / 32 * 32, 32, 262144));
        } else if (args.has("experts") || args.has("experts-used") || args.has("ff-exp")) {
            throw UsageError("--experts, --experts-used and --ff-exp need --arch qwen3moe, gpt-oss or qwen35moe");
        }
        try {
            s.validate();
        } catch (const std::invalid_argument& e) {
            throw UsageError(e.what());
        }
        m = model::make_synthetic_model(s);
        if (memory == model::WeightMemory::automatic)
            m = model::Model::with_preferred_memory(std::move(*m));
        else if (memory != model::WeightMemory::mapped)
            m = model::Model::with_large_pages(*m, {}, {}, memory == model::WeightMemory::large_pages_repacked);
    } else {
        m = model::Model::load(args.has("model") ? *args.value("model") : resource_path(kBundledTargetModel).string(),
                               {}, {}, memory);
    }

    const model::BenchResult r = model::run_bench(*m, bc);
    if (args.has("json")) {
        nlohmann::json j = r;
        j["model"]       = m->name();
        j["config"]      = bc;
        j["kernels"]     = kernels::kernel_isa_name(kernels::kernel_isa());
        std::cout << j.dump(2) << '\n';
        return 0;
    }
    const double mb = 1024.0 * 1024.0;
    char buf[512];
    std::cout << "model:            " << m->name() << " (" << m->hparams().n_layer << " layers, n_embd "
              << m->hparams().n_embd << ", " << m->weight_bytes_total() / mb << " MiB of weights)\n";
    std::cout << "kernels:          " << kernels::kernel_isa_name(kernels::kernel_isa()) << " ("
              << kernels::cpu_features_string() << ")\n";
    std::cout << "weight memory:    " << r.weight_memory;
    if (r.anon_huge_page_bytes >= 0)
        std::cout << " (process memory in huge pages: " << r.anon_huge_page_bytes / mb << " MiB)";
    std::cout << "\n";
    if (r.resident_bytes >= 0)
        std::cout << "resident memory:  " << r.resident_bytes / mb << " MiB after the timed passes (weights "
                  << m->weight_bytes_total() / mb << " MiB)\n";
    std::snprintf(buf, sizeof buf,
                  "threads:          %d%s\n"
                  "prompt:           %.1f tokens/s (%d tokens)\n"
                  "decode:           %.2f tokens/s (median step; mean %.2f) over %d steps\n"
                  "bytes per token:  %.1f MiB weights + %.2f MiB KV\n"
                  "effective:        %.2f GB/s\n",
                  r.threads, r.thread_cpu_time ? " (timed on the thread CPU clock)" : "", r.prompt_tps, bc.n_prompt,
                  r.decode_tps, r.decode_tps_mean, bc.n_decode, r.weight_bytes_per_token / mb,
                  r.kv_bytes_per_token / mb, r.effective_gbs);
    std::cout << buf;
    if (r.membw_read_gbs > 0) {
        std::snprintf(buf, sizeof buf,
                      "memory bandwidth: %.2f GB/s read (measured: %d thread(s), %.0f MiB buffer, best of %d)\n"
                      "ratio:            %.0f %% of measured read bandwidth\n",
                      r.membw_read_gbs, r.threads, r.membw_bytes / mb, bc.repeats, 100.0 * r.bandwidth_ratio);
        std::cout << buf;
    }
    if (r.int8_peak_gmacs > 0) {
        std::snprintf(buf, sizeof buf, "int8 peak:        %.1f GMAC/s (measured: %d thread(s), 512-bit vpdpbusd)\n",
                      r.int8_peak_gmacs, r.threads);
        std::cout << buf;
    }
    std::cout << "batched verification (one causal pass of n tokens vs n = 1";
    if (r.membw_read_gbs > 0 || r.int8_peak_gmacs > 0)
        std::cout << "; floors: its weight and KV bytes at the measured bandwidth, its multiply-adds at the int8 peak";
    std::cout << "):\n";
    const model::Hparams& hp = m->hparams();
    const uint64_t bytes_one = r.batches.empty() ? 0 : r.batches.front().bytes_weights;
    for (const model::BatchCost& b : r.batches) {
        std::snprintf(buf, sizeof buf, "  n = %4d  %9.3f ms  %6.2fx", b.n, b.seconds * 1e3, b.vs_single);
        std::cout << buf;
        if (b.vs_floor > 0) {
            std::snprintf(buf, sizeof buf, "  floors: memory %.2f ms, compute %.2f ms (%.2fx the larger)",
                          b.floor_memory_s * 1e3, b.floor_compute_s * 1e3, b.vs_floor);
            std::cout << buf;
        }
        if (hp.moe()) {
            // What the pass read: measured routing (distinct experts per layer) and its bytes against the first
            // pass's, beside the uniform-routing model's experts (analytic::expected_distinct_experts).
            std::snprintf(buf, sizeof buf, "  experts/layer %5.1f (uniform model %5.1f)  weights read %6.2fx",
                          b.experts_per_layer, analytic::expected_distinct_experts(hp.n_expert, hp.n_expert_used, b.n),
                          bytes_one ? double(b.bytes_weights) / double(bytes_one) : 0.0);
            std::cout << buf;
        }
        std::cout << "\n";
    }
    if (!r.rollback.empty()) {
        // A hybrid model: what keeping and rolling back the recurrent state costs a verification pass (measured,
        // interleaved with a pass that keeps nothing and so could not roll back).
        std::snprintf(buf, sizeof buf,
                      "recurrent state rollback (state %.2f MiB; pass of n tokens keeping what a rollback needs, then "
                      "back to n/2):\n",
                      double(r.recurrent_state_bytes) / (1 << 20));
        std::cout << buf;
        for (size_t i = 0; i + 2 < r.rollback.size(); i += 3) {
            const model::RollbackCost &none = r.rollback[i], &snap = r.rollback[i + 1], &rerun = r.rollback[i + 2];
            std::snprintf(buf, sizeof buf,
                          "  n = %4d  none %8.3f ms | snapshot %8.3f + %6.3f ms, %8.2f MiB held | rerun %8.3f + %6.3f "
                          "ms, %8.2f MiB held\n",
                          none.n, none.pass_s * 1e3, snap.pass_s * 1e3, snap.restore_s * 1e3,
                          double(snap.held_bytes) / (1 << 20), rerun.pass_s * 1e3, rerun.restore_s * 1e3,
                          double(rerun.held_bytes) / (1 << 20));
            std::cout << buf;
        }
    }
    return 0;
}

}  // namespace speculum::cli
