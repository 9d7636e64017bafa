// EAGLE-3 heads: loading, validation against the target, random heads for tests (see eagle3.h).
#include "core/drafts/eagle3.h"

#include "core/drafts/head_gguf.h"
#include "core/model/gguf_writer.h"
#include "core/resources.h"
#include "kernels/gemv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>

namespace speculum::drafts {

namespace {

const char* kArch = "eagle3";

std::string key(const char* k) {
    return std::string(kArch) + "." + k;
}

}  // namespace

std::vector<int32_t> eagle3_default_layers(int32_t n_layer) {
    std::vector<int32_t> l{2, n_layer / 2, n_layer - 3};
    for (int32_t& x : l) x = std::clamp(x, 0, std::max(0, n_layer - 1));
    return l;
}

uint64_t Eagle3Head::weight_bytes() const {
    uint64_t b = fc.n_bytes() + hidden_norm.size() * sizeof(float) + block.weights().output.n_bytes() +
                 block.weights().output_norm.size() * sizeof(float);
    for (const model::WeightView* v : block.weights().layers[0].matrices()) b += v->n_bytes();
    return b + block.weights().layers[0].vector_bytes();
}

std::string eagle3_head_path(const std::string& model_path) {
    return model_path.empty() ? resource_path(kBundledEagle3Head).string() : model_path;
}

Eagle3Head load_eagle3_head(const std::string& path, const model::Model& target) {
    return eagle3_head_from_gguf(model::GgufFile::open(path), target);
}

Eagle3Head eagle3_head_from_gguf(model::GgufFile file, const model::Model& target) {
    auto owner                = std::make_shared<const model::GgufFile>(std::move(file));
    const model::GgufFile& f  = *owner;
    const model::Hparams& thp = target.hparams();
    const std::string arch    = f.get_string("general.architecture");
    if (arch != kArch) f.fail("general.architecture", "'" + arch + "' is not an EAGLE-3 head (expected 'eagle3')");
    auto misfit = [&](const std::string& field, const std::string& why) {
        throw std::invalid_argument(f.path() + ": " + field + ": " + why + " (target " + target.name() + ")");
    };

    const HeadFile hf(owner, kArch);
    struct {
        std::vector<int32_t> extract_layers;
        bool norm_before_residual = false;
        model::WeightView fc, embed;
        std::vector<float> hidden_norm;
        std::vector<int32_t> d2t;
        std::string name;
    } h;
    h.name = f.get_string_or("general.name", "EAGLE-3 head");
    model::Hparams hp;
    hp.arch = "llama";  // the decoder layer is a llama block with a wide attention input
    hf.read_block_hparams(hp, 1);
    hp.n_embd_attn_in      = 2 * hp.n_embd;
    h.norm_before_residual = f.get_bool_or(key("norm_before_residual"), false);

    // The target streams fc reads.
    const model::GgufValue& layers = f.get_array(key("extract_layers"), model::GgufType::INT32);
    if (layers.ints.empty() || layers.ints.size() > 8)
        f.fail(key("extract_layers"), "expected 1..8 layers, got " + std::to_string(layers.ints.size()));
    for (int64_t l : layers.ints) {
        if (l < 0 || l > thp.n_layer)
            misfit(key("extract_layers"),
                   "layer " + std::to_string(l) + " outside the target's [0, " + std::to_string(thp.n_layer) + "]");
        h.extract_layers.push_back(int32_t(l));
    }
    const uint64_t target_hidden = f.get_uint_or(key("target_hidden_size"), uint64_t(hp.n_embd));
    if (target_hidden != uint64_t(thp.n_embd))
        misfit(key("target_hidden_size"), "the head was made for a target of hidden size " +
                                              std::to_string(target_hidden) + ", this one has " +
                                              std::to_string(thp.n_embd));
    h.fc          = hf.fc(hp.n_embd, int64_t(h.extract_layers.size()), thp.n_embd);
    h.hidden_norm = hf.vector("blk.0.hidden_norm.weight", hp.n_embd);

    // The draft vocabulary: d2t maps it into the target's.
    h.d2t      = hf.d2t(thp.n_vocab, misfit);
    hp.n_vocab = h.d2t.empty() ? thp.n_vocab : int32_t(h.d2t.size());

    // The embedding: the head's own (full target vocabulary) or the target's.
    const bool own_embd = f.tensor("token_embd.weight") != nullptr;
    h.embed             = hf.embedding(target, hp.n_embd, "head", misfit);

    model::ModelWeights w;
    w.layers      = {hf.layer(hp, 0)};
    w.output_norm = hf.vector("output_norm.weight", hp.n_embd);
    if (f.tensor("output.weight")) {
        w.output = hf.matrix("output.weight");
    } else if (h.d2t.empty() && own_embd) {
        w.output = h.embed;
    } else if (h.d2t.empty() && thp.n_embd == hp.n_embd) {
        w.output = target.weights().output;
    } else {
        f.fail("tensor 'output.weight'", "missing, and neither the head's embedding nor the target's head fits");
    }
    // Never read (every pass enters through hidden_in); the one-layer model needs a table of its vocabulary.
    w.token_embd = model::row_range(h.embed, 0, hp.n_vocab);
    std::optional<model::Model> block;
    try {
        block.emplace(model::Model::from_weights(hp, std::move(w), h.name));
    } catch (const std::invalid_argument& e) {
        throw model::GgufError(f.path() + ": " + e.what());
    }
    // Tensors the layout does not define are refused rather than ignored (rope_freqs among them: not supported).
    static const std::set<std::string> known{"fc.weight",
                                             "d2t",
                                             "d2t.weight",
                                             "token_embd.weight",
                                             "output_norm.weight",
                                             "output.weight",
                                             "blk.0.attn_norm.weight",
                                             "blk.0.hidden_norm.weight",
                                             "blk.0.attn_q.weight",
                                             "blk.0.attn_k.weight",
                                             "blk.0.attn_v.weight",
                                             "blk.0.attn_output.weight",
                                             "blk.0.ffn_norm.weight",
                                             "blk.0.ffn_gate.weight",
                                             "blk.0.ffn_up.weight",
                                             "blk.0.ffn_down.weight"};
    for (const model::GgufTensorInfo& t : f.tensors())
        if (!known.count(t.name)) f.fail("tensor '" + t.name + "'", "not part of an EAGLE-3 head");
    return Eagle3Head{std::move(h.extract_layers), h.norm_before_residual, h.fc,
                      std::move(h.hidden_norm),    std::move(h.d2t),       h.embed,
                      std::move(*block),           std::move(h.name)};
}

std::vector<uint8_t> eagle3_synthetic_gguf(const model::Model& target, const Eagle3Synthetic& spec) {
    const model::Hparams& thp = target.hparams();
    const int64_t e = thp.n_embd, hd = thp.head_dim(), eq = hd * thp.n_head, ekv = hd * thp.n_head_kv;
    const std::vector<int32_t> layers = eagle3_default_layers(thp.n_layer);
    std::mt19937_64 rng(spec.seed);
    std::normal_distribution<float> nd(0.0f, spec.scale);
    model::GgufWriter g;
    g.set_string("general.architecture", kArch);
    g.set_string("general.name", "synthetic EAGLE-3 head");
    g.set_uint32(key("context_length"), uint32_t(thp.n_ctx_train));
    g.set_uint32(key("embedding_length"), uint32_t(e));
    g.set_uint32(key("block_count"), 1);
    g.set_uint32(key("feed_forward_length"), uint32_t(spec.n_ff));
    g.set_uint32(key("attention.head_count"), uint32_t(thp.n_head));
    g.set_uint32(key("attention.head_count_kv"), uint32_t(thp.n_head_kv));
    if (hd * thp.n_head != e) {  // a head dimension of its own, as the target has
        g.set_uint32(key("attention.key_length"), uint32_t(hd));
        g.set_uint32(key("attention.value_length"), uint32_t(hd));
    }
    g.set_uint32(key("rope.dimension_count"), uint32_t(thp.n_rot));
    g.set_float32(key("rope.freq_base"), thp.rope_freq_base);
    g.set_float32(key("attention.layer_norm_rms_epsilon"), thp.rms_eps);
    g.set_array_int32(key("extract_layers"), layers);
    g.set_uint32(key("target_hidden_size"), uint32_t(e));
    auto put = [&](const std::string& name, int64_t rows, int64_t cols, const std::vector<float>& m) {
        g.add_tensor(name, {uint64_t(cols), uint64_t(rows)}, kernels::GgmlType::F32, m.data(), m.size() * 4);
    };
    auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
        std::vector<float> m(static_cast<size_t>(rows * cols));
        for (float& x : m) x = nd(rng);
        if (spec.echo && (name == "blk.0.attn_output.weight" || name == "blk.0.ffn_down.weight"))
            std::fill(m.begin(), m.end(), 0.0f);
        if (spec.echo && name == "fc.weight") {  // [I 0 0]: the first stream
            std::fill(m.begin(), m.end(), 0.0f);
            for (int64_t r = 0; r < rows; ++r) m[size_t(r * cols + r)] = 1.0f;
        }
        if (spec.echo && name == "output.weight") {  // the target's embedding table
            m.resize(size_t(rows * cols));
            for (int64_t r = 0; r < rows; ++r)
                kernels::dequantize_row_ref(&m[size_t(r * cols)], target.weights().token_embd.type,
                                            target.weights().token_embd.row(r), cols);
        }
        put(name, rows, cols, m);
    };
    auto ones = [&](const std::string& name, int64_t n) {
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = spec.echo ? 1.0f : 1.0f + nd(rng);
        g.add_tensor(name, {uint64_t(n)}, kernels::GgmlType::F32, v.data(), v.size() * 4);
    };
    if (spec.echo && (spec.n_draft_vocab > 0 || spec.own_embedding))
        throw std::invalid_argument("eagle3_synthetic_gguf: an echo head has the full vocabulary and no embedding");
    const int32_t nv = spec.n_draft_vocab > 0 ? std::min(spec.n_draft_vocab, (thp.n_vocab + 1) / 2) : thp.n_vocab;
    matrix("fc.weight", e, int64_t(layers.size()) * e);
    ones("blk.0.attn_norm.weight", e);
    ones("blk.0.hidden_norm.weight", e);
    matrix("blk.0.attn_q.weight", eq, 2 * e);
    matrix("blk.0.attn_k.weight", ekv, 2 * e);
    matrix("blk.0.attn_v.weight", ekv, 2 * e);
    matrix("blk.0.attn_output.weight", e, eq);
    ones("blk.0.ffn_norm.weight", e);
    matrix("blk.0.ffn_gate.weight", spec.n_ff, e);
    matrix("blk.0.ffn_up.weight", spec.n_ff, e);
    matrix("blk.0.ffn_down.weight", e, spec.n_ff);
    ones("output_norm.weight", e);
    matrix("output.weight", nv, e);
    if (spec.n_draft_vocab > 0) {  // draft id j -> target id 2 j: offset j
        std::vector<int64_t> d2t(static_cast<size_t>(nv));
        for (int32_t j = 0; j < nv; ++j) d2t[size_t(j)] = j;
        g.add_tensor("d2t.weight", {uint64_t(nv)}, kernels::GgmlType::I64, d2t.data(), d2t.size() * 8);
    }
    if (spec.own_embedding) {
        const std::vector<uint8_t> t = model::dense_copy(target.weights().token_embd);
        g.add_tensor("token_embd.weight", {uint64_t(e), uint64_t(thp.n_vocab)}, target.weights().token_embd.type,
                     t.data(), t.size());
    }
    return g.to_bytes();
}

}  // namespace speculum::drafts
