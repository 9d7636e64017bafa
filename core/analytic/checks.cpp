// Argument checks shared by the analytic models (see checks.h).
#include "core/analytic/checks.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace speculum::analytic {

static std::string num(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

static bool is_probability(double v) {
    return std::isfinite(v) && v >= 0.0 && v <= 1.0;
}

void throw_invalid_input(const std::string& path, const std::string& what) {
    throw InvalidInput(path + ": " + what);
}

void require_probability(double v, const std::string& field) {
    if (!is_probability(v)) throw InvalidInput(field + " must be a probability in [0, 1], got " + num(v));
}

void require_nonnegative(double v, const std::string& field) {
    if (!std::isfinite(v) || v < 0.0) throw InvalidInput(field + " must be finite and >= 0, got " + num(v));
}

void require_positive(double v, const std::string& field) {
    if (!std::isfinite(v) || v <= 0.0) throw InvalidInput(field + " must be finite and > 0, got " + num(v));
}

void require_count(long long v, long long lo, long long hi, const std::string& field) {
    if (v < lo || v > hi)
        throw InvalidInput(field + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                           "], got " + std::to_string(v));
}

void require_probabilities(const std::vector<double>& v, const std::string& field) {
    if (v.empty()) throw InvalidInput(field + " must not be empty");
    // The element's name is built only for the error: these checks run in the analytic hot loops (sweeps).
    for (size_t i = 0; i < v.size(); ++i)
        if (!is_probability(v[i])) require_probability(v[i], field + "[" + std::to_string(i) + "]");
}

std::vector<double> expand_positions(const std::vector<double>& alpha, int k, const std::string& field) {
    if (alpha.empty()) throw InvalidInput(field + " must not be empty");
    std::vector<double> out(k > 0 ? size_t(k) : 0);
    for (int i = 0; i < k; ++i) out[i] = alpha[std::min(size_t(i), alpha.size() - 1)];
    return out;
}

}  // namespace speculum::analytic
