// Times Cassandra-style self-drafts in the compact formats (kernels/compact.h) against their target on one synthetic
// model, in one process, interleaved: each round times the target's decode step, then every draft's, so the drafts'
// cost ratio c = draft pass / target pass is taken against the same machine state. Also measures the read
// bandwidth (the same microbenchmark as `calibrate`) and prints each draft's bytes / bandwidth next to its time.
// docs/performance-notebook.md ("Session 9: compact drafts") cites it.
//   cmake --build build --target speculum_core && g++ -O2 -DNDEBUG -std=c++20 -I. tools/perf/compact_draft_bench.cpp \
//       build/core/libspeculum_core.a build/kernels/libspeculum_kernels.a -ltbb -lopenblas -o /tmp/compact_draft_bench
//   /tmp/compact_draft_bench [--type bf16|q8_0] [--threads N] [--rounds R] [--steps S] [--embd D] [--ff F]
//                            [--batch] [--dense] [--f32] [--interleave] [--only] [--team-ab] [--split]
// --batch also times passes of n = 2..8 tokens (prune 0.5 + t 4, or prune 0.5 for q8_0; with --f32, its f32-activation
// entry). --dense adds each draft
// stored dense (compact false) for comparison. --f32 adds each compact draft again with f32 activations ("cmp-f32":
// the fused f32 kernel; the default row takes the kernel kernels::compact_bf16act_chosen picks for this CPU:
// BF16-rounded activations with vdpbf16ps for sparse BF16 rows on AMD, the f32 kernel otherwise, so there the two rows
// run the same).
// --interleave times that draft's passes the way a run interleaves them with the target's 5-token verification passes.
// --team-ab times the target's decode step and 5-token pass and that draft's pass with the forward pass's regions on
// the ThreadTeam and on oneTBB, alternated round by round (docs/performance-notebook.md, "Session 25").
// --split times the target stored as that draft plus the rest of its bits (strict-subset storage,
// drafts::split_target) against the dense target, alternated round by round: decode step and 5-token pass, and the
// bytes of both storages (docs/performance-notebook.md, "Session 26").
// --only builds just that draft. Exits non-zero when a draft's logits differ from its dense copy's (compared with f32
// activations).
#include "core/drafts/self_draft.h"
#include "core/hw/microbench.h"
#include "core/model/forward.h"
#include "core/model/synthetic.h"
#include "core/thread_team.h"

#include <oneapi/tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace speculum;

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds per pass of `n` tokens: `steps` passes after a short prompt, the median of their times.
double time_passes(model::InferenceContext& ctx, const model::ForwardOptions& opts, int steps, int n) {
    ctx.kv().clear();
    std::vector<int32_t> prompt{1, 2, 3, 4, 5, 6, 7, 8};
    ctx.prefill(prompt, opts);
    std::vector<double> t;
    std::vector<int32_t> toks(size_t(n), 0), pos(size_t(n), 0);
    for (int s = 0; s < steps; ++s) {
        for (int i = 0; i < n; ++i) toks[size_t(i)] = (11 * s + 3 * i) % 1000, pos[size_t(i)] = ctx.kv().size() + i;
        const double t0 = now();
        if (n == 1)
            ctx.decode(toks[0], pos[0], opts);
        else
            ctx.forward_batch(toks, pos, {}, opts);
        t.push_back(now() - t0);
        if (n > 1) ctx.kv().truncate(ctx.kv().size() - n + 1);
    }
    std::nth_element(t.begin(), t.begin() + long(t.size() / 2), t.end());
    return t[t.size() / 2];
}

struct Entry {
    float prune;
    int trunc;
    bool compact;
    bool f32;  // its context multiplies f32 activations (ContextConfig.int8_activations false)
    drafts::SelfDraft draft;
    std::unique_ptr<model::InferenceContext> ctx;
    uint64_t bytes = 0;
    std::vector<double> secs;
};

double median(std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    std::string type = "bf16";
    int threads = 2, rounds = 5, steps = 24, embd = 1024, ff = 2816;
    bool batch = false, dense = false, interleave = false, only = false, f32 = false, team_ab = false, split = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--type" && i + 1 < argc)
            type = argv[++i];
        else if (a == "--threads" && i + 1 < argc)
            threads = std::atoi(argv[++i]);
        else if (a == "--rounds" && i + 1 < argc)
            rounds = std::atoi(argv[++i]);
        else if (a == "--steps" && i + 1 < argc)
            steps = std::atoi(argv[++i]);
        else if (a == "--embd" && i + 1 < argc)
            embd = std::atoi(argv[++i]);
        else if (a == "--ff" && i + 1 < argc)
            ff = std::atoi(argv[++i]);
        else if (a == "--batch")
            batch = true;
        else if (a == "--dense")
            dense = true;
        else if (a == "--f32")
            f32 = true;
        else if (a == "--interleave")
            interleave = true;
        else if (a == "--only")
            only = true;
        else if (a == "--team-ab")
            team_ab = true;
        else if (a == "--split")
            split = true;
        else {
            std::fprintf(
                stderr,
                "usage: %s [--type bf16|q8_0] [--threads N] [--rounds R] [--steps S] [--embd D] [--ff F] [--batch] "
                "[--dense] [--f32] "
                "[--interleave] [--only] [--team-ab] [--split]\n",
                argv[0]);
            return 2;
        }
    }
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, size_t(threads));
    model::SyntheticSpec spec = nlohmann::json::parse(
        R"({"arch":"llama","n_vocab":4096,"n_embd":1024,"n_layer":8,"n_head":16,"n_head_kv":4,"n_ff":2816,)"
        R"("n_ctx":512,"type":"bf16","seed":7})");
    spec.type                 = *model::parse_weight_type(type);
    spec.n_embd               = embd;  // --embd 2048 --ff 5632: 4x the weights (722 MiB), for CPUs with a larger L3
    spec.n_ff                 = ff;
    const model::Model target = model::make_synthetic_model(spec);
    const model::ContextConfig cc{.n_ctx = 512};  // n_batch 64, as in runs (16 made the target ~7 % slower)
    model::InferenceContext tctx(target, cc);
    std::printf("target: %s, %d threads, %.1f MiB of weights per decode step\n", type.c_str(), threads,
                double(target.weight_bytes_per_token()) / 1048576.0);

    std::vector<Entry> drafts;
    const std::vector<int> truncs =
        spec.type == kernels::GgmlType::BF16 ? std::vector<int>{0, 2, 4, 6} : std::vector<int>{0};
    for (float p : {0.0f, 0.25f, 0.5f, 0.75f})
        for (int t : truncs)
            for (int kind = 0; kind < 3; ++kind) {  // compact, compact with f32 activations, dense
                const bool compact = kind < 2, act32 = kind == 1;
                if ((kind == 2 && !dense) || (act32 && !f32)) continue;
                if (only && !(p == 0.5f && t == truncs.back() / 3 * 2)) continue;  // prune 0.5 + t 4 (q8_0: t 0)
                drafts::DraftSpec s;
                s.prune.ratio       = p;
                s.weight_trunc_bits = t;
                s.compact           = compact;
                Entry e{p, t, compact, act32, drafts::build_self_draft(target, s), nullptr};
                model::ContextConfig dc = cc;
                dc.int8_activations     = !act32;
                e.ctx                   = std::make_unique<model::InferenceContext>(e.draft.model, dc);
                e.bytes = drafts::weight_bytes_per_forward(e.draft.cost, target.hparams(), e.draft.forward);
                drafts.push_back(std::move(e));
            }
    // The compact drafts compute exactly what their dense copies compute, with f32 activations (with BF16 ones the
    // fused compact kernel pairs the products in another order than the dense BF16 kernel).
    int bad = 0;
    const model::ContextConfig exact{.n_ctx = 16, .int8_activations = false};
    for (const Entry& d : drafts) {
        if (d.compact) continue;
        for (const Entry& c : drafts) {
            if (!c.compact || c.f32 || c.prune != d.prune || c.trunc != d.trunc) continue;
            model::InferenceContext a(c.draft.model, exact), b(d.draft.model, exact);
            const auto la = a.decode(5, 0, c.draft.forward);
            const std::vector<float> av(la.begin(), la.end());
            const auto lb = b.decode(5, 0, d.draft.forward);
            if (!std::equal(av.begin(), av.end(), lb.begin())) ++bad;
        }
    }
    const double bw = hw::bench_read_bandwidth(size_t(512) << 20, threads, 5, {}, {}, false);
    std::printf("read bandwidth: %.2f GB/s (hw::bench_read_bandwidth, 512 MiB, %d threads)\n", bw, threads);

    std::vector<double> tsecs;
    for (int r = 0; r < rounds; ++r) {
        tsecs.push_back(time_passes(tctx, {}, steps, 1));
        for (Entry& e : drafts) e.secs.push_back(time_passes(*e.ctx, e.draft.forward, steps, 1));
    }
    const double tt = median(tsecs);
    std::printf("target decode step: %.3f ms (median of %d rounds x %d steps), %.1f MiB -> %.2f GB/s\n\n", tt * 1e3,
                rounds, steps, double(target.weight_bytes_per_token()) / 1048576.0,
                double(target.weight_bytes_per_token()) / tt / 1e9);
    std::printf("%-6s %-3s %-8s %10s %9s %11s %9s %9s %7s\n", "prune", "t", "storage", "MiB/pass", "bits/w", "ms/pass",
                "bytes/bw", "time/bw", "c");
    const double elems = double(target.weight_bytes_per_token()) / 2.0;  // BF16: bytes / 2 (approximate for q8_0)
    for (const Entry& e : drafts) {
        const double s = median(e.secs);
        std::printf("%-6.2f %-3d %-8s %10.2f %9.3f %11.3f %9.3f %9.2f %7.3f\n", e.prune, e.trunc,
                    e.compact ? (e.f32 ? "cmp-f32" : "compact") : "dense", double(e.bytes) / 1048576.0,
                    8.0 * double(e.bytes) / elems, s * 1e3, double(e.bytes) / bw / 1e6,
                    s / (double(e.bytes) / bw / 1e9), s / tt);
    }
    if (interleave) {
        // As in a speculative run: each step verifies 5 tokens on the target, then the draft decodes 4; only the
        // draft's passes are timed, against plain target decode steps timed in the same rounds.
        Entry* e = nullptr;
        for (Entry& x : drafts)
            if (x.compact && !x.f32 && x.prune == 0.5f && x.trunc == (spec.type == kernels::GgmlType::BF16 ? 4 : 0))
                e = &x;
        std::vector<double> a, b;
        for (int r = 0; r < rounds; ++r) {
            a.push_back(time_passes(tctx, {}, steps, 1));
            tctx.kv().clear(), e->ctx->kv().clear();
            std::vector<int32_t> prompt{1, 2, 3, 4, 5, 6, 7, 8};
            tctx.prefill(prompt, {});
            e->ctx->prefill(prompt, e->draft.forward);
            std::vector<double> t;
            for (int s = 0; s < steps; ++s) {
                const int32_t p0 = tctx.kv().size();
                std::vector<int32_t> toks{9, 10, 11, 12, 13}, pos{p0, p0 + 1, p0 + 2, p0 + 3, p0 + 4};
                tctx.forward_batch(toks, pos, {});
                tctx.kv().truncate(p0 + 1);
                e->ctx->kv().truncate(p0);
                const double t0 = now();
                for (int i = 0; i < 4; ++i) e->ctx->decode(20 + i, p0 + i, e->draft.forward);
                t.push_back((now() - t0) / 4);
            }
            b.push_back(median(t));
        }
        std::printf(
            "\ninterleaved with 5-token target passes (prune 0.5%s): draft pass %.3f ms, target step %.3f ms, "
            "c = %.3f (median of %d rounds)\n",
            spec.type == kernels::GgmlType::BF16 ? " + t 4" : "", median(b) * 1e3, median(a) * 1e3,
            median(b) / median(a), rounds);
    }
    if (team_ab) {
        // The forward pass's regions on the spinning ThreadTeam against oneTBB, alternated round by round: the
        // target's decode step and 5-token pass, and the draft's pass (prune 0.5 + t 4, or prune 0.5 for q8_0).
        Entry* e = nullptr;
        for (Entry& x : drafts)
            if (x.compact && !x.f32 && x.prune == 0.5f && x.trunc == (spec.type == kernels::GgmlType::BF16 ? 4 : 0))
                e = &x;
        std::vector<double> ratio[3], c[2];
        for (int r = 0; r < 2 * rounds; ++r) {
            double t[2][3];
            for (int team : {r % 2, 1 - r % 2}) {  // which goes first alternates too
                ThreadTeam::set_enabled(team == 1);
                t[team][0] = time_passes(tctx, {}, steps, 1);
                t[team][1] = time_passes(tctx, {}, steps / 2, 5);
                t[team][2] = time_passes(*e->ctx, e->draft.forward, steps, 1);
            }
            for (int k = 0; k < 3; ++k) ratio[k].push_back(t[1][k] / t[0][k]);
            for (int team : {0, 1}) c[team].push_back(t[team][2] / t[team][0]);
        }
        ThreadTeam::set_enabled(true);
        std::printf(
            "\nThreadTeam / oneTBB regions, alternated, median of %d rounds: target step %.3f, target 5-token pass "
            "%.3f, draft pass %.3f; draft c: TBB %.3f, team %.3f\n",
            2 * rounds, median(ratio[0]), median(ratio[1]), median(ratio[2]), median(c[0]), median(c[1]));
    }
    if (split && spec.type == kernels::GgmlType::BF16) {
        Entry* e = nullptr;
        for (Entry& x : drafts)
            if (x.compact && !x.f32 && x.prune == 0.5f && x.trunc == 4) e = &x;
        const drafts::SplitTarget st = drafts::split_target(target, e->draft.model);
        model::InferenceContext sctx(st.model, cc);
        std::vector<double> ratio[2], ts[2], td[2];
        for (int r = 0; r < 2 * rounds; ++r) {
            double t[2][2];
            for (int sp : {r % 2, 1 - r % 2}) {  // which goes first alternates too
                model::InferenceContext& ctx = sp ? sctx : tctx;
                t[sp][0]                     = time_passes(ctx, {}, steps, 1);
                t[sp][1]                     = time_passes(ctx, {}, steps / 2, 5);
            }
            for (int k = 0; k < 2; ++k)
                ratio[k].push_back(t[1][k] / t[0][k]), ts[k].push_back(t[1][k]), td[k].push_back(t[0][k]);
        }
        const double mib = 1048576.0;
        std::printf(
            "\nstrict-subset storage (prune 0.5 + t 4): %d matrices split, %.1f MiB against %.1f MiB dense + %.1f MiB "
            "of draft (%.1f MiB saved)\nsplit / dense target, alternated, median of %d rounds: decode step %.3f "
            "(%.3f ms / %.3f ms), 5-token pass %.3f (%.3f ms / %.3f ms)\n",
            st.n_split, double(st.bytes_split) / mib, double(st.bytes_dense) / mib, double(st.bytes_draft) / mib,
            double(st.bytes_dense + st.bytes_draft - st.bytes_split) / mib, 2 * rounds, median(ratio[0]),
            median(ts[0]) * 1e3, median(td[0]) * 1e3, median(ratio[1]), median(ts[1]) * 1e3, median(td[1]) * 1e3);
    }
    if (batch) {
        Entry* e = nullptr;  // with --f32, the draft with f32 activations (the fused f32 kernel)
        for (Entry& x : drafts)
            if (x.compact && x.f32 == f32 && x.prune == 0.5f &&
                x.trunc == (spec.type == kernels::GgmlType::BF16 ? 4 : 0))
                e = &x;
        std::printf(
            "\nbatched passes (prune 0.5%s, compact%s) against the target's, interleaved, median of %d rounds\n",
            spec.type == kernels::GgmlType::BF16 ? " + t 4" : "", f32 ? ", f32 activations" : "", rounds);
        std::printf("%-3s %12s %12s %8s %14s\n", "n", "target ms", "draft ms", "c(n)", "draft n / n=1");
        double d1 = 0;
        for (int n = 1; n <= 8; ++n) {
            std::vector<double> a, b;
            for (int r = 0; r < rounds; ++r) {
                a.push_back(time_passes(tctx, {}, steps / 2, n));
                b.push_back(time_passes(*e->ctx, e->draft.forward, steps / 2, n));
            }
            const double ta = median(a), tb = median(b);
            if (n == 1) d1 = tb;
            std::printf("%-3d %12.3f %12.3f %8.3f %14.2f\n", n, ta * 1e3, tb * 1e3, tb / ta, tb / d1);
        }
    }
    if (bad) std::fprintf(stderr, "%d compact drafts differ from their dense copies\n", bad);
    return bad ? 1 : 0;
}
