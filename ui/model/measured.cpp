// Plain words for a measured run's figures (see measured.h).
#include "ui/model/measured.h"

#include "core/format.h"

#include <cmath>

namespace speculum::ui {

std::string interval_text(double coverage, int n) {
    if (coverage >= 0.95 - 1e-9) return "95 % interval";
    // The distribution-free interval of a median needs 6 pairs for 95 %: 1 - 2 * 0.5^6 > 0.95.
    return fmt("%.0f %% interval", 100.0 * coverage) + " (" + std::to_string(n) + (n == 1 ? " pair" : " pairs") +
           "; a 95 % interval of the median needs 6)";
}

std::string acceptance_text(int64_t accepted, int64_t drafted) {
    if (drafted <= 0) return "acceptance: no token drafted";
    return fmt("acceptance %.0f %%", 100.0 * double(accepted) / double(drafted)) + " (" + std::to_string(accepted) +
           " of " + std::to_string(drafted) + " drafted tokens accepted)";
}

std::string acceptance_text(const engine::RunStats& s) {
    return acceptance_text(s.n_accepted, s.n_drafted);
}

std::vector<std::string> run_explanations(const MeasuredView& v, const drafts::DraftSpec& level1) {
    std::vector<std::string> out;
    const engine::RunStats& s = v.stats;
    if (s.n_steps > 0 && s.n_drafted == 0)
        out.push_back("0 tokens were drafted in " + std::to_string(s.n_steps) +
                      " target passes: the drafter found nothing to propose (an n-gram or suffix drafter drafts only "
                      "from repeats in the context), so this is plain decoding plus the drafter's lookups. The "
                      "modeled figures assume an acceptance it never had the chance to show.");
    const double c = v.repeats.cost_ratio.n > 1 ? v.repeats.cost_ratio.median : s.draft_cost_ratio();
    if (c >= 1.0) {
        const drafts::DraftSpec plain;
        const bool identity = level1.kind == drafts::DraftKind::self && level1.prune == plain.prune &&
                              level1.weight_trunc_bits == 0 && level1.weight_format == plain.weight_format &&
                              level1.exit_layer < 0 && level1.skip_attn.empty() && level1.skip_ffn.empty() &&
                              level1.kv_trunc_bits == 0 && level1.kv_drop_ratio == 0 && level1.experts_used == 0;
        out.push_back(fmt("A draft pass costs %.2f target steps (c >= 1): ", c) +
                      (identity ? "this self-draft keeps every layer and every weight, so it is the target itself "
                                  "run a second time (plus the catch-up of the tokens it did not draft). Prune, "
                                  "truncate, exit early or skip layers to make it cheaper."
                                : "even a draft the target always accepted would be slower than plain decoding at "
                                  "this draft length."));
    }
    if (v.repeats.loaded())
        out.push_back(
            fmt("Other processes used %.0f %% of the CPU during this run: its times, and so its speedup, "
                "are suspect. Measure again when the machine is quiet.",
                100.0 * *v.repeats.other_load));
    return out;
}

}  // namespace speculum::ui
