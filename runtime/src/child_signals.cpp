// A forked child's signals (see child_signals.h).
#include "child_signals.h"

#include <signal.h>

namespace sluice::detail {
namespace {

void shrug_off(int) {}

}  // namespace

void reset_child_signals() noexcept {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    signal(sig, SIG_DFL);
  }
  struct sigaction shrug {};
  shrug.sa_handler = shrug_off;
  shrug.sa_flags = SA_RESTART;
  sigemptyset(&shrug.sa_mask);
  sigaction(SIGINT, &shrug, nullptr);
  sigaction(SIGTERM, &shrug, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace sluice::detail
