// Speedup panel: one table of modeled figures (from predict(), same frame as the edit) beside the measured ones.
#include "ui/panels/speedup_panel.h"

#include "ui/widgets.h"

#include "core/analytic/cost.h"
#include "core/engine/speedup_waterfall.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace speculum::ui {

namespace {

struct Bar {
    std::string label;
    double value;
    bool measured;
};

void bars(const std::vector<Bar>& items) {
    double top    = 1.0;
    float label_w = 0;
    for (const auto& b : items) {
        top     = std::max(top, b.value);
        label_w = std::max(label_w, ImGui::CalcTextSize((b.label + "  00.00x").c_str()).x);
    }
    float left = label_w + 8, width = std::max(40.0f, ImGui::GetContentRegionAvail().x - left);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImVec2 first   = ImGui::GetCursorScreenPos();
    for (const auto& b : items) {
        ImVec2 p = ImGui::GetCursorScreenPos();
        float w  = float(b.value / top) * width;
        dl->AddRectFilled(ImVec2(p.x + left, p.y + 2), ImVec2(p.x + left + w, p.y + 14),
                          b.measured ? IM_COL32(110, 210, 120, 255) : IM_COL32(235, 180, 80, 255));
        ImGui::Text("%s  %.2fx", b.label.c_str(), b.value);
    }
    // The 1x line: no speedup.
    float x1 = first.x + left + float(1.0 / top) * width;
    dl->AddLine(ImVec2(x1, first.y), ImVec2(x1, ImGui::GetCursorScreenPos().y), IM_COL32(200, 200, 200, 160));
}

// The measured verification cost curve: one bar per pass width, its mean pass in plain decoding steps (seconds
// without a baseline), a line at one step; a mixture of experts also shows the distinct experts a layer read beside
// independent uniform routing's (modeled) in each bar's tooltip.
void verify_curve(const engine::RunStats& r) {
    const std::vector<engine::VerifyCost> curve = r.verify_cost_curve();
    if (curve.size() < 2) return;
    const bool steps = curve.front().steps > 0;
    text_wrapped("verification pass by width (%s):", steps ? "plain decoding steps" : "ms");
    measured_tag();
    help_marker(
        "Each bar is the mean of the target's verification passes over that many tokens in this run (the draft "
        "tokens and the bonus). Where it stays near 1, verifying more tokens is nearly free (memory-bound); where it "
        "grows with the width, the pass is compute-bound, or (a mixture of experts) reads the union of the experts "
        "its tokens route to.");
    double top = steps ? 1.0 : 0.0;
    for (const auto& c : curve) top = std::max(top, steps ? c.steps : c.seconds * 1e3);
    const float h = 70, avail = std::max(80.0f, ImGui::GetContentRegionAvail().x);
    const float bw = std::min(36.0f, avail / float(curve.size())) - 2;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float th = ImGui::GetTextLineHeight();
    ImGui::Dummy(ImVec2(1, th));  // room for the value over the tallest bar
    const ImVec2 o = ImGui::GetCursorScreenPos();
    for (size_t i = 0; i < curve.size(); ++i) {
        const engine::VerifyCost& c = curve[i];
        const double v              = steps ? c.steps : c.seconds * 1e3;
        const float x0 = o.x + float(i) * (bw + 2), y1 = o.y + h, y0 = y1 - float(v / top) * h;
        dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x0 + bw, y1), IM_COL32(110, 210, 120, 255));
        ImGui::SetCursorScreenPos(ImVec2(x0, o.y));
        ImGui::InvisibleButton(("##w" + std::to_string(c.width)).c_str(), ImVec2(bw, h));
        if (ImGui::IsItemHovered()) {
            ImGui::BeginTooltip();
            ImGui::Text("%d tokens: %.2f %s (%lld passes, %.2f ms each)", c.width, v, steps ? "steps" : "ms",
                        static_cast<long long>(c.passes), c.seconds * 1e3);
            if (c.distinct_experts > 0)
                ImGui::Text("experts read per layer %.1f of %d; independent uniform routing: %.1f (modeled)",
                            c.distinct_experts, r.experts.n_expert,
                            analytic::expected_distinct_experts(r.experts.n_expert, r.experts.n_expert_used, c.width));
            ImGui::EndTooltip();
        }
        char label[16];
        std::snprintf(label, sizeof label, "%d", c.width);
        dl->AddText(ImVec2(x0 + 2, y1 + 1), IM_COL32(200, 200, 200, 255), label);
        std::snprintf(label, sizeof label, v < 10 ? "%.1f" : "%.0f", v);
        if (ImGui::CalcTextSize(label).x <= bw + 2)
            dl->AddText(ImVec2(x0 + 1, y0 - th), IM_COL32(230, 230, 230, 255), label);
    }
    if (steps) {  // one plain decoding step
        const float y = o.y + h - float(1.0 / top) * h;
        dl->AddLine(ImVec2(o.x, y), ImVec2(o.x + float(curve.size()) * (bw + 2), y), IM_COL32(200, 200, 200, 160));
    }
    ImGui::SetCursorScreenPos(ImVec2(o.x, o.y + h + th + 2));
    ImGui::Dummy(ImVec2(1, 1));
}

// Where the speedup went: from what acceptance alone would give to the measured speedup, one measured cost at a time,
// and the headroom of an always-right drafter (modeled from the measured verification passes).
void waterfall(const engine::RunStats& r) {
    const engine::SpeedupWaterfall w = engine::speedup_waterfall(r);
    if (!w.unavailable.empty() || w.steps.empty()) return;
    text_wrapped("where the speedup went:");
    measured_tag();
    help_marker(
        "From this run's own times. Acceptance alone: tokens per target pass, as if drafting were free and a "
        "verification pass cost one decoding step. Then the draft's time, the verification passes' cost beyond one "
        "step, and everything else (the acceptance rule, rollback, sampling) are taken away in turn, ending at the "
        "measured speedup. Hover a bar for the figures.");
    std::vector<Bar> items;
    for (const engine::WaterfallStep& s : w.steps)
        items.push_back({(&s == &w.steps.front() ? "" : "- ") + s.name, s.speedup, !s.modeled});
    const ImVec2 top = ImGui::GetCursorScreenPos();
    bars(items);
    const float row    = (ImGui::GetCursorScreenPos().y - top.y) / float(items.size());
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    if (ImGui::IsWindowHovered() && mouse.y >= top.y && mouse.y < top.y + row * float(items.size()) &&
        mouse.x >= top.x) {
        const size_t i = std::min(items.size() - 1, size_t((mouse.y - top.y) / row));
        ImGui::SetTooltip("%s: %.2fx (%+.2f)\n%s", w.steps[i].name.c_str(), w.steps[i].speedup, w.steps[i].delta,
                          w.steps[i].detail.c_str());
    }
    if (w.oracle_width > 0) {
        text_wrapped("headroom: %.2fx with an always-right free drafter (%d tokens a pass)", w.oracle_speedup,
                     w.oracle_width);
        modeled_tag();
        help_marker(w.oracle_detail.c_str());
    }
}

// A hybrid target's recurrent state in the cost breakdown: what keeping and rolling it back cost per verification
// pass, measured, and the memory the strategy held.
void recurrent_cost(const engine::RunStats& r) {
    const engine::RecurrentReport& rr = r.recurrent;
    if (rr.empty() || rr.passes <= 0) return;
    const double per = 1e3 / double(rr.passes);
    text_wrapped(
        "recurrent state (%s rollback): %.3f ms per verification pass (keep %.3f, restore %.3f); "
        "%lld of %lld passes rolled back; held at most %.2f MiB beside the %.2f MiB state",
        rr.strategy.c_str(), (rr.keep_s + rr.restore_s) * per, rr.keep_s * per, rr.restore_s * per,
        static_cast<long long>(rr.rollbacks), static_cast<long long>(rr.passes), double(rr.peak_bytes) / (1 << 20),
        double(rr.state_bytes) / (1 << 20));
    measured_tag();
    help_marker(
        "A hybrid model's DeltaNet layers keep one state per sequence, overwritten by every token, so rejected drafts "
        "are undone by restoring it: 'snapshot' stores the whole state after every verified token; 'rerun' stores "
        "each token's small inputs and one checkpoint, and runs the recurrence again over the accepted tokens. "
        "Choose it in the run config (context.rollback).");
}

}  // namespace

void SpeedupPanel::draw(const UiSnapshot& snap, UiActions& actions, bool fill) {
    if (!begin_panel(title, &visible, ImVec2(0.25f, 0.34f), ImVec2(0.25f, 0.33f), fill)) return;
    const auto& m = snap.modeled;
    const auto& o = m.output;
    if (!m.error.empty()) {
        text_colored_wrapped(ImVec4(1, 0.4f, 0.4f, 1), "Cannot model this configuration: %s",
                             with_fix(m.error).c_str());
        ImGui::End();
        return;
    }
    std::vector<Bar> items;
    items.push_back({"chain EWIF (k=" + std::to_string(snap.config.gamma()) + ")", o.ewif, false});
    items.push_back({"best k=" + std::to_string(o.best_k), o.best_ewif, false});
    // The engine measures the truncate process; Thm. 4.3's fixed-steps figure is the paper's (docs/analytic.md).
    if (o.kmatrix) items.push_back({"cascade EWIF (truncate, as measured)", o.kmatrix->ewif, false});
    if (o.cascade) items.push_back({"cascade, Thm. 4.3 (fixed steps)", o.cascade->ewif, false});
    if (o.horizontal_ewif) items.push_back({"horizontal", *o.horizontal_ewif, false});
    if (tree_mode(snap.config) != TreeMode::chain) items.push_back({"tree", m.tree_speedup, false});
    if (o.timing && snap.profile_index >= 0)
        items.push_back({"on " + snap.profiles[size_t(snap.profile_index)].id, o.timing->speedup, false});
    if (snap.measured && snap.measured->speedup() > 0)
        items.push_back(
            {snap.measured->repeats.speedup.n > 1 ? "measured (median)" : "measured", snap.measured->speedup(), true});

    // Three figures, each kept whole on its line (ImGui wraps after a period, which would split a number).
    char figure[160];
    std::snprintf(figure, sizeof figure, "alpha_1 %s: %.3f,", m.alpha_source.c_str(),
                  m.input.alpha.empty() ? 0.0 : m.input.alpha.front());
    text_wrapped("%s", figure);
    std::snprintf(figure, sizeof figure, "c %s: %.3f,", m.c_source.c_str(), m.input.c);
    same_line_if_fits(text_width(figure));
    text_wrapped("%s", figure);
    std::snprintf(figure, sizeof figure, "tokens per target pass: %.2f", o.expected_tokens);
    same_line_if_fits(text_width(figure));
    text_wrapped("%s", figure);
    modeled_tag();
    if (snap.head_cost && snap.head_cost->error.empty()) {
        text_wrapped("c of the draft head from its file: %.4f (%s)", snap.head_cost->c, snap.head_cost->what.c_str());
        modeled_tag();
    } else if (snap.head_cost) {
        text_colored_wrapped(ImVec4(1, 0.4f, 0.4f, 1), "The draft head could not be read: %s",
                             snap.head_cost->error.c_str());
    }
    bars(items);
    ImGui::Separator();
    if (o.bpt_chain_gb > 0) {
        text_wrapped("BPT: %.3f GB/token speculative vs %.3f GB/token autoregressive", o.bpt_chain_gb,
                     o.bpt_autoregressive_gb);
        modeled_tag();
    } else {
        text_disabled_wrapped("BPT and the projected speedup need a hardware profile (Hardware panel).");
    }
    if (o.timing) {
        text_wrapped("projected: %.1f tokens/s, verify %.2f ms, draft %.3f ms", o.timing->tokens_per_s,
                     o.timing->t_verify * 1e3, o.timing->t_draft * 1e3);
        modeled_tag();
        // Beside a measurement: why the two may differ.
        if (snap.measured && snap.measured->speedup() > 0 && snap.profile_index >= 0) {
            const hw::HardwareProfile& p = snap.profiles[size_t(snap.profile_index)];
            const double gap             = o.timing->speedup / snap.measured->speedup();
            if (p.id != hw::kMachineProfileId)
                text_wrapped(
                    "The projection is for %s, not this machine: it explains the measured %.2fx only through the "
                    "same acceptance (Hardware: Measure this machine for a like-for-like projection).",
                    p.name.c_str(), snap.measured->speedup());
            else if (gap > 1.15 || gap < 0.87)
                text_wrapped(
                    "Projected %.2fx on this machine vs %.2fx measured: the roofline assumes a verification pass "
                    "costs its bytes or FLOPs at the peak (level 0's measured c shows what it costs here), and no "
                    "per-step overhead beyond the profile's call overhead.",
                    o.timing->speedup, snap.measured->speedup());
        }
    }
    ImGui::Separator();
    if (snap.measured) {
        const engine::RunStats& r        = snap.measured->stats;
        const session::RepeatSummary& rs = snap.measured->repeats;
        if (rs.speedup.n > 1) {
            // The A/B pairs: each prompt's speculative run and its baseline back to back, median and 95 % interval.
            text_wrapped("speedup %.2fx [%.2f, %.2f], tokens/s %.1f [%.1f, %.1f] (baseline %.1f)", rs.speedup.median,
                         rs.speedup.lo, rs.speedup.hi, rs.tokens_per_s.median, rs.tokens_per_s.lo, rs.tokens_per_s.hi,
                         rs.baseline_tokens_per_s.median);
            measured_tag();
            text_disabled_wrapped("median of %d A/B pairs in %d passes, %s; %s", rs.speedup.n, rs.passes,
                                  interval_text(rs.speedup.coverage, rs.speedup.n).c_str(),
                                  snap.measured->cancelled  ? "cancelled"
                                  : snap.measured->complete ? ("stopped: " + rs.stop).c_str()
                                                            : "more passes running");
            text_wrapped("%.2f tokens/pass, BPT %s%s", r.mean_accepted_length(),
                         format_bytes(uint64_t(r.bytes_per_token)).c_str(),
                         r.any_bytes_modeled() ? " (BPT modeled: the draft's compressed bytes)" : "");
        } else {
            text_wrapped("%.1f tokens/s (baseline %.1f), speedup %.2fx, %.2f tokens/pass, BPT %s%s%s", r.tokens_per_s,
                         r.baseline_tokens_per_s, r.speedup, r.mean_accepted_length(),
                         format_bytes(uint64_t(r.bytes_per_token)).c_str(),
                         r.any_bytes_modeled() ? " (BPT modeled: the draft's compressed bytes)" : "",
                         snap.measured->cancelled  ? " (cancelled: partial)"
                         : snap.measured->complete ? ""
                                                   : " (streaming)");
            measured_tag();
        }
        text_wrapped("%s", acceptance_text(r).c_str());
        for (const std::string& line : run_explanations(*snap.measured, snap.config.draft()))
            warning_wrapped("%s", line.c_str());
        if (rs.cost_ratio.n > 1)
            text_wrapped("measured cost ratio c = %.3f [%.3f, %.3f] (draft pass / target step)", rs.cost_ratio.median,
                         rs.cost_ratio.lo, rs.cost_ratio.hi);
        else if (r.draft_cost_ratio() > 0)
            text_wrapped("measured cost ratio c = %.3f (draft pass / target step)", r.draft_cost_ratio());
        waterfall(r);
        verify_curve(r);
        recurrent_cost(r);
        if (r.draft_bytes_per_pass() > 0) {
            text_wrapped("draft reads %s of weights per pass",
                         format_bytes(uint64_t(r.draft_bytes_per_pass())).c_str());
            if (r.draft_bytes_modeled()) {
                modeled_tag();
            } else {
                same_line_if_fits(text_width("(counted from its buffers)"));
                text_disabled_wrapped("(counted from its buffers)");
            }
        }
        if (r.draft_flops_per_pass() > 0) {
            const double bytes = r.draft_bytes_per_pass();
            if (bytes > 0)
                text_wrapped("draft computes %s per pass (%.1f FLOP per byte of weights)",
                             format_flops(r.draft_flops_per_pass()).c_str(), r.draft_flops_per_pass() / bytes);
            else
                text_wrapped("draft computes %s per pass", format_flops(r.draft_flops_per_pass()).c_str());
            help_marker(
                "Counted from the shapes each pass ran: projections, FFN, LM head and attention, 2 per "
                "multiply-add. A pruned draft's kernels expand its zeros and multiply them too, so "
                "pruning lowers the bytes, not the FLOPs.");
        }
        // Whether speculation can pay off here: a target whose weights fit in the last-level cache is compute-bound,
        // so a verification pass of gamma + 1 tokens costs nearly gamma + 1 steps.
        const double target_bytes = r.levels.empty() || r.levels[0].n_forward <= 0
                                        ? 0.0
                                        : double(r.levels[0].bytes_weights) / double(r.levels[0].n_forward);
        if (snap.llc_bytes && target_bytes > 0) {
            if (target_bytes <= double(*snap.llc_bytes))
                warning_wrapped(
                    "The target's weights (%s per pass) fit in this CPU's %s last-level cache: its "
                    "verification pass is compute-bound here, so speculation can hardly pay off.",
                    format_bytes(uint64_t(target_bytes)).c_str(), format_bytes(*snap.llc_bytes).c_str());
            else
                text_disabled_wrapped("target reads %s per pass, beyond the %s last-level cache: memory-bound",
                                      format_bytes(uint64_t(target_bytes)).c_str(),
                                      format_bytes(*snap.llc_bytes).c_str());
        }
        const MeasuredView& v = *snap.measured;
        if (v.lossless_checked > 0)
            text_wrapped("lossless check: %d of %d greedy prompts identical to plain decoding",
                         v.lossless_checked - v.lossless_mismatches, v.lossless_checked);
        if (!v.drafter.empty()) text_disabled_wrapped("draft: %s; prompts: %s", v.drafter.c_str(), v.source.c_str());
        measured_status(snap);
    } else {
        empty_state(snap.measured_note.c_str());
    }
    if (snap.measuring_available && ImGui::Button("Run now")) actions.push(ActionRunMeasured{});
    if (snap.measuring_available) {
        ImGui::SameLine();
        bool autorun = snap.config.prefs.auto_measure;
        if (ImGui::Checkbox("auto-measure", &autorun)) {
            AppConfig cfg          = snap.config;
            cfg.prefs.auto_measure = autorun;
            actions.push(ActionSetConfig{cfg});
        }
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "On: every edit measures again after 300 ms of quiet. Off: only Run now measures (for a big model, "
                "where a run takes minutes); the modeled panels follow every edit either way.");
        same_line_if_fits(button_width("Tune..."));
        if (ImGui::Button("Tune...")) actions.push(ActionShowPanel{"Tune"});
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("Find the fastest drafter, draft length, tree and cascade for the open model, measured");
        same_line_if_fits(button_width("Run history..."));
        if (ImGui::Button("Run history...")) actions.push(ActionShowPanel{"Run history"});
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("Every finished run: pin runs to compare them as pictures");
        const engine::SpecConfig& spec     = snap.config.spec;
        const std::optional<RunEstimate> e = snap.measured ? estimate_run(spec, snap.measured->stats.tokens_per_s,
                                                                          snap.measured->stats.baseline_tokens_per_s)
                                                           : std::nullopt;
        if (e)
            text_disabled_wrapped("%s", describe_estimate(*e, spec).c_str());
        else
            text_disabled_wrapped("the first run measures the decode speed a run's time is estimated from");
    }
    ImGui::End();
}

}  // namespace speculum::ui
