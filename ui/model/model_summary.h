// Plain-data summaries of what the user opened — a GGUF model (architecture, parameters, tensor types, size) and a
// JSONL dataset (tasks, prompts, malformed lines) — built off the UI thread and copied into snapshots.
#pragma once

#include "core/data/dataset.h"
#include "core/model/gguf.h"
#include "core/model/hparams.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace speculum::ui {

struct TensorTypeRow {
    std::string type;    // ggml name, "q8_0"
    int64_t count  = 0;  // tensors of this type
    int64_t params = 0;  // elements
    uint64_t bytes = 0;  // bytes on disk
};

struct ModelSummary {
    std::string path;
    std::string name;  // general.name, else the file name
    uint32_t gguf_version = 0;
    uint64_t file_bytes   = 0;
    int64_t n_params      = 0;  // elements of every tensor
    int64_t n_tensors     = 0;
    std::vector<TensorTypeRow> types;       // by bytes, largest first
    std::optional<model::Hparams> hparams;  // nullopt when the architecture is not one Speculum runs
    std::string hparams_error;              // why hparams is empty
    double weight_bits = 16;                // mean bits per parameter over all tensors (for the hardware model)
    std::string tokenizer;                  // "gpt2, 2048 tokens"; "" = the file has none (token ids only)
};

// What Speculum can draft for this model, one line each: statistical drafters always; the file's own MTP layers;
// self-drafts when it has layers to drop; a separate draft or head with its vocabulary; and what to try first.
std::vector<std::string> drafting_options(const ModelSummary& m);

// Reads the summary from an opened file. Never throws for an unsupported architecture (hparams_error says why).
ModelSummary summarize_gguf(const model::GgufFile& file);

struct DatasetSummary {
    std::string path;
    int64_t n_prompts = 0;
    std::vector<std::string> tasks;
    std::vector<int64_t> prompts_per_task;  // parallel to tasks
    std::string issues;                     // describe_issues() when some lines are malformed, else empty
};

DatasetSummary summarize_dataset(const data::Dataset& d);

std::string format_bytes(uint64_t bytes);  // "1.23 GB", "45.6 MB", "789 B" (decimal units)
std::string format_flops(double flops);    // "1.23 GFLOP", "45.6 MFLOP", "789 FLOP" (decimal units)
std::string format_count(int64_t n);       // "7.24 B", "68.0 M", "512"

}  // namespace speculum::ui
