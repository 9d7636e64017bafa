// Loading a target: weight-memory policy, the repacked verifier, the tokenizer-or-none.
#include "core/session/target.h"

#include "core/format.h"
#include "core/resources.h"
#include "kernels/gemv.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <stdexcept>

namespace speculum::session {

TargetSource TargetSource::from_json(const nlohmann::json& j) {
    if (j.is_null()) return bundled();
    if (j.is_string()) return file(j.get<std::string>());
    if (!j.is_object()) throw std::invalid_argument("target must be a string or an object");
    if (j.size() != 1 || !j.contains("synthetic"))
        throw std::invalid_argument("target must be a GGUF path or {\"synthetic\": {...}}");
    model::SyntheticSpec spec;
    model::from_json(j.at("synthetic"), spec);
    spec.validate();
    return random(std::move(spec));
}

std::string TargetSource::resolved_path() const {
    if (synthetic) return "";
    return path.empty() ? resource_path(kBundledTargetModel).string() : path;
}

int repacked_matrices(const model::Model& m) {
    int n = m.weights().output.type == kernels::GgmlType::Q8_0_X8 ? 1 : 0;
    for (const model::LayerWeights& L : m.weights().layers)
        for (const model::WeightView* v : L.matrices()) n += v->type == kernels::GgmlType::Q8_0_X8 ? 1 : 0;
    return n;
}

namespace {

void add_tokenizer(Target& t) {
    if (!t.model->gguf()) {
        t.tokenizer_error = "the target has no GGUF tokenizer metadata";
        return;
    }
    if (auto tok = model::tokenizer_of(*t.model->gguf(), &t.tokenizer_error))
        t.tokenizer = std::make_shared<const model::Tokenizer>(std::move(*tok));
}

}  // namespace

Target open_target(std::shared_ptr<const model::Model> model, std::string path) {
    if (!model) throw std::invalid_argument("no model is open");
    Target t;
    t.path  = std::move(path);
    t.model = std::move(model);
    add_tokenizer(t);
    return t;
}

Target load_target(const TargetSource& source, const TargetOptions& o) {
    // The verifier copy needs the file layout beside it, so it implies mapped weights for the target.
    const model::WeightMemory memory = o.repacked_verifier ? model::WeightMemory::mapped : o.memory;
    Target t;
    if (source.synthetic) {
        model::Model m = model::make_synthetic_model(*source.synthetic, o.progress, o.cancel);
        if (memory == model::WeightMemory::automatic)  // what Model::load does for a file
            m = model::Model::with_preferred_memory(std::move(m), o.progress, o.cancel);
        t.path  = "synthetic";
        t.model = std::make_shared<const model::Model>(std::move(m));
    } else {
        t.path  = source.resolved_path();
        t.model = std::make_shared<const model::Model>(model::Model::load(t.path, o.progress, o.cancel, memory));
    }
    add_tokenizer(t);
    if (!o.repacked_verifier) return t;
    t.verifier_note = "this CPU has no AVX-512 VNNI kernel for q8_0_x8";
    if (!kernels::q8_0_x8_preferred()) return t;
    model::Model copy = model::Model::with_large_pages(*t.model, o.progress, o.cancel, /*repack_q8=*/true);
    const int n_x8    = repacked_matrices(copy);
    if (copy.weight_memory() != model::WeightMemory::large_pages_repacked)
        t.verifier_note = "not enough free memory for a second copy of the weights";
    else if (n_x8 == 0)
        t.verifier_note = "the target has no Q8_0 matrix whose rows are whole 256-element blocks";
    else {
        t.verifier_note = "a copy of the target in large pages, " + std::to_string(n_x8) +
                          " Q8_0 matrices repacked to q8_0_x8 (" + mib(copy.weight_bytes_total()) + " more memory)";
        t.verifier = std::make_shared<const model::Model>(std::move(copy));
    }
    return t;
}

}  // namespace speculum::session
