// child_signals.h: the signals of a process Sluice forks to run code in
// (the zygote and its workers, the load's trial child).
//
// reset_child_signals(): every signal back to its default and an empty mask,
// then SIGINT and SIGTERM shrugged off: they reach the whole process group,
// and the process that forked decides what they mean. Caught by a handler
// that does nothing rather than ignored, because an ignored signal stays
// ignored across execve: a program that a map runs (a decoder, a shell)
// would not stop on Ctrl-C. A handler goes back to the default there.
// SA_RESTART: system calls go on after it. A host's handlers (a test
// framework's, a crash reporter's, Python's) must not run in the child, and
// a host that ignores SIGCHLD must not make the kernel reap its children
// unseen. Every signal is blocked while the dispositions change: SIGTERM
// sent to the group meanwhile (timeout(1), Slurm) waits for the shrug
// instead of finding the default it passes through, which killed a worker
// forked during a storm of them.
//
// Call it first thing in the child of a fork(); async-signal-safe.
#pragma once

namespace sluice::detail {

void reset_child_signals() noexcept;

}  // namespace sluice::detail
