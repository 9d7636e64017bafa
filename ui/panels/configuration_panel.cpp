// Configuration panel: every control edits a copy of the snapshot's config; one ActionSetConfig per change.
#include "ui/panels/configuration_panel.h"

#include "core/format.h"
#include "ui/panels/configuration_editors.h"
#include "ui/widgets.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace speculum::ui {

namespace {

// Per-layer skip checkboxes, wrapped in rows of 8.
bool edit_skip_set(const char* label, std::vector<int32_t>& layers, int n_layer) {
    bool changed = false;
    ImGui::TextUnformatted(label);
    ImGui::PushID(label);
    for (int l = 0; l < n_layer; ++l) {
        bool on = std::find(layers.begin(), layers.end(), l) != layers.end();
        if (l % 8 != 0) ImGui::SameLine();
        ImGui::PushID(l);
        if (ImGui::Checkbox(std::to_string(l).c_str(), &on)) {
            if (on)
                layers.push_back(l);
            else
                layers.erase(std::remove(layers.begin(), layers.end(), l), layers.end());
            std::sort(layers.begin(), layers.end());
            changed = true;
        }
        ImGui::PopID();
    }
    ImGui::PopID();
    return changed;
}

// A file path field committed with Enter, its Browse... button (an open-file dialog that fills it) and its help.
bool edit_path(const char* label, std::string& path, const char* help, FileField field, UiActions& actions) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%s", path.c_str());
    const bool changed = ImGui::InputText(label, buf, sizeof buf, ImGuiInputTextFlags_EnterReturnsTrue);
    if (changed) path = buf;
    ImGui::PushID(label);
    if (ImGui::SmallButton("Browse...")) actions.push(ActionBrowseFile{field, 0, path});
    ImGui::PopID();
    ImGui::SameLine();
    help_marker(help);
    return changed;
}

// FR-Spec for a self-draft or a draft model: its LM head restricted to the N tokens most frequent in a prompt suite.
// Turning it on takes the open prompt suite as the corpus (the spec needs one); 0 clears both.
bool edit_reduced_head(drafts::DraftSpec& d, int n_vocab, const std::string& dataset, UiActions& actions) {
    const bool open = ImGui::TreeNode("reduced LM head (FR-Spec)");
    ImGui::SameLine();
    help_marker(
        "The draft computes logits only for the N tokens most frequent in a prompt suite (tokenized by the target) "
        "and never drafts the others: a cheaper pass where the head is a large share of it (large vocabularies). "
        "Greedy speculation stays lossless. No serving engine expresses it for these drafts (the Export panel says "
        "so).");
    if (!open) return false;
    bool changed = false;
    int n        = d.head_vocab;
    const int hi = std::max(1, n_vocab);
    if (ImGui::SliderInt("head tokens", &n, 0, hi, n == 0 ? "full head" : "%d")) {
        n = std::clamp(n, 0, hi);
        if (n > 0 && d.head_vocab_corpus.empty()) d.head_vocab_corpus = dataset;
        if (n == 0) d.head_vocab_corpus.clear();
        d.head_vocab = n, changed = true;
    }
    if (d.head_vocab > 0)
        changed |= edit_path("head corpus", d.head_vocab_corpus,
                             "The JSONL prompt suite whose token frequencies pick the head's tokens (the open prompt "
                             "suite when the head is turned on).",
                             FileField::head_corpus, actions);
    ImGui::TreePop();
    return changed;
}

bool edit_draft(drafts::DraftSpec& d, int n_layer, int n_vocab, const std::string& dataset, UiActions& actions) {
    bool changed = false;
    // What applies only to the old kind is cleared by the controller, which says what it cleared. The combo and
    // each choice are probed (kind_self, kind_model, ...), so the real-input GUI test can pick one.
    const bool open = ImGui::BeginCombo("drafter", draft_kind_name(d.kind));
    if (!open) probe_item("drafter_kind");
    if (open) {
        for (const drafts::DraftKind k : {drafts::DraftKind::self, drafts::DraftKind::model, drafts::DraftKind::maxgram,
                                          drafts::DraftKind::ngram, drafts::DraftKind::mtp, drafts::DraftKind::eagle3,
                                          drafts::DraftKind::dflash, drafts::DraftKind::dspark}) {
            if (ImGui::Selectable(draft_kind_name(k), k == d.kind) && k != d.kind) d.kind = k, changed = true;
            std::string probe = "kind_";
            probe += drafts::draft_kind_info(k).name;
            probe_item(probe.c_str());
        }
        ImGui::EndCombo();
    }
    if (d.kind == drafts::DraftKind::model) {
        changed |= edit_path("draft GGUF", d.model_path,
                             "Path of a GGUF whose vocabulary matches the target's; empty = the bundled draft model.",
                             FileField::draft_model, actions);
        return edit_reduced_head(d, n_vocab, dataset, actions) || changed;
    }
    if (d.kind == drafts::DraftKind::ngram) return edit_ngram(d.ngram) || changed;
    if (d.kind == drafts::DraftKind::eagle3)
        return edit_path("head GGUF", d.model_path,
                         "An EAGLE-3 head (llama.cpp's eagle3 GGUF layout) trained for this target: it reads the "
                         "target's hidden states at three layers. Empty = the bundled target's head.",
                         FileField::eagle3_head, actions) ||
               changed;
    if (d.kind == drafts::DraftKind::dflash || d.kind == drafts::DraftKind::dspark) {
        text_disabled_wrapped(
            d.kind == drafts::DraftKind::dflash
                ? "A DFlash block draft reads the target's hidden states and drafts a whole block in one pass; "
                  "gamma is capped at its block size - 1."
                : "A DSpark block draft: DFlash with a Markov head and a confidence head. The block stops at the "
                  "first position whose predicted acceptance is below p min.");
        return edit_path("block draft GGUF", d.model_path,
                         "A block draft in llama.cpp's dflash GGUF layout trained for this target. Empty = the "
                         "bundled target's block draft.",
                         FileField::block_draft, actions) ||
               changed;
    }
    if (d.kind == drafts::DraftKind::mtp) {
        text_disabled_wrapped(
            "A multi-token-prediction (NextN) layer drafts from the target's final hidden state: the target's own "
            "(GGUF nextn_predict_layers) or an MTP module's.");
        changed |= edit_path("MTP module GGUF", d.model_path,
                             "An MTP module: the NextN blocks in a file of their own, for a target whose file has "
                             "none. Empty = the target's own layers, or the bundled target's module when it has none.",
                             FileField::mtp_module, actions);
        changed |= ImGui::SliderInt("MTP layer", &d.mtp_layer, 0, 3);
        return changed;
    }
    if (d.kind == drafts::DraftKind::maxgram) {
        text_disabled_wrapped("Max-Gram drafts from n-gram matches in the context; no model weights.");
        int mode            = int(d.maxgram.mode);
        const char* modes[] = {"CS Drafting (copy within the context)", "periodic (copy into its own proposal)"};
        if (ImGui::Combo("Max-Gram mode", &mode, modes, IM_ARRAYSIZE(modes)))
            d.maxgram.mode = drafts::MaxGramMode(mode), changed = true;
        help_marker(
            "CS Drafting: copy after the longest suffix match, only as far as the committed text goes, then "
            "search once more and fall back to the bigram table. Periodic: let the copy run on into the "
            "tokens it proposed, extending a repeating pattern.");
        return changed;
    }
    changed |= ImGui::SliderFloat("prune ratio", &d.prune.ratio, 0.0f, 0.95f, "%.2f");
    probe_slider("prune_ratio");
    int method            = int(d.prune.method);
    const char* methods[] = {"magnitude", "wanda"};
    if (ImGui::Combo("prune method", &method, methods, 2)) d.prune.method = drafts::PruneMethod(method), changed = true;
    changed |= ImGui::SliderInt("weight trunc bits", &d.weight_trunc_bits, 0, 7);
    help_marker("BF16 mantissa bits dropped from every weight of the draft (Cassandra).");
    changed |= ImGui::Checkbox("strict subset of the target", &d.strict_subset);
    help_marker(
        "Cassandra's strict-subset storage: the target verifies on a copy of itself kept as this draft's compact "
        "weights plus the rest of its bits, so the draft costs no memory beyond the target. The verifier gives the "
        "target's logits bit for bit, but each of its passes decodes both parts (slower on a CPU). Needs pruning or "
        "truncation of a BF16 target.");
    changed |= ImGui::SliderInt("KV trunc bits", &d.kv_trunc_bits, 0, 7);
    changed |= ImGui::SliderFloat("KV drop ratio", &d.kv_drop_ratio, 0.0f, 0.95f, "%.2f");
    help_marker("KV selection: the fraction of each cached K/V vector's smallest values zeroed for the draft.");
    bool mxfp4 = d.weight_format == drafts::WeightFormat::mxfp4;
    if (ImGui::Checkbox("MXFP4 weights", &mxfp4)) {
        d.weight_format = mxfp4 ? drafts::WeightFormat::mxfp4 : drafts::WeightFormat::same;
        changed         = true;
    }
    changed |= ImGui::SliderInt("exit layer", &d.exit_layer, -1, std::max(0, n_layer - 1),
                                d.exit_layer < 0 ? "all layers" : "%d");
    if (ImGui::TreeNode("skip set")) {
        changed |= edit_skip_set("skip attention in layers:", d.skip_attn, std::min(n_layer, 64));
        changed |= edit_skip_set("skip FFN in layers:", d.skip_ffn, std::min(n_layer, 64));
        ImGui::TreePop();
    }
    changed |= edit_reduced_head(d, n_vocab, dataset, actions);
    return changed;
}

}  // namespace

void ConfigurationPanel::draw(const UiSnapshot& snap, UiActions& actions, bool fill) {
    if (!begin_panel(title, &visible, ImVec2(0.0f, 0.0f), ImVec2(0.25f, 1.0f), fill)) return;
    probe_window("configuration_window");
    AppConfig cfg = snap.config;
    bool changed  = false;
    int n_layer   = snap.model && snap.model->hparams ? snap.model->hparams->n_layer : 32;
    int n_vocab   = snap.model && snap.model->hparams ? snap.model->hparams->n_vocab : 32000;
    ImGui::PushItemWidth(ImGui::GetWindowWidth() * 0.5f);
    text_disabled_wrapped("Ctrl+click a slider to type an exact value.");

    if (ImGui::CollapsingHeader("Draft", ImGuiTreeNodeFlags_DefaultOpen)) {
        const drafts::DraftKind was = cfg.draft().kind;
        changed |=
            edit_draft(cfg.draft(), n_layer, n_vocab, snap.dataset ? snap.dataset->path : std::string(), actions);
        // A new kind of drafter starts from its kind's assumed cost: 0 for a statistical one (no forward pass, as
        // for a cascade's statistical leaf), a head's for an MTP layer or an EAGLE-3 head, a model's otherwise.
        if (cfg.draft().kind != was) cfg.level1().c = default_assumption(cfg.draft().kind).c;
    }
    text_disabled_wrapped("%s", describe_draft(cfg.draft()).c_str());

    if (ImGui::CollapsingHeader("Decoding", ImGuiTreeNodeFlags_DefaultOpen)) {
        if (cfg.spec.k_matrix.empty() && !cfg.spec.gamma.empty()) {
            changed |= ImGui::SliderInt("gamma", &cfg.spec.gamma[0], 1, 16);
            probe_slider("gamma");
            help_marker("Draft tokens proposed per verification step (chain length).");
        } else {
            text_wrapped("draft lengths: the loaded k-matrix (%d tokens for the target)", cfg.gamma());
            if (ImGui::SmallButton("Use gamma instead")) {
                cfg.spec.k_matrix.clear();
                normalize(cfg);
                changed = true;
            }
        }
        changed |= ImGui::SliderFloat("p_min", &cfg.spec.p_min, 0.0f, 1.0f, "%.2f");
        help_marker("Stop drafting early when the draft's top probability falls below p_min.");
        changed |= ImGui::SliderFloat("temperature", &cfg.spec.sampling.temperature, 0.0f, 2.0f, "%.2f");
    }
    if (ImGui::CollapsingHeader("Assumptions for the modeled panels", ImGuiTreeNodeFlags_DefaultOpen)) {
        float alpha = float(cfg.level1().alpha), c = float(cfg.level1().c);
        if (ImGui::SliderFloat("alpha", &alpha, 0.05f, 0.99f, "%.2f")) cfg.level1().alpha = alpha, changed = true;
        help_marker("Assumed probability that the target accepts a draft token. A measured run replaces it.");
        if (const auto& loaded = cfg.modeled.acceptance_profile) {
            const engine::AcceptanceProfile& p = loaded->profile;
            std::string rates;
            for (size_t i = 0; i < p.conditional.size() && i < 8; ++i)
                rates += fmt(i ? " %.2f" : "%.2f", p.conditional[i]);
            text_wrapped("alpha per position from %s: %s%s", loaded->path.c_str(), rates.c_str(),
                         p.conditional.size() > 8 ? " ..." : "");
            text_disabled_wrapped("measured by %s: %s on %s, %d prompts, gamma %d", p.conditions.tool.c_str(),
                                  p.conditions.drafter.c_str(), p.conditions.dataset.c_str(), p.conditions.num_samples,
                                  p.conditions.num_speculative_tokens);
            if (ImGui::SmallButton("Use the assumed alpha")) cfg.modeled.acceptance_profile.reset(), changed = true;
        } else if (ImGui::SmallButton("Load an acceptance profile...")) {
            actions.push(ActionBrowseFile{FileField::acceptance_profile, 0, ""});
        }
        help_marker(
            "A speculation_profile.json (speculum-cli run --profile-out, or the Export panel): its acceptance per "
            "position replaces the assumed alpha and a measured run's in the modeled panels.");
        if (ImGui::SliderFloat("cost ratio c", &c, 0.0f, 1.0f, "%.3f")) cfg.level1().c = c, changed = true;
        help_marker("Time of one draft call divided by the time of one target call.");
        changed |= ImGui::SliderInt("context", &cfg.modeled.context, 1, 32768);
        for (const std::string& line : snap.modeled.not_modeled) text_wrapped("not modeled: %s", line.c_str());
    }
    if (ImGui::CollapsingHeader("Verification tree")) changed |= edit_tree(cfg);
    if (ImGui::CollapsingHeader("Cascade")) changed |= edit_cascade(cfg);
    if (ImGui::CollapsingHeader("Measured run")) {
        changed |= ImGui::SliderInt("new tokens", &cfg.spec.max_new_tokens, 1, 256);
        help_marker("Tokens generated per prompt by the engine and by the plain baseline.");
        changed |= ImGui::SliderInt("prompts", &cfg.spec.max_prompts, 1, 16);
        engine::Repeats& rep = cfg.spec.repeats;
        if (ImGui::SliderInt("most passes", &rep.max, 1, 50)) rep.min = std::min(rep.min, rep.max), changed = true;
        help_marker(
            "Each pass decodes every prompt speculatively and then by the plain baseline right after it: one speedup "
            "pair per prompt. The median of the pairs and its 95 % interval are shown.");
        float width = float(100.0 * rep.rel_width), budget = float(rep.max_time_s);
        if (ImGui::SliderFloat("stop at interval width", &width, 0.0f, 50.0f, "%.0f %%"))
            rep.rel_width = width / 100.0, changed = true;
        if (ImGui::SliderFloat("time budget", &budget, 0.0f, 60.0f, budget > 0 ? "%.0f s" : "none"))
            rep.max_time_s = budget, changed = true;
        help_marker(
            "The first prompts of the open dataset (and task; Model and data) a measured run decodes. Every "
            "edit re-measures after 300 ms of quiet; the stale run is cancelled.");
    }
    ImGui::PopItemWidth();

    for (const auto& p : snap.config_problems)
        text_colored_wrapped(ImVec4(1, 0.4f, 0.4f, 1), "%s", with_fix(p).c_str());
    if (changed && !(cfg == snap.config)) actions.push(ActionSetConfig{cfg});
    ImGui::End();
}

}  // namespace speculum::ui
