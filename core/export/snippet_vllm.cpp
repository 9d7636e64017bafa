// vLLM snippet: the speculative_config object (method, model, num_speculative_tokens, draft_tensor_parallel_size;
// prompt_lookup_min/max for n-gram drafting) on a `vllm serve` line, with what vLLM cannot express as comments.
#include "core/export/snippet_plan.h"

namespace speculum::exporting::detail {

EngineSnippet vllm_snippet(const Plan& p, const SnippetOptions&) {
    const engine::SpecConfig& cfg = p.manifest->config;
    EngineSnippet s               = start_snippet(Engine::vllm, p);
    const bool maxgram            = p.level1.kind == drafts::DraftKind::maxgram;
    const bool ngram              = p.level1.kind == drafts::DraftKind::ngram;
    const bool mtp                = p.level1.kind == drafts::DraftKind::mtp;
    const bool eagle3             = p.level1.kind == drafts::DraftKind::eagle3;
    const bool dspark             = p.level1.kind == drafts::DraftKind::dspark;
    const bool block              = p.level1.kind == drafts::DraftKind::dflash || dspark;
    int32_t gamma                 = p.gamma;

    if (p.tree && ngram) {
        s.cannot_express.push_back("a token tree: vLLM's n-gram and suffix proposers draft one chain");
        gamma = p.tree->depth;
        s.fallbacks.push_back("a chain as deep as the tree: num_speculative_tokens = " + std::to_string(gamma));
    } else if (p.tree && eagle3) {
        gamma = p.tree->depth;
        if (cfg.tree.kind == engine::TreeKind::dynamic) {
            s.cannot_express.push_back("EAGLE-2's dynamic tree: vLLM's EAGLE proposers verify a static tree");
            s.fallbacks.push_back("the dynamic tree's static stand-in as speculative_token_tree (" +
                                  std::to_string(p.tree->nodes) + " nodes)");
        }
    } else if (p.tree && block) {
        s.cannot_express.push_back(
            "a token tree from the block's per-position top-k: vLLM verifies the block as a chain");
        gamma = p.tree->depth;
        s.fallbacks.push_back("the block as a chain as deep as the tree: num_speculative_tokens = " +
                              std::to_string(gamma));
    } else if (p.tree) {
        s.cannot_express.push_back(
            "a token tree with a separate draft model (speculative_token_tree drives vLLM's "
            "EAGLE-style proposers, not method \"draft_model\")");
        gamma = p.tree->depth;
        s.fallbacks.push_back("a chain as deep as the tree: num_speculative_tokens = " + std::to_string(gamma));
        s.notes.push_back("the tree as a speculative_token_tree literal, for EAGLE-style drafts: " +
                          token_tree_literal(p.tree->paths));
    }
    if (!maxgram && !ngram && cfg.p_min > 0.0f) {
        s.cannot_express.push_back("stopping a draft below a draft probability (p_min = " + num(cfg.p_min) + ")");
        s.fallbacks.push_back("full-length drafts of " + std::to_string(gamma) + " tokens");
    }
    nlohmann::ordered_json c;
    if (maxgram) {
        const auto& mg              = p.level1.maxgram;
        c["method"]                 = "ngram";
        c["num_speculative_tokens"] = gamma;
        c["prompt_lookup_max"]      = mg.max_match;
        c["prompt_lookup_min"]      = mg.min_match;
        s.cannot_express.push_back(drafts::maxgram_mode_unexpressed(mg.mode));
        if (mg.bigram_fill && !p.level1.bigram_corpus.empty()) {
            s.cannot_express.push_back("Max-Gram's bigram fill after the copied continuation");
            s.fallbacks.push_back("prompt lookup only (method \"ngram\")");
        }
    } else if (eagle3) {
        c["method"]                 = "eagle3";
        c["model"]                  = p.draft_file;
        c["num_speculative_tokens"] = gamma;
        if (p.tree) c["speculative_token_tree"] = token_tree_literal(p.tree->paths);
        s.notes.push_back(
            "method \"eagle3\" loads the head as a Hugging Face checkpoint (LlamaForCausalLMEagle3): vLLM has no "
            "GGUF loader for EAGLE-3 heads, so give the checkpoint the GGUF was converted from");
    } else if (block) {
        c["method"]                 = dspark ? "dspark" : "dflash";
        c["model"]                  = p.draft_file;
        c["num_speculative_tokens"] = gamma;
        s.notes.push_back(std::string("method \"") + (dspark ? "dspark" : "dflash") +
                          "\" loads the block draft as a Hugging Face checkpoint (the one the GGUF was converted "
                          "from), not as GGUF, and needs a vLLM release from late 2026");
    } else if (mtp) {
        c["method"]                 = "mtp";
        c["num_speculative_tokens"] = gamma;
        s.notes.push_back(
            "method \"mtp\" drafts with the model's own MTP layers; older vLLM versions name it per architecture "
            "(\"deepseek_mtp\", \"qwen3_next_mtp\", ...)");
    } else if (ngram) {
        const drafts::NgramSpec& n = p.level1.ngram;
        if (n.method == drafts::NgramMethod::suffix) {
            c["method"]                              = "suffix";
            c["num_speculative_tokens"]              = gamma;
            c["suffix_decoding_max_tree_depth"]      = n.suffix_max_depth;
            c["suffix_decoding_max_cached_requests"] = n.suffix_max_cached;
            c["suffix_decoding_max_spec_factor"]     = std::stod(num(n.suffix_spec_factor));  // "0.1", not 0.100000001
            c["suffix_decoding_min_token_prob"]      = std::stod(num(n.suffix_min_prob));
            s.notes.push_back("method \"suffix\" needs the arctic-inference package beside vLLM");
        } else {
            // vLLM's ngram proposer: the longest recurring suffix in [min, max], earliest occurrence.
            const bool lookup = n.method == drafts::NgramMethod::prompt_lookup;
            const int32_t lo  = lookup ? n.lookup_min : n.method == drafts::NgramMethod::mod ? n.mod_n_match : n.size_n;
            const int32_t hi  = lookup ? n.lookup_max : lo;
            c["method"]       = "ngram";
            c["num_speculative_tokens"] = gamma;
            c["prompt_lookup_max"]      = hi;
            c["prompt_lookup_min"]      = lo;
            if (!lookup) {
                s.cannot_express.push_back(std::string("llama.cpp's ") + drafts::to_string(n.method) +
                                           " (its n-gram statistics and draft rules)");
                s.fallbacks.push_back("prompt lookup with a match of exactly " + std::to_string(lo) +
                                      " tokens (vLLM takes the earliest occurrence)");
            }
        }
    } else {
        c["method"]                     = "draft_model";
        c["model"]                      = p.draft_file;
        c["num_speculative_tokens"]     = gamma;
        c["draft_tensor_parallel_size"] = 1;
    }
    s.notes.push_back(
        "vLLM reads GGUF files (the target and the draft) only through its experimental GGUF loader "
        "(Llama-family architectures, --tokenizer of the original model); otherwise convert them to "
        "checkpoints vLLM reads");
    const model::SamplerConfig& sp = cfg.sampling;
    s.notes.push_back("sampling is per request: SamplingParams(" +
                      (cfg.greedy() ? std::string("temperature=0")
                                    : "temperature=" + num(sp.temperature) +
                                          ", top_k=" + std::to_string(sp.top_k > 0 ? sp.top_k : -1) +
                                          ", top_p=" + num(sp.top_p) + ", seed=" + std::to_string(sp.seed)) +
                      ")");
    s.config             = c;
    s.draft_file         = maxgram || ngram || mtp ? "" : p.draft_file;  // eagle3: the head
    s.needs_draft_export = p.draft_is_export;

    add_comment_block(s.text, p, s, "vLLM");
    std::vector<std::string> args;
    if (cfg.context.n_ctx > 0) args.push_back("--max-model-len " + std::to_string(cfg.context.n_ctx));
    args.push_back("--speculative-config " + shell_quote(c.dump()));
    s.text += "\n# server (OpenAI-compatible HTTP API)\n";
    append_lines(s.text, args, "vllm serve " + shell_quote(p.target));
    s.text += "\n# Python: LLM(model=\"" + p.target + "\", speculative_config=" + c.dump() + ")\n";
    return s;
}

}  // namespace speculum::exporting::detail
