// Token sampling from logits: greedy, temperature, top-k and top-p with an explicit seeded RNG, and the full
// processed probability vector (speculative verification compares the target's p with the draft's q).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace speculum::model {

// splitmix64: tiny, fast, passes BigCrush; the whole state is one integer so runs are reproducible from a seed.
struct Rng {
    uint64_t state = 0;
    explicit Rng(uint64_t seed = 0) : state(seed) {}
    uint64_t next_u64() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z          = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // Uniform in [0, 1) with 53 random bits.
    double next_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
};

struct SamplerConfig {
    float temperature = 0.0f;  // logits are divided by it; 0 = greedy (argmax, no randomness)
    int32_t top_k     = 0;     // keep the k most likely tokens; 0 = all
    float top_p       = 1.0f;  // keep the smallest set of most likely tokens with total probability >= top_p; 1 = all
    uint64_t seed     = 0;     // RNG seed: the same seed, config and logits give the same tokens
    bool operator==(const SamplerConfig&) const = default;
    bool greedy() const { return temperature <= 0.0f; }
    // Throws std::invalid_argument naming the field ("SamplerConfig.top_p: must be in (0, 1], got 1.5").
    void validate() const;
};
void to_json(nlohmann::json& j, const SamplerConfig& c);
void from_json(const nlohmann::json& j, SamplerConfig& c);

// NaN or +inf logits, or all of them -inf: a broken or overflowing model. Greedy decoding emitted token 0 silently;
// now argmax and the sampler throw this, and generate adds the first layer whose activations were not finite.
struct NonFiniteLogits : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Index of the largest logit (the lowest index on ties). Throws NonFiniteLogits (naming the first bad index).
int32_t argmax(std::span<const float> logits);
// Throws what argmax throws for these logits (a NaN or +inf, or every one -inf); else nothing.
void check_finite_logits(std::span<const float> logits);

class Sampler {
public:
    explicit Sampler(SamplerConfig cfg = {});

    // The distribution tokens are drawn from: softmax(logits / T) restricted to top-k and top-p and renormalised
    // (one-hot at the argmax when greedy). probs is resized to logits.size().
    void probabilities(std::span<const float> logits, std::vector<float>& probs);
    // Draws a token from logits under the config (advances the RNG unless greedy).
    int32_t sample(std::span<const float> logits);
    // Draws a token from an explicit probability vector (sums to ~1); used for residual resampling.
    int32_t sample_from(std::span<const float> probs);

    const SamplerConfig& config() const { return m_cfg; }
    Rng& rng() { return m_rng; }

private:
    SamplerConfig m_cfg;
    Rng m_rng;
    std::vector<float> m_probs;    // (n_vocab) scratch of probabilities()
    std::vector<float> m_dist;     // (n_vocab) scratch of sample()
    std::vector<int32_t> m_order;  // (n_vocab) scratch: token ids sorted by probability
};

}  // namespace speculum::model
