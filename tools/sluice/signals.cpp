#include "signals.h"

#include <unistd.h>

#include <csignal>

namespace sluice::cli {
namespace {

// SIGINT and SIGTERM are handled from main()'s first instruction (see
// install_signal_handlers): before a Loader exists the handler only notes the
// signal, and the Loader is interrupted as soon as it is built; with a Loader,
// it interrupts it (async-signal-safe) so that the loop over its batches ends
// at once: `sluice run` then saves the state, `sluice write` keeps the shards
// written, and each exits 128 + signal.
//
// A start-up that does not end cannot be interrupted that way: the script's
// top level or its trial of the first sample may loop (LuaJIT runs compiled
// loops without hooks). So a signal before the Loader exists arms a 2 s alarm,
// and a second signal or the alarm, still without a Loader, exits at once with
// 128 + the first signal, saving nothing.
//
// Only in the process that installed them: a child forked meanwhile (the
// zygote, before it sets its own dispositions) that takes a signal sent to
// the whole process group (timeout(1), Slurm) must not arm an alarm that
// fires after the command has returned and says the opposite of what it did.
//
// And only while starting: the handler may run on any thread of the process,
// between the main thread's setting g_loader and its cancelling the alarm, so
// the alarm asks g_started (set for good once the run has a Loader, or has
// saved its state without one), not g_loader (null again once the run is over).
volatile std::sig_atomic_t g_signal = 0;
volatile std::sig_atomic_t g_started = 0;
Loader* volatile g_loader = nullptr;
volatile pid_t g_main_pid = 0;
constexpr unsigned kStartupGraceS = 2;

[[noreturn]] void abandon_startup() {
  static const char message[] =
      "sluice: interrupted while starting: the script's load or its trial of the first sample did not "
      "return within 2 s of the signal; exiting without a state\n";
  [[maybe_unused]] ssize_t n = write(STDERR_FILENO, message, sizeof message - 1);
  _exit(128 + g_signal);
}

void on_signal(int sig) {
  if (getpid() != g_main_pid) return;  // a forked child's copy of the handler (async-signal-safe)
  const bool again = g_signal != 0;
  if (!again) g_signal = sig;
  if (Loader* loader = g_loader) {
    loader->interrupt();
  } else if (g_started) {
    // the run is over (its state saved or being saved): nothing left to stop
  } else if (again) {
    abandon_startup();
  } else {
    alarm(kStartupGraceS);
  }
}

void on_alarm(int) {
  if (getpid() == g_main_pid && !g_started) abandon_startup();
}

}  // namespace

SignalScope::SignalScope(Loader& loader) {
  g_started = 1;
  g_loader = &loader;  // before reading g_signal: a signal in between is seen by one or the other
  if (g_signal != 0) {
    alarm(0);  // started in time: the command goes on to its end (on_alarm also checks g_loader)
    loader.interrupt();
  }
}

SignalScope::~SignalScope() { g_loader = nullptr; }

int signal_received() { return g_signal; }

void stop_startup_watch() {
  g_started = 1;
  alarm(0);
}

void install_signal_handlers() {
  g_main_pid = getpid();
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking call returns at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, nullptr);
}

void release_signal_handlers() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGALRM, SIG_DFL);
  if (g_signal != 0) std::raise(g_signal);  // one that came before: its default action now
}

}  // namespace sluice::cli
