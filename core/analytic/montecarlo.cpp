// Monte Carlo simulation of chain, vertical-cascade and tree acceptance (see montecarlo.h).
#include "core/analytic/montecarlo.h"

#include "core/analytic/checks.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace speculum::analytic {

namespace {

uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z          = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z          = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

// Running mean and variance (Welford).
struct Accumulator {
    int64_t n   = 0;
    double mean = 0, m2 = 0;
    void add(double x) {
        ++n;
        double d = x - mean;
        mean += d / double(n);
        m2 += d * (x - mean);
    }
    McStats stats() const {
        McStats s;
        s.samples   = n;
        s.mean      = mean;
        s.std_error = n > 1 ? std::sqrt(m2 / double(n - 1) / double(n)) : 0.0;
        return s;
    }
};

// Accepted tokens when a reviewer checks a len-token draft position by position.
int review(Rng& rng, const std::vector<double>& alpha, int len) {
    int a = 0;
    while (a < len && rng.uniform() < alpha[std::min(size_t(a), alpha.size() - 1)]) ++a;
    return a;
}

void check_rounds(int64_t rounds) {
    if (rounds < 1 || rounds > (int64_t(1) << 32)) throw InvalidInput("rounds must be in [1, 2^32]");
}

}  // namespace

Rng::Rng(uint64_t seed) {
    for (auto& s : m_s) s = splitmix64(seed);
}

uint64_t Rng::next() {
    uint64_t result = rotl(m_s[1] * 5, 7) * 9;
    uint64_t t      = m_s[1] << 17;
    m_s[2] ^= m_s[0];
    m_s[3] ^= m_s[1];
    m_s[1] ^= m_s[2];
    m_s[0] ^= m_s[3];
    m_s[2] ^= t;
    m_s[3] = rotl(m_s[3], 45);
    return result;
}

double Rng::uniform() {
    return double(next() >> 11) * 0x1.0p-53;
}

McStats mc_chain(const std::vector<double>& alpha, int k, int64_t rounds, uint64_t seed) {
    require_probabilities(alpha, "alpha");
    require_count(k, 0, 4096, "k");
    check_rounds(rounds);
    Rng rng(seed);
    Accumulator acc;
    for (int64_t r = 0; r < rounds; ++r) acc.add(review(rng, alpha, k) + 1.0);
    return acc.stats();
}

McStats mc_vertical_cascade(const std::vector<DraftLevel>& levels, int64_t rounds, uint64_t seed) {
    vertical_cascade(levels);  // validates (and rejects cascades that explode in length)
    check_rounds(rounds);
    Rng rng(seed);
    // gen(j): length of the draft level j hands its reviewer in one call.
    std::function<int(size_t)> gen = [&](size_t j) -> int {
        if (j + 1 == levels.size()) return levels[j].steps;  // bottom drafts k tokens
        int total = 0;
        for (int s = 0; s < levels[j].steps; ++s) {
            int len = gen(j + 1);
            total += review(rng, levels[j + 1].alpha, len) + 1;
        }
        return total;
    };
    Accumulator acc;
    for (int64_t r = 0; r < rounds; ++r) acc.add(review(rng, levels[0].alpha, gen(0)) + 1.0);
    return acc.stats();
}

McKMatrix mc_kmatrix_cascade(const KMatrixCascade& m, int64_t rounds, uint64_t seed) {
    validate(m);
    check_rounds(rounds);
    const int n = int(m.k.size()) - 1;
    std::vector<int> gamma(size_t(n) + 1, 0);
    for (int i = 0; i <= n; ++i)
        for (int v : m.k[size_t(i)]) gamma[size_t(i)] += v;
    Rng rng(seed);
    std::vector<double> units(size_t(n) + 1);
    auto accept = [&](int reviewer, int position, int source) {
        double a = reviewer == 0 && !m.target_alpha.empty()
                       ? m.target_alpha[std::min(size_t(position), m.target_alpha.size() - 1)]
                       : m.alpha[size_t(reviewer)][size_t(source)];
        return rng.uniform() < a;
    };

    // Truncate: level j produces exactly `want` tokens; reviewer j's inner drafts are cut to what is still needed.
    std::function<void(int, int)> produce;
    auto fill = [&](int j, int g, std::vector<int>& src) {
        src.clear();
        for (int s = j + 1; s <= n && int(src.size()) < g; ++s) {
            int want = std::min(m.k[size_t(j)][size_t(s)], g - int(src.size()));
            if (want <= 0) continue;
            produce(s, want);
            src.insert(src.end(), size_t(want), s);
        }
    };
    produce = [&](int j, int want) {
        if (gamma[size_t(j)] == 0) {
            int b = m.block[size_t(j) - 1];
            units[size_t(j)] += b == 0 ? 1 : (want + b - 1) / b;
            return;
        }
        std::vector<int> src;
        for (int made = 0; made < want;) {
            fill(j, std::min(gamma[size_t(j)], want - made - 1), src);
            units[size_t(j)] += 1;
            int a = 0;
            while (a < int(src.size()) && accept(j, a, src[size_t(a)])) ++a;
            made += a + 1;
        }
    };

    // Threshold: reviewer i keeps calling each segment's level until its draft reaches the cumulative threshold.
    struct Built {
        int length = 0, accepted = 0;
    };
    std::function<int(int)> sub;
    auto build = [&](int i) {
        Built b;
        bool alive    = true;
        int threshold = 0;
        for (int s = i + 1; s <= n; ++s) {
            if (m.k[size_t(i)][size_t(s)] == 0) continue;
            threshold += m.k[size_t(i)][size_t(s)];
            while (b.length < threshold) {
                int added = sub(s);
                for (int t = 0; t < added; ++t, ++b.length)
                    if (alive && (alive = accept(i, b.length, s))) ++b.accepted;
            }
        }
        return b;
    };
    sub = [&](int j) {
        units[size_t(j)] += 1;
        if (gamma[size_t(j)] == 0) return m.block[size_t(j) - 1];
        return build(j).accepted + 1;
    };

    Accumulator tokens, cost;
    std::vector<int> src;
    for (int64_t r = 0; r < rounds; ++r) {
        std::fill(units.begin(), units.end(), 0.0);
        int accepted = 0;
        if (m.mode == KMatrixMode::truncate) {
            fill(0, gamma[0], src);
            while (accepted < int(src.size()) && accept(0, accepted, src[size_t(accepted)])) ++accepted;
        } else {
            accepted = build(0).accepted;
        }
        double c = 1.0;
        for (int j = 1; j <= n; ++j) c += m.c[size_t(j) - 1] * units[size_t(j)];
        tokens.add(accepted + 1.0);
        cost.add(c);
    }
    return {tokens.stats(), cost.stats()};
}

McStats mc_tree(const TokenTree& tree, const AcceptanceTable& p, int64_t rounds, uint64_t seed) {
    validate_tree(tree);
    validate_acceptance_table(p);
    check_rounds(rounds);
    // Children of each node in rank order (order of appearance).
    std::vector<std::vector<int>> children(tree.parent.size());
    for (size_t i = 1; i < tree.parent.size(); ++i) children[size_t(tree.parent[i])].push_back(int(i));
    Rng rng(seed);
    Accumulator acc;
    for (int64_t r = 0; r < rounds; ++r) {
        int node = 0, depth = 0;
        for (;;) {
            const auto& kids = children[size_t(node)];
            const auto& row  = p[std::min(size_t(depth), p.size() - 1)];
            double u = rng.uniform(), cum = 0;
            int next = -1;
            for (size_t rank = 0; rank < kids.size() && rank < row.size(); ++rank) {
                cum += row[rank];
                if (u < cum) {
                    next = kids[rank];
                    break;
                }
            }
            if (next < 0) break;
            node = next;
            ++depth;
        }
        acc.add(depth + 1.0);
    }
    return acc.stats();
}

}  // namespace speculum::analytic
