// `speculum-cli models`: what is bundled — the reference models, prompt suites, hardware profiles and configs.
#include "cli.h"

#include "core/data/dataset.h"
#include "core/model/gguf.h"
#include "core/model/hparams.h"
#include "core/model/mtp_module.h"
#include "core/resources.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace speculum::cli {

namespace fs = std::filesystem;

static std::vector<fs::path> files_with(const fs::path& dir, const std::string& ext) {
    std::vector<fs::path> out;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return out;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_regular_file() && e.path().extension() == ext) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

int cmd_models(int argc, char** argv) {
    Args args("models", {{"json", 0, false, "", "print as JSON"}}, {});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
            "List what is bundled: reference models (the default target and draft), prompt "
            "suites, hardware profiles and example configurations.");
        return 0;
    }
    auto res = resources_dir();
    if (!res) throw std::runtime_error("no resources folder found; set SPECULUM_RESOURCES");
    nlohmann::json j;
    j["resources"] = res->string();

    for (const auto& p : files_with(*res / "models", ".gguf")) {
        nlohmann::json m{{"file", p.filename().string()}, {"path", p.string()}, {"bytes", fs::file_size(p)}};
        std::string rel = "models/" + p.filename().string();
        m["role"]       = rel == kBundledTargetModel  ? "default target"
                          : rel == kBundledMidModel   ? "mid-level draft"
                          : rel == kBundledDraftModel ? "default draft"
                          : rel == kBundledEagle3Head ? "the default target's EAGLE-3 head"
                          : rel == kBundledMtpModule  ? "the default target's MTP module"
                          : rel == kBundledDflash     ? "the default target's DFlash block draft"
                          : rel == kBundledDspark     ? "the default target's DSpark block draft"
                                                      : "";
        try {
            model::GgufFile f = model::GgufFile::open(p.string());
            uint64_t params   = 0;
            for (const auto& t : f.tensors()) params += t.n_elements;
            if (f.get_string_or("general.architecture", "") == "eagle3") {  // a draft head (drafts/eagle3.h)
                m["arch"]           = "eagle3";
                m["layers"]         = f.get_uint("eagle3.block_count");
                m["n_embd"]         = f.get_uint("eagle3.embedding_length");
                m["extract_layers"] = f.get_array("eagle3.extract_layers", model::GgufType::INT32).ints;
                m["parameters"]     = params;
                j["models"].push_back(m);
                continue;
            }
            if (f.get_string_or("general.architecture", "") == "dflash") {  // a block draft (drafts/dflash.h)
                m["arch"]          = "dflash";
                m["layers"]        = f.get_uint("dflash.block_count");
                m["n_embd"]        = f.get_uint("dflash.embedding_length");
                m["target_layers"] = f.get_array("dflash.target_layers", model::GgufType::INT32).ints;
                m["block_size"]    = f.get_uint_or("dflash.block_size", 16);
                m["dspark_heads"]  = f.tensor("markov_w1.weight") != nullptr;
                m["parameters"]    = params;
                j["models"].push_back(m);
                continue;
            }
            if (f.get_string_or("general.type", "") == model::kMtpModuleType) {  // NextN blocks (model/mtp_module.h)
                const std::string a = f.get_string("general.architecture");
                m["arch"]           = a;
                m["type"]           = model::kMtpModuleType;
                m["layers"]         = f.get_uint(a + ".nextn_predict_layers");
                m["n_embd"]         = f.get_uint(a + ".embedding_length");
                m["parameters"]     = params;
                j["models"].push_back(m);
                continue;
            }
            model::Hparams hp = model::hparams_from_gguf(f);
            m["arch"]         = hp.arch;
            m["layers"]       = hp.n_layer;
            m["n_embd"]       = hp.n_embd;
            m["n_vocab"]      = hp.n_vocab;
            m["parameters"]   = params;
        } catch (const std::exception& e) {
            m["error"] = e.what();
        }
        j["models"].push_back(m);
    }
    if (auto ds = datasets_dir()) {
        for (const auto& p : files_with(*ds, ".jsonl")) {
            nlohmann::json d{{"file", p.filename().string()}, {"path", p.string()}};
            try {
                data::Dataset set = data::load_dataset_lenient(p.string());
                d["prompts"]      = set.prompts.size();
                d["tasks"]        = set.tasks();
                d["malformed"]    = set.issues.size();
            } catch (const std::exception& e) {
                d["error"] = e.what();
            }
            j["datasets"].push_back(d);
        }
    }
    for (const auto& p : files_with(*res / "hardware", ".json")) j["hardware_profiles"].push_back(p.stem().string());
    for (const auto& p : files_with(*res / "configs", ".json")) j["configs"].push_back(p.filename().string());

    if (args.has("json")) {
        std::cout << j.dump(2) << '\n';
        return 0;
    }
    std::cout << "resources: " << j["resources"].get<std::string>() << "\n\nmodels:\n";
    for (const auto& m : j.value("models", nlohmann::json::array())) {
        std::cout << "  " << m["file"].get<std::string>();
        if (!m["role"].get<std::string>().empty()) std::cout << "  (" << m["role"].get<std::string>() << ")";
        std::cout << '\n';
        if (m.contains("error")) {
            std::cout << "      error: " << m["error"].get<std::string>() << '\n';
            continue;
        }
        if (m.contains("extract_layers")) {
            std::cout << "      eagle3 draft head, " << m["layers"] << " layer, n_embd " << m["n_embd"]
                      << ", reads the target's layers " << m["extract_layers"].dump() << ", " << m["parameters"]
                      << " parameters, " << m["bytes"].get<uint64_t>() / 1000 << " kB\n";
            continue;
        }
        if (m.contains("target_layers")) {
            std::cout << "      " << (m["dspark_heads"].get<bool>() ? "DSpark" : "DFlash") << " block draft, "
                      << m["layers"] << " layer(s), block " << m["block_size"] << ", n_embd " << m["n_embd"]
                      << ", reads the target's layers " << m["target_layers"].dump() << ", " << m["parameters"]
                      << " parameters, " << m["bytes"].get<uint64_t>() / 1000 << " kB\n";
            continue;
        }
        if (m.contains("type")) {
            std::cout << "      " << m["arch"].get<std::string>() << " MTP module, " << m["layers"]
                      << " NextN layer(s), n_embd " << m["n_embd"] << ", " << m["parameters"] << " parameters, "
                      << m["bytes"].get<uint64_t>() / 1000 << " kB\n";
            continue;
        }
        std::cout << "      " << m["arch"].get<std::string>() << ", " << m["layers"] << " layers, n_embd "
                  << m["n_embd"] << ", vocab " << m["n_vocab"] << ", " << m["parameters"] << " parameters, "
                  << m["bytes"].get<uint64_t>() / 1000 << " kB\n";
    }
    std::cout << "\ndatasets:\n";
    for (const auto& d : j.value("datasets", nlohmann::json::array())) {
        std::cout << "  " << d["file"].get<std::string>();
        if (d.contains("error"))
            std::cout << "  error: " << d["error"].get<std::string>();
        else
            std::cout << "  " << d["prompts"] << " prompts"
                      << (d["malformed"].get<size_t>() ? " (with malformed lines!)" : "");
        std::cout << '\n';
    }
    std::cout << "\nhardware profiles:";
    for (const auto& h : j.value("hardware_profiles", nlohmann::json::array()))
        std::cout << ' ' << h.get<std::string>();
    std::cout << "\nconfigs:";
    for (const auto& c : j.value("configs", nlohmann::json::array())) std::cout << ' ' << c.get<std::string>();
    std::cout << '\n';
    return 0;
}

}  // namespace speculum::cli
