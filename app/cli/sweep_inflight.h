// What a multi-process sweep (sweep --mpi) has handed out and not got back, kept next to the store as
// `<db>.inflight.json`, so that a job killed by its launcher still says which configurations it lost and on
// which rank. Only a report: resuming needs nothing from it (a re-run evaluates whatever the store lacks).
#pragma once

#include "core/store/result_store.h"

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace speculum::cli {

struct InflightEntry {
    int rank = 0;             // MPI rank evaluating it
    std::string host;         // that rank's host name
    int64_t pid         = 0;  // that rank's process id
    uint64_t grid_index = 0;
    std::string config_hash;
    std::string label;  // "k=4 alpha=0.7"
    int prompts = 0;
    std::string since;  // UTC ISO-8601, when it was handed out
    bool operator==(const InflightEntry&) const = default;
};

struct InflightRecord {
    std::string sweep;                      // the spec's name
    std::vector<InflightEntry> in_flight;   // handed out, result not yet stored
    std::vector<InflightEntry> unfinished;  // given up on in this run (lost twice): evaluated by the next run
    std::string updated_at;                 // UTC ISO-8601
    bool operator==(const InflightRecord&) const = default;
};

std::filesystem::path inflight_path(const std::filesystem::path& db);
std::string utc_now_iso();

// Atomic (temporary file + rename): a reader never sees half a file. Throws std::runtime_error naming the file.
void write_inflight(const std::filesystem::path& file, const InflightRecord& record);
// nullopt when the file is absent; throws std::runtime_error naming the file when it is malformed.
std::optional<InflightRecord> read_inflight(const std::filesystem::path& file);

// If the previous run left `<db>.inflight.json`, prints its configurations and whether each is in the store now
// (those that are not are evaluated by this run). A malformed file is reported, not fatal. Returns the number of
// configurations listed.
size_t report_previous_inflight(const std::filesystem::path& db, const store::ResultStore& store, std::ostream& out);

}  // namespace speculum::cli
