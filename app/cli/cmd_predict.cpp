// `speculum-cli predict`: read a JSON description of one configuration (file or stdin), evaluate every analytic
// model and print JSON (EWIF, expected accepted length, BPT, J, tree, step times, predicted speedup). All
// outputs are modeled. --bench times predict() itself.
#include "cli.h"
#include "core/engine/acceptance_profile.h"

#include "core/analytic/predict.h"
#include "core/file_io.h"
#include "core/json_input.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace speculum::cli {

namespace {

const char* kFields = R"(Input JSON (every field optional; defaults in brackets; all outputs are MODELED):
  alpha       number | [numbers]  acceptance of draft tokens by the target: a scalar (i.i.d.) or per position
                                  (alpha[i] = P(position i+1 accepted | earlier ones accepted); the last entry
                                  repeats) [0.8]
  k           int                 chain draft length [4]
  c           number >= 0         draft time per call / target time per call (EWIF cost ratio) [0.05]
  k_max       int                 range searched for the best k [32]
  cascade     [level...]          vertical cascade (CS Drafting Thm 4.3, any depth); level 0 drafts for the target,
                                  the last level is the bottom drafter. level = {
                alpha  number|[numbers]  acceptance of this level's tokens by the level above [0.8]
                c      number            cost per call relative to the target [0.05]
                steps  int               reviewer: SD steps per parent call (n); bottom: tokens per step (k) [4]
                max_gram bool            Max-Gram bottom: c = 0 and steps = 10 unless given [false] }
  horizontal  [segment...]        horizontal cascade (Thm 4.5): segment = {alpha [0.8], c [0.05], count [4]}
  kmatrix     object              combined vertical + horizontal cascade (CS Drafting Algorithm 1): {
                mode   "truncate"|"threshold"  truncate = Speculum's engine (every request yields exactly its
                                  count); threshold = CS Drafting's code (sub-calls repeat until the cumulative
                                  threshold, the last may overshoot) ["truncate"]
                k      [[ints]]   (n+1)x(n+1) upper-triangular: k[i][j] = positions of reviewer i's draft from
                                  level j, increments in column order (row 0 = the target's draft; a level
                                  with an all-zero row is a leaf) (required)
                alpha  [[numbers]] (n+1)x(n+1): alpha[i][j] = acceptance of level j's tokens by reviewer i
                                  (read where k[i][j] > 0) (required)
                levels [level...] one per draft level 1..n (required): {c (cost of one reviewer pass or leaf
                                  call / one target pass) [0.05], block (leaf tokens per call; 0 = any number
                                  in one call, truncate only) [1], max_gram (c = 0, block 10 in threshold /
                                  0 in truncate mode, unless given) [false]}
                target_alpha [numbers] per-position acceptance of the target's draft (truncate mode;
                                  overrides alpha[0]) }
  tree        object              token tree with exclusive per-rank acceptance: {
                p         [[numbers]] | [numbers]  p[depth][rank] (a single vector = Sequoia's, every depth)
                                                   [[0.6,0.2,0.1]]
                parents   [ints]    a given tree: parents[0] = -1, parents[i] < i (siblings ranked by order)
                budget    int       Sequoia DP node budget counting the root; 0 = skip [16]
                max_depth int       Sequoia depth limit [8] }
  mlspecqd    [level...]          ML-SpecQD Eq. 1 recursion; level = {alpha (fraction G/N) [0.8], n [4],
                                  s (speed relative to the target) [4]}; absent = one level from the chain
  cats        object              CATS BPT: {l_total [32], l_dm [3], l_sv [15], gamma [5], bits [16],
                                  mean_accepted (0 = chain value at k = gamma) [0],
                                  layer {d_model [4096], d_ffn [11008], kv_dim [4096], norms [true]}}
  cassandra   object              Cassandra J and bits: {w_p [0.4], kv_p [0.4], w_t [4], kv_t [4], bits [16],
                                  s_w (weight elements) [8.03e9], s_kv (KV elements) [0], exp_bits [2.85],
                                  map_bits [1], alpha (-1 = alpha[0]) [-1]}
  ghidorah    object              verification width: {dataset "MT-bench"|"GSM8K"|"MBPP"|"Human-eval"|"tree"
                                  ["MBPP"], root_counted [true]}; step times from hardware, else flat
  hardware    object              roofline on a profile: {
                profile  string | object   bundled id (see --list-profiles) or an inline profile object
                target   model      [LLaMA-7B fp16]    draft  model  [68M fp16]
                context  int        tokens in the KV cache [512]
                memory_budget_gb number  0 = the profile's capacity; overflow streams from flash [0] }
              model = {params_b (billions) [7], weight_bits [16], n_layers [32], d_model [4096],
                       kv_dim [4096], kv_bits [16], compute "fp16"|"bf16"|"fp32"|"int8" ["fp16"],
                       a mixture of experts: expert_params_b, n_expert, n_expert_used [0: dense],
                       a hybrid's recurrent state (modeled): state_mb [0: none], state_input_kb [0],
                       rollback "snapshot"|"rerun" ["snapshot"]}

Output JSON: position_acceptance, expected_tokens, ewif, best_k, best_ewif, predicted_speedup (hardware
roofline if given, else EWIF), and per section: cascade {expected_tokens, cost, ewif}, horizontal {ewif,
gradient}, kmatrix {expected_tokens, cost, ewif, levels [{calls, units, reviewed, accepted}] per level 0..n
per target run, draft_length_distribution}, tree {expected_length, sequoia {expected_length, parents, best_by_budget}}, mlspecqd {speedup,
effective_speed}, bpt {autoregressive_gb, chain_gb, cats}, cassandra {j, bits...}, ghidorah {widths, tau,
step_time_s, speedup, best_width, best_speedup}, hardware {t_autoregressive_s, t_verify_s, t_draft_s, c,
t_cycle_s, tokens_per_s, speedup}, memory {budget_gb, weights_gb, kv_gb, fits, streamed_gb, stream_time_s,
kv_capacity_tokens}.
Exit status: 0 ok, 1 invalid input (the message names the field), 2 bad usage.)";

std::string read_input(const std::string& name) {
    if (name == "-") return read_input_stream(std::cin, kMaxConfigFileBytes, "standard input");
    return read_input_file(name, kMaxConfigFileBytes, "predict input");
}

}  // namespace

int cmd_predict(int argc, char** argv) {
    Args args("predict",
              {{"profile", 'p', true, "ID", "hardware profile id (overrides hardware.profile; adds hardware)"},
               {"resources", 0, true, "DIR", "resources directory (default: $SPECULUM_RESOURCES, source tree)"},
               {"acceptance", 0, true, "FILE",
                "speculation_profile.json: its conditional rates become alpha per position (and k, unless the "
                "input sets it)"},
               {"list-profiles", 0, false, "", "list bundled hardware profiles and exit"},
               {"bench", 0, true, "N", "time N predict() calls and print the mean time per call"},
               {"compact", 0, false, "", "print JSON on one line"}},
              {"[FILE|-]"});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
                         "Predict speedup analytically for one configuration described in JSON (FILE, or "
                         "stdin when FILE is - or absent).")
                  << '\n'
                  << kFields << '\n';
        return 0;
    }
    std::filesystem::path res = args.value_or("resources", "");
    auto resolve              = [&](const std::string& id) { return hw::find_profile(hw::hardware_dir(res), id); };
    if (args.has("list-profiles")) {
        for (const auto& p : hw::list_profiles(hw::hardware_dir(res)))
            std::cout << p.id << "\t" << p.name << "\t" << p.mem_bw_gbps << " GB/s\n";
        return 0;
    }
    std::string file = args.positional().empty() ? "-" : args.positional()[0];
    std::string text = read_input(file);
    nlohmann::json j;
    try {
        j = text.find_first_not_of(" \t\r\n") == std::string::npos
                ? nlohmann::json::object()
                : parse_json(text, file == "-" ? std::string("stdin") : file);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(e.what());
    }
    if (auto id = args.value("profile")) {
        if (!j.is_object()) throw std::runtime_error("input must be a JSON object");
        j["hardware"]["profile"] = *id;
    }
    if (auto file = args.value("acceptance")) {
        if (!j.is_object()) throw std::runtime_error("input must be a JSON object");
        engine::AcceptanceProfile p;
        try {
            p = engine::load_acceptance_profile(*file);
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(e.what());
        }
        if (p.conditional.empty()) throw std::runtime_error(*file + ": the profile has no positions");
        j["alpha"] = p.conditional;
        if (!j.contains("k")) j["k"] = int(p.conditional.size());
    }
    analytic::PredictInput in;
    try {
        in = analytic::predict_input_from_json(j, resolve);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(std::string("invalid input: ") + e.what());
    }
    analytic::PredictOutput out = analytic::predict(in);
    nlohmann::json o;
    analytic::to_json(o, out);
    if (args.has("bench")) {
        long long n = args.int_or("bench", 10000, 1, 100000000);
        auto t0     = std::chrono::steady_clock::now();
        double sink = 0;
        for (long long i = 0; i < n; ++i) sink += analytic::predict(in).predicted_speedup;
        double us  = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
        o["bench"] = {{"calls", n}, {"mean_us_per_call", us}, {"checksum", sink / n}};
    }
    std::cout << (args.has("compact") ? o.dump() : o.dump(2)) << '\n';
    return 0;
}

}  // namespace speculum::cli
