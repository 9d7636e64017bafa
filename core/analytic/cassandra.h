// Cassandra (paper 000) draft-configuration objective J, Eq. (2), and the exact bit accounting of its
// speculation/verification split. Reading (design/analytic_readings.md): S_w and S_kv are element counts, B is the
// target's stored bits per element (16 in the paper's BF16; 8.5 for a Q8_0 target, issue #24);
// J's denominator ignores exponent compression and the bitmap, as the paper does; the exact accounting
// (sign + compressed exponent + kept mantissa + 1-bit bitmap) is reported separately. Values are "modeled".
#pragma once

namespace speculum::analytic {

struct CassandraConfig {
    double w_p  = 0.4;         // weight pruning ratio: fraction of weights left out of the draft
    double kv_p = 0.4;         // KV-cache pruning ratio
    int w_t     = 4;           // mantissa bits truncated from draft weights
    int kv_t    = 4;           // mantissa bits truncated from the draft KV cache
    double bits = 16;          // B: bits per stored element of the target (BF16/F16 16, Q8_0 8.5, Q4_0 4.5);
                               // an integer >= 10 is a float format (1 sign, 8 exponent, B - 9 mantissa bits)
    double s_w      = 8.03e9;  // weight elements (Llama3-8B)
    double s_kv     = 0;       // KV-cache elements at the context of interest (0 = weights only)
    double exp_bits = 2.85;    // mean compressed exponent bits (unary, paper Fig. 6b; MX: shared bits / block)
    double map_bits = 1.0;     // bitmap bits per element (speculation vs verification)
    bool operator==(const CassandraConfig&) const = default;
};
void validate(const CassandraConfig& c);
bool is_float_format(const CassandraConfig& c);  // B an integer >= 10: a mantissa exists to truncate

// Eq. (2): J = α / (S_w (1−w_p)(B−w_t) + S_kv (1−kv_p)(B−kv_t)), in 1/bits. `alpha` is Table IV's
// acceptance rate (a scalar in [0, 1]).
double cassandra_j(double alpha, const CassandraConfig& c);

struct CassandraBits {
    double draft_bits_per_weight = 0;  // (1−p)(1 + e + m − t) + map
    double full_bits_per_weight  = 0;  // (1−p)(1 + e + m) + p·B + map (what the target reads)
    double draft_bits_per_kv     = 0;
    double full_bits_per_kv      = 0;
    double eq2_bits_per_weight   = 0;  // (1−w_p)(B−w_t): Eq. (2)'s per-element figure, for comparison
    double draft_total_bits      = 0;  // S_w · draft_w + S_kv · draft_kv
    double full_total_bits       = 0;
    double dense_total_bits      = 0;  // (S_w + S_kv) · B: the uncompressed target
    double draft_cost_ratio      = 0;  // draft_total / dense_total: c of a memory-bound draft
    double verify_cost_ratio     = 0;  // full_total / dense_total: the verify pass reads less than dense BF16
};
// The one per-element formula of a pruned, truncated value in Cassandra's compact form, shared by this model, the
// engine's and the CLI's draft accounting (drafts::matrix_bits) and the app: (1 − p)(1 + e + m − t) + map, with
// e exponent bits (8 as BF16 stores them; fewer only under exponent compression, which Speculum models and does
// not implement), m stored mantissa bits and map the presence-bitmap bits.
double compact_element_bits(double p, int t, double exp_bits = 8, int mantissa = 7, double map_bits = 1);

// m = B − 9 stored mantissa bits (BF16: 7); pruned elements are stored raw (B bits) in the verification stream.
CassandraBits cassandra_bits(const CassandraConfig& c);

}  // namespace speculum::analytic
