// Result rows as CSV (see csv.h).
#include "core/store/csv.h"

#include <cstdio>
#include <optional>

namespace speculum::store {

namespace {

std::string num(const std::optional<double>& v, int precision) {
    if (!v) return "";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", precision, *v);
    return buf;
}

}  // namespace

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

void write_results_csv_header(std::ostream& out) {
    out << "config_hash,model_hash,dataset_hash,sweep,task,status";
    for (const auto& c : metric_columns()) out << ',' << c;
    out << ",objective,prompts,wall_s,created_at,message,config_json\n";
}

void write_results_csv_row(std::ostream& out, const ResultRow& r) {
    out << r.key.config_hash << ',' << r.key.model_hash << ',' << r.key.dataset_hash << ',' << csv_field(r.sweep) << ','
        << csv_field(r.task) << ',' << r.status;
    for (const auto& c : metric_columns()) out << ',' << num(r.metric(c), 12);
    out << ',' << num(r.objective, 12) << ',' << r.prompts << ',' << num(r.wall_s, 8) << ',' << r.created_at << ','
        << csv_field(r.message) << ',' << csv_field(r.config.dump()) << '\n';
}

void write_results_csv(std::ostream& out, const std::vector<ResultRow>& rows) {
    write_results_csv_header(out);
    for (const auto& r : rows) write_results_csv_row(out, r);
}

}  // namespace speculum::store
