// test_support.h: looking at real processes and /dev/shm from tests.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

namespace sluice::test {

struct ProcessInfo {
  pid_t pid;
  pid_t ppid;
  char state;  // 'R', 'S', 'Z', ...
};

// Every live or zombie descendant of `root`, read from /proc.
std::vector<ProcessInfo> descendants(pid_t root);

// Names in /dev/shm.
std::set<std::string> dev_shm_entries();

// Whether /proc/PID/status shows an emulator's signal state instead of the
// program's. Under qemu-user (the aarch64 cross test) every process is qemu,
// which installs a host handler for nearly every signal to emulate the
// guest's; SigCgt, SigIgn and SigBlk then describe qemu, not the code under
// test. Probed on a forked child whose SIGUSR1 is at its default disposition:
// if /proc says the child catches it, /proc is showing the emulator.
bool proc_shows_emulator_signal_state();

// Polls until `root` has no descendant, at most timeout_ms. Returns what is left.
std::vector<ProcessInfo> wait_for_no_descendants(pid_t root, int timeout_ms);

}  // namespace sluice::test

namespace sluice::test {

// Runs body in a forked child process, where a hang or a crash cannot take the
// test runner with it. body returns "" on success, else what went wrong; an
// exception it throws counts as its message. Returns "" if the child
// succeeded, else its message, "timed out after N ms" (the child is then
// killed), or how it died.
std::string in_child(const std::function<std::string()>& body, int timeout_ms);

}  // namespace sluice::test
