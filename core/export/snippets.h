// Engine snippets from a manifest: llama.cpp CLI and server flags, a vLLM speculative_config, SGLang server flags.
// Each snippet says, as comments and as lists, what the engine cannot express (cascades, layer-skip self-drafts,
// KV transforms, exact tree shapes, ...) and what the export falls back to. Flag names: docs/export.md.
#pragma once

#include "core/export/manifest.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace speculum::exporting {

enum class Engine { llama_cpp, vllm, sglang };

const char* engine_name(Engine e);                            // "llama.cpp", "vllm", "sglang"
std::optional<Engine> parse_engine(const std::string& name);  // also accepts "llama-cpp", "llamacpp"

struct SnippetOptions {
    std::string target;  // the target as the engine loads it; "" = the manifest's model.path
    std::string draft;   // where the exported self-draft GGUF lives; "" = "<target stem>-draft.gguf" beside it
    std::string manifest_path = "manifest.json";  // named in the "write the draft with" hint
    bool draft_written        = false;  // `draft` was already written (the app's Build draft GGUF): no such hint
    std::string prompt;                 // llama.cpp one-shot examples' -p; "" = the config's text prompt, else "PROMPT"
    bool operator==(const SnippetOptions&) const = default;
};

struct EngineSnippet {
    Engine engine = Engine::llama_cpp;
    std::string text;                         // ready to paste: commands with the notes as '#' comments
    std::vector<std::string> cannot_express;  // what the manifest asks for that the engine has no setting for
    std::vector<std::string> fallbacks;       // what the export does instead, one per decision
    std::vector<std::string> notes;           // assumptions: engine versions, formats, per-request settings
    nlohmann::ordered_json config;            // vLLM: the speculative_config object (null for the others)
    std::string draft_file;                   // the draft the snippet loads ("" = none: n-gram drafting)
    bool needs_draft_export = false;          // draft_file is the self-draft `export --format draft-gguf` writes
};

// Throws std::invalid_argument when the manifest's config is invalid.
EngineSnippet make_snippet(Engine e, const Manifest& m, const SnippetOptions& options = {});

// A tree as vLLM's speculative_token_tree / Medusa choices literal: "[(0,), (1,), (0, 0)]" (rank paths).
std::string token_tree_literal(const std::vector<std::vector<int32_t>>& paths);

}  // namespace speculum::exporting
