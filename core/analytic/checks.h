// Argument checks shared by the analytic models. Every failure throws InvalidInput naming the field and the
// bad value, so a CLI or UI can show the message as is.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace speculum::analytic {

struct InvalidInput : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// JsonReader's error handler for the analytic readers: throws InvalidInput "PATH: WHAT".
[[noreturn]] void throw_invalid_input(const std::string& path, const std::string& what);

void require_probability(double v, const std::string& field);  // finite, in [0, 1]
void require_nonnegative(double v, const std::string& field);  // finite, >= 0
void require_positive(double v, const std::string& field);     // finite, > 0
void require_count(long long v, long long lo, long long hi, const std::string& field);
// Non-empty vector of probabilities; field[i] is named in the message.
void require_probabilities(const std::vector<double>& v, const std::string& field);

// Acceptance for positions 1..k from a scalar or a per-position vector: a vector shorter than k repeats its
// last entry (a scalar α is a one-element vector), a longer one is cut. Throws on an empty vector.
std::vector<double> expand_positions(const std::vector<double>& alpha, int k, const std::string& field);

}  // namespace speculum::analytic
