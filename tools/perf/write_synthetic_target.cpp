// Writes a random-weight target of a SyntheticSpec as GGUF with the tokenizer of another GGUF (the bundled target's
// by default), so the app can open it and tokenize the bundled prompts: the model behind docs/app.md's picture of
// compact drafts on a target larger than the cache. A development tool, not built by CMake:
//   g++ -O2 -DNDEBUG -std=c++20 -I. tools/perf/write_synthetic_target.cpp build/core/libspeculum_core.a \
//       build/kernels/libspeculum_kernels.a -ltbb -lopenblas -o /tmp/write_synthetic_target
//   /tmp/write_synthetic_target SPEC.json OUT.gguf [TOKENIZER.gguf]
// SPEC.json's n_vocab must equal the tokenizer's vocabulary (2048 for the bundled one).
#include "core/model/gguf.h"
#include "core/model/synthetic.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <exception>
#include <fstream>

using namespace speculum;

int main(int argc, char** argv) {
    if (argc < 3 || argc > 4) {
        std::fprintf(stderr, "usage: %s SPEC.json OUT.gguf [TOKENIZER.gguf]\n", argv[0]);
        return 2;
    }
    try {
        std::ifstream in(argv[1]);
        if (!in) throw std::runtime_error(std::string("cannot open ") + argv[1]);
        const model::SyntheticSpec spec = nlohmann::json::parse(in);
        spec.validate();
        const model::GgufFile tok =
            model::GgufFile::open(argc == 4 ? argv[3] : "resources/models/speculum-target-bf16.gguf");
        const model::Model m = model::make_synthetic_model(spec);
        model::write_model_gguf(m, argv[2], &tok);
        std::printf("%s: %.1f MiB of weights per decode step\n", argv[2],
                    double(m.weight_bytes_per_token()) / 1048576.0);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
