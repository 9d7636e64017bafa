// What a measured speculative run reports to the UI, as plain data: per-position acceptance counts, the
// accepted-length histogram, acceptance by rank (trees), the committed tokens with their provenance, and the
// run's speed. Filled from the engine's RunStats and TokenEvent stream; never from a model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::ui {

enum class TokenOrigin { accepted, corrected, bonus };  // draft token kept | target's correction | target's bonus

struct TokenPiece {
    std::string text;  // detokenized piece (may be empty or partial UTF-8 for byte tokens)
    int level  = 0;    // who proposed it: 0 = the target, i = draft level i
    TokenOrigin origin = TokenOrigin::accepted;
    int step   = 0;    // target verification pass that committed it (counted over the run's prompts)
    int prompt = 0;    // index into MeasuredView::prompts
};

struct PromptView {
    std::string id;    // dataset id ("code_completion-000") or "prompt"
    std::string task;
    std::string text;  // the prompt's text (its last few hundred bytes), or its token ids without a tokenizer
};

struct MeasuredView {
    std::vector<int64_t> pos_reached;        // [i]: steps where draft position i+1 was reviewed
    std::vector<int64_t> pos_accepted;       // [i]: of those, steps where it was accepted
    std::vector<int64_t> accepted_len_hist;  // [n]: steps that accepted n draft tokens
    std::vector<int64_t> rank_reached;       // [r]: tree nodes of sibling rank r whose parent was accepted
    std::vector<int64_t> rank_accepted;      // [r]: of those, accepted
    std::vector<TokenPiece> tokens;          // committed tokens in order
    std::vector<PromptView> prompts;         // the prompts decoded so far (the last one may still stream)
    int prompts_total = 0;                   // prompts this run decodes
    std::string drafter;                     // the draft stack's name ("early exit @ layer 1")
    std::string source;                      // where the prompts came from ("code_completion.jsonl, task ...")
    int lossless_checked = 0;                // greedy prompts compared with the target's own output
    int lossless_mismatches = 0;             // of those, prompts whose tokens differ (must stay 0)
    int64_t n_generated   = 0;
    int64_t n_steps       = 0;
    double tokens_per_s   = 0;  // speculative decode rate
    double baseline_tps   = 0;  // plain autoregressive decode of the same target (0 = not run)
    double speedup        = 0;  // tokens_per_s / baseline_tps (0 = no baseline)
    double bytes_per_token = 0; // BPT, bytes read by every level per generated token
    double cost_ratio     = 0;  // measured c of level 1 (0 = unknown)
    double draft_bytes_per_pass = 0;   // weight bytes one level-1 forward pass reads (0 = no passes)
    bool draft_bytes_modeled    = false;  // those bytes are modeled (a pruned / truncated draft stored dense)
    bool complete         = false;  // false while results are still streaming in
    std::vector<double> alpha() const;  // pos_accepted / pos_reached (0 where never reached)
    double mean_accepted_length() const;  // tokens per target pass (accepted + 1), from the histogram
};

struct Interval {
    double lo = 0, hi = 1;
};
// Wilson score interval for `successes` of `trials` at z (1.96 ≈ 95 %); [0, 1] when trials == 0.
Interval wilson_interval(int64_t successes, int64_t trials, double z = 1.96);

}  // namespace speculum::ui
