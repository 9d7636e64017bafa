// Model and data panel: opening files is an intent (the app shows the dialog); the summary comes from the snapshot.
#include "ui/panels/model_data_panel.h"

#include "ui/widgets.h"

#include <imgui.h>

#include <filesystem>

namespace speculum::ui {

namespace {

std::string base_name(const std::string& path) {
    return std::filesystem::path(path).filename().string();
}

// One row of the summary: the key, and the value wrapped to the column (never cut: a long file name wraps).
void row(const char* key, const std::string& value) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(key);
    ImGui::TableNextColumn();
    text_wrapped("%s", value.c_str());
}

void model_summary(const ModelSummary& m, const UiSnapshot& snap) {
    // The key column fits its longest key; the value column takes the rest of the panel and wraps.
    if (ImGui::BeginTable("summary", 2, ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_RowBg)) {
        ImGui::TableSetupColumn("key", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("Width / experts").x);
        ImGui::TableSetupColumn("value", ImGuiTableColumnFlags_WidthStretch);
        row("Name", m.name);
        row("File", m.path);
        row("Size", format_bytes(m.file_bytes));
        row("Parameters", format_count(m.n_params) + " in " + std::to_string(m.n_tensors) + " tensors");
        row("GGUF version", std::to_string(m.gguf_version));
        if (m.hparams) {
            const auto& h = *m.hparams;
            row("Architecture", h.arch);
            row("Layers", std::to_string(h.n_layer));
            if (h.moe())
                row("Width / experts", std::to_string(h.n_embd) + " / " + std::to_string(h.n_expert) + " of width " +
                                           std::to_string(h.n_ff_exp) + ", " + std::to_string(h.n_expert_used) +
                                           " per token");
            else
                row("Width / FFN", std::to_string(h.n_embd) + " / " + std::to_string(h.n_ff));
            row("Heads (KV)", std::to_string(h.n_head) + " (" + std::to_string(h.n_head_kv) + ")");
            row("Vocabulary", std::to_string(h.n_vocab));
            row("Context", std::to_string(h.n_ctx_train));
        }
        row("Tokenizer", m.tokenizer.empty() ? "none (token ids only)" : m.tokenizer);
        if (snap.resident_bytes > 0)
            row("In memory", format_bytes(uint64_t(snap.resident_bytes)) +
                                 " resident (this process: the model, its drafts, their caches)");
        ImGui::EndTable();
    }
    const std::vector<std::string> options = drafting_options(m);
    if (!options.empty()) {
        ImGui::TextUnformatted("Speculum can draft for it with:");
        for (const std::string& o : options) {
            ImGui::Bullet();
            text_wrapped("%s", o.c_str());
        }
    }
    if (!m.hparams) text_colored_wrapped(ImVec4(1, 0.4f, 0.4f, 1), "Not runnable: %s", m.hparams_error.c_str());
    if (m.name.rfind("synthetic ", 0) == 0)
        text_colored_wrapped(ImVec4(1, 0.8f, 0.3f, 1),
                             "Random weights: times, bytes and experts read are real; acceptance and speedup mean "
                             "nothing for a trained model.");
    if (ImGui::BeginTable("types", 4, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_Borders)) {
        ImGui::TableSetupColumn("type");
        ImGui::TableSetupColumn("tensors");
        ImGui::TableSetupColumn("params");
        ImGui::TableSetupColumn("size");
        ImGui::TableHeadersRow();
        for (const auto& t : m.types) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(t.type.c_str());
            ImGui::TableNextColumn();
            ImGui::Text("%lld", static_cast<long long>(t.count));
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(format_count(t.params).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(format_bytes(t.bytes).c_str());
        }
        ImGui::EndTable();
    }
}

}  // namespace

void ModelDataPanel::draw(const UiSnapshot& snap, UiActions& actions, bool fill) {
    if (!begin_panel(title, &visible, ImVec2(0.25f, 0.0f), ImVec2(0.25f, 0.34f), fill)) return;

    if (ImGui::Button("Open model...")) actions.push(ActionOpenModelDialog{});
    for (const auto& path : snap.bundled_models) {
        const std::string name = base_name(path);
        same_line_if_fits(button_width(name.c_str()));
        if (ImGui::Button(name.c_str())) actions.push(ActionOpenModel{path});
    }
    // Random-weight mixtures of experts (synthetic_preset): their costs are real, their acceptance means nothing.
    for (const char* arch : {"qwen3moe", "gpt-oss", "qwen35", "qwen35moe"}) {
        const std::string label = std::string("random ") + arch;
        same_line_if_fits(button_width(label.c_str()));
        if (ImGui::Button(label.c_str())) actions.push(ActionOpenSyntheticModel{arch});
        const bool hybrid = std::string(arch).rfind("qwen35", 0) == 0;
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "A random-weight %s model (%s) built now: what verification costs is real, acceptance on random "
                "weights means nothing",
                arch, hybrid ? "Gated DeltaNet hybrid with an MTP layer" : "mixture of experts");
    }
    for (const auto& job : snap.jobs)
        if (job.name.rfind("Loading model", 0) == 0) {
            ImGui::ProgressBar(float(job.progress), ImVec2(-80, 0), job.what.c_str());
            ImGui::SameLine();
            if (ImGui::Button("Cancel")) actions.push(ActionCancelJob{job.id});
        }
    switch (snap.model_state) {
        case ModelState::none:
            if (!snap.model)
                empty_state("No model open. Open a GGUF file, a bundled model, or a random mixture of experts.");
            break;
        case ModelState::reading:
            if (!snap.model) ImGui::TextUnformatted("Reading the GGUF header...");
            break;
        case ModelState::failed:
            text_colored_wrapped(ImVec4(1, 0.4f, 0.4f, 1), "The model could not be loaded (see messages).");
            break;
        case ModelState::loaded:
            break;
    }
    if (snap.model) model_summary(*snap.model, snap);

    ImGui::Separator();
    if (ImGui::Button("Open dataset...")) actions.push(ActionOpenDatasetDialog{});
    for (const auto& path : snap.bundled_datasets) {
        const std::string name = base_name(path);
        same_line_if_fits(button_width(name.c_str()));
        if (ImGui::SmallButton(name.c_str())) actions.push(ActionOpenDataset{path});
    }
    if (!snap.dataset) {
        empty_state("No dataset open. Datasets are JSONL prompt suites (id, task, prompt, max_new_tokens).");
    } else {
        const auto& d = *snap.dataset;
        text_wrapped("%s: %lld prompts, %zu tasks", base_name(d.path).c_str(), static_cast<long long>(d.n_prompts),
                     d.tasks.size());
        if (ImGui::BeginCombo("task", snap.task.empty() ? "(all tasks)" : snap.task.c_str())) {
            if (ImGui::Selectable("(all tasks)", snap.task.empty())) actions.push(ActionSelectTask{""});
            for (size_t i = 0; i < d.tasks.size(); ++i) {
                std::string label = d.tasks[i] + " (" + std::to_string(d.prompts_per_task[i]) + ")";
                if (ImGui::Selectable(label.c_str(), snap.task == d.tasks[i]))
                    actions.push(ActionSelectTask{d.tasks[i]});
            }
            ImGui::EndCombo();
        }
        if (!d.issues.empty()) text_colored_wrapped(ImVec4(1, 0.6f, 0.3f, 1), "%s", d.issues.c_str());
    }

    ImGui::Separator();
    ImGui::Text("Messages (%zu)", snap.messages.size());
    if (!snap.messages.empty()) {
        ImGui::SameLine();
        if (ImGui::SmallButton("Clear")) actions.push(ActionClearMessages{});
    }
    for (auto it = snap.messages.rbegin(); it != snap.messages.rend(); ++it) {
        ImVec4 color = it->level == MessageLevel::error ? ImVec4(1, 0.4f, 0.4f, 1) : ImVec4(0.7f, 0.7f, 0.7f, 1);
        ImGui::PushStyleColor(ImGuiCol_Text, color);
        text_wrapped("%s", it->text.c_str());
        ImGui::PopStyleColor();
    }
    ImGui::End();
}

}  // namespace speculum::ui
