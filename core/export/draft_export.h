// Draft model export: one level of a config written as a standalone GGUF that llama.cpp loads with -md (and that
// Speculum loads as a `kind: model` draft). Self-drafts are built from the target (pruned, mantissa-truncated,
// Q8_0 / MXFP4 re-encoded, cut after the exit layer); a separate draft model is copied; Max-Gram has no model.
#pragma once

#include "core/drafts/draft_spec.h"
#include "core/drafts/make_drafter.h"
#include "core/model/model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::exporting {

struct DraftExportOptions {
    // Write a self-draft with skip sets or KV transforms without them (every sublayer kept, full-precision KV)
    // instead of refusing: the file then drafts differently from the measured draft, and the result says so.
    bool drop_unsupported = false;
    drafts::DrafterOptions drafter;  // Wanda calibration (tokenize / calibration_tokens), progress, cancel
};

struct DraftExportResult {
    std::string path;         // the file written
    std::string description;  // the draft as DraftSpec::describe() says it
    int32_t n_layer     = 0;  // layers in the file (exit_layer + 1 for an early-exit draft)
    uint64_t file_bytes = 0;
    std::vector<std::string> dropped;  // what the file does not carry (skip sets, KV transforms), "" = nothing
};

// Whether a self-draft's GGUF stores weights it pruned or truncated at full size: GGUF has no compact form, so an
// engine reads every byte (zeros and cleared bits included).
bool stored_dense(const drafts::DraftSpec& spec);
// What a dense pruned or truncated draft means in an engine: its size and the c an engine reading it would see
// (its bytes over the target's, memory-bound), not the compact c Speculum measures.
std::string dense_draft_warning(uint64_t draft_file_bytes, uint64_t target_file_bytes);

// Throws std::invalid_argument for a Max-Gram level, or for skip sets / KV transforms without drop_unsupported;
// std::runtime_error for I/O failures; Cancelled.
DraftExportResult export_draft_gguf(const model::Model& target, const drafts::DraftSpec& spec, const std::string& path,
                                    const DraftExportOptions& options = {});

}  // namespace speculum::exporting
