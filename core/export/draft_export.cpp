// Draft level -> standalone GGUF (see draft_export.h).
#include "core/export/draft_export.h"

#include "core/drafts/dflash.h"
#include "core/drafts/draft_gguf.h"
#include "core/drafts/eagle3.h"
#include "core/drafts/mtp_drafter.h"
#include "core/drafts/self_draft.h"
#include "core/file_io.h"
#include "core/model/mtp_module.h"

#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace speculum::exporting {

DraftExportResult export_draft_gguf(const model::Model& target, const drafts::DraftSpec& spec_in,
                                    const std::string& path, const DraftExportOptions& options) {
    namespace fs = std::filesystem;
    spec_in.validate(target.hparams().n_layer);
    DraftExportResult r;
    r.path        = path;
    r.description = spec_in.label.empty() ? spec_in.describe() : spec_in.label + " = " + spec_in.describe();
    switch (spec_in.kind) {
        case drafts::DraftKind::mtp: {
            const std::string module = drafts::mtp_module_path(spec_in.model_path, target);
            if (module.empty())
                throw std::invalid_argument(
                    "an MTP draft is the target's own multi-token-prediction layer, which the target's file already "
                    "holds: there is no separate draft GGUF (llama.cpp: --spec-type draft-mtp)");
            // llama.cpp reads NextN layers only from the model's own file: the target with the module built in.
            const std::vector<uint8_t> bytes = model::mtp_merged_gguf(target, model::load_mtp_module(module, target));
            write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
            r.description +=
                " (the target with its MTP module built in: llama.cpp loads NextN layers only from the "
                "model's own file)";
            r.n_layer    = target.hparams().n_layer;
            r.file_bytes = fs::file_size(path);
            return r;
        }
        case drafts::DraftKind::eagle3: {
            // The head is already a GGUF in llama.cpp's layout: copied beside the target, like a draft model.
            const std::string src      = drafts::eagle3_head_path(spec_in.model_path);
            const drafts::Eagle3Head h = drafts::load_eagle3_head(src, target);
            if (fs::weakly_canonical(src) != fs::weakly_canonical(path)) copy_file_atomic(src, path);
            r.n_layer    = h.block.hparams().n_layer;
            r.file_bytes = fs::file_size(path);
            return r;
        }
        case drafts::DraftKind::dflash:
        case drafts::DraftKind::dspark: {
            // A block draft is a GGUF in llama.cpp's dflash layout already: copied beside the target.
            const std::string src = drafts::dflash_path(spec_in.model_path, spec_in.kind == drafts::DraftKind::dspark);
            const drafts::DflashModel d = drafts::load_dflash(src, target);
            if (fs::weakly_canonical(src) != fs::weakly_canonical(path)) copy_file_atomic(src, path);
            if (d.own_head || !d.d2t.empty())
                r.description += " (with a head of its own" +
                                 std::string(d.d2t.empty() ? "" : " over a reduced vocabulary (d2t)") +
                                 ": Speculum runs it, llama.cpp's dflash loader refuses it and takes the target's)";
            r.n_layer    = d.decoder.hparams().n_layer;
            r.file_bytes = fs::file_size(path);
            return r;
        }
        case drafts::DraftKind::maxgram:
        case drafts::DraftKind::ngram:
            throw std::invalid_argument(
                std::string(spec_in.kind == drafts::DraftKind::maxgram ? "a Max-Gram" : "an n-gram") +
                " draft is statistical and has no model to write as GGUF (the engine snippets use the engine's own "
                "n-gram drafting instead)");
        case drafts::DraftKind::model: {
            // Already a GGUF the engines load: the export is a copy, so the deployment folder is self-contained.
            const model::Model d =
                model::Model::load(spec_in.model_path, {}, options.drafter.cancel, model::WeightMemory::mapped);
            if (fs::weakly_canonical(spec_in.model_path) != fs::weakly_canonical(path))
                copy_file_atomic(spec_in.model_path, path);
            r.n_layer    = d.hparams().n_layer;
            r.file_bytes = fs::file_size(path);
            return r;
        }
        case drafts::DraftKind::self:
            break;
    }
    drafts::DraftSpec spec = spec_in;
    const bool skips       = !spec.skip_attn.empty() || !spec.skip_ffn.empty();
    const bool kv          = spec.kv_trunc_bits > 0 || spec.kv_drop_ratio > 0.0f;
    if ((skips || kv) && !options.drop_unsupported)
        throw std::invalid_argument(
            std::string("the draft ") + (skips ? "skips sublayers (draft.skip_attn / skip_ffn)" : "") +
            (skips && kv ? " and " : "") + (kv ? "transforms its KV cache (draft.kv_trunc_bits / kv_drop_ratio)" : "") +
            ", which a GGUF cannot carry; drop them explicitly to write the weights alone (--drop-unsupported)");
    if (skips) {
        r.dropped.push_back("skip sets (the file keeps every attention and FFN sublayer)");
        spec.skip_attn.clear(), spec.skip_ffn.clear();
    }
    if (kv) {
        r.dropped.push_back("KV-cache transforms (engines keep a full-precision KV cache)");
        spec.kv_trunc_bits = 0, spec.kv_drop_ratio = 0.0f;
    }
    const drafts::SelfDraft d = drafts::build_self_draft(target, spec, options.drafter);
    drafts::save_self_draft_gguf(target, d, spec, path);
    r.n_layer    = spec.exit_layer >= 0 ? spec.exit_layer + 1 : target.hparams().n_layer;
    r.file_bytes = fs::file_size(path);
    return r;
}

bool stored_dense(const drafts::DraftSpec& spec) {
    return spec.kind == drafts::DraftKind::self && (spec.prune.ratio > 0.0f || spec.weight_trunc_bits > 0);
}

std::string dense_draft_warning(uint64_t draft_file_bytes, uint64_t target_file_bytes) {
    char text[512];
    std::snprintf(text, sizeof text,
                  "The draft GGUF stores its pruned or truncated weights at full size (%.1f MiB): llama.cpp, vLLM and "
                  "SGLang read every byte of it, so its cost there is about c = %.2f of a target step (its size over "
                  "the target's %.1f MiB), not the compact c Speculum measures. Only Speculum reads the compact form.",
                  double(draft_file_bytes) / (1 << 20),
                  target_file_bytes > 0 ? double(draft_file_bytes) / double(target_file_bytes) : 0.0,
                  double(target_file_bytes) / (1 << 20));
    return text;
}

}  // namespace speculum::exporting
