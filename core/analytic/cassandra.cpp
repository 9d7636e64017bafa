// Cassandra's objective J and exact bit accounting (see cassandra.h).
#include "core/analytic/cassandra.h"

#include "core/analytic/checks.h"

#include <string>

namespace speculum::analytic {

void validate(const CassandraConfig& c) {
    require_probability(c.w_p, "cassandra.w_p");
    require_probability(c.kv_p, "cassandra.kv_p");
    if (!(c.bits >= 2.0 && c.bits <= 64.0))
        throw InvalidInput("cassandra.bits must be in [2, 64] bits per stored element, got " + std::to_string(c.bits));
    // Mantissa truncation needs a float format (sign, 8 exponent bits, the rest mantissa); a quantized target
    // (Q8_0 8.5, Q4_0 4.5 bits) has no mantissa to truncate.
    const int mantissa = is_float_format(c) ? int(c.bits) - 9 : 0;
    if (!is_float_format(c) && (c.w_t > 0 || c.kv_t > 0))
        throw InvalidInput("cassandra.w_t / kv_t: a target stored at B = " + std::to_string(c.bits) +
                           " bits per element (quantized) has no mantissa to truncate; set both to 0");
    require_count(c.w_t, 0, mantissa, "cassandra.w_t");
    require_count(c.kv_t, 0, mantissa, "cassandra.kv_t");
    require_nonnegative(c.s_w, "cassandra.s_w");
    require_nonnegative(c.s_kv, "cassandra.s_kv");
    if (c.s_w + c.s_kv <= 0) throw InvalidInput("cassandra.s_w + cassandra.s_kv must be > 0");
    require_nonnegative(c.exp_bits, "cassandra.exp_bits");
    require_nonnegative(c.map_bits, "cassandra.map_bits");
}

bool is_float_format(const CassandraConfig& c) {
    return c.bits >= 10.0 && c.bits == double(int(c.bits));
}

double cassandra_j(double alpha, const CassandraConfig& c) {
    require_probability(alpha, "alpha");
    validate(c);
    double denom = c.s_w * (1.0 - c.w_p) * (c.bits - c.w_t) + c.s_kv * (1.0 - c.kv_p) * (c.bits - c.kv_t);
    if (denom <= 0) throw InvalidInput("cassandra: the draft reads no bits (pruning ratio 1?)");
    return alpha / denom;
}

double compact_element_bits(double p, int t, double exp_bits, int mantissa, double map_bits) {
    return (1 - p) * (1 + exp_bits + mantissa - t) + map_bits;
}

CassandraBits cassandra_bits(const CassandraConfig& c) {
    validate(c);
    // Float formats: sign + (compressed) exponent + stored mantissa; quantized ones keep their stored bits per kept
    // element (no truncation, no exponent compression).
    const bool fl  = is_float_format(c);
    const double m = fl ? c.bits - 9 : 0;  // stored mantissa bits
    auto kept_bits = [&](int t) { return fl ? 1 + c.exp_bits + m - t : c.bits; };
    auto draft     = [&](double p, int t) { return (1 - p) * kept_bits(t) + c.map_bits; };
    auto full      = [&](double p) { return (1 - p) * kept_bits(0) + p * c.bits + c.map_bits; };
    CassandraBits b;
    b.draft_bits_per_weight = draft(c.w_p, c.w_t);
    b.full_bits_per_weight  = full(c.w_p);
    b.draft_bits_per_kv     = draft(c.kv_p, c.kv_t);
    b.full_bits_per_kv      = full(c.kv_p);
    b.eq2_bits_per_weight   = (1 - c.w_p) * (c.bits - c.w_t);
    b.draft_total_bits      = c.s_w * b.draft_bits_per_weight + c.s_kv * b.draft_bits_per_kv;
    b.full_total_bits       = c.s_w * b.full_bits_per_weight + c.s_kv * b.full_bits_per_kv;
    b.dense_total_bits      = (c.s_w + c.s_kv) * c.bits;
    b.draft_cost_ratio      = b.draft_total_bits / b.dense_total_bits;
    b.verify_cost_ratio     = b.full_total_bits / b.dense_total_bits;
    return b;
}

}  // namespace speculum::analytic
