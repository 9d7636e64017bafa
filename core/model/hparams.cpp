// hparams_from_gguf: llama.cpp's key names for `llama` and `qwen2`, then a check of every tensor the forward pass
// reads against the shapes those keys imply (ggml order: dims[0] is the row length), as llama-model.cpp does.
#include "core/model/hparams.h"

#include <limits>
#include <set>
#include <sstream>

namespace speculum::model {

namespace {

using kernels::GgmlType;

std::string shape_str(const std::vector<uint64_t>& dims) {
    std::ostringstream s;
    s << '[';
    for (size_t i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << dims[i];
    s << ']';
    return s.str();
}

// A positive count that fits int32. Per-layer arrays (some converters write them) must hold one value.
int32_t positive_int(const GgufFile& f, const std::string& key) {
    uint64_t v = 0;
    const GgufValue* raw = f.find(key);
    if (raw && raw->type == GgufType::ARRAY && raw->array_type != GgufType::STRING &&
        raw->array_type != GgufType::FLOAT32 && raw->array_type != GgufType::FLOAT64 && !raw->ints.empty()) {
        for (int64_t x : raw->ints)
            if (x != raw->ints[0]) f.fail(key, "per-layer values differ; only uniform layers are supported");
        if (raw->ints[0] < 0) f.fail(key, "negative value " + std::to_string(raw->ints[0]));
        v = static_cast<uint64_t>(raw->ints[0]);
    } else {
        v = f.get_uint(key);
    }
    if (v == 0 || v > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
        f.fail(key, "value " + std::to_string(v) + " is out of range (1 to 2147483647)");
    return static_cast<int32_t>(v);
}

int32_t positive_int_or(const GgufFile& f, const std::string& key, int32_t fallback) {
    return f.find(key) ? positive_int(f, key) : fallback;
}

float finite_positive(const GgufFile& f, const std::string& key, double v) {
    if (!(v > 0.0) || v > static_cast<double>(std::numeric_limits<float>::max()))
        f.fail(key, "value " + std::to_string(v) + " must be positive and finite");
    return static_cast<float>(v);
}

// Checks one tensor: present, shape equal to `want` (trailing 1s ignored, as ggml does) and, for norm vectors and
// biases, a float type. `what` names the expected shape in hparams terms for the message.
class TensorChecker {
public:
    explicit TensorChecker(const GgufFile& f) : m_f(f) {}

    const GgufTensorInfo& require(const std::string& name, std::vector<uint64_t> want, const std::string& what,
                                  bool is_vector) {
        const GgufTensorInfo* t = m_f.tensor(name);
        if (!t) m_f.fail("tensor '" + name + "'", "missing");
        check(*t, std::move(want), what, is_vector);
        return *t;
    }

    void check(const GgufTensorInfo& t, std::vector<uint64_t> want, const std::string& what, bool is_vector) {
        m_seen.insert(t.name);
        std::vector<uint64_t> have = t.dims;
        while (have.size() > 1 && have.back() == 1) have.pop_back();
        while (want.size() > 1 && want.back() == 1) want.pop_back();
        if (have != want)
            m_f.fail("tensor '" + t.name + "'", "shape " + shape_str(t.dims) + " does not match " + what + " = " +
                                                    shape_str(want));
        if (is_vector && t.type != GgmlType::F32 && t.type != GgmlType::F16 && t.type != GgmlType::BF16)
            m_f.fail("tensor '" + t.name + "'", std::string("type ") + kernels::ggml_type_traits(t.type)->name +
                                                    " is not supported for a norm or bias vector (f32, f16 or bf16)");
    }

    bool seen(const std::string& name) const { return m_seen.count(name) != 0; }

private:
    const GgufFile& m_f;
    std::set<std::string> m_seen;
};

}  // namespace

Hparams hparams_from_gguf(const GgufFile& f) {
    Hparams h;
    h.arch = f.get_string("general.architecture");
    if (h.arch != "llama" && h.arch != "qwen2")
        f.fail("general.architecture", "architecture '" + h.arch + "' is not supported (llama and qwen2 are)");
    const std::string a = h.arch + ".";

    // ---- metadata ----
    h.n_ctx_train = positive_int(f, a + "context_length");
    h.n_embd      = positive_int(f, a + "embedding_length");
    h.n_layer     = positive_int(f, a + "block_count");
    h.n_ff        = positive_int(f, a + "feed_forward_length");
    h.n_head      = positive_int(f, a + "attention.head_count");
    h.n_head_kv   = positive_int_or(f, a + "attention.head_count_kv", h.n_head);
    if (h.n_embd % h.n_head != 0)
        f.fail(a + "attention.head_count", std::to_string(h.n_head) + " heads do not divide embedding_length " +
                                               std::to_string(h.n_embd));
    if (h.n_head_kv > h.n_head || h.n_head % h.n_head_kv != 0)
        f.fail(a + "attention.head_count_kv", std::to_string(h.n_head_kv) + " KV heads do not divide the " +
                                                  std::to_string(h.n_head) + " query heads");
    for (const char* k : {"attention.key_length", "attention.value_length"})
        if (f.find(a + k) && f.get_uint(a + k) != static_cast<uint64_t>(h.head_dim()))
            f.fail(a + k, std::to_string(f.get_uint(a + k)) + " differs from embedding_length / head_count = " +
                              std::to_string(h.head_dim()) + " (not supported)");
    if (f.get_uint_or(a + "expert_count", 0) > 0)
        f.fail(a + "expert_count", "mixture-of-experts models are not supported");

    h.n_rot = positive_int_or(f, a + "rope.dimension_count", h.head_dim());
    if (h.arch == "llama" && h.n_rot != h.head_dim())  // llama.cpp enforces full rotary for llama
        f.fail(a + "rope.dimension_count", std::to_string(h.n_rot) + " must equal the head dimension " +
                                               std::to_string(h.head_dim()) + " for llama");
    if (h.n_rot > h.head_dim() || h.n_rot % 2 != 0)
        f.fail(a + "rope.dimension_count", std::to_string(h.n_rot) + " must be even and at most the head dimension " +
                                               std::to_string(h.head_dim()));
    h.rope_freq_base = finite_positive(f, a + "rope.freq_base", f.get_float_or(a + "rope.freq_base", 10000.0));
    h.rms_eps        = finite_positive(f, a + "attention.layer_norm_rms_epsilon",
                                       f.get_float(a + "attention.layer_norm_rms_epsilon"));

    // RoPE scaling: llama.cpp's default type is linear; 1/factor scales positions. Other types change the
    // frequencies in ways the runtime does not implement, so they are refused rather than silently ignored.
    std::string scaling = f.get_string_or(a + "rope.scaling.type", "linear");
    if (scaling != "linear" && scaling != "none")
        f.fail(a + "rope.scaling.type", "RoPE scaling '" + scaling + "' is not supported (only linear or none)");
    double factor = f.get_float_or(a + "rope.scaling.factor", 0.0);
    if (factor == 0.0) factor = f.get_float_or(a + "rope.scale_linear", 0.0);  // the older key
    if (factor != 0.0) h.rope_freq_scale = 1.0f / finite_positive(f, a + "rope.scaling.factor", factor);
    h.rope_style = h.arch == "qwen2" ? RopeStyle::neox : RopeStyle::normal;

    // ---- tensors ----
    TensorChecker tc(f);
    const GgufTensorInfo& embd = [&]() -> const GgufTensorInfo& {
        const GgufTensorInfo* t = f.tensor("token_embd.weight");
        if (!t) f.fail("tensor 'token_embd.weight'", "missing");
        if (t->dims.size() != 2 || t->dims[1] > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
            f.fail("tensor 'token_embd.weight'", "shape " + shape_str(t->dims) + " is not [n_embd, n_vocab]");
        return *t;
    }();
    h.n_vocab = static_cast<int32_t>(embd.dims[1]);
    const auto E = static_cast<uint64_t>(h.n_embd), V = static_cast<uint64_t>(h.n_vocab);
    const auto KV = static_cast<uint64_t>(h.n_embd_kv()), FF = static_cast<uint64_t>(h.n_ff);
    tc.check(embd, {E, V}, "[n_embd, n_vocab]", false);
    if (const GgufValue* toks = f.find("tokenizer.ggml.tokens"); toks && toks->array_size() != V)
        f.fail("tokenizer.ggml.tokens", std::to_string(toks->array_size()) + " tokens, but token_embd.weight has " +
                                            std::to_string(V) + " rows");
    if (f.find(a + "vocab_size") && f.get_uint(a + "vocab_size") != V)
        f.fail(a + "vocab_size", std::to_string(f.get_uint(a + "vocab_size")) + ", but token_embd.weight has " +
                                     std::to_string(V) + " rows");
    tc.require("output_norm.weight", {E}, "[n_embd]", true);
    h.tied_output = f.tensor("output.weight") == nullptr;
    if (!h.tied_output) tc.require("output.weight", {E, V}, "[n_embd, n_vocab]", false);
    h.rope_freqs = f.tensor("rope_freqs.weight") != nullptr;
    if (h.rope_freqs) {
        tc.require("rope_freqs.weight", {static_cast<uint64_t>(h.n_rot / 2)}, "[n_rot / 2]", true);
        if (f.tensor("rope_freqs.weight")->type != GgmlType::F32)
            f.fail("tensor 'rope_freqs.weight'", "must be f32");
    }

    h.qkv_bias = f.tensor("blk.0.attn_q.bias") != nullptr;
    for (int32_t il = 0; il < h.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        tc.require(p + "attn_norm.weight", {E}, "[n_embd]", true);
        tc.require(p + "attn_q.weight", {E, E}, "[n_embd, n_embd]", false);
        tc.require(p + "attn_k.weight", {E, KV}, "[n_embd, n_embd_kv]", false);
        tc.require(p + "attn_v.weight", {E, KV}, "[n_embd, n_embd_kv]", false);
        tc.require(p + "attn_output.weight", {E, E}, "[n_embd, n_embd]", false);
        if (h.qkv_bias) {
            tc.require(p + "attn_q.bias", {E}, "[n_embd] (blk.0 has q/k/v biases)", true);
            tc.require(p + "attn_k.bias", {KV}, "[n_embd_kv] (blk.0 has q/k/v biases)", true);
            tc.require(p + "attn_v.bias", {KV}, "[n_embd_kv] (blk.0 has q/k/v biases)", true);
        }
        tc.require(p + "ffn_norm.weight", {E}, "[n_embd]", true);
        tc.require(p + "ffn_gate.weight", {E, FF}, "[n_embd, n_ff]", false);
        tc.require(p + "ffn_up.weight", {E, FF}, "[n_embd, n_ff]", false);
        tc.require(p + "ffn_down.weight", {FF, E}, "[n_ff, n_embd]", false);
    }

    // Anything else would be silently ignored by the runtime (biases, experts, extra layers): refuse it.
    for (const auto& t : f.tensors())
        if (!tc.seen(t.name))
            f.fail("tensor '" + t.name + "'", "not part of a " + h.arch + " model with " + std::to_string(h.n_layer) +
                                                  " layers as speculum runs it (unsupported or inconsistent with " +
                                                  a + "block_count)");
    return h;
}

}  // namespace speculum::model
