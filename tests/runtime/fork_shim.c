/* fork_shim.c: an LD_PRELOAD library that makes chosen fork() calls fail with
 * EAGAIN, as a process limit (ulimit -u, a cgroup's pids.max) would, for
 * fork_failure_test.cpp.
 *
 * SLUICE_TEST_FAIL_FORK="D:N[+][,D:N[+]...]": in a process D forks below the
 * one that loaded the library (0: that process; 1: its children, such as a
 * Loader's zygote; 2: theirs, the workers), the Nth call of fork() (from 1)
 * fails once, or with "+" every call from the Nth on. Each process counts its
 * own calls; a child starts from 0. Thread safety: the zygote that calls it is
 * single-threaded; the counters are not shared across threads otherwise. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int depth = 0;
static int calls = 0;

static int should_fail(int call) {
  const char* spec = getenv("SLUICE_TEST_FAIL_FORK");
  while (spec && *spec) {
    char* end;
    const long d = strtol(spec, &end, 10);
    if (*end != ':') return 0;
    const long n = strtol(end + 1, &end, 10);
    const int from_on = *end == '+';
    if (from_on) ++end;
    if (d == depth && (call == n || (from_on && call >= n))) return 1;
    spec = *end == ',' ? end + 1 : NULL;
  }
  return 0;
}

pid_t fork(void) {
  static pid_t (*real_fork)(void) = NULL;
  if (!real_fork) real_fork = (pid_t(*)(void))dlsym(RTLD_NEXT, "fork");
  if (should_fail(++calls)) {
    errno = EAGAIN;
    return -1;
  }
  const pid_t pid = real_fork();
  if (pid == 0) {
    ++depth;
    calls = 0;
  }
  return pid;
}
