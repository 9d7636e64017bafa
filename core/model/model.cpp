// Model loading: GGUF tensors -> WeightViews (into the mapping, or copied into large pages), norms and biases -> f32
// vectors, and shape validation shared by file-backed and in-memory models.
#include "core/model/model.h"

#include "core/model/mtp_module.h"

#include "core/hw/large_pages.h"
#include "kernels/gemv.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

namespace speculum::model {

// ---- weight views ----

WeightView make_owned_view(kernels::GgmlType type, int64_t rows, int64_t cols, std::vector<uint8_t> bytes) {
    auto owner = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
    WeightView v;
    v.type = type;
    v.rows = rows;
    v.cols = cols;
    if (owner->size() != v.n_bytes())
        throw std::invalid_argument("make_owned_view: " + std::to_string(owner->size()) + " bytes for a (" +
                                    std::to_string(rows) + ", " + std::to_string(cols) + ") matrix needing " +
                                    std::to_string(v.n_bytes()));
    v.data       = owner->data();
    v.keep_alive = std::shared_ptr<const void>(owner, owner->data());
    return v;
}

WeightView row_range(const WeightView& v, int64_t r0, int64_t r1) {
    if (v.compact || r0 < 0 || r1 < r0 || r1 > v.rows)
        throw std::invalid_argument("row_range: rows [" + std::to_string(r0) + ", " + std::to_string(r1) + ") of a " +
                                    (v.compact ? "compact " : "") + "matrix with " + std::to_string(v.rows) + " rows");
    WeightView r = v;
    r.data       = v.row(r0);
    r.rows       = r1 - r0;
    return r;
}

WeightView gather_rows(const WeightView& v, const std::vector<int32_t>& rows) {
    // Dense rows of the stored type: a compact view decoded, a repacked Q8_0_X8 matrix unpacked to Q8_0.
    std::vector<uint8_t> dense;
    kernels::GgmlType type = v.type;
    const uint8_t* base    = static_cast<const uint8_t*>(v.data);
    if (v.compact) {
        dense = dense_copy(v);
        base  = dense.data();
    } else if (v.type == kernels::GgmlType::Q8_0_X8) {
        type = kernels::GgmlType::Q8_0;
        dense.resize(v.n_bytes());
        kernels::unpack_q8_0_x8(dense.data(), v.data, v.rows, v.cols);
        base = dense.data();
    }
    const uint64_t rb = kernels::ggml_row_size(type, static_cast<uint64_t>(v.cols));
    std::vector<uint8_t> out(rb * rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
        if (rows[i] < 0 || rows[i] >= v.rows)
            throw std::invalid_argument("gather_rows: row " + std::to_string(rows[i]) + " of a matrix with " +
                                        std::to_string(v.rows) + " rows");
        std::memcpy(&out[i * rb], base + rb * static_cast<uint64_t>(rows[i]), rb);
    }
    return make_owned_view(type, static_cast<int64_t>(rows.size()), v.cols, std::move(out));
}

WeightView LayerWeights::expert(const WeightView& stack, int32_t e, int32_t n_expert) {
    if (n_expert <= 0 || stack.rows % n_expert != 0 || e < 0 || e >= n_expert)
        throw std::invalid_argument("expert " + std::to_string(e) + " of " + std::to_string(n_expert) +
                                    " in a stack of " + std::to_string(stack.rows) + " rows");
    const int64_t per = stack.rows / n_expert;
    return row_range(stack, per * e, per * (e + 1));
}

WeightView make_compact_view(kernels::CompactMatrix m) {
    auto owner = std::make_shared<const kernels::CompactMatrix>(std::move(m));
    WeightView v;
    v.type       = owner->format().dense;
    v.rows       = owner->rows();
    v.cols       = owner->cols();
    v.data       = owner->tile(0);
    v.keep_alive = std::shared_ptr<const void>(owner, owner->tile(0));
    v.compact    = owner;
    return v;
}

WeightView make_split_view(std::shared_ptr<const kernels::CompactMatrix> draft, const WeightView& dense) {
    if (!draft) throw std::invalid_argument("make_split_view: no draft matrix");
    if (dense.compact || dense.type != kernels::GgmlType::BF16)
        throw std::invalid_argument(std::string("make_split_view: the target's matrix is ") +
                                    (dense.compact ? "compact" : kernels::ggml_type_traits(dense.type)->name) +
                                    ", not dense bf16");
    auto rest = std::make_shared<const kernels::CompactRest>(
        kernels::CompactRest::encode(*draft, dense.data, dense.rows, dense.cols));
    WeightView v;
    v.type       = kernels::GgmlType::BF16;
    v.rows       = dense.rows;
    v.cols       = dense.cols;
    v.data       = rest->tile(0);
    v.keep_alive = std::shared_ptr<const void>(rest, rest->tile(0));
    v.compact    = std::move(draft);
    v.rest       = std::move(rest);
    return v;
}

std::vector<uint8_t> dense_copy(const WeightView& v) {
    std::vector<uint8_t> out(v.row_bytes() * static_cast<uint64_t>(v.rows));
    if (v.rest)
        kernels::compact_rest_decode_rows(out.data(), *v.compact, *v.rest, 0, v.rows);
    else if (v.compact)
        kernels::compact_decode_rows(out.data(), *v.compact, 0, v.rows);
    else if (!out.empty())
        std::memcpy(out.data(), v.data, out.size());
    return out;
}

const char* weight_memory_name(WeightMemory m) {
    switch (m) {
        case WeightMemory::mapped:
            return "mapped";
        case WeightMemory::large_pages:
            return "large-pages";
        case WeightMemory::in_memory:
            return "in-memory";
        case WeightMemory::large_pages_repacked:
            return "large-pages-repacked";
        case WeightMemory::automatic:
            return "automatic";
    }
    return "unknown";
}

// ---- large pages ----

namespace {

// True when a view of these bytes is repacked by copy_to_large_pages(repack_q8): a Q8_0 matrix of whole 256-element
// blocks that is not the token embedding (looked up a row at a time, and shared by a tied output).
bool repackable(const WeightView& v, const ModelWeights& w) {
    return v.type == kernels::GgmlType::Q8_0 && !v.compact && v.cols % 256 == 0 && v.data != w.token_embd.data;
}

// Whether repackable() will hold for some matrix of this file, from its tensor infos (before the views exist):
// a layer matrix or an untied output.
bool file_has_repackable(const GgufFile& file) {
    for (const GgufTensorInfo& t : file.tensors())
        if (t.type == kernels::GgmlType::Q8_0 && t.dims.size() == 2 && t.dims[0] % 256 == 0 &&
            (t.name == "output.weight" || t.name.starts_with("blk.")))
            return true;
    return false;
}

// Copies every distinct weight matrix (a tied output shares token_embd's bytes) into one LargePageBuffer and
// points the views at it; with repack_q8, repackable() matrices are repacked to Q8_0_X8 instead of copied. False,
// leaving the views alone, when that would take more than half the available memory.
// `file`, when the views point into its mapping: each source's pages are released once copied, so the load never
// holds the file and the copy at once (peak resident memory about one copy; issue #49).
bool copy_to_large_pages(ModelWeights& w, const ProgressFn& progress, const CancelToken& cancel, bool repack_q8,
                         const GgufFile* file) {
    std::vector<WeightView*> views{&w.token_embd, &w.output};
    for (LayerWeights& L : w.layers) {
        for (WeightView* v : L.matrices()) views.push_back(v);
        if (!L.ffn_gate_inp.empty()) views.push_back(&L.ffn_gate_inp);
    }
    std::map<const void*, std::pair<uint64_t, uint64_t>> place;  // source bytes -> (offset in the buffer, bytes)
    uint64_t total = 0;
    for (const WeightView* v : views)
        if (!v->empty() && !v->compact && place.emplace(v->data, std::pair{total, v->n_bytes()}).second)
            total += (v->n_bytes() + 63) / 64 * 64;
    const uint64_t avail = hw::available_memory_bytes();
    if (total == 0 || (avail > 0 && total > avail / 2)) return false;
    auto buf = std::make_shared<hw::LargePageBuffer>(total);
    std::shared_ptr<const void> keep(buf, buf->data());
    std::map<const void*, const WeightView*> repack;  // source bytes -> a view of them, when they are repacked
    std::set<const void*> experts;                    // stacked expert matrices keep the file's row layout
    for (const LayerWeights& L : w.layers)
        if (!L.ffn_gate_inp.empty())
            for (const WeightView* v : {&L.w_gate, &L.w_up, &L.w_down}) experts.insert(v->data);
    if (repack_q8)
        for (const WeightView* v : views)
            if (!v->empty() && repackable(*v, w) && !experts.count(v->data)) repack.emplace(v->data, v);
    size_t done = 0;
    for (const auto& [src, at] : place) {
        cancel.throw_if_cancelled();
        if (const auto it = repack.find(src); it != repack.end())
            kernels::repack_q8_0_x8(buf->data() + at.first, src, it->second->rows, it->second->cols);
        else
            std::memcpy(buf->data() + at.first, src, at.second);
        if (file) file->release_pages(src, at.second);
        report(progress, static_cast<double>(++done) / static_cast<double>(place.size()),
               repack_q8 ? "repacking weights into large pages" : "copying weights to large pages");
    }
    for (WeightView* v : views) {
        if (v->empty() || v->compact) continue;  // compact draft matrices keep their own storage
        if (repack.count(v->data)) v->type = kernels::GgmlType::Q8_0_X8;
        v->data = buf->data() + place.at(v->data).first, v->keep_alive = keep;
    }
    return true;
}

// ---- tensor binding and checks ----

// Binds a tensor of the file to a view sharing ownership of the file.
WeightView view_of(const GgufFile& file, const std::shared_ptr<const GgufFile>& owner, const std::string& name) {
    const GgufTensorInfo* t = file.tensor(name);
    if (!t) file.fail("tensor '" + name + "'", "missing");
    WeightView v;
    v.type       = t->type;
    v.data       = t->data;
    v.cols       = static_cast<int64_t>(t->cols());
    v.rows       = static_cast<int64_t>(t->rows());
    v.keep_alive = std::shared_ptr<const void>(owner, t->data);
    return v;
}

// Norms and biases are small vectors: read them as f32 whatever their storage type.
std::vector<float> vector_of(const GgufFile& file, const std::string& name) {
    const GgufTensorInfo* t = file.tensor(name);
    if (!t) file.fail("tensor '" + name + "'", "missing");
    if (t->dims.size() != 1) file.fail("tensor '" + name + "'", "expected a 1-D tensor");
    if (!kernels::kernels_support(t->type))
        file.fail("tensor '" + name + "'", std::string("unsupported type ") + kernels::ggml_type_traits(t->type)->name);
    std::vector<float> out(t->n_elements);
    kernels::dequantize_row_ref(out.data(), t->type, t->data, static_cast<int64_t>(t->n_elements));
    return out;
}

// A bias of any shape (gpt-oss's per-expert biases are 2-D) read whole as f32, in the file's element order.
std::vector<float> stacked_vector_of(const GgufFile& file, const std::string& name) {
    const GgufTensorInfo* t = file.tensor(name);
    if (!t) file.fail("tensor '" + name + "'", "missing");
    if (!kernels::kernels_support(t->type) || kernels::ggml_type_traits(t->type)->block_size != 1)
        file.fail("tensor '" + name + "'", "a bias must be f32, f16 or bf16");
    std::vector<float> out(t->n_elements);
    kernels::dequantize_row_ref(out.data(), t->type, t->data, static_cast<int64_t>(t->n_elements));
    return out;
}

void check_view(const WeightView& v, int64_t rows, int64_t cols, const std::string& what, const std::string& model) {
    auto fail = [&](const std::string& why) { throw std::invalid_argument(model + ": " + what + ": " + why); };
    if (v.empty()) fail("missing");
    if (v.rows != rows || v.cols != cols)
        fail("shape (" + std::to_string(v.rows) + ", " + std::to_string(v.cols) + "), expected (" +
             std::to_string(rows) + ", " + std::to_string(cols) + ")");
    const kernels::GgmlTypeTraits* tr = kernels::ggml_type_traits(v.type);
    if (!tr || !kernels::kernels_support(v.type))
        fail(std::string("unsupported weight type ") + (tr ? tr->name : "unknown"));
    if (cols % tr->block_size != 0)
        fail("row length " + std::to_string(cols) + " is not a multiple of the " + tr->name + " block size " +
             std::to_string(tr->block_size));
}

void check_vector(const std::vector<float>& v, int64_t n, const std::string& what, const std::string& model) {
    if (static_cast<int64_t>(v.size()) != n)
        throw std::invalid_argument(model + ": " + what + ": " + std::to_string(v.size()) + " elements, expected " +
                                    std::to_string(n));
}

// Block il's tensors (llama.cpp's names, the fused forms as hp says).
LayerWeights load_layer(const GgufFile& file, const std::shared_ptr<const GgufFile>& owner, const Hparams& hp,
                        int32_t il) {
    LayerWeights L;
    const std::string p = "blk." + std::to_string(il) + ".";
    L.attn_norm         = vector_of(file, p + "attn_norm.weight");
    if (hp.is_recurrent(il)) {  // Gated DeltaNet (llama.cpp's qwen35 names)
        L.ssm_qkv    = view_of(file, owner, p + "attn_qkv.weight");
        L.ssm_z      = view_of(file, owner, p + "attn_gate.weight");
        L.ssm_beta   = view_of(file, owner, p + "ssm_beta.weight");
        L.ssm_alpha  = view_of(file, owner, p + "ssm_alpha.weight");
        L.ssm_out    = view_of(file, owner, p + "ssm_out.weight");
        L.ssm_conv1d = stacked_vector_of(file, p + "ssm_conv1d.weight");
        L.ssm_dt     = vector_of(file, p + "ssm_dt.bias");
        L.ssm_a      = vector_of(file, p + "ssm_a");
        L.ssm_norm   = vector_of(file, p + "ssm_norm.weight");
    } else if (hp.fused_qkv) {  // q, k and v stacked by rows: three views of the one tensor
        const WeightView qkv = view_of(file, owner, p + "attn_qkv.weight");
        const int64_t q = hp.n_embd_q(), kv = hp.n_embd_kv();
        L.wq = row_range(qkv, 0, q), L.wk = row_range(qkv, q, q + kv), L.wv = row_range(qkv, q + kv, q + 2 * kv);
    } else {
        L.wq = view_of(file, owner, p + "attn_q.weight");
        L.wk = view_of(file, owner, p + "attn_k.weight");
        L.wv = view_of(file, owner, p + "attn_v.weight");
    }
    if (!hp.is_recurrent(il)) L.wo = view_of(file, owner, p + "attn_output.weight");
    if (hp.attn_out_bias) L.bo = vector_of(file, p + "attn_output.bias");
    if (hp.attn_sinks) L.attn_sinks = vector_of(file, p + "attn_sinks.weight");
    if (hp.qkv_bias) {
        L.bq = vector_of(file, p + "attn_q.bias");
        L.bk = vector_of(file, p + "attn_k.bias");
        L.bv = vector_of(file, p + "attn_v.bias");
    }
    if (hp.qk_norm && !hp.is_recurrent(il)) {
        L.q_norm = vector_of(file, p + "attn_q_norm.weight");
        L.k_norm = vector_of(file, p + "attn_k_norm.weight");
    }
    if (hp.post_norms) {
        L.attn_post_norm = vector_of(file, p + "post_attention_norm.weight");
        L.ffn_post_norm  = vector_of(file, p + "post_ffw_norm.weight");
    }
    L.ffn_norm =
        vector_of(file, p + (hp.ffn_norm_named_post_attention ? "post_attention_norm.weight" : "ffn_norm.weight"));
    if (hp.moe()) {  // 3-D expert tensors: each a stack of the experts' matrices by rows
        L.ffn_gate_inp = view_of(file, owner, p + "ffn_gate_inp.weight");
        if (hp.moe_biases) {  // 2-D bias tensors: read whole, as one vector per stack
            L.ffn_gate_inp_b = stacked_vector_of(file, p + "ffn_gate_inp.bias");
            L.exp_gate_b     = stacked_vector_of(file, p + "ffn_gate_exps.bias");
            L.exp_up_b       = stacked_vector_of(file, p + "ffn_up_exps.bias");
            L.exp_down_b     = stacked_vector_of(file, p + "ffn_down_exps.bias");
        }
        L.w_gate = view_of(file, owner, p + "ffn_gate_exps.weight");
        L.w_up   = view_of(file, owner, p + "ffn_up_exps.weight");
        L.w_down = view_of(file, owner, p + "ffn_down_exps.weight");
        if (hp.n_ff_shexp > 0) {
            L.shexp_gate   = vector_of(file, p + "ffn_gate_inp_shexp.weight");
            L.w_gate_shexp = view_of(file, owner, p + "ffn_gate_shexp.weight");
            L.w_up_shexp   = view_of(file, owner, p + "ffn_up_shexp.weight");
            L.w_down_shexp = view_of(file, owner, p + "ffn_down_shexp.weight");
        }
        return L;
    }
    if (hp.fused_gate_up) {  // gate rows then up rows (llama.cpp's swiglu of the one product)
        const WeightView gu = view_of(file, owner, p + "ffn_up.weight");
        L.w_gate = row_range(gu, 0, hp.n_ff), L.w_up = row_range(gu, hp.n_ff, 2 * int64_t(hp.n_ff));
    } else {
        L.w_gate = view_of(file, owner, p + "ffn_gate.weight");
        L.w_up   = view_of(file, owner, p + "ffn_up.weight");
    }
    L.w_down = view_of(file, owner, p + "ffn_down.weight");
    return L;
}

// Multi-token-prediction block il (llama.cpp's layout); the optional parts stay empty.
NextnWeights load_nextn(const GgufFile& file, const std::shared_ptr<const GgufFile>& owner, const Hparams& hp,
                        int32_t il) {
    NextnWeights n;
    n.block             = load_layer(file, owner, hp, il);
    const std::string p = "blk." + std::to_string(il) + ".nextn.";
    n.eh_proj           = view_of(file, owner, p + "eh_proj.weight");
    n.enorm             = vector_of(file, p + "enorm.weight");
    n.hnorm             = vector_of(file, p + "hnorm.weight");
    if (file.tensor(p + "shared_head_norm.weight")) n.head_norm = vector_of(file, p + "shared_head_norm.weight");
    if (file.tensor(p + "shared_head_head.weight")) n.head = view_of(file, owner, p + "shared_head_head.weight");
    if (file.tensor(p + "embed_tokens.weight")) n.embed = view_of(file, owner, p + "embed_tokens.weight");
    return n;
}
}  // namespace

// ---- validation ----

void Model::validate(const Hparams& hp, const ModelWeights& w, const std::string& name) {
    if (!is_supported_architecture(hp.arch))
        throw std::invalid_argument(name + ": unsupported architecture '" + hp.arch + "'");
    if (hp.n_embd <= 0 || hp.n_head <= 0 || hp.n_head_kv <= 0 || hp.n_layer <= 0 || hp.n_ff <= 0 || hp.n_vocab <= 0 ||
        hp.head_dim() <= 0 || (hp.n_embd_head == 0 && hp.n_embd % hp.n_head != 0) || hp.n_head % hp.n_head_kv != 0)
        throw std::invalid_argument(name + ": inconsistent hparams (n_embd " + std::to_string(hp.n_embd) + ", n_head " +
                                    std::to_string(hp.n_head) + ", n_head_kv " + std::to_string(hp.n_head_kv) +
                                    ", n_layer " + std::to_string(hp.n_layer) + ")");
    if (hp.n_rot <= 0 || hp.n_rot > hp.head_dim() || hp.n_rot % 2 != 0)
        throw std::invalid_argument(name + ": rope dimension " + std::to_string(hp.n_rot) +
                                    " must be even and <= " + std::to_string(hp.head_dim()));
    if (hp.moe() && (hp.n_expert_used < 1 || hp.n_expert_used > hp.n_expert || hp.n_ff_exp < 1))
        throw std::invalid_argument(name + ": inconsistent experts (" + std::to_string(hp.n_expert_used) + " used of " +
                                    std::to_string(hp.n_expert) + ", width " + std::to_string(hp.n_ff_exp) + ")");
    if (hp.n_swa > 0 && static_cast<int32_t>(hp.swa_layers.size()) != hp.n_layer)
        throw std::invalid_argument(name + ": swa_layers has " + std::to_string(hp.swa_layers.size()) +
                                    " entries for " + std::to_string(hp.n_layer) + " layers");
    const int64_t e = hp.n_embd, eq = hp.n_embd_q(), ekv = hp.n_embd_kv(), ff = hp.n_ff, nv = hp.n_vocab;
    const int64_t ein = hp.attn_in_cols();
    if (hp.n_embd_attn_in != 0 && (hp.n_embd_attn_in < 0 || hp.n_layer != 1 || hp.n_nextn != 0))
        throw std::invalid_argument(name + ": n_embd_attn_in " + std::to_string(hp.n_embd_attn_in) +
                                    " (a wide attention input) needs a positive width and exactly one layer");
    check_view(w.token_embd, nv, e, "token_embd.weight", name);
    if (w.token_embd.compact)  // looked up a row at a time: a compact view has no dense rows to look up
        throw std::invalid_argument(name + ": token_embd.weight: a compact matrix cannot be the embedding table");
    check_view(w.output, nv, e, "output.weight", name);
    check_vector(w.output_norm, e, "output_norm.weight", name);
    if (!w.rope_freqs.empty()) {
        check_vector(w.rope_freqs, hp.n_rot / 2, "rope_freqs.weight", name);
        for (float f : w.rope_freqs)
            if (!(f > 0.0f) || !std::isfinite(f))
                throw std::invalid_argument(name + ": rope_freqs.weight: factors must be finite and > 0");
    }
    if (static_cast<int32_t>(w.layers.size()) != hp.n_layer)
        throw std::invalid_argument(name + ": " + std::to_string(w.layers.size()) + " layers, hparams say " +
                                    std::to_string(hp.n_layer));
    if (hp.hybrid()) {
        if (static_cast<int32_t>(hp.recurrent_layers.size()) != hp.n_layer)
            throw std::invalid_argument(name + ": recurrent_layers has " + std::to_string(hp.recurrent_layers.size()) +
                                        " entries for " + std::to_string(hp.n_layer) + " layers");
        if (hp.ssm_d_conv < 2 || hp.ssm_d_state < 1 || hp.ssm_n_group < 1 || hp.ssm_dt_rank % hp.ssm_n_group != 0)
            throw std::invalid_argument(name + ": inconsistent Gated DeltaNet shape (conv " +
                                        std::to_string(hp.ssm_d_conv) + ", state " + std::to_string(hp.ssm_d_state) +
                                        ", heads " + std::to_string(hp.ssm_n_group) + "/" +
                                        std::to_string(hp.ssm_dt_rank) + ")");
    }
    auto check_layer = [&](const LayerWeights& L, const std::string& p, bool recurrent) {
        check_vector(L.attn_norm, e, p + "attn_norm.weight", name);
        if (recurrent) {
            const int64_t conv = hp.ssm_conv_dim(), vd = hp.ssm_value_dim(), hv = hp.ssm_dt_rank;
            check_view(L.ssm_qkv, conv, e, p + "attn_qkv.weight", name);
            check_view(L.ssm_z, vd, e, p + "attn_gate.weight", name);
            check_view(L.ssm_beta, hv, e, p + "ssm_beta.weight", name);
            check_view(L.ssm_alpha, hv, e, p + "ssm_alpha.weight", name);
            check_view(L.ssm_out, e, vd, p + "ssm_out.weight", name);
            check_vector(L.ssm_conv1d, conv * hp.ssm_d_conv, p + "ssm_conv1d.weight", name);
            check_vector(L.ssm_dt, hv, p + "ssm_dt.bias", name);
            check_vector(L.ssm_a, hv, p + "ssm_a", name);
            check_vector(L.ssm_norm, hp.ssm_d_state, p + "ssm_norm.weight", name);
        } else {
            check_view(L.wq, hp.attn_gate ? 2 * eq : eq, ein, p + "attn_q.weight", name);
            check_view(L.wk, ekv, ein, p + "attn_k.weight", name);
            check_view(L.wv, ekv, ein, p + "attn_v.weight", name);
            check_view(L.wo, e, eq, p + "attn_output.weight", name);
        }
        if (hp.attn_out_bias) check_vector(L.bo, e, p + "attn_output.bias", name);
        if (hp.attn_sinks) check_vector(L.attn_sinks, hp.n_head, p + "attn_sinks.weight", name);
        if (hp.qkv_bias) {
            check_vector(L.bq, eq, p + "attn_q.bias", name);
            check_vector(L.bk, ekv, p + "attn_k.bias", name);
            check_vector(L.bv, ekv, p + "attn_v.bias", name);
        }
        if (hp.qk_norm && !recurrent) {
            check_vector(L.q_norm, hp.head_dim(), p + "attn_q_norm.weight", name);
            check_vector(L.k_norm, hp.head_dim(), p + "attn_k_norm.weight", name);
        }
        if (hp.post_norms) {
            check_vector(L.attn_post_norm, e, p + "post_attention_norm.weight", name);
            check_vector(L.ffn_post_norm, e, p + "post_ffw_norm.weight", name);
        }
        check_vector(L.ffn_norm, e, p + "ffn_norm.weight", name);
        if (hp.moe()) {
            const int64_t ne = hp.n_expert, fe = hp.n_ff_exp;
            check_view(L.ffn_gate_inp, ne, e, p + "ffn_gate_inp.weight", name);
            check_view(L.w_gate, ne * fe, e, p + "ffn_gate_exps.weight", name);
            check_view(L.w_up, ne * fe, e, p + "ffn_up_exps.weight", name);
            check_view(L.w_down, ne * e, fe, p + "ffn_down_exps.weight", name);
            if (hp.moe_biases) {
                check_vector(L.ffn_gate_inp_b, ne, p + "ffn_gate_inp.bias", name);
                check_vector(L.exp_gate_b, ne * fe, p + "ffn_gate_exps.bias", name);
                check_vector(L.exp_up_b, ne * fe, p + "ffn_up_exps.bias", name);
                check_vector(L.exp_down_b, ne * e, p + "ffn_down_exps.bias", name);
            }
            if (hp.n_ff_shexp > 0) {
                check_vector(L.shexp_gate, e, p + "ffn_gate_inp_shexp.weight", name);
                check_view(L.w_gate_shexp, hp.n_ff_shexp, e, p + "ffn_gate_shexp.weight", name);
                check_view(L.w_up_shexp, hp.n_ff_shexp, e, p + "ffn_up_shexp.weight", name);
                check_view(L.w_down_shexp, e, hp.n_ff_shexp, p + "ffn_down_shexp.weight", name);
            }
            if (L.w_gate.compact || L.w_up.compact || L.w_down.compact)
                throw std::invalid_argument(name + ": " + p + "ffn_*_exps: compact expert matrices are not supported");
            return;
        }
        if (!L.ffn_gate_inp.empty())
            throw std::invalid_argument(name + ": " + p + "ffn_gate_inp.weight: a router in a dense layer");
        check_view(L.w_gate, ff, e, p + "ffn_gate.weight", name);
        check_view(L.w_up, ff, e, p + "ffn_up.weight", name);
        check_view(L.w_down, e, ff, p + "ffn_down.weight", name);
    };
    for (size_t il = 0; il < w.layers.size(); ++il)
        check_layer(w.layers[il], "blk." + std::to_string(il) + ".", hp.is_recurrent(int32_t(il)));
    if (static_cast<int32_t>(w.nextn.size()) != hp.n_nextn)
        throw std::invalid_argument(name + ": " + std::to_string(w.nextn.size()) +
                                    " multi-token-prediction blocks, hparams say " + std::to_string(hp.n_nextn));
    for (size_t j = 0; j < w.nextn.size(); ++j) {
        const NextnWeights& n = w.nextn[j];
        const std::string p   = "blk." + std::to_string(hp.n_layer + int32_t(j)) + ".";
        check_layer(n.block, p, false);
        check_view(n.eh_proj, e, 2 * e, p + "nextn.eh_proj.weight", name);
        check_vector(n.enorm, e, p + "nextn.enorm.weight", name);
        check_vector(n.hnorm, e, p + "nextn.hnorm.weight", name);
        if (!n.head_norm.empty()) check_vector(n.head_norm, e, p + "nextn.shared_head_norm.weight", name);
        if (!n.head.empty()) check_view(n.head, nv, e, p + "nextn.shared_head_head.weight", name);
        if (!n.embed.empty()) {
            check_view(n.embed, nv, e, p + "nextn.embed_tokens.weight", name);
            if (n.embed.compact) throw std::invalid_argument(name + ": " + p + "nextn.embed_tokens.weight: compact");
        }
    }
}

// ---- loading ----

Model Model::load(const std::string& path, const ProgressFn& progress, const CancelToken& cancel, WeightMemory memory) {
    report(progress, 0.0, "mapping " + path);
    return from_gguf(GgufFile::open(path), progress, cancel, memory);
}

Model Model::from_gguf(GgufFile file_in, const ProgressFn& progress, const CancelToken& cancel, WeightMemory memory) {
    auto owner           = std::make_shared<const GgufFile>(std::move(file_in));
    const GgufFile& file = *owner;
    Model m;
    m.m_hp            = hparams_from_gguf(file);
    m.m_name          = file.path();
    m.m_file          = owner;
    const Hparams& hp = m.m_hp;
    if (memory == WeightMemory::automatic)
        memory = kernels::q8_0_x8_preferred() && file_has_repackable(file) ? WeightMemory::large_pages_repacked
                                                                           : WeightMemory::mapped;
    const double span = memory == WeightMemory::mapped ? 1.0 : 0.5;  // of the progress bar: the layer views

    m.m_w.token_embd  = view_of(file, owner, "token_embd.weight");
    m.m_w.output_norm = vector_of(file, "output_norm.weight");
    m.m_w.output      = hp.tied_output ? m.m_w.token_embd : view_of(file, owner, "output.weight");
    if (file.tensor("rope_freqs.weight")) m.m_w.rope_freqs = vector_of(file, "rope_freqs.weight");
    m.m_w.layers.resize(static_cast<size_t>(hp.n_layer));
    for (int32_t il = 0; il < hp.n_layer; ++il) {
        cancel.throw_if_cancelled();
        report(progress, span * il / hp.n_layer, "layer " + std::to_string(il + 1) + "/" + std::to_string(hp.n_layer));
        m.m_w.layers[static_cast<size_t>(il)] = load_layer(file, owner, hp, il);
    }
    // Multi-token-prediction blocks after the main ones (llama.cpp's layout).
    for (int32_t il = hp.n_layer; il < hp.n_layer + hp.n_nextn; ++il)
        m.m_w.nextn.push_back(load_nextn(file, owner, hp, il));
    try {
        validate(hp, m.m_w, file.path());
    } catch (const std::invalid_argument& e) {
        throw GgufError(e.what());
    }
    m.m_memory = WeightMemory::mapped;
    if (memory == WeightMemory::large_pages || memory == WeightMemory::large_pages_repacked) {
        const ProgressFn copying = [&](double f, const std::string& what) {
            report(progress, span + (1.0 - span) * f, what);
        };
        Model c = with_large_pages(m, copying, cancel, memory == WeightMemory::large_pages_repacked);
        // The weights now live in the copy: the file's pages that reading them brought in are released, so they
        // are resident once (issue #49: a 1.5 GB Q8_0 file ran at 3.4 GB before).
        if (c.m_memory != WeightMemory::mapped) file.release_tensor_pages();
        return c;
    }
    report(progress, 1.0, "loaded");
    return m;
}

Model Model::with_large_pages(const Model& m, const ProgressFn& progress, const CancelToken& cancel, bool repack_q8) {
    Model c           = m;
    const bool repack = repack_q8 && kernels::q8_0_x8_preferred();
    if (copy_to_large_pages(c.m_w, progress, cancel, repack, m.m_file.get()))
        c.m_memory = repack ? WeightMemory::large_pages_repacked : WeightMemory::large_pages;
    return c;
}

Model Model::with_preferred_memory(Model m, const ProgressFn& progress, const CancelToken& cancel) {
    bool any = repackable(m.m_w.output, m.m_w);
    for (const LayerWeights& L : m.m_w.layers)
        for (const WeightView* v : L.matrices()) any = any || repackable(*v, m.m_w);
    if (!any || !kernels::q8_0_x8_preferred()) return m;
    return with_large_pages(m, progress, cancel, /*repack_q8=*/true);
}

Model Model::from_weights(Hparams hp, ModelWeights weights, std::string name) {
    validate(hp, weights, name);
    Model m;
    m.m_hp   = std::move(hp);
    m.m_w    = std::move(weights);
    m.m_name = std::move(name);
    return m;
}

// ---- sizes ----

uint64_t Model::weight_bytes_per_token() const {
    uint64_t b = m_w.output.n_bytes() + m_w.token_embd.row_bytes() + m_w.output_norm.size() * sizeof(float);
    for (const LayerWeights& L : m_w.layers) {
        b += L.mixer_bytes() + L.ffn_bytes_per_token(m_hp) +
             L.vector_bytes();  // a MoE: the experts a token is routed to
    }
    return b;
}

uint64_t Model::weight_bytes_total() const {
    uint64_t b = m_w.output.n_bytes() + m_w.output_norm.size() * sizeof(float);
    for (const LayerWeights& L : m_w.layers) {
        for (const WeightView* v : L.matrices()) b += v->n_bytes();
        b += L.vector_bytes() + (L.exp_gate_b.size() + L.exp_up_b.size() + L.exp_down_b.size()) * sizeof(float);
    }
    if (m_w.output.data != m_w.token_embd.data) b += m_w.token_embd.n_bytes();
    return b;
}

// ---- MTP modules (mtp_module.h; here for load_nextn) ----

std::vector<NextnWeights> load_mtp_module(const std::string& path, const Model& target) {
    return mtp_module_from_gguf(GgufFile::open(path), target);
}

std::vector<NextnWeights> mtp_module_from_gguf(GgufFile file_in, const Model& target) {
    auto owner             = std::make_shared<const GgufFile>(std::move(file_in));
    const GgufFile& f      = *owner;
    const Hparams& thp     = target.hparams();
    const std::string type = f.get_string_or("general.type", "");
    if (type != kMtpModuleType)
        f.fail("general.type",
               (type.empty() ? std::string("absent") : "'" + type + "'") + ": not an MTP module (expected '" +
                   kMtpModuleType +
                   "'); a model with NextN layers of its own drafts with them when opened as the target");
    const std::string& arch = f.get_string("general.architecture");
    auto misfit             = [&](const std::string& field, const std::string& why) {
        throw std::invalid_argument(f.path() + ": " + field + ": " + why + " (target " + target.name() + ")");
    };
    if (arch != thp.arch) misfit("general.architecture", "'" + arch + "', the target's is '" + thp.arch + "'");
    const std::string a = arch + ".";
    const uint64_t n    = f.get_uint(a + "nextn_predict_layers");
    if (n < 1 || n > 64) f.fail(a + "nextn_predict_layers", std::to_string(n) + " blocks: a module holds 1..64");
    const uint64_t blocks = f.get_uint(a + "block_count");
    if (blocks != uint64_t(thp.n_layer) + n)
        misfit(a + "block_count", std::to_string(blocks) + " is not the target's " + std::to_string(thp.n_layer) +
                                      " layers plus the module's " + std::to_string(n));
    auto same = [&](const char* key, int64_t want) {
        const uint64_t v = f.get_uint(a + key);
        if (v != uint64_t(want)) misfit(a + key, std::to_string(v) + ", the target's is " + std::to_string(want));
    };
    same("embedding_length", thp.n_embd);
    same("feed_forward_length", thp.n_ff);
    same("attention.head_count", thp.n_head);
    same("attention.head_count_kv", thp.n_head_kv);
    const int32_t first = thp.n_layer, last = thp.n_layer + int32_t(n);
    for (const GgufTensorInfo& t : f.tensors()) {
        int32_t il = -1;
        if (t.name.rfind("blk.", 0) == 0) {
            const size_t dot      = t.name.find('.', 4);
            const std::string num = t.name.substr(4, dot == std::string::npos ? 0 : dot - 4);
            if (!num.empty() && num.size() <= 4 && num.find_first_not_of("0123456789") == std::string::npos)
                il = std::stoi(num);
        }
        if (il < first || il >= last)
            f.fail("tensor '" + t.name + "'", "outside the module's blocks (blk." + std::to_string(first) + ".." +
                                                  std::to_string(last - 1) + ".*)");
    }
    Hparams hp     = thp;
    hp.n_nextn     = int32_t(n);
    ModelWeights w = target.weights();
    w.nextn.clear();
    for (int32_t il = first; il < last; ++il) w.nextn.push_back(load_nextn(f, owner, hp, il));
    // The blocks' shapes against the target's (std::invalid_argument naming the tensor).
    const Model checked = Model::from_weights(hp, std::move(w), f.path());
    return checked.weights().nextn;
}
}  // namespace speculum::model
