// <db>.inflight.json: the in-flight list of an MPI sweep (see sweep_inflight.h).
#include "sweep_inflight.h"

#include "core/file_io.h"
#include "core/json_input.h"
#include "core/json_reader.h"

#include <nlohmann/json.hpp>

#include <unistd.h>
#include <ctime>
#include <fstream>
#include <ostream>
#include <sstream>

namespace speculum::cli {

namespace {

using nlohmann::json;

json entry_json(const InflightEntry& e) {
    return json{{"rank", e.rank},
                {"host", e.host},
                {"pid", e.pid},
                {"grid_index", e.grid_index},
                {"config_hash", e.config_hash},
                {"label", e.label},
                {"prompts", e.prompts},
                {"since", e.since}};
}

InflightEntry entry_from(const json& j, const std::string& where) {
    JsonReader r(j, where);
    InflightEntry e;
    for (const char* key : {"rank", "host", "pid", "grid_index", "config_hash", "label", "prompts", "since"})
        r.need(key);
    r.get("rank", e.rank), r.get("host", e.host), r.get("pid", e.pid), r.get("grid_index", e.grid_index);
    r.get("config_hash", e.config_hash), r.get("label", e.label), r.get("prompts", e.prompts);
    r.get("since", e.since);
    r.finish();
    return e;
}

void print_entries(std::ostream& out, const std::vector<InflightEntry>& entries, const store::ResultStore& store,
                   const char* what) {
    for (const auto& e : entries) {
        bool stored = !store.query({{"config_hash", "=", e.config_hash}}).empty();
        out << "  " << what << " on rank " << e.rank << " (pid " << e.pid << " on " << e.host << ") since " << e.since
            << ": " << e.label << " [" << e.config_hash << "]"
            << (stored ? " - in the store now" : " - not stored: evaluated by this run") << '\n';
    }
}

}  // namespace

std::filesystem::path inflight_path(const std::filesystem::path& db) {
    return db.string() + ".inflight.json";
}

std::string utc_now_iso() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

void write_inflight(const std::filesystem::path& file, const InflightRecord& record) {
    json in_flight = json::array(), unfinished = json::array();
    for (const auto& e : record.in_flight) in_flight.push_back(entry_json(e));
    for (const auto& e : record.unfinished) unfinished.push_back(entry_json(e));
    json j = {{"sweep", record.sweep},
              {"updated_at", record.updated_at},
              {"in_flight", in_flight},
              {"unfinished", unfinished}};
    write_file_atomic(file.string(), j.dump(1) + "\n");
}

std::optional<InflightRecord> read_inflight(const std::filesystem::path& file) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return std::nullopt;
    try {
        json j = parse_json(read_input_file(file.string(), kMaxConfigFileBytes, "in-flight record"), file.string());
        JsonReader in(j, "in-flight list");
        InflightRecord r;
        for (const char* key : {"sweep", "updated_at", "in_flight", "unfinished"}) in.need(key);
        in.get("sweep", r.sweep), in.get("updated_at", r.updated_at);
        for (auto [key, out] : {std::pair{"in_flight", &r.in_flight}, {"unfinished", &r.unfinished}}) {
            const json& list = in.need(key);
            if (!list.is_array()) in.fail(in.at(key), "expected an array, got " + json_kind(list));
            for (size_t i = 0; i < list.size(); ++i) out->push_back(entry_from(list[i], json_path(in.at(key), i)));
        }
        in.finish();
        return r;
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(file.string() + ": not an in-flight list: " + e.what());
    }
}

size_t report_previous_inflight(const std::filesystem::path& db, const store::ResultStore& store, std::ostream& out) {
    std::filesystem::path file = inflight_path(db);
    std::optional<InflightRecord> r;
    try {
        r = read_inflight(file);
    } catch (const std::exception& e) {
        out << "note: ignoring " << e.what() << '\n';
        return 0;
    }
    if (!r || (r->in_flight.empty() && r->unfinished.empty())) return 0;
    out << "the previous run of sweep " << r->sweep << " on this store stopped (last update " << r->updated_at
        << ") with " << r->in_flight.size() << " configuration(s) in flight and " << r->unfinished.size()
        << " given up:\n";
    print_entries(out, r->in_flight, store, "in flight");
    print_entries(out, r->unfinished, store, "given up");
    return r->in_flight.size() + r->unfinished.size();
}

}  // namespace speculum::cli
