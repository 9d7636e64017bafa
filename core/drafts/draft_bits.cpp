// Bit accounting of draft specs (see draft_bits.h).
#include "core/drafts/draft_bits.h"

#include "core/analytic/cassandra.h"
#include "core/drafts/dflash.h"
#include "core/drafts/eagle3.h"
#include "core/drafts/mtp_drafter.h"
#include "core/drafts/weight_transforms.h"
#include "kernels/compact.h"

#include <cmath>
#include <optional>

namespace speculum::drafts {

using kernels::GgmlType;

namespace {

// Bits of one stored value, without the per-block scale.
double value_bits(GgmlType t) {
    switch (t) {
        case GgmlType::Q8_0:
        case GgmlType::Q8_0_X8:
            return 8;
        case GgmlType::Q4_0:
        case GgmlType::MXFP4:
            return 4;
        default: {
            const kernels::GgmlTypeTraits* tr = kernels::ggml_type_traits(t);
            return 8.0 * double(tr->type_size) / double(tr->block_size);
        }
    }
}

double type_bits(GgmlType t) {
    const kernels::GgmlTypeTraits* tr = kernels::ggml_type_traits(t);
    return 8.0 * double(tr->type_size) / double(tr->block_size);
}

uint64_t bits_to_bytes(double bits) {
    return static_cast<uint64_t>(std::ceil(bits / 8.0 - 1e-9));
}

}  // namespace

MatrixBits matrix_bits(GgmlType type, double pruned, int32_t trunc_bits, int64_t cols, bool compact) {
    MatrixBits b;
    b.real              = type_bits(type);
    b.is_modeled        = pruned > 0.0 || trunc_bits > 0;
    const double scales = b.real - value_bits(type);
    // value bits v = 1 + e + m with e = 8 stored exponent bits: (1 - p)(v - t) + map.
    b.modeled =
        analytic::compact_element_bits(pruned, trunc_bits, 8, int(value_bits(type)) - 9, pruned > 0.0 ? 1.0 : 0.0) +
        scales;
    if (!b.is_modeled) b.modeled = b.real;
    const auto f = kernels::compact_format_for(type, pruned > 0.0, trunc_bits);
    if (b.is_modeled && compact && f && cols > 0) {
        b.real       = kernels::compact_bits_per_element(*f, cols, 1.0 - pruned);
        b.modeled    = b.real;
        b.is_modeled = false;
        b.compact    = true;
    }
    return b;
}

DraftBits draft_bits(const DraftSpec& spec, const model::Model& target, const model::Model* draft_model) {
    const model::Hparams& hp     = target.hparams();
    const model::ModelWeights& W = target.weights();
    spec.validate(hp.n_layer);
    DraftBits b;
    // Verification side.
    {
        double bits = 0, elems = 0;
        auto add = [&](const model::WeightView& v) {
            bits += type_bits(v.type) * double(v.rows * v.cols);
            elems += double(v.rows * v.cols);
        };
        for (const model::LayerWeights& L : W.layers)
            for (const model::WeightView* v : L.matrices()) add(*v);
        add(W.output);
        b.verify_weight_bits_per_element  = bits / elems;
        b.verify_weight_bytes_per_forward = target.weight_bytes_per_token();
        b.verify_kv_bytes_per_token       = 2ull * 4 * uint64_t(hp.n_layer) * uint64_t(hp.n_embd_kv());
    }
    if (is_statistical(spec.kind)) {
        b.kv_bits_per_element_real = 0;
        b.note                     = spec.kind == DraftKind::maxgram
                                         ? "max-gram reads no weights and keeps no KV (a suffix search over token ids)"
                                         : std::string(to_string(spec.ngram.method)) +
                           " reads no weights and keeps no KV (statistics over token ids)";
        return b;
    }
    // An MTP draft runs a NextN block and head, the target's own or a module's (plus its fusion, counted below).
    const std::optional<model::NextnWeights> nextn =
        spec.kind == DraftKind::mtp ? std::optional<model::NextnWeights>(mtp_layer_for(spec, target)) : std::nullopt;
    const std::optional<model::Model> mtp =
        nextn ? std::optional<model::Model>(mtp_block_model(target, *nextn)) : std::nullopt;
    // An EAGLE-3 head runs its own layer and head (plus fc, counted below).
    const std::optional<Eagle3Head> e3 =
        spec.kind == DraftKind::eagle3
            ? std::optional<Eagle3Head>(load_eagle3_head(eagle3_head_path(spec.model_path), target))
            : std::nullopt;
    // A block draft runs its layers and the head (plus fc and its K/V products, counted below).
    const bool block = spec.kind == DraftKind::dflash || spec.kind == DraftKind::dspark;
    const std::optional<DflashModel> bd =
        block ? std::optional<DflashModel>(
                    load_dflash(dflash_path(spec.model_path, spec.kind == DraftKind::dspark), target))
              : std::nullopt;
    const model::Model& m = mtp  ? *mtp
                            : e3 ? e3->block
                            : bd ? bd->decoder
                                 : (spec.kind == DraftKind::model && draft_model ? *draft_model : target);
    if (spec.kind == DraftKind::model && !draft_model)
        throw std::invalid_argument("draft_bits: kind \"model\" needs the loaded draft model");
    const model::Hparams& dh      = m.hparams();
    const model::ModelWeights& DW = m.weights();

    const bool self      = spec.kind == DraftKind::self;
    const float p        = self ? spec.prune.ratio : 0.0f;
    const int32_t t      = self ? spec.weight_trunc_bits : 0;
    const WeightFormat f = self && t > 0 && spec.weight_format == WeightFormat::same
                               ? WeightFormat::bf16
                               : (self ? spec.weight_format : WeightFormat::same);
    auto runs            = [&](int32_t il, const std::vector<int32_t>& skip) {
        if (!self) return true;
        if (spec.exit_layer >= 0 && il > spec.exit_layer) return false;
        for (int32_t s : skip)
            if (s == il) return false;
        return true;
    };
    double bits_real = 0, bits_mod = 0, elems = 0, j_bits = 0, v_bits = 0;
    bool modeled = false, subset = self && (t == 0 || spec.trunc_rounding == MantissaRounding::toward_zero);
    uint64_t small_bytes = DW.token_embd.row_bytes();  // norms, biases and one embedding row (f32 / stored)
    auto add             = [&](const model::WeightView& v, bool prune, bool format) {
        const int64_t n = v.rows * v.cols;
        const int64_t pruned =
            prune && p > 0.0f ? (spec.prune.per_row ? v.rows * prune_count(p, v.cols) : prune_count(p, n)) : 0;
        const GgmlType stored = format ? output_type(f, v.type) : v.type;
        const int32_t tb      = format && stored == GgmlType::BF16 ? t : 0;
        const MatrixBits mb   = matrix_bits(stored, double(pruned) / double(n), tb, v.cols, self && spec.compact);
        bits_real += mb.real * double(n);
        bits_mod += mb.modeled * double(n);
        elems += double(n);
        modeled           = modeled || mb.is_modeled;
        b.weights_compact = b.weights_compact || mb.compact;
        // J's B is the stored bits per element of what the draft reads, less the truncated bits: the target's type
        // (16 BF16/F16, 8.5 Q8_0, ...), or, where the draft truncates mantissas, the float format it re-encodes the
        // weights in (BF16): a quantized target has no mantissa, and 4.5 - 5 went negative for Q4_0 at t = 5.
        const double b_bits = tb > 0 ? type_bits(stored) : type_bits(v.type);
        j_bits += (1.0 - double(pruned) / double(n)) * (b_bits - tb) * double(n);
        // Verification data: the full value of each pruned element and the truncated low bits of each kept one.
        v_bits += double(pruned) * type_bits(v.type) + double(n - pruned) * tb;
        const bool float_src = v.type == GgmlType::F32 || v.type == GgmlType::F16 || v.type == GgmlType::BF16;
        if (!float_src || (format && f != WeightFormat::same && !(f == WeightFormat::bf16 && v.type == GgmlType::BF16)))
            subset = false;
    };
    int32_t attn_layers = 0;
    for (int32_t il = 0; il < dh.n_layer; ++il) {
        const model::LayerWeights& L = DW.layers[size_t(il)];
        if (runs(il, spec.skip_attn)) {
            ++attn_layers;
            for (const model::WeightView* v : {&L.wq, &L.wk, &L.wv, &L.wo}) add(*v, self && spec.prune.attention, self);
            small_bytes += L.attn_vector_bytes();
        }
        if (runs(il, spec.skip_ffn)) {
            if (dh.moe()) {  // a token reads its experts' matrices (every expert has one shape and type)
                const int32_t used = self && spec.experts_used > 0 ? spec.experts_used : dh.n_expert_used;
                for (int32_t x = 0; x < used; ++x)
                    for (const model::WeightView* v : {&L.w_gate, &L.w_up, &L.w_down})
                        add(model::LayerWeights::expert(*v, 0, dh.n_expert), self && spec.prune.ffn, self);
            } else {
                for (const model::WeightView* v : {&L.w_gate, &L.w_up, &L.w_down})
                    add(*v, self && spec.prune.ffn, self);
            }
            small_bytes += L.ffn_vector_bytes();
        }
    }
    add(DW.output, self && spec.prune.output, self && spec.format_output);
    small_bytes += DW.output_norm.size() * sizeof(float);
    if (nextn) {
        add(nextn->eh_proj, false, false);
        small_bytes += (nextn->enorm.size() + nextn->hnorm.size()) * sizeof(float);
    }
    if (e3) {  // fc makes the states of committed positions: once per step for the first drafted token's row
        add(e3->fc, false, false);
        small_bytes += e3->hidden_norm.size() * sizeof(float);
    }
    if (bd) {  // fc fuses the target's states of the committed positions; DSpark's heads read w2 per drafted row
        add(bd->fc, false, false);
        small_bytes += bd->enc_norm.size() * sizeof(float);
        if (bd->dspark_heads()) add(bd->markov_w2, false, false);
    }

    b.weight_elements_per_forward   = static_cast<int64_t>(elems);
    b.weight_bits_per_element_real  = bits_real / elems;
    b.weight_bits_per_element       = bits_mod / elems;
    b.weights_modeled               = modeled;
    b.weight_bytes_per_forward_real = bits_to_bytes(bits_real) + small_bytes;
    b.weight_bytes_per_forward      = bits_to_bytes(bits_mod) + small_bytes;
    b.j_weight_bits                 = j_bits / elems;

    const float pkv            = self ? spec.kv_drop_ratio : 0.0f;
    const int32_t tkv          = self ? spec.kv_trunc_bits : 0;
    const int64_t ekv          = dh.n_embd_kv();
    b.kv_elements_per_token    = 2 * int64_t(attn_layers) * ekv;
    b.kv_modeled               = pkv > 0.0f || tkv > 0;
    b.kv_bits_per_element_real = 32;
    if (b.kv_modeled) {
        // Per token vector of ekv values: kept values at (16 - t_kv) bits (BF16 form) or 32 (f32 kept), bitmap.
        const double kept     = double(ekv - prune_count(pkv, ekv)) / double(ekv);
        b.kv_bits_per_element = kept * (tkv > 0 ? 16.0 - tkv : 32.0) + (pkv > 0.0f ? 1.0 : 0.0);
    } else {
        b.kv_bits_per_element = 32;
    }
    b.kv_bytes_per_token_real = uint64_t(b.kv_elements_per_token) * 4;
    b.kv_bytes_per_token      = bits_to_bytes(b.kv_bits_per_element * double(b.kv_elements_per_token));
    // The cache as stored is f32 (B = 32); a truncated view is read in BF16 form (16 - t), as kv_bits_per_element.
    b.j_kv_bits = (1.0 - double(prune_count(pkv, ekv)) / double(ekv)) * (tkv > 0 ? 16.0 - tkv : 32.0);
    if (self && subset) b.verification_data_bits_per_element = v_bits / elems;
    if (spec.kind == DraftKind::model) b.note = "separate model: bits of its own weights";
    if (mtp)
        b.note = std::string(spec.model_path.empty() && hp.n_nextn > 0 ? "the target's MTP layer"
                                                                       : "an MTP module's layer") +
                 ": its block, fusion (eh_proj) and head";
    if (bd)
        b.note =
            "block draft: its layers, fc and head, read once per block (fc and the K/V of new context rows once "
            "per step; the embedding is the target's)";
    if (e3) b.note = "EAGLE-3 head: its layer, fc and head (fc counted once per pass; the embedding is the target's)";
    return b;
}

double cassandra_objective(double alpha, const DraftBits& b, int64_t n_ctx) {
    const double denom = double(b.weight_elements_per_forward) * b.j_weight_bits +
                         double(b.kv_elements_per_token) * double(n_ctx) * b.j_kv_bits;
    return denom > 0 ? alpha / denom : 0.0;
}

std::optional<double> measured_cassandra_j(const DraftSpec& spec, const model::Model& target, int64_t n_drafted,
                                           int64_t n_accepted, double mean_ctx) {
    if (spec.kind != DraftKind::self || n_drafted <= 0) return std::nullopt;
    const double acceptance = double(n_accepted) / double(n_drafted);
    return cassandra_objective(acceptance, draft_bits(spec, target), static_cast<int64_t>(mean_ctx + 0.5));
}

double bits_per_draft_token(const DraftBits& b, int64_t n_ctx) {
    return 8.0 * double(b.weight_bytes_per_forward) + 8.0 * double(b.kv_bytes_per_token) * double(n_ctx);
}

}  // namespace speculum::drafts
