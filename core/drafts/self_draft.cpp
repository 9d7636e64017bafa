// build_self_draft: the transform pipeline over the target's tensors (see self_draft.h).
#include "core/drafts/self_draft.h"

#include "core/drafts/draft_bits.h"
#include "core/drafts/kv_transforms.h"
#include "core/drafts/weight_transforms.h"
#include "kernels/compact.h"

#include <chrono>
#include <cmath>
#include <stdexcept>

namespace speculum::drafts {

namespace {

bool layer_runs(const DraftSpec& s, int32_t il, const std::vector<int32_t>& skip) {
    if (s.exit_layer >= 0 && il > s.exit_layer) return false;
    for (int32_t x : skip)
        if (x == il) return false;
    return true;
}

}  // namespace

SelfDraft build_self_draft(const model::Model& target, const DraftSpec& spec, const ActivationNorms* norms,
                           const ProgressFn& progress, const CancelToken& cancel) {
    const auto t0            = std::chrono::steady_clock::now();
    const model::Hparams& hp = target.hparams();
    if (spec.kind != DraftKind::self) throw std::invalid_argument("build_self_draft: spec kind is not \"self\"");
    spec.validate(hp.n_layer);
    const bool wanda = spec.uses_wanda();
    if (wanda && (!norms || norms->sites.size() != size_t(hp.n_layer) || norms->head.size() != size_t(hp.n_embd)))
        throw std::invalid_argument(
            "build_self_draft: Wanda pruning needs activation norms of this target "
            "(collect_activation_norms)");
    // A hybrid's DeltaNet matrices have no compact or reduced-precision path yet: its self-drafts skip layers or exit
    // early (a skipped DeltaNet layer leaves the draft's own state alone).
    if (hp.hybrid() && (spec.prune.ratio > 0 || spec.weight_trunc_bits > 0 || spec.weight_format != WeightFormat::same))
        throw std::invalid_argument(
            "build_self_draft: pruning, truncation and weight formats are not done for a hybrid (Gated DeltaNet) "
            "target; its self-drafts skip layers (skip_attn, skip_ffn) or exit early (exit_layer)");
    // Mixture of experts: the experts are pruned and truncated as stacked matrices (row by row, as dense ones), but
    // stay dense (the forward cuts experts out of the stack by rows), and Wanda has no per-expert activations yet.
    if (hp.moe() && wanda && spec.prune.ffn)
        throw std::invalid_argument(
            "build_self_draft: Wanda pruning of a mixture of experts' FFN is not supported "
            "(prune.method \"magnitude\", or prune.ffn false)");
    const WeightFormat format = spec.weight_trunc_bits > 0 && spec.weight_format == WeightFormat::same
                                    ? WeightFormat::bf16
                                    : spec.weight_format;

    model::ModelWeights w = target.weights();  // views: every tensor starts shared with the target
    SelfDraft d{.model = target, .forward = {}, .cost = {}, .storage_note = {}, .matrices = {}};
    const size_t n_total = 2 + 7 * size_t(hp.n_layer);
    size_t done          = 0;
    // Transforms one matrix in place in `w` when its plan is not the identity; records what happened.
    auto apply = [&](model::WeightView& v, const std::string& name, bool read, bool prune, bool fmt,
                     std::span<const float> norm) {
        cancel.throw_if_cancelled();
        report(progress, double(done++) / double(n_total), name);
        MatrixTransform tr;
        tr.prune_ratio = read && prune ? spec.prune.ratio : 0.0f;
        tr.per_row     = spec.prune.per_row;
        if (wanda) tr.channel_norm = norm;
        tr.format     = read && fmt ? format : WeightFormat::same;
        tr.trunc_bits = tr.format == WeightFormat::bf16 ? spec.weight_trunc_bits : 0;
        tr.rounding   = spec.trunc_rounding;
        MatrixRecord rec;
        rec.name     = name;
        rec.type     = v.type;
        rec.elements = v.rows * v.cols;
        if (!tr.identity()) {
            TransformedMatrix t = transform_matrix(v, tr);
            v                   = std::move(t.view);
            rec.type            = v.type;
            rec.pruned          = t.n_pruned;
            rec.trunc_bits      = tr.trunc_bits;
            rec.shared          = false;
            if (spec.compact && !(hp.moe() && name.find("_exps.") != std::string::npos)) {
                if (auto f = compact_format_for(v.type, t.n_pruned > 0, tr.trunc_bits)) {
                    v           = model::make_compact_view(kernels::CompactMatrix::encode(*f, v.data, v.rows, v.cols));
                    rec.compact = true;
                }
            }
        }
        d.matrices.push_back(rec);
    };
    auto site = [&](int32_t il, model::ActivationSite s) -> std::span<const float> {
        if (!wanda) return {};
        return norms->sites[size_t(il)][size_t(s)];
    };
    // Embeddings: Wanda has no activation for a lookup table, so its rows are ranked by magnitude.
    apply(w.token_embd, "token_embd.weight", true, spec.prune.embeddings, false, {});
    for (int32_t il = 0; il < hp.n_layer; ++il) {
        model::LayerWeights& L = w.layers[size_t(il)];
        const std::string p    = "blk." + std::to_string(il) + ".";
        const bool ra = layer_runs(spec, il, spec.skip_attn), rf = layer_runs(spec, il, spec.skip_ffn);
        const bool pa = spec.prune.attention, pf = spec.prune.ffn;
        using S = model::ActivationSite;
        apply(L.wq, p + "attn_q.weight", ra, pa, true, site(il, S::attn_in));
        apply(L.wk, p + "attn_k.weight", ra, pa, true, site(il, S::attn_in));
        apply(L.wv, p + "attn_v.weight", ra, pa, true, site(il, S::attn_in));
        apply(L.wo, p + "attn_output.weight", ra, pa, true, site(il, S::attn_out));
        const std::string ffn = hp.moe() ? "_exps.weight" : ".weight";
        apply(L.w_gate, p + "ffn_gate" + ffn, rf, pf, true, site(il, S::ffn_in));
        apply(L.w_up, p + "ffn_up" + ffn, rf, pf, true, site(il, S::ffn_in));
        apply(L.w_down, p + "ffn_down" + ffn, rf, pf, true, site(il, S::ffn_down));
    }
    apply(w.output, "output.weight", true, spec.prune.output, spec.format_output,
          wanda ? std::span<const float>(norms->head) : std::span<const float>());

    // Truncation keeps BF16's mantissa: an F16 target's matrices are converted first, and the name says so.
    if (format == WeightFormat::bf16 && target.weights().layers.front().wq.type == kernels::GgmlType::F16)
        d.storage_note = "f16 target converted to bf16";
    // Expert-level pruning: the same experts, fewer of them per token (the router's best; weights renormalised).
    model::Hparams dhp = hp;
    if (spec.experts_used > 0) {
        if (!hp.moe())
            throw std::invalid_argument("draft.experts_used: the target " + target.name() +
                                        " is not a mixture of experts");
        if (spec.experts_used > hp.n_expert)
            throw std::invalid_argument("draft.experts_used: " + std::to_string(spec.experts_used) +
                                        " of the target's " + std::to_string(hp.n_expert) + " experts");
        dhp.n_expert_used = spec.experts_used;
    }
    d.model = model::Model::from_weights(
        dhp, std::move(w),
        target.name() + " [" + spec.describe() + (d.storage_note.empty() ? "" : "; " + d.storage_note) + "]");
    d.forward.exit_layer = spec.exit_layer;
    if (!spec.skip_attn.empty()) {
        d.forward.skip_attn.assign(size_t(hp.n_layer), 0);
        for (int32_t il : spec.skip_attn) d.forward.skip_attn[size_t(il)] = 1;
    }
    if (!spec.skip_ffn.empty()) {
        d.forward.skip_ffn.assign(size_t(hp.n_layer), 0);
        for (int32_t il : spec.skip_ffn) d.forward.skip_ffn[size_t(il)] = 1;
    }
    d.forward.kv_transform = make_kv_hook({spec.kv_drop_ratio, spec.kv_trunc_bits, spec.trunc_rounding});

    // Cost: the real bytes of the draft's views, with pruned / truncated matrices at their modeled compact size.
    d.cost                        = ForwardCostModel::of(d.model);
    const model::ModelWeights& dw = d.model.weights();
    auto modeled_bytes            = [&](const MatrixRecord& r, const model::WeightView& v) -> int64_t {
        if (r.compact) return 0;  // its real bytes are the compact streams
        const MatrixBits mb = matrix_bits(r.type, double(r.pruned) / double(r.elements), r.trunc_bits);
        if (!mb.is_modeled) return 0;
        d.cost.modeled = true;
        return static_cast<int64_t>(std::ceil(mb.modeled * double(r.elements) / 8.0 - 1e-9)) - int64_t(v.n_bytes());
    };
    for (int32_t il = 0; il < hp.n_layer; ++il) {
        const model::LayerWeights& L = dw.layers[size_t(il)];
        const MatrixRecord* r        = &d.matrices[1 + 7 * size_t(il)];
        int64_t da = 0, df = 0;
        for (const auto& [k, v] : {std::pair{0, &L.wq}, {1, &L.wk}, {2, &L.wv}, {3, &L.wo}})
            da += modeled_bytes(r[k], *v);
        for (const auto& [k, v] : {std::pair{4, &L.w_gate}, {5, &L.w_up}, {6, &L.w_down}})
            df += modeled_bytes(r[k], *v);
        if (dhp.moe()) df = df / dhp.n_expert * dhp.n_expert_used;  // a token reads its experts' share
        d.cost.attn_bytes[size_t(il)] = uint64_t(int64_t(d.cost.attn_bytes[size_t(il)]) + da);
        d.cost.ffn_bytes[size_t(il)]  = uint64_t(int64_t(d.cost.ffn_bytes[size_t(il)]) + df);
    }
    d.cost.head_bytes = uint64_t(int64_t(d.cost.head_bytes) + modeled_bytes(d.matrices.back(), dw.output));
    if (spec.kv_drop_ratio > 0.0f || spec.kv_trunc_bits > 0) {
        const DraftBits bits      = draft_bits(spec, target);
        d.cost.kv_bytes_per_value = bits.kv_bits_per_element / 8.0;
        d.cost.kv_modeled         = true;
    }

    auto account = [&](const model::WeightView& v, const MatrixRecord& r) {
        (r.shared ? d.bytes_shared : d.bytes_owned) += v.n_bytes();
    };
    account(dw.token_embd, d.matrices[0]);
    for (int32_t il = 0; il < hp.n_layer; ++il) {
        const model::LayerWeights& L = dw.layers[size_t(il)];
        const MatrixRecord* r        = &d.matrices[1 + 7 * size_t(il)];
        account(L.wq, r[0]), account(L.wk, r[1]), account(L.wv, r[2]), account(L.wo, r[3]);
        account(L.w_gate, r[4]), account(L.w_up, r[5]), account(L.w_down, r[6]);
    }
    if (!(hp.tied_output && d.matrices.back().shared && d.matrices[0].shared)) account(dw.output, d.matrices.back());
    report(progress, 1.0, "draft ready");
    d.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return d;
}

SplitTarget split_target(const model::Model& target, const model::Model& draft, const ProgressFn& progress,
                         const CancelToken& cancel) {
    const model::Hparams& hp      = target.hparams();
    model::ModelWeights w         = target.weights();  // views of the target's tensors
    const model::ModelWeights& dw = draft.weights();
    if (dw.layers.size() != w.layers.size())
        throw std::invalid_argument("split_target: the draft has " + std::to_string(dw.layers.size()) +
                                    " layers, the target " + std::to_string(w.layers.size()));
    SplitTarget out{.model = target};
    const size_t n_total = 1 + 7 * size_t(hp.n_layer);
    size_t done          = 0;
    auto split           = [&](model::WeightView& tv, const model::WeightView& dv, const std::string& name) {
        cancel.throw_if_cancelled();
        report(progress, double(done++) / double(n_total), name);
        if (!dv.compact || dv.rest || dv.compact->format().dense != kernels::GgmlType::BF16) return;
        try {
            const model::WeightView v = model::make_split_view(dv.compact, tv);
            out.bytes_dense += tv.n_bytes();
            out.bytes_split += v.n_bytes();
            out.bytes_draft += dv.compact->bytes();
            ++out.n_split;
            tv = v;
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("split_target: " + name + ": " + e.what());
        }
    };
    for (int32_t il = 0; il < hp.n_layer; ++il) {
        model::LayerWeights& L       = w.layers[size_t(il)];
        const model::LayerWeights& D = dw.layers[size_t(il)];
        const std::string p          = "blk." + std::to_string(il) + ".";
        split(L.wq, D.wq, p + "attn_q.weight");
        split(L.wk, D.wk, p + "attn_k.weight");
        split(L.wv, D.wv, p + "attn_v.weight");
        split(L.wo, D.wo, p + "attn_output.weight");
        split(L.w_gate, D.w_gate, p + "ffn_gate.weight");
        split(L.w_up, D.w_up, p + "ffn_up.weight");
        split(L.w_down, D.w_down, p + "ffn_down.weight");
    }
    split(w.output, dw.output, "output.weight");
    if (out.n_split == 0)
        throw std::invalid_argument(
            "split_target: the draft keeps no matrix in a compact bf16 form (it needs pruning or weight truncation "
            "of a bf16 target, compact storage)");
    out.model = model::Model::from_weights(hp, std::move(w), target.name() + " [split with its draft]");
    report(progress, 1.0, "split");
    return out;
}

}  // namespace speculum::drafts
