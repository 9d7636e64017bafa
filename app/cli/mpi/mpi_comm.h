// The little of MPI that `sweep --mpi` uses, as RAII and exceptions: init/finalize, a broadcast, and point-to-point
// messages of bytes (JSON text) with a tag, received by polling so that no rank busy-waits in a blocking receive
// (OpenMPI's blocking calls spin a core) and the polling thread can do other work between messages.
// Errors return (MPI_ERRORS_RETURN) and become std::runtime_error naming the call and the peer.
#pragma once

#include <optional>
#include <string>

namespace speculum::cli::mpi {

enum class Tag : int {
    ready     = 1,  // worker -> 0: {"model_hash", "host", "pid"}: evaluator loaded, give me work
    work      = 2,  // 0 -> worker: {"task", "grid_index", "config_hash", "prompts"}
    result    = 3,  // worker -> 0: {"task", "row": row_to_json(...)}; the worker is then idle
    failed    = 4,  // worker -> 0: {"task" (or null), "message"}: this rank stops working (it waits for stop)
    heartbeat = 5,  // worker -> 0: {} while evaluating, so that a silent rank can be told from a slow configuration
    stop      = 6,  // 0 -> worker: {"reason"}: cancel what you evaluate, finalize and exit
};
const char* tag_name(int tag);

constexpr size_t kMaxMessageBytes = size_t{64} << 20;  // a larger message is refused (and discarded)

struct Message {
    int source = -1;
    int tag    = 0;
    std::string payload;  // empty when refused (oversized): `refused` says why
    std::string refused;
};

class MpiSession {
public:
    // MPI_Init_thread with MPI_THREAD_FUNNELED (only the thread that constructs the session calls MPI; the
    // evaluation threads never do). Sets MPI_ERRORS_RETURN on MPI_COMM_WORLD.
    MpiSession(int* argc, char*** argv);
    ~MpiSession();  // MPI_Finalize
    MpiSession(const MpiSession&)            = delete;
    MpiSession& operator=(const MpiSession&) = delete;

    int rank() const { return m_rank; }
    int size() const { return m_size; }

    // Rank 0's `text` reaches every rank (length first, then the bytes).
    std::string broadcast(const std::string& text);
    // Blocking standard-mode send; the messages rank 0 sends are small (eager: they complete at once).
    void send(int dest, Tag tag, const std::string& payload);
    // The next pending message from any rank, or nullopt at once when there is none.
    std::optional<Message> poll();
    // Ends every rank of the job (MPI_Abort).
    [[noreturn]] void abort(int code);

private:
    int m_rank = 0;
    int m_size = 1;
};

// "rank 2 (host node17, pid 4242)": how logs name a rank.
std::string host_name();

}  // namespace speculum::cli::mpi
