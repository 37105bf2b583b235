/* sluice/sluice.h: the C API.
 *
 * Opaque handles, status codes, no exception ever crosses it. A call that
 * fails returns a non-zero sluice_status and leaves a message for
 * sluice_last_error() on the calling thread.
 *
 * Thread safety: as the C++ Loader: one thread drives a loader at a time;
 * batches may be released on any thread.
 */
#ifndef SLUICE_SLUICE_H_
#define SLUICE_SLUICE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sluice_status {
  SLUICE_OK = 0,
  SLUICE_END = 1,             /* no more batches: every epoch was delivered */
  SLUICE_INVALID_ARGUMENT = 2,
  SLUICE_ERROR = 3,           /* a worker, the arena or the system failed; see sluice_last_error() */
} sluice_status;

typedef enum sluice_dtype {
  SLUICE_U8, SLUICE_I8, SLUICE_U16, SLUICE_I16, SLUICE_U32, SLUICE_I32, SLUICE_U64, SLUICE_I64,
  SLUICE_F16, SLUICE_BF16, SLUICE_F32, SLUICE_F64, SLUICE_BOOL,
} sluice_dtype;

typedef struct sluice_loader sluice_loader;
typedef struct sluice_batch sluice_batch;

typedef struct sluice_field_spec {
  const char* name;
  sluice_dtype dtype;
  int ndim;                   /* per-sample dimensions, at most 7 */
  const int64_t* shape;
} sluice_field_spec;

/* What a C producer sees for one batch being filled (inside a worker). */
typedef struct sluice_fill {
  uint64_t epoch;
  uint64_t batch;
  uint32_t worker;
  size_t size;                /* samples in this batch */
  const uint64_t* samples;    /* their dataset indices */
  size_t field_count;
  void* const* data;          /* data[f]: field f for the whole batch, C order */
  const size_t* sample_bytes; /* sample_bytes[f]: bytes of one sample of field f */
} sluice_fill;

/* Fills a batch; returns 0, or non-zero with a message written to error[error_size]. */
typedef int (*sluice_fill_fn)(void* user, const sluice_fill* batch, char* error, size_t error_size);

typedef struct sluice_options {
  uint64_t dataset_size;
  uint32_t batch_size;
  int drop_last;
  int shuffle;
  uint64_t seed;
  uint32_t epochs;
  uint32_t rank, world_size;
  uint32_t workers;
  uint32_t slots;             /* 0 = default */
  uint64_t slot_bytes;        /* 0 = derived */
  int ordered;
  size_t field_count;
  const sluice_field_spec* fields;
  sluice_fill_fn fill;
  void* user;                 /* passed to fill, in each worker's copy of memory */
} sluice_options;

typedef struct sluice_field {
  const char* name;
  sluice_dtype dtype;
  int ndim;                   /* including the batch dimension */
  const int64_t* shape;
  void* data;
  size_t nbytes;
} sluice_field;

/* Sets the defaults the C++ Options has. */
void sluice_options_init(sluice_options* options);

sluice_status sluice_loader_create(const sluice_options* options, sluice_loader** out);
void sluice_loader_destroy(sluice_loader* loader);

/* SLUICE_OK with *out set, SLUICE_END when the run is over, or an error. */
sluice_status sluice_loader_next(sluice_loader* loader, sluice_batch** out);

uint64_t sluice_batch_epoch(const sluice_batch* batch);
uint64_t sluice_batch_index(const sluice_batch* batch);
size_t sluice_batch_size(const sluice_batch* batch);
const uint64_t* sluice_batch_sample_ids(const sluice_batch* batch);
size_t sluice_batch_field_count(const sluice_batch* batch);
sluice_status sluice_batch_field(const sluice_batch* batch, size_t i, sluice_field* out);
void sluice_batch_release(sluice_batch* batch);

/* The message of the calling thread's last failed call ("" if none). */
const char* sluice_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_SLUICE_H_ */
