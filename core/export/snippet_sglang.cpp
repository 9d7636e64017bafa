// SGLang snippet: `sglang.launch_server` speculative flags (STANDALONE draft model or NGRAM; steps, top-k, draft
// tokens), with what SGLang cannot express as comments.
#include "core/export/snippet_plan.h"

namespace speculum::exporting::detail {

EngineSnippet sglang_snippet(const Plan& p, const SnippetOptions&) {
    const engine::SpecConfig& cfg = p.manifest->config;
    EngineSnippet s               = start_snippet(Engine::sglang, p);
    const bool maxgram            = p.level1.kind == drafts::DraftKind::maxgram;
    const bool ngram              = p.level1.kind == drafts::DraftKind::ngram;
    const bool mtp                = p.level1.kind == drafts::DraftKind::mtp;
    const bool eagle3             = p.level1.kind == drafts::DraftKind::eagle3;
    const bool block = p.level1.kind == drafts::DraftKind::dflash || p.level1.kind == drafts::DraftKind::dspark;

    // SGLang counts the root (the last verified token) in num_draft_tokens: a chain of γ is γ + 1 tokens.
    int32_t steps = p.gamma, topk = 1, draft_tokens = p.gamma + 1;
    if (p.tree && cfg.tree.kind == engine::TreeKind::dynamic) {
        // EAGLE-2's dynamic tree is SGLang's own: top-k per step, then the best num_draft_tokens - 1 nodes.
        steps        = cfg.tree.depth;
        topk         = cfg.tree.top_k;
        draft_tokens = cfg.tree.node_budget + 1;
    } else if (p.tree) {
        steps        = p.tree->depth;
        topk         = p.tree->max_branching;
        draft_tokens = p.tree->nodes + 1;
        s.cannot_express.push_back(
            "a fixed tree shape (" + p.tree->kind + ", " + std::to_string(p.tree->nodes) +
            " nodes): SGLang grows an EAGLE-2 style tree (top-k children per step, the best "
            "top-k frontier kept, then the best num_draft_tokens - 1 nodes by draft confidence)");
        s.fallbacks.push_back("steps = tree depth " + std::to_string(steps) + ", topk = widest branching " +
                              std::to_string(topk) +
                              ", num_draft_tokens = nodes + 1 = " + std::to_string(draft_tokens));
    }
    if (!maxgram && !ngram && cfg.p_min > 0.0f) {
        s.cannot_express.push_back("stopping a draft below a draft probability (p_min = " + num(cfg.p_min) + ")");
        s.fallbacks.push_back("full-length drafts of " + std::to_string(steps) + " steps");
    }
    std::vector<std::string> args{"--model-path " + shell_quote(p.target)};
    // SGLang's EAGLE worker runs every neural draft: the algorithm, the draft file (none for NEXTN), the tree.
    auto eagle_worker = [&](const char* algorithm, bool draft_file) {
        args.push_back(std::string("--speculative-algorithm ") + algorithm);
        if (draft_file) args.push_back("--speculative-draft-model-path " + shell_quote(p.draft_file));
        args.push_back("--speculative-num-steps " + std::to_string(steps));
        args.push_back("--speculative-eagle-topk " + std::to_string(topk));
        args.push_back("--speculative-num-draft-tokens " + std::to_string(draft_tokens));
    };
    if (maxgram) {
        const auto& mg = p.level1.maxgram;
        args.push_back("--speculative-algorithm NGRAM");
        args.push_back("--speculative-num-draft-tokens " + std::to_string(draft_tokens));
        args.push_back("--speculative-ngram-min-match-window-size " + std::to_string(mg.min_match));
        args.push_back("--speculative-ngram-max-match-window-size " + std::to_string(mg.max_match));
        s.cannot_express.push_back(drafts::maxgram_mode_unexpressed(mg.mode));
        if (mg.bigram_fill && !p.level1.bigram_corpus.empty()) {
            s.cannot_express.push_back("Max-Gram's bigram fill after the copied continuation");
            s.fallbacks.push_back("SGLang's n-gram cache only");
        }
        s.notes.push_back(
            "SGLang's NGRAM drafting runs on CUDA only; its flag names (speculative_ngram_*) have "
            "changed between versions: check yours");
    } else if (eagle3) {
        eagle_worker("EAGLE3", true);
        s.notes.push_back(
            "EAGLE3 loads the head as a Hugging Face checkpoint (LlamaForCausalLMEagle3), not as GGUF: give the "
            "checkpoint the GGUF was converted from");
    } else if (block) {
        eagle_worker("DFLASH", true);
        if (p.level1.kind == drafts::DraftKind::dspark)
            s.cannot_express.push_back("DSpark's Markov and confidence heads: SGLang's DFLASH runs the block alone");
        s.notes.push_back(
            "DFLASH loads the block draft as a Hugging Face checkpoint, not as GGUF: give the checkpoint the GGUF "
            "was converted from");
    } else if (mtp) {
        eagle_worker("NEXTN", false);
        s.notes.push_back("NEXTN drafts with the model's own MTP layer (SGLang runs it through its EAGLE worker)");
    } else if (ngram) {
        const drafts::NgramSpec& n = p.level1.ngram;
        const bool lookup          = n.method == drafts::NgramMethod::prompt_lookup;
        int32_t lo = 1, hi = 12;  // SGLang's defaults
        if (lookup)
            lo = n.lookup_min, hi = n.lookup_max;
        else if (n.method == drafts::NgramMethod::mod)
            lo = hi = n.mod_n_match;
        else if (n.method != drafts::NgramMethod::suffix && n.method != drafts::NgramMethod::cache)
            lo = hi = n.size_n;
        args.push_back("--speculative-algorithm NGRAM");
        args.push_back("--speculative-num-draft-tokens " + std::to_string(draft_tokens));
        args.push_back("--speculative-ngram-min-match-window-size " + std::to_string(lo));
        args.push_back("--speculative-ngram-max-match-window-size " + std::to_string(hi));
        s.cannot_express.push_back(std::string(drafts::to_string(n.method)) +
                                   (lookup ? " (vLLM's longest-match rule)" : " (its own statistics and draft rules)"));
        s.fallbacks.push_back("SGLang's n-gram trie (matches of " + std::to_string(lo) + ".." + std::to_string(hi) +
                              " tokens, drafts by recency or frequency)");
        s.notes.push_back(
            "SGLang's NGRAM drafting runs on CUDA only; its flag names (speculative_ngram_*) have "
            "changed between versions: check yours");
    } else {
        eagle_worker("STANDALONE", true);
    }
    s.notes.push_back(
        "SGLang reads GGUF files (the target and the draft) only where its GGUF loader supports the "
        "architecture; otherwise convert them to checkpoints SGLang reads");
    if (cfg.context.n_ctx > 0) args.push_back("--context-length " + std::to_string(cfg.context.n_ctx));
    const model::SamplerConfig& sp = cfg.sampling;
    s.notes.push_back("sampling is per request: \"sampling_params\": {" +
                      (cfg.greedy() ? std::string("\"temperature\": 0")
                                    : "\"temperature\": " + num(sp.temperature) +
                                          ", \"top_k\": " + std::to_string(sp.top_k > 0 ? sp.top_k : -1) +
                                          ", \"top_p\": " + num(sp.top_p)) +
                      "}");
    s.draft_file         = maxgram || ngram || mtp ? "" : p.draft_file;
    s.needs_draft_export = p.draft_is_export;

    add_comment_block(s.text, p, s, "SGLang");
    s.text += "\n# server (OpenAI-compatible HTTP API)\n";
    append_lines(s.text, args, "python -m sglang.launch_server");
    return s;
}

}  // namespace speculum::exporting::detail
