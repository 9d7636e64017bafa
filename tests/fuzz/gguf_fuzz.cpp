// libFuzzer entry point for the GGUF reader (built only with -DSPECULUM_LIBFUZZER=ON and clang; see README.md).
// Any exception other than GgufError, any crash and any sanitizer report is a finding.
#include "core/model/gguf.h"

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        speculum::model::GgufFile f =
            speculum::model::GgufFile::from_bytes(std::vector<uint8_t>(data, data + size), "fuzz.gguf");
        // Touch every tensor byte so out-of-bounds data pointers are caught by AddressSanitizer.
        volatile uint8_t sink = 0;
        for (const auto& t : f.tensors())
            for (uint64_t i = 0; i < t.n_bytes; i += 61) sink = sink + t.data[i];
        if (!f.tensors().empty()) sink = sink + f.tensors().back().data[f.tensors().back().n_bytes - 1];
    } catch (const speculum::model::GgufError&) {
    }
    return 0;
}
