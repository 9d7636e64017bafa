// HeadFile (see head_gguf.h).
#include "core/drafts/head_gguf.h"

#include "kernels/gemv.h"

#include <cmath>
#include <cstring>
#include <set>

namespace speculum::drafts {

model::WeightView HeadFile::matrix(const std::string& name) const {
    const model::GgufFile& f       = *m_file;
    const model::GgufTensorInfo* t = f.tensor(name);
    if (!t) f.fail("tensor '" + name + "'", "missing");
    if (t->dims.size() != 2) f.fail("tensor '" + name + "'", "expected a matrix");
    model::WeightView v;
    v.type       = t->type;
    v.data       = t->data;
    v.cols       = int64_t(t->cols());
    v.rows       = int64_t(t->rows());
    v.keep_alive = std::shared_ptr<const void>(m_file, t->data);
    return v;
}

std::vector<float> HeadFile::vector(const std::string& name, int64_t n) const {
    const model::GgufFile& f       = *m_file;
    const model::GgufTensorInfo* t = f.tensor(name);
    if (!t) f.fail("tensor '" + name + "'", "missing");
    if (t->dims.size() != 1 || int64_t(t->n_elements) != n)
        f.fail("tensor '" + name + "'", "expected " + std::to_string(n) + " elements in one dimension");
    if (!kernels::kernels_support(t->type)) f.fail("tensor '" + name + "'", "unsupported type");
    std::vector<float> out(static_cast<size_t>(n));
    kernels::dequantize_row_ref(out.data(), t->type, t->data, n);
    return out;
}

int32_t HeadFile::uint_in(const char* k, uint64_t lo, uint64_t hi) const {
    const uint64_t v = m_file->get_uint(key(k));
    if (v < lo || v > hi)
        m_file->fail(key(k),
                     "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(v));
    return int32_t(v);
}

int32_t HeadFile::uint_in_or(const char* k, uint64_t def, uint64_t lo, uint64_t hi) const {
    return m_file->find(key(k)) ? uint_in(k, lo, hi) : int32_t(def);
}

float HeadFile::positive_or(const char* k, double def) const {
    const double v = m_file->get_float_or(key(k), def);
    if (!(v > 0.0) || !std::isfinite(v) || !std::isfinite(float(v)))
        m_file->fail(key(k), "must be positive and finite, got " + std::to_string(v));
    return float(v);
}

void HeadFile::read_block_hparams(model::Hparams& hp, int32_t max_layers) const {
    const model::GgufFile& f = *m_file;
    hp.n_embd                = uint_in("embedding_length", 1, 1u << 16);
    hp.n_layer               = uint_in("block_count", 1, uint64_t(max_layers));
    hp.n_head                = uint_in("attention.head_count", 1, 1024);
    hp.n_head_kv             = uint_in_or("attention.head_count_kv", uint64_t(hp.n_head), 1, 1024);
    hp.n_ff                  = uint_in("feed_forward_length", 1, 1u << 20);
    hp.n_ctx_train           = int32_t(std::min<uint64_t>(f.get_uint_or(key("context_length"), 4096), 1u << 20));
    hp.rms_eps               = positive_or("attention.layer_norm_rms_epsilon", 1e-5);
    hp.rope_freq_base        = positive_or("rope.freq_base", 10000.0);
    // The head dimension: key_length where given (heads for Qwen 3 and gpt-oss targets: not n_embd / n_head), else
    // the even split of the width, as the target's own loader reads it.
    if (f.find(key("attention.key_length"))) {
        hp.n_embd_head = uint_in("attention.key_length", 2, 1024);
        if (hp.n_embd_head % 2 != 0) f.fail(key("attention.key_length"), "must be even");
        if (uint_in_or("attention.value_length", uint64_t(hp.n_embd_head), 2, 1024) != hp.n_embd_head)
            f.fail(key("attention.value_length"), "differs from key_length (not supported)");
    } else if (hp.n_embd % hp.n_head != 0) {
        f.fail(key("attention.head_count"), "heads do not divide the embedding (and attention.key_length is absent)");
    }
    if (hp.n_head_kv < 1 || hp.n_head % hp.n_head_kv != 0)
        f.fail(key("attention.head_count_kv"), "KV heads do not divide the heads");
    hp.n_rot = uint_in_or("rope.dimension_count", uint64_t(hp.head_dim()), 0, uint64_t(hp.head_dim()));
}

model::LayerWeights HeadFile::layer(const model::Hparams& hp, int32_t il) const {
    const std::string b = "blk." + std::to_string(il) + ".";
    model::LayerWeights L;
    L.attn_norm = vector(b + "attn_norm.weight", hp.n_embd);
    L.wq        = matrix(b + "attn_q.weight");
    L.wk        = matrix(b + "attn_k.weight");
    L.wv        = matrix(b + "attn_v.weight");
    L.wo        = matrix(b + "attn_output.weight");
    if (hp.qk_norm) {
        L.q_norm = vector(b + "attn_q_norm.weight", hp.head_dim());
        L.k_norm = vector(b + "attn_k_norm.weight", hp.head_dim());
    }
    L.ffn_norm = vector(b + "ffn_norm.weight", hp.n_embd);
    L.w_gate   = matrix(b + "ffn_gate.weight");
    L.w_up     = matrix(b + "ffn_up.weight");
    L.w_down   = matrix(b + "ffn_down.weight");
    return L;
}

model::WeightView HeadFile::fc(int64_t n_embd, int64_t n_streams, int64_t target_embd) const {
    const model::WeightView v = matrix("fc.weight");
    if (v.rows != n_embd || v.cols != n_streams * target_embd)
        m_file->fail("tensor 'fc.weight'", "shape (" + std::to_string(v.rows) + ", " + std::to_string(v.cols) +
                                               "), expected (" + std::to_string(n_embd) + ", " +
                                               std::to_string(n_streams * target_embd) + ")");
    return v;
}

model::WeightView HeadFile::embedding(const model::Model& target, int64_t n_embd, const char* what,
                                      const std::function<void(const std::string&, const std::string&)>& misfit) const {
    const int32_t n_vocab     = target.hparams().n_vocab;
    const bool own            = m_file->tensor("token_embd.weight") != nullptr;
    const model::WeightView v = own ? matrix("token_embd.weight") : target.weights().token_embd;
    if (v.rows != n_vocab || v.cols != n_embd || v.compact)
        misfit(own ? "token_embd.weight" : key("embedding_length"),
               std::string("the ") + what + " embeds the target's " + std::to_string(n_vocab) + " tokens in " +
                   std::to_string(n_embd) + " dimensions; " + (own ? "its table is " : "the target's is ") +
                   std::to_string(v.rows) + " x " + std::to_string(v.cols));
    return v;
}

std::vector<int32_t> HeadFile::d2t(int32_t n_target_vocab,
                                   const std::function<void(const std::string&, const std::string&)>& misfit) const {
    const model::GgufFile& f       = *m_file;
    const model::GgufTensorInfo* t = f.tensor("d2t.weight") ? f.tensor("d2t.weight") : f.tensor("d2t");
    std::vector<int32_t> out;
    if (!t) return out;
    if (t->dims.size() != 1 || (t->type != kernels::GgmlType::I64 && t->type != kernels::GgmlType::I32))
        f.fail("tensor 'd2t'", "expected a 1-D I64 or I32 tensor");
    const uint64_t n = t->n_elements;
    if (n < 1 || n > uint64_t(n_target_vocab))
        misfit("d2t", std::to_string(n) + " draft tokens for a target vocabulary of " + std::to_string(n_target_vocab));
    std::set<int32_t> seen;
    for (uint64_t j = 0; j < n; ++j) {
        int64_t off = 0;
        if (t->type == kernels::GgmlType::I64) {
            std::memcpy(&off, t->data + j * 8, 8);
        } else {
            int32_t o32 = 0;
            std::memcpy(&o32, t->data + j * 4, 4);
            off = o32;
        }
        const int64_t id = int64_t(j) + off;
        if (id < 0 || id >= n_target_vocab || !seen.insert(int32_t(id)).second)
            misfit("d2t", "draft token " + std::to_string(j) + " maps to " + std::to_string(id) +
                              ", outside the target's vocabulary or twice");
        out.push_back(int32_t(id));
    }
    return out;
}

}  // namespace speculum::drafts
