// `speculum-cli generate`: plain autoregressive generation with one model (no speculation), streaming tokens as they
// are produced and ending with prompt and decode tokens/s on stderr.
#include "cli.h"

#include "core/resources.h"

#include "core/model/generate.h"
#include "core/model/model.h"
#include "core/model/sampler.h"
#include "core/model/tokenizer.h"
#include "core/model/vocab.h"

#include <oneapi/tbb/global_control.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

namespace speculum::cli {

namespace {

// "1,2,3" or "1 2 3" -> ids; a malformed list is a usage error.
std::vector<int32_t> parse_ids(const std::string& s) {
    std::vector<int32_t> ids;
    std::string item;
    std::istringstream in(s);
    while (in >> std::ws && std::getline(in, item, ',')) {
        std::istringstream words(item);
        std::string w;
        while (words >> w) {
            size_t used = 0;
            long long v = -1;
            try {
                v = std::stoll(w, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used != w.size() || v < 0 || v > INT32_MAX) throw UsageError("--ids: '" + w + "' is not a token id");
            ids.push_back(static_cast<int32_t>(v));
        }
    }
    if (ids.empty()) throw UsageError("--ids: no token ids given");
    return ids;
}

}  // namespace

int cmd_generate(int argc, char** argv) {
    Args args("generate",
              {{"model", 'm', true, "FILE", "GGUF model (llama or qwen2 architecture; default: the bundled target)"},
               {"prompt", 'p', true, "TEXT", "prompt text (needs the model's tokenizer)"},
               {"ids", 0, true, "LIST", "prompt as token ids, e.g. 1,15043,3186 (no tokenizer needed)"},
               {"n-predict", 'n', true, "N", "tokens to generate (default 64)"},
               {"temp", 0, true, "T", "temperature; 0 = greedy (default 0)"},
               {"top-k", 0, true, "K", "keep the K most likely tokens; 0 = all (default 0)"},
               {"top-p", 0, true, "P", "nucleus: keep the most likely tokens up to mass P (default 1)"},
               {"seed", 0, true, "N", "sampling seed (default 0)"},
               {"ctx", 'c', true, "N", "context length in tokens; 0 = the model's (default 0)"},
               {"threads", 't', true, "N", "worker threads; 0 = all cores (default 0)"},
               {"reference", 0, false, "", "use the scalar single-threaded reference forward pass"},
               {"no-repack", 0, false, "",
                "decode from the file's mapping in its layout (default: Q8_0 matrices repacked to q8_0_x8 in large "
                "pages where the CPU has the AVX-512 VNNI kernels)"}},
              {});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
            "Generate tokens with one model (plain decoding, no speculation). Streams the "
            "continuation to stdout and prints tokens/s to stderr.");
        return 0;
    }
    // No model given: the bundled target (resources/models), so a fresh checkout generates text at once.
    const std::optional<std::string> model_path =
        args.has("model") ? *args.value("model") : resource_path(kBundledTargetModel).string();
    if (args.has("prompt") == args.has("ids")) throw UsageError("give exactly one of --prompt and --ids");
    model::SamplerConfig sc;
    sc.temperature          = static_cast<float>(args.float_or("temp", 0.0, 0.0, 100.0));
    sc.top_k                = static_cast<int32_t>(args.int_or("top-k", 0, 0, 1 << 24));
    sc.top_p                = static_cast<float>(args.float_or("top-p", 1.0, 1e-6, 1.0));
    sc.seed                 = static_cast<uint64_t>(args.int_or("seed", 0, 0, INT64_MAX));
    const int32_t n_predict = static_cast<int32_t>(args.int_or("n-predict", 64, 0, 1 << 20));
    const int32_t n_ctx     = static_cast<int32_t>(args.int_or("ctx", 0, 0, 1 << 20));
    const int threads       = static_cast<int>(args.int_or("threads", 0, 0, 4096));
    std::vector<int32_t> prompt;
    if (args.has("ids")) prompt = parse_ids(*args.value("ids"));
    std::unique_ptr<tbb::global_control> limit;
    if (threads > 0)
        limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);

    const model::Model m = model::Model::load(
        *model_path, {}, {}, args.has("no-repack") ? model::WeightMemory::mapped : model::WeightMemory::automatic);
    // Text mode: the model file's own vocabulary encodes the prompt (with bos, special tokens parsed, as
    // llama.cpp's CLI does) and renders each new token's piece; generation stops at end-of-generation tokens.
    std::optional<model::Tokenizer> tok;
    if (args.has("prompt")) {
        std::string why_none;
        tok = model::tokenizer_of(*m.gguf(), &why_none);
        if (!tok) throw std::runtime_error(*model_path + ": no usable tokenizer (" + why_none + "); use --ids");
        prompt = tok->encode(*args.value("prompt"), true, true);
        if (prompt.empty()) throw UsageError("--prompt: the text encodes to no tokens");
    }
    for (int32_t id : prompt)
        if (id >= m.hparams().n_vocab)
            throw UsageError("--ids: token id " + std::to_string(id) + " is outside the vocabulary (" +
                             std::to_string(m.hparams().n_vocab) + " tokens)");

    model::ContextConfig cc;
    cc.n_ctx = n_ctx;
    cc.path  = args.has("reference") ? model::ForwardPath::reference : model::ForwardPath::fast;
    model::InferenceContext ctx(m, cc);
    model::Sampler sampler(sc);
    if (tok) std::cout << *args.value("prompt") << std::flush;  // echo the prompt, then stream the continuation
    const model::GenerateStats st = model::generate(ctx, sampler, prompt, n_predict, [&](int32_t id) {
        if (!tok) {
            std::cout << id << ' ' << std::flush;
            return true;
        }
        if (tok->is_eog(id)) return false;
        std::cout << tok->token_to_piece(id, false) << std::flush;
        return true;
    });
    std::cout << '\n';
    char line[256];
    // Decode speed counts the single-token passes (the first new token comes from the prompt pass).
    std::snprintf(line, sizeof line, "prompt: %d tokens, %.1f tokens/s | generated: %d tokens, decode %.2f tokens/s\n",
                  st.n_prompt, st.t_prompt_s > 0 ? st.n_prompt / st.t_prompt_s : 0.0, st.n_decoded,
                  st.t_decode_s > 0 ? st.n_eval / st.t_decode_s : 0.0);
    std::cerr << line;
    return 0;
}

}  // namespace speculum::cli
