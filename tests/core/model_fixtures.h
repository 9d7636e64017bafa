// Shared helpers of the model runtime tests: tiny random-weight model specs, GGUF round trips into the test tmp
// dir, and a relative logit comparison.
#pragma once

#include "core/model/forward.h"
#include "core/model/gguf_writer.h"
#include "core/model/model_gguf.h"
#include "core/model/synthetic.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace speculum::test {

// Tiny shapes: GQA, an odd width with 3 heads and tied output, qwen2 with biases and neox RoPE.
inline model::SyntheticSpec spec_gqa(kernels::GgmlType t) {
    model::SyntheticSpec s;
    s.n_vocab = 160, s.n_embd = 64, s.n_layer = 2, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 128, s.n_ctx = 64;
    s.type = t, s.seed = 11;
    return s;
}
inline model::SyntheticSpec spec_odd_tied(kernels::GgmlType t) {
    model::SyntheticSpec s;
    s.n_vocab = 100, s.n_embd = 96, s.n_layer = 2, s.n_head = 3, s.n_head_kv = 3, s.n_ff = 160, s.n_ctx = 64;
    s.tied_output = true, s.rope_freq_base = 500000.0f, s.rope_freq_scale = 0.5f, s.type = t, s.seed = 12;
    return s;
}
inline model::SyntheticSpec spec_qwen2(kernels::GgmlType t) {
    model::SyntheticSpec s;
    s.arch = "qwen2", s.n_vocab = 128, s.n_embd = 64, s.n_layer = 3, s.n_head = 4, s.n_head_kv = 1, s.n_ff = 96;
    s.n_ctx = 64, s.n_rot = 8, s.type = t, s.seed = 13;
    return s;
}
// The other architectures (hparams.h), each with its parts switched on at a size the tests run in milliseconds:
// qwen3 and gemma3 with a head dimension that is not n_embd / n_head, gemma windows shorter than the test sequences,
// smollm3 with its RoPE-less fourth layer.
inline model::SyntheticSpec spec_arch(const std::string& arch, kernels::GgmlType t) {
    model::SyntheticSpec s = spec_gqa(t);
    s.arch = arch, s.seed = 21;
    if (arch == "qwen3" || arch == "gemma3") s.n_embd_head = 32;
    if (arch == "gemma2" || arch == "gemma3") s.n_swa = 3, s.tied_output = true;
    if (arch == "gemma3") s.swa_period = 2, s.n_layer = 3;
    if (arch == "smollm3") s.n_layer = 4;
    if (arch == "qwen3moe") s.n_embd_head = 32, s.n_expert = 8, s.n_expert_used = 2, s.n_ff_exp = 32;
    if (arch == "gpt-oss") s.n_expert = 8, s.n_expert_used = 2, s.n_ff_exp = 32, s.n_swa = 3, s.yarn_factor = 4.0f;
    if (arch == "qwen35" || arch == "qwen35moe")  // 3 DeltaNet layers and 1 gated attention layer, partial RoPE
        s.n_layer = 4, s.n_embd_head = 32, s.n_rot = 8, s.ssm_d_state = 32, s.ssm_n_group = 2, s.ssm_dt_rank = 4;
    // seed 22: int8 activations route the first tokens as f32 does (seed 21 flips one at token 1 for IQ4_NL)
    if (arch == "qwen35moe") s.n_expert = 8, s.n_expert_used = 2, s.n_ff_exp = 32, s.n_ff_shexp = 64, s.seed = 22;
    return s;
}

// The model of `spec` as GGUF bytes, with `edit` applied to the writer before the tensors are added and the
// tensor names in `drop` left out (files that lack a part or carry a bad key, for the loaders' tests).
inline model::GgufFile file_of(const model::SyntheticSpec& spec,
                               const std::function<void(model::GgufWriter&)>& edit = {},
                               const std::vector<std::string>& drop                = {}) {
    const model::Model m = model::make_synthetic_model(spec);
    model::GgufWriter g;
    g.set_string("general.architecture", spec.arch);
    model::add_hparams_metadata(g, m.hparams(), m.hparams().n_layer);
    if (edit) edit(g);
    model::GgufWriter all;
    model::add_model_tensors(all, m.hparams(), m.weights(), m.hparams().n_layer, !m.hparams().tied_output);
    const model::GgufFile full = model::GgufFile::from_bytes(all.to_bytes(), "tensors.gguf");
    for (const model::GgufTensorInfo& t : full.tensors())
        if (std::find(drop.begin(), drop.end(), t.name) == drop.end())
            g.add_tensor(t.name, t.dims, t.type, t.data, t.n_bytes);
    return model::GgufFile::from_bytes(g.to_bytes(), "model.gguf");
}

// Writes the spec's model to tmp_dir()/NAME.gguf and loads it back through the GGUF reader.
inline model::Model load_via_gguf(const model::SyntheticSpec& spec, const std::string& name) {
    const std::string path = (tmp_dir() / (name + ".gguf")).string();
    model::write_synthetic_gguf(spec, path);
    return model::Model::load(path);
}

// max |a - b| / rms(b): a scale-free distance between two logit vectors; infinity when the sizes differ or any
// value is not finite (so NaN logits never pass a tolerance check).
inline double rel_diff(std::span<const float> a, std::span<const float> b) {
    double ss = 0.0, md = 0.0;
    if (a.size() != b.size() || b.empty()) return INFINITY;
    for (size_t i = 0; i < b.size(); ++i) {
        if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
        ss += static_cast<double>(b[i]) * b[i];
        md = std::max(md, std::abs(static_cast<double>(a[i]) - b[i]));
    }
    return md / std::sqrt(ss / static_cast<double>(std::max<size_t>(1, b.size())) + 1e-30);
}

inline std::vector<float> copy_of(std::span<const float> s) {
    return {s.begin(), s.end()};
}

// Logits of decoding `tokens` one by one from an empty context (positions 0, 1, ...).
// int8_activations: see ContextConfig (only the fast path uses it).
inline std::vector<std::vector<float>> decode_all(const model::Model& m, const std::vector<int32_t>& tokens,
                                                  model::ForwardPath path, const model::ForwardOptions& opts = {},
                                                  bool int8_activations = true) {
    model::InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 16, .path = path, .int8_activations = int8_activations});
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < tokens.size(); ++i)
        out.push_back(copy_of(ctx.decode(tokens[i], static_cast<int32_t>(i), opts)));
    return out;
}

}  // namespace speculum::test
