// Issue #27, item 8: the hostile-JSON attack kept in the suite. Every configuration and spec in docs/examples and
// resources is mutated, as text (byte flips, cuts, deep nesting, NUL, giant strings) and as JSON (a random node
// replaced, removed, duplicated, retyped or swapped with another), and fed to every JSON reader in-process. Each
// mutant must be accepted or refused with std::invalid_argument / std::runtime_error carrying a message; a crash,
// a hang, another exception type (a raw nlohmann json.exception, std::bad_alloc) or an empty message fails.
#include "core/analytic/calibration.h"
#include "core/analytic/kmatrix.h"
#include "core/analytic/predict.h"
#include "core/drafts/draft_spec.h"
#include "core/engine/spec_config.h"
#include "core/export/manifest.h"
#include "core/hw/profile.h"
#include "core/json_input.h"
#include "core/model/synthetic.h"
#include "core/session/run_report.h"
#include "core/store/row_json.h"
#include "core/sweep/sweep_spec.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>

using namespace speculum;
using nlohmann::json;

namespace {

struct Reader {
    const char* name;
    std::function<void(const json&)> read;
};

const std::vector<Reader>& readers() {
    static const std::vector<Reader> all = {
        {"SpecConfig",
         [](const json& j) {
             engine::SpecConfig c;
             from_json(j, c);
             c.validate();
         }},
        {"SweepSpec", [](const json& j) { (void)sweep::sweep_spec_from_json(j); }},
        {"Manifest",
         [](const json& j) {
             exporting::Manifest m;
             from_json(j, m);
             m.validate();
         }},
        {"DraftSpec",
         [](const json& j) {
             drafts::DraftSpec s;
             from_json(j, s);
             s.validate();
         }},
        {"SyntheticSpec",
         [](const json& j) {
             model::SyntheticSpec s;
             from_json(j, s);
             s.validate();
         }},
        {"HardwareProfile",
         [](const json& j) {
             hw::HardwareProfile p;
             from_json(j, p);
             hw::validate(p);
         }},
        {"PredictInput",
         [](const json& j) {
             const auto in = analytic::predict_input_from_json(j, [](const std::string& id) -> hw::HardwareProfile {
                 throw std::invalid_argument("no profile '" + id + "'");
             });
             analytic::validate(in);
         }},
        {"RunReport", [](const json& j) { (void)session::measured_run_from_report(j, "report.json"); }},
        {"ResultRow", [](const json& j) { (void)store::row_from_json(j); }},
        {"KMatrix", [](const json& j) { (void)analytic::kmatrix_from_json(j); }},
    };
    return all;
}

struct Seed {
    json doc;
    std::string reader;  // the reader it was written for
};

// The documents in docs/examples and resources, each with the reader it is for, and one made in-process for the
// readers that have no file there.
std::vector<Seed> seeds() {
    std::vector<Seed> out;
    for (const char* dir : {"docs/examples", "resources/configs", "resources/configs/bench", "resources/hardware"}) {
        const auto path = test::source_dir() / dir;
        if (!std::filesystem::is_directory(path)) continue;
        for (const auto& e : std::filesystem::directory_iterator(path)) {
            if (e.path().extension() != ".json") continue;
            std::ifstream in(e.path());
            const std::string text((std::istreambuf_iterator<char>(in)), {});
            const std::string name   = e.path().filename().string();
            const std::string reader = name.starts_with("predict_")             ? "PredictInput"
                                       : name.starts_with("sweep_")             ? "SweepSpec"
                                       : name == "synthetic_target.json"        ? "SyntheticSpec"
                                       : std::string(dir).ends_with("hardware") ? "HardwareProfile"
                                                                                : "SpecConfig";
            out.push_back({parse_json(text, e.path().string()), reader});
        }
    }
    drafts::DraftSpec draft;
    draft.prune.ratio = 0.4, draft.weight_trunc_bits = 3;
    out.push_back({json(draft), "DraftSpec"});
    exporting::Manifest manifest;
    manifest.config.levels.resize(1);
    out.push_back({json(manifest), "Manifest"});
    store::ResultRow row;
    row.sweep = "s", row.key.config_hash = "h", row.task = "prose", row.metrics["speedup"] = 1.5;
    row.config = {{"gamma", json::array({3})}};
    out.push_back({store::row_to_json(row), "ResultRow"});
    for (const Seed& s : std::vector<Seed>(out))
        if (s.reader == "PredictInput" && s.doc.contains("kmatrix")) out.push_back({s.doc["kmatrix"], "KMatrix"});
    return out;
}

// Every node of j by JSON pointer, so that one can be picked at random.
void pointers(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
    out.push_back(at);
    if (j.is_object())
        for (const auto& [k, v] : j.items()) pointers(v, at / k, out);
    else if (j.is_array())
        for (size_t i = 0; i < j.size(); ++i) pointers(j[i], at / i, out);
}

json nested_value(int depth) {
    json v = 1;
    for (int i = 0; i < depth; ++i) v = json::array({v});
    return v;
}

struct Mutator {
    std::mt19937_64 rng;
    explicit Mutator(uint64_t seed) : rng(seed) {}

    size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

    json random_value() {
        switch (pick(16)) {
            case 0:
                return nullptr;
            case 1:
                return true;
            case 2:
                return -1;
            case 3:
                return 0;
            case 4:
                return 1e308;
            case 5:
                return -1e308;
            case 6:
                return std::numeric_limits<uint64_t>::max();
            case 7:
                return std::numeric_limits<int64_t>::min();
            case 8:
                return 0.5;
            case 9:
                return "";
            case 10:
                return "x";
            case 11:
                return std::string(pick(4) == 0 ? 1 << 20 : 300, 'z');  // a giant string now and then
            case 12:
                return json::array();
            case 13:
                return json::object();
            case 14:
                return nested_value(kMaxJsonDepth - 8);  // as deep as a parsed document can be
            default:
                return json::array({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17});
        }
    }

    json mutate_value(json j) {
        for (size_t n = 1 + pick(3); n-- > 0;) {
            std::vector<json::json_pointer> ptrs;
            pointers(j, json::json_pointer(), ptrs);
            const json::json_pointer& at = ptrs[pick(ptrs.size())];
            json& node                   = j[at];
            switch (pick(6)) {
                case 0:
                    node = random_value();
                    break;
                case 1:  // remove it
                    if (!at.empty())
                        j[at.parent_pointer()].is_object() ? (void)j[at.parent_pointer()].erase(at.back()) : (void)0;
                    break;
                case 2:  // another node's value here (types and shapes that exist elsewhere)
                    node = json(j[ptrs[pick(ptrs.size())]]);
                    break;
                case 3:  // an unknown key, or a repeated element
                    if (node.is_object())
                        node["unknown_" + std::to_string(pick(100))] = random_value();
                    else if (node.is_array() && !node.empty())
                        for (int k = 0; k < 50; ++k) node.push_back(node[pick(node.size())]);
                    else
                        node = random_value();
                    break;
                case 4:  // numbers stretched: huge, negative, fractional
                    if (node.is_number())
                        node = node.get<double>() * (pick(2) ? -1.0 : 1e9) + (pick(2) ? 0.5 : 0.0);
                    else
                        node = random_value();
                    break;
                default:  // the type of the value changed
                    node = node.is_string() ? json(42) : json(node.dump().substr(0, 64));
                    break;
            }
        }
        return j;
    }

    std::string mutate_text(std::string text) {
        switch (pick(6)) {
            case 0:  // flip bytes
                for (size_t n = 1 + pick(4); n-- > 0 && !text.empty();) text[pick(text.size())] ^= char(1 << pick(8));
                break;
            case 1:
                text.resize(pick(text.size() + 1));
                break;  // cut short
            case 2:
                text.insert(pick(text.size() + 1), 1, '\0');
                break;  // a NUL byte
            case 3:
                text.insert(pick(text.size() + 1), std::string(20000, '['));
                break;  // deep nesting
            case 4:
                text.insert(pick(text.size() + 1), "\"" + std::string(100000, 'q') + "\"");
                break;
            default: {  // a piece repeated
                const size_t a = pick(text.size() + 1), len = pick(64);
                text.insert(pick(text.size() + 1), text.substr(a, len));
            }
        }
        return text;
    }
};

// Runs one reader: "accepted", "refused" (a clean error), or what went wrong.
std::string run_reader(const Reader& r, const json& j) {
    try {
        r.read(j);
        return "accepted";
    } catch (const std::invalid_argument& e) {
        return std::string(e.what()).empty() ? "an empty message" : "refused";
    } catch (const std::runtime_error& e) {
        return std::string(e.what()).empty() ? "an empty message" : "refused";
    } catch (const nlohmann::json::exception& e) {
        return std::string("a raw json exception: ") + e.what();
    } catch (const std::exception& e) {
        return std::string("an unexpected exception: ") + e.what();
    }
}

}  // namespace

TEST(JsonFuzz, TenThousandMutantsAreAcceptedOrRefusedCleanly) {
    const std::vector<Seed> base = seeds();
    ASSERT_GE(base.size(), 10u) << "the seed documents in docs/examples and resources";
    // SPECULUM_FUZZ_MUTANTS and SPECULUM_FUZZ_SEED run a longer or different attack by hand.
    const char* env_n    = std::getenv("SPECULUM_FUZZ_MUTANTS");
    const char* env_seed = std::getenv("SPECULUM_FUZZ_SEED");
    const size_t n       = env_n ? std::strtoull(env_n, nullptr, 10) : 10000;
    Mutator m(env_seed ? std::strtoull(env_seed, nullptr, 10) : 20261127);
    std::map<std::string, std::string> failures;  // reader -> first failure
    size_t mutants = 0, parsed = 0, accepted = 0;
    const auto start = std::chrono::steady_clock::now();
    for (; mutants < n; ++mutants) {
        const Seed& seed_doc = base[m.pick(base.size())];
        const json& seed     = seed_doc.doc;
        json doc;
        if (m.pick(3) == 0) {  // as text, through the parser every input file goes through
            std::string text = m.mutate_text(seed.dump(m.pick(2) ? -1 : 2));
            try {
                doc = parse_json(text, "mutant.json");
            } catch (const std::invalid_argument& e) {
                EXPECT_NE(std::string(e.what()).find("mutant.json"), std::string::npos) << e.what();
                continue;
            }
        } else {
            doc = m.mutate_value(seed);
        }
        ++parsed;
        // Most mutants go to the reader their seed was written for (deep checks); the rest to any reader (shapes it
        // never expects).
        const Reader* r = &readers()[m.pick(readers().size())];
        if (m.pick(4) != 0)
            for (const Reader& each : readers())
                if (seed_doc.reader == each.name) r = &each;
        const std::string outcome = run_reader(*r, doc);
        accepted += outcome == "accepted";
        if (outcome != "accepted" && outcome != "refused")
            failures.emplace(r->name, outcome + "\n  mutant: " + doc.dump().substr(0, 400));
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "[ fuzz     ] " << mutants << " mutants, " << parsed << " parsed, " << accepted
              << " accepted by their reader, the rest refused cleanly, " << seconds << " s\n";
    for (const auto& [reader, what] : failures) ADD_FAILURE() << reader << ": " << what;
    EXPECT_GT(accepted, parsed / 20) << "enough mutants must still be valid, or only the first check is tested";
    EXPECT_LT(accepted, parsed) << "the mutants must be refused sometimes";
}
