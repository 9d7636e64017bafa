// Sampler: temperature softmax, top-k / top-p truncation and seeded draws.
#include "core/model/sampler.h"

#include "core/json_reader.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace speculum::model {

void SamplerConfig::validate() const {
    if (!(temperature >= 0.0f) || !std::isfinite(temperature))
        throw std::invalid_argument("SamplerConfig.temperature: must be a finite number >= 0, got " +
                                    std::to_string(temperature));
    if (top_k < 0) throw std::invalid_argument("SamplerConfig.top_k: must be >= 0, got " + std::to_string(top_k));
    if (!(top_p > 0.0f && top_p <= 1.0f))
        throw std::invalid_argument("SamplerConfig.top_p: must be in (0, 1], got " + std::to_string(top_p));
}

void to_json(nlohmann::json& j, const SamplerConfig& c) {
    j = nlohmann::json{{"temperature", c.temperature}, {"top_k", c.top_k}, {"top_p", c.top_p}, {"seed", c.seed}};
}

void from_json(const nlohmann::json& j, SamplerConfig& c) {
    c = SamplerConfig{};
    JsonReader r(j, "sampling");
    r.get("temperature", c.temperature);
    r.get("top_k", c.top_k);
    r.get("top_p", c.top_p);
    r.get("seed", c.seed);
    r.finish();
}

int32_t argmax(std::span<const float> logits) {
    if (logits.empty()) throw std::invalid_argument("argmax: empty logits");
    size_t best = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
        const float v = logits[i];
        if (std::isnan(v) || v == std::numeric_limits<float>::infinity())
            throw NonFiniteLogits("non-finite logits: " + std::string(std::isnan(v) ? "NaN" : "+inf") + " at token " +
                                  std::to_string(i) + " of " + std::to_string(logits.size()));
        if (v > logits[best]) best = i;
    }
    if (logits[best] == -std::numeric_limits<float>::infinity())
        throw NonFiniteLogits("non-finite logits: every one of the " + std::to_string(logits.size()) + " is -inf");
    return static_cast<int32_t>(best);
}

void check_finite_logits(std::span<const float> logits) {
    if (!logits.empty()) argmax(logits);
}

Sampler::Sampler(SamplerConfig cfg) : m_cfg(cfg), m_rng(cfg.seed) {
    m_cfg.validate();
}

void Sampler::probabilities(std::span<const float> logits, std::vector<float>& probs) {
    const size_t nv = logits.size();
    if (nv == 0) throw std::invalid_argument("Sampler: empty logits");
    probs.assign(nv, 0.0f);
    if (m_cfg.greedy()) {
        probs[static_cast<size_t>(argmax(logits))] = 1.0f;
        return;
    }
    // Temperature softmax (max-subtracted for range safety). argmax checks the logits are finite first.
    const float max_l = logits[static_cast<size_t>(argmax(logits))];
    double sum        = 0.0;
    for (size_t t = 0; t < nv; ++t) sum += probs[t] = std::exp((logits[t] - max_l) / m_cfg.temperature);
    for (float& p : probs) p = static_cast<float>(p / sum);
    const bool use_k = m_cfg.top_k > 0 && static_cast<size_t>(m_cfg.top_k) < nv;
    const bool use_p = m_cfg.top_p < 1.0f;
    if (!use_k && !use_p) return;

    // Truncation: order candidates by probability (ties by id, so the result is deterministic), keep a prefix.
    m_order.resize(nv);
    std::iota(m_order.begin(), m_order.end(), 0);
    auto more_likely = [&](int32_t a, int32_t b) { return probs[a] > probs[b] || (probs[a] == probs[b] && a < b); };
    size_t keep      = use_k ? static_cast<size_t>(m_cfg.top_k) : nv;
    if (use_k) std::nth_element(m_order.begin(), m_order.begin() + (keep - 1), m_order.end(), more_likely);
    if (use_p) {
        std::sort(m_order.begin(), m_order.begin() + keep, more_likely);
        double kept_mass = 0.0, total = 0.0;
        for (size_t r = 0; r < keep; ++r) total += probs[m_order[r]];
        size_t r = 0;
        while (r < keep) {
            kept_mass += probs[m_order[r++]];
            if (kept_mass >= m_cfg.top_p * total) break;
        }
        keep = r;
    }
    double kept = 0.0;
    for (size_t r = 0; r < keep; ++r) kept += probs[m_order[r]];
    m_probs.assign(nv, 0.0f);
    for (size_t r = 0; r < keep; ++r) m_probs[m_order[r]] = static_cast<float>(probs[m_order[r]] / kept);
    probs.swap(m_probs);
}

int32_t Sampler::sample_from(std::span<const float> probs) {
    if (probs.empty()) throw std::invalid_argument("Sampler: empty probability vector");
    double total = 0.0;
    for (float p : probs) total += p;
    if (!(total > 0.0)) throw std::invalid_argument("Sampler: probability vector sums to zero");
    const double u = m_rng.next_double() * total;
    double c       = 0.0;
    int32_t last   = 0;
    for (size_t t = 0; t < probs.size(); ++t) {
        if (probs[t] <= 0.0f) continue;
        c += probs[t];
        last = static_cast<int32_t>(t);
        if (u < c) return last;
    }
    return last;  // rounding: u landed past the accumulated sum
}

int32_t Sampler::sample(std::span<const float> logits) {
    if (m_cfg.greedy()) return argmax(logits);
    probabilities(logits, m_dist);
    return sample_from(m_dist);
}

}  // namespace speculum::model
