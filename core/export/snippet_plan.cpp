// The engine-independent part of every snippet: fallbacks common to all engines, the draft file, the tree as
// rank paths, and the comment block (see snippet_plan.h).
#include "core/export/snippet_plan.h"

#include "core/drafts/dflash.h"

#include "core/drafts/eagle3.h"
#include "core/engine/tree_shapes.h"
#include "core/resources.h"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace speculum::exporting {

namespace detail {

namespace {

std::string list(const std::vector<int32_t>& v) {
    std::string s = "{";
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(v[i]);
    }
    return s + "}";
}

std::string describe(const drafts::DraftSpec& d) {
    return d.label.empty() ? d.describe() : d.label + " = " + d.describe();
}

TreePlan tree_plan(const engine::SpecConfig& cfg) {
    static const char* kinds[] = {"static", "top_k", "sequoia", "chain_second", "dynamic"};
    TreePlan t;
    t.kind = kinds[static_cast<int>(cfg.tree.kind)];
    const drafts::TreeShape shape =
        engine::explicit_shape(engine::make_tree_shape(cfg.tree, cfg.gamma.empty() ? 1 : cfg.gamma[0], cfg.tree.prior));
    std::vector<int32_t> children(shape.parent.size() + 1, 0);  // [0] = the root, [i + 1] = node i
    for (size_t i = 0; i < shape.parent.size(); ++i) {
        const int32_t par         = shape.parent[i];
        std::vector<int32_t> path = par < 0 ? std::vector<int32_t>{} : t.paths[size_t(par)];
        path.push_back(shape.rank[i]);
        t.depth = std::max<int32_t>(t.depth, static_cast<int32_t>(path.size()));
        t.paths.push_back(std::move(path));
        ++children[size_t(par + 1)];
    }
    // A dynamic tree grows as deep as its depth; its stand-in (the paths above) is only as deep as its first nodes.
    if (cfg.tree.kind == engine::TreeKind::dynamic) t.depth = std::max(t.depth, cfg.tree.depth);
    t.nodes          = static_cast<int32_t>(t.paths.size());
    t.root_branching = children[0];
    t.max_branching  = *std::max_element(children.begin(), children.end());
    return t;
}

// What the exported draft GGUF holds, in the terms a reader of the engine's docs knows.
std::string gguf_contents(const drafts::DraftSpec& d, int32_t n_layer) {
    std::vector<std::string> parts;
    if (d.prune.ratio > 0.0f) parts.push_back("pruned weights stored as zeros");
    if (d.weight_trunc_bits > 0 || d.weight_format == drafts::WeightFormat::bf16)
        parts.push_back("BF16 weights (ggml type 30)" +
                        (d.weight_trunc_bits > 0
                             ? " with " + std::to_string(d.weight_trunc_bits) + " mantissa bits cleared"
                             : std::string()));
    if (d.weight_format == drafts::WeightFormat::q8_0) parts.push_back("Q8_0 weights (ggml type 8)");
    if (d.weight_format == drafts::WeightFormat::mxfp4) parts.push_back("MXFP4 weights (ggml type 39)");
    if (d.exit_layer >= 0)
        parts.push_back("the first " + std::to_string(d.exit_layer + 1) + " layers" +
                        (n_layer > 0 ? " of " + std::to_string(n_layer) : std::string()) + " (block_count " +
                        std::to_string(d.exit_layer + 1) + ")");
    if (!d.skip_attn.empty() || !d.skip_ffn.empty()) parts.push_back("every sublayer (skip sets dropped)");
    std::string s;
    for (size_t i = 0; i < parts.size(); ++i) s += (i ? std::string(", ") : std::string()) + parts[i];
    return s;
}

bool gguf_transforms(const drafts::DraftSpec& d) {
    return d.prune.ratio > 0.0f || d.weight_trunc_bits > 0 || d.weight_format != drafts::WeightFormat::same ||
           d.exit_layer >= 0;
}

}  // namespace

Plan make_plan(const Manifest& m, const SnippetOptions& o) {
    const engine::SpecConfig& cfg = m.config;
    cfg.validate(m.model.n_layer > 0 ? m.model.n_layer : -1);
    Plan p;
    p.manifest      = &m;
    p.level1        = cfg.levels[0];
    p.target        = o.target.empty() ? m.model.path : o.target;
    p.manifest_path = o.manifest_path;
    p.draft_written = o.draft_written && !o.draft.empty();
    p.gamma         = cfg.draft_length(0);
    const size_t n  = cfg.levels.size();

    if (!cfg.k_matrix.empty()) {
        p.cannot.push_back("a horizontal cascade (k_matrix: the target's draft of " + std::to_string(p.gamma) +
                           " positions filled by several levels)");
        p.fallback.push_back("level 1 alone drafts all " + std::to_string(p.gamma) +
                             " positions of the target's draft");
    }
    if (n > 1) {
        p.cannot.push_back("a " + std::to_string(n + 1) +
                           "-model vertical cascade (each level drafting for the level above)");
        p.fallback.push_back("level 1 (" + describe(p.level1) + ") drafts " + std::to_string(p.gamma) +
                             " tokens for the target; levels 2.." + std::to_string(n) + " are dropped");
        if (std::any_of(cfg.lenience.begin(), cfg.lenience.end(), [](float l) { return l != 1.0f; }))
            p.cannot.push_back(
                "lenience at intermediate reviewers (dropped with the cascade; the target's review stays exact)");
    }
    if (cfg.adaptive_gamma.enabled) {
        p.cannot.push_back("adaptive draft length (+2 after a fully accepted draft, -1 after a rejection, in [" +
                           std::to_string(cfg.adaptive_gamma.min) + ", " + std::to_string(cfg.adaptive_gamma.max) +
                           "])");
        p.fallback.push_back("a fixed draft length of " + std::to_string(p.gamma));
    }

    const drafts::DraftSpec& d = p.level1;
    if (d.kind == drafts::DraftKind::self) {
        if (!d.skip_attn.empty() || !d.skip_ffn.empty()) {
            p.cannot.push_back("a layer-skip self-draft (attention skipped in layers " + list(d.skip_attn) +
                               ", FFN in " + list(d.skip_ffn) + "): neither the engine nor GGUF can skip sublayers");
            p.fallback.push_back(
                "the exported draft keeps every sublayer (export --format draft-gguf "
                "--drop-unsupported): slower, and it accepts differently than measured");
        }
        if (d.kv_trunc_bits > 0 || d.kv_drop_ratio > 0.0f) {
            p.cannot.push_back(
                "the draft's KV-cache transforms (mantissa truncation t_kv = " + std::to_string(d.kv_trunc_bits) +
                ", dropped values " + num(d.kv_drop_ratio * 100.0) + "%)");
            p.fallback.push_back("the draft keeps a full-precision KV cache");
        }
        if (gguf_transforms(d) || !d.skip_attn.empty() || !d.skip_ffn.empty()) {
            if (o.draft.empty()) {
                const std::filesystem::path t(p.target);
                p.draft_file = (t.parent_path() / (t.stem().string() + "-draft.gguf")).string();
            } else {
                p.draft_file = o.draft;
            }
            p.draft_is_export = true;
            p.notes.push_back(
                "the draft file is the level-1 self-draft as a standalone GGUF with the target's "
                "tokenizer: " +
                gguf_contents(d, m.model.n_layer));
        } else {
            p.draft_file = p.target;
            p.notes.push_back("the level-1 draft is the target itself (an identity self-draft): expect no speedup");
        }
    } else if (d.kind == drafts::DraftKind::model) {
        p.draft_file = d.model_path;
    } else if (d.kind == drafts::DraftKind::eagle3) {
        // The head's own GGUF (llama.cpp's EAGLE-3 layout): the engines load it beside the target.
        try {
            p.draft_file = drafts::eagle3_head_path(d.model_path);
        } catch (const std::exception&) {
            p.draft_file = std::filesystem::path(kBundledEagle3Head).filename().string();
        }
    } else if (d.kind == drafts::DraftKind::dflash || d.kind == drafts::DraftKind::dspark) {
        // The block draft's own GGUF (llama.cpp's dflash layout), loaded beside the target like a head.
        const bool dspark = d.kind == drafts::DraftKind::dspark;
        try {
            p.draft_file = drafts::dflash_path(d.model_path, dspark);
        } catch (const std::exception&) {
            p.draft_file = std::filesystem::path(dspark ? kBundledDspark : kBundledDflash).filename().string();
        }
    }
    if (d.head_vocab > 0) {
        p.cannot.push_back("FR-Spec's reduced draft head (the " + std::to_string(d.head_vocab) +
                           " most frequent tokens): the engines compute the draft's full LM head (SGLang's "
                           "--speculative-token-map restricts EAGLE heads only)");
        p.fallback.push_back("the draft's full LM head: each draft pass costs more than Speculum measured");
    }
    if (d.kind == drafts::DraftKind::mtp) {
        // The engines read NextN layers only from the model's own file (llama.cpp, vLLM and SGLang alike).
        const std::string merge = "speculum-cli export --format draft-gguf --config " + p.manifest_path + " -o " +
                                  std::filesystem::path(p.target).stem().string() + "-mtp.gguf";
        p.notes.push_back(
            d.model_path.empty()
                ? "level 1 drafts with the target's own NextN layer; for a target without one (such as the bundled "
                  "target) Speculum runs the bundled MTP module, which the engines cannot load apart: serve the "
                  "target with it built in, written by " +
                      merge
                : "level 1's NextN layer is the MTP module " + d.model_path +
                      ", stored apart from the target; the engines read NextN layers only from the model's own file: "
                      "serve the target with the module built in, written by " +
                      merge);
    }
    if (cfg.verification == engine::Verification::tree) p.tree = tree_plan(cfg);
    if (cfg.verification == engine::Verification::cats)
        p.notes.push_back(
            "CATS's three stages (the target's first layers draft, a shallow verifier adds corrections, the rest "
            "verifies) run in Speculum only; the export is the plain chain of gamma tokens");
    if (p.tree && cfg.tree.kind == engine::TreeKind::sequoia)
        p.notes.push_back(
            "Sequoia re-fits its tree from the acceptance measured during a run; the exported tree is the "
            "one for the prior acceptance by rank");
    return p;
}

std::string shell_quote(const std::string& s) {
    if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@") ==
                          std::string::npos)
        return s;
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

std::string num(double v) {
    std::ostringstream s;
    s.precision(6);
    s << v;
    return s.str();
}

void add_comment_block(std::string& text, const Plan& p, const EngineSnippet& s, const std::string& engine_title) {
    const Manifest& m             = *p.manifest;
    const engine::SpecConfig& cfg = m.config;
    auto line                     = [&](const std::string& l) { text += "# " + l + "\n"; };
    line(engine_title + ": speculative decoding exported by " + (m.generator.empty() ? "speculum" : m.generator) +
         (m.name.empty() ? "" : " from \"" + m.name + "\"") + " (manifest version " + std::to_string(m.version) + ")");
    line("target: " + p.target + (m.model.sha256.empty() ? "" : " (sha256 " + m.model.sha256 + ")"));
    const std::string level1 = describe(p.level1);
    if (!s.draft_file.empty()) {
        line("draft:  " + s.draft_file + " (level 1: " + level1 + ")");
        if (s.needs_draft_export && !p.draft_written)
            line("        write it first: speculum-cli export --format draft-gguf --config " + p.manifest_path +
                 " -o " + s.draft_file);
    } else {
        if (p.level1.kind == drafts::DraftKind::mtp && !p.level1.model_path.empty())
            line(
                "draft:  none; level 1 is an MTP module's multi-token-prediction layer, built into the target's "
                "file (" +
                level1 + ")");
        else if (p.level1.kind == drafts::DraftKind::mtp)
            line("draft:  none; level 1 is the target's own multi-token-prediction layer (" + level1 + ")");
        else if (p.level1.kind == drafts::DraftKind::ngram)
            line("draft:  none; level 1 is n-gram drafting the engine runs itself (" + level1 + ")");
        else
            line("draft:  none; the engine's n-gram drafting stands in for level 1 (" + level1 + ")");
    }
    std::string verify = p.tree ? "tree (" + p.tree->kind + ", " + std::to_string(p.tree->nodes) + " nodes, depth " +
                                      std::to_string(p.tree->depth) + ")"
                                : "chain of " + std::to_string(p.gamma) + " draft tokens per step";
    verify += cfg.greedy() ? ", greedy" : ", sampled at temperature " + num(cfg.sampling.temperature);
    line("verification: " + verify);
    auto section = [&](const char* title, const std::vector<std::string>& items, const char* empty) {
        if (items.empty()) {
            if (empty) line(std::string(title) + " " + empty);
            return;
        }
        line(title);
        for (const auto& i : items) line("  - " + i);
    };
    section("cannot express:", s.cannot_express, "nothing in this manifest");
    section("falls back to:", s.fallbacks, nullptr);
    section("notes:", s.notes, nullptr);
}

void append_lines(std::string& text, const std::vector<std::string>& args, const std::string& program) {
    text += program;
    for (const auto& a : args) text += " \\\n    " + a;
    text += "\n";
}

}  // namespace detail

const char* engine_name(Engine e) {
    switch (e) {
        case Engine::llama_cpp:
            return "llama.cpp";
        case Engine::vllm:
            return "vllm";
        case Engine::sglang:
            return "sglang";
    }
    return "?";
}

std::optional<Engine> parse_engine(const std::string& name) {
    if (name == "llama.cpp" || name == "llama-cpp" || name == "llamacpp") return Engine::llama_cpp;
    if (name == "vllm") return Engine::vllm;
    if (name == "sglang") return Engine::sglang;
    return std::nullopt;
}

std::string token_tree_literal(const std::vector<std::vector<int32_t>>& paths) {
    std::string s = "[";
    for (size_t i = 0; i < paths.size(); ++i) {
        s += i ? ", (" : "(";
        for (size_t k = 0; k < paths[i].size(); ++k) s += (k ? ", " : "") + std::to_string(paths[i][k]);
        s += paths[i].size() == 1 ? ",)" : ")";
    }
    return s + "]";
}

EngineSnippet make_snippet(Engine e, const Manifest& m, const SnippetOptions& options) {
    detail::Plan p = detail::make_plan(m, options);
    switch (e) {
        case Engine::llama_cpp:
            return detail::llama_cpp_snippet(p, options);
        case Engine::vllm:
            return detail::vllm_snippet(p, options);
        case Engine::sglang:
            return detail::sglang_snippet(p, options);
    }
    throw std::invalid_argument("unknown engine");
}

}  // namespace speculum::exporting
