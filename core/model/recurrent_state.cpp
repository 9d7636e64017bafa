// Recurrent state of a hybrid model's DeltaNet layers: the floor, per-token snapshots or inputs, and rollback
// (recurrent_state.h).
#include "core/model/recurrent_state.h"

#include "core/clock.h"
#include "kernels/delta_net.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

namespace speculum::model {

const char* to_string(RollbackStrategy s) {
    return s == RollbackStrategy::rerun ? "rerun" : "snapshot";
}

std::optional<RollbackStrategy> parse_rollback_strategy(const std::string& s) {
    if (s == "snapshot") return RollbackStrategy::snapshot;
    if (s == "rerun") return RollbackStrategy::rerun;
    return std::nullopt;
}

DeltaNetShape DeltaNetShape::of(const Hparams& hp) {
    return DeltaNetShape{.d_conv    = hp.ssm_d_conv,
                         .d_state   = hp.ssm_d_state,
                         .n_k_heads = hp.ssm_n_group,
                         .n_v_heads = hp.ssm_dt_rank,
                         .eps       = hp.rms_eps};
}

void delta_net_token(const DeltaNetShape& s, const float* conv_w, float* state, const float* in, float* out,
                     float* scratch, bool reference) {
    const int64_t conv = s.conv_dim(), S = s.d_state;
    const int32_t taps = s.d_conv;
    // The window: the state's d_conv - 1 rows, oldest first, then this token's input.
    const float* window[64] = {};
    for (int32_t j = 0; j + 1 < taps; ++j) window[j] = state + j * conv;
    kernels::causal_conv_silu(conv, taps, conv_w, window, in, scratch);
    if (taps > 1) {
        std::copy(state + conv, state + (taps - 1) * conv, state);  // shift by one row
        std::copy(in, in + conv, state + (taps - 2) * conv);
    }
    for (int32_t h = 0; h < 2 * s.n_k_heads; ++h) kernels::l2_normalize(scratch + h * S, int32_t(S), s.eps);
    const float* q = scratch;
    const float* k = scratch + s.key_dim();
    const float* v = scratch + 2 * s.key_dim();
    const float* g = in + conv;
    const float* b = g + s.n_v_heads;
    float* M       = state + s.conv_state_floats();
    for (int32_t h = 0; h < s.n_v_heads; ++h) {
        const int32_t hk = h % s.n_k_heads;  // llama.cpp repeats the key heads (not interleaved)
        (reference ? kernels::delta_net_head_ref : kernels::delta_net_head)(int32_t(S), M + h * s.head_state_floats(),
                                                                            q + hk * S, k + hk * S, v + h * S, g[h],
                                                                            b[h], out ? out + h * S : nullptr);
    }
}

RecurrentState::RecurrentState(DeltaNetShape shape, std::vector<std::vector<float>> conv_w, RollbackStrategy strategy,
                               int32_t max_rollback, bool reference)
    : m_shape(shape),
      m_layers(int32_t(conv_w.size())),
      m_conv_w(std::move(conv_w)),
      m_strategy(strategy),
      m_max_rollback(max_rollback),
      m_reference(reference) {
    if (m_shape.d_conv < 2 || m_shape.d_conv > 64 || m_shape.d_state < 1 || m_shape.n_k_heads < 1 ||
        m_shape.n_v_heads % m_shape.n_k_heads != 0)
        throw std::invalid_argument("RecurrentState: inconsistent DeltaNet shape");
    if (max_rollback < 1) throw std::invalid_argument("RecurrentState: max_rollback must be >= 1");
    for (const auto& w : m_conv_w)
        if (int64_t(w.size()) != m_shape.conv_dim() * m_shape.d_conv)
            throw std::invalid_argument("RecurrentState: convolution taps of the wrong size");
    m_live.assign(size_t(m_layers) * size_t(m_shape.state_floats()), 0.0f);
    clear();
}

float* RecurrentState::entry(int32_t index) {
    if (index < 0 || index > m_max_rollback) throw std::logic_error("RecurrentState: entry outside the horizon");
    if (m_entries.size() <= size_t(index)) m_entries.resize(size_t(index) + 1);
    std::vector<float>& e = m_entries[size_t(index)];
    const int64_t per     = m_strategy == RollbackStrategy::snapshot ? m_shape.state_floats() : m_shape.input_floats();
    if (e.empty()) e.assign(size_t(m_layers) * size_t(per), 0.0f);
    return e.data();
}

void RecurrentState::clear() {
    std::fill(m_live.begin(), m_live.end(), 0.0f);
    m_keeping = false;
    if (m_layers == 0) return;
    set_floor(0);
}

void RecurrentState::set_floor(int32_t size) {
    m_floor = size, m_span = 0, m_rolled_back = false, m_only_floor = false;
    if (m_strategy == RollbackStrategy::snapshot)
        std::copy(m_live.begin(), m_live.end(), entry(0));
    else
        m_checkpoint = m_live;
}

bool RecurrentState::begin_pass(int32_t size, int32_t n, bool may_keep) {
    ++m_stats.passes;
    m_keeping    = m_armed && may_keep && !m_paused && n <= m_max_rollback;
    m_pass_start = size;
    if (m_rolled_back || size < m_floor || size - m_floor + n > m_max_rollback || (m_only_floor && size != m_floor)) {
        set_floor(size);  // a new speculation begins here
    }
    return m_keeping;
}

float* RecurrentState::kept(int32_t slot, int32_t r) {
    if (m_strategy == RollbackStrategy::snapshot)
        return entry(slot + 1 - m_floor) + size_t(r) * size_t(m_shape.state_floats());
    return entry(slot - m_floor) + size_t(r) * size_t(m_shape.input_floats());
}

void RecurrentState::end_pass(int32_t size, double keep_seconds) {
    m_stats.keep_seconds += keep_seconds;
    if (!m_keeping && m_floor == m_pass_start) {
        // Nothing per token was kept, but the state at the pass's start is: the whole pass can still be undone.
        m_only_floor = true, m_span = size - m_floor;
    } else if (!m_keeping) {  // nothing per token, and older kept data: the speculation can only start after it
        set_floor(size);
    } else {
        const int32_t added = size - m_floor - m_span;
        m_stats.tokens_kept += uint64_t(std::max(0, added));
        m_span = size - m_floor;
    }
    m_stats.peak_bytes = std::max(m_stats.peak_bytes, rollback_bytes());
}

void RecurrentState::commit(int32_t size) {
    if (m_layers == 0) return;
    m_armed = true;  // the context speculates: passes keep what a rollback needs from now on
    if (size == m_floor) return;
    if (size < m_floor || size - m_floor != m_span)  // (a pass that kept nothing has the same span)
        throw std::logic_error("recurrent state: commit at " + std::to_string(size) + " tokens, the state holds " +
                               std::to_string(m_floor + m_span));
    set_floor(size);
}

void RecurrentState::abort_pass(int32_t size) {
    if (m_layers == 0) return;
    std::vector<int32_t> slots;
    for (int32_t s = m_floor; s < size; ++s) slots.push_back(s);
    const RecurrentStats kept = m_stats;
    const bool rolled         = m_rolled_back;
    restore(size, slots);
    m_stats = kept, m_rolled_back = rolled;  // not a rollback of the sequence
}

int32_t RecurrentState::restorable(int32_t size, int32_t n) const {
    if (m_layers == 0 || n >= size) return n;
    if (m_only_floor) return n == m_floor ? n : 0;
    return n >= m_floor ? n : 0;
}

void RecurrentState::restore(int32_t count, const std::vector<int32_t>& slots) {
    const auto t0 = measure_clock::now();
    if (m_strategy == RollbackStrategy::snapshot) {
        const float* e = entry(count - m_floor);
        std::copy(e, e + m_live.size(), m_live.begin());
    } else {
        // Back to the checkpoint, then the recurrence over the kept tokens' inputs (no outputs needed).
        m_live = m_checkpoint;
        std::vector<float> scratch(size_t(m_shape.conv_dim()));
        for (int32_t slot : slots) {
            const float* in = entry(slot - m_floor);
            for (int32_t r = 0; r < m_layers; ++r)
                delta_net_token(m_shape, m_conv_w[size_t(r)].data(), live(r),
                                in + size_t(r) * size_t(m_shape.input_floats()), nullptr, scratch.data(), m_reference);
        }
        m_stats.tokens_rerun += slots.size();
    }
    m_span        = count - m_floor;
    m_rolled_back = true;
    m_only_floor  = false;
    ++m_stats.rollbacks;
    m_stats.restore_seconds += seconds_since(t0);
}

void RecurrentState::truncate(int32_t size, int32_t n) {
    if (m_layers == 0 || n >= size) return;
    if (n == 0 && m_floor > 0) {  // back to the start: the empty sequence's state
        clear();
        return;
    }
    if (n < m_floor || (m_only_floor && n != m_floor))
        throw std::logic_error("recurrent state: cannot roll back to " + std::to_string(n) + " tokens; the oldest " +
                               "state kept is after " + std::to_string(m_floor) + " (KvCache::restorable; a pass " +
                               "longer than ContextConfig.max_rollback = " + std::to_string(m_max_rollback) +
                               " keeps nothing to roll back, and so does every pass before the first "
                               "KvCache::commit)");
    std::vector<int32_t> slots;
    for (int32_t s = m_floor; s < n; ++s) slots.push_back(s);
    restore(n, slots);
}

void RecurrentState::compact(int32_t size, int32_t n_prefix, const std::vector<int32_t>& keep) {
    if (m_layers == 0) return;
    bool identity = n_prefix + int32_t(keep.size()) == size;
    for (size_t i = 0; identity && i < keep.size(); ++i) identity = keep[i] == n_prefix + int32_t(i);
    if (identity) return;
    if (n_prefix < m_floor || (m_only_floor && !(n_prefix == m_floor && keep.empty())))
        throw std::logic_error("recurrent state: cannot compact from " + std::to_string(n_prefix) +
                               " tokens; the oldest state kept is after " + std::to_string(m_floor));
    // Move each kept token's stored state (snapshot) or inputs (rerun) to its new slot, in increasing order (the
    // destination is never after the source).
    const bool snap = m_strategy == RollbackStrategy::snapshot;
    for (size_t i = 0; i < keep.size(); ++i) {
        const int32_t dst = n_prefix + int32_t(i);
        if (dst == keep[i]) continue;
        const int32_t from = keep[i] - m_floor + (snap ? 1 : 0), to = dst - m_floor + (snap ? 1 : 0);
        const size_t len = m_entries.at(size_t(from)).size();
        std::copy(entry(from), entry(from) + len, entry(to));
    }
    const int32_t count = n_prefix + int32_t(keep.size());
    std::vector<int32_t> slots;
    for (int32_t s = m_floor; s < count; ++s) slots.push_back(s);
    restore(count, slots);
}

uint64_t RecurrentState::rollback_bytes() const {
    if (m_layers == 0) return 0;
    const uint64_t per =
        uint64_t(m_layers) *
        uint64_t(m_strategy == RollbackStrategy::snapshot ? m_shape.state_floats() : m_shape.input_floats()) *
        sizeof(float);
    // Entries in use: snapshot: the floor's state and one per kept count; rerun: the checkpoint and one per slot.
    // (After a pass that kept nothing, only the floor's state: no per-token entries.)
    const uint64_t kept = m_only_floor ? 0 : uint64_t(m_span);
    const uint64_t used = m_strategy == RollbackStrategy::snapshot ? kept + 1 : kept;
    return used * per + (m_strategy == RollbackStrategy::rerun ? m_checkpoint.size() * sizeof(float) : 0);
}

}  // namespace speculum::model
