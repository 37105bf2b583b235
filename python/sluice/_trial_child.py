"""A dataset's first sample, made in a forked child before this process makes it.

Loader(dataset=...) makes the first sample in the calling process to learn
its fields. A __getitem__ that crashes the interpreter (a C extension's
segfault), calls os._exit or never returns would take the program with it,
before there is a worker to replace or a batch_timeout_ms to stop it. So the
sample is made first in a forked child, as a pipeline.lua's trial is
(scripting/src/trial_child.h): only what a child got through, returning or
raising, is then made here. Its output goes to a memfd, whose last 2 KiB an
error shows; the child dies with this process (PR_SET_PDEATHSIG) and is
reaped, or killed and reaped, before ends_child returns. Ctrl-C while it
runs kills it and raises KeyboardInterrupt here.
"""

import ctypes
import os
import signal
import sys
import time

# A child's start-up allowance before its batch_timeout_ms, as the workers get (worker.h).
START_ALLOWANCE_S = 10.0
_TAIL_BYTES = 2048
_PR_SET_PDEATHSIG = 1


def _how(status):
    """How a child ended, from its wait status ("" when it exited 0)."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = "%s (%s)" % (signal.Signals(number).name, signal.strsignal(number))
        except ValueError:
            name = str(number)
        return "was killed by signal %d, %s" % (number, name)
    code = os.waitstatus_to_exitcode(status)
    return "" if code == 0 else "exited with status %d" % code


def _tail(fd):
    size = os.fstat(fd).st_size
    text = os.pread(fd, _TAIL_BYTES, max(0, size - _TAIL_BYTES)).decode("utf-8", "replace").strip()
    if not text:
        return ""
    return "; its last output%s:\n%s" % (" (the end of it)" if size > _TAIL_BYTES else "", text)


def ends_child(make, timeout_s=None):
    """Calls make() in a forked child. Returns "" when the child got through
    (make returned or raised an Exception), else how it ended: "was killed by
    signal 11, SIGSEGV (Segmentation fault)", "exited with status 3" (os._exit,
    sys.exit) or "ran past N s (batch_timeout_ms)", with its last output.
    timeout_s: None waits as long as it runs."""
    out = os.memfd_create("sluice-trial", os.MFD_CLOEXEC)
    try:
        for stream in (sys.stdout, sys.stderr):  # what is buffered is printed once, here
            try:
                stream.flush()
            except Exception:
                pass
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 0
            try:
                try:
                    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
                except Exception:
                    pass
                os.dup2(out, 1)
                os.dup2(out, 2)
                # Python's streams too, whatever object the program put there (pytest's, a logger's)
                sys.stdout = open(1, "w", buffering=1, closefd=False)
                sys.stderr = open(2, "w", buffering=1, closefd=False)
                make()
            except SystemExit as exit:  # sys.exit() in __getitem__ ends a worker as os._exit does
                code = exit.code if isinstance(exit.code, int) else 1
            except BaseException:
                pass  # an exception is met again, as the clean error it is, when this process makes the sample
            finally:
                for stream in (sys.stdout, sys.stderr):
                    try:
                        stream.flush()
                    except Exception:
                        pass
                os._exit(code)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        pause = 0.001
        try:
            while True:
                try:
                    done, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:  # a host that ignores SIGCHLD: how it ended is not known
                    return ""
                if done == pid:
                    how = _how(status)
                    return how + _tail(out) if how else ""
                if deadline is not None and time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    return "ran past %g s (batch_timeout_ms, after %g s to start)%s" % (
                        timeout_s - START_ALLOWANCE_S, START_ALLOWANCE_S, _tail(out))
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
        except BaseException:  # Ctrl-C, say: the child goes with the call
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
            raise
    finally:
        os.close(out)
