// Writing a Model into GGUF with llama.cpp's key and tensor names: shared by the synthetic-model writer and the
// draft exporter, so both produce the same layout.
#pragma once

#include "core/model/gguf_writer.h"
#include "core/model/model.h"

#include <cstdint>

namespace speculum::model {

// The architecture keys of `hp` (shapes, rope, norm epsilon) with `<arch>.block_count` = n_layer + n_nextn and,
// when n_nextn > 0, `<arch>.nextn_predict_layers`.
void add_hparams_metadata(GgufWriter& g, const Hparams& hp, int32_t n_layer, int32_t n_nextn = 0);

// token_embd, output_norm, rope_freqs (if any), output (when `write_output`) and layers [0, n_layer), named as
// llama.cpp names them; matrices keep their storage type (an in-memory layout is written as the file type it came
// from: Q8_0_X8 as Q8_0, bit-exact), vectors are written as F32. `write_nextn`: w.nextn as blocks n_layer, ... with
// their blk.N.nextn.* tensors (llama.cpp's multi-token-prediction layout).
void add_model_tensors(GgufWriter& g, const Hparams& hp, const ModelWeights& w, int32_t n_layer, bool write_output,
                       bool write_nextn = false);

// `nextn` as blocks first_block, first_block + 1, ... with their blk.N.nextn.* tensors (llama.cpp's layout).
void add_nextn_tensors(GgufWriter& g, const Hparams& hp, const std::vector<NextnWeights>& nextn, int32_t first_block);

}  // namespace speculum::model
