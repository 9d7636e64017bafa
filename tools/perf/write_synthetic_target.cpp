// Writes a random-weight target of a SyntheticSpec as GGUF with the tokenizer of another GGUF (the bundled target's
// by default), so the app can open it and tokenize the bundled prompts: the model behind docs/app.md's picture of
// compact drafts on a target larger than the cache. A development tool, not built by CMake:
//   g++ -O2 -DNDEBUG -std=c++20 -I. tools/perf/write_synthetic_target.cpp build/core/libspeculum_core.a \
//       build/kernels/libspeculum_kernels.a -ltbb -lopenblas -o /tmp/write_synthetic_target
//   /tmp/write_synthetic_target SPEC.json OUT.gguf [TOKENIZER.gguf | -]      (- : no tokenizer, tools/parity)
//   /tmp/write_synthetic_target SPEC.json OUT.gguf - DRAFT.json DRAFT.gguf  also a random block draft for it in
//                                                 llama.cpp's dflash layout (DRAFT.json: drafts::DflashSynthetic)
// SPEC.json's n_vocab must equal the tokenizer's vocabulary (2048 for the bundled one).
#include "core/drafts/dflash.h"
#include "core/model/gguf.h"
#include "core/model/gguf_writer.h"
#include "core/model/model_gguf.h"
#include "core/model/synthetic.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

using namespace speculum;

int main(int argc, char** argv) {
    if (argc < 3 || argc == 5 || argc > 6) {
        std::fprintf(stderr, "usage: %s SPEC.json OUT.gguf [TOKENIZER.gguf | - [DRAFT.json DRAFT.gguf]]\n", argv[0]);
        return 2;
    }
    try {
        std::ifstream in(argv[1]);
        if (!in) throw std::runtime_error(std::string("cannot open ") + argv[1]);
        const model::SyntheticSpec spec = nlohmann::json::parse(in);
        spec.validate();
        const bool no_tokenizer = argc >= 4 && std::string(argv[3]) == "-";  // tools/parity: weights only
        const model::Model m    = model::make_synthetic_model(spec);
        if (no_tokenizer) {  // llama.cpp's "no_vocab" model: the vocabulary size only
            const model::Hparams& hp = m.hparams();
            model::GgufWriter g;
            g.set_string("general.architecture", hp.arch);
            g.set_string("general.name", m.name());
            model::add_hparams_metadata(g, hp, hp.n_layer);
            g.set_string("tokenizer.ggml.model", "no_vocab");
            g.set_uint32(hp.arch + ".vocab_size", static_cast<uint32_t>(hp.n_vocab));
            model::add_model_tensors(g, hp, m.weights(), hp.n_layer, !hp.tied_output);
            g.write(argv[2]);
        } else {
            const model::GgufFile tok =
                model::GgufFile::open(argc == 4 ? argv[3] : "resources/models/speculum-target-bf16.gguf");
            model::write_model_gguf(m, argv[2], &tok);
        }
        std::printf("%s: %.1f MiB of weights per decode step\n", argv[2],
                    double(m.weight_bytes_per_token()) / 1048576.0);
        if (argc == 6) {
            std::ifstream din(argv[4]);
            if (!din) throw std::runtime_error(std::string("cannot open ") + argv[4]);
            drafts::DflashSynthetic ds       = nlohmann::json::parse(din);
            ds.vocab_from                    = argv[2];
            const std::vector<uint8_t> bytes = drafts::dflash_synthetic_gguf(m, ds);
            std::ofstream out(argv[5], std::ios::binary);
            out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
            if (!out) throw std::runtime_error(std::string("cannot write ") + argv[5]);
            std::printf("%s: block draft\n", argv[5]);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
