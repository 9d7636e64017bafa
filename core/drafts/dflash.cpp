// Block drafts: loading, validation against the target, random drafts for tests (see dflash.h).
#include "core/drafts/dflash.h"

#include "core/drafts/head_gguf.h"
#include "core/json_reader.h"
#include "core/model/gguf_writer.h"
#include "core/resources.h"
#include "kernels/gemv.h"

#include <algorithm>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>

namespace speculum::drafts {

namespace {

const char* kArch = "dflash";

std::string key(const char* k) {
    return std::string(kArch) + "." + k;
}

}  // namespace

uint64_t DflashModel::weight_bytes() const {
    const model::ModelWeights& w = decoder.weights();
    uint64_t b = fc.n_bytes() + (enc_norm.size() + w.output_norm.size() + conf_proj.size()) * sizeof(float);
    for (const model::LayerWeights& L : w.layers) {
        for (const model::WeightView* v : L.matrices()) b += v->n_bytes();
        b += L.vector_bytes();
    }
    return b + markov_w1.n_bytes() + markov_w2.n_bytes() + (own_head ? w.output.n_bytes() : 0);
}

std::string dflash_path(const std::string& model_path, bool dspark) {
    return model_path.empty() ? resource_path(dspark ? kBundledDspark : kBundledDflash).string() : model_path;
}

DflashModel load_dflash(const std::string& path, const model::Model& target) {
    return dflash_from_gguf(model::GgufFile::open(path), target);
}

DflashModel dflash_from_gguf(model::GgufFile file, const model::Model& target) {
    auto owner                = std::make_shared<const model::GgufFile>(std::move(file));
    const model::GgufFile& f  = *owner;
    const model::Hparams& thp = target.hparams();
    const HeadFile hf(owner, kArch);
    const std::string arch = f.get_string("general.architecture");
    if (arch != kArch) f.fail("general.architecture", "'" + arch + "' is not a block draft (expected 'dflash')");
    auto misfit = [&](const std::string& field, const std::string& why) {
        throw std::invalid_argument(f.path() + ": " + field + ": " + why + " (target " + target.name() + ")");
    };
    if (f.find(key("hyper_connection_count")))
        f.fail(key("hyper_connection_count"), "DeepSeek-V4 DSpark backbones are not supported (Qwen 3 blocks only)");

    struct {  // DflashModel's fields but the decoder (a Model has no empty state)
        std::vector<int32_t> target_layers;
        int32_t block_size = 16, mask_token = 0;
        model::WeightView fc, embed, markov_w1, markov_w2;
        std::vector<float> enc_norm, conf_proj;
        std::vector<int32_t> d2t;
        bool own_head   = false;
        float conf_bias = 0.0f;
        std::string name;
        bool dspark_heads() const { return !markov_w1.empty(); }
    } d;
    d.name = f.get_string_or("general.name", "DFlash draft");
    model::Hparams hp;
    hp.arch       = "qwen3";  // Qwen 3 blocks: q/k norms, NeoX RoPE (llama.cpp's rope type for legacy DFlash backbones)
    hp.qk_norm    = true;
    hp.rope_style = model::RopeStyle::neox;
    hf.read_block_hparams(hp, 64);
    if (f.find(key("attention.sliding_window")) && f.get_uint(key("attention.sliding_window")) > 0)
        f.fail(key("attention.sliding_window"), "sliding-window block drafts are not supported");
    d.block_size = hf.uint_in_or("block_size", 16, 2, 64);

    const model::GgufValue& layers = f.get_array(key("target_layers"), model::GgufType::INT32);
    if (layers.ints.empty() || layers.ints.size() > 16)
        f.fail(key("target_layers"), "expected 1..16 layers, got " + std::to_string(layers.ints.size()));
    for (int64_t l : layers.ints) {
        if (l < 0 || l > thp.n_layer)
            misfit(key("target_layers"),
                   "layer " + std::to_string(l) + " outside the target's [0, " + std::to_string(thp.n_layer) + "]");
        d.target_layers.push_back(int32_t(l));
    }
    const char* mask_key = f.find("tokenizer.ggml.mask_token_id") ? "tokenizer.ggml.mask_token_id"
                           : f.find(key("mask_token_id"))         ? "dflash.mask_token_id"
                                                                  : nullptr;
    if (!mask_key) f.fail("tokenizer.ggml.mask_token_id", "missing (the block's mask token)");
    const uint64_t mask = f.get_uint(mask_key);
    if (mask >= uint64_t(thp.n_vocab))
        misfit(mask_key, "mask token " + std::to_string(mask) + " outside the target's vocabulary of " +
                             std::to_string(thp.n_vocab));
    d.mask_token = int32_t(mask);

    d.fc       = hf.fc(hp.n_embd, int64_t(d.target_layers.size()), thp.n_embd);
    d.enc_norm = hf.vector("enc.output_norm.weight", hp.n_embd);
    d.d2t      = hf.d2t(thp.n_vocab, misfit);
    hp.n_vocab = d.d2t.empty() ? thp.n_vocab : int32_t(d.d2t.size());

    d.embed = hf.embedding(target, hp.n_embd, "draft", misfit);

    model::ModelWeights w;
    for (int32_t il = 0; il < hp.n_layer; ++il) w.layers.push_back(hf.layer(hp, il));
    w.output_norm = hf.vector("output_norm.weight", hp.n_embd);
    if (f.tensor("output.weight")) {
        w.output   = hf.matrix("output.weight");
        d.own_head = true;
    } else if (d.d2t.empty() && thp.n_embd == hp.n_embd && !target.weights().output.compact) {
        w.output = target.weights().output;
    } else {
        f.fail("tensor 'output.weight'", "missing, and the target's head does not fit the draft");
    }

    // DSpark's Markov and confidence heads.
    if (f.tensor("markov_w1.weight") || f.tensor("markov_w2.weight") || f.tensor("conf_proj.weight")) {
        if (!d.d2t.empty()) misfit("markov_w1.weight", "DSpark heads over a reduced vocabulary are not supported");
        d.markov_w1        = hf.matrix("markov_w1.weight");
        d.markov_w2        = hf.matrix("markov_w2.weight");
        const int64_t rank = d.markov_w1.cols;
        if (rank < 1 || rank > 4096 || d.markov_w1.rows != hp.n_vocab)
            f.fail("tensor 'markov_w1.weight'", "expected (" + std::to_string(hp.n_vocab) + ", rank <= 4096)");
        if (d.markov_w2.rows != hp.n_vocab || d.markov_w2.cols != rank)
            f.fail("tensor 'markov_w2.weight'", "expected the shape of markov_w1");
        // conf_proj is one row of n_embd + rank: ggml's {n_embd + rank, 1}, which ggml's own writer stores with one
        // dimension (a trailing 1 is dropped), so both forms are read.
        const model::GgufTensorInfo* cpt = f.tensor("conf_proj.weight");
        if (!cpt) f.fail("tensor 'conf_proj.weight'", "missing");
        if (cpt->dims.size() == 1) {
            d.conf_proj = hf.vector("conf_proj.weight", hp.n_embd + rank);
        } else {
            const model::WeightView cp = hf.matrix("conf_proj.weight");
            if (cp.rows != 1 || cp.cols != hp.n_embd + rank || cp.compact || !kernels::kernels_support(cp.type))
                f.fail("tensor 'conf_proj.weight'", "expected one row of " + std::to_string(hp.n_embd + rank));
            d.conf_proj.resize(size_t(cp.cols));
            kernels::dequantize_row_ref(d.conf_proj.data(), cp.type, cp.row(0), cp.cols);
        }
        if (f.tensor("conf_proj.bias")) d.conf_bias = hf.vector("conf_proj.bias", 1)[0];
    }

    // Never read (every pass enters through hidden_in); the model needs a table of its vocabulary.
    w.token_embd = model::row_range(d.embed, 0, hp.n_vocab);
    std::optional<model::Model> decoder;
    try {
        decoder.emplace(model::Model::from_weights(hp, std::move(w), d.name));
    } catch (const std::invalid_argument& e) {
        throw model::GgufError(f.path() + ": " + e.what());
    }

    // Tensors the layout does not define are refused rather than ignored.
    static const std::set<std::string> top{
        "fc.weight",  "enc.output_norm.weight", "output_norm.weight", "output.weight",    "token_embd.weight", "d2t",
        "d2t.weight", "markov_w1.weight",       "markov_w2.weight",   "conf_proj.weight", "conf_proj.bias"};
    static const std::set<std::string> per_layer{"attn_norm.weight",   "attn_q.weight",      "attn_k.weight",
                                                 "attn_v.weight",      "attn_output.weight", "attn_q_norm.weight",
                                                 "attn_k_norm.weight", "ffn_norm.weight",    "ffn_gate.weight",
                                                 "ffn_up.weight",      "ffn_down.weight"};
    for (const model::GgufTensorInfo& t : f.tensors()) {
        if (top.count(t.name)) continue;
        bool known = false;
        for (int32_t il = 0; il < hp.n_layer && !known; ++il) {
            const std::string b = "blk." + std::to_string(il) + ".";
            known               = t.name.rfind(b, 0) == 0 && per_layer.count(t.name.substr(b.size()));
        }
        if (!known) f.fail("tensor '" + t.name + "'", "not part of a block draft");
    }
    return DflashModel{.target_layers = std::move(d.target_layers),
                       .block_size    = d.block_size,
                       .mask_token    = d.mask_token,
                       .fc            = d.fc,
                       .enc_norm      = std::move(d.enc_norm),
                       .embed         = d.embed,
                       .d2t           = std::move(d.d2t),
                       .own_head      = d.own_head,
                       .markov_w1     = d.markov_w1,
                       .markov_w2     = d.markov_w2,
                       .conf_proj     = std::move(d.conf_proj),
                       .conf_bias     = d.conf_bias,
                       .decoder       = std::move(*decoder),
                       .name          = std::move(d.name)};
}

std::vector<uint8_t> dflash_synthetic_gguf(const model::Model& target, const DflashSynthetic& spec) {
    const model::Hparams& thp = target.hparams();
    const int64_t e = thp.n_embd, hd = thp.head_dim(), eq = hd * thp.n_head, ekv = hd * thp.n_head_kv;
    const int64_t nv   = thp.n_vocab;
    const int32_t mask = spec.mask_token >= 0 ? spec.mask_token : thp.n_vocab - 1;
    if (spec.echo && (eq != e || ekv != e))
        throw std::invalid_argument(
            "dflash_synthetic_gguf: an echo draft needs n_head_kv = n_head and "
            "head_dim n_head = n_embd");
    if (spec.n_layer < 1 || spec.block_size < 2 || mask >= thp.n_vocab)
        throw std::invalid_argument("dflash_synthetic_gguf: n_layer >= 1, block_size >= 2, a mask in the vocabulary");
    const std::vector<int32_t> layers = [&] {
        std::vector<int32_t> l{1, thp.n_layer / 2, std::max(0, thp.n_layer - 1)};
        for (int32_t& x : l) x = std::clamp(x, 0, std::max(0, thp.n_layer - 1));
        return l;
    }();
    std::mt19937_64 rng(spec.seed);
    std::normal_distribution<float> nd(0.0f, spec.scale);
    model::GgufWriter g;
    g.set_string("general.architecture", kArch);
    g.set_string("general.name", spec.markov_rank > 0 ? "synthetic DSpark draft" : "synthetic DFlash draft");
    g.set_uint32(key("context_length"), uint32_t(thp.n_ctx_train));
    g.set_uint32(key("embedding_length"), uint32_t(e));
    g.set_uint32(key("block_count"), uint32_t(spec.n_layer));
    g.set_uint32(key("feed_forward_length"), uint32_t(spec.n_ff));
    g.set_uint32(key("attention.head_count"), uint32_t(thp.n_head));
    g.set_uint32(key("attention.head_count_kv"), uint32_t(thp.n_head_kv));
    g.set_uint32(key("attention.key_length"), uint32_t(hd));
    g.set_uint32(key("attention.value_length"), uint32_t(hd));
    g.set_uint32(key("rope.dimension_count"), uint32_t(hd));
    g.set_float32(key("rope.freq_base"), thp.rope_freq_base);
    g.set_float32(key("attention.layer_norm_rms_epsilon"), thp.rms_eps);
    g.set_array_int32(key("target_layers"), layers);
    g.set_uint32(key("block_size"), uint32_t(spec.block_size));
    if (!spec.vocab_from.empty()) {
        const model::GgufFile src = model::GgufFile::open(spec.vocab_from);
        for (const model::GgufKv& kv : src.metadata())
            if (kv.key.rfind("tokenizer.", 0) == 0 && kv.key != "tokenizer.ggml.mask_token_id")
                g.set_value(kv.key, kv.value);
        g.set_uint32("tokenizer.ggml.mask_token_id", uint32_t(mask));
        const model::GgufValue* tok = src.find("tokenizer.ggml.model");
        if (tok && tok->s == "no_vocab") g.set_uint32(key("vocab_size"), uint32_t(nv));
    } else {
        g.set_uint32(key("mask_token_id"), uint32_t(mask));
    }
    auto put = [&](const std::string& name, int64_t rows, int64_t cols, const std::vector<float>& m) {
        g.add_tensor(name, {uint64_t(cols), uint64_t(rows)}, kernels::GgmlType::F32, m.data(), m.size() * 4);
    };
    auto identity = [](std::vector<float>& m, int64_t rows, int64_t cols) {
        std::fill(m.begin(), m.end(), 0.0f);
        for (int64_t r = 0; r < std::min(rows, cols); ++r) m[size_t(r * cols + r)] = 1.0f;
    };
    auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
        std::vector<float> m(static_cast<size_t>(rows * cols));
        for (float& x : m) x = nd(rng);
        if (spec.echo) {
            const bool zero = name.find("ffn_down") != std::string::npos || name == "markov_w2.weight";
            const bool eye  = name == "fc.weight" || name.find("attn_v") != std::string::npos ||
                             name.find("attn_output") != std::string::npos;
            if (zero) std::fill(m.begin(), m.end(), 0.0f);
            if (eye) identity(m, rows, cols);
        }
        put(name, rows, cols, m);
    };
    auto ones = [&](const std::string& name, int64_t n) {
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = spec.echo ? 1.0f : 1.0f + nd(rng);
        g.add_tensor(name, {uint64_t(n)}, kernels::GgmlType::F32, v.data(), v.size() * 4);
    };
    matrix("fc.weight", e, int64_t(layers.size()) * e);
    ones("enc.output_norm.weight", e);
    for (int32_t il = 0; il < spec.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        ones(b + "attn_norm.weight", e);
        matrix(b + "attn_q.weight", eq, e);
        matrix(b + "attn_k.weight", ekv, e);
        matrix(b + "attn_v.weight", ekv, e);
        ones(b + "attn_q_norm.weight", hd);
        ones(b + "attn_k_norm.weight", hd);
        matrix(b + "attn_output.weight", e, eq);
        ones(b + "ffn_norm.weight", e);
        matrix(b + "ffn_gate.weight", spec.n_ff, e);
        matrix(b + "ffn_up.weight", spec.n_ff, e);
        matrix(b + "ffn_down.weight", e, spec.n_ff);
    }
    ones("output_norm.weight", e);
    if (spec.markov_rank > 0) {
        matrix("markov_w1.weight", nv, spec.markov_rank);
        matrix("markov_w2.weight", nv, spec.markov_rank);
        matrix("conf_proj.weight", 1, e + spec.markov_rank);
        const float b = 0.5f;
        g.add_tensor("conf_proj.bias", {1}, kernels::GgmlType::F32, &b, 4);
    }
    if (spec.echo) {  // the target's table with the mask token's row zero
        std::vector<float> t(static_cast<size_t>(nv * e));
        for (int64_t r = 0; r < nv; ++r)
            kernels::dequantize_row_ref(&t[size_t(r * e)], target.weights().token_embd.type,
                                        target.weights().token_embd.row(r), e);
        std::fill_n(&t[size_t(int64_t(mask) * e)], e, 0.0f);
        put("token_embd.weight", nv, e, t);
    }
    return g.to_bytes();
}

void to_json(nlohmann::json& j, const DflashSynthetic& s) {
    j = nlohmann::json{{"n_layer", s.n_layer},
                       {"n_ff", s.n_ff},
                       {"block_size", s.block_size},
                       {"mask_token", s.mask_token},
                       {"markov_rank", s.markov_rank},
                       {"seed", s.seed},
                       {"scale", s.scale}};
}

void from_json(const nlohmann::json& j, DflashSynthetic& s) {
    JsonReader r(j, "DflashSynthetic");
    s = DflashSynthetic{};
    r.get("n_layer", s.n_layer, 1, 64);
    r.get("n_ff", s.n_ff, 1, 1 << 16);
    r.get("block_size", s.block_size, 2, 64);
    r.get("mask_token", s.mask_token, -1, INT32_MAX);
    r.get("markov_rank", s.markov_rank, 0, 4096);
    r.get("seed", s.seed);
    r.get("scale", s.scale, 0.0, 10.0);
    r.finish();
}

}  // namespace speculum::drafts
