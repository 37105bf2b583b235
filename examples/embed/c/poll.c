/* poll.c: a game-style frame loop that never blocks on the loader. Each frame
 * waits at most 16 ms for the loader's ready_fd (or for whatever else the
 * host polls), takes at most one batch with sluice_loader_try_next, and goes
 * on rendering when there is none yet (SLUICE_NOT_READY).
 *
 *   gcc -std=c99 poll.c $(pkg-config --cflags --libs sluice) -o poll
 *   ./poll PIPELINE.lua [name=value ...]
 */
#define _POSIX_C_SOURCE 200809L
#include <sluice/sluice.h>

#include <poll.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PIPELINE.lua [name=value ...]\n", argv[0]);
    return 2;
  }
  sluice_loader* loader = NULL;
  if (sluice_loader_open_script(argv[1], (const char* const*)(argv + 2), &loader) != SLUICE_OK) {
    fprintf(stderr, "poll: %s\n", sluice_last_error());
    return 1;
  }
  const int fd = sluice_loader_ready_fd(loader);
  if (fd < 0) {
    fprintf(stderr, "poll: %s\n", sluice_last_error());
    sluice_loader_destroy(loader);
    return 1;
  }

  unsigned long long frames = 0, idle_frames = 0, batches = 0, samples = 0;
  sluice_status status;
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    poll(&p, 1, 16); /* the frame's budget; a real host polls its window and sockets here too */
    ++frames;
    sluice_batch* batch = NULL;
    status = sluice_loader_try_next(loader, &batch);
    if (status == SLUICE_NOT_READY) {
      ++idle_frames; /* render, simulate, ... and try again next frame */
      continue;
    }
    if (status != SLUICE_OK) break;
    ++batches;
    samples += sluice_batch_size(batch);
    sluice_batch_release(batch);
  }
  if (status != SLUICE_END) {
    fprintf(stderr, "poll: %s\n", sluice_last_error());
    sluice_loader_destroy(loader);
    return 1;
  }
  printf("poll: batches=%llu samples=%llu frames=%llu idle_frames=%llu\n", batches, samples, frames, idle_frames);
  sluice_loader_destroy(loader);
  return 0;
}
