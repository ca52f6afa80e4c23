// Process guards around one simulation run, for a program that runs a model
// in process: the driver program `capstan simulate` builds, and `capstan
// simulate --interpret`. Whatever ends the process while the model's code
// runs -- a crash in an external C++ function (SIGSEGV, SIGABRT, ...), an
// `exit()` it calls, or a wall-clock limit passed inside a step that never
// returns -- the complete rows reach the output first, whole, and a message
// on stderr says what happened (a crash: the process that started this one
// says it, or `crashNote`):
//
//   capstan::sim::RowWriter out(fd);
//   capstan::sim::GuardOptions options;
//   options.wallClockLimit = 2.0;
//   const capstan::sim::RunGuard guard(out, std::move(options));
//   result = capstan::sim::simulate(model, request, out);
//
// The limit itself is the Request's (simulate.hpp): the run stops at the
// next derivative evaluation past it and reports so. The guard is the last
// resort for code that does not return: `grace` seconds later it writes the
// rows and ends the process with status 1.
//
// POSIX (signals, setitimer, atexit); one RunGuard at a time per process,
// on the thread that runs the model. Not for a library embedding a model in
// a larger program, which decides for itself what a crash or exit() means.
#pragma once

#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "capstan/sim/csv.hpp"
#include "capstan/sim/evaluating.hpp"

namespace capstan::sim {

struct GuardOptions {
  double wallClockLimit = 0.0;  // s; > 0: the Request's limit, after which the guard waits `grace` s more
  double grace = 1.0;           // s
  // Written to stderr after the rows when the model's code crashes (empty:
  // nothing, the process that started this one says it), e.g. "capstan:
  // error: the model's code crashed (signal 11) ...". The signal's number
  // goes where `crashNote` holds "{signal}".
  std::string crashNote;
  // false: leave the crash signals to the program's own handlers (capstan
  // --interpret jumps back to the external call that crashed and reports it
  // at its place in the model).
  bool catchCrashes = true;
  // Where a crash leaves the state being evaluated when it came
  // (evaluating.hpp), for the process that started this one to locate the
  // fault at its line: readFaultFile() reads it. Empty: nowhere.
  std::string crashStateFile;
};

namespace detail {

// The guard's state, read by the signal handlers and the exit handler.
struct GuardState {
  RowWriter* rows = nullptr;
  std::string crashNote;      // with "{signal}" where the number goes
  std::string timeoutNote;    // complete, newline-terminated
  std::string crashStateFile;
  struct sigaction previous[5] {};
  bool exitHandlerInstalled = false;
};
inline GuardState& guardState() {
  static GuardState state;
  return state;
}
inline constexpr int kCrashSignals[5] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// Async-signal-safe: write(2) of a whole string.
inline void writeAll(int fd, const char* text, std::size_t n) noexcept {
  while (n > 0) {
    const ssize_t k = ::write(fd, text, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    text += k;
    n -= static_cast<std::size_t>(k);
  }
}

// `note` on stderr with "{NAME}" replaced by `value`, without allocating.
inline void writeNote(const std::string& note, const char* name, long value) noexcept {
  const std::size_t at = note.find(name);
  if (at == std::string::npos) return writeAll(STDERR_FILENO, note.data(), note.size());
  writeAll(STDERR_FILENO, note.data(), at);
  char digits[24];
  int n = 0;
  for (long v = value < 0 ? 0 : value; n == 0 || v > 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  for (int i = n - 1; i >= 0; --i) writeAll(STDERR_FILENO, &digits[i], 1);
  const std::size_t skip = at + std::char_traits<char>::length(name);
  writeAll(STDERR_FILENO, note.data() + skip, note.size() - skip);
}

// Async-signal-safe: `value` in base 10 or 16 (the bits of a double, exact).
inline void writeUnsigned(int fd, unsigned long long value, unsigned base) noexcept {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[value % base];
    value /= base;
  } while (value > 0);
  while (n > 0) writeAll(fd, &digits[--n], 1);
}
inline void writeBits(int fd, double value) noexcept {
  unsigned long long bits = 0;
  static_assert(sizeof bits == sizeof value);
  std::memcpy(&bits, &value, sizeof value);
  writeAll(fd, " ", 1);
  writeUnsigned(fd, bits, 16);
}

// The state being evaluated (evaluating.hpp), as readFaultFile() reads a
// crash: `crashed SIGNAL`, `time T`, `q NQ ...`, `u NU ...`, `rows N`.
inline void writeCrashState(const char* path, int sig, long rows) noexcept {
  const Evaluating* e = evaluating();
  if (!e) return;
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return;
  writeAll(fd, "crashed ", 8);
  writeUnsigned(fd, static_cast<unsigned long long>(sig), 10);
  writeAll(fd, "\ntime", 5);
  writeBits(fd, e->t);
  writeAll(fd, "\nq ", 3);
  writeUnsigned(fd, static_cast<unsigned long long>(e->nq), 10);
  for (int i = 0; i < e->nq; ++i) writeBits(fd, e->q[i]);
  writeAll(fd, "\nu ", 3);
  writeUnsigned(fd, static_cast<unsigned long long>(e->nu), 10);
  for (int i = 0; i < e->nu; ++i) writeBits(fd, e->u[i]);
  writeAll(fd, "\nrows ", 6);
  writeUnsigned(fd, static_cast<unsigned long long>(rows < 0 ? 0 : rows), 10);
  writeAll(fd, "\n", 1);
  ::close(fd);
}

extern "C" inline void guardOnCrash(int sig) {
  GuardState& s = guardState();
  if (s.rows) s.rows->flushBeforeDying();
  if (s.rows && !s.crashStateFile.empty()) writeCrashState(s.crashStateFile.c_str(), sig, s.rows->rowsComplete());
  if (s.rows && !s.crashNote.empty()) writeNote(s.crashNote, "{signal}", sig);
  // The signal's default course: the process is seen killed by it.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

extern "C" inline void guardOnAlarm(int) {
  GuardState& s = guardState();
  if (!s.rows) return;
  s.rows->flushBeforeDying();
  writeNote(s.timeoutNote, "{rows}", s.rows->rowsComplete());
  ::_exit(1);
}

// exit() called by the model's code during a run: the rows, a message, and
// status 1 (a model's exit(0) is not a completed run).
extern "C" inline void guardOnExit() {
  GuardState& s = guardState();
  if (!s.rows) return;
  s.rows->flush();
  const std::string note = "capstan: error: the model's code called exit() during the simulation; " +
                           rowCount(s.rows->rowsWritten()) + " written\n";
  writeAll(STDERR_FILENO, note.data(), note.size());
  ::_exit(1);
}

}  // namespace detail

class RunGuard {
 public:
  RunGuard(RowWriter& rows, GuardOptions options) {
    detail::GuardState& s = detail::guardState();
    s.crashNote = std::move(options.crashNote);
    s.crashStateFile = std::move(options.crashStateFile);
    if (options.wallClockLimit > 0) {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", options.wallClockLimit);
      s.timeoutNote = "capstan: error: the simulation ran longer than " + std::string(limit) +
                      " s (`--timeout`) and the model's code did not return in the next " +
                      std::to_string(static_cast<int>(options.grace + 0.5)) +
                      " s (an external C++ function that never returns?); {rows} complete rows written\n";
    }
    s.rows = &rows;
    crashes_ = options.catchCrashes;
    for (int i = 0; crashes_ && i < 5; ++i) {
      struct sigaction sa {};
      sa.sa_handler = detail::guardOnCrash;
      sigemptyset(&sa.sa_mask);
      sigaction(detail::kCrashSignals[i], &sa, &s.previous[i]);
    }
    if (!s.exitHandlerInstalled) s.exitHandlerInstalled = std::atexit(detail::guardOnExit) == 0;
    if (options.wallClockLimit > 0) {
      struct sigaction sa {};
      sa.sa_handler = detail::guardOnAlarm;
      sigemptyset(&sa.sa_mask);
      sigaction(SIGALRM, &sa, nullptr);
      const double after = options.wallClockLimit + options.grace;
      itimerval timer{};
      timer.it_value.tv_sec = static_cast<time_t>(after);
      timer.it_value.tv_usec = static_cast<suseconds_t>((after - static_cast<double>(timer.it_value.tv_sec)) * 1e6);
      setitimer(ITIMER_REAL, &timer, nullptr);
      timed_ = true;
    }
  }
  ~RunGuard() {
    detail::GuardState& s = detail::guardState();
    if (timed_) {
      itimerval off{};
      setitimer(ITIMER_REAL, &off, nullptr);
      ::signal(SIGALRM, SIG_DFL);
    }
    for (int i = 0; crashes_ && i < 5; ++i) sigaction(detail::kCrashSignals[i], &s.previous[i], nullptr);
    s.rows = nullptr;
  }
  RunGuard(const RunGuard&) = delete;
  RunGuard& operator=(const RunGuard&) = delete;

 private:
  bool timed_ = false, crashes_ = true;
};

}  // namespace capstan::sim
