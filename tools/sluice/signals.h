// signals.h: SIGINT and SIGTERM for the commands that run a Loader (`sluice
// run`, `sluice write`).
//
// install_signal_handlers() is main()'s first instruction, so that a signal
// during start-up (parsing, loading the script, starting the workers) still
// ends the command cleanly; every other command calls
// release_signal_handlers(), which restores the default actions and delivers
// a signal that came in the meantime. A SignalScope points the handler at the
// command's Loader while it runs: a signal interrupts it (async-signal-safe),
// its next() ends, and the command says what it kept and exits 128 + signal
// (signal_received()). A command stopped before it has a Loader calls
// stop_startup_watch() once it has done what it does instead; until either, a
// start-up that does not end within 2 s of the signal (a script that loops)
// exits at once (signals.cpp says why).
#pragma once

#include "sluice/loader.h"

namespace sluice::cli {

void install_signal_handlers();
void release_signal_handlers();

class SignalScope {
 public:
  explicit SignalScope(Loader& loader);  // interrupts it at once if a signal came first
  ~SignalScope();
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;
};

// The first SIGINT or SIGTERM received (0: none).
int signal_received();
// The command no longer starts: a signal from now on arms no 2 s exit.
void stop_startup_watch();

}  // namespace sluice::cli
