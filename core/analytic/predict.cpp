// predict(): every analytic model for one configuration (see predict.h). JSON lives in predict_json.cpp.
#include "core/analytic/predict.h"

#include "core/analytic/checks.h"

#include <cmath>

namespace speculum::analytic {

void validate(const PredictInput& in) {
    require_probabilities(in.alpha, "alpha");
    require_count(in.k, 0, 4096, "k");
    require_nonnegative(in.c, "c");
    require_count(in.k_max, 1, 4096, "k_max");
    require_count(in.block, 0, 4096, "block");
    if (!in.cascade.empty()) vertical_cascade(in.cascade);  // names cascade.levels[i].field
    if (!in.horizontal.empty()) horizontal_cascade(in.horizontal);
    if (in.kmatrix) validate(*in.kmatrix);
    if (in.tree) {
        validate_acceptance_table(in.tree->p, "tree.p");
        if (!in.tree->parents.empty()) validate_tree(TokenTree{in.tree->parents}, "tree");
        require_count(in.tree->budget, 0, 4096, "tree.budget");
        require_count(in.tree->max_depth, 0, 4096, "tree.max_depth");
    }
    if (!in.mlspecqd.empty()) mlspecqd_multilevel(in.mlspecqd);
    if (in.cats) {
        validate(in.cats->config);
        if (in.cats->mean_accepted != 0 && !(in.cats->mean_accepted >= 1.0))
            throw InvalidInput("cats.mean_accepted must be >= 1 (or 0 for the chain's value)");
    }
    if (in.cassandra) {
        validate(in.cassandra->config);
        if (in.cassandra->alpha != -1) require_probability(in.cassandra->alpha, "cassandra.alpha");
    }
    if (in.ghidorah) {
        if (in.ghidorah->dataset == "tree") {
            if (!in.tree) throw InvalidInput("ghidorah.dataset 'tree' needs a tree section (tree.p)");
        } else {
            ghidorah_table1(in.ghidorah->dataset);
        }
        if (in.ghidorah->soc) validate(*in.ghidorah->soc, in.ghidorah->workload.value_or(vicuna7b_fp16()));
    }
    if (in.hardware) {
        try {
            hw::validate(in.hardware->profile);
        } catch (const std::invalid_argument& e) {
            throw InvalidInput(std::string("hardware.profile: ") + e.what());
        }
        validate(in.hardware->target, "hardware.target");
        validate(in.hardware->draft, "hardware.draft");
        require_count(in.hardware->context, 0, 1 << 24, "hardware.context");
        require_nonnegative(in.hardware->memory_budget_gb, "hardware.memory_budget_gb");
    }
}

PredictOutput predict(const PredictInput& in) {
    validate(in);
    PredictOutput out;
    auto alpha   = expand_positions(in.alpha, in.k, "alpha");
    double reach = 1.0;
    for (double a : alpha) out.position_acceptance.push_back(reach *= a);
    out.expected_tokens = expected_tokens_chain(alpha);
    if (in.block > 0) {  // one draft pass per block (DFlash, DSpark)
        out.ewif      = ewif_block(in.alpha, in.c, in.k, in.block);
        out.best_k    = best_k_block(in.alpha, in.c, in.k_max, in.block);
        out.best_ewif = ewif_block(in.alpha, in.c, out.best_k, in.block);
    } else {
        out.ewif      = out.expected_tokens / (1.0 + in.c * in.k);
        out.best_k    = best_k_sd(in.alpha, in.c, in.k_max);
        out.best_ewif = ewif_sd(in.alpha, in.c, out.best_k);
    }
    out.predicted_speedup = out.ewif;

    if (!in.cascade.empty()) out.cascade = vertical_cascade(in.cascade);
    if (!in.horizontal.empty()) {
        out.horizontal_ewif = horizontal_cascade(in.horizontal);
        std::vector<double> a, c;
        for (const auto& s : in.horizontal) {
            a.insert(a.end(), size_t(s.count), s.alpha);
            c.insert(c.end(), size_t(s.count), s.c);
        }
        out.horizontal_gradient = horizontal_cascade_gradient(a, c);
    }
    if (in.kmatrix) out.kmatrix = kmatrix_cascade(*in.kmatrix);
    if (in.tree) {
        if (!in.tree->parents.empty())
            out.tree_expected_length = tree_expected_length(TokenTree{in.tree->parents}, in.tree->p);
        if (in.tree->budget > 0) out.sequoia = sequoia_best_tree(in.tree->p, in.tree->budget, in.tree->max_depth);
    }
    if (!in.mlspecqd.empty()) {
        out.mlspecqd = mlspecqd_multilevel(in.mlspecqd);
    } else if (in.k > 0) {
        // One level from the chain: α as a fraction (analytic_readings.md), S = 1/c.
        double s     = in.c > 0 ? 1.0 / in.c : 1e12;
        out.mlspecqd = mlspecqd_multilevel({{mlspecqd_alpha_from_positions(alpha), in.k, s}});
    }
    if (in.cats) {
        const auto& cats = *in.cats;
        double m         = cats.mean_accepted;
        if (m <= 0) m = expected_tokens_chain(expand_positions(in.alpha, cats.config.gamma, "alpha"));
        out.cats_bpt              = bpt_cats(in.cats->config, m);
        out.bpt_autoregressive_gb = bpt_autoregressive(in.cats->config);
    }
    if (in.cassandra) {
        double a            = in.cassandra->alpha >= 0 ? in.cassandra->alpha : in.alpha[0];
        CassandraConfig cfg = in.cassandra->config;
        if (!in.cassandra->bits_given && in.hardware) cfg.bits = in.hardware->target.weight_bits;
        out.cassandra_j    = cassandra_j(a, cfg);
        out.cassandra_bits = cassandra_bits(cfg);
    }
    double stream_gb = 0;
    if (in.hardware) {
        const auto& h = *in.hardware;
        double w_gb   = (weight_bytes(h.target) + weight_bytes(h.draft)) / 1e9;
        out.memory    = plan_memory(h.profile, h.memory_budget_gb, w_gb,
                                    kv_bytes_per_token(h.target) + kv_bytes_per_token(h.draft), h.context);
        stream_gb     = out.memory->streamed_gb;
        if (!std::isfinite(out.memory->stream_time_s))
            throw InvalidInput("hardware: the models do not fit in " + std::to_string(out.memory->budget_gb) +
                               " GB and profile '" + h.profile.id + "' models no flash bandwidth to stream them");
        out.timing = chain_timing(h.profile, h.target, h.draft, in.k, h.context, out.expected_tokens, stream_gb);
        double bt = weight_bytes(h.target) / 1e9, bd = weight_bytes(h.draft) / 1e9;
        out.bpt_autoregressive_gb = bt;
        out.bpt_chain_gb          = bpt_two_stage(in.k, bd, bt, out.expected_tokens);
        out.predicted_speedup     = out.timing->speedup;
    }
    if (in.ghidorah) {
        WidthTable table;
        if (in.ghidorah->dataset == "tree") {
            auto best = out.sequoia && int(out.sequoia->best_by_budget.size()) >= 64
                            ? *out.sequoia
                            : sequoia_best_tree(in.tree->p, 64, in.tree->max_depth);
            for (int w = 1; w <= 64; w *= 2) {
                table.widths.push_back(w);
                table.tau.push_back(best.best_by_budget[size_t(w) - 1]);
            }
        } else {
            table = ghidorah_table1(in.ghidorah->dataset);
        }
        if (in.ghidorah->soc) {
            HeteroWorkload w = vicuna7b_fp16();
            if (in.ghidorah->workload) {
                w = *in.ghidorah->workload;
            } else if (in.hardware) {
                w.weight_bytes    = weight_bytes(in.hardware->target);
                w.flops_per_token = 2.0 * in.hardware->target.params_b * 1e9;
            }
            out.ghidorah            = choose_width_hetero(table, *in.ghidorah->soc, w, in.ghidorah->root_counted);
            out.ghidorah_step_model = "hetero-core split (GPU + CPU columns, shared DRAM), against the GPU alone";
        } else if (in.hardware) {
            const auto& h = *in.hardware;
            auto step     = [&](int n) { return forward_cost(h.profile, h.target, n, h.context, stream_gb).time; };
            out.ghidorah  = choose_width(table, step, step(1), in.ghidorah->root_counted);
            out.ghidorah_step_model = "hardware roofline of one unit";
        } else {
            out.ghidorah_step_model = "flat (no hardware given)";
            // No hardware: a flat step time (verification of ≤ 64 tokens as cheap as one token).
            out.ghidorah = choose_width(
                table, [](int) { return 1.0; }, 1.0, in.ghidorah->root_counted);
        }
    }
    return out;
}

}  // namespace speculum::analytic
