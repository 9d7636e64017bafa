// Per-layer key/value cache in f32 for one sequence: append, roll back (truncate) and, after a batched pass
// over a token tree, compact the accepted path into contiguous slots. Keys are stored after RoPE. A hybrid model's
// Gated DeltaNet layers keep no K/V rows but a recurrent state (recurrent_state.h), which truncate and compact roll
// back with the rows.
#pragma once

#include "core/model/recurrent_state.h"

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace speculum::model {

// Thrown when a forward pass would need more slots than the cache holds.
struct KvCacheFull : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class KvCache {
public:
    KvCache() = default;
    // n_ctx slots of n_embd_kv floats for K and for V in each of n_layer layers (2 * 4 * n_layer * n_ctx *
    // n_embd_kv bytes, allocated once).
    KvCache(int32_t n_layer, int32_t n_ctx, int32_t n_embd_kv);
    // Only the layers `has_kv` marks (n_layer flags) keep K/V rows (a hybrid's attention layers); `state` is the
    // recurrent state of the others.
    KvCache(int32_t n_layer, int32_t n_ctx, int32_t n_embd_kv, const std::vector<uint8_t>& has_kv,
            RecurrentState state);

    int32_t size() const { return m_size; }       // slots in use (cached tokens)
    int32_t capacity() const { return m_n_ctx; }  // maximum slots (the context length)
    int32_t n_layer() const { return m_n_layer; }
    int32_t n_embd_kv() const { return m_n_embd_kv; }
    int32_t n_kv_layers() const { return m_n_kv_layers; }                                // layers with K/V rows
    uint64_t bytes_per_token() const { return 2ull * 4 * m_n_kv_layers * m_n_embd_kv; }  // K + V, all such layers

    // Throws KvCacheFull ("KV cache full: N + M tokens exceed the context length C") when n more slots don't fit.
    void reserve_slots(int32_t n) const;
    // Marks n more slots as used (the forward pass has written them).
    void grow(int32_t n);
    // Rolls back to the first n slots (n <= size()): rejected draft tokens are forgotten. A recurrent state rolls
    // back with them where restorable(n) == n (else std::logic_error).
    void truncate(int32_t n);
    void clear() {
        m_size = 0;
        if (!m_state.empty()) m_state.clear();
    }
    // The largest count <= n this cache can roll back to: n, except that a recurrent state only returns within its
    // horizon (recurrent_state.h), else to 0 (start again).
    int32_t restorable(int32_t n) const { return m_state.restorable(m_size, n); }
    // Declares that no rollback will go before size(): a recurrent state's checkpoint moves here (cheaper reruns).
    void commit() {
        if (!m_state.empty()) m_state.commit(m_size);
    }
    RecurrentState& recurrent() { return m_state; }
    const RecurrentState& recurrent() const { return m_state; }

    // Keeps slots [0, n_prefix) and then the slots `keep` (strictly increasing, each >= n_prefix, < size()),
    // moved down to n_prefix, n_prefix + 1, ...; size() becomes n_prefix + keep.size(). This is how the accepted
    // path of a verified token tree becomes ordinary cache entries (its keys already carry the path positions).
    void compact(int32_t n_prefix, const std::vector<int32_t>& keep);

    // The model's residual stream at some layers per slot, kept alongside the K/V when asked: drafts that read the
    // target's states (a multi-token-prediction layer reads the state after the last layer, an EAGLE-3 head the
    // states entering three layers; drafts/mtp_drafter.h, drafts/eagle3_drafter.h). `layers` are in [0, n_layer]:
    // L < n_layer is the stream entering layer L, L = n_layer the state after the last layer (before the final
    // norm). A slot's row holds them in the order given, n_embd floats each. Allocates n_ctx rows once (again
    // when the layers change); truncate and compact keep the rows with their slots.
    void keep_hidden(std::vector<int32_t> layers, int32_t n_embd);
    bool has_hidden() const { return m_n_embd_hidden > 0; }
    const std::vector<int32_t>& hidden_layers() const { return m_hidden_layers; }
    int32_t n_embd_hidden() const { return m_n_embd_hidden; }  // floats per slot: layers x n_embd
    float* hidden(int32_t slot) { return m_hidden.data() + size_t(slot) * size_t(m_n_embd_hidden); }
    const float* hidden(int32_t slot) const { return m_hidden.data() + size_t(slot) * size_t(m_n_embd_hidden); }

    // Row `slot` of layer `il`: (n_embd_kv) floats, heads contiguous.
    float* k(int32_t il, int32_t slot) { return m_k.data() + offset(il, slot); }
    float* v(int32_t il, int32_t slot) { return m_v.data() + offset(il, slot); }
    const float* k(int32_t il, int32_t slot) const { return m_k.data() + offset(il, slot); }
    const float* v(int32_t il, int32_t slot) const { return m_v.data() + offset(il, slot); }

private:
    size_t offset(int32_t il, int32_t slot) const {
        return (static_cast<size_t>(m_kv_index.empty() ? il : m_kv_index[static_cast<size_t>(il)]) * m_n_ctx +
                static_cast<size_t>(slot)) *
               m_n_embd_kv;
    }
    int32_t m_n_layer     = 0;
    int32_t m_n_ctx       = 0;
    int32_t m_n_embd_kv   = 0;
    int32_t m_size        = 0;
    int32_t m_n_kv_layers = 0;
    std::vector<int32_t> m_kv_index;  // layer -> its K/V rows (-1: none); empty = every layer in order
    RecurrentState m_state;
    std::vector<float> m_k;  // (n_layer, n_ctx, n_embd_kv)
    std::vector<float> m_v;  // (n_layer, n_ctx, n_embd_kv)
    int32_t m_n_embd_hidden = 0;
    std::vector<int32_t> m_hidden_layers;
    std::vector<float> m_hidden;  // (n_ctx, n_embd_hidden) when kept
};

}  // namespace speculum::model
