// `speculum-cli inspect MODEL.gguf [--json] [--tensors]`: GGUF version, layout, every metadata key (long arrays
// summarised), the hyper-parameters when the architecture is supported (or why not), and tensor totals per type.
#include "cli.h"

#include "core/model/gguf.h"
#include "core/model/gguf_format.h"
#include "core/model/hparams.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <string>

namespace speculum::cli {

namespace {

using model::GgufFile;
using model::GgufTensorInfo;

struct TypeTotal {
    uint64_t count = 0;
    uint64_t bytes = 0;
};

std::string human_bytes(uint64_t n) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v            = static_cast<double>(n);
    int u               = 0;
    while (v >= 1024.0 && u < 4) v /= 1024.0, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
    return buf;
}

std::string dims_str(const GgufTensorInfo& t) {
    std::string s = "[";
    for (size_t i = 0; i < t.dims.size(); ++i) s += (i ? ", " : "") + std::to_string(t.dims[i]);
    return s + "]";
}

std::string pad(std::string s, size_t width) {
    if (s.size() < width) s.resize(width, ' ');
    return s;
}

nlohmann::json hparams_json(const model::Hparams& h) {
    return {{"arch", h.arch},
            {"n_vocab", h.n_vocab},
            {"n_ctx_train", h.n_ctx_train},
            {"n_embd", h.n_embd},
            {"n_layer", h.n_layer},
            {"n_nextn", h.n_nextn},
            {"n_head", h.n_head},
            {"n_head_kv", h.n_head_kv},
            {"head_dim", h.head_dim()},
            {"n_ff", h.n_ff},
            {"n_rot", h.n_rot},
            {"rope_freq_base", h.rope_freq_base},
            {"rope_freq_scale", h.rope_freq_scale},
            {"rope_style", h.rope_style == model::RopeStyle::neox ? "neox" : "normal"},
            {"rope_freqs", h.rope_freqs},
            {"rms_eps", h.rms_eps},
            {"tied_output", h.tied_output},
            {"qkv_bias", h.qkv_bias},
            {"qk_norm", h.qk_norm},
            {"post_norms", h.post_norms},
            {"ffn_activation", h.ffn_act == model::FfnActivation::gelu ? "geglu" : "swiglu"},
            {"embedding_scale", h.scale_embd},
            {"query_scale", h.query_scale()},
            {"attn_softcap", h.attn_softcap},
            {"final_softcap", h.final_softcap},
            {"sliding_window", h.n_swa},
            {"sliding_window_layers", h.swa_layers},
            {"rope_freq_base_swa", h.rope_freq_base_swa},
            {"nope_period", h.nope_period},
            {"fused_qkv", h.fused_qkv},
            {"fused_gate_up", h.fused_gate_up}};
}

// The architecture's parts beyond the llama block, one line, or empty (hparams.h).
std::string parts_line(const model::Hparams& h) {
    std::string s;
    auto add = [&s](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
    if (h.qk_norm) add("q/k norms");
    if (h.post_norms) add("post-norms");
    if (h.ffn_act == model::FfnActivation::gelu) add("GeGLU");
    if (h.scale_embd) add("embeddings x sqrt(n_embd)");
    if (h.attn_softcap > 0) add("attention soft-cap " + std::to_string(h.attn_softcap).substr(0, 5));
    if (h.final_softcap > 0) add("final soft-cap " + std::to_string(h.final_softcap).substr(0, 5));
    if (h.n_swa > 0) {
        int windowed = 0;
        for (uint8_t f : h.swa_layers) windowed += f != 0;
        add("sliding window " + std::to_string(h.n_swa) + " on " + std::to_string(windowed) + "/" +
            std::to_string(h.n_layer) + " layers");
    }
    if (h.nope_period > 0) add("no RoPE every " + std::to_string(h.nope_period) + "th layer");
    if (h.fused_qkv) add("fused QKV");
    if (h.fused_gate_up) add("fused gate/up");
    return s;
}

void print_json(const GgufFile& f, const std::optional<model::Hparams>& hp, const std::string& hp_error,
                const std::map<std::string, TypeTotal>& totals, uint64_t data_bytes, bool with_tensors) {
    nlohmann::json j;
    j["file"]              = f.path();
    j["version"]           = f.version();
    j["alignment"]         = f.alignment();
    j["file_size"]         = f.file_size();
    j["data_offset"]       = f.data_offset();
    j["n_tensors"]         = f.tensors().size();
    j["tensor_data_bytes"] = data_bytes;
    j["metadata"]          = nlohmann::json::array();
    for (const auto& kv : f.metadata())
        j["metadata"].push_back({{"key", kv.key},
                                 {"type", model::gguf_type_name(kv.value.type)},
                                 {"value", model::gguf_value_json(kv.value)}});
    if (hp)
        j["hparams"] = hparams_json(*hp);
    else
        j["hparams_error"] = hp_error;
    j["tensor_types"] = nlohmann::json::array();
    for (const auto& [type, t] : totals)
        j["tensor_types"].push_back({{"type", type}, {"count", t.count}, {"bytes", t.bytes}});
    if (with_tensors) {
        j["tensors"] = nlohmann::json::array();
        for (const auto& t : f.tensors())
            j["tensors"].push_back({{"name", t.name},
                                    {"type", kernels::ggml_type_traits(t.type)->name},
                                    {"dims", t.dims},
                                    {"bytes", t.n_bytes},
                                    {"offset", t.offset}});
    }
    // GGUF strings need not be UTF-8: replace invalid bytes rather than failing the dump.
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

void print_text(const GgufFile& f, const std::optional<model::Hparams>& hp, const std::string& hp_error,
                const std::map<std::string, TypeTotal>& totals, uint64_t data_bytes, bool with_tensors) {
    std::cout << "file:       " << f.path() << '\n'
              << "format:     GGUF v" << f.version() << ", alignment " << f.alignment() << ", " << f.file_size()
              << " bytes (" << human_bytes(f.file_size()) << "), tensor data at offset " << f.data_offset() << '\n'
              << "tensors:    " << f.tensors().size() << ", " << data_bytes << " bytes of tensor data ("
              << human_bytes(data_bytes) << ")\n";

    size_t key_width = 0;
    for (const auto& kv : f.metadata()) key_width = std::max(key_width, std::min<size_t>(kv.key.size(), 48));
    std::cout << "\nmetadata (" << f.metadata().size() << " keys):\n";
    for (const auto& kv : f.metadata())
        std::cout << "  " << pad(kv.key, key_width) << "  " << pad(model::gguf_type_name(kv.value.type), 7) << "  "
                  << model::gguf_value_summary(kv.value) << '\n';

    if (hp) {
        const model::Hparams& h = *hp;
        std::cout << "\nhparams (" << h.arch << "):\n"
                  << "  n_vocab " << h.n_vocab << ", n_ctx_train " << h.n_ctx_train << ", n_embd " << h.n_embd
                  << ", n_layer " << h.n_layer
                  << (h.n_nextn > 0 ? " (+" + std::to_string(h.n_nextn) + " multi-token-prediction)" : std::string())
                  << ", n_ff " << h.n_ff << '\n'
                  << "  n_head " << h.n_head << ", n_head_kv " << h.n_head_kv << ", head_dim " << h.head_dim()
                  << ", n_rot " << h.n_rot << '\n'
                  << "  rope " << (h.rope_style == model::RopeStyle::neox ? "neox" : "normal") << ", freq_base "
                  << h.rope_freq_base << ", freq_scale " << h.rope_freq_scale
                  << (h.rope_freqs ? ", rope_freqs tensor" : "") << ", rms_eps " << h.rms_eps << '\n'
                  << "  output " << (h.tied_output ? "tied to token_embd" : "separate")
                  << (h.qkv_bias ? ", q/k/v biases" : "") << '\n';
        if (const std::string parts = parts_line(h); !parts.empty()) std::cout << "  " << parts << '\n';
    } else {
        std::cout << "\nhparams: not available: " << hp_error << '\n';
    }

    std::cout << "\ntensor types:\n";
    for (const auto& [type, t] : totals)
        std::cout << "  " << pad(type, 8) << pad(std::to_string(t.count) + " tensors", 14) << t.bytes << " bytes ("
                  << human_bytes(t.bytes) << ")\n";
    if (totals.empty()) std::cout << "  (no tensors)\n";

    if (with_tensors && !f.tensors().empty()) {
        size_t name_width = 4;
        for (const auto& t : f.tensors()) name_width = std::max(name_width, t.name.size());
        std::cout << "\ntensors:\n  " << pad("name", name_width) << "  " << pad("type", 8) << pad("dims", 24)
                  << pad("bytes", 14) << "offset\n";
        for (const auto& t : f.tensors())
            std::cout << "  " << pad(t.name, name_width) << "  " << pad(kernels::ggml_type_traits(t.type)->name, 8)
                      << pad(dims_str(t), 24) << pad(std::to_string(t.n_bytes), 14) << t.offset << '\n';
    }
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
    Args args("inspect",
              {{"json", 0, false, "", "print as JSON"},
               {"tensors", 't', false, "", "also list every tensor (name, type, dims, bytes, offset)"}},
              {"MODEL.gguf"});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
            "Show a GGUF file: version, alignment, metadata (long arrays summarised), the\n"
            "model hyper-parameters when the architecture is supported, and tensor totals.");
        return 0;
    }
    if (args.positional().size() != 1) throw UsageError("expected one MODEL.gguf argument");

    GgufFile f = GgufFile::open(args.positional()[0]);  // GgufError (a runtime_error) -> exit 1
    std::optional<model::Hparams> hp;
    std::string hp_error;
    try {
        hp = model::hparams_from_gguf(f);
    } catch (const model::GgufError& e) {
        hp_error = e.what();
        // Draft heads are read with their target, not alone: say which drafter kind reads the file.
        const model::GgufValue* arch = f.find("general.architecture");
        if (arch && arch->s == "dflash")
            hp_error = std::string("a block draft in llama.cpp's dflash layout") +
                       (f.tensor("markov_w1.weight") ? " with DSpark's heads" : "") +
                       ", read with its target: a draft level of \"kind\": \"dflash\"" +
                       (f.tensor("markov_w1.weight") ? " or \"dspark\"" : "") + " and this file as model_path";
        else if (arch && arch->s == "eagle3")
            hp_error =
                "an EAGLE-3 head, read with its target: a draft level of \"kind\": \"eagle3\" and this file as "
                "model_path";
    }
    std::map<std::string, TypeTotal> totals;
    uint64_t data_bytes = 0;
    for (const auto& t : f.tensors()) {
        TypeTotal& tt = totals[kernels::ggml_type_traits(t.type)->name];
        ++tt.count;
        tt.bytes += t.n_bytes;
        data_bytes += t.n_bytes;
    }
    if (args.has("json"))
        print_json(f, hp, hp_error, totals, data_bytes, args.has("tensors"));
    else
        print_text(f, hp, hp_error, totals, data_bytes, args.has("tensors"));
    return 0;
}

}  // namespace speculum::cli
