// Child processes that an interrupt or a time limit can stop (SPEC §6,
// "Interrupted runs"): `simulate` runs the compiler and the driver through
// here, `test` runs `capstan simulate` per model.
//
// Each child gets a process group of its own, so stopping it stops what it
// started in turn (the C++ compiler's cc1plus and as). SIGINT and SIGTERM to
// capstan are forwarded to every running child's group; the caller then sees
// interruptSignal() != 0 and exits 128 + that signal, as shells do.
#pragma once

#include <csignal>
#include <functional>
#include <string>
#include <vector>

namespace capstan::cli {

// Installs the SIGINT/SIGTERM handlers that record the signal and forward it
// to the running children. Idempotent.
void installInterruptHandlers();

// The signal that interrupted capstan (SIGINT, SIGTERM), or 0.
int interruptSignal();
// The flag the handlers set, for loops that stop at a whole row
// (capstan::sim::LoopOptions::stop).
const volatile std::sig_atomic_t* interruptFlag();

struct ChildOptions {
  std::string outputFile;       // stdout and stderr both go here; empty: inherited
  double timeoutSeconds = 0;    // > 0: SIGTERM when it runs longer, SIGKILL 5 s later
  // Called about once a second while the child runs, with the seconds since
  // it started (a progress line).
  std::function<void(double)> onTick = {};
};

struct ChildResult {
  int status = -1;          // exit status; 128 + N if killed by signal N; -1: it could not start
  bool timedOut = false;
  bool interrupted = false; // capstan itself was interrupted while it ran (or before it started)
};

// Runs argv (argv[0] found on PATH) and waits for it. Thread-safe: `capstan
// test` runs several at once.
ChildResult runChild(const std::vector<std::string>& argv, const ChildOptions& options = {});

}  // namespace capstan::cli
