// MTP modules: a model's multi-token-prediction ("NextN") blocks in a file of their own, for a target whose file has
// none (docs/models.md "MTP modules"; the bundled target's is resources/models/speculum-target-mtp-f16.gguf).
//
// The layout is the target's own NextN layout (llama.cpp's: model.h NextnWeights), cut out of the model file:
//   general.type = "mtp_module", general.architecture = the target's
//   <arch>.block_count = target n_layer + n, <arch>.nextn_predict_layers = n (>= 1), and the target's
//   embedding_length, feed_forward_length, attention.head_count and attention.head_count_kv
//   tensors blk.N.* and blk.N.nextn.* for N in [n_layer, n_layer + n), and nothing else
// The blocks use the target's token embedding, final norm and head unless they carry their own (shared_head_*,
// embed_tokens). llama.cpp reads NextN blocks only from the model's own file; `mtp_merged_gguf` writes that file.
#pragma once

#include "core/model/gguf.h"
#include "core/model/model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::model {

inline constexpr const char* kMtpModuleType = "mtp_module";  // general.type

// The NextN blocks of the module at `path` for `target` (their views keep the file mapped). Throws GgufError naming
// the file and the key or tensor on a malformed file (not a module, a tensor outside its blocks, a missing one),
// std::invalid_argument naming the key when the module does not fit the target (architecture, layer count, shapes).
std::vector<NextnWeights> load_mtp_module(const std::string& path, const Model& target);
std::vector<NextnWeights> mtp_module_from_gguf(GgufFile file, const Model& target);

// The module of `model`'s own NextN blocks (model.hparams().n_nextn >= 1) as GGUF bytes, for the model without
// them (tests, and the synthetic targets). Throws std::invalid_argument when it has none.
std::vector<uint8_t> mtp_module_gguf(const Model& model);

// The target with the module's blocks built in, as one GGUF in llama.cpp's layout (draft-gguf export of an MTP
// draft): the target's metadata and tensors, block_count + n, nextn_predict_layers = n.
// Throws std::invalid_argument when the target already has NextN blocks.
std::vector<uint8_t> mtp_merged_gguf(const Model& target, const std::vector<NextnWeights>& nextn);

}  // namespace speculum::model
