// GGUF and dataset summaries for the Model and data panel.
#include "ui/model/model_summary.h"

#include "kernels/ggml_types.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

namespace speculum::ui {

ModelSummary summarize_gguf(const model::GgufFile& file) {
    ModelSummary s;
    s.path         = file.path();
    s.name         = file.get_string_or("general.name", std::filesystem::path(file.path()).filename().string());
    s.gguf_version = file.version();
    s.file_bytes   = file.file_size();
    std::map<std::string, TensorTypeRow> by_type;
    uint64_t tensor_bytes = 0;
    for (const auto& t : file.tensors()) {
        const auto* traits = kernels::ggml_type_traits(uint32_t(t.type));
        std::string name   = traits ? traits->name : "type " + std::to_string(uint32_t(t.type));
        auto& row          = by_type[name];
        row.type           = name;
        row.count += 1;
        row.params += int64_t(t.n_elements);
        row.bytes += t.n_bytes;
        s.n_params += int64_t(t.n_elements);
        tensor_bytes += t.n_bytes;
    }
    s.n_tensors = int64_t(file.tensors().size());
    for (auto& [_, row] : by_type) s.types.push_back(row);
    std::sort(s.types.begin(), s.types.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
    if (s.n_params > 0) s.weight_bits = 8.0 * double(tensor_bytes) / double(s.n_params);
    if (const model::GgufValue* tokens = file.find("tokenizer.ggml.tokens"))
        s.tokenizer = file.get_string_or("tokenizer.ggml.model", "unknown") + ", " +
                      std::to_string(tokens->array_size()) + " tokens";
    try {
        s.hparams = model::hparams_from_gguf(file);
    } catch (const std::exception& e) {
        s.hparams_error = e.what();
    }
    return s;
}

std::vector<std::string> drafting_options(const ModelSummary& m) {
    std::vector<std::string> out;
    if (!m.hparams) return out;
    const model::Hparams& h = *m.hparams;
    out.push_back("n-gram, suffix decoding and Max-Gram (no model: they draft from the context)");
    if (h.n_nextn > 0)
        out.push_back("its own MTP layer" + std::string(h.n_nextn > 1 ? "s (" + std::to_string(h.n_nextn) + ")" : "") +
                      ": the MTP head drafter");
    if (h.n_layer >= 2)
        out.push_back("self-drafts from its weights: early exit, layer skip, pruning, truncation, MXFP4");
    out.push_back("a separate draft model or an EAGLE-3 head with its vocabulary (" + std::to_string(h.n_vocab) +
                  " tokens)");
    out.push_back(m.tokenizer.empty()
                      ? "no tokenizer: text prompts cannot be used (token ids only)"
                      : "suggested: Tune (View > Tune) measures all of these on the open dataset and picks the best");
    return out;
}

DatasetSummary summarize_dataset(const data::Dataset& d) {
    DatasetSummary s;
    s.path      = d.path;
    s.n_prompts = int64_t(d.prompts.size());
    s.tasks     = d.tasks();
    for (const auto& t : s.tasks) s.prompts_per_task.push_back(int64_t(d.by_task(t).size()));
    if (!d.issues.empty()) s.issues = data::describe_issues(d, 3);
    return s;
}

std::string format_bytes(uint64_t bytes) {
    char buf[32];
    double b = double(bytes);
    if (b >= 1e9)
        std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
    else if (b >= 1e6)
        std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
    else if (b >= 1e3)
        std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
    return buf;
}

std::string format_flops(double flops) {
    char buf[32];
    if (!(flops >= 0)) flops = 0;
    if (flops >= 1e12)
        std::snprintf(buf, sizeof buf, "%.2f TFLOP", flops / 1e12);
    else if (flops >= 1e9)
        std::snprintf(buf, sizeof buf, "%.2f GFLOP", flops / 1e9);
    else if (flops >= 1e6)
        std::snprintf(buf, sizeof buf, "%.1f MFLOP", flops / 1e6);
    else if (flops >= 1e3)
        std::snprintf(buf, sizeof buf, "%.1f kFLOP", flops / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%.0f FLOP", flops);
    return buf;
}

std::string format_count(int64_t n) {
    char buf[32];
    double v = double(n);
    if (v >= 1e9)
        std::snprintf(buf, sizeof buf, "%.2f B", v / 1e9);
    else if (v >= 1e6)
        std::snprintf(buf, sizeof buf, "%.1f M", v / 1e6);
    else if (v >= 1e3)
        std::snprintf(buf, sizeof buf, "%.1f k", v / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
    return buf;
}

}  // namespace speculum::ui
