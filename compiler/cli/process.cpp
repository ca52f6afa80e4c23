#include "cli/process.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>

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

  // Prepared before the fork: the child may only make async-signal-safe calls.
  const int outputFlags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  const char* outputFile = options.outputFile.empty() ? nullptr : options.outputFile.c_str();
  sigset_t none;
  sigemptyset(&none);
  struct sigaction byDefault {};
  byDefault.sa_handler = SIG_DFL;
  sigemptyset(&byDefault.sa_mask);
  const pid_t parent = getpid();
  // The child reports a failed exec through this pipe (closed on a good exec).
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return result;

  pid_t pid = -1;
  int slot = -1;
  {
    // A signal between the fork and the registration would miss the new
    // child: block it here, and look at the flag once registered.
    BlockInterrupts block;
    if (g_signal != 0) {
      result.interrupted = true;
    } else if ((pid = fork()) == 0) {
      // In its own process group (so a stop reaches what it starts too),
      // and killed with the thread that started it: a capstan killed by
      // SIGKILL, which it cannot catch, leaves no child running on (each
      // capstan it runs does the same for its own children). The parent may
      // have died before the request took effect: then it is gone already.
      setpgid(0, 0);
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
      sigaction(SIGINT, &byDefault, nullptr);
      sigaction(SIGTERM, &byDefault, nullptr);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      if (outputFile) {
        const int fd = open(outputFile, outputFlags, 0644);
        if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(STDOUT_FILENO, STDERR_FILENO) < 0) _exit(127);
      }
      execvp(args[0], args.data());
      const int error = errno;
      [[maybe_unused]] const ssize_t n = write(report[1], &error, sizeof error);
      _exit(127);
    } else if (pid > 0) {
      setpgid(pid, pid);  // also here, so that kill(-pid) works before the child runs
      slot = addChild(pid);
      if (g_signal != 0) kill(-pid, g_signal);
    }
  }
  close(report[1]);
  if (pid > 0) {
    int error = 0;
    ssize_t n;
    while ((n = read(report[0], &error, sizeof error)) < 0 && errno == EINTR) {
    }
    if (n > 0) {  // it could not start: reap it and say so
      if (slot >= 0) g_children[slot].store(0);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      pid = -1;
    }
  }
  close(report[0]);
  if (pid < 0) return result;

  // Poll, so that a time limit and the grace period after a stop need no
  // second thread: 1 ms at first, up to 20 ms between looks.
  const double start = seconds();
  double stoppedAt = -1;  // when SIGTERM went to it (time limit or interrupt)
  bool killed = false;
  double ticked = start;
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
    if (options.onTick && now - ticked >= 1.0) {
      ticked = now;
      options.onTick(now - start);
    }
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
