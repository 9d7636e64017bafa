// The bundled model family (resources/models, trained by tools/train): what the app and the CLI rely on when they
// open it. The target must be memory-bound on desktop CPUs (over 64 MiB of BF16 weights), the three models must
// share one tokenizer (so any of them drafts for a larger one) and a context of at least 1024 tokens, and the
// drafts must be much smaller than what they draft for.
#include "core/model/gguf.h"
#include "core/model/hparams.h"
#include "core/resources.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace speculum;

namespace {

struct Member {
    model::GgufFile file;
    model::Hparams hp;
    uint64_t weight_bytes = 0;  // all tensors as stored
};

Member load(const char* relative) {
    model::GgufFile f = model::GgufFile::open(resource_path(relative).string());
    model::Hparams hp = model::hparams_from_gguf(f);
    uint64_t bytes    = 0;
    for (const auto& t : f.tensors()) bytes += t.n_bytes;
    return {std::move(f), hp, bytes};
}

}  // namespace

TEST(BundledFamily, TargetIsMemoryBoundAndTheLevelsShareATokenizer) {
    if (!resources_dir()) GTEST_SKIP() << "no resources folder";
    const Member target = load(kBundledTargetModel);
    const Member mid    = load(kBundledMidModel);
    const Member small  = load(kBundledDraftModel);

    // The target: BF16 matrices, over 64 MiB of weights (more than common last-level caches of 8-36 MB).
    EXPECT_GT(target.weight_bytes, 64ull << 20);
    for (const auto& t : target.file.tensors())
        if (t.dims.size() == 2) {
            EXPECT_EQ(t.type, kernels::GgmlType::BF16) << t.name;
        }

    const std::vector<std::string>& vocab =
        target.file.get_array("tokenizer.ggml.tokens", model::GgufType::STRING).strings;
    for (const Member* m : {&target, &mid, &small}) {
        EXPECT_EQ(m->hp.arch, "llama") << m->file.path();
        EXPECT_GE(m->hp.n_ctx_train, 1024) << m->file.path();
        EXPECT_EQ(m->file.get_array("tokenizer.ggml.tokens", model::GgufType::STRING).strings, vocab) << m->file.path();
        EXPECT_EQ(m->file.get_array("tokenizer.ggml.merges", model::GgufType::STRING).strings,
                  target.file.get_array("tokenizer.ggml.merges", model::GgufType::STRING).strings)
            << m->file.path();
    }
    // Each level is several times cheaper to read than the one it drafts for.
    EXPECT_LT(3 * mid.weight_bytes, target.weight_bytes);
    EXPECT_LT(3 * small.weight_bytes, mid.weight_bytes);
}
