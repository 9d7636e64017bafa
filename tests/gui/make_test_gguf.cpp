// Writes a tiny random-weight llama GGUF for the GUI end-to-end test (the bundled models are not in this tree yet).
#include "core/model/synthetic.h"

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_test_gguf OUT.gguf\n");
        return 2;
    }
    try {
        speculum::model::write_synthetic_gguf(speculum::model::SyntheticSpec{}, argv[1]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_test_gguf: %s\n", e.what());
        return 1;
    }
    return 0;
}
