// Decode and verification attention for one query token and a block of query heads: an online softmax over a list
// of KV cache slots, in list order. The forward pass (core/model/forward_attention.cpp) builds the slot list (the
// cached slots the token may see, then the new slots its mask row allows) and calls this once per (token, block of
// heads). A token's result depends only on its own slot list, never on how many tokens share the pass, so a
// verification pass gives each token what a decode step would.
//   out: nh * hd floats (head b at out + b * hd);   q: the same layout
//   k, v: the layer's cache, slot s's row at k + s * ld (and v + s * ld); head b reads hd floats at offset kv_off[b]
//   slots: m >= 1 slot indices;   score = dot(q_b, k_b) * scale, then cap * tanh(score / cap) when cap > 0
//   sinks: nh logits (head b's at sinks[b]) the softmax also counts, attending nothing (gpt-oss), or nullptr
// The reference keeps a running maximum per head and rescales what it has accumulated when a score raises it, with
// std::exp; the AVX-512 kernel moves the maximum once per chunk of 64 slots (the chunk's scores first, then its
// weights by a polynomial exp, 16 slots at a time, then the values), in 16-lane partial dot products, fetching K and
// V rows a few slots ahead (within kAttendRelTol of the reference, tests/kernels/attention_test.cpp).
#pragma once

#include <cstdint>

namespace speculum::kernels {

// Largest head block the kernels take (core uses blocks of 8).
constexpr int32_t kAttendMaxHeads = 16;

// True when attend() has a fast path for head_dim hd on this CPU (AVX-512 within the kernel cap, hd a multiple of
// 16); otherwise callers keep their own loop, and attend() would run the reference.
bool attend_fast_available(int32_t hd);

void attend_ref(float* out, const float* q, const float* k, const float* v, int64_t ld, const int64_t* kv_off,
                const int32_t* slots, int32_t m, int32_t nh, int32_t hd, float scale, float cap,
                const float* sinks = nullptr);
void attend(float* out, const float* q, const float* k, const float* v, int64_t ld, const int64_t* kv_off,
            const int32_t* slots, int32_t m, int32_t nh, int32_t hd, float scale, float cap,
            const float* sinks = nullptr);

}  // namespace speculum::kernels
