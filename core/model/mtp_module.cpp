// MTP module writers (see mtp_module.h; the loader is in model.cpp, beside the block loader it shares).
#include "core/model/mtp_module.h"

#include "core/model/model_gguf.h"

#include <stdexcept>

namespace speculum::model {

std::vector<uint8_t> mtp_module_gguf(const Model& model) {
    const Hparams& hp = model.hparams();
    if (model.weights().nextn.empty())
        throw std::invalid_argument(model.name() + ": no multi-token-prediction layers to write as an MTP module");
    GgufWriter g;
    g.set_string("general.architecture", hp.arch);
    g.set_string("general.type", kMtpModuleType);
    g.set_string("general.name", model.name() + " [MTP module]");
    add_hparams_metadata(g, hp, hp.n_layer, int32_t(model.weights().nextn.size()));
    add_nextn_tensors(g, hp, model.weights().nextn, hp.n_layer);
    return g.to_bytes();
}

std::vector<uint8_t> mtp_merged_gguf(const Model& target, const std::vector<NextnWeights>& nextn) {
    const Hparams& hp = target.hparams();
    if (hp.n_nextn > 0)
        throw std::invalid_argument(target.name() + ": already has " + std::to_string(hp.n_nextn) +
                                    " multi-token-prediction layers of its own");
    if (nextn.empty()) throw std::invalid_argument("mtp_merged_gguf: no NextN blocks to build in");
    const std::string& a = hp.arch;
    const auto n         = static_cast<uint32_t>(nextn.size());
    GgufWriter g;
    if (const GgufFile* f = target.gguf()) {  // the target's metadata (tokenizer, rope, ...) as it is
        for (const GgufKv& kv : f->metadata())
            if (kv.key != "general.alignment") g.set_value(kv.key, kv.value);
        g.set_uint32(a + ".block_count", static_cast<uint32_t>(hp.n_layer) + n);
        g.set_uint32(a + ".nextn_predict_layers", n);
    } else {
        g.set_string("general.architecture", a);
        g.set_string("general.name", target.name());
        add_hparams_metadata(g, hp, hp.n_layer, int32_t(n));
    }
    ModelWeights w = target.weights();
    w.nextn        = nextn;
    add_model_tensors(g, hp, w, hp.n_layer, !hp.tied_output, true);
    return g.to_bytes();
}

}  // namespace speculum::model
