// What every engine snippet starts from (internal to core/export): the level-1 draft and where its file is, the
// draft length the target verifies, the tree as rank paths, and the fallbacks common to every engine (cascades,
// horizontal k-matrix, lenience, adaptive γ, layer-skip sets, KV transforms).
#pragma once

#include "core/export/snippets.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace speculum::exporting::detail {

struct TreePlan {
    std::string kind;                         // "static", "top_k", "sequoia", "chain_second"
    std::vector<std::vector<int32_t>> paths;  // rank path of every draft node, parents first
    int32_t nodes          = 0;               // draft nodes (root not counted)
    int32_t depth          = 0;               // deepest draft level
    int32_t max_branching  = 0;               // most children of one node
    int32_t root_branching = 0;               // children of the root
};

struct Plan {
    const Manifest* manifest = nullptr;
    drafts::DraftSpec level1;      // the draft the engine runs
    int32_t gamma = 1;             // draft tokens per target pass (chain; after the fallbacks)
    std::optional<TreePlan> tree;  // the verification tree, when the manifest verifies trees
    std::string target;            // the target file
    std::string draft_file;        // the draft file ("" for Max-Gram)
    bool draft_is_export = false;  // the draft file is written by `export --format draft-gguf`
    bool draft_written   = false;  // ... and it already was (SnippetOptions::draft_written)
    std::string manifest_path;     // named in the "write the draft with" hint
    std::vector<std::string> cannot, fallback, notes;
};

Plan make_plan(const Manifest& m, const SnippetOptions& o);

// Helpers shared by the engine writers.
// A snippet for `engine` that starts with the plan's cannot-express, fallback and note lists.
inline EngineSnippet start_snippet(Engine engine, const Plan& p) {
    EngineSnippet s;
    s.engine         = engine;
    s.cannot_express = p.cannot;
    s.fallbacks      = p.fallback;
    s.notes          = p.notes;
    return s;
}
std::string shell_quote(const std::string& s);  // single-quoted unless the text is plain
std::string num(double v);                      // shortest text that reads back the same ("0.5", "4")
void add_comment_block(std::string& text, const Plan& p, const EngineSnippet& s, const std::string& engine_title);
void append_lines(std::string& text, const std::vector<std::string>& args, const std::string& program);

EngineSnippet llama_cpp_snippet(const Plan& p, const SnippetOptions& o);
EngineSnippet vllm_snippet(const Plan& p, const SnippetOptions& o);
EngineSnippet sglang_snippet(const Plan& p, const SnippetOptions& o);

}  // namespace speculum::exporting::detail
