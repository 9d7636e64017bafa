// The matmul dispatch of the forward pass (forward.h): which kernel multiplies a weight matrix by n activation vectors
// (row_kernel), the int8 / BF16 activation layouts it needs, row tiles over threads, and the OpenBLAS path for prompts.
// Moved out of forward.cpp, which keeps the layer loop.
#include "core/model/forward.h"

#include "core/hw/large_pages.h"
#include "core/model/rope.h"
#include "core/parallel.h"
#include "core/thread_team.h"
#include "kernels/compact.h"
#include "kernels/gemm_bf16.h"
#include "kernels/gemm_f16.h"
#include "kernels/gemv.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

namespace speculum::model {

namespace {
// Batches at least this large go through OpenBLAS SGEMM on dequantized tiles instead of kernels::gemm, for weight
// types without an integer-dot kernel (F16, BF16, F32); the others stay on the int8 kernels at every batch size.
constexpr int32_t kBlasMinBatch = 64;
// The int8 kernels take the tokens of a large batch (a prompt) this many at a time, each row tile of the weights
// staying in cache across the chunks: their per-token cost is flat from about 32 tokens on, and 4x the MACs per
// instruction of f32 SGEMM (docs/performance-notebook.md, "Session 13").
constexpr int32_t kQ8ActChunk    = 64;
constexpr int64_t kBlasTileBytes = 2 << 20;  // f32 weight tile per SGEMM call: large enough to amortise packing
}  // namespace

// ---- matmul dispatch: Y[i][0..rows) = W x_i for i < n; Y has row stride ldy ----

namespace {

// parallel_for over rows [0, rows) in whole tiles of kDecodeTileRows (the last task takes the ragged end). The int8
// kernels decode in 8-row tiles and give the rows left over at a task's end to smaller, slower tiles: with tasks of
// any size, up to 7 rows in every ~24 went there (docs/performance-notebook.md, "Session 8"). A row's result does not
// depend on the tile it is computed in, so this changes timing only.
constexpr int64_t kDecodeTileRows = 8;
// Rows a strict-subset target decodes per dense-kernel call (a multiple of kDecodeTileRows; 8 measured the same).
constexpr int64_t kSplitChunkRows = 32;
template <class Fn>
void parallel_for_tiles(int64_t rows, int64_t grain, Fn&& fn) {
    const int64_t tiles = (rows + kDecodeTileRows - 1) / kDecodeTileRows;
    parallel_for(0, tiles, std::max<int64_t>(1, grain / kDecodeTileRows),
                 [&](int64_t t0, int64_t t1) { fn(t0 * kDecodeTileRows, std::min(rows, t1 * kDecodeTileRows)); });
}

// The tokens of a batch in chunks of kQ8ActChunk, for the reduced-precision kernels inside one row task:
// fn(i0, m) multiplies tokens [i0, i0 + m), so the task's rows stay in cache across the chunks of a prompt.
template <class Fn>
void for_token_chunks(int32_t n, Fn&& fn) {
    for (int32_t i0 = 0; i0 < n; i0 += kQ8ActChunk) fn(i0, std::min(kQ8ActChunk, n - i0));
}

// Large batches (prefill): `fill(tile, r0, r1)` writes rows [r0, r1) of w as f32 into a per-thread tile, and
// OpenBLAS multiplies it by all n activation vectors: Y[:, r0..r1) = X (n, cols) * tile^T. BLAS runs inside TBB
// tasks here, so it must not start threads of its own.
template <class Fill>
void blas_tiles(float* y, int64_t ldy, const WeightView& w, const float* x, int32_t n, Fill&& fill) {
    openblas_set_num_threads(1);
    // At most kBlasTileBytes of f32 per tile, and at least two tiles per thread: a matrix of one tile (the K and V
    // projections of a 1024-wide model) ran on one thread while the others waited.
    const int64_t per_thread = (w.rows + 2 * region_threads() - 1) / (2 * region_threads());
    const int64_t tile_rows =
        std::max<int64_t>(16, std::min<int64_t>(kBlasTileBytes / (w.cols * static_cast<int64_t>(sizeof(float))),
                                                (per_thread + 15) / 16 * 16));
    parallel_for(0, w.rows, tile_rows, [&](int64_t r0, int64_t r1) {
        // (r1 - r0, cols) f32; grows to the largest tile once per thread. In 2 MiB pages where the kernel gives them:
        // the first prompt pays one page fault per tile instead of 512 (14 us each on this project's VM: 4 % of a
        // 512-token F16 prompt, measured before F16 prompts had their own kernel).
        thread_local hw::LargePageBuffer tile_mem;
        const uint64_t need = static_cast<uint64_t>((r1 - r0) * w.cols) * sizeof(float);
        if (tile_mem.size() < need) tile_mem = hw::LargePageBuffer(std::max<uint64_t>(need, kBlasTileBytes));
        float* tile = reinterpret_cast<float*>(tile_mem.data());
        fill(tile, r0, r1);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, static_cast<int>(r1 - r0), static_cast<int>(w.cols),
                    1.0f, x, static_cast<int>(w.cols), tile, static_cast<int>(w.cols), 0.0f, y + r0,
                    static_cast<int>(ldy));
    });
}

}  // namespace

// The fast paths below prompt size (and the int8 / BF16-activation paths at every size) prepare the activations once,
// then multiply row ranges in parallel; RowKernel names them, so products that share their input (q, k, v; gate,
// up) can share the prepared activations and one parallel region (matmul_group). The other paths (the reference,
// OpenBLAS tiles for prompts, compact prompt tiles) are `none` and run one product at a time in matmul().
InferenceContext::RowKernel InferenceContext::row_kernel(const WeightView& w, int32_t n) const {
    if (m_cfg.path == ForwardPath::reference) return RowKernel::none;
    const bool int8 = m_cfg.int8_activations;
    if (w.rest) {  // a strict-subset target: the dense BF16 kernel's choice, on rows decoded per tile
        if (int8 && kernels::gemm_bf16act_available()) return RowKernel::split_bf16act;
        return n < kBlasMinBatch ? RowKernel::split_f32 : RowKernel::none;
    }
    if (w.compact) {
        if (int8 && kernels::gemm_prefers_q8act(w.type)) return RowKernel::compact_q8act;  // every batch size
        // BF16 rows below prompt size, where this CPU runs it faster (compact_bf16act_preferred: sparse rows on AMD):
        // the fused kernel multiplies the decoded words by BF16-rounded activations packed in their pair order
        // (vdpbf16ps), as the dense BF16 path rounds them; no widening, half the multiplies. Else the fused f32 one.
        if (int8 && n < kBlasMinBatch && kernels::compact_bf16act_chosen(*w.compact)) return RowKernel::compact_bf16act;
        return n < kBlasMinBatch ? RowKernel::compact_f32 : RowKernel::none;
    }
    if (int8 && w.type == kernels::GgmlType::Q8_0_X8) return RowKernel::q8act_x8;  // repacked Q8_0
    if (int8 && kernels::q8act_k_preferred(w.type)) return RowKernel::q8act_k;     // K-quants, every batch size
    if (int8 && kernels::gemm_prefers_q8act(w.type)) return RowKernel::q8act;
    // BF16 weights on CPUs with vdpbf16ps, every batch size: BF16-rounded activations, two products per f32 lane
    // (llama.cpp rounds them the same way, for decode too), row tiles kept in cache across chunks of tokens as the
    // int8 path does. One kernel for decode, verification and prompts, so a token's logits do not depend on the
    // batch it is in; decode reads the weights as fast as the f32 kernel and verification passes of 5-8 tokens cost
    // 13-15 % less (docs/performance-notebook.md, "Session 20").
    if (int8 && w.type == kernels::GgmlType::BF16 && kernels::gemm_bf16act_available()) return RowKernel::bf16act;
    return n < kBlasMinBatch ? RowKernel::f32 : RowKernel::none;
}

// Quantizes or rounds the n activation vectors (cols each) once, on this thread, for every task of the region.
void InferenceContext::prepare_activations(RowKernel k, const float* x, int32_t n, int64_t cols) {
    const size_t nn = static_cast<size_t>(n);
    switch (k) {
        case RowKernel::q8act_x8:
            m_q8act.resize(static_cast<size_t>(kernels::q8act_x8_bytes(1, cols)) * nn);
            kernels::quantize_q8act_x8(m_q8act.data(), x, n, cols);
            break;
        case RowKernel::q8act_k:
            m_q8act.resize(static_cast<size_t>(kernels::q8act_k_bytes(1, cols)) * nn);
            kernels::quantize_q8act_k(m_q8act.data(), x, n, cols);
            break;
        case RowKernel::q8act:
        case RowKernel::compact_q8act:
            m_q8act.resize(static_cast<size_t>(kernels::q8act_bytes(1, cols)) * nn);
            kernels::quantize_q8act(m_q8act.data(), x, n, cols);
            break;
        case RowKernel::bf16act:
        case RowKernel::split_bf16act:
            m_bf16act.resize(nn * static_cast<size_t>(cols));
            kernels::round_bf16act(m_bf16act.data(), x, n, cols);
            break;
        case RowKernel::compact_bf16act:
            m_bf16act.resize(nn * static_cast<size_t>(kernels::compact_bf16act_words(cols)));
            kernels::compact_pack_bf16act(m_bf16act.data(), x, n, cols);
            break;
        case RowKernel::f32:
        case RowKernel::compact_f32:
        case RowKernel::split_f32:
        case RowKernel::none:
            break;
    }
}

namespace {
// Tasks over compact matrices of `bytes` in all: at least 64 KiB and about bytes / (2 x threads). Each task streams its
// tiles in order (compact.h), so fewer, longer streams keep the hardware prefetchers going (64 KiB tasks were ~4 %
// slower on Zen 5, Session 23).
uint64_t compact_task_bytes(uint64_t bytes) {
    const uint64_t threads = static_cast<uint64_t>(region_threads());  // what runs the region, -t limits included
    return std::max<uint64_t>(64u << 10, bytes / (2 * threads));
}

// A compact kernel's per-thread scratch, grown to the widest matrix once per thread.
uint8_t* compact_scratch(const kernels::CompactMatrix& cm) {
    thread_local std::vector<uint8_t> buf;
    buf.resize(std::max<size_t>(buf.size(), static_cast<size_t>(kernels::compact_gemm_scratch_bytes(cm))));
    return buf.data();
}
}  // namespace

// Rows [r0, r1) of one product with activations prepared by prepare_activations; the int8 and BF16 kernels take
// the tokens in chunks of kQ8ActChunk so the task's rows stay in cache across the chunks of a prompt.
void InferenceContext::matmul_rows(RowKernel k, const MatmulJob& j, const float* x, int32_t n, int64_t r0, int64_t r1) {
    const WeightView& w = *j.w;
    float* y            = j.y;
    const int64_t ldy   = j.ldy;
    switch (k) {
        case RowKernel::q8act_x8: {
            const uint64_t vec = kernels::q8act_x8_bytes(1, w.cols);
            for_token_chunks(n, [&](int32_t i0, int32_t m) {
                kernels::gemm_q8act_x8(y + i0 * ldy, ldy, w.data, m_q8act.data() + vec * static_cast<uint64_t>(i0), m,
                                       w.cols, r0, r1);
            });
            break;
        }
        case RowKernel::q8act_k: {
            const uint64_t vec = kernels::q8act_k_bytes(1, w.cols);
            for_token_chunks(n, [&](int32_t i0, int32_t m) {
                kernels::gemm_q8act_k(y + i0 * ldy, ldy, w.type, w.data,
                                      m_q8act.data() + vec * static_cast<uint64_t>(i0), m, w.cols, r0, r1);
            });
            break;
        }
        case RowKernel::q8act: {
            const uint64_t vec = kernels::q8act_bytes(1, w.cols);
            for_token_chunks(n, [&](int32_t i0, int32_t m) {
                kernels::gemm_q8act(y + i0 * ldy, ldy, w.type, w.data, m_q8act.data() + vec * static_cast<uint64_t>(i0),
                                    m, w.cols, r0, r1);
            });
            break;
        }
        case RowKernel::bf16act:
            for_token_chunks(n, [&](int32_t i0, int32_t m) {
                kernels::gemm_bf16act(y + i0 * ldy, ldy, w.data, m_bf16act.data() + static_cast<size_t>(i0) * w.cols, m,
                                      w.cols, r0, r1);
            });
            break;
        case RowKernel::f32:
            if (n == 1)
                kernels::gemv(y, w.type, w.data, x, w.cols, r0, r1);
            else
                kernels::gemm(y, ldy, w.type, w.data, x, n, w.cols, r0, r1);
            break;
        case RowKernel::compact_q8act: {
            const uint64_t vec = kernels::q8act_bytes(1, w.cols);
            for_token_chunks(n, [&](int32_t i0, int32_t m) {
                kernels::compact_gemm_q8act(y + i0 * ldy, ldy, *w.compact,
                                            m_q8act.data() + vec * static_cast<uint64_t>(i0), m, r0, r1,
                                            compact_scratch(*w.compact));
            });
            break;
        }
        case RowKernel::compact_bf16act:
            kernels::compact_gemm_bf16act(y, ldy, *w.compact, m_bf16act.data(), n, r0, r1, compact_scratch(*w.compact));
            break;
        case RowKernel::compact_f32:
            kernels::compact_gemm(y, ldy, *w.compact, x, n, r0, r1, compact_scratch(*w.compact));
            break;
        case RowKernel::split_bf16act:
        case RowKernel::split_f32: {
            // A strict-subset target: each tile of rows is decoded (the draft's part and the rest) into scratch and
            // multiplied by the dense BF16 kernel, tile by tile as the dense rows would be, so the results are the
            // dense target's bit for bit.
            const int64_t chunk = kSplitChunkRows;
            thread_local std::vector<uint8_t> scratch;  // the decoded rows of one chunk (L2-resident)
            scratch.resize(std::max<size_t>(scratch.size(), static_cast<size_t>(chunk) * w.row_bytes() + 64));
            uint8_t* buf = scratch.data();
            for (int64_t a = r0; a < r1; a += chunk) {
                const int64_t b = std::min(r1, a + chunk);
                kernels::compact_rest_decode_rows(buf, *w.compact, *w.rest, a, b);
                if (k == RowKernel::split_bf16act)
                    for_token_chunks(n, [&](int32_t i0, int32_t m) {
                        kernels::gemm_bf16act(y + i0 * ldy + a, ldy, buf,
                                              m_bf16act.data() + static_cast<size_t>(i0) * w.cols, m, w.cols, 0, b - a);
                    });
                else if (n == 1)
                    kernels::gemv(y + a, w.type, buf, x, w.cols, 0, b - a);
                else
                    kernels::gemm(y + a, ldy, w.type, buf, x, n, w.cols, 0, b - a);
            }
            break;
        }
        case RowKernel::none:
            break;
    }
}

// Y_j = W_j x for products that share their input x, in one parallel region when they run the same RowKernel over
// the same width: the activations are prepared once, and the products' row tiles lie one after the other in the
// region's range, so a task may end one matrix and start the next. A decode step then forks 5 regions per layer
// instead of 8 (q k v, attention, o, gate up, down). Rows start at tile boundaries of their own matrix, and a row's
// result does not depend on the task it is in, so the results are those of one product at a time.
// (Tried: gate and up sharing one range, each task computing its rows of both and then the gate's activation on them,
// so that SwiGLU ran on both threads. Within the noise of the one-process A/B of docs/performance-notebook.md,
// Session 24.)
void InferenceContext::matmul_group(std::span<const MatmulJob> jobs, const float* x, int32_t n) {
    if (jobs.empty()) return;
    const RowKernel k = row_kernel(*jobs[0].w, n);
    bool fuse         = k != RowKernel::none && jobs.size() <= kMaxGroup;
    for (const MatmulJob& j : jobs) fuse = fuse && row_kernel(*j.w, n) == k && j.w->cols == jobs[0].w->cols;
    if (!fuse) {
        for (const MatmulJob& j : jobs) matmul(j.y, j.ldy, *j.w, x, n);
        return;
    }
    prepare_activations(k, x, n, jobs[0].w->cols);
    // Tasks: dense rows in chunks of about 64 KiB of weights, enough work per task to hide scheduling and many tasks
    // to balance; compact matrices as compact_task_bytes sizes them for the region's bytes.
    std::array<int64_t, kMaxGroup + 1> first{};  // first[j]: the region's tile index of product j's first tile
    uint64_t bytes = 0;
    int64_t rows   = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
        const WeightView& w = *jobs[j].w;
        first[j + 1]        = first[j] + (w.rows + kDecodeTileRows - 1) / kDecodeTileRows;
        bytes += w.n_bytes();
        rows += w.rows;
    }
    const uint64_t row_bytes = std::max<uint64_t>(1, bytes / static_cast<uint64_t>(std::max<int64_t>(1, rows)));
    const uint64_t task      = jobs[0].w->compact ? compact_task_bytes(bytes) : uint64_t{64u << 10};
    const int64_t grain_rows = std::max<int64_t>(jobs[0].w->compact ? 8 : 4, static_cast<int64_t>(task / row_bytes));
    team_for(0, first[jobs.size()], std::max<int64_t>(1, grain_rows / kDecodeTileRows), [&](int64_t t0, int64_t t1) {
        for (size_t j = 0; j < jobs.size(); ++j) {
            const int64_t a = std::max(t0, first[j]), b = std::min(t1, first[j + 1]);
            if (a >= b) continue;
            const int64_t r1 = std::min(jobs[j].w->rows, (b - first[j]) * kDecodeTileRows);
            matmul_rows(k, jobs[j], x, n, (a - first[j]) * kDecodeTileRows, r1);
        }
    });
}

void InferenceContext::matmul(float* y, int64_t ldy, const WeightView& w, const float* x, int32_t n) {
    if (row_kernel(w, n) != RowKernel::none) {
        const MatmulJob j{y, ldy, &w};
        matmul_group({&j, 1}, x, n);
        return;
    }
    if (m_cfg.path == ForwardPath::reference) {
        if (w.rest) {  // a strict-subset target: its dense rows, then the reference dot products
            const std::vector<uint8_t> dense = dense_copy(w);
            for (int32_t i = 0; i < n; ++i)
                kernels::gemv_ref(y + i * ldy, w.type, dense.data(), x + i * w.cols, w.cols, 0, w.rows);
            return;
        }
        if (w.compact) {
            kernels::compact_gemm_ref(y, ldy, *w.compact, x, n, 0, w.rows, compact_scratch(*w.compact));
            return;
        }
        for (int32_t i = 0; i < n; ++i)
            kernels::gemv_ref(y + i * ldy, w.type, w.data, x + i * w.cols, w.cols, 0, w.rows);
        return;
    }
    // Prompts of compact BF16 rows, as dense BF16 prompts: each task decodes its rows, then multiplies them by the
    // BF16-rounded activations.
    if (w.compact && m_cfg.int8_activations && w.type == kernels::GgmlType::BF16 && kernels::gemm_bf16act_available()) {
        const kernels::CompactMatrix& cm = *w.compact;
        m_bf16act.resize(static_cast<size_t>(n) * static_cast<size_t>(w.cols));
        kernels::round_bf16act(m_bf16act.data(), x, n, w.cols);
        const uint64_t avg_row =
            std::max<uint64_t>(1, cm.bytes() / static_cast<uint64_t>(std::max<int64_t>(1, w.rows)));
        const int64_t grain = std::max<int64_t>(8, static_cast<int64_t>(compact_task_bytes(cm.bytes()) / avg_row));
        parallel_for_tiles(w.rows, grain, [&](int64_t r0, int64_t r1) {
            thread_local std::vector<uint8_t> dense;  // the decoded rows [r0, r1)
            dense.resize(static_cast<size_t>(r1 - r0) * w.row_bytes());
            kernels::compact_decode_rows(dense.data(), cm, r0, r1);
            for_token_chunks(n, [&](int32_t i0, int32_t m) {
                kernels::gemm_bf16act(y + i0 * ldy + r0, ldy, dense.data(),
                                      m_bf16act.data() + static_cast<size_t>(i0) * w.cols, m, w.cols, 0, r1 - r0);
            });
        });
        return;
    }
    // F16 prompts on AVX-512: the F16 kernel (kernels/gemm_f16.h) on the rows as they are, or as a compact draft's
    // task decodes them, in tasks of at least 32 rows, about four per thread; a task keeps a block of tokens in L2
    // while its row tiles pass over them. A row's result does not depend on the task, so a compact draft computes
    // what its dense copy does.
    if (w.type == kernels::GgmlType::F16 && kernels::gemm_f16_available()) {
        const int64_t tasks = 4 * static_cast<int64_t>(region_threads());
        parallel_for_tiles(w.rows, std::max<int64_t>(32, (w.rows + tasks - 1) / tasks), [&](int64_t r0, int64_t r1) {
            if (!w.compact) return kernels::gemm_f16(y, ldy, w.data, x, n, w.cols, r0, r1);
            thread_local std::vector<uint8_t> dense;  // the decoded rows [r0, r1)
            dense.resize(static_cast<size_t>(r1 - r0) * w.row_bytes());
            kernels::compact_decode_rows(dense.data(), *w.compact, r0, r1);
            kernels::gemm_f16(y + r0, ldy, dense.data(), x, n, w.cols, 0, r1 - r0);
        });
        return;
    }
    // Large batches (prefill) of the other types: dequantized tiles through OpenBLAS (blas_tiles); compact rows are
    // decoded first.
    blas_tiles(y, ldy, w, x, n, [&](float* tile, int64_t r0, int64_t r1) {
        if (!w.compact) {
            for (int64_t r = r0; r < r1; ++r)
                kernels::dequantize_row(&tile[(r - r0) * w.cols], w.type, w.row(r), w.cols);
            return;
        }
        thread_local std::vector<uint8_t> dense;  // the decoded rows of one tile
        dense.resize(static_cast<size_t>(r1 - r0) * w.row_bytes());
        if (w.rest)
            kernels::compact_rest_decode_rows(dense.data(), *w.compact, *w.rest, r0, r1);
        else
            kernels::compact_decode_rows(dense.data(), *w.compact, r0, r1);
        for (int64_t r = r0; r < r1; ++r)
            kernels::dequantize_row(&tile[(r - r0) * w.cols], w.type, &dense[(r - r0) * w.row_bytes()], w.cols);
    });
}

}  // namespace speculum::model
