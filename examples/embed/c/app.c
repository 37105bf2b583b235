/* app.c: reads every batch of a pipeline.lua through the installed libsluice's
 * C API, takes each field as DLPack as a framework would, and prints what it
 * read. C99; built with gcc alone:
 *
 *   gcc -std=c99 app.c $(pkg-config --cflags --libs sluice) -o app
 *   ./app PIPELINE.lua [name=value ...]
 */
#include <dlpack/dlpack.h>
#include <sluice/sluice.h>

#include <stdio.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PIPELINE.lua [name=value ...]\n", argv[0]);
    return 2;
  }
  /* argv is NULL-terminated: its tail is the overrides list. */
  const char* const* overrides = (const char* const*)(argv + 2);
  sluice_loader* loader = NULL;
  if (sluice_loader_open_script(argv[1], overrides, &loader) != SLUICE_OK) {
    fprintf(stderr, "app: %s\n", sluice_last_error());
    return 1;
  }

  unsigned long long batches = 0, samples = 0, tensors = 0;
  sluice_batch* batch = NULL;
  sluice_status status;
  while ((status = sluice_loader_next(loader, &batch)) == SLUICE_OK) {
    for (size_t f = 0; f < sluice_batch_field_count(batch); ++f) {
      struct DLManagedTensor* t = NULL;
      if (sluice_batch_field_dlpack(batch, f, &t) != SLUICE_OK) break;
      if (t->dl_tensor.shape[0] == (int64_t)sluice_batch_size(batch)) ++tensors;
      t->deleter(t); /* the framework would do this when it drops the tensor */
    }
    ++batches;
    samples += sluice_batch_size(batch);
    sluice_batch_release(batch);
  }
  if (status != SLUICE_END) {
    fprintf(stderr, "app: %s\n", sluice_last_error());
    sluice_loader_destroy(loader);
    return 1;
  }

  sluice_stats stats;
  stats.size = sizeof stats;
  char* state = NULL;
  if (sluice_loader_stats(loader, &stats) != SLUICE_OK || sluice_loader_state_json(loader, &state) != SLUICE_OK) {
    fprintf(stderr, "app: %s\n", sluice_last_error());
    sluice_loader_destroy(loader);
    return 1;
  }
  printf("c: batches=%llu samples=%llu tensors=%llu skipped=%zu api=%d version=%s\n", batches, samples, tensors,
         stats.skipped_count, sluice_c_api_version(), sluice_version());
  printf("c: state %s\n", state);
  sluice_free(state);
  sluice_loader_destroy(loader);
  return stats.batches_delivered == batches ? 0 : 1;
}
