// CS Drafting closed forms (see csdrafting.h). Readings of the paper's typos: design/analytic_readings.md.
#include "core/analytic/csdrafting.h"

#include "core/analytic/checks.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

namespace speculum::analytic {

namespace {

constexpr int kMaxK      = 4096;     // draft lengths above this are certainly a units mistake
constexpr int kMaxLength = 1 << 16;  // cap on the draft length a cascade may reach (memory guard)

// P(a tokens of a len-token draft accepted), a = 0..len, under per-position acceptance (positions 1..len).
void accepted_distribution(const std::vector<double>& alpha, int len, std::vector<double>& out) {
    out.assign(size_t(len) + 1, 0.0);
    double reach = 1.0;  // P(positions 1..a accepted)
    for (int a = 0; a < len; ++a) {
        double next = alpha[std::min(size_t(a), alpha.size() - 1)];
        out[a]      = reach * (1.0 - next);
        reach *= next;
    }
    out[len] = reach;
}

// E[tokens] when the reviewer sees a len-token draft: 1 + Σ_{i≤len} Π_{j≤i} α_j, for every len up to max_len.
std::vector<double> expected_tokens_by_length(const std::vector<double>& alpha, int max_len) {
    std::vector<double> e(size_t(max_len) + 1);
    double sum = 1.0, reach = 1.0;
    e[0] = 1.0;
    for (int i = 1; i <= max_len; ++i) {
        reach *= alpha[std::min(size_t(i - 1), alpha.size() - 1)];
        sum += reach;
        e[i] = sum;
    }
    return e;
}

std::vector<double> convolve(const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> out(a.size() + b.size() - 1, 0.0);
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] == 0.0) continue;
        for (size_t j = 0; j < b.size(); ++j) out[i + j] += a[i] * b[j];
    }
    return out;
}

void validate_levels(const std::vector<DraftLevel>& levels) {
    if (levels.empty()) throw InvalidInput("cascade.levels must not be empty");
    for (size_t j = 0; j < levels.size(); ++j) {
        std::string f = "cascade.levels[" + std::to_string(j) + "]";
        require_probabilities(levels[j].alpha, f + ".alpha");
        require_nonnegative(levels[j].c, f + ".c");
        require_count(levels[j].steps, 1, kMaxK, f + ".steps");
    }
}

double level_cost(const std::vector<DraftLevel>& levels) {
    double cost = 1.0, calls = 1.0;
    for (size_t j = 0; j + 1 < levels.size(); ++j) {
        calls *= levels[j].steps;
        cost += levels[j].c * calls;
    }
    cost += levels.back().c * levels.back().steps * calls;
    return cost;
}

}  // namespace

double phi(double alpha, int k, double x) {
    require_probability(alpha, "alpha");
    require_count(k, 0, kMaxK, "k");
    double ax = alpha * x;
    if (std::abs(1.0 - ax) < 1e-9) return 1.0 + (x - 1.0) * (k + 1);  // limit of the geometric sum
    return 1.0 + (x - 1.0) * (1.0 - std::pow(ax, k + 1)) / (1.0 - ax);
}

double expected_tokens_chain(const std::vector<double>& alpha_positions) {
    if (!alpha_positions.empty()) require_probabilities(alpha_positions, "alpha");  // names alpha[i] on failure
    double sum = 1.0, reach = 1.0;
    for (double a : alpha_positions) {
        reach *= a;
        sum += reach;
    }
    return sum;
}

std::vector<double> chain_length_distribution(const std::vector<double>& alpha_positions) {
    if (alpha_positions.empty()) return {0.0, 1.0};
    require_probabilities(alpha_positions, "alpha");
    std::vector<double> acc;
    accepted_distribution(alpha_positions, int(alpha_positions.size()), acc);
    std::vector<double> out(acc.size() + 1, 0.0);
    for (size_t a = 0; a < acc.size(); ++a) out[a + 1] = acc[a];
    return out;
}

double ewif_sd(const std::vector<double>& alpha, double c, int k) {
    require_probabilities(alpha, "alpha");
    require_nonnegative(c, "c");
    require_count(k, 0, kMaxK, "k");
    return expected_tokens_chain(expand_positions(alpha, k, "alpha")) / (c * k + 1.0);
}

double ewif_sd(double alpha, double c, int k) {
    return ewif_sd(std::vector<double>{alpha}, c, k);
}

int best_k_sd(const std::vector<double>& alpha, double c, int k_max) {
    require_count(k_max, 1, kMaxK, "k_max");
    int best      = 1;
    double best_v = ewif_sd(alpha, c, 1);
    for (int k = 2; k <= k_max; ++k) {
        double v = ewif_sd(alpha, c, k);
        if (v > best_v) best = k, best_v = v;
    }
    return best;
}

double ewif_block(const std::vector<double>& alpha, double c, int k, int block) {
    require_probabilities(alpha, "alpha");
    require_nonnegative(c, "c");
    require_count(k, 0, kMaxK, "k");
    require_count(block, 1, kMaxK, "block");
    const int passes = (k + block - 1) / block;
    return expected_tokens_chain(expand_positions(alpha, k, "alpha")) / (c * passes + 1.0);
}

int best_k_block(const std::vector<double>& alpha, double c, int k_max, int block) {
    require_count(k_max, 1, kMaxK, "k_max");
    int best      = 1;
    double best_v = ewif_block(alpha, c, 1, block);
    for (int k = 2; k <= k_max; ++k) {
        const double v = ewif_block(alpha, c, k, block);
        if (v > best_v) best = k, best_v = v;
    }
    return best;
}

double ewif_vertical_two_level(double alpha, double alpha_prime, int k, int n, double c1, double c2) {
    require_probability(alpha, "alpha");
    require_probability(alpha_prime, "alpha_prime");
    require_count(k, 1, kMaxK, "k");
    require_count(n, 1, kMaxK, "n");
    require_nonnegative(c1, "c1");
    require_nonnegative(c2, "c2");
    double tokens;
    double phin = std::pow(phi(alpha_prime, k, alpha), n);
    if (alpha >= 1.0) {
        // α = 1: every drafted token is accepted; tokens = 1 + E[draft length] = 1 + n φ'(1).
        tokens = 1.0 + n * expected_tokens_chain(expand_positions({alpha_prime}, k, "alpha_prime"));
    } else {
        tokens = (1.0 - alpha * phin) / (1.0 - alpha);
    }
    return tokens / (1.0 + n * c1 + double(n) * k * c2);
}

CascadeResult vertical_cascade(const std::vector<DraftLevel>& levels) {
    validate_levels(levels);
    // Draft length that the bottom hands its reviewer per SD step: exactly k.
    std::vector<double> dist(size_t(levels.back().steps) + 1, 0.0);
    dist.back() = 1.0;
    std::vector<double> acc;
    for (int j = int(levels.size()) - 2; j >= 0; --j) {
        const auto& alpha = levels[size_t(j) + 1].alpha;  // level j reviews level j+1's tokens
        // One SD step of level j: a reviewed draft of length len yields a+1 tokens.
        std::vector<double> step(dist.size() + 1, 0.0);
        for (size_t len = 0; len < dist.size(); ++len) {
            if (dist[len] == 0.0) continue;
            accepted_distribution(alpha, int(len), acc);
            for (size_t a = 0; a <= len; ++a) step[a + 1] += dist[len] * acc[a];
        }
        std::vector<double> total{1.0};
        for (int s = 0; s < levels[j].steps; ++s) {
            total = convolve(total, step);
            if (total.size() > size_t(kMaxLength))
                throw InvalidInput("cascade.levels: the draft can reach more than " + std::to_string(kMaxLength) +
                                   " tokens; reduce steps");
        }
        dist = std::move(total);
    }
    CascadeResult r;
    auto e = expected_tokens_by_length(levels[0].alpha, int(dist.size()) - 1);
    for (size_t len = 0; len < dist.size(); ++len) r.expected_tokens += dist[len] * e[len];
    r.cost                      = level_cost(levels);
    r.ewif                      = r.expected_tokens / r.cost;
    r.draft_length_distribution = std::move(dist);
    return r;
}

CascadeResult vertical_cascade_pgf(const std::vector<DraftLevel>& levels) {
    validate_levels(levels);
    const double kAlphaCap = 1.0 - 1e-12;  // the closed form has a removable singularity at α = 1
    auto a_of              = [&](size_t j) { return std::min(levels[j].alpha[0], kAlphaCap); };
    // G(j, x): PGF of the draft length level j hands to its reviewer (the target for j = 0).
    std::function<double(size_t, double)> G = [&](size_t j, double x) -> double {
        if (j + 1 == levels.size()) return std::pow(x, levels[j].steps);
        double a     = a_of(j + 1);
        double inner = 1.0 + (x - 1.0) * (1.0 - a * x * G(j + 1, a * x)) / (1.0 - a * x);
        return std::pow(inner, levels[j].steps);
    };
    CascadeResult r;
    double a0         = a_of(0);
    r.expected_tokens = (1.0 - a0 * G(0, a0)) / (1.0 - a0);
    r.cost            = level_cost(levels);
    r.ewif            = r.expected_tokens / r.cost;
    return r;
}

DraftLevel max_gram_level(double alpha, int block) {
    require_probability(alpha, "max_gram.alpha");
    require_count(block, 1, kMaxK, "max_gram.block");
    return DraftLevel{{alpha}, 0.0, block};
}

double horizontal_cascade(const std::vector<double>& alpha, const std::vector<double>& c) {
    if (alpha.size() != c.size())
        throw InvalidInput("horizontal: alpha has " + std::to_string(alpha.size()) + " positions but c has " +
                           std::to_string(c.size()));
    double cost = 1.0;
    for (size_t i = 0; i < c.size(); ++i) {
        require_nonnegative(c[i], "horizontal.c[" + std::to_string(i) + "]");
        cost += c[i];
    }
    return expected_tokens_chain(alpha) / cost;
}

std::vector<double> horizontal_cascade_gradient(const std::vector<double>& alpha, const std::vector<double>& c) {
    double t    = horizontal_cascade(alpha, c);  // validates
    double cost = expected_tokens_chain(alpha) / t;
    size_t k    = alpha.size();
    std::vector<double> grad(k, 0.0);
    for (size_t l = 0; l < k; ++l) {
        // Σ_{i=l..k} Π_{j≤i, j≠l} α_j: terms with i < l do not contain α_l (corrected Cor. 4.6).
        double prefix = 1.0;
        for (size_t j = 0; j < l; ++j) prefix *= alpha[j];
        double sum = 0.0, run = prefix;
        for (size_t i = l; i < k; ++i) {
            if (i > l) run *= alpha[i];
            sum += run;
        }
        grad[l] = sum / cost;
    }
    return grad;
}

double horizontal_cascade(const std::vector<HorizontalSegment>& segments) {
    if (segments.empty()) throw InvalidInput("horizontal.segments must not be empty");
    std::vector<double> alpha, c;
    for (size_t s = 0; s < segments.size(); ++s) {
        std::string f = "horizontal.segments[" + std::to_string(s) + "]";
        require_probability(segments[s].alpha, f + ".alpha");
        require_nonnegative(segments[s].c, f + ".c");
        require_count(segments[s].count, 0, kMaxK, f + ".count");
        alpha.insert(alpha.end(), size_t(segments[s].count), segments[s].alpha);
        c.insert(c.end(), size_t(segments[s].count), segments[s].c);
    }
    return horizontal_cascade(alpha, c);
}

}  // namespace speculum::analytic
