// trial_child.h: the load's trial of the first samples, made first in a child.
//
// load_script makes sample 0 once (engine.describe's trial) to check the
// pipeline and infer its fields. That runs user code, a map, in the
// launching process, which is the host: a C++ trainer, Python. A map that
// crashes the process (an FFI write through a bad pointer), calls os.exit or
// loops forever there would take the host with it, before there is a worker
// to replace or a batch_timeout_ms to stop it. So the trial is made in a
// forked child first:
//
//   TrialOutcome t = run_trial_in_child([&](int report_fd) { ... }, timeout_ms);
//
// The child calls fn(report_fd), which writes each sample's index to
// report_fd ("7\n", report_sample) before making it, and may say more with
// report_line (the outcome's `lines`: what the child counted, which dies
// with it), then the child writes "done" and _exits. The parent reads those lines and says whether the child
// got through (fn returned or threw: a Lua error is met again, as the clean
// error it is, when the launching process makes the trial itself), or how it
// ended and on which sample. The caller then makes the trial in the
// launching process, passing over the samples that ended a child (as failed
// ones), so the host runs only what a child survived. A map that is not a
// function of its sample (it reads the clock, a global counter) may still
// differ between the two runs; nothing else does.
//
// The child: every signal back to its default, SIGINT and SIGTERM caught by
// a handler that does nothing (they reach the whole process group, and the
// launching process decides what they mean: if it dies or exits, so does the
// child, PR_SET_PDEATHSIG), stdout and stderr on /dev/null (what the map
// prints is printed once, by the launching process's own trial). fn must not
// use what other threads of the parent hold: the child has only the forking
// thread (the launcher's record feed is synchronous; make it in fn, so that
// no file offset is shared with the parent's).
//
// Lifetime: the child is reaped, or killed and reaped, before return. A host
// that ignores SIGCHLD or reaps every child itself loses the exit status:
// then the outcome says that much. Errors: sluice::Error when the pipe or
// the fork fails. Thread safety: one call at a time per thread; fork() in a
// process with other threads is safe for the child's use above.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::scripting {

struct TrialOutcome {
  bool finished = false;                // fn returned or threw in the child
  std::optional<std::uint64_t> sample;  // the last sample the child began
  std::string ended;                    // when not finished: "killed by signal 11 (Segmentation fault)", ...
  std::vector<std::string> lines;       // what the child wrote with report_line, in order
};

// timeout_ms: 0 = wait as long as the child runs.
TrialOutcome run_trial_in_child(const std::function<void(int report_fd)>& fn, std::uint32_t timeout_ms);

// In the child: "INDEX\n" to report_fd. Async-signal-safe, never throws.
void report_sample(int report_fd, std::uint64_t index) noexcept;
// In the child: one line of text (no '\n' in it) for the outcome's `lines`.
void report_line(int report_fd, std::string_view line) noexcept;

}  // namespace sluice::scripting
