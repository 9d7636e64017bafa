// Self-draft -> GGUF (see draft_gguf.h).
#include "core/drafts/draft_gguf.h"

#include "core/model/gguf_writer.h"
#include "core/model/model_gguf.h"

#include <stdexcept>

namespace speculum::drafts {

void save_self_draft_gguf(const model::Model& target, const SelfDraft& draft, const DraftSpec& spec,
                          const std::string& path, bool allow_runtime_only) {
    if (!spec.skip_attn.empty() || !spec.skip_ffn.empty())
        throw std::invalid_argument(
            "a GGUF cannot express skipped attention/FFN sublayers (draft.skip_attn, "
            "draft.skip_ffn); only early exit (draft.exit_layer) is saved by dropping layers");
    if (!allow_runtime_only && (spec.kv_drop_ratio > 0.0f || spec.kv_trunc_bits > 0))
        throw std::invalid_argument(
            "draft.kv_drop_ratio / kv_trunc_bits act on the draft's KV cache at run time "
            "and cannot be saved in a GGUF");
    const model::Hparams& hp     = draft.model.hparams();
    const model::ModelWeights& w = draft.model.weights();
    const int32_t n_layer        = spec.exit_layer >= 0 ? spec.exit_layer + 1 : hp.n_layer;
    const std::string a          = hp.arch;

    // general.file_type names the target's dominant tensor type; a re-encoded draft has others, and llama.cpp
    // infers the type from the tensors when the key is absent.
    const bool retyped = spec.weight_format != WeightFormat::same || spec.weight_trunc_bits > 0;
    model::GgufWriter g;
    // The target's metadata (architecture, tokenizer, rope, ...) with the draft's layer count and name.
    if (const model::GgufFile* f = target.gguf()) {
        for (const model::GgufKv& kv : f->metadata()) {
            if (kv.key == a + ".block_count" || kv.key == "general.name" || kv.key == "general.alignment") continue;
            if (retyped && kv.key == "general.file_type") continue;
            g.set_value(kv.key, kv.value);
        }
    } else {
        g.set_string("general.architecture", a);
        model::add_hparams_metadata(g, hp, n_layer);
    }
    g.set_uint32(a + ".block_count", static_cast<uint32_t>(n_layer));
    g.set_string("general.name", draft.model.name());
    g.set_string("speculum.draft.spec", nlohmann::json(spec).dump());
    // Quantized tensors (Q8_0, MXFP4) follow ggml's current block layouts (gguf-py writes version 2).
    if (spec.weight_format == WeightFormat::q8_0 || spec.weight_format == WeightFormat::mxfp4)
        g.set_uint32("general.quantization_version", 2);

    // A tied head that the draft re-encoded is no longer token_embd: write it out.
    model::add_model_tensors(g, hp, w, n_layer, !hp.tied_output || w.output.data != w.token_embd.data);
    g.write(path);
}

}  // namespace speculum::drafts
