// MPI wrappers for sweep --mpi (see mpi_comm.h). Built only with SPECULUM_WITH_MPI.
#include "mpi_comm.h"

#include "../sweep_mpi.h"

#include <mpi.h>

#include <unistd.h>
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace speculum::cli::mpi {

namespace {

void check(int rc, const std::string& what) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw std::runtime_error(what + ": " + std::string(text, static_cast<size_t>(len)));
}

}  // namespace

const char* tag_name(int tag) {
    switch (static_cast<Tag>(tag)) {
        case Tag::ready:
            return "ready";
        case Tag::work:
            return "work";
        case Tag::result:
            return "result";
        case Tag::failed:
            return "failed";
        case Tag::heartbeat:
            return "heartbeat";
        case Tag::stop:
            return "stop";
    }
    return "unknown";
}

MpiSession::MpiSession(int* argc, char*** argv) {
    int provided = 0;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_FUNNELED) {
        MPI_Finalize();
        throw std::runtime_error("the MPI library does not support MPI_THREAD_FUNNELED");
    }
    // Errors come back as codes (turned into exceptions) instead of aborting the job with MPI's own message.
    check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(MPI_COMM_WORLD, &m_rank), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &m_size), "MPI_Comm_size");
}

MpiSession::~MpiSession() {
    MPI_Finalize();
}

std::string MpiSession::broadcast(const std::string& text) {
    unsigned long long n = text.size();
    check(MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast (length)");
    if (n > kMaxMessageBytes) throw std::runtime_error("broadcast of " + std::to_string(n) + " bytes refused");
    std::string out = m_rank == 0 ? text : std::string(n, '\0');
    if (n > 0) check(MPI_Bcast(out.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
    return out;
}

void MpiSession::send(int dest, Tag tag, const std::string& payload) {
    if (payload.size() > kMaxMessageBytes)
        throw std::runtime_error("message of " + std::to_string(payload.size()) + " bytes to rank " +
                                 std::to_string(dest) + " is over the limit");
    check(MPI_Send(payload.data(), static_cast<int>(payload.size()), MPI_CHAR, dest, static_cast<int>(tag),
                   MPI_COMM_WORLD),
          std::string("MPI_Send ") + tag_name(static_cast<int>(tag)) + " to rank " + std::to_string(dest));
}

std::optional<Message> MpiSession::poll() {
    int flag = 0;
    MPI_Status status;
    check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status), "MPI_Iprobe");
    if (!flag) return std::nullopt;
    Message m;
    m.source  = status.MPI_SOURCE;
    m.tag     = status.MPI_TAG;
    int count = 0;
    check(MPI_Get_count(&status, MPI_CHAR, &count), "MPI_Get_count");
    if (count < 0 || static_cast<size_t>(count) > kMaxMessageBytes) {
        // Consume it with a zero-byte receive (MPI_ERR_TRUNCATE, expected) so it does not block the queue.
        char none = 0;
        MPI_Recv(&none, 0, MPI_CHAR, m.source, m.tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        m.refused = "a message of " + std::to_string(count) + " bytes (limit " + std::to_string(kMaxMessageBytes) + ")";
        return m;
    }
    m.payload.resize(static_cast<size_t>(count));
    check(MPI_Recv(m.payload.data(), count, MPI_CHAR, m.source, m.tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Recv from rank " + std::to_string(m.source));
    return m;
}

void MpiSession::abort(int code) {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; in case it does
}

}  // namespace speculum::cli::mpi

namespace speculum::cli {

std::string mpi_library_version() {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len                                   = 0;
    if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) return "unknown MPI";  // callable before MPI_Init
    std::string s(text, static_cast<size_t>(std::max(len, 0)));
    return s.substr(0, s.find_first_of(",\n"));
}

}  // namespace speculum::cli

namespace speculum::cli::mpi {

std::string host_name() {
    char buf[HOST_NAME_MAX + 1] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return "?";
    return buf;
}

}  // namespace speculum::cli::mpi
