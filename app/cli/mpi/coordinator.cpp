// Rank 0's work distribution for sweep --mpi (see coordinator.h).
#include "coordinator.h"

#include "../sweep_common.h"
#include "core/store/row_json.h"

#include <unistd.h>
#include <ostream>
#include <thread>

namespace speculum::cli::mpi {

namespace {

using nlohmann::json;

constexpr int kMaxAttempts = 2;  // a configuration lost with two ranks is given up (and left to the next run)
// The in-flight list is rewritten on every change, but at most this often (a fast sweep changes it per millisecond).
constexpr auto kInflightWriteInterval = std::chrono::milliseconds(200);
// An idle loop sleeps this long: rank 0 answers within about a millisecond yet uses no core while it waits.
constexpr auto kIdleSleep = std::chrono::microseconds(500);

}  // namespace

// ---- construction ----

Coordinator::Coordinator(MpiSession& comm, const sweep::SweepSpec& spec, sweep::Evaluator& evaluator,
                         const std::filesystem::path& db, const MpiSweepOptions& options,
                         const volatile sig_atomic_t& interrupted, std::ostream& log)
    : m_comm(comm),
      m_spec(spec),
      m_evaluator(evaluator),
      m_inflight_file(inflight_path(db)),
      m_options(options),
      m_interrupted(interrupted),
      m_log(log),
      m_model_hash(evaluator.model_hash()),
      m_ranks(static_cast<size_t>(comm.size())) {
    m_ranks[0].state = options.coordinator_only ? State::gone : State::idle;
    m_ranks[0].host  = host_name();
    m_ranks[0].pid   = getpid();
    for (auto& r : m_ranks) r.last_heard = Clock::now();
}

Coordinator::~Coordinator() {
    shutdown("coordinator closed");
}

std::string Coordinator::who(int r) const {
    const Rank& k = m_ranks[static_cast<size_t>(r)];
    std::string s = "rank " + std::to_string(r);
    if (!k.host.empty()) s += " (pid " + std::to_string(k.pid) + " on " + k.host + ")";
    return s;
}

// ---- in-flight list ----

InflightEntry Coordinator::entry(int r, const Task& t) const {
    const sweep::SweepPoint& p = (*m_batch->points)[t.k];
    InflightEntry e{r, "", 0, p.grid_index, p.config_hash, p.label, m_batch->prompts, t.since};
    if (r >= 0) {
        e.host = m_ranks[static_cast<size_t>(r)].host;
        e.pid  = m_ranks[static_cast<size_t>(r)].pid;
    }
    return e;
}

std::vector<InflightEntry> Coordinator::in_flight() const {
    std::vector<InflightEntry> out;
    if (!m_batch) return out;
    for (size_t r = 0; r < m_ranks.size(); ++r)
        if (m_ranks[r].task) out.push_back(entry(static_cast<int>(r), *m_ranks[r].task));
    return out;
}

void Coordinator::mark_dirty() {
    m_dirty = true;
}

void Coordinator::write_inflight_now() {
    InflightRecord rec;
    rec.sweep      = m_spec.name;
    rec.in_flight  = m_batch ? in_flight() : m_stranded;
    rec.unfinished = m_unfinished;
    rec.updated_at = utc_now_iso();
    write_inflight(m_inflight_file, rec);
    m_dirty      = false;
    m_last_write = Clock::now();
}

void Coordinator::write_inflight_if_due() {
    if (m_dirty && Clock::now() - m_last_write >= kInflightWriteInterval) write_inflight_now();
}

void Coordinator::remove_inflight() {
    std::error_code ec;
    std::filesystem::remove(m_inflight_file, ec);
}

// ---- stopping and dropping ranks ----

void Coordinator::stop_rank(int r, const std::string& reason) noexcept {
    Rank& k = m_ranks[static_cast<size_t>(r)];
    if (r == 0 || k.stopped) return;
    k.stopped = true;
    try {
        m_comm.send(r, Tag::stop, json{{"reason", reason}}.dump());
    } catch (const std::exception&) {
        // a dead rank (the launcher kept the job alive): nothing to stop
    }
}

void Coordinator::shutdown(const std::string& reason) noexcept {
    for (int r = 1; r < m_comm.size(); ++r) stop_rank(r, reason);
    m_local.reset();  // cancels and joins rank 0's own evaluation
}

void Coordinator::give_back(Batch& b, size_t k, int r) {
    if (b.attempts[k] >= kMaxAttempts) {
        Task t{0, k, utc_now_iso()};
        m_unfinished.push_back(entry(r, t));
        --b.remaining;
        m_log << "  giving up on " << (*b.points)[k].label << " [" << (*b.points)[k].config_hash
              << "] for this run (lost " << b.attempts[k] << " times); the next run evaluates it\n";
    } else {
        b.queue.push_front(k);  // first in line: its result is the oldest missing one
        m_log << "  " << (*b.points)[k].label << " goes back to the queue\n";
    }
    mark_dirty();
}

void Coordinator::drop_rank(int r, const std::string& why, Batch* b) {
    Rank& k = m_ranks[static_cast<size_t>(r)];
    if (k.state == State::gone) return;
    k.state = State::gone;
    ++m_lost;
    m_log << who(r) << " lost: " << why << '\n';
    if (k.task) {
        Task t = *k.task;
        k.task.reset();
        if (b) give_back(*b, t.k, r);
    }
    if (r == 0)
        m_local.reset();
    else
        stop_rank(r, "dropped by rank 0: " + why);
    m_log << std::flush;
}

// ---- messages ----

void Coordinator::deliver(Batch& b, int r, store::ResultRow row) {
    Rank& k  = m_ranks[static_cast<size_t>(r)];
    size_t i = k.task->k;
    k.task.reset();
    k.state        = State::idle;
    m_current_rank = r;
    mark_dirty();
    --b.remaining;
    (*b.finish)(i, std::move(row));  // stored by the runner before it returns
    // A result is also the rank's request for more: answer it now, not after the rest of the message queue.
    if (!b.queue.empty() && k.state == State::idle) assign_one(b, static_cast<size_t>(r));
}

store::ResultRow Coordinator::validate_result(int r, const json& body, const Batch& b) const {
    const Rank& k = m_ranks[static_cast<size_t>(r)];
    if (k.state != State::busy || !k.task) throw std::invalid_argument("a result while it held no configuration");
    if (!body.contains("task") || !body["task"].is_number_unsigned() || body["task"].get<uint64_t>() != k.task->id)
        throw std::invalid_argument("a result for another task than the one it holds");
    if (!body.contains("row")) throw std::invalid_argument("a result without a row");
    store::ResultRow row       = store::row_from_json(body["row"]);
    const sweep::SweepPoint& p = (*b.points)[k.task->k];
    store::ResultKey expected{p.config_hash, m_model_hash, m_evaluator.dataset_hash(p.config, b.prompts)};
    if (!(row.key == expected))
        throw std::invalid_argument("a row keyed " + row.key.config_hash + "/" + row.key.model_hash + "/" +
                                    row.key.dataset_hash + " where rank 0 expects " + expected.config_hash + "/" +
                                    expected.model_hash + "/" + expected.dataset_hash +
                                    " (do the ranks see different model or dataset files?)");
    if (row.config != p.config) throw std::invalid_argument("a row whose configuration differs from the one sent");
    return row;
}

void Coordinator::handle(const Message& m, Batch& b) {
    if (m.source <= 0 || m.source >= m_comm.size()) return;
    Rank& k = m_ranks[static_cast<size_t>(m.source)];
    if (k.state == State::gone) return;  // a dropped rank that is still talking: its work went elsewhere
    k.last_heard = Clock::now();
    if (!m.refused.empty()) return drop_rank(m.source, "sent " + m.refused, &b);
    // Validate everything the sender controls; a bad message drops the sender, never the sweep. Delivering (the
    // store write) happens after, outside the try: its errors are rank 0's and end the sweep.
    std::optional<store::ResultRow> row;
    try {
        json body = json::parse(m.payload);
        if (!body.is_object()) throw std::invalid_argument("not a JSON object");
        switch (static_cast<Tag>(m.tag)) {
            case Tag::ready: {
                if (k.state != State::starting) throw std::invalid_argument("ready twice");
                k.host                 = body.at("host").get<std::string>();
                k.pid                  = body.at("pid").get<int64_t>();
                std::string model_hash = body.at("model_hash").get<std::string>();
                if (model_hash != m_model_hash)
                    return drop_rank(m.source,
                                     "its model hash " + model_hash + " differs from rank 0's " + m_model_hash +
                                         " (a different model file on that node?)",
                                     &b);
                k.state = State::idle;
                if (!m_options.quiet) m_log << who(m.source) << " ready\n";
                return;
            }
            case Tag::heartbeat:
                return;
            case Tag::result:
                row = validate_result(m.source, body, b);
                break;
            case Tag::failed: {
                std::string message = body.contains("message") && body["message"].is_string()
                                          ? body["message"].get<std::string>()
                                          : std::string("(no message)");
                return drop_rank(m.source, "it reported: " + message, &b);
            }
            default:
                throw std::invalid_argument(std::string("unexpected message '") + tag_name(m.tag) + "'");
        }
    } catch (const std::exception& e) {
        return drop_rank(m.source, std::string("invalid ") + tag_name(m.tag) + " message: " + e.what(), &b);
    }
    if (row) deliver(b, m.source, std::move(*row));
}

void Coordinator::handle_local(Batch& b) {
    std::unique_ptr<AsyncEvaluation> done = std::move(m_local);
    if (done->row()) return deliver(b, 0, *done->row());
    if (!done->error().empty()) return drop_rank(0, "rank 0's evaluation thread: " + done->error(), &b);
    // Cancelled without a row: only on interrupt, which run_batch handles before it gets here.
    drop_rank(0, "rank 0's evaluation was cancelled", &b);
}

// ---- assignment and timeouts ----

void Coordinator::assign_one(Batch& b, size_t r) {
    Rank& k  = m_ranks[r];
    size_t i = b.queue.front();
    b.queue.pop_front();
    ++b.attempts[i];
    const sweep::SweepPoint& p = (*b.points)[i];
    k.task                     = Task{m_next_task++, i, utc_now_iso()};
    k.state                    = State::busy;
    k.last_heard               = Clock::now();
    mark_dirty();
    if (r == 0) {
        m_local = std::make_unique<AsyncEvaluation>(m_spec, m_evaluator, p, b.prompts);
        return;
    }
    json work = {
        {"task", k.task->id}, {"grid_index", p.grid_index}, {"config_hash", p.config_hash}, {"prompts", b.prompts}};
    try {
        m_comm.send(static_cast<int>(r), Tag::work, work.dump());
    } catch (const std::exception& e) {
        drop_rank(static_cast<int>(r), e.what(), &b);
    }
}

bool Coordinator::assign(Batch& b) {
    bool any = false;
    for (size_t r = 0; r < m_ranks.size() && !b.queue.empty(); ++r) {
        if (m_ranks[r].state != State::idle) continue;
        assign_one(b, r);
        any = true;
    }
    return any;
}

void Coordinator::check_timeouts(Batch& b) {
    if (m_options.timeout_s <= 0) return;
    auto limit = std::chrono::duration<double>(m_options.timeout_s);
    auto now   = Clock::now();
    for (size_t r = 1; r < m_ranks.size(); ++r) {
        const Rank& k = m_ranks[r];
        // Idle ranks hold nothing and send nothing; starting and busy ranks send heartbeats.
        if ((k.state == State::busy || k.state == State::starting) && now - k.last_heard > limit)
            drop_rank(static_cast<int>(r),
                      "no message for " + fmt(std::chrono::duration<double>(now - k.last_heard).count(), 1) + " s", &b);
    }
}

// ---- batch loop ----

void Coordinator::run_batch(const std::vector<sweep::SweepPoint>& points, int prompts, const sweep::FinishFn& finish) {
    Batch b;
    b.points  = &points;
    b.prompts = prompts;
    b.finish  = &finish;
    b.attempts.assign(points.size(), 0);
    b.remaining = points.size();
    for (size_t i = 0; i < points.size(); ++i) b.queue.push_back(i);
    m_batch = &b;
    try {
        distribute(b);
    } catch (...) {
        // Interrupted (or the store failed): keep what was in flight for the report and the next run.
        m_stranded = in_flight();
        m_batch    = nullptr;
        try {
            write_inflight_now();
        } catch (const std::exception& e) {
            m_log << "cannot write the in-flight list: " << e.what() << '\n';
        }
        throw;
    }
    m_batch = nullptr;
    if (m_dirty) write_inflight_now();
}

void Coordinator::distribute(Batch& b) {
    while (b.remaining > 0) {
        if (m_interrupted) throw Cancelled();
        bool activity = false;
        while (auto m = m_comm.poll()) {  // drain first: queued heartbeats count before any timeout
            activity = true;
            handle(*m, b);
        }
        if (m_local && m_local->finished()) {
            activity = true;
            handle_local(b);
        }
        check_timeouts(b);
        activity |= assign(b);

        // Nobody left to evaluate the queue (every rank dropped, none still starting): give the rest up.
        bool can_work = false;
        for (const auto& k : m_ranks) can_work |= k.state != State::gone;
        if (!can_work) {
            while (!b.queue.empty()) {
                size_t i = b.queue.front();
                b.queue.pop_front();
                b.attempts[i] = kMaxAttempts;
                give_back(b, i, -1);  // never handed out
            }
        }
        write_inflight_if_due();
        m_log << std::flush;
        if (!activity) std::this_thread::sleep_for(kIdleSleep);
    }
}

}  // namespace speculum::cli::mpi
