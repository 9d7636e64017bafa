// The draft kinds and what each one is, in one table. Adding a kind means a row here, in enum order, and
// kDraftKindCount (DraftKinds.EveryKindHasARow checks the rows against the enum), plus the places CONTRIBUTING's
// "a drafter" recipe lists; the switches over DraftKind (make_drafter, the draft export) have no default, so the
// compiler names each one that misses the new kind.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace speculum::drafts {

// derived from the target | separate GGUF | Max-Gram (CS Drafting) | the engines' statistical drafters (ngram.h) |
// the target's own multi-token-prediction layer (mtp_drafter.h) | an EAGLE-3 head reading the target's states
// (eagle3_drafter.h) | block drafts on the target's states: DFlash, and DSpark with its Markov and confidence heads
// (dflash_drafter.h)
enum class DraftKind : uint8_t { self, model, maxgram, ngram, mtp, eagle3, dflash, dspark };
inline constexpr int kDraftKindCount = 8;

struct DraftKindInfo {
    DraftKind kind;
    const char* name;     // in JSON, the CLI and reports ("eagle3")
    const char* display;  // in the app ("EAGLE-3 head")
    // The app's modeled assumption for a new level of this kind, until a run measures it: acceptance by the level
    // above and the cost of one call against one target step.
    double assumed_alpha;
    double assumed_c;
    bool statistical;          // no model, no KV (Max-Gram, the n-gram family): a cascade's last level only
    bool reads_target_states;  // a head on the target's hidden states (its cache keeps them): one level, for the target
    // How the deployment engines run this kind: what the export snippets write (core/export/snippet_*.cpp;
    // DraftKinds.TheExportColumnsAreWhatTheSnippetsWrite holds them to it).
    const char* llama_cpp;   // llama-server's flag
    const char* vllm;        // speculative_config "method"
    const char* sglang;      // --speculative-algorithm
    const char* draft_gguf;  // what `speculum-cli export --format draft-gguf` writes for it ("" = nothing: no model)
};

// One row per kind, in enum order. A one-layer head over a many-layer target reads about an eighth of its bytes (the
// bundled EAGLE-3 head: 0.13, speculum-cli draft); statistical drafters run no forward pass.
inline constexpr std::array<DraftKindInfo, kDraftKindCount> kDraftKinds{{
    {DraftKind::self, "self", "self-draft", 0.8, 0.05, false, false, "-md", "draft_model", "STANDALONE",
     "the derived draft, pruned and truncated as built"},
    {DraftKind::model, "model", "separate model", 0.8, 0.05, false, false, "-md", "draft_model", "STANDALONE",
     "a copy of the draft model"},
    {DraftKind::maxgram, "maxgram", "Max-Gram", 0.5, 0.0, true, false, "--spec-type ngram-simple", "ngram", "NGRAM",
     ""},
    {DraftKind::ngram, "ngram", "n-gram / suffix", 0.5, 0.0, true, false, "--spec-type ngram-", "ngram", "NGRAM", ""},
    {DraftKind::mtp, "mtp", "MTP head", 0.6, 0.12, false, true, "--spec-type draft-mtp", "mtp", "NEXTN",
     "the target with its MTP module built in"},
    {DraftKind::eagle3, "eagle3", "EAGLE-3 head", 0.6, 0.12, false, true, "--spec-type draft-eagle3", "eagle3",
     "EAGLE3", "a copy of the head"},
    // A block draft drafts a whole block in one pass: per drafted token it costs a fraction of a chain's pass.
    {DraftKind::dflash, "dflash", "DFlash block draft", 0.6, 0.1, false, true, "--spec-type draft-dflash", "dflash",
     "DFLASH", "a copy of the block draft"},
    {DraftKind::dspark, "dspark", "DSpark block draft", 0.6, 0.1, false, true, "--spec-type draft-dspark", "dspark",
     "DFLASH", "a copy of the block draft"},
}};

constexpr const DraftKindInfo& draft_kind_info(DraftKind k) {
    return kDraftKinds[static_cast<size_t>(k)];
}
inline bool reads_target_states(DraftKind k) {
    return draft_kind_info(k).reads_target_states;
}
inline bool is_statistical(DraftKind k) {
    return draft_kind_info(k).statistical;
}
// A block draft: one pass drafts the whole chain it proposes (its cost is per call, not per drafted token).
inline bool drafts_a_block_per_pass(DraftKind k) {
    return k == DraftKind::dflash || k == DraftKind::dspark;
}

}  // namespace speculum::drafts
