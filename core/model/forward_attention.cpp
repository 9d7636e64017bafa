// Masked multi-head attention with grouped KV heads over the KV cache: each new token i attends the cached slots
// (all, or ForwardOptions::cached_slots) and the new slots n_past + j its mask row allows; in a sliding-window layer
// only those whose position is within the window (a cached slot s holds position s: the engine commits tokens at
// the positions of their slots). Scores are scaled by Hparams::query_scale() and soft-capped where the model says.
// Reference path: two-pass softmax over a score buffer, one thread. Fast path: one-pass online softmax (no
// scratch) with (token, block of heads) items spread over threads; on AVX-512 CPUs kernels::attend runs each item.
// Attention sinks (gpt-oss): head h's softmax also counts exp(sink_h), a logit that attends nothing, so its weights
// sum to less than 1 (ggml's soft_max with sinks).
#include "core/model/forward.h"

#include "core/parallel.h"
#include "core/thread_team.h"
#include "kernels/attention.h"
#include "kernels/delta_net.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace speculum::model {

namespace {

// Batches at least this large (prompts) take the GEMM attention of the fast path when they attend every cached slot;
// so do smaller batches over at least kGemmAttentionMinCached cached slots (a long context) on CPUs without
// kernels::attend. With it, decode and verification passes stay on the online kernel at every context length: a
// token's attention then depends only on its own slots, not on how many tokens share its pass or where the pass
// started (the GEMM path switched at 256 cached slots, so a verification pass that started below 256 and the plain
// decode step of the same position computed it differently). At 900 cached slots the kernel is as fast as the GEMMs
// for a decode step and faster for 4 tokens (docs/performance-notebook.md, "Session 20").
constexpr int32_t kGemmAttentionMin       = 32;
constexpr int32_t kGemmAttentionMinCached = 256;
// Tokens per score block of the GEMM attention: the causal triangle above a block is skipped, and a block's scores
// against a 4096-slot context take 1 MiB.
constexpr int32_t kGemmAttentionRows = 64;

// dot(a, b) with independent partial sums so the compiler can vectorize without -ffast-math (kernels::dot_f32).
inline float dot(const float* a, const float* b, int32_t n) {
    return kernels::dot_f32(a, b, n);
}

}  // namespace

void InferenceContext::attention(int32_t il, int32_t n, int32_t n_past, const uint8_t* mask,
                                 const ForwardOptions& opts) {
    const Hparams& hp                = m_model.hparams();
    const int32_t hd                 = hp.head_dim();
    const int64_t e                  = hp.n_embd_q();
    const int32_t group              = hp.n_head / hp.n_head_kv;  // query heads per KV head (GQA)
    const float scale                = hp.query_scale();
    const float cap                  = hp.attn_softcap;  // 0 = no soft-capping
    const std::vector<int32_t>* sel  = opts.cached_slots ? &*opts.cached_slots : nullptr;
    const std::vector<float>& sink_v = m_model.weights().layers[static_cast<size_t>(il)].attn_sinks;
    const float* sinks               = hp.attn_sinks ? sink_v.data() : nullptr;  // (n_head) or none
    // Sliding window: token i sees positions > pos_i - n_swa only.
    const bool windowed = hp.is_swa(il);
    auto in_window      = [&](int32_t i, int32_t pos) { return !windowed || m_pos[i] - pos < hp.n_swa; };
    auto score          = [&](float dot_qk) {
        const float s = dot_qk * scale;
        return cap > 0.0f ? cap * std::tanh(s / cap) : s;
    };

    // Calls visit(slot) for every slot token i may attend, cached slots first, in slot order.
    auto for_each_slot = [&](int32_t i, auto&& visit) {
        if (sel) {
            for (int32_t s : *sel)
                if (in_window(i, s)) visit(s);
        } else {
            for (int32_t s = windowed ? std::max(0, m_pos[i] - hp.n_swa + 1) : 0; s < n_past; ++s) visit(s);
        }
        for (int32_t j = 0; j < n; ++j) {
            const bool allowed = mask ? mask[static_cast<size_t>(i) * n + j] != 0 : j <= i;
            if (allowed && in_window(i, m_pos[j])) visit(n_past + j);
        }
    };

    if (m_cfg.path == ForwardPath::reference) {
        for (int32_t i = 0; i < n; ++i) {
            for (int32_t h = 0; h < hp.n_head; ++h) {
                const float* q  = &m_q[i * e + h * hd];
                float* out      = &m_attn[i * e + h * hd];
                const int64_t o = static_cast<int64_t>(h / group) * hd;  // KV head offset in a slot row
                // Pass 1: scaled scores and their maximum.
                int32_t m   = 0;
                float max_s = -std::numeric_limits<float>::infinity();
                for_each_slot(i, [&](int32_t s) {
                    const float* k = m_kv.k(il, s) + o;
                    float sc       = 0.0f;
                    for (int32_t d = 0; d < hd; ++d) sc += q[d] * k[d];
                    m_scores[m++] = score(sc);
                    max_s         = std::max(max_s, m_scores[m - 1]);
                });
                // Pass 2: softmax weights and the weighted sum of values.
                if (sinks) max_s = std::max(max_s, sinks[h]);
                double sum = sinks ? std::exp(double(sinks[h]) - max_s) : 0.0;
                for (int32_t t = 0; t < m; ++t) sum += (m_scores[t] = std::exp(m_scores[t] - max_s));
                std::fill(out, out + hd, 0.0f);
                int32_t t = 0;
                for_each_slot(i, [&](int32_t s) {
                    const float* v = m_kv.v(il, s) + o;
                    const float p  = static_cast<float>(m_scores[t++] / sum);
                    for (int32_t d = 0; d < hd; ++d) out[d] += p * v[d];
                });
            }
        }
        return;
    }

    // Fast path, batches of kGemmAttentionMin+ tokens (prompts) or, without kernels::attend, over
    // kGemmAttentionMinCached+ cached slots (decode and verification in a long context), attending all cached slots:
    // per query head and block of kGemmAttentionRows tokens, the scores against the slots the block may see as one
    // SGEMM, masked and soft-maxed row by row, then one SGEMM with the values. Without a mask (causal) a block sees
    // the n_past cached slots and the new ones up to its last token, so the masked triangle above the block is never
    // computed; inside the block's square the masked entries are computed and discarded. The GEMMs win by far over
    // per-pair dot products (docs/performance-notebook.md, "Session 13").
    const bool long_context = n_past >= kGemmAttentionMinCached && !kernels::attend_fast_available(hd);
    if (!sel && (n >= kGemmAttentionMin || long_context)) {
        const int32_t m      = n_past + n;      // slots every row may see before masking
        const int64_t ekv    = hp.n_embd_kv();  // row stride of the cache
        const int32_t blocks = (n + kGemmAttentionRows - 1) / kGemmAttentionRows;
        const bool plain     = !mask && !windowed && cap <= 0.0f;  // causal, no window, no soft-cap
        openblas_set_num_threads(1);                               // BLAS runs inside TBB tasks
        parallel_for(0, static_cast<int64_t>(hp.n_head) * blocks, 1, [&](int64_t item0, int64_t item1) {
            thread_local std::vector<float> scores;  // (rows, mb)
            scores.resize(static_cast<size_t>(std::min(n, kGemmAttentionRows)) * static_cast<size_t>(m));
            for (int64_t item = item0; item < item1; ++item) {
                const int64_t h    = item / blocks;
                const int32_t i0   = static_cast<int32_t>(item % blocks) * kGemmAttentionRows;
                const int32_t rows = std::min(kGemmAttentionRows, n - i0);
                const int32_t mb   = mask ? m : n_past + i0 + rows;  // the slots the block's rows may see
                const int64_t o    = (h / group) * hd;               // KV head offset in a slot row
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, mb, hd, 1.0f, &m_q[i0 * e + h * hd],
                            static_cast<int>(e), m_kv.k(il, 0) + o, static_cast<int>(ekv), 0.0f, scores.data(), mb);
                for (int32_t r = 0; r < rows; ++r) {
                    const int32_t i = i0 + r;
                    float* row      = &scores[static_cast<size_t>(r) * mb];
                    // Causal rows see no slot past their own: those are zero weights, with no exp to take.
                    const int32_t lim = mask ? mb : n_past + i + 1;
                    float max_s       = -std::numeric_limits<float>::infinity();
                    if (plain) {  // every slot below lim seen, scores only scaled: a loop the compiler vectorizes
                        for (int32_t s = 0; s < lim; ++s) max_s = std::max(max_s, row[s] *= scale);
                    } else {
                        for (int32_t s = 0; s < lim; ++s) {
                            const bool cached = s < n_past;
                            const int32_t j   = s - n_past;
                            const bool seen   = cached ? in_window(i, s)
                                                       : (mask ? mask[static_cast<size_t>(i) * n + j] != 0 : j <= i) &&
                                                           in_window(i, m_pos[j]);
                            row[s]            = seen ? score(row[s]) : -std::numeric_limits<float>::infinity();
                            max_s             = std::max(max_s, row[s]);
                        }
                    }
                    if (sinks) max_s = std::max(max_s, sinks[h]);
                    float sum = sinks ? std::exp(sinks[h] - max_s) : 0.0f;
                    for (int32_t s = 0; s < lim; ++s) sum += (row[s] = std::exp(row[s] - max_s));
                    const float inv = 1.0f / sum;
                    for (int32_t s = 0; s < lim; ++s) row[s] *= inv;
                    std::fill(row + lim, row + mb, 0.0f);
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, hd, mb, 1.0f, scores.data(), mb,
                            m_kv.v(il, 0) + o, static_cast<int>(ekv), 0.0f, &m_attn[i0 * e + h * hd],
                            static_cast<int>(e));
            }
        });
        return;
    }

    // Fast path: online softmax. For each visited slot, if its score raises the running maximum, rescale what has
    // been accumulated so far; the output row doubles as the accumulator. Work items are (token, block of up to
    // kHeadsPerItem heads), and each item walks the slots once, visiting its heads inside: a slot's K and V rows are
    // read as contiguous runs of the block's heads instead of one 64-float piece per head at a stride of the whole
    // row, which left decode attention waiting on cache misses. Each head sees the same operations in the same
    // order as when heads were items of their own.
    constexpr int32_t kHeadsPerItem = 8;
    const int32_t blocks            = (hp.n_head + kHeadsPerItem - 1) / kHeadsPerItem;
    if (kernels::attend_fast_available(hd)) {  // the same online softmax as the loop below, in kernels/attention.h
        const int64_t ekv = hp.n_embd_kv();
        team_for(0, static_cast<int64_t>(n) * blocks, 1, [&](int64_t lo, int64_t hi) {
            thread_local std::vector<int32_t> slots;  // the slots token i attends, in visiting order
            for (int64_t item = lo; item < hi; ++item) {
                const int32_t i  = static_cast<int32_t>(item / blocks);
                const int32_t h0 = static_cast<int32_t>(item % blocks) * kHeadsPerItem;
                const int32_t nh = std::min(kHeadsPerItem, hp.n_head - h0);
                int64_t kv_off[kHeadsPerItem];
                for (int32_t b = 0; b < nh; ++b) kv_off[b] = static_cast<int64_t>((h0 + b) / group) * hd;
                slots.clear();
                for_each_slot(i, [&](int32_t s) { slots.push_back(s); });
                kernels::attend(&m_attn[i * e + h0 * hd], &m_q[i * e + h0 * hd], m_kv.k(il, 0), m_kv.v(il, 0), ekv,
                                kv_off, slots.data(), static_cast<int32_t>(slots.size()), nh, hd, scale, cap,
                                sinks ? sinks + h0 : nullptr);
            }
        });
        return;
    }
    team_for(0, static_cast<int64_t>(n) * blocks, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t item = lo; item < hi; ++item) {
            const int32_t i  = static_cast<int32_t>(item / blocks);
            const int32_t h0 = static_cast<int32_t>(item % blocks) * kHeadsPerItem;
            const int32_t nh = std::min(kHeadsPerItem, hp.n_head - h0);
            float max_s[kHeadsPerItem], sum[kHeadsPerItem];
            for (int32_t b = 0; b < nh; ++b) max_s[b] = -std::numeric_limits<float>::infinity(), sum[b] = 0.0f;
            std::fill(&m_attn[i * e + h0 * hd], &m_attn[i * e + (h0 + nh) * hd], 0.0f);
            for_each_slot(i, [&](int32_t s) {
                const float* k_row = m_kv.k(il, s);
                const float* v_row = m_kv.v(il, s);
                for (int32_t b = 0; b < nh; ++b) {
                    const int32_t h = h0 + b;
                    const float* q  = &m_q[i * e + h * hd];
                    float* acc      = &m_attn[i * e + h * hd];
                    const int64_t o = static_cast<int64_t>(h / group) * hd;
                    const float sc  = score(dot(q, k_row + o, hd));
                    if (sc > max_s[b]) {
                        const float r = std::exp(max_s[b] - sc);  // 0 on the first slot
                        for (int32_t d = 0; d < hd; ++d) acc[d] *= r;
                        sum[b] *= r;
                        max_s[b] = sc;
                    }
                    const float p  = std::exp(sc - max_s[b]);
                    const float* v = v_row + o;
                    for (int32_t d = 0; d < hd; ++d) acc[d] += p * v[d];
                    sum[b] += p;
                }
            });
            for (int32_t b = 0; b < nh; ++b) {
                float* acc      = &m_attn[i * e + (h0 + b) * hd];
                const float inv = 1.0f / (sum[b] + (sinks ? std::exp(sinks[h0 + b] - max_s[b]) : 0.0f));
                for (int32_t d = 0; d < hd; ++d) acc[d] *= inv;
            }
        }
    });
}

}  // namespace speculum::model
