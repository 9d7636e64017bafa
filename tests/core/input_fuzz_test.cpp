// Mutants of the inputs added since the first hostile-input pass (issue #51): EAGLE-3 heads, MTP modules, lookup
// caches, chat templates and `messages` rows, and repeat settings. Every mutant must load (and then run a draft
// step, or render) or be refused with a message; a crash, a hang, an empty message or an exception of another kind
// fails. Seeded and deterministic; SPECULUM_FUZZ_MUTANTS (per input kind) and SPECULUM_FUZZ_SEED run a longer or
// different attack by hand, as the JSON fuzz test does.
#include "core/data/chat_template.h"
#include "core/data/dataset.h"
#include "core/drafts/eagle3.h"
#include "core/drafts/eagle3_drafter.h"
#include "core/drafts/mtp_drafter.h"
#include "core/drafts/ngram.h"
#include "core/engine/spec_config.h"
#include "core/model/gguf_writer.h"
#include "core/model/mtp_module.h"
#include "core/model/synthetic.h"
#include "engine_fixtures.h"
#include "support/fresh_path.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace speculum;
using namespace speculum::test;

namespace {

size_t mutants(size_t fallback) {
    const char* env = std::getenv("SPECULUM_FUZZ_MUTANTS");
    return env ? std::strtoull(env, nullptr, 10) : fallback;
}
uint64_t seed() {
    const char* env = std::getenv("SPECULUM_FUZZ_SEED");
    return env ? std::strtoull(env, nullptr, 10) : 20261205;
}

// "ok", "refused" (a clean error with a message), or what went wrong.
template <class F>
std::string outcome(F&& f) {
    try {
        f();
        return "ok";
    } catch (const std::exception& e) {
        return std::string(e.what()).empty() ? std::string("an empty message") : std::string("refused");
    } catch (...) {
        return "a non-standard exception";
    }
}

// A GGUF whose metadata is `base`'s with one key's value replaced by a hostile one (every type, extreme values).
std::vector<uint8_t> with_hostile_value(const model::GgufFile& base, std::mt19937_64& rng) {
    const auto& kvs   = base.metadata();
    const size_t pick = rng() % kvs.size();
    model::GgufWriter g;
    for (size_t i = 0; i < kvs.size(); ++i) {
        const std::string& k = kvs[i].key;
        if (i != pick) {
            g.set_value(k, kvs[i].value);
            continue;
        }
        switch (rng() % 9) {
            case 0:
                g.set_uint64(k, ~uint64_t{0} - rng() % 3);
                break;
            case 1:
                g.set_uint64(k, (uint64_t{1} << 32) + rng() % 70);
                break;
            case 2:
                g.set_int32(k, -int32_t(rng() % 5) - 1);
                break;
            case 3:
                g.set_uint32(k, 0);
                break;
            case 4:
                g.set_float32(k, std::nanf(""));
                break;
            case 5:
                g.set_float32(k, (rng() % 2 ? 1 : -1) * INFINITY);
                break;
            case 6:
                g.set_string(k, std::string(rng() % 3 ? 0 : 100000, 'x'));
                break;
            case 7:
                g.set_array_int32(k, std::vector<int32_t>(rng() % 20, int32_t(rng() % 4) - 1));
                break;
            default:
                g.set_bool(k, rng() % 2);
                break;
        }
    }
    for (const model::GgufTensorInfo& t : base.tensors()) {
        g.add_tensor(t.name, t.dims, t.type, t.data, t.n_bytes);
    }
    return g.to_bytes();
}

// Byte-level damage: flips in the header and metadata, or a cut.
std::vector<uint8_t> with_damaged_bytes(std::vector<uint8_t> b, std::mt19937_64& rng) {
    if (rng() % 4 == 0) {
        b.resize(rng() % b.size());
        return b;
    }
    const size_t head = std::min<size_t>(b.size(), 4096);
    for (int i = 0, n = 1 + int(rng() % 4); i < n; ++i) b[rng() % head] ^= uint8_t(1u << (rng() % 8));
    return b;
}

void expect_clean(const std::map<std::string, std::string>& failures, size_t n, size_t ok) {
    for (const auto& [what, first] : failures) ADD_FAILURE() << what << ": " << first;
    std::printf("[ mutants  ] %zu, of which %zu loaded\n", n, ok);
}

}  // namespace

TEST(InputFuzz, Eagle3HeadsAndMtpModulesLoadAndDraftOrAreRefused) {
    const model::Model target       = model::make_synthetic_model(engine_target_spec());
    model::SyntheticSpec ms         = engine_target_spec();
    ms.n_nextn                      = 1;
    const model::Model with_mtp     = model::make_synthetic_model(ms);
    const std::vector<uint8_t> head = drafts::eagle3_synthetic_gguf(target, {});
    const std::vector<uint8_t> mtp  = model::mtp_module_gguf(with_mtp);
    const model::GgufFile head_file = model::GgufFile::from_bytes(head, "head.gguf");
    const model::GgufFile mtp_file  = model::GgufFile::from_bytes(mtp, "mtp.gguf");
    std::mt19937_64 rng(seed());
    std::map<std::string, std::string> failures;
    const size_t n = mutants(600);
    size_t ok      = 0;
    std::vector<float> state(size_t(target.hparams().n_embd), 0.5f);
    for (size_t i = 0; i < n; ++i) {
        const bool is_head          = i % 2 == 0;
        const model::GgufFile& base = is_head ? head_file : mtp_file;
        const std::vector<uint8_t> bytes =
            rng() % 2 ? with_hostile_value(base, rng) : with_damaged_bytes(is_head ? head : mtp, rng);
        const std::string what = outcome([&] {
            model::GgufFile f = model::GgufFile::from_bytes(bytes, "mutant.gguf");
            if (is_head) {
                const drafts::Eagle3Head h = drafts::eagle3_head_from_gguf(std::move(f), target);
                drafts::Eagle3Drafter d(target, h, exact_ctx());
                // one kept row: every stream the head reads, n_embd floats each
                const std::vector<float> row(h.extract_layers.size() * state.size(), 0.5f);
                (void)d.logits_for(row.data(), 3, 2);
            } else {
                const std::vector<model::NextnWeights> layers = model::mtp_module_from_gguf(std::move(f), target);
                drafts::MtpDrafter d(target, layers.at(0), exact_ctx());
                (void)d.logits_for(state.data(), 3, 2);
            }
        });
        ok += what == "ok";
        if (what != "ok" && what != "refused")
            failures.emplace(std::string(is_head ? "EAGLE-3 head" : "MTP module") + " mutant " + std::to_string(i),
                             what);
    }
    expect_clean(failures, n, ok);
}

TEST(InputFuzz, LookupCachesLoadOrAreRefused) {
    drafts::NgramCounts c;
    const std::vector<int32_t> ids = {5, 9, 3, 5, 9, 3, 7, 5, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 3};
    drafts::ngram_counts_update(c, ids, 0, 1, 1, 4);
    const std::string good = fresh_tmp_path("fuzz_cache.lcd").string();
    drafts::ngram_counts_save(c, good);
    std::ifstream in(good, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    ASSERT_GT(bytes.size(), 32u);
    std::mt19937_64 rng(seed() + 1);
    std::map<std::string, std::string> failures;
    const size_t n         = mutants(1500);
    size_t ok              = 0;
    const std::string path = fresh_tmp_path("fuzz_mutant.lcd").string();
    for (size_t i = 0; i < n; ++i) {
        std::vector<uint8_t> b = bytes;
        switch (rng() % 4) {
            case 0:
                b.resize(rng() % b.size());
                break;
            case 1:
                for (int k = 0; k < 4; ++k) b[rng() % b.size()] = uint8_t(rng());
                break;
            case 2: {  // a huge or negative count
                const int32_t v = rng() % 2 ? int32_t(0x7fffffff) : -int32_t(rng() % 100) - 1;
                std::memcpy(&b[(rng() % (b.size() / 4)) * 4], &v, 4);
                break;
            }
            default:
                b.insert(b.end(), b.begin(), b.begin() + long(rng() % b.size()));
                break;  // a repeated tail
        }
        std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
        const std::string what = outcome([&] { (void)drafts::ngram_counts_load(path, 16); });
        ok += what == "ok";
        if (what != "ok" && what != "refused") failures.emplace("cache mutant " + std::to_string(i), what);
    }
    expect_clean(failures, n, ok);
}

TEST(InputFuzz, ChatTemplatesAndMessagesRowsRenderOrAreRefused) {
    std::mt19937_64 rng(seed() + 2);
    const std::vector<std::string> templates = {"chatml",
                                                "llama3",
                                                "gpt-oss",
                                                "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}",
                                                "<|start_header_id|>{{ m }}",
                                                "[INST] {{ x }} [/INST]",
                                                "<start_of_turn>",
                                                ""};
    const std::vector<std::string> roles = {"user", "assistant", "system", "", "tool", "USER", std::string(300, 'r')};
    const std::vector<std::string> contents = {"hi",
                                               "",
                                               std::string(5000, '<'),
                                               "<|im_end|>",
                                               "\xff\xfe broken utf8",
                                               "{{ injection }}",
                                               std::string(1, '\0')};
    std::map<std::string, std::string> failures;
    const size_t n = mutants(2000);
    size_t ok      = 0;
    for (size_t i = 0; i < n; ++i) {
        std::string tmpl = templates[rng() % templates.size()];
        if (rng() % 3 == 0 && !tmpl.empty()) tmpl.erase(rng() % tmpl.size(), rng() % 8);  // a damaged template
        std::vector<data::ChatMessage> messages(rng() % 5);
        for (auto& m : messages) m = {roles[rng() % roles.size()], contents[rng() % contents.size()]};
        const std::string what = outcome([&] {
            if (rng() % 2) {
                (void)data::apply_chat_template(tmpl, messages, "mutant", rng() % 2);
            } else {  // a dataset row, through the reader and the renderer every suite goes through
                std::string row = R"({"id":"p","task":"t","messages":[)";
                for (size_t k = 0; k < messages.size(); ++k)
                    row += std::string(k ? "," : "") + R"({"role":")" + messages[k].role + R"(","content":"x"})";
                row += "]}";
                if (rng() % 4 == 0) row.erase(rng() % row.size(), 1 + rng() % 4);
                const data::Dataset ds = data::parse_dataset(row + "\n", "mutant.jsonl");
                for (const data::Prompt& p : ds.prompts) (void)data::prompt_text(p, tmpl, "mutant.jsonl");
            }
        });
        ok += what == "ok";
        if (what != "ok" && what != "refused") failures.emplace("chat mutant " + std::to_string(i), what);
    }
    expect_clean(failures, n, ok);
}

TEST(InputFuzz, RepeatSettingsAreValidatedOrRun) {
    std::mt19937_64 rng(seed() + 3);
    const std::vector<double> times = {0.0, 1e-9, 0.5, 3.0, 86400.0, 1e300, -1.0, std::nan(""), INFINITY};
    std::map<std::string, std::string> failures;
    const size_t n = mutants(2000);
    size_t ok      = 0;
    for (size_t i = 0; i < n; ++i) {
        engine::SpecConfig c;
        c.levels.resize(1);
        c.levels[0].exit_layer = 1;
        c.prompt_ids           = {1, 2, 3};
        c.repeats.min          = int32_t(rng() % 2003) - 1;
        c.repeats.max          = int32_t(rng() % 2003) - 1;
        c.repeats.min_time_s   = times[rng() % times.size()];
        c.repeats.max_time_s   = times[rng() % times.size()];
        c.repeats.rel_width    = times[rng() % times.size()];
        const std::string what = outcome([&] {
            c.validate();
            // through JSON, as a config file gives them
            const nlohmann::json j = c;
            j.get<engine::SpecConfig>().validate();
        });
        ok += what == "ok";
        if (what != "ok" && what != "refused") failures.emplace("repeats mutant " + std::to_string(i), what);
    }
    expect_clean(failures, n, ok);
}
