// The statistical drafters of issue #28 (llama.cpp's ngram-simple/-map-k/-map-k4v/-mod/-cache, vLLM's prompt
// lookup, suffix decoding): each rule on hand-made contexts, the searches against brute force, the suffix tree's
// counts against counted occurrences, llama.cpp's lookup file format (and hostile files), the spec's JSON, and
// greedy runs that are lossless with drafts accepted, as chains, a suffix tree and a cascade leaf.
#include "engine_fixtures.h"

#include "core/drafts/draft_spec.h"
#include "core/drafts/make_drafter.h"
#include "core/drafts/ngram.h"
#include "core/drafts/ngram_drafter.h"
#include "core/drafts/suffix_tree.h"
#include "core/engine/cascade.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

namespace speculum::test {
namespace {

using drafts::NgramMethod;
using drafts::NgramSpec;
using V = std::vector<int32_t>;

std::vector<int32_t> random_tokens(std::mt19937& rng, size_t n, int32_t alphabet) {
    std::uniform_int_distribution<int32_t> d(0, alphabet - 1);
    std::vector<int32_t> v(n);
    for (int32_t& t : v) t = d(rng);
    return v;
}

// ---- the spec ----

TEST(NgramSpec, DefaultsAreTheReferenceEnginesAndRoundTrip) {
    const NgramSpec d;
    EXPECT_NO_THROW(d.validate());
    EXPECT_EQ(d.size_n, 12);  // llama.cpp --spec-ngram-*-size-n
    EXPECT_EQ(d.size_m, 48);
    EXPECT_EQ(d.mod_n_match, 24);
    EXPECT_EQ(d.lookup_min, 5);  // vLLM's prompt_lookup_min/max when neither is given
    EXPECT_EQ(d.suffix_max_depth, 24);
    std::mt19937 rng(5);
    for (NgramMethod m : drafts::kNgramMethods) {
        drafts::DraftSpec s;
        s.kind                  = drafts::DraftKind::ngram;
        s.ngram.method          = m;
        s.ngram.size_n          = 1 + int32_t(rng() % 20);
        s.ngram.size_m          = 1 + int32_t(rng() % 60);
        s.ngram.min_hits        = 1 + int32_t(rng() % 4);
        s.ngram.mod_n_min       = int32_t(rng() % 8);
        s.ngram.mod_n_max       = 8 + int32_t(rng() % 8);
        s.ngram.lookup_max      = 3 + int32_t(rng() % 4);
        s.ngram.lookup_min      = 1 + int32_t(rng() % 3);
        s.ngram.suffix_tree     = false;
        s.ngram.suffix_min_prob = 0.25f;
        if (m == NgramMethod::cache) s.ngram.static_cache = "corpus.lcs";
        ASSERT_NO_THROW(s.validate()) << drafts::to_string(m);
        const nlohmann::json j       = s;
        const drafts::DraftSpec back = j.get<drafts::DraftSpec>();
        EXPECT_EQ(back, s) << j.dump();
        EXPECT_NE(s.describe().find(drafts::to_string(m)), std::string::npos);
    }
}

TEST(NgramSpec, BadValuesNameTheField) {
    auto err = [](const std::string& text) {
        try {
            drafts::DraftSpec s = nlohmann::json::parse(text).get<drafts::DraftSpec>();
            s.validate();
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(err(R"({"kind":"ngram","ngram":{"size_n":0}})").find("draft.ngram.size_n"), std::string::npos);
    EXPECT_NE(err(R"({"kind":"ngram","ngram":{"method":"ngram-fancy"}})").find("draft.ngram.method"),
              std::string::npos);
    EXPECT_NE(
        err(R"({"kind":"ngram","ngram":{"size_m":"48"}})").find("draft.ngram.size_m: expected an integer, got string"),
        std::string::npos);
    EXPECT_NE(err(R"({"kind":"ngram","ngram":{"typo":1}})").find("draft.ngram.typo: is not a known key"),
              std::string::npos);
    EXPECT_NE(err(R"({"kind":"ngram","ngram":{"lookup_min":6,"lookup_max":3}})").find("draft.ngram.lookup_min"),
              std::string::npos);
    EXPECT_NE(err(R"({"kind":"ngram","ngram":{"static_cache":"x.lcs"}})").find("only to method \"ngram-cache\""),
              std::string::npos);
    EXPECT_NE(err(R"({"kind":"self","ngram":{"size_n":3}})").find("draft.ngram applies only to kind \"ngram\""),
              std::string::npos);
    EXPECT_NE(err(R"({"kind":"ngram","ngram":{"suffix_min_prob":2}})").find("draft.ngram.suffix_min_prob"),
              std::string::npos);
}

// ---- ngram-simple and prompt lookup ----

TEST(NgramSimple, CopiesAfterTheMostRecentMatchWithLlamaCppsRules) {
    // key (n = 2) = "7 8"; occurrences at 1 and 6; the most recent (6) wins; its continuation in the history.
    const V ctx{0, 7, 8, 1, 2, 3, 7, 8, 4, 5, 6, 9, 9, 9, 7, 8};
    EXPECT_EQ(drafts::ngram_simple_draft(ctx, 2, 4), (V{4, 5, 6, 9}));
    // Fewer than n tokens follow it inside the history: nothing (llama.cpp's quirk).
    EXPECT_TRUE(drafts::ngram_simple_draft(V{0, 0, 7, 8, 1, 5, 5, 5, 5, 7, 8}, 2, 1).empty());
    // Too short a context: |ctx| - 1 <= n + m + 1.
    EXPECT_TRUE(drafts::ngram_simple_draft(V{7, 8, 1, 2, 7, 8}, 2, 3).empty());
    // Position 0 is never a match.
    EXPECT_TRUE(drafts::ngram_simple_draft(V{7, 8, 1, 2, 3, 4, 5, 6, 7, 8}, 2, 2).empty());
    // No earlier occurrence.
    EXPECT_TRUE(drafts::ngram_simple_draft(V{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 2, 2).empty());
}

// vLLM's rule written another way: longest L first; the earliest start s with ctx[s, s + L) equal to the suffix
// and a token after it.
V prompt_lookup_ref(const V& ctx, int32_t lo, int32_t hi, int32_t k) {
    const size_t C = ctx.size();
    for (int32_t L = hi; L >= lo; --L) {
        if (C < size_t(L) + 1) continue;
        for (size_t s = 0; s + size_t(L) < C; ++s)
            if (std::equal(ctx.begin() + std::ptrdiff_t(s), ctx.begin() + std::ptrdiff_t(s) + L, ctx.end() - L)) {
                const size_t from = s + size_t(L), to = std::min(C, from + size_t(k));
                return V(ctx.begin() + std::ptrdiff_t(from), ctx.begin() + std::ptrdiff_t(to));
            }
    }
    return {};
}

TEST(PromptLookup, LongestMatchEarliestOccurrenceEqualsBruteForce) {
    EXPECT_EQ(drafts::prompt_lookup_draft(V{1, 2, 3, 9, 1, 2, 3, 8, 2, 3}, 1, 3, 2), (V{9, 1}));
    std::mt19937 rng(11);
    int64_t drafted = 0;
    for (int it = 0; it < 3000; ++it) {
        const V ctx     = random_tokens(rng, 1 + rng() % 60, 2 + int32_t(rng() % 4));
        const int32_t a = 1 + int32_t(rng() % 3), b = a + int32_t(rng() % 4), k = 1 + int32_t(rng() % 6);
        const V got = drafts::prompt_lookup_draft(ctx, a, b, k);
        ASSERT_EQ(got, prompt_lookup_ref(ctx, a, b, k)) << it;
        drafted += int64_t(got.size());
    }
    EXPECT_GT(drafted, 1000);
}

// ---- ngram-map ----

TEST(NgramMap, MapKCopiesAndFollowsTheAcceptedLength) {
    // n = 2, m = 3: key "7 8" recurs with m tokens after it.
    V ctx{0, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8};
    drafts::NgramMap map(2, 3, true, 1);
    EXPECT_EQ(map.draft(ctx), (V{1, 2, 3}));
    map.accept(1);  // one accepted: the key's drafts are at most 1 token now
    EXPECT_EQ(map.draft(ctx), (V{1}));
    map.accept(0);  // rejected outright: llama.cpp drafts nothing more from this key
    EXPECT_TRUE(map.draft(ctx).empty());
    map.truncate(5);  // the key's first occurrence is still inside; forgetting needs it gone
    map.truncate(2);
    EXPECT_EQ(map.n_keys(), 0u);
    EXPECT_EQ(map.draft(ctx), (V{1, 2, 3})) << "a forgotten key starts again at m";
}

TEST(NgramMap, K4vNeedsHitsAndADominantContinuation) {
    // key "7 8" followed by "1 2" twice and "3 4" twice before the current end.
    const V tie{0, 7, 8, 1, 2, 0, 7, 8, 3, 4, 0, 7, 8, 1, 2, 0, 7, 8, 3, 4, 0, 0, 0, 7, 8};
    drafts::NgramMap map(2, 2, false, 2);
    EXPECT_TRUE(map.draft(tie).empty()) << "first match: min_hits 2 not reached";
    EXPECT_TRUE(map.draft(tie).empty()) << "2 against 2: no dominant continuation (llama.cpp: max >= 2 x others)";
    // "1 2" four times against "3 4" twice dominates: the winning continuation is drafted, although the latest
    // occurrence continues "3 4" (llama.cpp copies the latest one's: its open issue #28431; see docs/engine.md).
    const V more{0, 7, 8, 1, 2, 0, 7, 8, 1, 2, 0, 7, 8, 1, 2, 0, 7, 8,
                 1, 2, 0, 7, 8, 3, 4, 0, 7, 8, 3, 4, 0, 0, 0, 7, 8};
    drafts::NgramMap m2(2, 2, false, 1);
    EXPECT_EQ(m2.draft(more), (V{1, 2}));
}

// ---- ngram-mod ----

TEST(NgramMod, FollowsThePoolAndResetsAfterFailures) {
    drafts::NgramMod mod(2, 2, 6, 12);
    V ctx{1, 2, 3, 4, 5, 6, 1, 2};
    mod.begin(V(ctx.begin(), ctx.end() - 1));
    // "1 2" -> 3 -> "2 3" -> 4 ... the drafted tokens feed the lookups; "6 1" was never followed in the history.
    EXPECT_EQ(mod.draft(ctx, 4), (V{3, 4, 5, 6}));
    EXPECT_EQ(mod.draft(ctx, 10), (V{3, 4, 5, 6, 1}));
    drafts::NgramMod capped(2, 1, 3, 12);
    capped.begin(V(ctx.begin(), ctx.end() - 1));
    EXPECT_EQ(capped.draft(ctx, 10), (V{3, 4, 5})) << "capped at n_max";
    // Shorter than n_min: dropped.
    drafts::NgramMod strict(2, 4, 6, 12);
    V short_ctx{1, 2, 3, 9, 1, 2};
    strict.begin(V(short_ctx.begin(), short_ctx.end() - 1));
    EXPECT_TRUE(strict.draft(short_ctx, 8).empty());
    EXPECT_EQ(strict.draft(short_ctx, 2), (V{3, 9})) << "n_min is capped by the engine's k";
    // Five drafts in a row with under 25 % accepted reset the pool.
    for (int i = 0; i < 5; ++i) {
        ASSERT_FALSE(mod.draft(ctx, 4).empty()) << i;
        mod.accept(0);
    }
    EXPECT_EQ(mod.n_resets(), 1);
    EXPECT_TRUE(mod.draft(V{1, 2}, 4).empty()) << "the pool is empty after the reset";
}

// ---- ngram-cache ----

TEST(NgramCache, ThresholdsStaticWeightsAndRollback) {
    drafts::NgramCounts ctxc, dyn, st;
    const V ctx{5, 6, 7, 5, 6, 7, 5, 6};
    drafts::ngram_counts_update(ctxc, ctx, 0);
    // "5 6" -> 7 twice (100 %): drafted; then "6 7" -> 5 ... continues through the context's cycle.
    EXPECT_EQ(drafts::ngram_cache_draft(ctx, 4, ctxc, dyn, st), (V{7, 5, 6, 7}));
    // Rolling back removes exactly what was added.
    drafts::NgramCounts c2;
    drafts::ngram_counts_update(c2, ctx, 0);
    drafts::ngram_counts_update(c2, ctx, 3, -1);
    drafts::NgramCounts want;
    drafts::ngram_counts_update(want, V(ctx.begin(), ctx.begin() + 3), 0);
    EXPECT_EQ(c2, want);
    // No context evidence: the static 2-grams decide (>= 2 samples, >= 50 %).
    drafts::NgramCounts none;
    st[{1, 2, -1, -1}] = {{9, 3}, {8, 1}};
    EXPECT_EQ(drafts::ngram_cache_draft(V{4, 1, 2}, 1, none, none, st), (V{9}));
    st[{1, 2, -1, -1}] = {{9, 1}, {8, 1}, {7, 1}};
    EXPECT_TRUE(drafts::ngram_cache_draft(V{4, 1, 2}, 1, none, none, st).empty()) << "33 % is below 50 %";
}

TEST(NgramCache, FilesRoundTripAndHostileFilesAreErrors) {
    const std::filesystem::path dir = tmp_dir() / "ngram_cache";
    std::filesystem::create_directories(dir);
    drafts::NgramCounts c;
    drafts::ngram_counts_update(c, V{1, 2, 3, 1, 2, 4, 1, 2, 3}, 0);
    const std::string path = (dir / "c.lcd").string();
    drafts::ngram_counts_save(c, path);
    EXPECT_EQ(drafts::ngram_counts_load(path, 16), c);
    auto write = [&](const std::string& name, const std::vector<int32_t>& words, size_t cut = 0) {
        const std::string p = (dir / name).string();
        std::ofstream f(p, std::ios::binary);
        f.write(reinterpret_cast<const char*>(words.data()), std::streamsize(words.size() * 4 - cut));
        return p;
    };
    auto error = [&](const std::string& p) {
        try {
            drafts::ngram_counts_load(p, 16);
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(error(write("cut.lcd", {1, 2, -1, -1, 1, 3, 5}, 10)).find("ends inside a record"), std::string::npos);
    EXPECT_NE(error(write("short.lcd", {1, 2, -1, -1, 1, 3, 5}, 2)).find("do not fit"), std::string::npos);
    EXPECT_NE(error(write("zero.lcd", {1, 2, -1, -1, 1, 3, 0})).find("not positive"), std::string::npos);
    EXPECT_NE(error(write("pad.lcd", {1, -1, 2, -1, 1, 3, 1})).find("follows the -1 padding"), std::string::npos);
    EXPECT_NE(error(write("vocab.lcd", {1, 99, -1, -1, 1, 3, 1})).find("outside the vocabulary"), std::string::npos);
    EXPECT_NE(error(write("huge.lcd", {1, 2, -1, -1, 2000000000, 3, 1})).find("do not fit"), std::string::npos);
    EXPECT_NE(error((dir / "missing.lcd").string()).find("missing.lcd"), std::string::npos);
    EXPECT_NE(error(dir.string()).find("directory"), std::string::npos);
    // Random bytes: an error or a valid cache, never a crash.
    std::mt19937 rng(3);
    for (int it = 0; it < 300; ++it) {
        std::vector<int32_t> w(1 + rng() % 40);
        for (int32_t& x : w) x = int32_t(rng() % 7) - 1;
        const std::string p = write("fuzz.lcd", w, rng() % 4);
        try {
            drafts::ngram_counts_load(p, 16);
        } catch (const std::runtime_error&) {
        }
    }
}

// ---- suffix tree ----

TEST(SuffixTree, CountsAreOccurrencesWithinTheDepthAndRemovalUndoes) {
    std::mt19937 rng(7);
    const int32_t depth = 5;
    drafts::SuffixTree tree(depth), without(depth);
    std::vector<V> seqs;
    for (int s = 0; s < 4; ++s) {
        seqs.push_back(random_tokens(rng, 30 + rng() % 30, 3));
        tree.append(s, seqs.back());
        if (s != 2) without.append(s, seqs.back());
    }
    // Every substring of up to depth tokens: its count (through speculate's walk) equals its occurrences.
    auto occurrences = [&](const V& pat, int skip) {
        int64_t n = 0;
        for (int s = 0; s < 4; ++s) {
            if (s == skip) continue;
            const V& q = seqs[size_t(s)];
            for (size_t i = 0; i + pat.size() <= q.size(); ++i)
                n += std::equal(pat.begin(), pat.end(), q.begin() + std::ptrdiff_t(i));
        }
        return n;
    };
    int64_t total = 0;
    for (const V& q : seqs) total += int64_t(q.size());
    EXPECT_EQ(tree.root_count(), total);
    // A chain draft of one token after a pattern has probability count(pattern + t) / count(pattern).
    for (int it = 0; it < 200; ++it) {
        const V pat = random_tokens(rng, 1 + rng() % 3, 3);
        V ctx       = pat;
        ctx.insert(ctx.begin(), 0);  // the match length tried is at most |ctx| - 1
        const drafts::SuffixDraft d = tree.speculate(ctx, 1, 100.0f, 0.0f, false);
        const int64_t base          = occurrences(pat, -1);
        if (base == 0 || d.tokens.empty()) continue;
        if (d.match_len != int32_t(pat.size())) continue;  // a shorter match scored higher
        V ext = pat;
        ext.push_back(d.tokens[0]);
        EXPECT_NEAR(d.prob[0], double(occurrences(ext, -1)) / double(base), 1e-6);
        ++total;
    }
    tree.remove(2);
    EXPECT_EQ(tree.root_count(), without.root_count());
    for (int it = 0; it < 200; ++it) {
        const V ctx = random_tokens(rng, 2 + rng() % 6, 3);
        for (bool t : {false, true}) {
            const drafts::SuffixDraft a = tree.speculate(ctx, 6, 2.0f, 0.05f, t);
            const drafts::SuffixDraft b = without.speculate(ctx, 6, 2.0f, 0.05f, t);
            ASSERT_EQ(a.tokens, b.tokens);
            ASSERT_EQ(a.parent, b.parent);
        }
    }
}

// Two matches whose drafts score the same: the longer match wins, as in Arctic Inference (issue #52: the shorter did).
TEST(SuffixTree, EqualScoresPreferTheLongerMatch) {
    drafts::SuffixTree t(8);
    t.append(0, std::vector<int32_t>{1, 2, 3, 9, 1, 2, 3});
    const std::vector<int32_t> ctx{7, 1, 2};
    // One token of budget either way (alpha 10): "2" -> 3 and "1 2" -> 3 both draft [3] with probability 1.
    const drafts::SuffixDraft d = t.speculate(ctx, 1, 10.0f, 0.1f, false, 8);
    ASSERT_EQ(d.tokens, (std::vector<int32_t>{3}));
    EXPECT_EQ(d.match_len, 2);
}

TEST(SuffixTree, DraftsRespectBudgetProbabilityAndDepth) {
    std::mt19937 rng(9);
    drafts::SuffixTree tree(8);
    tree.append(0, random_tokens(rng, 400, 4));
    for (int it = 0; it < 200; ++it) {
        const V ctx    = random_tokens(rng, 3 + rng() % 8, 4);
        const float a  = 0.5f + float(rng() % 4);
        const float mp = float(rng() % 5) / 10.0f;
        for (bool t : {false, true}) {
            const int32_t budget = 1 + int32_t(rng() % 10), cap = 1 + int32_t(rng() % 4);
            const drafts::SuffixDraft d = tree.speculate(ctx, budget, a, mp, t, cap);
            ASSERT_LE(int32_t(d.tokens.size()), budget);
            if (!d.tokens.empty()) {
                ASSERT_LE(double(d.tokens.size()), std::floor(a * double(d.match_len)) + 1e-9);
            }
            double score = 0;
            std::vector<int32_t> depth(d.tokens.size(), 1);
            for (size_t i = 0; i < d.tokens.size(); ++i) {
                ASSERT_GE(d.prob[i], mp - 1e-6f);
                ASSERT_LT(d.parent[i], int32_t(i)) << "parents come first";
                if (!t) {
                    ASSERT_EQ(d.parent[i], int32_t(i) - 1) << "path mode is a chain";
                }
                if (d.parent[i] >= 0) {
                    depth[i] = depth[size_t(d.parent[i])] + 1;
                    ASSERT_LE(d.prob[i], d.prob[size_t(d.parent[i])] + 1e-6f) << "probabilities fall along a path";
                }
                if (t) {
                    ASSERT_LE(depth[i], cap);
                }
                score += d.prob[i];
            }
            ASSERT_NEAR(d.score, score, 1e-4);
        }
    }
}

// ---- in the engine ----

drafts::DraftSpec ngram_spec(NgramMethod m) {
    drafts::DraftSpec s;
    s.kind         = drafts::DraftKind::ngram;
    s.ngram.method = m;
    // Short keys: the test's context is tens of tokens.
    s.ngram.size_n        = 2;
    s.ngram.size_m        = 8;
    s.ngram.mod_n_match   = 2;
    s.ngram.mod_n_min     = 1;
    s.ngram.mod_n_max     = 8;
    s.ngram.mod_pool_log2 = 12;
    s.ngram.lookup_min    = 1;
    s.ngram.lookup_max    = 3;
    return s;
}

// The fixture's prompt with the first 20 tokens of its greedy continuation: long enough for llama.cpp's rules
// (ngram-mod adds n-grams in chunks of 32 tokens; ngram-map wants m tokens after a match).
struct LongPrompt {
    std::vector<int32_t> prompt, ref;
};
const LongPrompt& long_prompt() {
    static const LongPrompt p = [] {
        LongPrompt l;
        LosslessFixture& f = lossless_fixture();
        l.prompt           = LosslessFixture::kPrompt;
        l.prompt.insert(l.prompt.end(), f.ref.begin(), f.ref.begin() + 20);
        l.ref = greedy_reference(f.target, l.prompt, LosslessFixture::kNew);
        return l;
    }();
    return p;
}

TEST(NgramDrafter, GreedyRunsAreLosslessAndAcceptDraftsForEveryMethod) {
    LosslessFixture& f   = lossless_fixture();
    const LongPrompt& lp = long_prompt();
    for (NgramMethod m : drafts::kNgramMethods) {
        for (bool tree : {false, true}) {
            SCOPED_TRACE(std::string(drafts::to_string(m)) + (tree ? " tree" : " chain"));
            drafts::DraftSpec spec = ngram_spec(m);
            // In a run of one repeated token the most recent match of an n-gram has one token after it, and
            // ngram-simple drafts nothing when fewer than n follow (llama.cpp's rule): n = 1 here.
            if (m == NgramMethod::simple) spec.ngram.size_n = 1;
            engine::SpecConfig cfg = lossless_config(4);
            cfg.levels             = {spec};
            if (tree) {
                cfg.verification   = engine::Verification::tree;
                cfg.tree.kind      = engine::TreeKind::static_shape;
                cfg.tree.branching = {3, 2, 1, 1};
            }
            ASSERT_NO_THROW(cfg.validate(4));
            std::shared_ptr<drafts::Drafter> d = drafts::make_drafter(spec, f.target);
            auto* nd                           = dynamic_cast<drafts::NgramDrafter*>(d.get());
            ASSERT_NE(nd, nullptr);
            const engine::RunResult r = engine::SpecEngine(f.target, cfg, d).run(lp.prompt);
            EXPECT_EQ(r.tokens, lp.ref);
            EXPECT_GT(r.stats.n_accepted, 0) << "no draft token was accepted";
            ASSERT_GE(r.stats.levels.size(), 2u);
            EXPECT_EQ(r.stats.levels[1].bytes_weights, 0u);
            EXPECT_EQ(r.stats.levels[1].n_forward, 0);
            if (!tree) {  // what was accepted is fed back at the next sync (all but the last step's)
                EXPECT_LE(nd->n_accepted_fed_back(), r.stats.n_accepted);
                EXPECT_GE(nd->n_accepted_fed_back(), r.stats.n_accepted - 4);
            }
        }
    }
}

TEST(NgramDrafter, SuffixTreesBranchAndStayLossless) {
    LosslessFixture& f            = lossless_fixture();
    drafts::DraftSpec spec        = ngram_spec(NgramMethod::suffix);
    spec.ngram.suffix_spec_factor = 4;  // 4 tokens per matched token: room for siblings after a 2-token match
    engine::SpecConfig cfg        = lossless_config(4);
    cfg.levels                    = {spec};
    cfg.verification              = engine::Verification::tree;
    cfg.tree.kind                 = engine::TreeKind::static_shape;
    cfg.tree.branching            = {3, 2, 2, 1};
    // A suffix tree over a context with branching continuations drafts more than one child somewhere.
    drafts::NgramDrafter d(96, spec.ngram);
    d.sync(V{1, 2, 3, 1, 2, 4, 1, 2, 3, 1, 2, 5, 9, 1, 2});
    drafts::TreeShape shape;
    shape.branching           = {3, 2, 2, 1};
    const drafts::DraftTree t = d.propose_tree(shape, {}, {});
    ASSERT_GE(t.size(), 3);
    int32_t roots = 0;
    for (int32_t p : t.parent) roots += p == -1;
    EXPECT_GE(roots, 1);
    EXPECT_EQ(t.tokens[0], 3) << "the most frequent continuation of \"1 2\" first";
    std::set<int32_t> firsts;
    for (int32_t i = 0; i < t.size(); ++i)
        if (t.parent[size_t(i)] == -1) firsts.insert(t.tokens[size_t(i)]);
    EXPECT_GE(firsts.size(), 2u) << "siblings: 3, 4 and 5 all followed \"1 2\"";
    const engine::RunResult r =
        engine::SpecEngine(f.target, cfg, std::shared_ptr<drafts::Drafter>(drafts::make_drafter(spec, f.target)))
            .run(LosslessFixture::kPrompt);
    EXPECT_EQ(r.tokens, f.ref);
    EXPECT_GT(r.stats.n_accepted, 0);
}

TEST(NgramDrafter, StatePersistsAcrossPromptsAndRollsBack) {
    NgramSpec s;
    s.method = NgramMethod::suffix;
    drafts::NgramDrafter d(64, s);
    d.sync(V{1, 2, 3});
    d.sync(V{1, 2, 3, 10, 11, 12, 13});  // the response "10 11 12 13"
    d.sync(V{4, 5, 6});                  // a new prompt: the response joins the global tree
    EXPECT_EQ(d.n_sequences(), 2);
    ASSERT_NE(d.global_tree(), nullptr);
    EXPECT_EQ(d.global_tree()->root_count(), 4);
    d.sync(V{4, 5, 6, 10, 11});
    EXPECT_EQ(d.propose(2, {}, {}).tokens, (V{12, 13})) << "drafted from the earlier response";
    d.sync(V{4, 5, 6, 10});  // a rollback within the sequence
    EXPECT_EQ(d.n_sequences(), 2);
    // ngram-cache: a finished sequence's n-grams join the dynamic counts.
    NgramSpec c;
    c.method = NgramMethod::cache;
    drafts::NgramDrafter dc(64, c);
    dc.sync(V{1, 2, 3, 1, 2, 3});
    dc.sync(V{7, 8});
    EXPECT_FALSE(dc.dynamic_counts().empty());
}

// A repeated measurement forgets what earlier passes taught the drafter (through any draft stack), so a later
// pass over the same prompts does not draft from their earlier responses.
TEST(NgramDrafter, ResetLearnedForgetsEarlierSequencesThroughTheStack) {
    NgramSpec s;
    s.method = NgramMethod::suffix;
    auto d   = std::make_shared<drafts::NgramDrafter>(64, s);
    engine::SpecConfig cfg;
    cfg.levels          = {drafts::DraftSpec{}};
    cfg.levels[0].kind  = drafts::DraftKind::ngram;
    cfg.levels[0].ngram = s;
    cfg.gamma           = {4};
    std::vector<engine::LevelMaterial> m(1);
    m[0].drafter     = d;
    m[0].name        = "suffix";
    const auto stack = engine::build_draft_stack(cfg, m);
    stack->sync(V{1, 2, 3});
    stack->sync(V{1, 2, 3, 10, 11, 12, 13});
    stack->sync(V{4, 5, 6});  // a new prompt: the response joins the global tree
    ASSERT_EQ(d->global_tree()->root_count(), 4);
    stack->reset_learned();
    EXPECT_EQ(d->global_tree()->root_count(), 0);
    stack->sync(V{4, 5, 6, 10, 11});
    EXPECT_TRUE(d->propose(2, {}, {}).tokens.empty()) << "nothing drafted from a forgotten response";
    // ngram-cache: back to the loaded dynamic counts.
    NgramSpec c;
    c.method = NgramMethod::cache;
    drafts::NgramCounts loaded;
    loaded[{7, -1, -1, -1}] = {{8, 5}};
    drafts::NgramDrafter dc(64, c, {}, loaded);
    dc.sync(V{1, 2, 3, 1, 2, 3});
    dc.sync(V{7, 8});
    EXPECT_NE(dc.dynamic_counts(), loaded);
    dc.reset_learned();
    EXPECT_EQ(dc.dynamic_counts(), loaded);
}

TEST(NgramDrafter, MustBeTheLastLevelAndCanBeACascadeLeaf) {
    LosslessFixture& f     = lossless_fixture();
    engine::SpecConfig cfg = lossless_config(4);
    drafts::DraftSpec exit0;
    exit0.exit_layer = 0;
    cfg.levels       = {ngram_spec(NgramMethod::prompt_lookup), exit0};
    cfg.gamma        = {4, 2};
    try {
        cfg.validate(4);
        ADD_FAILURE() << "an n-gram level above another level was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("n-gram drafter has no model"), std::string::npos) << e.what();
    }
    cfg.levels = {exit0, ngram_spec(NgramMethod::prompt_lookup)};
    ASSERT_NO_THROW(cfg.validate(4));
    // Below a layer-skipping draft, as CS Drafting's statistical leaf.
    cfg.lenience = {1.0f, 2.0f, 1.0f};
    model::ForwardOptions exit_opts;
    exit_opts.exit_layer = 0;
    std::vector<engine::LevelMaterial> m(2);
    m[0] = {nullptr, &f.target, exit_opts, "exit@0", {}};
    m[1] = {std::shared_ptr<drafts::Drafter>(drafts::make_drafter(cfg.levels[1], f.target)), nullptr, {}, "lookup", {}};
    const engine::RunResult r =
        engine::SpecEngine(f.target, cfg, engine::build_draft_stack(cfg, m)).run(LosslessFixture::kPrompt);
    EXPECT_EQ(r.tokens, f.ref);
    ASSERT_EQ(r.stats.levels.size(), 3u);
    EXPECT_GT(r.stats.levels[2].n_calls, 0);
    EXPECT_GT(r.stats.levels[1].n_review_accepted, 0) << "the leaf's drafts were accepted by level 1";
}

}  // namespace
}  // namespace speculum::test
