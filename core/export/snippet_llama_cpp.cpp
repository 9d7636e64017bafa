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

}  // namespace

EngineSnippet llama_cpp_snippet(const Plan& p, const SnippetOptions& o) {
    const engine::SpecConfig& cfg = p.manifest->config;
    EngineSnippet s               = start_snippet(Engine::llama_cpp, p);
    const bool maxgram            = p.level1.kind == drafts::DraftKind::maxgram;
    int32_t gamma                 = p.gamma;

    if (p.tree) {
        s.cannot_express.push_back("a fixed token-tree shape (" + p.tree->kind + ", " + std::to_string(p.tree->nodes) +
                                   " nodes): llama-server verifies chains; the llama-speculative example grows its "
                                   "tree by --draft-p-split, not by a given shape");
        gamma = p.tree->depth;
        s.fallbacks.push_back("the server verifies a chain as deep as the tree (" + std::to_string(gamma) +
                              " tokens); the one-shot llama-speculative runs a tree of " +
                              std::to_string(p.tree->root_branching) + " branches (-np)");
    }
    if (maxgram) {
        const auto& mg    = p.level1.maxgram;
        const bool bigram = mg.bigram_fill && !p.level1.bigram_corpus.empty();
        s.cannot_express.push_back("Max-Gram's match lengths (" + std::to_string(mg.min_match) + ".." +
                                   std::to_string(mg.max_match) + " tokens)" + (bigram ? " and its bigram fill" : ""));
        s.cannot_express.push_back(drafts::maxgram_mode_unexpressed(mg.mode));
        s.fallbacks.push_back(
            "llama.cpp's own n-gram drafting (server: --spec-type ngram-simple; one-shot: "
            "llama-lookup with its fixed 1..4-token n-grams)");
        s.notes.push_back(
            "--spec-type needs a llama.cpp build from 2026 or later; older servers have no n-gram "
            "drafting");
    }
    if (!cfg.greedy())
        s.notes.push_back(
            "sampled runs: llama.cpp drafts greedily and accepts a draft token when the target's sample "
            "equals it; the output follows the target's distribution, but acceptance differs from "
            "Speculum's rejection sampling");
    if (!maxgram)
        s.notes.push_back(
            "--draft-p-min is always written: llama.cpp's default (0.75 or more, by version) would "
            "otherwise stop drafts that Speculum continued");
    s.notes.push_back(
        "flags as in llama.cpp's common/arg.cpp (--draft-max/--draft-min/--draft-p-min); newer builds "
        "may name them --spec-draft-n-max/-n-min/-p-min");
    s.draft_file         = maxgram ? "" : p.draft_file;
    s.needs_draft_export = p.draft_is_export;

    add_comment_block(s.text, p, s, "llama.cpp");
    const std::string draft_flags =
        "--draft-max " + std::to_string(gamma) + " --draft-min 0" + (maxgram ? "" : " --draft-p-min " + num(cfg.p_min));
    std::vector<std::string> server{"-m " + shell_quote(p.target)};
    if (maxgram)
        server.push_back("--spec-type ngram-simple");
    else
        server.push_back("-md " + shell_quote(s.draft_file));
    server.push_back(draft_flags);
    for (const auto& f : common_flags(cfg, !maxgram)) server.push_back(f);
    s.text += "\n# server (OpenAI-compatible HTTP API)\n";
    append_lines(s.text, server, "llama-server");

    std::vector<std::string> one{"-m " + shell_quote(p.target)};
    std::string program = "llama-speculative-simple";
    if (maxgram) {
        program = "llama-lookup";
        one.push_back("--draft-max " + std::to_string(gamma));
    } else {
        one.push_back("-md " + shell_quote(s.draft_file));
        one.push_back(draft_flags);
        if (p.tree) {
            program = "llama-speculative";
            one.push_back("-np " + std::to_string(p.tree->root_branching) + " --draft-p-split 0.1");
        }
    }
    for (const auto& f : common_flags(cfg, !maxgram)) one.push_back(f);
    const std::string prompt = !o.prompt.empty() ? o.prompt : !cfg.prompt.empty() ? cfg.prompt : "PROMPT";
    one.push_back("-n " + std::to_string(cfg.max_new_tokens) + " -p " + shell_quote(prompt));
    s.text += "\n# one-shot command line (llama.cpp examples)\n";
    append_lines(s.text, one, program);
    return s;
}

}  // namespace speculum::exporting::detail
