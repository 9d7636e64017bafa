// hparams_from_gguf: llama.cpp's key names for each supported architecture, then a check of every tensor the forward
// pass reads against the shapes those keys imply (ggml order: dims[0] is the row length), as llama-model.cpp does.
#include "core/model/hparams.h"

#include <cmath>
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
    uint64_t v           = 0;
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
            m_f.fail("tensor '" + t.name + "'",
                     "shape " + shape_str(t.dims) + " does not match " + what + " = " + shape_str(want));
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

const char* supported_architectures() {
    return "llama, qwen2, qwen3, qwen3moe, gpt-oss, gemma2, gemma3, phi3, smollm3, qwen35, qwen35moe";
}

bool is_supported_architecture(const std::string& a) {
    return a == "llama" || a == "qwen2" || a == "qwen3" || a == "qwen3moe" || a == "gpt-oss" || a == "gemma2" ||
           a == "gemma3" || a == "phi3" || a == "smollm3" || a == "qwen35" || a == "qwen35moe";
}

bool Hparams::rope_pair_rotates(int32_t i) const {
    const int32_t s0 = rope_sections[0], s1 = rope_sections[1], s2 = rope_sections[2];
    const int32_t dims = s0 + s1 + s2 + rope_sections[3];
    if (dims <= 0) return true;
    const int32_t sector = i % dims;  // ggml's mrope cache: the axis of a pair by its sector
    if (rope_interleaved)
        return (sector % 3 == 1 && sector < 3 * s1) || (sector % 3 == 2 && sector < 3 * s2) ||
               (sector % 3 == 0 && sector < 3 * s0);
    return sector < s0 + s1 + s2;
}

namespace {

// Sliding-window layers from <arch>.attention.sliding_window_pattern: a period P (every P-th layer, counting from
// 1, is global; llama.cpp's set_swa_pattern), or one flag per layer.
std::vector<uint8_t> swa_layers_of(const GgufFile& f, const std::string& key, int32_t n_layer, uint32_t period) {
    std::vector<uint8_t> out(static_cast<size_t>(n_layer), 0);
    if (const GgufValue* v = f.find(key); v && v->type == GgufType::ARRAY) {
        if (v->ints.size() != out.size())
            f.fail(key, std::to_string(v->ints.size()) + " per-layer flags for " + std::to_string(n_layer) + " layers");
        for (size_t il = 0; il < out.size(); ++il) out[il] = v->ints[il] != 0;
        return out;
    }
    if (f.find(key)) {
        const uint64_t p = f.get_uint(key);
        if (p > static_cast<uint64_t>(n_layer) + 1) f.fail(key, "period " + std::to_string(p) + " is out of range");
        period = static_cast<uint32_t>(p);
    }
    for (int32_t il = 0; il < n_layer; ++il)
        out[static_cast<size_t>(il)] = period == 0 || static_cast<uint32_t>(il) % period < period - 1;
    return out;
}

}  // namespace

Hparams hparams_from_gguf(const GgufFile& f) {
    Hparams h;
    h.arch = f.get_string("general.architecture");
    if (h.arch == "eagle3")
        f.fail("general.architecture",
               "'eagle3' is an EAGLE-3 draft head, not a model: use it as a draft (draft kind \"eagle3\", "
               "model_path) for the target it was trained for");
    if (!is_supported_architecture(h.arch))
        f.fail("general.architecture",
               "architecture '" + h.arch + "' is not supported (" + supported_architectures() + " are)");
    const std::string a = h.arch + ".";
    const bool gemma    = h.arch == "gemma2" || h.arch == "gemma3";

    // ---- metadata ----
    h.n_ctx_train        = positive_int(f, a + "context_length");
    h.n_embd             = positive_int(f, a + "embedding_length");
    const int32_t blocks = positive_int(f, a + "block_count");
    if (f.find(a + "nextn_predict_layers")) {
        const uint64_t nextn = f.get_uint(a + "nextn_predict_layers");
        if (nextn >= uint64_t(blocks))
            f.fail(a + "nextn_predict_layers", std::to_string(nextn) + " multi-token-prediction blocks leave no main " +
                                                   "block of the " + std::to_string(blocks) + " in block_count");
        h.n_nextn = int32_t(nextn);
    }
    h.n_layer = blocks - h.n_nextn;
    // A mixture of experts may leave the dense width out (its experts have their own): 0 until the experts are read.
    const bool moe_arch = h.arch == "qwen3moe" || h.arch == "gpt-oss" || h.arch == "qwen35moe";
    const bool hybrid   = h.arch == "qwen35" || h.arch == "qwen35moe";
    h.n_ff   = moe_arch ? positive_int_or(f, a + "feed_forward_length", 0) : positive_int(f, a + "feed_forward_length");
    h.n_head = positive_int(f, a + "attention.head_count");
    h.n_head_kv = positive_int_or(f, a + "attention.head_count_kv", h.n_head);
    // The head dimension: key_length where given (Gemma, Qwen 3, Mistral Nemo: not n_embd / n_head), else the
    // even split of the width.
    if (f.find(a + "attention.key_length")) {
        h.n_embd_head = positive_int(f, a + "attention.key_length");
        if (h.n_embd_head % 2 != 0) f.fail(a + "attention.key_length", "must be even");
        if (f.find(a + "attention.value_length") && positive_int(f, a + "attention.value_length") != h.n_embd_head)
            f.fail(a + "attention.value_length", std::to_string(f.get_uint(a + "attention.value_length")) +
                                                     " differs from key_length " + std::to_string(h.n_embd_head) +
                                                     " (not supported)");
    } else if (h.n_embd % h.n_head != 0) {
        f.fail(a + "attention.head_count", std::to_string(h.n_head) + " heads do not divide embedding_length " +
                                               std::to_string(h.n_embd) + " (and attention.key_length is absent)");
    }
    if (h.n_head_kv > h.n_head || h.n_head % h.n_head_kv != 0)
        f.fail(a + "attention.head_count_kv", std::to_string(h.n_head_kv) + " KV heads do not divide the " +
                                                  std::to_string(h.n_head) + " query heads");
    // Mixture of experts (llama.cpp's qwen3moe: softmax routing, the chosen weights normalised to sum 1).
    if (moe_arch) {
        h.n_expert      = positive_int(f, a + "expert_count");
        h.n_expert_used = positive_int(f, a + "expert_used_count");
        if (h.n_expert_used > h.n_expert)
            f.fail(a + "expert_used_count",
                   std::to_string(h.n_expert_used) + " experts per token of " + std::to_string(h.n_expert));
        h.n_ff_exp = h.arch == "gpt-oss"
                         ? positive_int(f, a + "expert_feed_forward_length")
                         : positive_int_or(f, a + "expert_feed_forward_length", h.n_ff / h.n_expert_used);
        if (h.n_ff_exp < 1)
            f.fail(a + "expert_feed_forward_length", "absent, and feed_forward_length is absent or too small");
        if (h.n_ff == 0) h.n_ff = h.n_ff_exp;
        h.expert_gating       = ExpertGating::softmax;
        h.expert_weights_norm = true;
        if (h.arch == "gpt-oss") {  // llama.cpp's openai-moe: softmax over the kept logits, no renormalisation
            h.expert_gating       = ExpertGating::softmax_weight;
            h.expert_weights_norm = false;
            h.expert_act          = ExpertActivation::swiglu_oai;
            h.moe_biases = h.attn_out_bias = h.attn_sinks = h.ffn_norm_named_post_attention = true;
        }
    } else if (f.get_uint_or(a + "expert_count", 0) > 0) {
        f.fail(a + "expert_count", "mixture-of-experts '" + h.arch +
                                       "' models are not supported (of the MoE "
                                       "architectures, qwen3moe, gpt-oss and qwen35moe are)");
    }
    if (h.arch == "qwen35moe") {  // the shared expert (llama.cpp: its own width, else feed_forward_length)
        h.n_ff_shexp = positive_int_or(f, a + "expert_shared_feed_forward_length", h.n_ff);
        if (h.n_ff_shexp < 1) f.fail(a + "expert_shared_feed_forward_length", "absent, and feed_forward_length too");
    }
    if (hybrid) {  // llama.cpp's qwen35 / qwen35moe: Gated DeltaNet layers between gated attention layers
        h.ssm_d_conv  = positive_int(f, a + "ssm.conv_kernel");
        h.ssm_d_state = positive_int(f, a + "ssm.state_size");
        h.ssm_n_group = positive_int(f, a + "ssm.group_count");
        h.ssm_dt_rank = positive_int(f, a + "ssm.time_step_rank");
        if (h.ssm_d_conv < 2 || h.ssm_d_conv > 64)
            f.fail(a + "ssm.conv_kernel", std::to_string(h.ssm_d_conv) + " taps (2 to 64 supported)");
        if (h.ssm_d_state > 1024) f.fail(a + "ssm.state_size", std::to_string(h.ssm_d_state) + " is out of range");
        if (h.ssm_dt_rank % h.ssm_n_group != 0)
            f.fail(a + "ssm.time_step_rank", std::to_string(h.ssm_dt_rank) + " value heads are not a multiple of the " +
                                                 std::to_string(h.ssm_n_group) + " key heads (ssm.group_count)");
        if (int64_t(h.ssm_dt_rank) * h.ssm_d_state > (1 << 20))
            f.fail(a + "ssm.time_step_rank", "value width out of range");
        const int32_t inner = positive_int(f, a + "ssm.inner_size");
        if (inner != h.ssm_value_dim())
            f.fail(a + "ssm.inner_size", std::to_string(inner) + " is not state_size x time_step_rank = " +
                                             std::to_string(h.ssm_value_dim()));
        h.recurrent_layers.assign(size_t(h.n_layer), 0);
        if (const GgufValue* v = f.find(a + "attention.recurrent_layers"); v) {
            if (v->type != GgufType::ARRAY || v->ints.size() < size_t(h.n_layer))
                f.fail(a + "attention.recurrent_layers",
                       "expected one flag per block (" + std::to_string(h.n_layer + h.n_nextn) + ")");
            for (int32_t il = 0; il < h.n_layer; ++il) h.recurrent_layers[size_t(il)] = v->ints[size_t(il)] != 0;
        } else {
            const uint64_t every = f.get_uint_or(a + "full_attention_interval", 4);
            if (every < 1 || every > uint64_t(h.n_layer) + 1)
                f.fail(a + "full_attention_interval", std::to_string(every) + " is out of range");
            for (int32_t il = 0; il < h.n_layer; ++il) h.recurrent_layers[size_t(il)] = (uint64_t(il) + 1) % every != 0;
        }
        h.attn_gate = h.qk_norm = h.ffn_norm_named_post_attention = true;
    }

    h.n_rot = positive_int_or(f, a + "rope.dimension_count", h.head_dim());
    if (h.arch == "llama" && h.n_rot != h.head_dim())  // llama.cpp enforces full rotary for llama
        f.fail(a + "rope.dimension_count", std::to_string(h.n_rot) + " must equal the head dimension " +
                                               std::to_string(h.head_dim()) + " for llama");
    if (h.n_rot > h.head_dim() || h.n_rot % 2 != 0)
        f.fail(a + "rope.dimension_count", std::to_string(h.n_rot) + " must be even and at most the head dimension " +
                                               std::to_string(h.head_dim()));
    h.rope_freq_base = finite_positive(f, a + "rope.freq_base", f.get_float_or(a + "rope.freq_base", 10000.0));
    h.rms_eps =
        finite_positive(f, a + "attention.layer_norm_rms_epsilon", f.get_float(a + "attention.layer_norm_rms_epsilon"));

    // RoPE scaling: llama.cpp's default type is linear; 1/factor scales positions. YaRN blends interpolated and
    // kept frequencies (gpt-oss). Other types change the frequencies in ways the runtime does not implement, so
    // they are refused rather than silently ignored.
    std::string scaling = f.get_string_or(a + "rope.scaling.type", "linear");
    if (scaling != "linear" && scaling != "none" && scaling != "yarn")
        f.fail(a + "rope.scaling.type", "RoPE scaling '" + scaling + "' is not supported (linear, yarn or none)");
    if (scaling == "yarn") {
        h.rope_yarn     = true;
        h.yarn_orig_ctx = positive_int_or(f, a + "rope.scaling.original_context_length", h.n_ctx_train);
        auto yarn_float = [&](const std::string& key, float fallback) {
            return f.find(key) ? finite_positive(f, key, f.get_float(key)) : fallback;
        };
        h.yarn_beta_fast   = yarn_float(a + "rope.scaling.yarn_beta_fast", 32.0f);
        h.yarn_beta_slow   = yarn_float(a + "rope.scaling.yarn_beta_slow", 1.0f);
        h.yarn_attn_factor = yarn_float(a + "rope.scaling.attn_factor", 1.0f);
        if (f.get_float_or(a + "rope.scaling.yarn_log_multiplier", 0.0) != 0.0)
            f.fail(a + "rope.scaling.yarn_log_multiplier", "DeepSeek's YaRN magnitude is not supported");
    }
    double factor = f.get_float_or(a + "rope.scaling.factor", 0.0);
    if (factor == 0.0) factor = f.get_float_or(a + "rope.scale_linear", 0.0);  // the older key
    if (factor != 0.0) h.rope_freq_scale = 1.0f / finite_positive(f, a + "rope.scaling.factor", factor);
    h.rope_style = h.arch == "llama" || h.arch == "smollm3" ? RopeStyle::normal : RopeStyle::neox;
    if (hybrid) {  // IMROPE over (p, p, p, 0): the pairs of the fourth axis do not turn
        const GgufValue* v = f.find(a + "rope.dimension_sections");
        if (!v || v->type != GgufType::ARRAY || v->ints.size() < 3 || v->ints.size() > 4)
            f.fail(a + "rope.dimension_sections", "missing, or not an array of 3 or 4 section sizes");
        int64_t sum = 0;
        for (size_t i = 0; i < v->ints.size(); ++i) {
            if (v->ints[i] < 0 || v->ints[i] > h.n_rot) f.fail(a + "rope.dimension_sections", "a size out of range");
            h.rope_sections[i] = int32_t(v->ints[i]), sum += v->ints[i];
        }
        if (sum < 1 || sum > h.head_dim())
            f.fail(a + "rope.dimension_sections", "sizes sum to " + std::to_string(sum) +
                                                      ", expected 1 to the head "
                                                      "dimension " +
                                                      std::to_string(h.head_dim()));
        h.rope_interleaved = true;
    }
    // gpt-oss: every other layer windowed (llama.cpp's set_swa_pattern(2) unless the file says), on the model's own
    // RoPE base and scaling unless rope.freq_base_swa is given.
    if (h.arch == "gpt-oss") {
        h.n_swa               = positive_int(f, a + "attention.sliding_window");
        h.swa_layers          = swa_layers_of(f, a + "attention.sliding_window_pattern", h.n_layer, 2);
        h.rope_freq_base_swa  = h.rope_freq_base;
        h.rope_freq_scale_swa = h.rope_freq_scale;
        if (f.find(a + "rope.freq_base_swa"))
            h.rope_freq_base_swa = finite_positive(f, a + "rope.freq_base_swa", f.get_float(a + "rope.freq_base_swa"));
    }

    // ---- per-architecture parts (llama.cpp's load_arch_hparams for each) ----
    h.qk_norm = h.arch == "qwen3" || h.arch == "qwen3moe" || h.arch == "gemma3" || hybrid;
    if (h.arch == "smollm3") h.nope_period = 4;  // llama.cpp's n_no_rope_layer_step: fixed, not in the file
    if (gemma) {
        h.post_norms = true, h.ffn_act = FfnActivation::gelu, h.scale_embd = true;
        // Gemma's query scale: 1/sqrt(head_dim), except the 27B models (1/sqrt(n_embd / n_head)), which llama.cpp
        // recognises by their layer count.
        const bool is_27b = (h.arch == "gemma2" && h.n_layer == 46) || (h.arch == "gemma3" && h.n_layer == 62);
        h.attn_scale      = 1.0f / std::sqrt(static_cast<float>(is_27b ? h.n_embd / h.n_head : h.head_dim()));
        auto softcap      = [&](const std::string& key, double fallback) {
            const double c = f.get_float_or(key, fallback);
            return c == 0.0 ? 0.0f : finite_positive(f, key, c);
        };
        h.final_softcap = softcap(a + "final_logit_softcapping", h.arch == "gemma2" ? 30.0 : 0.0);
        if (h.arch == "gemma2") h.attn_softcap = softcap(a + "attn_logit_softcapping", 50.0);
        // Sliding windows: gemma2 always (4096 by default, every other layer); gemma3 when the file gives a window
        // (every 6th layer global), its windowed layers on their own RoPE base (10000 unless given) and no scaling.
        const bool windowed = h.arch == "gemma2" || f.get_uint_or(a + "attention.sliding_window", 0) > 0;
        if (windowed) {
            h.n_swa = positive_int_or(f, a + "attention.sliding_window", 4096);
            h.swa_layers =
                swa_layers_of(f, a + "attention.sliding_window_pattern", h.n_layer, h.arch == "gemma2" ? 2 : 6);
            h.rope_freq_base_swa  = h.arch == "gemma2" ? h.rope_freq_base : 10000.0f;
            h.rope_freq_scale_swa = h.arch == "gemma2" ? h.rope_freq_scale : 1.0f;
            if (f.find(a + "rope.freq_base_swa"))
                h.rope_freq_base_swa =
                    finite_positive(f, a + "rope.freq_base_swa", f.get_float(a + "rope.freq_base_swa"));
        }
    }
    // phi3's long-context factors (LongRoPE) rescale frequencies and attention by context length; the runtime does
    // not apply them, so such files are refused.
    for (const char* t : {"rope_factors_long.weight", "rope_factors_short.weight"})
        if (f.tensor(t) || f.tensor(std::string("blk.0.") + t))
            f.fail(std::string("tensor '") + t + "'", "LongRoPE scaling (Phi-3 128k) is not supported");

    // ---- tensors ----
    TensorChecker tc(f);
    const GgufTensorInfo& embd = [&]() -> const GgufTensorInfo& {
        const GgufTensorInfo* t = f.tensor("token_embd.weight");
        if (!t) f.fail("tensor 'token_embd.weight'", "missing");
        if (t->dims.size() != 2 || t->dims[1] > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
            f.fail("tensor 'token_embd.weight'", "shape " + shape_str(t->dims) + " is not [n_embd, n_vocab]");
        return *t;
    }();
    h.n_vocab    = static_cast<int32_t>(embd.dims[1]);
    const auto E = static_cast<uint64_t>(h.n_embd), V = static_cast<uint64_t>(h.n_vocab);
    const auto Q = static_cast<uint64_t>(h.n_embd_q()), KV = static_cast<uint64_t>(h.n_embd_kv());
    const auto FF = static_cast<uint64_t>(h.n_ff), HD = static_cast<uint64_t>(h.head_dim());
    const auto NE = static_cast<uint64_t>(h.n_expert), FE = static_cast<uint64_t>(h.n_ff_exp);
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
        if (f.tensor("rope_freqs.weight")->type != GgmlType::F32) f.fail("tensor 'rope_freqs.weight'", "must be f32");
    }

    h.fused_qkv     = !hybrid && f.tensor("blk.0.attn_qkv.weight") != nullptr;  // a hybrid's is the DeltaNet's
    h.fused_gate_up = h.arch == "phi3";  // phi3's ffn_up holds the gate too (llama.cpp reads no ffn_gate)
    h.qkv_bias      = f.tensor("blk.0.attn_q.bias") != nullptr;
    const auto S = uint64_t(h.ssm_d_state), HV = uint64_t(h.ssm_dt_rank), CONV = uint64_t(h.ssm_conv_dim());
    const auto VD = uint64_t(h.ssm_value_dim()), FS = uint64_t(h.n_ff_shexp);
    for (int32_t il = 0; il < h.n_layer + h.n_nextn; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        tc.require(p + "attn_norm.weight", {E}, "[n_embd]", true);
        if (h.is_recurrent(il)) {  // Gated DeltaNet in place of attention
            tc.require(p + "attn_qkv.weight", {E, CONV}, "[n_embd, 2 state_size group_count + inner_size]", false);
            tc.require(p + "attn_gate.weight", {E, VD}, "[n_embd, inner_size]", false);
            tc.require(p + "ssm_conv1d.weight", {uint64_t(h.ssm_d_conv), CONV}, "[conv_kernel, conv channels]", true);
            tc.require(p + "ssm_dt.bias", {HV}, "[time_step_rank]", true);
            tc.require(p + "ssm_a", {HV}, "[time_step_rank]", true);
            tc.require(p + "ssm_beta.weight", {E, HV}, "[n_embd, time_step_rank]", false);
            tc.require(p + "ssm_alpha.weight", {E, HV}, "[n_embd, time_step_rank]", false);
            tc.require(p + "ssm_norm.weight", {S}, "[state_size]", true);
            tc.require(p + "ssm_out.weight", {VD, E}, "[inner_size, n_embd]", false);
        } else if (h.attn_gate) {
            tc.require(p + "attn_q.weight", {E, 2 * Q}, "[n_embd, 2 n_head head_dim] (query and gate)", false);
            tc.require(p + "attn_k.weight", {E, KV}, "[n_embd, n_embd_kv]", false);
            tc.require(p + "attn_v.weight", {E, KV}, "[n_embd, n_embd_kv]", false);
        } else if (h.fused_qkv) {
            tc.require(p + "attn_qkv.weight", {E, Q + 2 * KV}, "[n_embd, n_embd_q + 2 n_embd_kv] (blk.0 is fused)",
                       false);
        } else {
            tc.require(p + "attn_q.weight", {E, Q}, "[n_embd, n_head * head_dim]", false);
            tc.require(p + "attn_k.weight", {E, KV}, "[n_embd, n_embd_kv]", false);
            tc.require(p + "attn_v.weight", {E, KV}, "[n_embd, n_embd_kv]", false);
        }
        if (!h.is_recurrent(il)) tc.require(p + "attn_output.weight", {Q, E}, "[n_head * head_dim, n_embd]", false);
        if (h.attn_out_bias) tc.require(p + "attn_output.bias", {E}, "[n_embd]", true);
        if (h.attn_sinks) tc.require(p + "attn_sinks.weight", {static_cast<uint64_t>(h.n_head)}, "[n_head]", true);
        if (h.qkv_bias) {
            tc.require(p + "attn_q.bias", {Q}, "[n_embd_q] (blk.0 has q/k/v biases)", true);
            tc.require(p + "attn_k.bias", {KV}, "[n_embd_kv] (blk.0 has q/k/v biases)", true);
            tc.require(p + "attn_v.bias", {KV}, "[n_embd_kv] (blk.0 has q/k/v biases)", true);
        }
        if (h.qk_norm && !h.is_recurrent(il)) {
            tc.require(p + "attn_q_norm.weight", {HD}, "[head_dim]", true);
            tc.require(p + "attn_k_norm.weight", {HD}, "[head_dim]", true);
        }
        if (h.post_norms) {
            tc.require(p + "post_attention_norm.weight", {E}, "[n_embd]", true);
            tc.require(p + "post_ffw_norm.weight", {E}, "[n_embd]", true);
        }
        tc.require(p + (h.ffn_norm_named_post_attention ? "post_attention_norm.weight" : "ffn_norm.weight"), {E},
                   "[n_embd]", true);
        if (h.moe()) {
            if (h.moe_biases) {
                tc.require(p + "ffn_gate_inp.bias", {NE}, "[n_expert]", true);
                tc.require(p + "ffn_gate_exps.bias", {FE, NE}, "[n_ff_exp, n_expert]", true);
                tc.require(p + "ffn_up_exps.bias", {FE, NE}, "[n_ff_exp, n_expert]", true);
                tc.require(p + "ffn_down_exps.bias", {E, NE}, "[n_embd, n_expert]", true);
            }
            tc.require(p + "ffn_gate_inp.weight", {E, NE}, "[n_embd, n_expert]", false);
            tc.require(p + "ffn_gate_exps.weight", {E, FE, NE}, "[n_embd, n_ff_exp, n_expert]", false);
            tc.require(p + "ffn_up_exps.weight", {E, FE, NE}, "[n_embd, n_ff_exp, n_expert]", false);
            tc.require(p + "ffn_down_exps.weight", {FE, E, NE}, "[n_ff_exp, n_embd, n_expert]", false);
            if (h.n_ff_shexp > 0) {
                tc.require(p + "ffn_gate_inp_shexp.weight", {E}, "[n_embd]", true);
                tc.require(p + "ffn_gate_shexp.weight", {E, FS}, "[n_embd, n_ff_shexp]", false);
                tc.require(p + "ffn_up_shexp.weight", {E, FS}, "[n_embd, n_ff_shexp]", false);
                tc.require(p + "ffn_down_shexp.weight", {FS, E}, "[n_ff_shexp, n_embd]", false);
            }
            continue;
        }
        if (h.fused_gate_up) {
            tc.require(p + "ffn_up.weight", {E, 2 * FF}, "[n_embd, 2 n_ff] (gate and up, fused)", false);
        } else {
            tc.require(p + "ffn_gate.weight", {E, FF}, "[n_embd, n_ff]", false);
            tc.require(p + "ffn_up.weight", {E, FF}, "[n_embd, n_ff]", false);
        }
        tc.require(p + "ffn_down.weight", {FF, E}, "[n_ff, n_embd]", false);
    }

    // The multi-token-prediction blocks' own tensors (llama.cpp's names; the optional ones fall back to the model's).
    for (int32_t il = h.n_layer; il < h.n_layer + h.n_nextn; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".nextn.";
        tc.require(p + "eh_proj.weight", {2 * E, E}, "[2 n_embd, n_embd]", false);
        tc.require(p + "enorm.weight", {E}, "[n_embd]", true);
        tc.require(p + "hnorm.weight", {E}, "[n_embd]", true);
        if (f.tensor(p + "shared_head_norm.weight")) tc.require(p + "shared_head_norm.weight", {E}, "[n_embd]", true);
        if (f.tensor(p + "shared_head_head.weight"))
            tc.require(p + "shared_head_head.weight", {E, V}, "[n_embd, n_vocab]", false);
        if (f.tensor(p + "embed_tokens.weight"))
            tc.require(p + "embed_tokens.weight", {E, V}, "[n_embd, n_vocab]", false);
    }

    // Anything else would be silently ignored by the runtime (biases, experts, extra layers): refuse it.
    for (const auto& t : f.tensors())
        if (!tc.seen(t.name))
            f.fail("tensor '" + t.name + "'", "not part of a " + h.arch + " model with " + std::to_string(h.n_layer) +
                                                  " layers as speculum runs it (unsupported or inconsistent with " + a +
                                                  "block_count)");
    return h;
}

}  // namespace speculum::model
