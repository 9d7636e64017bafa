// Hardware panel: profile choice and a log-log roofline drawn with ImDrawList.
#include "ui/panels/hardware_panel.h"

#include "ui/widgets.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace speculum::ui {

namespace {

constexpr double kMinIntensity = 0.1, kMaxIntensity = 1e4;  // FLOP/byte, x range of the plot

void roofline(const hw::HardwareProfile& hw, const std::vector<RooflinePoint>& points, const std::string& compute) {
    double peak = hw.peak_flops(compute), bw = hw.mem_bw_gbps * 1e9;
    ImVec2 size(ImGui::GetContentRegionAvail().x, std::max(160.0f, ImGui::GetContentRegionAvail().y - 70));
    ImVec2 p0 = ImGui::GetCursorScreenPos(), p1(p0.x + size.x, p0.y + size.y);
    ImGui::InvisibleButton("roofline", size);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(p0, p1, IM_COL32(25, 27, 32, 255));
    double y_max = peak * 3, y_min = bw * kMinIntensity / 3;
    for (const auto& p : points) y_min = std::min(y_min, p.flops_per_s / 3);  // overhead-bound points sit low
    y_min          = std::max(1.0, y_min);
    auto to_screen = [&](double intensity, double flops) {
        double fx = (std::log10(intensity) - std::log10(kMinIntensity)) /
                    (std::log10(kMaxIntensity) - std::log10(kMinIntensity));
        double fy = (std::log10(std::max(flops, y_min)) - std::log10(y_min)) / (std::log10(y_max) - std::log10(y_min));
        return ImVec2(p0.x + float(fx) * size.x, p1.y - float(fy) * size.y);
    };
    for (double i = kMinIntensity; i <= kMaxIntensity * 1.01; i *= 10) {
        ImVec2 a = to_screen(i, y_min), b = to_screen(i, y_max);
        dl->AddLine(a, ImVec2(a.x, p0.y), IM_COL32(60, 60, 70, 255));
        char label[16];
        std::snprintf(label, sizeof label, "%g", i);
        if (a.x + 2 + ImGui::CalcTextSize(label).x <= p1.x)  // the last decade's label only when it fits
            dl->AddText(ImVec2(a.x + 2, p1.y - 16), IM_COL32(150, 150, 150, 255), label);
        (void)b;
    }
    double knee = peak / bw;
    ImVec2 a = to_screen(kMinIntensity, bw * kMinIntensity), k = to_screen(knee, peak),
           e = to_screen(kMaxIntensity, peak);
    dl->AddLine(a, k, IM_COL32(230, 230, 230, 255), 2.0f);
    dl->AddLine(k, e, IM_COL32(230, 230, 230, 255), 2.0f);
    char text[96];
    std::snprintf(text, sizeof text, "%.0f GB/s", hw.mem_bw_gbps);
    dl->AddText(ImVec2(a.x + 4, a.y - 18), IM_COL32(200, 200, 200, 255), text);
    std::snprintf(text, sizeof text, "%.1f TFLOP/s %s", peak / 1e12, compute.c_str());
    // Under the roof (the chart's title is above it), moved left where it would run past the chart's edge.
    const float roof_x = std::max(p0.x + 4, std::min(k.x + 4, p1.x - ImGui::CalcTextSize(text).x - 4));
    dl->AddText(ImVec2(roof_x, k.y + 4), IM_COL32(200, 200, 200, 255), text);
    for (size_t i = 0; i < points.size(); ++i) {
        ImVec2 p = to_screen(std::clamp(points[i].intensity, kMinIntensity, kMaxIntensity), points[i].flops_per_s);
        dl->AddCircleFilled(p, 5, level_color(i == 2 ? 1 : 0));
        if (i == 1) dl->AddCircle(p, 8, IM_COL32(255, 200, 80, 255), 0, 2);
    }
    dl->AddText(ImVec2(p0.x + 4, p0.y + 2), IM_COL32(150, 150, 150, 255), "FLOP/s vs FLOP/byte (log-log)");
    if (ImGui::IsItemHovered()) {  // the readout under the mouse, and the nearest operating point
        const ImVec2 mp = ImGui::GetIO().MousePos;
        const double fx = (mp.x - p0.x) / size.x, fy = (p1.y - mp.y) / size.y;
        const double intensity =
            std::pow(10.0, std::log10(kMinIntensity) + fx * (std::log10(kMaxIntensity) - std::log10(kMinIntensity)));
        const double flops = std::pow(10.0, std::log10(y_min) + fy * (std::log10(y_max) - std::log10(y_min)));
        std::string tip    = "intensity " + std::to_string(intensity).substr(0, 6) + " FLOP/byte, " +
                          std::to_string(flops / 1e12).substr(0, 6) + " TFLOP/s (roof " +
                          std::to_string(std::min(peak, bw * intensity) / 1e12).substr(0, 6) + ")";
        float best = 24;
        for (const auto& q : points) {
            const ImVec2 at = to_screen(std::clamp(q.intensity, kMinIntensity, kMaxIntensity), q.flops_per_s);
            const float d   = std::hypot(at.x - mp.x, at.y - mp.y);
            if (d < best) {
                best = d;
                char line[160];
                std::snprintf(line, sizeof line, "\n%s: %.2f FLOP/byte, %.3f TFLOP/s", q.label.c_str(), q.intensity,
                              q.flops_per_s / 1e12);
                tip = tip.substr(0, tip.find('\n')) + line;
            }
        }
        ImGui::SetTooltip("%s", tip.c_str());
    }
}

}  // namespace

void HardwarePanel::draw(const UiSnapshot& snap, UiActions& actions, bool fill) {
    if (!begin_panel(title, &visible, ImVec2(0.75f, 0.0f), ImVec2(0.25f, 0.5f), fill)) return;
    const char* current = snap.profile_index >= 0 ? snap.profiles[size_t(snap.profile_index)].name.c_str() : "(none)";
    if (snap.profiles.empty())
        empty_state("No hardware profiles found (resources/hardware).");
    else if (ImGui::BeginCombo("profile", current)) {
        if (ImGui::Selectable("(none)", snap.profile_index < 0)) {
            AppConfig cfg = snap.config;
            cfg.modeled.hardware_profile.clear();
            actions.push(ActionSetConfig{cfg});
        }
        for (size_t i = 0; i < snap.profiles.size(); ++i) {
            if (ImGui::Selectable(snap.profiles[i].name.c_str(), int(i) == snap.profile_index)) {
                AppConfig cfg                = snap.config;
                cfg.modeled.hardware_profile = snap.profiles[i].id;
                actions.push(ActionSetConfig{cfg});
            }
        }
        ImGui::EndCombo();
    }
    const bool have_machine = std::any_of(snap.profiles.begin(), snap.profiles.end(),
                                          [](const hw::HardwareProfile& p) { return p.id == hw::kMachineProfileId; });
    if (ImGui::SmallButton(have_machine ? "Measure this machine again" : "Measure this machine"))
        actions.push(ActionMeasureMachine{});
    help_marker(
        "Memory bandwidth, SGEMM throughput and call overhead, measured by speculum-cli calibrate's "
        "microbenchmarks (a few seconds), cached, and used as the default profile from then on.");
    if (snap.profile_index < 0) {
        empty_state("Choose a hardware profile to see the roofline and the projected speedup on that device.");
        ImGui::End();
        return;
    }
    const auto& hw = snap.profiles[size_t(snap.profile_index)];
    const auto& m  = snap.modeled;
    // The peak the roofline draws: the target's compute type, or fp32 where the profile states no such figure.
    const std::string& compute = m.target_spec.compute;
    const bool stated          = compute == "fp16"   ? hw.fp16_tflops > 0
                                 : compute == "bf16" ? hw.bf16_tflops > 0
                                 : compute == "int8" ? hw.int8_tops > 0
                                                     : hw.fp32_tflops > 0;
    text_wrapped("%s (%s)%s: %.0f GB/s, %.0f GB, %s %.2f TFLOP/s%s, %.0f us/call", hw.id.c_str(), hw.kind.c_str(),
                 hw.measured ? ", measured" : "", hw.mem_bw_gbps, hw.mem_gb, compute.c_str(),
                 hw.peak_flops(compute) / 1e12, stated ? "" : " (the fp32 figure: none stated for this type)",
                 hw.call_overhead_us);
    if (!hw.estimates.empty() || !hw.sources.empty()) {
        std::string est;
        for (const std::string& e : hw.estimates) est += (est.empty() ? "" : ", ") + e;
        text_disabled_wrapped(
            "%s", est.empty() ? "every figure from a stated source (hover)" : ("estimates: " + est).c_str());
        if (ImGui::IsItemHovered()) {
            std::string tip;
            for (const auto& [field, source] : hw.sources) tip += field + ": " + source + "\n";
            ImGui::SetTooltip("%s", tip.c_str());
        }
    }
    text_wrapped("target: %s parameters at %.1f bits%s", format_count(int64_t(m.target_spec.params_b * 1e9)).c_str(),
                 m.target_spec.weight_bits,
                 m.target_from_model ? " (the open model)" : " (LLaMA-7B fp16: no model open)");
    modeled_tag();
    if (!m.error.empty()) text_colored_wrapped(ImVec4(1, 0.4f, 0.4f, 1), "%s", m.error.c_str());
    roofline(hw, m.roofline, m.target_spec.compute);
    for (size_t i = 0; i < m.roofline.size(); ++i) {
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(level_color(i == 2 ? 1 : 0)), "o");
        ImGui::SameLine();
        text_wrapped("%s: %.2f FLOP/B, %.2f TFLOP/s", m.roofline[i].label.c_str(), m.roofline[i].intensity,
                     m.roofline[i].flops_per_s / 1e12);
    }
    ImGui::End();
}

}  // namespace speculum::ui
