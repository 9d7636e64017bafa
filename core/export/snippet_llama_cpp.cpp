// llama.cpp snippet: llama-server flags and the one-shot example programs (speculative-simple, speculative for
// trees, lookup for n-gram drafting), with what llama.cpp cannot express as comments.
#include "core/export/snippet_plan.h"

namespace speculum::exporting::detail {

namespace {

// Context and sampling flags shared by every program.
std::vector<std::string> common_flags(const engine::SpecConfig& cfg, bool draft_model) {
    std::vector<std::string> a;
    if (cfg.context.n_ctx > 0)
        a.push_back("-c " + std::to_string(cfg.context.n_ctx) +
                    (draft_model ? " -cd " + std::to_string(cfg.context.n_ctx) : ""));
    const model::SamplerConfig& s = cfg.sampling;
    if (cfg.greedy()) {
        a.push_back("--temp 0");
    } else {
        std::string f = "--temp " + num(s.temperature) + " --top-k " + std::to_string(s.top_k) + " --top-p " +
                        num(s.top_p) + " --seed " + std::to_string(s.seed);
        a.push_back(f);
    }
    return a;
}

// llama.cpp's --spec-type flags for an n-gram level (the per-type flags of 2026 builds); what llama.cpp cannot
// express of the method goes into the snippet's lists.
std::vector<std::string> ngram_flags(const drafts::NgramSpec& n, int32_t gamma, EngineSnippet& s) {
    using drafts::NgramMethod;
    const std::string type = drafts::to_string(n.method);
    auto sizes             = [&](const std::string& t) {
        return "--spec-ngram-" + t + "-size-n " + std::to_string(n.size_n) + " --spec-ngram-" + t + "-size-m " +
               std::to_string(n.size_m);
    };
    auto cut_note = [&](int32_t longest, const std::string& what) {
        if (gamma < longest)
            s.cannot_express.push_back("Speculum cut each draft to gamma = " + std::to_string(gamma) +
                                       " tokens; llama.cpp drafts up to " + what + " = " + std::to_string(longest) +
                                       " (the n-gram types ignore --spec-draft-n-max)");
    };
    switch (n.method) {
        case NgramMethod::simple:
            cut_note(n.size_m, "size-m");
            return {"--spec-type ngram-simple", sizes("simple")};
        case NgramMethod::map_k:
            cut_note(n.size_m, "size-m");
            return {"--spec-type ngram-map-k", sizes("map-k")};
        case NgramMethod::map_k4v:
            cut_note(n.size_m, "size-m");
            s.notes.push_back(
                "Speculum's ngram-map-k4v drafts the dominant continuation; llama.cpp builds without the fix of its "
                "issue #28431 copy the latest occurrence's instead (see docs/engine.md)");
            return {"--spec-type ngram-map-k4v",
                    sizes("map-k4v") + " --spec-ngram-map-k4v-min-hits " + std::to_string(n.min_hits)};
        case NgramMethod::mod:
            cut_note(n.mod_n_max, "n-max");
            if (gamma < n.mod_n_min)
                s.cannot_express.push_back(
                    "a shortest draft of min(n-min, gamma) = " + std::to_string(gamma) +
                    " tokens: llama.cpp drops drafts shorter than n-min = " + std::to_string(n.mod_n_min));
            return {"--spec-type ngram-mod", "--spec-ngram-mod-n-match " + std::to_string(n.mod_n_match) +
                                                 " --spec-ngram-mod-n-min " + std::to_string(n.mod_n_min) +
                                                 " --spec-ngram-mod-n-max " + std::to_string(n.mod_n_max)};
        case NgramMethod::cache: {
            std::vector<std::string> f{"--spec-type ngram-cache"};
            std::string files;
            if (!n.static_cache.empty()) files += "-lcs " + shell_quote(n.static_cache);
            if (!n.dynamic_cache.empty())
                files += std::string(files.empty() ? "" : " ") + "-lcd " + shell_quote(n.dynamic_cache);
            if (!files.empty()) f.push_back(files);
            if (gamma != 8)
                s.cannot_express.push_back("ngram-cache drafts of " + std::to_string(gamma) +
                                           " tokens in llama-server, which drafts 8 (llama-lookup takes --draft-max)");
            if (n.cache_update)
                s.notes.push_back(
                    "llama-server never writes the dynamic cache back; llama-lookup merges the run into -lcd at exit");
            return f;
        }
        case NgramMethod::prompt_lookup:
            s.cannot_express.push_back("vLLM's prompt lookup (the longest match of " + std::to_string(n.lookup_min) +
                                       ".." + std::to_string(n.lookup_max) + " tokens, earliest occurrence)");
            s.fallbacks.push_back("ngram-simple with a key of " + std::to_string(n.lookup_min) +
                                  " tokens (its most recent occurrence)");
            return {"--spec-type ngram-simple", "--spec-ngram-simple-size-n " + std::to_string(n.lookup_min) +
                                                    " --spec-ngram-simple-size-m " + std::to_string(gamma)};
        case NgramMethod::suffix:
            s.cannot_express.push_back("suffix decoding (suffix trees over the sequence and earlier responses)");
            s.fallbacks.push_back("ngram-mod, llama.cpp's drafter that also learns across requests");
            return {
                "--spec-type ngram-mod",
                "--spec-ngram-mod-n-match 4 --spec-ngram-mod-n-min 1 --spec-ngram-mod-n-max " + std::to_string(gamma)};
    }
    return {};
}

}  // namespace

EngineSnippet llama_cpp_snippet(const Plan& p, const SnippetOptions& o) {
    const engine::SpecConfig& cfg = p.manifest->config;
    EngineSnippet s               = start_snippet(Engine::llama_cpp, p);
    const bool maxgram            = p.level1.kind == drafts::DraftKind::maxgram;
    const bool ngram              = p.level1.kind == drafts::DraftKind::ngram;
    const bool statistical        = maxgram || ngram;
    const bool mtp                = p.level1.kind == drafts::DraftKind::mtp;
    const bool eagle3             = p.level1.kind == drafts::DraftKind::eagle3;
    const bool dspark             = p.level1.kind == drafts::DraftKind::dspark;
    const bool block              = p.level1.kind == drafts::DraftKind::dflash || dspark;
    const bool head               = eagle3 || block;  // -md plus --spec-type: the draft reads the target's states
    const char* head_type         = eagle3 ? "draft-eagle3" : dspark ? "draft-dspark" : "draft-dflash";
    int32_t gamma                 = p.gamma;

    if (p.tree) {
        s.cannot_express.push_back(
            (p.tree->kind == "dynamic"
                 ? "an EAGLE-2 dynamic tree (" + std::to_string(p.tree->nodes) + " nodes, depth " +
                       std::to_string(p.tree->depth) + ")"
                 : "a fixed token-tree shape (" + p.tree->kind + ", " + std::to_string(p.tree->nodes) + " nodes)") +
            ": llama-server verifies chains; the llama-speculative example grows its tree by --draft-p-split, not by "
            "a given shape");
        gamma = p.tree->depth;
        s.fallbacks.push_back("the server verifies a chain as deep as the tree (" + std::to_string(gamma) + " tokens)" +
                              (head ? std::string(", as does the one-shot ") + head_type
                                    : "; the one-shot llama-speculative runs a tree of " +
                                          std::to_string(p.tree->root_branching) + " branches (-np)"));
    }
    std::vector<std::string> type_flags;
    if (maxgram) {
        const auto& mg    = p.level1.maxgram;
        const bool bigram = mg.bigram_fill && !p.level1.bigram_corpus.empty();
        s.cannot_express.push_back("Max-Gram's match lengths (" + std::to_string(mg.min_match) + ".." +
                                   std::to_string(mg.max_match) + " tokens)" + (bigram ? " and its bigram fill" : ""));
        s.cannot_express.push_back(drafts::maxgram_mode_unexpressed(mg.mode));
        s.fallbacks.push_back(
            "llama.cpp's own n-gram drafting (server: --spec-type ngram-simple; one-shot: "
            "llama-lookup with its fixed 1..4-token n-grams)");
        type_flags = {"--spec-type ngram-simple", "--spec-ngram-simple-size-n " + std::to_string(mg.min_match) +
                                                      " --spec-ngram-simple-size-m " + std::to_string(gamma)};
    }
    if (ngram) type_flags = ngram_flags(p.level1.ngram, gamma, s);
    if (statistical)
        s.notes.push_back(
            "--spec-type and its per-type flags need a llama.cpp build from 2026 or later; builds from early 2026 "
            "take one type and shared --spec-ngram-size-n/-size-m/-min-hits, older ones have no n-gram drafting");
    if (!cfg.greedy())
        s.notes.push_back(
            "sampled runs: llama.cpp drafts greedily and accepts a draft token when the target's sample "
            "equals it; the output follows the target's distribution, but acceptance differs from "
            "Speculum's rejection sampling");
    if (mtp)
        s.notes.push_back(
            "draft-mtp drafts with the target's NextN layer (llama.cpp detects it from blk.{L-1}.nextn.eh_proj), "
            "chaining it --spec-draft-n-max steps and stopping below --spec-draft-p-min (draft-mtp-adaptive adds "
            "hysteresis to that stop); llama.cpp runs it for the architectures it implements NextN for (qwen35 and "
            "qwen35moe, which Speculum runs too; GLM-4.5, DeepSeek-V3, MiMo): a llama-architecture file with NextN "
            "blocks, as Speculum writes for tests, is not among them");
    if (eagle3)
        s.notes.push_back(
            "draft-eagle3 loads the head (general.architecture eagle3, llama.cpp's convert_hf_to_gguf.py layout) "
            "with -md and feeds it the target's streams at the head's eagle3.extract_layers; it needs a llama.cpp "
            "build with EAGLE-3 support (2026); llama.cpp drafts the head as a chain");
    if (block)
        s.notes.push_back(std::string(head_type) +
                          " loads the block draft (general.architecture dflash) with -md, injects the target's "
                          "inputs of the layers dflash.target_layers names into the draft's cache and drafts the "
                          "block in one pass; it clamps --spec-draft-n-max to the trained block (block_size - 1 for "
                          "DFlash, block_size for DSpark) and needs a llama.cpp build from late 2026" +
                          (dspark ? "; draft-dspark stops the block at the first position whose confidence is below "
                                    "--spec-draft-p-min (its conf-min)"
                                  : ""));
    if (!statistical)
        s.notes.push_back(
            "--spec-draft-p-min is always written: llama.cpp's default (0.75 in older builds) would otherwise stop "
            "drafts that Speculum continued");
    if (!statistical)
        s.notes.push_back(
            "flags as in llama.cpp's current common/arg.cpp (--spec-draft-n-max/-n-min/-p-min); builds before "
            "2026 spell them --draft-max/--draft-min/--draft-p-min");
    s.draft_file         = statistical || mtp ? "" : p.draft_file;
    s.needs_draft_export = p.draft_is_export;

    add_comment_block(s.text, p, s, "llama.cpp");
    const std::string draft_flags =
        "--spec-draft-n-max " + std::to_string(gamma) + " --spec-draft-n-min 0 --spec-draft-p-min " + num(cfg.p_min);
    std::vector<std::string> server{"-m " + shell_quote(p.target)};
    if (statistical) {
        for (const auto& f : type_flags) server.push_back(f);
    } else if (mtp) {
        server.push_back("--spec-type draft-mtp");
        server.push_back(draft_flags);
    } else if (head) {
        server.push_back("-md " + shell_quote(s.draft_file));
        server.push_back(std::string("--spec-type ") + head_type);
        server.push_back(draft_flags);
    } else {
        server.push_back("-md " + shell_quote(s.draft_file));
        server.push_back(draft_flags);
    }
    for (const auto& f : common_flags(cfg, !statistical)) server.push_back(f);
    s.text += "\n# server (OpenAI-compatible HTTP API)\n";
    append_lines(s.text, server, "llama-server");

    // One-shot programs: llama-lookup for Max-Gram and ngram-cache; the other n-gram types run in the server only.
    const bool lookup = maxgram || (ngram && p.level1.ngram.method == drafts::NgramMethod::cache);
    if ((ngram && !lookup) || mtp) return s;  // server only
    std::vector<std::string> one{"-m " + shell_quote(p.target)};
    std::string program = "llama-speculative-simple";
    if (lookup) {
        program = "llama-lookup";
        one.push_back("--draft-max " + std::to_string(gamma));
        if (ngram) {
            const auto& n = p.level1.ngram;
            if (!n.static_cache.empty()) one.push_back("-lcs " + shell_quote(n.static_cache));
            if (!n.dynamic_cache.empty()) one.push_back("-lcd " + shell_quote(n.dynamic_cache));
        }
    } else {
        one.push_back("-md " + shell_quote(s.draft_file));
        if (head) one.push_back(std::string("--spec-type ") + head_type);
        one.push_back(draft_flags);
        if (p.tree && !head) {
            program = "llama-speculative";
            one.push_back("-np " + std::to_string(p.tree->root_branching) + " --draft-p-split 0.1");
        }
    }
    for (const auto& f : common_flags(cfg, !statistical)) one.push_back(f);
    const std::string prompt = !o.prompt.empty() ? o.prompt : !cfg.prompt.empty() ? cfg.prompt : "PROMPT";
    one.push_back("-n " + std::to_string(cfg.max_new_tokens) + " -p " + shell_quote(prompt));
    s.text += "\n# one-shot command line (llama.cpp examples)\n";
    append_lines(s.text, one, program);
    return s;
}

}  // namespace speculum::exporting::detail
