// A hybrid model's Gated DeltaNet layer in the forward pass (llama.cpp's qwen35 build_layer_attn_linear): the
// projections of the normed stream, the causal convolution over each token's path, the gated delta rule per value
// head on the recurrent state, the per-head RMS norm gated by SiLU(z), and the output projection. A pass under a
// token-tree mask runs each node from its parent's state (per-branch states in scratch); a causal pass runs the live
// state in place. What a rollback needs is kept per token as the context's strategy says (recurrent_state.h).
#include "core/model/forward.h"

#include "core/clock.h"
#include "core/model/rope.h"
#include "core/thread_team.h"
#include "kernels/delta_net.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

namespace speculum::model {

namespace {

float softplus(float x) {
    return x > 20.0f ? x : std::log(1.0f + std::exp(x));
}  // ggml's
float sigmoid(float x) {
    return 1.0f / (1.0f + std::exp(-x));
}

}  // namespace

std::vector<int32_t> tree_parents(const uint8_t* mask, int32_t n) {
    std::vector<int32_t> parent(size_t(n), -1);
    for (int32_t i = 0; i < n; ++i) {
        if (!mask) {
            parent[size_t(i)] = i - 1;
            continue;
        }
        const uint8_t* row = mask + size_t(i) * size_t(n);
        for (int32_t j = i - 1; j >= 0 && parent[size_t(i)] < 0; --j)
            if (row[j]) parent[size_t(i)] = j;
        // A recurrent state follows one path: the row must be exactly its parent's row plus the token itself.
        const int32_t p = parent[size_t(i)];
        for (int32_t j = 0; j < n; ++j) {
            const bool want = j == i || (p >= 0 && (j == p || mask[size_t(p) * size_t(n) + size_t(j)]));
            if ((row[j] != 0) != want)
                throw std::invalid_argument("forward_batch: mask row " + std::to_string(i) +
                                            " is not a token tree (a hybrid model's recurrent layers need each token "
                                            "to see exactly its parent's tokens and itself)");
        }
    }
    return parent;
}

void InferenceContext::delta_net(int32_t il, const LayerWeights& L, const float* xin, int32_t n,
                                 const std::vector<int32_t>& parent, ForwardCost& cost) {
    const Hparams& hp      = m_model.hparams();
    const DeltaNetShape& s = m_kv.recurrent().shape();
    RecurrentState& rs     = m_kv.recurrent();
    const int32_t r        = m_rec_index[size_t(il)];
    const int64_t conv = s.conv_dim(), vd = s.value_dim(), S = s.d_state, e = hp.n_embd, in_w = s.input_floats();
    const int32_t hv = s.n_v_heads, taps = s.d_conv;
    const bool ref       = m_cfg.path == ForwardPath::reference;
    const int32_t n_past = m_kv.size();

    // Projections: raw q k v (into each token's input row), z, beta, alpha.
    const MatmulJob proj[] = {{m_dn_in.data(), in_w, &L.ssm_qkv},
                              {m_dn_z.data(), vd, &L.ssm_z},
                              {m_dn_ba.data(), 2 * hv, &L.ssm_beta},
                              {m_dn_ba.data() + hv, 2 * hv, &L.ssm_alpha}};
    matmul_group(proj, xin, n);
    for (const WeightView* w : {&L.ssm_qkv, &L.ssm_z, &L.ssm_beta, &L.ssm_alpha, &L.ssm_out}) {
        cost.bytes_weights += w->n_bytes();
        cost.flops += 2.0 * double(w->rows) * double(w->cols) * n;
    }
    // The input row's tail: the log-decay g = softplus(alpha + dt) a (a = -exp(A_log)) and beta = sigmoid(beta).
    for (int32_t i = 0; i < n; ++i) {
        float* in       = &m_dn_in[size_t(i) * size_t(in_w)];
        const float* ba = &m_dn_ba[size_t(i) * size_t(2 * hv)];
        for (int32_t h = 0; h < hv; ++h) {
            in[conv + h]      = softplus(ba[hv + h] + L.ssm_dt[size_t(h)]) * L.ssm_a[size_t(h)];
            in[conv + hv + h] = sigmoid(ba[h]);
        }
    }

    // The convolution: token i's window is the d_conv - 1 inputs before it on its path, older ones from the live
    // convolution state (rows oldest first). Computed for every token before the live state changes.
    float* live    = rs.live(r);
    float* live_M  = live + s.conv_state_floats();
    auto window_of = [&](int32_t i, const float** w, bool including_self) {
        // w[0 .. taps-2], oldest first: walk back along the parents from i (or its parent), then the live rows.
        int32_t at  = including_self ? i : parent[size_t(i)];
        int32_t row = taps - 2;  // the next live row to take once the path leaves the pass
        for (int32_t j = taps - 2; j >= 0; --j) {
            if (at >= 0) {
                w[j] = &m_dn_in[size_t(at) * size_t(in_w)];
                at   = parent[size_t(at)];
            } else {
                w[j] = live + (row--) * conv;
            }
        }
    };
    const float* window[64];
    for (int32_t i = 0; i < n; ++i) {
        window_of(i, window, false);
        float* out = &m_dn_conv[size_t(i) * size_t(conv)];
        kernels::causal_conv_silu(conv, taps, L.ssm_conv1d.data(), window, &m_dn_in[size_t(i) * size_t(in_w)], out);
        for (int32_t h = 0; h < 2 * s.n_k_heads; ++h) kernels::l2_normalize(out + h * S, int32_t(S), s.eps);
    }
    cost.flops += 2.0 * double(conv) * taps * n;

    // What a rollback needs, per token: snapshot: the state it leaves (its path's last inputs, then the matrices,
    // written head by head below); rerun: its inputs.
    const auto t_keep0 = measure_clock::now();
    const bool snap    = m_keeping && rs.strategy() == RollbackStrategy::snapshot;
    if (m_keeping && !snap)
        for (int32_t i = 0; i < n; ++i) std::copy_n(&m_dn_in[size_t(i) * size_t(in_w)], in_w, rs.kept(n_past + i, r));
    if (snap)
        for (int32_t i = 0; i < n; ++i) {
            window_of(i, window, true);
            float* dst = rs.kept(n_past + i, r);
            for (int32_t j = 0; j + 1 < taps; ++j) std::copy_n(window[j], conv, dst + j * conv);
        }
    double keep_seconds = seconds_since(t_keep0);

    // The delta rule, head by head (heads are independent): a causal pass in place on the live matrices; a tree from
    // each node's parent's matrices, kept per node in scratch.
    const bool tree = !m_dn_chain;
    if (tree && m_dn_tree.size() < size_t(n) * size_t(s.ssm_state_floats()))
        m_dn_tree.resize(size_t(n) * size_t(s.ssm_state_floats()));
    const int64_t hs = s.head_state_floats();
    auto head_fn     = ref ? kernels::delta_net_head_ref : kernels::delta_net_head;
    // A snapshot's matrix copies run inside the heads' loop, timed there. (Its entries were allocated above, so
    // concurrent kept() calls only read.)
    std::atomic<int64_t> copy_ns{0};
    auto run_heads = [&](int64_t h0, int64_t h1) {
        int64_t ns = 0;
        for (int64_t h = h0; h < h1; ++h) {
            const int64_t hk = h % s.n_k_heads;
            for (int32_t i = 0; i < n; ++i) {
                const float* c  = &m_dn_conv[size_t(i) * size_t(conv)];
                const float* in = &m_dn_in[size_t(i) * size_t(in_w)];
                float* M        = live_M + h * hs;
                if (tree) {
                    const int32_t p = parent[size_t(i)];
                    const float* from =
                        p >= 0 ? &m_dn_tree[(size_t(p) * size_t(hv) + size_t(h)) * size_t(hs)] : live_M + h * hs;
                    M = &m_dn_tree[(size_t(i) * size_t(hv) + size_t(h)) * size_t(hs)];
                    std::copy_n(from, hs, M);
                }
                head_fn(int32_t(S), M, c + hk * S, c + s.key_dim() + hk * S, c + 2 * s.key_dim() + h * S, in[conv + h],
                        in[conv + hv + h], &m_dn_o[size_t(i) * size_t(vd) + size_t(h * S)]);
                if (snap) {
                    const auto t0 = measure_clock::now();
                    std::copy_n(M, hs, rs.kept(n_past + i, r) + s.conv_state_floats() + h * hs);
                    ns += std::chrono::duration_cast<std::chrono::nanoseconds>(measure_clock::now() - t0).count();
                }
            }
        }
        copy_ns += ns;
    };
    if (ref || double(hs) * hv * n < 65536.0)
        run_heads(0, hv);
    else
        team_for(0, hv, 1, run_heads);
    cost.flops += 6.0 * double(hs) * hv * n;
    cost.bytes_state += uint64_t(2 * s.state_floats()) * sizeof(float);  // the live state read and written
    if (m_keeping) cost.bytes_state += uint64_t(n) * uint64_t(snap ? s.state_floats() : in_w) * sizeof(float);

    // The live state after the pass: the last token's (a tree's last node; compact puts the accepted path's).
    {
        window_of(n - 1, window, true);
        std::vector<float>& tmp = m_dn_window;  // the window may point into the live rows it replaces
        tmp.resize(size_t(taps - 1) * size_t(conv));
        for (int32_t j = 0; j + 1 < taps; ++j) std::copy_n(window[j], conv, &tmp[size_t(j) * size_t(conv)]);
        std::copy(tmp.begin(), tmp.end(), live);
        if (tree) std::copy_n(&m_dn_tree[size_t(n - 1) * size_t(hv) * size_t(hs)], hv * hs, live_M);
    }
    m_dn_keep_seconds += keep_seconds + double(copy_ns.load()) * 1e-9;

    // Output: each head's RMS norm (ssm_norm) times SiLU(z), then ssm_out into m_xn.
    for (int32_t i = 0; i < n; ++i)
        for (int32_t h = 0; h < hv; ++h) {
            float* o       = &m_dn_o[size_t(i) * size_t(vd) + size_t(h * S)];
            const float* z = &m_dn_z[size_t(i) * size_t(vd) + size_t(h * S)];
            rms_norm(o, o, L.ssm_norm.data(), S, hp.rms_eps);
            for (int64_t c = 0; c < S; ++c) o[c] *= z[c] / (1.0f + std::exp(-z[c]));
        }
    matmul(m_xn.data(), e, L.ssm_out, m_dn_o.data(), n);
}

}  // namespace speculum::model
