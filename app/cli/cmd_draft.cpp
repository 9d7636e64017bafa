// `speculum-cli draft`: builds a draft from a DraftSpec against a target GGUF and prints its description, build
// time, exact bit accounting and bytes per forward (modeled figures labelled "modeled"); optionally saves it as GGUF.
#include "cli.h"

#include "core/file_io.h"
#include "core/json_input.h"
#include "core/resources.h"

#include "core/drafts/draft_bits.h"
#include "core/drafts/draft_gguf.h"
#include "core/drafts/make_drafter.h"
#include "core/drafts/model_drafter.h"
#include "core/drafts/self_draft.h"
#include "core/drafts/vocab_compat.h"
#include "core/format.h"
#include "core/model/synthetic.h"

#include <oneapi/tbb/global_control.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

namespace speculum::cli {

namespace {

using drafts::DraftBits;
using drafts::DraftKind;
using drafts::DraftSpec;

// The draft's bit accounting prints a thousandth of a MiB (format.h's mib prints a hundredth).
std::string mib3(uint64_t bytes) {
    return fmt("%.3f MiB", double(bytes) / (1024.0 * 1024.0));
}

DraftSpec read_spec(const std::string& arg) {
    std::string text = arg;
    if (arg.empty() || arg.front() != '{') {
        text = read_input_file(arg, kMaxConfigFileBytes, "draft spec");
    }
    nlohmann::json j;
    try {
        j = parse_json(text, "--spec " + arg);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(e.what());
    }
    try {
        return j.get<DraftSpec>();
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error("--spec " + arg + ": " + e.what());
    }
}

// A random-weight model the shape of the bundled target (about 12 M parameters, 8 layers, n_embd 320).
model::Model bundled_size_model(const std::string& type) {
    model::SyntheticSpec s;
    s.n_vocab = 2048, s.n_embd = 320, s.n_layer = 8, s.n_head = 5, s.n_head_kv = 5, s.n_ff = 1024, s.n_ctx = 2048;
    const auto t = model::parse_weight_type(type);
    if (!t) throw UsageError("--synthetic: unknown weight type '" + type + "'");
    s.type = *t;
    return model::make_synthetic_model(s);
}

void print_bits(const DraftBits& b, int64_t n_ctx, std::optional<double> alpha) {
    const char* wl = b.weights_modeled   ? " (modeled: compact format; the draft stores dense copies, compact false)"
                     : b.weights_compact ? " (real: compact formats, expected for uniformly spread pruning)"
                                         : " (real)";
    std::cout << "draft weights: " << fmt("%.4f", b.weight_bits_per_element) << " bits/element" << wl
              << "; kernels read " << fmt("%.4f", b.weight_bits_per_element_real) << " bits/element (real)\n";
    std::cout << "draft bytes per forward: " << b.weight_bytes_per_forward
              << " B = " << mib3(b.weight_bytes_per_forward) << (b.weights_modeled ? " (modeled)" : " (real)")
              << "; real " << b.weight_bytes_per_forward_real << " B\n";
    std::cout << "draft KV: " << fmt("%.4f", b.kv_bits_per_element) << " bits/value"
              << (b.kv_modeled ? " (modeled: compressed KV in the f32 cache)" : " (real, f32 cache)") << "; "
              << b.kv_bytes_per_token << " B per cached token" << (b.kv_modeled ? " (modeled)" : "") << ", real "
              << b.kv_bytes_per_token_real << " B\n";
    std::cout << "target (verification): " << fmt("%.4f", b.verify_weight_bits_per_element) << " bits/element, "
              << b.verify_weight_bytes_per_forward << " B per forward = " << mib3(b.verify_weight_bytes_per_forward)
              << ", KV " << b.verify_kv_bytes_per_token << " B per cached token (real)\n";
    if (b.verification_data_bits_per_element >= 0)
        std::cout << "verification data (Cassandra split): " << fmt("%.4f", b.verification_data_bits_per_element)
                  << " bits/element beyond the speculation data (modeled)\n";
    std::cout << "Cassandra J terms: (1-w_p)(B-w_t) = " << fmt("%.4f", b.j_weight_bits) << " bits x "
              << b.weight_elements_per_forward << " weights; (1-kv_p)(B_kv-kv_t) = " << fmt("%.4f", b.j_kv_bits)
              << " bits x " << b.kv_elements_per_token
              << " KV values per token (B: the stored bits per weight, 16 where truncated; B_kv: 32 for the f32 "
                 "cache, 16 for a truncated view)\n";
    if (b.verify_weight_bytes_per_forward > 0)
        std::cout << "c (memory-bound: draft bytes per forward / target bytes per forward): "
                  << fmt("%.4f", double(b.weight_bytes_per_forward) / double(b.verify_weight_bytes_per_forward))
                  << " (modeled)\n";
    std::cout << "bits per draft token at ctx " << n_ctx << ": " << fmt("%.0f", drafts::bits_per_draft_token(b, n_ctx))
              << (b.weights_modeled || b.kv_modeled ? " (modeled)" : " (real)") << "\n";
    if (alpha)
        std::cout << "J(alpha=" << *alpha << ", ctx " << n_ctx
                  << ") = " << drafts::cassandra_objective(*alpha, b, n_ctx) << "\n";
    if (!b.note.empty()) std::cout << "note: " << b.note << "\n";
}

// Drafts n tokens greedily after a 16-token prompt and prints the measured time per forward next to the bytes
// that forward reads (real or modeled, as labelled), so the compact kernels' speed can be compared.
void bench(drafts::Drafter& d, int32_t n, int32_t n_vocab) {
    std::vector<int32_t> prompt(16);
    for (int32_t i = 0; i < 16; ++i) prompt[size_t(i)] = (1 + 7 * i) % n_vocab;
    d.sync(prompt);
    (void)d.propose(1, {}, {});  // warm-up: prompt pass, scratch and caches
    d.sync(prompt);
    (void)d.propose(1, {}, {});  // only the last prompt token is re-evaluated: one forward
    const drafts::DraftChain c = d.propose(n, {}, {});
    if (c.cost.n_forward == 0) return;
    // The first forward re-evaluates the last prompt token; the others decode one draft token each.
    const double per   = c.cost.seconds / c.cost.n_forward;
    const double bytes = double(c.cost.bytes_weights + c.cost.bytes_kv) / c.cost.n_forward;
    std::cout << "bench: " << c.tokens.size() << " tokens, " << c.cost.n_forward << " forwards, "
              << fmt("%.3f", per * 1e3) << " ms/forward (measured), " << fmt("%.0f", bytes) << " B/forward"
              << (c.cost.bytes_modeled || c.cost.bytes_kv_modeled ? " (modeled)" : " (real)") << " -> "
              << fmt("%.2f", bytes / per / 1e9) << " GB/s effective\n";
}

}  // namespace

int cmd_draft(int argc, char** argv) {
    Args args("draft",
              {{"model", 'm', true, "FILE", "target GGUF model (default: the bundled target)"},
               {"synthetic", 0, true, "TYPE",
                "instead of -m: a random-weight target the shape of the bundled one "
                "(8 layers, n_embd 320, ~12 M parameters) in TYPE (f16, bf16, q8_0)"},
               {"spec", 's', true, "FILE|JSON", "draft spec: a JSON file or inline JSON object (see DraftSpec)"},
               {"out", 'o', true, "FILE", "save a self-draft as GGUF (early exit drops layers; no skip sets)"},
               {"ctx", 'c', true, "N", "context length for KV bytes, bits per token and J (default 512)"},
               {"alpha", 0, true, "A", "acceptance rate: also print Cassandra's J"},
               {"calibration-ids", 0, true, "LIST", "Wanda calibration as token ids (instead of tokenizing text)"},
               {"bench", 0, true, "N", "after building: draft N tokens greedily and print measured time per forward"},
               {"threads", 't', true, "N", "worker threads; 0 = all cores (default 0)"}},
              {});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
            "Build a draft from a spec (self-draft transforms, a separate model, Max-Gram, an MTP layer: the "
            "target's own or an MTP module's, or an EAGLE-3 head) against a target, and print its description, "
            "build time, bit accounting and bytes per forward. Figures without a compact kernel are labelled "
            "\"modeled\".");
        return 0;
    }
    if (args.has("model") && args.has("synthetic")) throw UsageError("give at most one of --model and --synthetic");
    if (!args.has("spec")) throw UsageError("--spec is required");
    const int64_t n_ctx = args.int_or("ctx", 512, 1, 1 << 24);
    std::optional<double> alpha;
    if (args.has("alpha")) alpha = args.float_or("alpha", 0.0, 0.0, 1.0);
    const int threads       = static_cast<int>(args.int_or("threads", 0, 0, 4096));
    const auto bench_tokens = static_cast<int32_t>(args.int_or("bench", 32, 1, 400));  // checked before any build
    if (auto out = args.value("out")) check_output_file(*out);
    std::unique_ptr<tbb::global_control> limit;
    if (threads > 0)
        limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);
    std::vector<std::vector<int32_t>> calib;
    if (args.has("calibration-ids")) {
        std::vector<int32_t> ids;
        std::istringstream in(*args.value("calibration-ids"));
        std::string item;
        while (std::getline(in, item, ',')) {
            try {
                ids.push_back(static_cast<int32_t>(std::stol(item)));
            } catch (const std::exception&) {
                throw UsageError("--calibration-ids: '" + item + "' is not a token id");
            }
        }
        calib.push_back(ids);
    }
    const DraftSpec spec = read_spec(*args.value("spec"));
    if (args.has("calibration-ids") && !spec.uses_wanda())  // before any model is loaded or built
        throw UsageError(
            "--calibration-ids feeds Wanda pruning, which this spec does not use (prune.method \"wanda\")");

    const model::Model target =
        args.has("synthetic") ? bundled_size_model(*args.value("synthetic"))
                              : model::Model::load(args.has("model") ? *args.value("model")
                                                                     : resource_path(kBundledTargetModel).string());
    try {
        spec.validate(target.hparams().n_layer);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(e.what());
    }
    std::cout << "target: " << target.name() << " (" << target.hparams().n_layer << " layers, n_embd "
              << target.hparams().n_embd << ", " << mib3(target.weight_bytes_total()) << ")\n";
    std::cout << "draft: " << (spec.label.empty() ? spec.describe() : spec.label + " = " + spec.describe()) << "\n";
    auto progress = [last = -1](double f, const std::string& what) mutable {
        const int pct = static_cast<int>(f * 100.0);
        if (pct / 10 != last / 10) std::cerr << "building: " << pct << "% " << what << "\n";
        last = pct;
    };

    if (args.has("out") && spec.kind != DraftKind::self) throw UsageError("--out saves self-drafts only");
    // build_draft: make_drafter's build, with its report. Wanda's activation norms come from --calibration-ids, else
    // the spec's calibration suite. The draft's own context is the one --bench uses.
    drafts::DrafterOptions dopts;
    dopts.calibration_tokens = calib;
    dopts.progress           = progress;
    dopts.context.n_ctx      = 512;
    drafts::DraftBuild built;
    try {
        built = drafts::build_draft(spec, target, dopts);
    } catch (const std::invalid_argument& e) {  // a vocabulary mismatch, a spec this target cannot take
        throw std::runtime_error(e.what());
    }
    if (const drafts::SelfDraft* d = built.self ? &*built.self : nullptr) {
        int transformed = 0, compact = 0;
        for (const auto& m : d->matrices) transformed += !m.shared, compact += m.compact;
        std::cout << "build: " << fmt("%.3f", built.seconds) << " s (transforms " << fmt("%.3f", d->build_seconds)
                  << " s), " << transformed << " of " << d->matrices.size() << " matrices transformed, "
                  << mib3(d->bytes_owned) << " owned, " << mib3(d->bytes_shared) << " shared with the target\n";
        if (compact > 0)
            std::cout << "compact: " << compact << " matrices in compact formats (bitmap-sparse / packed mantissas); "
                      << "one forward reads " << drafts::weight_bytes_per_forward(d->cost, target.hparams(), d->forward)
                      << " B of weights (real, counted from the draft's buffers)\n";
        if (!d->storage_note.empty()) std::cout << "note: " << d->storage_note << "\n";
    } else {
        if (built.model)
            std::cout << "vocabulary: compatible (llama.cpp checks: type, BOS/EOS, size within "
                      << drafts::kVocabMaxSizeDifference << ", token text from id " << drafts::kVocabCheckStartTokenId
                      << ")\n";
        std::cout << "build: " << fmt("%.3f", built.seconds) << " s\n";
    }
    print_bits(drafts::draft_bits(spec, target, built.model ? &*built.model : nullptr), n_ctx, alpha);
    if (args.has("bench") && (built.self || built.model)) bench(*built.drafter, bench_tokens, built.drafter->n_vocab());
    if (args.has("out")) {
        try {
            drafts::save_self_draft_gguf(target, *built.self, spec, *args.value("out"), true);
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(std::string("--out: ") + e.what());
        }
        std::cout << "saved: " << *args.value("out")
                  << (spec.kv_drop_ratio > 0.0f || spec.kv_trunc_bits > 0
                          ? " (KV transforms are run-time only: not saved)"
                          : "")
                  << "\n";
    }
    return 0;
}

}  // namespace speculum::cli
