// Times an early-exit self-draft with its full LM head against the same draft with a reduced head (FR-Spec:
// ForwardOptions::head over the first N token ids), both against the target's decode step, interleaved round by
// round in one process so every c = draft pass / target step is taken against the same machine state.
// docs/performance.md ("Reduced LM heads") cites it.
//   cmake --build build --target speculum_core && g++ -O2 -DNDEBUG -std=c++20 -I. tools/perf/reduced_head_bench.cpp \
//       build/core/libspeculum_core.a build/kernels/libspeculum_kernels.a -ltbb -lopenblas -o /tmp/reduced_head_bench
//   /tmp/reduced_head_bench [--vocab V] [--embd D] [--layers L] [--ff F] [--exit E] [--heads N,N,...]
//                           [--rounds R] [--steps S] [--model FILE]
// Defaults: a Llama-3.2-1B-shaped BF16 target (128256 tokens, 2048 wide, 16 layers, FFN 8192), exit after layer 3,
// heads of 8192, 16384 and 32768 tokens. --model times a GGUF instead (its vocabulary decides the heads' range).
#include "core/model/forward.h"
#include "core/model/model.h"
#include "core/model/synthetic.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace speculum;

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median seconds of `steps` single-token passes after a short prompt.
double time_decode(model::InferenceContext& ctx, const model::ForwardOptions& o, int steps) {
    ctx.kv().clear();
    ctx.prefill({1, 2, 3, 4, 5, 6, 7, 8}, o);
    std::vector<double> t;
    for (int s = 0; s < steps; ++s) {
        const double t0 = now();
        ctx.decode((7 * s + 3) % 1000, ctx.kv().size(), o);
        t.push_back(now() - t0);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    model::SyntheticSpec s;
    s.n_vocab = 128256, s.n_embd = 2048, s.n_layer = 16, s.n_head = 32, s.n_head_kv = 8, s.n_ff = 8192, s.n_ctx = 256;
    s.type = kernels::GgmlType::BF16, s.seed = 5;
    int exit_layer = 3, rounds = 3, steps = 12;
    std::vector<int32_t> heads{8192, 16384, 32768};
    std::string file;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        const char* v       = argv[i + 1];
        if (k == "--vocab")
            s.n_vocab = std::atoi(v);
        else if (k == "--embd")
            s.n_embd = std::atoi(v);
        else if (k == "--layers")
            s.n_layer = std::atoi(v);
        else if (k == "--ff")
            s.n_ff = std::atoi(v);
        else if (k == "--exit")
            exit_layer = std::atoi(v);
        else if (k == "--rounds")
            rounds = std::atoi(v);
        else if (k == "--steps")
            steps = std::atoi(v);
        else if (k == "--model")
            file = v;
        else if (k == "--heads") {
            heads.clear();
            for (const char* p = v; *p;) {
                heads.push_back(std::atoi(p));
                while (*p && *p != ',') ++p;
                if (*p) ++p;
            }
        } else {
            std::fprintf(stderr, "unknown option %s\n", k.c_str());
            return 2;
        }
    }
    const model::Model m     = file.empty() ? model::make_synthetic_model(s) : model::Model::load(file);
    const model::Hparams& hp = m.hparams();
    std::printf("target: %s, vocab %d, %d layers, n_embd %d; draft: exit after layer %d\n", m.name().c_str(),
                hp.n_vocab, hp.n_layer, hp.n_embd, exit_layer);
    model::InferenceContext ctx(m, {.n_ctx = 256, .n_batch = 16});
    model::ForwardOptions full;
    full.exit_layer = exit_layer;
    std::vector<model::WeightView> views;
    std::vector<int32_t> sizes;
    for (int32_t n : heads) {
        if (n < 1 || n > hp.n_vocab) continue;
        std::vector<int32_t> ids(static_cast<size_t>(n));
        for (int32_t j = 0; j < n; ++j) ids[size_t(j)] = j;
        views.push_back(model::gather_rows(m.weights().output, ids));
        sizes.push_back(n);
    }
    std::vector<double> target, c_full;
    std::vector<std::vector<double>> c_red(views.size());
    for (int r = 0; r < rounds; ++r) {
        const double t = time_decode(ctx, {}, steps);
        target.push_back(t);
        c_full.push_back(time_decode(ctx, full, steps) / t);
        for (size_t h = 0; h < views.size(); ++h) {
            model::ForwardOptions o = full;
            o.head                  = &views[h];
            c_red[h].push_back(time_decode(ctx, o, steps) / t);
        }
    }
    auto med = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    auto lo = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
    auto hi = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
    std::printf("target decode step: %.2f ms (median of %d rounds)\n", med(target) * 1e3, rounds);
    std::printf("head %-8s c %.3f [%.3f, %.3f]\n", "full", med(c_full), lo(c_full), hi(c_full));
    for (size_t h = 0; h < views.size(); ++h)
        std::printf("head %-8d c %.3f [%.3f, %.3f]\n", sizes[h], med(c_red[h]), lo(c_red[h]), hi(c_red[h]));
    return 0;
}
