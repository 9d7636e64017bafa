// KV cache bookkeeping: capacity checks, rollback and tree-path compaction.
#include "core/model/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace speculum::model {

KvCache::KvCache(int32_t n_layer, int32_t n_ctx, int32_t n_embd_kv)
    : KvCache(n_layer, n_ctx, n_embd_kv, std::vector<uint8_t>(size_t(std::max(0, n_layer)), 1), RecurrentState{}) {}

KvCache::KvCache(int32_t n_layer, int32_t n_ctx, int32_t n_embd_kv, const std::vector<uint8_t>& has_kv,
                 RecurrentState state)
    : m_n_layer(n_layer), m_n_ctx(n_ctx), m_n_embd_kv(n_embd_kv), m_state(std::move(state)) {
    if (n_layer <= 0 || n_ctx <= 0 || n_embd_kv <= 0)
        throw std::invalid_argument("KvCache: n_layer, n_ctx and n_embd_kv must be positive (got " +
                                    std::to_string(n_layer) + ", " + std::to_string(n_ctx) + ", " +
                                    std::to_string(n_embd_kv) + ")");
    if (has_kv.size() != size_t(n_layer)) throw std::invalid_argument("KvCache: has_kv needs one flag per layer");
    m_kv_index.assign(size_t(n_layer), -1);
    for (int32_t il = 0; il < n_layer; ++il)
        if (has_kv[size_t(il)]) m_kv_index[size_t(il)] = m_n_kv_layers++;
    const size_t n = static_cast<size_t>(m_n_kv_layers) * n_ctx * n_embd_kv;
    m_k.assign(n, 0.0f);
    m_v.assign(n, 0.0f);
}

void KvCache::reserve_slots(int32_t n) const {
    if (n < 0 || n > m_n_ctx - m_size)
        throw KvCacheFull("KV cache full: " + std::to_string(m_size) + " + " + std::to_string(n) +
                          " tokens exceed the context length " + std::to_string(m_n_ctx));
}

void KvCache::grow(int32_t n) {
    reserve_slots(n);
    m_size += n;
}

void KvCache::truncate(int32_t n) {
    if (n < 0 || n > m_size)
        throw std::out_of_range("KvCache::truncate(" + std::to_string(n) + "): cache holds " + std::to_string(m_size) +
                                " tokens");
    if (!m_state.empty()) m_state.truncate(m_size, n);
    m_size = n;
}

void KvCache::compact(int32_t n_prefix, const std::vector<int32_t>& keep) {
    if (n_prefix < 0 || n_prefix > m_size)
        throw std::out_of_range("KvCache::compact: prefix " + std::to_string(n_prefix) + " outside [0, " +
                                std::to_string(m_size) + "]");
    int32_t prev = n_prefix - 1;
    for (int32_t s : keep) {
        if (s <= prev || s >= m_size)
            throw std::out_of_range("KvCache::compact: keep indices must be strictly increasing in [" +
                                    std::to_string(n_prefix) + ", " + std::to_string(m_size) + "), got " +
                                    std::to_string(s));
        prev = s;
    }
    if (!m_state.empty()) m_state.compact(m_size, n_prefix, keep);
    // Destination slot n_prefix + i <= keep[i], so moving in increasing order never overwrites a source
    // that is still needed.
    const size_t row = static_cast<size_t>(m_n_embd_kv) * sizeof(float);
    for (int32_t il = 0; il < m_n_layer; ++il) {
        if (m_kv_index[size_t(il)] < 0) continue;
        for (size_t i = 0; i < keep.size(); ++i) {
            const int32_t dst = n_prefix + static_cast<int32_t>(i);
            if (dst == keep[i]) continue;
            std::memmove(k(il, dst), k(il, keep[i]), row);
            std::memmove(v(il, dst), v(il, keep[i]), row);
        }
    }
    if (has_hidden())
        for (size_t i = 0; i < keep.size(); ++i) {
            const int32_t dst = n_prefix + static_cast<int32_t>(i);
            if (dst != keep[i]) std::memmove(hidden(dst), hidden(keep[i]), size_t(m_n_embd_hidden) * sizeof(float));
        }
    m_size = n_prefix + static_cast<int32_t>(keep.size());
}

void KvCache::keep_hidden(std::vector<int32_t> layers, int32_t n_embd) {
    if (n_embd <= 0) throw std::invalid_argument("KvCache::keep_hidden: n_embd must be positive");
    if (layers.empty()) throw std::invalid_argument("KvCache::keep_hidden: no layers");
    for (int32_t l : layers)
        if (l < 0 || l > m_n_layer)
            throw std::invalid_argument("KvCache::keep_hidden: layer " + std::to_string(l) + " outside [0, " +
                                        std::to_string(m_n_layer) + "]");
    const int32_t width = int32_t(layers.size()) * n_embd;
    if (m_hidden_layers == layers && m_n_embd_hidden == width) return;
    m_hidden_layers = std::move(layers);
    m_n_embd_hidden = width;
    m_hidden.assign(size_t(m_n_ctx) * size_t(width), 0.0f);
}

}  // namespace speculum::model
