// The recurrent state of a hybrid model's Gated DeltaNet layers for one sequence (qwen35, qwen35moe), and how it
// rolls back when a verification pass rejects draft tokens.
//
// Attention keeps one K/V row per token, so a rejected draft is forgotten by dropping rows. A DeltaNet layer keeps
// one state per sequence, overwritten by every token: the convolution's last d_conv - 1 inputs and a state matrix per
// value head. To forget tokens the state must be brought back to what it was after the kept ones. Two strategies
// (ContextConfig::rollback), both exact (tests/core/hybrid_test.cpp: the same logits as never having seen the
// rejected tokens):
//   snapshot  every token of a pass stores the state it leaves (a copy of the whole state, per token); a rollback
//             copies one back. Memory grows with the draft length: (k + 1) states for a pass of k + 1 tokens.
//   rerun     a pass stores each token's layer inputs (the projected q, k, v before the convolution, the decay and
//             beta: about conv_dim floats, not the state's S^2 per head) beside one checkpoint of the state where the
//             speculation began; a rollback restores the checkpoint and runs the recurrence again over the kept
//             tokens. Memory: one state plus small per-token inputs; time: the recurrence of the accepted tokens.
// A token tree's pass computes one state per node from its parent's (per-branch states, transient in the pass's
// scratch); after the accepted path is compacted, either strategy restores the state at its end.
//
// Only a context that speculates keeps anything: the first commit() arms it (the verifier and the drafters commit
// where each speculation begins); plain decoding keeps nothing per token.
// The rollback horizon: states (or inputs) are kept from the "floor", the point where the current speculation began:
// the size at the start of the first pass after a rollback or a commit (or when a pass would run past max_rollback
// tokens of history). A rollback may return anywhere in [floor, size]; restorable() says where a caller can go
// (further back means starting the sequence again: 0). Passes that keep nothing per token (longer than max_rollback,
// prompts, or keeping paused) can be undone only whole, back to the floor when they started there.
#pragma once

#include "core/model/hparams.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace speculum::model {

enum class RollbackStrategy : uint8_t { snapshot, rerun };
const char* to_string(RollbackStrategy s);  // "snapshot", "rerun"
std::optional<RollbackStrategy> parse_rollback_strategy(const std::string& s);

// One DeltaNet layer's shape (Hparams' ssm fields).
struct DeltaNetShape {
    int32_t d_conv = 0, d_state = 0, n_k_heads = 0, n_v_heads = 0;
    float eps = 1e-6f;  // the q and k L2 norms' floor (llama.cpp uses the model's RMS epsilon)
    static DeltaNetShape of(const Hparams& hp);
    int64_t key_dim() const { return int64_t(d_state) * n_k_heads; }
    int64_t value_dim() const { return int64_t(d_state) * n_v_heads; }
    int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
    int64_t conv_state_floats() const { return int64_t(d_conv - 1) * conv_dim(); }
    int64_t head_state_floats() const { return int64_t(d_state) * d_state; }
    int64_t ssm_state_floats() const { return head_state_floats() * n_v_heads; }
    int64_t state_floats() const { return conv_state_floats() + ssm_state_floats(); }  // one layer
    int64_t input_floats() const { return conv_dim() + 2 * int64_t(n_v_heads); }       // qkv, g, beta
};

// One token through one layer, sequentially: `state` = [conv state (d_conv - 1 rows of conv_dim, oldest first) |
// the heads' matrices], `in` = [raw qkv (conv_dim) | g (n_v_heads) | beta (n_v_heads)]; writes the recurrence output
// (value_dim) to `out` unless null. `conv_w` (conv_dim, d_conv); `scratch` (conv_dim). The forward pass runs the same
// kernels in the same order per head, so both give the same bits.
void delta_net_token(const DeltaNetShape& s, const float* conv_w, float* state, const float* in, float* out,
                     float* scratch, bool reference = false);

// What the state machinery did, counted since the context was made (the run report's recurrent-state line).
struct RecurrentStats {
    uint64_t passes        = 0;  // forward passes that ran a DeltaNet layer
    uint64_t rollbacks     = 0;  // truncate / compact calls that restored an earlier state
    uint64_t tokens_kept   = 0;  // snapshot: per-token states stored; rerun: per-token inputs stored
    uint64_t tokens_rerun  = 0;  // rerun: tokens whose recurrence ran again
    double keep_seconds    = 0;  // time passes spent storing what a rollback needs
    double restore_seconds = 0;  // time rollbacks took
    uint64_t peak_bytes    = 0;  // most bytes held for rollback at once (beside the live state)
};

class RecurrentState {
public:
    RecurrentState() = default;
    // `layers` DeltaNet layers of shape `shape`; conv_w[r] (conv_dim * d_conv) the r-th one's taps (copied).
    // reference: rerun with the _ref kernels (as the reference forward path runs them).
    RecurrentState(DeltaNetShape shape, std::vector<std::vector<float>> conv_w, RollbackStrategy strategy,
                   int32_t max_rollback, bool reference = false);

    bool empty() const { return m_layers == 0; }
    int32_t layers() const { return m_layers; }
    const DeltaNetShape& shape() const { return m_shape; }
    RollbackStrategy strategy() const { return m_strategy; }
    const std::vector<float>& conv_w(int32_t r) const { return m_conv_w[size_t(r)]; }

    // Layer r's live state (state_floats()): the state after every token in the cache.
    float* live(int32_t r) { return m_live.data() + size_t(r) * size_t(m_shape.state_floats()); }
    const float* live(int32_t r) const { return m_live.data() + size_t(r) * size_t(m_shape.state_floats()); }

    // A pass of n tokens after `size` cached ones begins: moves the floor where needed. Returns whether the pass
    // stores per-token states / inputs: n <= max_rollback, `may_keep` (the caller wants every token's logits: not a
    // prompt) and keeping not paused.
    bool begin_pass(int32_t size, int32_t n, bool may_keep = true);
    // Pauses keeping for passes of tokens that are committed anyway (a verifier's catch-up over the prompt): they
    // move the floor to their end instead of storing per-token data.
    void pause_keeping(bool paused) { m_paused = paused; }
    // Where the pass stores what token `slot` leaves: snapshot: layer r's state after it; rerun: its inputs.
    float* kept(int32_t slot, int32_t r);
    // The pass ended with `size` tokens cached (a tree pass: the live state is its last node's, until compact).
    void end_pass(int32_t size, double keep_seconds);

    // The sequence will not roll back before `size` (the caller committed it): the floor moves there, so a rerun
    // starts from here rather than from an older checkpoint. The first commit also arms the state: until then no
    // pass keeps per-token data (plain decoding pays nothing), and a pass can only be undone whole.
    void commit(int32_t size);
    // A pass that began at `size` failed (cancelled): the live state back to what it was at its start.
    void abort_pass(int32_t size);
    // The largest count <= n the cache can roll back to from `size` (n itself within the horizon, else 0).
    int32_t restorable(int32_t size, int32_t n) const;
    // KvCache::truncate / compact: the state after the kept tokens. Throws std::logic_error past the horizon.
    void truncate(int32_t size, int32_t n);
    void compact(int32_t size, int32_t n_prefix, const std::vector<int32_t>& keep);
    void clear();

    // Bytes held for rollback now (snapshot: the stored states; rerun: the checkpoint and the inputs), and of the
    // live state.
    uint64_t rollback_bytes() const;
    uint64_t live_bytes() const { return m_live.size() * sizeof(float); }
    const RecurrentStats& stats() const { return m_stats; }

private:
    void set_floor(int32_t size);  // the live state (at `size`) becomes the floor: entry 0, or the checkpoint
    float* entry(int32_t index);   // the index-th stored state / input row from the floor, allocated on first use
    void restore(int32_t count, const std::vector<int32_t>& slots);  // live = state after `slots` from the floor

    DeltaNetShape m_shape;
    int32_t m_layers = 0;
    std::vector<std::vector<float>> m_conv_w;
    RollbackStrategy m_strategy = RollbackStrategy::snapshot;
    int32_t m_max_rollback      = 64;
    bool m_reference            = false;
    std::vector<float> m_live;                  // layers x state_floats
    std::vector<float> m_checkpoint;            // the state at the floor (snapshot: entry 0 holds it)
    std::vector<std::vector<float>> m_entries;  // snapshot: state after count floor + i (entry 0 = the floor's);
                                                // rerun: inputs of slot floor + i
    int32_t m_floor      = 0;
    int32_t m_span       = 0;  // entries valid from the floor
    bool m_rolled_back   = false;
    bool m_keeping       = false;
    bool m_paused        = false;
    bool m_armed         = false;  // a commit was made: this context speculates, so passes keep rollback data
    bool m_only_floor    = false;  // the last pass kept nothing per token: only the floor itself is restorable
    int32_t m_pass_start = 0;
    RecurrentStats m_stats;
};

}  // namespace speculum::model
