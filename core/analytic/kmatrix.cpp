// The k-matrix cascade (see kmatrix.h): truncate mode by a DP over tokens still to produce, threshold mode by
// propagating the draft-length distribution and the reviewer's accepted prefix segment by segment.
#include "core/analytic/kmatrix.h"

#include "core/analytic/checks.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace speculum::analytic {

namespace {

constexpr int kMaxLevels = 16;
constexpr int kMaxRow    = 1024;     // positions of one reviewer's draft (row sum of k)
constexpr int kMaxDraft  = 512;      // longest draft the threshold mode may reach (memory and time guard)
constexpr int kMaxTokens = 1 << 16;  // tokens of a modeled generation

using Work = std::vector<LevelWork>;

void add(Work& into, const Work& w, double scale = 1.0) {
    for (size_t j = 0; j < w.size(); ++j) {
        into[j].calls += scale * w[j].calls;
        into[j].units += scale * w[j].units;
        into[j].reviewed += scale * w[j].reviewed;
        into[j].accepted += scale * w[j].accepted;
    }
}

// name[i] (appends rather than "literal" + string, which trips GCC 12's -Wrestrict false positive).
std::string indexed(std::string name, size_t i) {
    return name.append("[").append(std::to_string(i)).append("]");
}

int n_levels(const KMatrixCascade& m) {
    return int(m.k.size()) - 1;
}

int row_sum(const KMatrixCascade& m, int i) {
    int s = 0;
    for (int v : m.k[size_t(i)]) s += v;
    return s;
}

// Acceptance of the p-th token (0-based) of reviewer i's full draft, by the level that fills that position.
std::vector<std::vector<double>> position_alpha(const KMatrixCascade& m) {
    std::vector<std::vector<double>> out(m.k.size());
    for (size_t i = 0; i < m.k.size(); ++i)
        for (size_t j = i + 1; j < m.k.size(); ++j) out[i].insert(out[i].end(), size_t(m.k[i][j]), m.alpha[i][j]);
    if (!m.target_alpha.empty())
        for (size_t p = 0; p < out[0].size(); ++p) out[0][p] = m.target_alpha[std::min(p, m.target_alpha.size() - 1)];
    return out;
}

// Threshold mode: the longest draft reviewer i can build (each segment stops at its threshold − 1 + the longest
// sub-call), for the size guard. Sizes are capped so pathological inputs cannot overflow.
int max_threshold_draft(const KMatrixCascade& m, int i) {
    int length = 0, threshold = 0;
    for (size_t j = size_t(i) + 1; j < m.k.size(); ++j) {
        if (m.k[size_t(i)][j] == 0) continue;
        threshold += m.k[size_t(i)][j];
        int out = row_sum(m, int(j)) == 0 ? m.block[j - 1] : max_threshold_draft(m, int(j)) + 1;
        length  = std::max(length, std::min(threshold - 1 + out, 1 << 20));
    }
    return length;
}

// ---- truncate mode ----

class TruncateModel {
public:
    explicit TruncateModel(const KMatrixCascade& m) : m_m(m), m_n(n_levels(m)), m_x(size_t(m_n) + 1) {
        m_alpha = position_alpha(m);
        for (int j = 0; j <= m_n; ++j) m_gamma.push_back(row_sum(m, j));
    }

    // Level j asked for n tokens (j ≥ 1): a leaf proposes them in one call; a reviewer runs SD steps.
    Work produce(int j, int n) {
        Work w;
        if (m_gamma[size_t(j)] == 0) {
            w.assign(size_t(m_n) + 1, {});
            int b              = m_m.block[size_t(j) - 1];
            w[size_t(j)].units = b == 0 ? 1.0 : double((n + b - 1) / b);
            w[size_t(j)].calls = 1;
            return w;
        }
        w = x(j, n);
        w[size_t(j)].calls += 1;
        return w;
    }

    // Reviewer j's drafter asked for g tokens: the segments of row j in column order, cut at g.
    Work draft(int j, int g) {
        Work w(size_t(m_n) + 1);
        int before = 0;
        for (int s = j + 1; s <= m_n && before < g; ++s) {
            int want = std::min(m_m.k[size_t(j)][size_t(s)], g - before);
            if (want <= 0) continue;
            add(w, produce(s, want));
            before += want;
        }
        return w;
    }

    // X_j(r): expected work for reviewer j to produce r more tokens (steps of: draft g, one pass, accept a, emit a+1).
    const Work& x(int j, int r) {
        auto& t = m_x[size_t(j)];
        while (int(t.size()) <= r) {
            int rr = int(t.size());
            Work w(size_t(m_n) + 1);
            if (rr > 0) {
                int g = std::min(m_gamma[size_t(j)], rr - 1);
                if (g > 0) w = draft(j, g);
                LevelWork& me = w[size_t(j)];
                me.units += 1;
                me.reviewed += g;
                double reach = 1.0;
                for (int a = 0; a <= g; ++a) {
                    double next = a < g ? m_alpha[size_t(j)][size_t(a)] : 0.0;
                    double p    = reach * (1.0 - next);  // a accepted, then a rejection (or the draft ended)
                    me.accepted += p * a;
                    add(w, t[size_t(rr - a - 1)], p);
                    reach *= next;
                }
            }
            t.push_back(std::move(w));
        }
        return t[size_t(r)];
    }

    double expected_accepted(int g) const {
        double e = 0, reach = 1.0;
        for (int p = 0; p < g; ++p) e += (reach *= m_alpha[0][size_t(p)]);
        return e;
    }

private:
    const KMatrixCascade& m_m;
    int m_n;
    std::vector<std::vector<Work>> m_x;  // memo X_j(r), filled in order of r
    std::vector<std::vector<double>> m_alpha;
    std::vector<int> m_gamma;
};

// ---- threshold mode ----

struct SubCall {
    std::vector<double> out;   // P(the sub-call adds m tokens), m = 0..max
    std::vector<double> tail;  // tail[m] = P(it adds at least m tokens)
    Work work;                 // expected work of one sub-call
    void finish() {
        tail.assign(out.size() + 1, 0.0);
        for (size_t m = out.size(); m-- > 0;) tail[m] = tail[m + 1] + out[m];
    }
};

// Reviewer i builds its draft from row i's thresholds; returns the final length distribution Q[ℓ] and the
// distribution of the accepted prefix F[f] (what reviewer i accepts), accumulating the expected work.
void build_threshold(const KMatrixCascade& m, int i, const std::vector<SubCall>& sub, std::vector<double>& q,
                     std::vector<double>& f, Work& work) {
    q.assign(1, 1.0);            // Q[ℓ]: P(draft length ℓ)
    std::vector<double> a{1.0};  // A[ℓ]: P(length ℓ and every token so far accepted by reviewer i)
    f.assign(1, 0.0);            // F[f]: P(first rejection after f accepted tokens), filled as rejections happen
    int threshold = 0;
    for (size_t j = size_t(i) + 1; j < m.k.size(); ++j) {
        if (m.k[size_t(i)][j] == 0) continue;
        threshold += m.k[size_t(i)][j];
        const SubCall& s = sub[j];
        const double al  = m.alpha[size_t(i)][j];
        for (;;) {
            double active = 0;
            for (int l = 0; l < std::min(threshold, int(q.size())); ++l) active += q[size_t(l)];
            if (active <= 0) break;
            add(work, s.work, active);
            size_t new_size = q.size() + s.out.size() - 1;  // bounded by max_threshold_draft (validate)
            std::vector<double> q2(new_size, 0.0), a2(new_size, 0.0);
            f.resize(new_size, 0.0);
            for (size_t l = 0; l < q.size(); ++l) {
                if (int(l) >= threshold) {  // this draft is already long enough: it waits for the next segment
                    q2[l] += q[l];
                    if (l < a.size()) a2[l] += a[l];
                    continue;
                }
                // Reviewer i checks the new tokens one by one: the first rejection fixes f for good. Token t of the
                // sub-call exists when it added more than t tokens (tail[t + 1]) and is reached with α^t.
                const double alive = a[l];
                double reach       = alive;
                for (size_t mm = 0; mm < s.out.size(); ++mm) {
                    q2[l + mm] += q[l] * s.out[mm];
                    a2[l + mm] += reach * s.out[mm];
                    if (mm + 1 < s.out.size()) f[l + mm] += reach * (1.0 - al) * s.tail[mm + 1];
                    reach *= al;
                }
            }
            // Lengths no state reached stay out of the arrays (they would otherwise grow by a block per round).
            while (q2.size() > 1 && q2.back() == 0.0) q2.pop_back();
            a2.resize(q2.size());
            q.swap(q2);
            a.swap(a2);
        }
    }
    f.resize(std::max(f.size(), a.size()), 0.0);
    for (size_t l = 0; l < a.size(); ++l) f[l] += a[l];  // never rejected: every token accepted
    while (f.size() > 1 && f.back() == 0.0) f.pop_back();
}

std::vector<SubCall> threshold_subcalls(const KMatrixCascade& m) {
    int n = n_levels(m);
    std::vector<SubCall> sub(size_t(n) + 1);
    for (int j = n; j >= 1; --j) {
        SubCall& s = sub[size_t(j)];
        s.work.assign(size_t(n) + 1, {});
        s.work[size_t(j)].calls = 1;
        s.work[size_t(j)].units = 1;
        if (row_sum(m, j) == 0) {  // leaf: one call proposes `block` tokens
            s.out.assign(size_t(m.block[size_t(j) - 1]) + 1, 0.0);
            s.out.back() = 1.0;
            s.finish();
            continue;
        }
        std::vector<double> q, f;
        build_threshold(m, j, sub, q, f, s.work);
        s.out.assign(f.size() + 1, 0.0);
        for (size_t l = 0; l < q.size(); ++l) s.work[size_t(j)].reviewed += double(l) * q[l];
        for (size_t a = 0; a < f.size(); ++a) {
            s.out[a + 1] += f[a];  // the reviewer emits its accepted prefix and its own next token
            s.work[size_t(j)].accepted += double(a) * f[a];
        }
        s.finish();
    }
    return sub;
}

void finish(const KMatrixCascade& m, KMatrixResult& r) {
    r.cost = r.work[0].units;
    for (size_t j = 1; j < r.work.size(); ++j) r.cost += m.c[j - 1] * r.work[j].units;
    r.ewif = r.expected_tokens / r.cost;
}

}  // namespace

void validate(const KMatrixCascade& m) {
    int n = n_levels(m);
    if (n < 1 || n > kMaxLevels)
        throw InvalidInput("kmatrix.k must have 2.." + std::to_string(kMaxLevels + 1) +
                           " rows (the target and its draft levels), got " + std::to_string(m.k.size()));
    if (m.alpha.size() != m.k.size())
        throw InvalidInput("kmatrix.alpha must have " + std::to_string(m.k.size()) + " rows like kmatrix.k, got " +
                           std::to_string(m.alpha.size()));
    for (size_t i = 0; i < m.k.size(); ++i) {
        std::string row = indexed("", i);
        if (m.k[i].size() != m.k.size())
            throw InvalidInput("kmatrix.k" + row + " must have " + std::to_string(m.k.size()) + " columns");
        if (m.alpha[i].size() != m.k.size())
            throw InvalidInput("kmatrix.alpha" + row + " must have " + std::to_string(m.k.size()) + " columns");
        for (size_t j = 0; j < m.k.size(); ++j) {
            std::string f = indexed(row, j);
            require_count(m.k[i][j], 0, kMaxRow, "kmatrix.k" + f);
            if (j <= i && m.k[i][j] != 0)
                throw InvalidInput("kmatrix.k" + f + " must be 0: level " + std::to_string(i) +
                                   " drafts only from levels below it (j > i)");
            require_probability(m.alpha[i][j], "kmatrix.alpha" + f);
        }
    }
    for (int i = 0; i <= n; ++i) require_count(row_sum(m, i), 0, kMaxRow, indexed("kmatrix.k", size_t(i)) + " summed");
    if (row_sum(m, 0) == 0) throw InvalidInput("kmatrix.k[0]: the target's draft needs at least one position");
    if (m.c.size() != size_t(n) || m.block.size() != size_t(n))
        throw InvalidInput("kmatrix.levels must have one entry (c, block) per draft level: " + std::to_string(n));
    for (int j = 1; j <= n; ++j) {
        std::string f = indexed("kmatrix.levels", size_t(j) - 1);
        require_nonnegative(m.c[size_t(j) - 1], f + ".c");
        // A threshold-mode leaf must add tokens on every call, or its segment would never reach its threshold.
        bool leaf = row_sum(m, j) == 0;
        require_count(m.block[size_t(j) - 1], leaf && m.mode == KMatrixMode::threshold ? 1 : 0, kMaxRow, f + ".block");
    }
    if (m.mode == KMatrixMode::threshold && max_threshold_draft(m, 0) > kMaxDraft)
        throw InvalidInput("kmatrix: threshold-mode drafts can grow to " + std::to_string(max_threshold_draft(m, 0)) +
                           " tokens, more than the " + std::to_string(kMaxDraft) +
                           " modeled; reduce k or the leaf blocks");
    if (!m.target_alpha.empty()) {
        if (m.mode != KMatrixMode::truncate)
            throw InvalidInput("kmatrix.target_alpha: per-position target acceptance needs truncate mode");
        require_probabilities(m.target_alpha, "kmatrix.target_alpha");
    }
}

KMatrixResult kmatrix_cascade(const KMatrixCascade& m) {
    validate(m);
    KMatrixResult r;
    r.mode = m.mode;
    int n  = n_levels(m);
    if (m.mode == KMatrixMode::truncate) {
        TruncateModel model(m);
        int k0             = row_sum(m, 0);
        r.work             = model.draft(0, k0);
        r.work[0].units    = 1;
        r.work[0].reviewed = k0;
        r.work[0].accepted = model.expected_accepted(k0);
        r.expected_tokens  = 1.0 + r.work[0].accepted;
        r.draft_length_distribution.assign(size_t(k0) + 1, 0.0);
        r.draft_length_distribution.back() = 1.0;
    } else {
        auto sub = threshold_subcalls(m);
        std::vector<double> q, f;
        r.work.assign(size_t(n) + 1, {});
        build_threshold(m, 0, sub, q, f, r.work);
        r.work[0].units = 1;
        for (size_t l = 0; l < q.size(); ++l) r.work[0].reviewed += double(l) * q[l];
        for (size_t a = 0; a < f.size(); ++a) r.work[0].accepted += double(a) * f[a];
        r.expected_tokens           = 1.0 + r.work[0].accepted;
        r.draft_length_distribution = std::move(q);
    }
    finish(m, r);
    return r;
}

KMatrixResult kmatrix_generation(const KMatrixCascade& m, int n_tokens) {
    validate(m);
    if (m.mode != KMatrixMode::truncate)
        throw InvalidInput("kmatrix: a whole generation is modeled in truncate mode (Speculum's engine) only");
    require_count(n_tokens, 1, kMaxTokens, "n_tokens");
    TruncateModel model(m);
    KMatrixResult r;
    r.mode            = m.mode;
    r.work            = model.x(0, n_tokens);
    r.expected_tokens = n_tokens;
    finish(m, r);
    return r;
}

KMatrixCascade vertical_chain_kmatrix(const std::vector<ChainLevel>& levels) {
    const size_t n = levels.size();
    KMatrixCascade km;
    km.mode = KMatrixMode::truncate;
    km.k.assign(n + 1, std::vector<int>(n + 1, 0));
    km.alpha.assign(n + 1, std::vector<double>(n + 1, 0.0));
    for (size_t j = 0; j < n; ++j) {
        const ChainLevel& l = levels[j];
        km.k[j][j + 1]      = l.steps;
        km.alpha[j][j + 1]  = l.alpha;
        km.c.push_back(l.max_gram ? 0.0 : l.c);
        km.block.push_back(l.max_gram ? 0 : 1);
    }
    return km;
}

}  // namespace speculum::analytic
