// Random-weight models: bit patterns of each storage type with a power-of-two scale near 1/sqrt(cols), so no
// float->f16 or quantization code is needed (the kernels own those), plus the GGUF writer for any Model.
#include "core/model/synthetic.h"
#include "core/json_reader.h"

#include "core/hw/large_pages.h"
#include "core/model/gguf_writer.h"
#include "core/model/model_gguf.h"
#include "core/model/sampler.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace speculum::model {

// ---- random tensors ----

namespace {

using kernels::GgmlType;

const char* type_name(GgmlType t) {
    const kernels::GgmlTypeTraits* tr = kernels::ggml_type_traits(t);
    return tr ? tr->name : "unknown";
}

// Exponent e with 2^e closest to x.
int pow2_exponent(double x) {
    return static_cast<int>(std::lround(std::log2(x)));
}

// Random (rows, cols) matrix of `type` with element magnitudes around `scale`.
std::vector<uint8_t> random_matrix(GgmlType type, int64_t rows, int64_t cols, double scale, Rng& rng) {
    std::vector<uint8_t> b(kernels::ggml_row_size(type, static_cast<uint64_t>(cols)) * static_cast<uint64_t>(rows));
    auto put16 = [&](size_t at, uint16_t v) {
        b[at] = static_cast<uint8_t>(v & 0xff), b[at + 1] = static_cast<uint8_t>(v >> 8);
    };
    const int e = pow2_exponent(scale);
    switch (type) {
        case GgmlType::F32: {
            for (size_t i = 0; i < b.size(); i += 4) {
                const float v = static_cast<float>((rng.next_double() * 2.0 - 1.0) * scale * 1.7320508);
                std::memcpy(&b[i], &v, 4);
            }
            break;
        }
        case GgmlType::F16:     // sign | exponent in [e-2, e] | random 10-bit mantissa
        case GgmlType::BF16: {  // sign | exponent in [e-2, e] | random 7-bit mantissa
            const bool f16 = type == GgmlType::F16;
            for (size_t i = 0; i < b.size(); i += 2) {
                const uint64_t r = rng.next_u64();
                const int ex     = e - static_cast<int>(r % 3) + (f16 ? 15 : 127);
                const uint16_t h = f16 ? static_cast<uint16_t>(((r >> 8) & 1) << 15 | ex << 10 | ((r >> 16) & 0x3ff))
                                       : static_cast<uint16_t>(((r >> 8) & 1) << 15 | ex << 7 | ((r >> 16) & 0x7f));
                put16(i, h);
            }
            break;
        }
        case GgmlType::Q8_0:    // f16 d = 2^(e-6), 32 int8 in [-127, 127] (rms ~73 -> values ~ scale)
        case GgmlType::Q4_0: {  // f16 d = 2^(e-2), 16 bytes of nibbles ((q - 8) rms ~4.6)
            const bool q8      = type == GgmlType::Q8_0;
            const size_t block = q8 ? 34 : 18;
            const uint16_t d   = static_cast<uint16_t>((e - (q8 ? 6 : 2) + 15) << 10);
            for (size_t at = 0; at < b.size(); at += block) {
                put16(at, d);
                for (size_t j = 2; j < block; ++j) {
                    uint8_t v = static_cast<uint8_t>(rng.next_u64() >> 32);
                    if (q8 && v == 0x80) v = 0x81;  // -128 is outside ggml's quantizer range
                    b[at + j] = v;
                }
            }
            break;
        }
        case GgmlType::Q4_1:      // f16 d = 2^(e-2), m = -8 d: values (q - 8) d as Q4_0
        case GgmlType::Q5_0:      // f16 d = 2^(e-3), random nibbles and fifth bits ((q - 16) rms ~9.2)
        case GgmlType::Q5_1:      // f16 d = 2^(e-3), m = -16 d
        case GgmlType::IQ4_NL: {  // f16 d = 2^(e-6), codes into the non-linear table (rms ~68)
            const size_t block = kernels::ggml_type_traits(type)->type_size;
            const int shift    = type == GgmlType::Q4_1 ? 2 : type == GgmlType::IQ4_NL ? 6 : 3;
            const bool has_min = type == GgmlType::Q4_1 || type == GgmlType::Q5_1;
            const uint16_t d   = static_cast<uint16_t>((e - shift + 15) << 10);
            // -8 d = -2^(e+1) and -16 d = -2^(e+1) as well: sign bit, exponent e + 1
            const uint16_t m = static_cast<uint16_t>(0x8000u | static_cast<uint32_t>(e + 1 + 15) << 10);
            for (size_t at = 0; at < b.size(); at += block) {
                put16(at, d);
                if (has_min) put16(at + 2, m);
                for (size_t j = has_min ? 4 : 2; j < block; ++j) b[at + j] = static_cast<uint8_t>(rng.next_u64() >> 32);
            }
            break;
        }
        case GgmlType::MXFP4: {  // E8M0 scale 2^(x-128) with the doubled E2M1 table (rms ~5.9)
            const uint8_t x = static_cast<uint8_t>(128 + e - 3);
            for (size_t at = 0; at < b.size(); at += 17) {
                b[at] = x;
                for (size_t j = 1; j < 17; ++j) b[at + j] = static_cast<uint8_t>(rng.next_u64() >> 40);
            }
            break;
        }
        default:
            throw std::invalid_argument(std::string("synthetic model: unsupported type ") + type_name(type));
    }
    return b;
}

std::vector<float> random_vector(int64_t n, float lo, float hi, Rng& rng) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = lo + static_cast<float>(rng.next_double()) * (hi - lo);
    return v;
}

}  // namespace

// ---- spec ----

std::optional<kernels::GgmlType> parse_weight_type(const std::string& name) {
    std::string lower;
    for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1,
                       GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL, GgmlType::MXFP4})
        if (lower == type_name(t)) return t;
    return std::nullopt;
}

void SyntheticSpec::validate() const {
    auto fail = [](const std::string& field, const std::string& why) {
        throw std::invalid_argument("SyntheticSpec." + field + ": " + why);
    };
    if (!is_supported_architecture(arch))
        fail("arch", std::string("expected one of ") + supported_architectures() + ", got \"" + arch + "\"");
    if (n_vocab < 1 || n_vocab > (1 << 20)) fail("n_vocab", "must be in [1, 2^20]");
    if (n_embd < 1 || n_embd > 65536) fail("n_embd", "must be in [1, 65536]");
    if (n_layer < 1 || n_layer > 1024) fail("n_layer", "must be in [1, 1024]");
    if (n_embd_head < 0 || n_embd_head % 2 != 0 || n_embd_head > 4096)
        fail("n_embd_head", "must be even and in [0, 4096]");
    if (n_head < 1 || (n_embd_head == 0 && n_embd % n_head != 0))
        fail("n_head", "must divide n_embd (or set n_embd_head)");
    if (n_swa < 0) fail("n_swa", "must be >= 0");
    if (n_nextn < 0 || n_nextn > 4) fail("n_nextn", "must be in [0, 4]");
    if (swa_period < 0 || swa_period > n_layer + 1) fail("swa_period", "must be in [0, n_layer + 1]");
    if (n_head_kv < 1 || n_head % n_head_kv != 0) fail("n_head_kv", "must divide n_head");
    if (n_ff < 1 || n_ff > 262144) fail("n_ff", "must be in [1, 262144]");
    if (n_ctx < 1 || n_ctx > (1 << 20)) fail("n_ctx", "must be in [1, 2^20]");
    const bool hybrid = arch == "qwen35" || arch == "qwen35moe";
    for (const auto& [field, v] : {std::pair{"ssm_d_state", ssm_d_state},
                                   {"ssm_n_group", ssm_n_group},
                                   {"ssm_dt_rank", ssm_dt_rank},
                                   {"ssm_d_conv", ssm_d_conv},
                                   {"full_attention_interval", full_attention_interval},
                                   {"n_ff_shexp", n_ff_shexp}}) {
        if (v < 0 || v > 65536) fail(field, "must be in [0, 65536]");
        if (v != 0 && !hybrid) fail(field, "is for the hybrid qwen35 and qwen35moe only");
    }
    if (n_ff_shexp != 0 && arch != "qwen35moe") fail("n_ff_shexp", "is for qwen35moe only");
    if (hybrid) {
        const int32_t groups = ssm_n_group > 0 ? ssm_n_group : 2, heads = ssm_dt_rank > 0 ? ssm_dt_rank : 4;
        if (heads % groups != 0) fail("ssm_dt_rank", "must be a multiple of ssm_n_group");
        if (ssm_d_conv == 1 || ssm_d_conv > 64) fail("ssm_d_conv", "must be in [2, 64]");
        if (full_attention_interval > n_layer + 1) fail("full_attention_interval", "must be at most n_layer + 1");
        if (ssm_d_state > 1024) fail("ssm_d_state", "must be at most 1024");
    }
    if (arch == "qwen3moe" || arch == "gpt-oss" || arch == "qwen35moe") {
        if (n_expert < 1 || n_expert > 1024) fail("n_expert", "must be in [1, 1024] for " + arch);
        if (n_expert_used < 1 || n_expert_used > n_expert) fail("n_expert_used", "must be in [1, n_expert]");
        if (n_ff_exp < 0 || n_ff_exp > 262144) fail("n_ff_exp", "must be in [0, 262144]");
        if (n_ff_exp == 0 && n_ff / n_expert_used < 1) fail("n_ff_exp", "0 takes n_ff / n_expert_used, which is 0");
    } else if (n_expert != 0 || n_expert_used != 0 || n_ff_exp != 0) {
        fail("n_expert", "experts are for qwen3moe, gpt-oss and qwen35moe only");
    }
    if (!(yarn_factor == 0.0f || (yarn_factor > 0.0f && yarn_factor <= 1024.0f)))
        fail("yarn_factor", "must be 0 (none) or in (0, 1024]");
    if (yarn_factor > 0.0f && rope_freq_scale != 1.0f) fail("yarn_factor", "replaces rope_freq_scale (leave it 1)");
    if (yarn_orig_ctx < 0 || yarn_orig_ctx > (1 << 20)) fail("yarn_orig_ctx", "must be in [0, 2^20]");
    const int32_t head_dim = n_embd_head > 0 ? n_embd_head : n_embd / n_head;
    if (n_rot < 0 || n_rot > head_dim || n_rot % 2 != 0) fail("n_rot", "must be even and <= the head dim");
    if (arch == "llama" && n_rot != 0 && n_rot != head_dim) fail("n_rot", "llama rotates the whole head");
    if (!(rope_freq_base > 0.0f)) fail("rope_freq_base", "must be > 0");
    if (!(rope_freq_scale > 0.0f)) fail("rope_freq_scale", "must be > 0");
    if (rope_freqs && arch != "llama") fail("rope_freqs", "only llama models carry rope_freqs.weight");
    const kernels::GgmlTypeTraits* tr = kernels::ggml_type_traits(type);
    if (!tr || !parse_weight_type(tr->name))
        fail("type", "expected f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl or mxfp4");
    const int32_t bs     = static_cast<int32_t>(tr->block_size);
    const int32_t ff_exp = n_ff_exp > 0 ? n_ff_exp : (n_expert_used > 0 ? n_ff / n_expert_used : 0);
    if (n_embd % bs != 0 || n_ff % bs != 0 || (head_dim * n_head) % bs != 0 || ff_exp % bs != 0)
        fail("type", std::string("n_embd, n_ff, n_ff_exp and n_head * head_dim must be multiples of the ") + tr->name +
                         " block size " + std::to_string(tr->block_size));
}

void to_json(nlohmann::json& j, const SyntheticSpec& s) {
    j = nlohmann::json{{"arch", s.arch},
                       {"n_vocab", s.n_vocab},
                       {"n_embd", s.n_embd},
                       {"n_layer", s.n_layer},
                       {"n_head", s.n_head},
                       {"n_head_kv", s.n_head_kv},
                       {"n_ff", s.n_ff},
                       {"n_ctx", s.n_ctx},
                       {"n_rot", s.n_rot},
                       {"n_embd_head", s.n_embd_head},
                       {"n_swa", s.n_swa},
                       {"swa_period", s.swa_period},
                       {"rope_freq_base", s.rope_freq_base},
                       {"rope_freq_scale", s.rope_freq_scale},
                       {"tied_output", s.tied_output},
                       {"rope_freqs", s.rope_freqs},
                       {"type", type_name(s.type)},
                       {"seed", s.seed}};
    if (s.n_nextn > 0) j["n_nextn"] = s.n_nextn;  // only when set: specs without it keep their hash
    if (s.n_expert > 0) j["n_expert"] = s.n_expert, j["n_expert_used"] = s.n_expert_used, j["n_ff_exp"] = s.n_ff_exp;
    if (s.yarn_factor > 0) j["yarn_factor"] = s.yarn_factor, j["yarn_orig_ctx"] = s.yarn_orig_ctx;
    for (const auto& [key, v] : {std::pair{"ssm_d_state", s.ssm_d_state},
                                 {"ssm_n_group", s.ssm_n_group},
                                 {"ssm_dt_rank", s.ssm_dt_rank},
                                 {"ssm_d_conv", s.ssm_d_conv},
                                 {"full_attention_interval", s.full_attention_interval},
                                 {"n_ff_shexp", s.n_ff_shexp}})
        if (v != 0) j[key] = v;
}

void from_json(const nlohmann::json& j, SyntheticSpec& s) {
    // Strict: an unknown key or a value of the wrong type or out of range is an error naming the key.
    JsonReader r(j, "SyntheticSpec");
    s                          = SyntheticSpec{};
    constexpr double kFloatMax = 3.0e38;
    r.get("arch", s.arch);
    for (const auto& [key, out] : {std::pair{"n_vocab", &s.n_vocab},
                                   {"n_embd", &s.n_embd},
                                   {"n_layer", &s.n_layer},
                                   {"n_head", &s.n_head},
                                   {"n_head_kv", &s.n_head_kv},
                                   {"n_ff", &s.n_ff},
                                   {"n_ctx", &s.n_ctx},
                                   {"n_rot", &s.n_rot},
                                   {"n_embd_head", &s.n_embd_head},
                                   {"n_swa", &s.n_swa},
                                   {"swa_period", &s.swa_period},
                                   {"n_nextn", &s.n_nextn},
                                   {"n_expert", &s.n_expert},
                                   {"n_expert_used", &s.n_expert_used},
                                   {"n_ff_exp", &s.n_ff_exp},
                                   {"yarn_orig_ctx", &s.yarn_orig_ctx},
                                   {"ssm_d_state", &s.ssm_d_state},
                                   {"ssm_n_group", &s.ssm_n_group},
                                   {"ssm_dt_rank", &s.ssm_dt_rank},
                                   {"ssm_d_conv", &s.ssm_d_conv},
                                   {"full_attention_interval", &s.full_attention_interval},
                                   {"n_ff_shexp", &s.n_ff_shexp}})
        r.get(key, *out);
    r.get("yarn_factor", s.yarn_factor, -kFloatMax, kFloatMax);
    r.get("rope_freq_base", s.rope_freq_base, -kFloatMax, kFloatMax);
    r.get("rope_freq_scale", s.rope_freq_scale, -kFloatMax, kFloatMax);
    r.get("tied_output", s.tied_output), r.get("rope_freqs", s.rope_freqs);
    std::string type;
    r.get("type", type);
    if (r.has("type")) {
        const auto parsed = parse_weight_type(type);
        if (!parsed) r.fail(r.at("type"), "\"" + type.substr(0, 64) + "\" is not a weight type such as \"f16\"");
        s.type = *parsed;
    }
    r.get("seed", s.seed);
    r.finish();
}

// ---- building ----

Hparams synthetic_hparams(const SyntheticSpec& s) {
    s.validate();
    Hparams hp;
    hp.arch            = s.arch;
    hp.n_vocab         = s.n_vocab;
    hp.n_ctx_train     = s.n_ctx;
    hp.n_embd          = s.n_embd;
    hp.n_layer         = s.n_layer;
    hp.n_nextn         = s.n_nextn;
    hp.n_head          = s.n_head;
    hp.n_head_kv       = s.n_head_kv;
    hp.n_ff            = s.n_ff;
    hp.n_embd_head     = s.n_embd_head;
    hp.n_rot           = s.n_rot > 0 ? s.n_rot : hp.head_dim();
    hp.rope_freq_base  = s.rope_freq_base;
    hp.rope_freq_scale = s.rope_freq_scale;
    hp.rms_eps         = 1e-5f;
    hp.rope_style      = s.arch == "llama" || s.arch == "smollm3" ? RopeStyle::normal : RopeStyle::neox;
    hp.tied_output     = s.tied_output;
    hp.qkv_bias        = s.arch == "qwen2" || s.arch == "gpt-oss";
    hp.rope_freqs      = s.rope_freqs;
    // What hparams_from_gguf derives for each architecture from the file this spec writes.
    hp.qk_norm = s.arch == "qwen3" || s.arch == "qwen3moe" || s.arch == "gemma3";
    if (s.arch == "qwen35" || s.arch == "qwen35moe") {  // what hparams_from_gguf reads for them
        hp.ssm_d_state      = s.ssm_d_state > 0 ? s.ssm_d_state : 32;
        hp.ssm_n_group      = s.ssm_n_group > 0 ? s.ssm_n_group : 2;
        hp.ssm_dt_rank      = s.ssm_dt_rank > 0 ? s.ssm_dt_rank : 4;
        hp.ssm_d_conv       = s.ssm_d_conv > 0 ? s.ssm_d_conv : 4;
        const int32_t every = s.full_attention_interval > 0 ? s.full_attention_interval : 4;
        for (int32_t il = 0; il < s.n_layer; ++il) hp.recurrent_layers.push_back((il + 1) % every != 0);
        hp.attn_gate = hp.qk_norm = hp.ffn_norm_named_post_attention = true;
        const int32_t half = hp.n_rot / 2;  // Qwen 3.5's split of the rotary pairs into three axes (11, 11, 10)
        const int32_t s0 = (half + 2) / 3, s1 = std::min(s0, half - s0);
        hp.rope_sections    = {s0, s1, half - s0 - s1, 0};
        hp.rope_interleaved = true;
        if (s.arch == "qwen35moe") hp.n_ff_shexp = s.n_ff_shexp > 0 ? s.n_ff_shexp : s.n_ff;
    }
    if (s.arch == "qwen3moe" || s.arch == "gpt-oss" || s.arch == "qwen35moe") {
        hp.n_expert      = s.n_expert;
        hp.n_expert_used = s.n_expert_used;
        hp.n_ff_exp      = s.n_ff_exp > 0 ? s.n_ff_exp : s.n_ff / s.n_expert_used;
    }
    if (s.yarn_factor > 0) {
        hp.rope_yarn       = true;
        hp.rope_freq_scale = 1.0f / s.yarn_factor;
        hp.yarn_orig_ctx   = s.yarn_orig_ctx > 0 ? s.yarn_orig_ctx : s.n_ctx;
    }
    if (s.arch == "gpt-oss") {  // what hparams_from_gguf sets for it
        hp.qkv_bias = hp.attn_out_bias = hp.attn_sinks = hp.moe_biases = hp.ffn_norm_named_post_attention = true;
        hp.expert_gating       = ExpertGating::softmax_weight;
        hp.expert_weights_norm = false;
        hp.expert_act          = ExpertActivation::swiglu_oai;
        hp.n_swa               = s.n_swa > 0 ? s.n_swa : 128;
        const uint32_t period  = s.swa_period > 0 ? static_cast<uint32_t>(s.swa_period) : 2u;
        for (int32_t il = 0; il < s.n_layer; ++il)
            hp.swa_layers.push_back(static_cast<uint32_t>(il) % period < period - 1);
        hp.rope_freq_base_swa  = hp.rope_freq_base;
        hp.rope_freq_scale_swa = hp.rope_freq_scale;
    }
    if (s.arch == "smollm3") hp.nope_period = 4;
    if (s.arch == "phi3") hp.fused_qkv = hp.fused_gate_up = true;
    if (s.arch == "gemma2" || s.arch == "gemma3") {
        const bool g2 = s.arch == "gemma2";
        hp.post_norms = true, hp.ffn_act = FfnActivation::gelu, hp.scale_embd = true;
        const bool is_27b = (g2 && s.n_layer == 46) || (!g2 && s.n_layer == 62);
        hp.attn_scale     = 1.0f / std::sqrt(static_cast<float>(is_27b ? s.n_embd / s.n_head : hp.head_dim()));
        if (g2) hp.attn_softcap = 50.0f, hp.final_softcap = 30.0f;
        if (g2 || s.n_swa > 0) {
            hp.n_swa              = s.n_swa > 0 ? s.n_swa : 4096;
            const uint32_t period = s.swa_period > 0 ? static_cast<uint32_t>(s.swa_period) : (g2 ? 2u : 6u);
            for (int32_t il = 0; il < s.n_layer; ++il)
                hp.swa_layers.push_back(static_cast<uint32_t>(il) % period < period - 1);
            hp.rope_freq_base_swa  = g2 ? s.rope_freq_base : 10000.0f;
            hp.rope_freq_scale_swa = g2 ? s.rope_freq_scale : 1.0f;
        }
    }
    return hp;
}

uint64_t synthetic_weight_bytes(const SyntheticSpec& spec) {
    const Hparams hp = synthetic_hparams(spec);
    const auto rows  = [&](uint64_t n_rows, uint64_t cols) { return n_rows * kernels::ggml_row_size(spec.type, cols); };
    const uint64_t e = uint64_t(hp.n_embd), eq = uint64_t(hp.n_embd_q()), ekv = uint64_t(hp.n_embd_kv()),
                   ff    = uint64_t(hp.n_ff);
    const uint64_t ffn   = hp.moe() ? 3 * uint64_t(hp.n_expert) * rows(uint64_t(hp.n_ff_exp), e) +
                                        uint64_t(hp.n_expert) * e * sizeof(float)
                                    : 3 * rows(ff, e);
    const uint64_t shexp = hp.n_ff_shexp > 0 ? 3 * rows(uint64_t(hp.n_ff_shexp), e) : 0;
    const uint64_t attn  = rows(hp.attn_gate ? 2 * eq : eq, e) + 2 * rows(ekv, e) + rows(e, eq);
    const uint64_t vd    = uint64_t(hp.ssm_value_dim());
    const uint64_t dn =
        rows(uint64_t(hp.ssm_conv_dim()), e) + rows(vd, e) + rows(e, vd) + 2 * rows(uint64_t(hp.ssm_dt_rank), e);
    const uint64_t n_rec = uint64_t(hp.n_recurrent());
    return rows(uint64_t(hp.n_vocab), e) * (spec.tied_output ? 1 : 2) +
           (uint64_t(hp.n_layer + hp.n_nextn) - n_rec) * attn + n_rec * dn +
           uint64_t(hp.n_layer + hp.n_nextn) * (ffn + shexp) + uint64_t(hp.n_nextn) * rows(e, 2 * e);
}

namespace {

void check_fits_in_memory(const SyntheticSpec& spec) {
    const uint64_t need  = synthetic_weight_bytes(spec);
    const uint64_t avail = hw::available_memory_bytes();
    const auto gib       = [](uint64_t b) {
        char s[32];
        std::snprintf(s, sizeof s, "%.2f GiB", double(b) / double(1ull << 30));
        return std::string(s);
    };
    if (avail > 0 && need + need / 8 > avail)
        throw std::runtime_error("synthetic model: its weights take " + gib(need) + ", more than the " + gib(avail) +
                                 " of memory available now; choose fewer layers or a smaller width");
}

}  // namespace

Model make_synthetic_model(const SyntheticSpec& spec, const ProgressFn& progress, const CancelToken& cancel) {
    check_fits_in_memory(spec);
    const Hparams hp = synthetic_hparams(spec);
    Rng rng(spec.seed);
    const int64_t e = hp.n_embd, eq = hp.n_embd_q(), ekv = hp.n_embd_kv(), ff = hp.n_ff;
    auto mat = [&](int64_t rows, int64_t cols) {
        return make_owned_view(spec.type, rows, cols, random_matrix(spec.type, rows, cols, 1.0 / std::sqrt(cols), rng));
    };
    ModelWeights w;
    w.token_embd    = mat(hp.n_vocab, e);
    auto make_layer = [&](bool recurrent) {
        LayerWeights L;
        L.attn_norm = random_vector(e, 0.8f, 1.2f, rng);
        if (recurrent) {  // a Gated DeltaNet: decays from about 0.3 to 0.98 per token, as trained ones have
            const int64_t conv = hp.ssm_conv_dim(), vd = hp.ssm_value_dim(), hv = hp.ssm_dt_rank;
            L.ssm_qkv    = mat(conv, e);
            L.ssm_z      = mat(vd, e);
            L.ssm_beta   = mat(hv, e);
            L.ssm_alpha  = mat(hv, e);
            L.ssm_out    = mat(e, vd);
            L.ssm_conv1d = random_vector(conv * hp.ssm_d_conv, -0.6f, 0.6f, rng);
            L.ssm_dt     = random_vector(hv, -4.0f, -1.0f, rng);
            L.ssm_a      = random_vector(hv, -4.0f, -0.5f, rng);
            L.ssm_norm   = random_vector(hp.ssm_d_state, 0.8f, 1.2f, rng);
        } else {
            L.wq = mat(hp.attn_gate ? 2 * eq : eq, e);
            L.wk = mat(ekv, e);
            L.wv = mat(ekv, e);
            L.wo = mat(e, eq);
        }
        if (hp.attn_out_bias) L.bo = random_vector(e, -0.2f, 0.2f, rng);
        if (hp.attn_sinks) L.attn_sinks = random_vector(hp.n_head, -2.0f, 2.0f, rng);
        if (hp.qkv_bias) {
            L.bq = random_vector(eq, -0.2f, 0.2f, rng);
            L.bk = random_vector(ekv, -0.2f, 0.2f, rng);
            L.bv = random_vector(ekv, -0.2f, 0.2f, rng);
        }
        if (hp.qk_norm && !recurrent) {
            L.q_norm = random_vector(hp.head_dim(), 0.8f, 1.2f, rng);
            L.k_norm = random_vector(hp.head_dim(), 0.8f, 1.2f, rng);
        }
        if (hp.post_norms) {
            L.attn_post_norm = random_vector(e, 0.8f, 1.2f, rng);
            L.ffn_post_norm  = random_vector(e, 0.8f, 1.2f, rng);
        }
        L.ffn_norm = random_vector(e, 0.8f, 1.2f, rng);
        if (hp.moe()) {  // the router in f32; each expert's matrices scaled by their own width, stacked by rows
            const int64_t ne = hp.n_expert, fe = hp.n_ff_exp;
            L.ffn_gate_inp = make_owned_view(GgmlType::F32, ne, e,
                                             random_matrix(GgmlType::F32, ne, e, 1.0 / std::sqrt(double(e)), rng));
            L.w_gate       = mat(ne * fe, e);
            L.w_up         = mat(ne * fe, e);
            L.w_down       = mat(ne * e, fe);
            if (hp.moe_biases) {
                L.ffn_gate_inp_b = random_vector(ne, -0.2f, 0.2f, rng);
                L.exp_gate_b     = random_vector(ne * fe, -0.2f, 0.2f, rng);
                L.exp_up_b       = random_vector(ne * fe, -0.2f, 0.2f, rng);
                L.exp_down_b     = random_vector(ne * e, -0.2f, 0.2f, rng);
            }
            if (hp.n_ff_shexp > 0) {
                L.shexp_gate   = random_vector(e, -0.1f, 0.1f, rng);
                L.w_gate_shexp = mat(hp.n_ff_shexp, e);
                L.w_up_shexp   = mat(hp.n_ff_shexp, e);
                L.w_down_shexp = mat(e, hp.n_ff_shexp);
            }
            return L;
        }
        L.w_gate = mat(ff, e);
        L.w_up   = mat(ff, e);
        L.w_down = mat(e, ff);
        return L;
    };
    w.layers.resize(static_cast<size_t>(hp.n_layer));
    for (int32_t il = 0; il < hp.n_layer; ++il) {
        cancel.throw_if_cancelled();
        report(progress, static_cast<double>(il) / hp.n_layer, "layer " + std::to_string(il + 1));
        w.layers[static_cast<size_t>(il)] = make_layer(hp.is_recurrent(il));
    }
    w.output_norm = random_vector(e, 0.8f, 1.2f, rng);
    if (hp.rope_freqs) {  // divisors 1 .. 8 over the pairs, high frequencies (small i) untouched: Llama 3.1's shape
        const int32_t half = hp.n_rot / 2;
        for (int32_t i = 0; i < half; ++i)
            w.rope_freqs.push_back(1.0f + 7.0f * static_cast<float>(i) / static_cast<float>(std::max(1, half - 1)));
    }
    w.output = hp.tied_output ? w.token_embd : mat(hp.n_vocab, e);
    // Multi-token-prediction blocks last, so a spec without them draws the same weights as before.
    for (int32_t j = 0; j < hp.n_nextn; ++j) {
        NextnWeights n;
        n.block     = make_layer(false);
        n.eh_proj   = mat(e, 2 * e);
        n.enorm     = random_vector(e, 0.8f, 1.2f, rng);
        n.hnorm     = random_vector(e, 0.8f, 1.2f, rng);
        n.head_norm = random_vector(e, 0.8f, 1.2f, rng);  // its own head norm; head and embedding: the model's
        w.nextn.push_back(std::move(n));
    }
    report(progress, 1.0, "built");
    return Model::from_weights(hp, std::move(w), "synthetic " + spec.arch + " " + type_name(spec.type));
}

// ---- GGUF writing ----

void write_model_gguf(const Model& model, const std::string& path, const GgufFile* tokenizer_from) {
    const Hparams& hp = model.hparams();
    GgufWriter g;
    g.set_string("general.architecture", hp.arch);
    g.set_string("general.name", model.name());
    add_hparams_metadata(g, hp, hp.n_layer, int32_t(model.weights().nextn.size()));
    if (tokenizer_from)
        for (const GgufKv& kv : tokenizer_from->metadata())
            if (kv.key.rfind("tokenizer.", 0) == 0) g.set_value(kv.key, kv.value);
    add_model_tensors(g, hp, model.weights(), hp.n_layer, !hp.tied_output, true);
    g.write(path);
}

void write_synthetic_gguf(const SyntheticSpec& spec, const std::string& path) {
    write_model_gguf(make_synthetic_model(spec), path);
}

}  // namespace speculum::model
