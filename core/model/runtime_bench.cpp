// Runtime benchmark: bandwidth probe, prefill, timed decode steps, batched passes of n tokens.
#include "core/model/runtime_bench.h"

#include "core/hw/large_pages.h"
#include "core/hw/microbench.h"
#include "core/json_reader.h"
#include "core/model/forward.h"
#include "core/model/sampler.h"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <stdexcept>
#include <string>

namespace speculum::model {

namespace {

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double wall_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Single-thread read bandwidth timed on the thread CPU clock (the all-thread wall-clock probe is core/hw's).
// An integer sum vectorizes without reassociation flags, so the loads are the bottleneck.
double read_bandwidth_thread_cpu(uint64_t bytes, int repeats, bool large_pages, const CancelToken& cancel) {
    const size_t n = static_cast<size_t>(bytes / sizeof(uint64_t));
    hw::LargePageBuffer mem(n * sizeof(uint64_t), large_pages);
    auto* buf = reinterpret_cast<uint64_t*>(mem.data());
    for (size_t i = 0; i < n; ++i) buf[i] = i;
    volatile uint64_t sink = 0;
    double best            = 0.0;
    for (int rep = 0; rep < repeats; ++rep) {
        cancel.throw_if_cancelled();
        const double t0 = thread_cpu_seconds();
        uint64_t s      = 0;
        for (size_t i = 0; i < n; ++i) s += buf[i];
        const double t = thread_cpu_seconds() - t0;
        sink           = sink + s;
        best           = std::max(best, static_cast<double>(n * sizeof(uint64_t)) / t / 1e9);
    }
    return best;
}

}  // namespace

void BenchConfig::validate() const {
    auto fail = [](const std::string& f, const std::string& why) {
        throw std::invalid_argument("BenchConfig." + f + ": " + why);
    };
    if (n_prompt < 1 || n_prompt > (1 << 20)) fail("n_prompt", "must be in [1, 2^20]");
    if (n_decode < 1 || n_decode > (1 << 20)) fail("n_decode", "must be in [1, 2^20]");
    if (repeats < 1 || repeats > 1000) fail("repeats", "must be in [1, 1000]");
    for (int32_t n : batch_sizes)
        if (n < 1 || n > 4096) fail("batch_sizes", "each size must be in [1, 4096], got " + std::to_string(n));
    if (membw_bytes != 0 && (membw_bytes < (1u << 20) || membw_bytes > (64ull << 30)))
        fail("membw_bytes", "must be 0 or in [1 MiB, 64 GiB]");
}

void to_json(nlohmann::json& j, const BenchConfig& c) {
    j = nlohmann::json{{"n_prompt", c.n_prompt},       {"n_decode", c.n_decode},
                       {"batch_sizes", c.batch_sizes}, {"repeats", c.repeats},
                       {"membw_bytes", c.membw_bytes}, {"thread_cpu_time", c.thread_cpu_time},
                       {"peak_probe", c.peak_probe}};
}

void from_json(const nlohmann::json& j, BenchConfig& c) {
    c = BenchConfig{};
    JsonReader r(j, "bench");
    r.get("n_prompt", c.n_prompt);
    r.get("n_decode", c.n_decode);
    r.get("batch_sizes", c.batch_sizes);
    r.get("repeats", c.repeats);
    r.get("membw_bytes", c.membw_bytes);
    r.get("thread_cpu_time", c.thread_cpu_time);
    r.get("peak_probe", c.peak_probe);
    r.finish();
}

void to_json(nlohmann::json& j, const BenchResult& r) {
    j = nlohmann::json{{"threads", r.threads},
                       {"thread_cpu_time", r.thread_cpu_time},
                       {"weight_bytes_per_token", r.weight_bytes_per_token},
                       {"kv_bytes_per_token", r.kv_bytes_per_token},
                       {"prompt_tokens_per_s", r.prompt_tps},
                       {"decode_tokens_per_s", r.decode_tps},
                       {"decode_tokens_per_s_mean", r.decode_tps_mean},
                       {"effective_gb_per_s", r.effective_gbs},
                       {"memory_read_gb_per_s", r.membw_read_gbs},
                       {"memory_probe_bytes", r.membw_bytes},
                       {"bandwidth_ratio", r.bandwidth_ratio},
                       {"int8_peak_gmac_per_s", r.int8_peak_gmacs},
                       {"weight_memory", r.weight_memory},
                       {"anon_huge_page_bytes", r.anon_huge_page_bytes},
                       {"resident_bytes", r.resident_bytes}};
    for (const BatchCost& b : r.batches)
        j["batches"].push_back({{"n", b.n},
                                {"seconds", b.seconds},
                                {"vs_single", b.vs_single},
                                {"bytes_weights", b.bytes_weights},
                                {"experts_per_layer", b.experts_per_layer},
                                {"bytes_kv", b.bytes_kv},
                                {"flops", b.flops},
                                {"floor_memory_seconds", b.floor_memory_s},
                                {"floor_compute_seconds", b.floor_compute_s},
                                {"vs_floor", b.vs_floor}});
    if (r.recurrent_state_bytes > 0) j["recurrent_state_bytes"] = r.recurrent_state_bytes;
    for (const RollbackCost& c : r.rollback)
        j["rollback"].push_back({{"n", c.n},
                                 {"strategy", c.strategy},
                                 {"pass_seconds", c.pass_s},
                                 {"restore_seconds", c.restore_s},
                                 {"held_bytes", c.held_bytes}});
}

namespace {

// The recurrent state's cost per verification width: three contexts (keeping nothing, snapshots, rerun) over the
// same prompt; each repeat times every strategy's pass and rollback in turn (interleaved), the fastest counts.
void bench_rollback(const Model& model, const BenchConfig& cfg, int32_t n_ctx, int32_t max_batch,
                    const std::vector<int32_t>& prompt, BenchResult& r, const CancelToken& cancel, double (*now)()) {
    const char* names[] = {"none", "snapshot", "rerun"};
    std::vector<std::unique_ptr<InferenceContext>> ctx;
    for (int k = 0; k < 3; ++k) {
        ContextConfig c{.n_ctx = n_ctx, .n_batch = max_batch, .path = ForwardPath::fast};
        c.rollback     = k == 2 ? RollbackStrategy::rerun : RollbackStrategy::snapshot;
        c.max_rollback = std::max(1, max_batch);
        ctx.push_back(std::make_unique<InferenceContext>(model, c));
        ctx.back()->set_cancel(cancel);
        ctx.back()->prefill(prompt);
        ctx.back()->kv().commit();
        if (k == 0) ctx.back()->kv().recurrent().pause_keeping(true);
    }
    r.recurrent_state_bytes = ctx[0]->kv().recurrent().live_bytes();
    const int32_t base      = ctx[0]->kv().size();
    Rng rng(4321);
    for (const int32_t n : cfg.batch_sizes) {
        std::vector<int32_t> toks(static_cast<size_t>(n)), pos(static_cast<size_t>(n));
        for (int32_t i = 0; i < n; ++i)
            toks[size_t(i)] = int32_t(rng.next_u64() % uint64_t(model.hparams().n_vocab)), pos[size_t(i)] = base + i;
        RollbackCost best[3];
        for (int k = 0; k < 3; ++k)
            best[k].n = n, best[k].strategy = names[k], best[k].pass_s = best[k].restore_s = 1e300;
        for (int32_t rep = 0; rep < cfg.repeats; ++rep)
            for (int k = 0; k < 3; ++k) {
                InferenceContext& c = *ctx[size_t(k)];
                double a            = now();
                c.forward_batch(toks, pos);
                best[k].pass_s     = std::min(best[k].pass_s, now() - a);
                best[k].held_bytes = c.kv().recurrent().rollback_bytes();
                if (k == 0) {  // keeping nothing: only back to the start of the pass (the floor)
                    c.kv().truncate(base);
                    best[k].restore_s = 0.0;
                    continue;
                }
                a = now();
                c.kv().truncate(base + n / 2);  // half the drafts accepted
                best[k].restore_s = std::min(best[k].restore_s, now() - a);
                c.kv().truncate(base);
            }
        for (RollbackCost& b : best) r.rollback.push_back(b);
    }
}

}  // namespace

BenchResult run_bench(const Model& model, const BenchConfig& cfg, const ProgressFn& progress,
                      const CancelToken& cancel) {
    cfg.validate();
    const Hparams& hp = model.hparams();
    const int32_t max_batch =
        std::max(cfg.n_prompt > 256 ? 256 : cfg.n_prompt,
                 cfg.batch_sizes.empty() ? 1 : *std::max_element(cfg.batch_sizes.begin(), cfg.batch_sizes.end()));
    const int32_t n_ctx = cfg.n_prompt + cfg.n_decode + max_batch + 1;
    BenchResult r;
    // Threads parallel_for may use: the arena's, limited by any tbb::global_control the caller holds.
    r.threads = static_cast<int>(
        std::min<size_t>(static_cast<size_t>(tbb::this_task_arena::max_concurrency()),
                         tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism)));
    r.weight_bytes_per_token = model.weight_bytes_per_token();
    r.weight_memory          = weight_memory_name(model.weight_memory());
    r.thread_cpu_time        = cfg.thread_cpu_time;
    if (cfg.thread_cpu_time && r.threads != 1)
        throw std::invalid_argument("BenchConfig.thread_cpu_time: needs exactly 1 thread (" +
                                    std::to_string(r.threads) + " available)");
    double (*now)() = cfg.thread_cpu_time ? thread_cpu_seconds : wall_seconds;

    // Bandwidth ceiling first, so its buffers are gone before the model's scratch is allocated. The probe reads
    // memory of the weights' kind: huge-page advised when they are, as page size alone moves the figure.
    if (cfg.membw_bytes > 0) {
        report(progress, 0.0, "measuring memory bandwidth");
        const bool large = model.weight_memory() == WeightMemory::large_pages ||
                           model.weight_memory() == WeightMemory::large_pages_repacked;
        r.membw_read_gbs = cfg.thread_cpu_time
                               ? read_bandwidth_thread_cpu(cfg.membw_bytes, cfg.repeats, large, cancel)
                               : hw::bench_read_bandwidth(cfg.membw_bytes, r.threads, cfg.repeats, cancel, {}, large);
        r.membw_bytes    = cfg.membw_bytes;
    }
    if (cfg.peak_probe) {
        report(progress, 0.05, "measuring the int8 peak");
        r.int8_peak_gmacs = hw::bench_int8_peak(r.threads, cfg.repeats, cancel, {});
    }
    cancel.throw_if_cancelled();

    // One untimed token first, in a context of its own: the first pass over mapped weights pays their page faults,
    // which is loading, not prompt processing (llama-bench warms up the same way).
    {
        InferenceContext warm(model, {.n_ctx = 2, .n_batch = 1, .path = ForwardPath::fast});
        warm.set_cancel(cancel);
        warm.decode(0, 0);
    }
    InferenceContext ctx(model, {.n_ctx = n_ctx, .n_batch = max_batch, .path = ForwardPath::fast});
    ctx.set_cancel(cancel);
    // Prompt: deterministic pseudo-random ids.
    Rng rng(1234);
    std::vector<int32_t> prompt(static_cast<size_t>(cfg.n_prompt));
    for (int32_t& t : prompt) t = static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(hp.n_vocab));
    report(progress, 0.1, "prefill");
    double t0    = now();
    int32_t next = argmax(ctx.prefill(prompt));
    r.prompt_tps = cfg.n_prompt / (now() - t0);

    // Decode: one untimed warm-up step, then timed steps feeding back the argmax.
    report(progress, 0.3, "decode");
    next = argmax(ctx.decode(next, ctx.kv().size()));
    std::vector<double> steps;
    double kv_bytes = 0.0;
    for (int32_t i = 0; i < cfg.n_decode; ++i) {
        // A step reads K and V of every cached slot in every layer and writes one slot.
        kv_bytes += static_cast<double>(ctx.kv().bytes_per_token()) * (ctx.kv().size() + 1);
        const double a = now();
        next           = argmax(ctx.decode(next, ctx.kv().size()));
        steps.push_back(now() - a);
    }
    double total = 0.0;
    for (double s : steps) total += s;
    r.decode_tps_mean    = cfg.n_decode / total;
    r.kv_bytes_per_token = kv_bytes / cfg.n_decode;
    std::sort(steps.begin(), steps.end());
    r.decode_tps    = 1.0 / steps[steps.size() / 2];
    r.effective_gbs = (static_cast<double>(r.weight_bytes_per_token) + r.kv_bytes_per_token) * r.decode_tps / 1e9;
    if (r.membw_read_gbs > 0) r.bandwidth_ratio = r.effective_gbs / r.membw_read_gbs;

    // Batched verification: n draft tokens evaluated in one causal pass on top of the context, then rolled back.
    const int32_t base = ctx.kv().size();
    double single      = 0.0;
    for (size_t bi = 0; bi < cfg.batch_sizes.size(); ++bi) {
        const int32_t n = cfg.batch_sizes[bi];
        report(progress, 0.6 + 0.4 * static_cast<double>(bi) / cfg.batch_sizes.size(), "batch " + std::to_string(n));
        std::vector<int32_t> toks(static_cast<size_t>(n)), pos(static_cast<size_t>(n));
        for (int32_t i = 0; i < n; ++i) {
            toks[i] = static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(hp.n_vocab));
            pos[i]  = base + i;
        }
        double best = 1e300;
        for (int32_t rep = 0; rep < cfg.repeats; ++rep) {
            const double a = now();
            ctx.forward_batch(toks, pos);
            best = std::min(best, now() - a);
            ctx.kv().truncate(base);
        }
        if (n == 1 && single == 0.0) single = best;
        const ForwardCost& c = ctx.last_cost();
        BatchCost b;
        b.n = n, b.seconds = best, b.bytes_weights = c.bytes_weights, b.bytes_kv = c.bytes_kv, b.flops = c.flops;
        b.experts_per_layer = hp.moe() ? double(c.experts_read) / double(hp.n_layer) : 0.0;
        if (r.membw_read_gbs > 0) b.floor_memory_s = double(c.bytes_weights + c.bytes_kv) / (r.membw_read_gbs * 1e9);
        if (r.int8_peak_gmacs > 0) b.floor_compute_s = c.flops / 2.0 / (r.int8_peak_gmacs * 1e9);
        const double floor = std::max(b.floor_memory_s, b.floor_compute_s);
        if (floor > 0) b.vs_floor = best / floor;
        r.batches.push_back(b);
    }
    if (model.hparams().hybrid()) bench_rollback(model, cfg, n_ctx, max_batch, prompt, r, cancel, now);
    if (single == 0.0 && !r.batches.empty()) single = 1.0 / r.decode_tps;  // no n = 1 entry: compare to decode
    for (BatchCost& b : r.batches) b.vs_single = b.seconds / single;
    r.anon_huge_page_bytes = hw::anon_huge_page_bytes();
    r.resident_bytes       = hw::resident_bytes();
    report(progress, 1.0, "done");
    return r;
}

}  // namespace speculum::model
