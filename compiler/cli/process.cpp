#include "cli/process.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>

extern char** environ;

namespace capstan::cli {

namespace {

// The process groups of the running children (their leaders' pids; 0: free
// slot). Lock-free atomics, so the signal handler may read them.
constexpr int kMaxChildren = 256;
std::atomic<pid_t> g_children[kMaxChildren];
volatile std::sig_atomic_t g_signal = 0;

extern "C" void onInterrupt(int sig) {
  if (g_signal == 0) g_signal = sig;
  for (auto& child : g_children) {
    const pid_t pid = child.load();
    if (pid > 0) kill(-pid, sig);
  }
}

int addChild(pid_t pid) {
  for (int i = 0; i < kMaxChildren; ++i) {
    pid_t free = 0;
    if (g_children[i].compare_exchange_strong(free, pid)) return i;
  }
  return -1;  // more children than slots: not forwarded to, still waited for
}

// Blocks SIGINT and SIGTERM in this thread for the lifetime of the guard.
struct BlockInterrupts {
  sigset_t old;
  BlockInterrupts() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old);
  }
  ~BlockInterrupts() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
};

double seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace

void installInterruptHandlers() {
  struct sigaction sa {};
  sa.sa_handler = onInterrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int interruptSignal() { return g_signal; }

const volatile std::sig_atomic_t* interruptFlag() { return &g_signal; }

ChildResult runChild(const std::vector<std::string>& argv, const ChildOptions& options) {
  ChildResult result;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!options.outputFile.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, options.outputFile.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  // Its own process group; the default action for the signals capstan
  // catches and none blocked (this thread blocks them while spawning).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  pid_t pid = -1;
  int slot = -1;
  {
    // A signal between the spawn and the registration would miss the new
    // child: block it here, and look at the flag once registered.
    BlockInterrupts block;
    if (g_signal != 0) {
      result.interrupted = true;
    } else if (posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ) == 0) {
      slot = addChild(pid);
      if (g_signal != 0) kill(-pid, g_signal);
    } else {
      pid = -1;
    }
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (pid < 0) return result;

  // Poll, so that a time limit and the grace period after a stop need no
  // second thread: 1 ms at first, up to 20 ms between looks.
  const double start = seconds();
  double stoppedAt = -1;  // when SIGTERM went to it (time limit or interrupt)
  bool killed = false;
  long pause = 1'000'000;  // ns
  int status = 0;
  bool lost = false;
  for (;;) {
    // Exited? Not reaped yet (WNOWAIT): its pid, and so its group id, stay
    // taken until the group is gone.
    siginfo_t info{};
    const int r = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid) break;
    if (r < 0 && errno != EINTR) {
      lost = true;
      break;
    }
    const double now = seconds();
    if (options.timeoutSeconds > 0 && !result.timedOut && now - start > options.timeoutSeconds) {
      result.timedOut = true;
      kill(-pid, SIGTERM);
    }
    if (stoppedAt < 0 && (result.timedOut || g_signal != 0)) stoppedAt = now;
    if (stoppedAt >= 0 && !killed && now - stoppedAt > 5.0) {
      kill(-pid, SIGKILL);
      killed = true;
    }
    const timespec ts{0, pause};
    nanosleep(&ts, nullptr);
    pause = std::min(pause * 2, 20'000'000L);
  }
  // Whatever the child left running in its group goes with it.
  if (slot >= 0) g_children[slot].store(0);
  if (!lost) kill(-pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.interrupted = g_signal != 0;
  if (lost) return result;
  if (WIFEXITED(status)) result.status = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) result.status = 128 + WTERMSIG(status);
  return result;
}

}  // namespace capstan::cli
