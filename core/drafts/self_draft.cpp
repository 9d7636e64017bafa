// build_self_draft: the transform pipeline over the target's tensors (see self_draft.h).
#include "core/drafts/self_draft.h"

#include <chrono>
#include <stdexcept>

namespace speculum::drafts {

SelfDraft build_self_draft(const model::Model& target, const DraftSpec& spec, const ActivationNorms* norms,
                           const ProgressFn& progress, const CancelToken& cancel) {
    const auto t0 = std::chrono::steady_clock::now();
    const model::Hparams& hp = target.hparams();
    if (spec.kind != DraftKind::self) throw std::invalid_argument("build_self_draft: spec kind is not \"self\"");
    spec.validate(hp.n_layer);
    (void)norms;
    if (spec.prune.ratio > 0.0f || spec.weight_trunc_bits > 0 || spec.weight_format != WeightFormat::same ||
        spec.kv_trunc_bits > 0 || spec.kv_drop_ratio > 0.0f)
        throw std::invalid_argument("build_self_draft: weight and KV transforms are not in this build yet");
    cancel.throw_if_cancelled();
    SelfDraft d{.model = target, .forward = {}, .cost = {}};
    d.forward.exit_layer = spec.exit_layer;
    if (!spec.skip_attn.empty()) {
        d.forward.skip_attn.assign(size_t(hp.n_layer), 0);
        for (int32_t il : spec.skip_attn) d.forward.skip_attn[size_t(il)] = 1;
    }
    if (!spec.skip_ffn.empty()) {
        d.forward.skip_ffn.assign(size_t(hp.n_layer), 0);
        for (int32_t il : spec.skip_ffn) d.forward.skip_ffn[size_t(il)] = 1;
    }
    d.cost          = ForwardCostModel::of(d.model);
    d.bytes_shared  = target.weight_bytes_total();
    report(progress, 1.0, "draft ready");
    d.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return d;
}

}  // namespace speculum::drafts
