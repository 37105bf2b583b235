/* sluice/sluice.h: the C API (C99), for hosts that cannot use the C++20
 * headers: C programs, game engines, other languages' FFIs.
 *
 *   sluice_loader* loader;
 *   const char* overrides[] = {"workers=4", "epochs=2", NULL};
 *   if (sluice_loader_open_script("pipeline.lua", overrides, &loader) != SLUICE_OK) {
 *     fprintf(stderr, "%s\n", sluice_last_error());
 *   }
 *   sluice_batch* batch;
 *   while (sluice_loader_next(loader, &batch) == SLUICE_OK) {
 *     sluice_field image;
 *     sluice_batch_field(batch, 0, &image);  ... train on image.data ...
 *     sluice_batch_release(batch);
 *   }
 *   sluice_loader_destroy(loader);
 *
 * Errors: opaque handles and status codes; no C++ exception and no allocation
 * failure ever crosses this API. A call that fails returns a status other
 * than SLUICE_OK / SLUICE_END / SLUICE_NOT_READY and leaves a message for
 * sluice_last_error() on the calling thread.
 *
 * Memory: a string this API allocates for the caller (char** out-parameters)
 * is malloc'ed and the caller frees it with sluice_free(). Every other pointer
 * it hands out (names, shapes, data, stats arrays) is owned by the handle it
 * came from and stays valid as long as the comment next to it says.
 *
 * Versions: SLUICE_C_API_VERSION grows with every addition. Structs that may
 * grow start with a `size` field that their _init function sets to the size
 * the caller was compiled with; the library reads and writes only that many
 * bytes, so a program built against an older sluice.h keeps working. Structs
 * the library writes for the caller's callbacks (sluice_fill) grow at the
 * end; their comments say from which version a field may be read.
 *
 * Thread safety: as the C++ Loader: one thread drives a loader at a time;
 * batches may be released, and DLPack deleters run, on any thread.
 */
#ifndef SLUICE_SLUICE_H_
#define SLUICE_SLUICE_H_

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"

/* 1: loaders from a C fill function.
 * 2: pipeline scripts, DLPack, state and resume, stats and the skip log,
 *    fields by name, non-blocking consumption (try_next, next_for, ready_fd).
 * 3: auto workers (options.max_workers, memory_budget_mb); workers' CPU time,
 *    the worker count and the autotune summary in stats.
 * 4: every other setting of sluice::Options in sluice_options: on_error,
 *    skip_fill, shard_policy, max_retries, batch_timeout_ms, held_timeout_ms,
 *    worker_memory_mb, trace. */
#define SLUICE_C_API_VERSION 4

#ifdef __cplusplus
extern "C" {
#endif

struct DLManagedTensor; /* <dlpack/dlpack.h> */

typedef enum sluice_status {
  SLUICE_OK = 0,
  SLUICE_END = 1,             /* no more batches: every epoch was delivered (or the loader was interrupted) */
  SLUICE_INVALID_ARGUMENT = 2, /* a NULL or out-of-range argument, or an option or setting the runtime refuses */
  SLUICE_ERROR = 3,           /* a worker, the script, the arena or the system failed; see sluice_last_error() */
  SLUICE_NOT_READY = 4,       /* try_next / next_for: no batch yet; the run goes on */
} sluice_status;

typedef enum sluice_dtype {
  SLUICE_U8, SLUICE_I8, SLUICE_U16, SLUICE_I16, SLUICE_U32, SLUICE_I32, SLUICE_U64, SLUICE_I64,
  SLUICE_F16, SLUICE_BF16, SLUICE_F32, SLUICE_F64, SLUICE_BOOL,
} sluice_dtype;

/* sluice::OnError, sluice::SkipFill, sluice::ShardPolicy (sluice/options.h says what each does). */
typedef enum sluice_on_error { SLUICE_ON_ERROR_FAIL = 0, SLUICE_ON_ERROR_SKIP = 1 } sluice_on_error;
typedef enum sluice_skip_fill { SLUICE_SKIP_FILL_SHRINK = 0, SLUICE_SKIP_FILL_REPEAT = 1 } sluice_skip_fill;
typedef enum sluice_shard_policy { SLUICE_SHARD_PAD = 0, SLUICE_SHARD_DROP = 1 } sluice_shard_policy;

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
  /* Version 4 (the library writes this struct: a fill function that may be
     loaded by an older library checks sluice_c_api_version() >= 4 before it
     reads these). Call begin_sample(batch, j) before making sample j: a
     failure, crash or hang is then blamed on that sample (on_error = skip
     drops it alone) rather than on the batch's first. Cheap: one store. */
  void (*begin_sample)(const struct sluice_fill* batch, size_t j);
  void* runtime;              /* for begin_sample */
} sluice_fill;

/* Fills a batch; returns 0, or non-zero with a message written to error[error_size]. */
typedef int (*sluice_fill_fn)(void* user, const sluice_fill* batch, char* error, size_t error_size);

typedef struct sluice_options {
  size_t size;                /* sizeof(sluice_options): set by sluice_options_init */
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
  /* Version 2. */
  const char* resume_json;    /* NULL, or a state from sluice_loader_state_json: continue that run */
  /* Version 3. */
  uint32_t max_workers;       /* > workers: auto workers, starting with `workers` and adding
                                 workers while throughput rises (0 = fixed `workers`) */
  uint64_t memory_budget_mb;  /* with max_workers and slots = 0: the arena's slots stay within this */
  /* Version 4: the rest of sluice::Options, the same names and defaults
     (sluice_options_init sets them). */
  /* The three policies are ints holding a value of their enum, so that a
     wrong value is an error the library reports, not undefined behaviour. */
  int on_error;                      /* sluice_on_error: a sample whose fill keeps failing: fail the run, or skip it */
  int skip_fill;                     /* sluice_skip_fill: what a batch holds in place of skipped samples */
  int shard_policy;                  /* sluice_shard_policy: ranks and an epoch that does not divide evenly */
  uint32_t max_retries;              /* failures of one sample in a row before on_error applies */
  uint32_t batch_timeout_ms;         /* a worker stuck this long on a batch is replaced; 0 = never */
  uint32_t held_timeout_ms;          /* next() when the host holds every slot: wait this long, then fail */
  uint64_t worker_memory_mb;         /* a worker past this private memory is replaced; 0 = no limit */
  int trace;                         /* non-zero: record a timeline for sluice_loader_trace_json */
} sluice_options;

/* Options for sluice_loader_open_script_with. */
typedef struct sluice_script_options {
  size_t size;                       /* sizeof(sluice_script_options): set by sluice_script_options_init */
  const char* const* overrides;      /* NULL, or a NULL-terminated list of "name=value" (sluice/settings.h) */
  const char* resume_json;           /* NULL, or a state from sluice_loader_state_json: continue that run */
} sluice_script_options;

/* One field of a delivered batch. Pointers are into the batch and valid until it is released. */
typedef struct sluice_field {
  const char* name;
  sluice_dtype dtype;
  int ndim;                   /* including the batch dimension */
  const int64_t* shape;
  void* data;
  size_t nbytes;
} sluice_field;

/* sluice::Stats. The arrays are owned by the loader and valid until the next
 * sluice_loader_stats call on it or its destruction. */
typedef struct sluice_stats {
  size_t size;                       /* set by the caller: sizeof(sluice_stats) */
  uint64_t batches_delivered;
  uint64_t samples_delivered;
  uint64_t bytes_delivered;          /* field bytes */
  uint64_t consumer_wait_ns;         /* time spent blocked waiting for a batch */
  uint64_t consumer_waits;           /* calls that had to block */
  uint32_t max_in_flight;            /* most slots ever issued at once */
  uint32_t worker_restarts;          /* workers replaced after a crash or a timeout */
  uint64_t first_batch_ns;           /* from the loader's creation to its first batch */
  uint64_t slots_full_ns;            /* all slots taken while batches remained (backpressure) */
  uint64_t worker_fill_ns;           /* summed over workers: time filling batches */
  uint64_t worker_idle_ns;           /* summed over workers: time with no batch to fill */
  uint64_t batches_retried;          /* batches issued again after a failure */
  uint64_t empty_batches;            /* batches all of whose samples were skipped: not delivered */
  size_t skipped_count;              /* samples dropped by on_error = skip */
  const uint64_t* skipped_samples;   /* [skipped_count], in the order they were dropped */
  const char* const* skip_reasons;   /* [skipped_count]: why, naming the file or record, or the crash */
  /* Version 3. */
  uint64_t worker_cpu_ns;            /* of worker_fill_ns: the workers' CPU time (user + system) */
  uint64_t worker_runqueue_ns;       /* of worker_fill_ns: runnable, waiting for a core */
  uint32_t workers;                  /* workers given batches now (auto: what it chose so far) */
  const char* autotune;              /* auto workers: what was tried and kept; "" otherwise */
} sluice_stats;

/* --- Library ----------------------------------------------------------------- */

/* SLUICE_C_API_VERSION of the library that is loaded (may be newer than the header's). */
SLUICE_API int sluice_c_api_version(void);
/* The project version, "MAJOR.MINOR.PATCH". Static storage. */
SLUICE_API const char* sluice_version(void);
/* Frees what this API malloc'ed for the caller (the char** out-parameters). NULL is fine. */
SLUICE_API void sluice_free(void* p);
/* The message of the calling thread's last failed call ("" if none). Valid
 * until the thread's next call into this API. */
SLUICE_API const char* sluice_last_error(void);

/* --- Loaders ------------------------------------------------------------------ */

/* Sets the defaults the C++ Options has, and options->size. */
SLUICE_API void sluice_options_init(sluice_options* options);
/* A loader whose workers call options->fill for every batch. */
SLUICE_API sluice_status sluice_loader_create(const sluice_options* options, sluice_loader** out);

/* A loader for a pipeline.lua (sluice/script.h): the script is run and checked
 * here, in the calling process, before any worker starts. `overrides` is NULL
 * or a NULL-terminated list of "name=value" strings, the run settings of
 * sluice/settings.h (the names of `sluice run`'s options; the table in
 * docs/command-line.md); an unknown name or a bad value is
 * SLUICE_INVALID_ARGUMENT. Present in libsluice; in the static libraries,
 * sluice_c defines these where it is built with scripting. */
SLUICE_API sluice_status sluice_loader_open_script(const char* path, const char* const* overrides, sluice_loader** out);
SLUICE_API void sluice_script_options_init(sluice_script_options* options);
SLUICE_API sluice_status sluice_loader_open_script_with(const char* path, const sluice_script_options* options,
                                                        sluice_loader** out);

/* Stops and reaps the workers. Batches and DLPack tensors still held stay valid. NULL is fine. */
SLUICE_API void sluice_loader_destroy(sluice_loader* loader);

/* SLUICE_OK with *out set, SLUICE_END when the run is over, or an error. Blocks
 * while no batch is ready. */
SLUICE_API sluice_status sluice_loader_next(sluice_loader* loader, sluice_batch** out);

/* For hosts that must never block (a frame loop, an event loop): SLUICE_OK with
 * *out set if a batch is ready now (try_next) or within timeout_ms (next_for),
 * SLUICE_NOT_READY if not yet, SLUICE_END at the end, or an error. Call one of
 * them regularly: they also replace crashed workers and run the watchdog. */
SLUICE_API sluice_status sluice_loader_try_next(sluice_loader* loader, sluice_batch** out);
/* next_for: a negative timeout_ms waits with no limit, as poll(2) reads -1. */
SLUICE_API sluice_status sluice_loader_next_for(sluice_loader* loader, int64_t timeout_ms, sluice_batch** out);
/* A file descriptor for poll(2), epoll (level- or edge-triggered) or libuv.
 * After every try_next / next_for / next it is readable exactly while the next
 * call would do something: a batch is ready, a worker finished or exited, a
 * released batch's slot is to be refilled with nothing else in flight, or the
 * run ended or failed (also after a failure: the call returns the error). So
 * a host that takes one batch per wake-up wakes about once per batch; one
 * that leaves the fd in its poll set without calling try_next while it is
 * readable spins, as with any level-triggered fd. The watchdog runs only
 * inside those calls: wait on the fd with a timeout (1 s or less) and call
 * try_next when it passes too. Owned by the loader: do not close it. -1 on
 * error (in a forked child, say). */
SLUICE_API int sluice_loader_ready_fd(sluice_loader* loader);
/* 1 once the run is over (every batch delivered, a failure, or an interrupt), else 0. */
SLUICE_API int sluice_loader_finished(const sluice_loader* loader);
/* Makes next() end as soon as possible. Async-signal-safe and thread-safe. */
SLUICE_API void sluice_loader_interrupt(sluice_loader* loader);

/* The fields every batch has. The spec's pointers are owned by the loader. */
SLUICE_API size_t sluice_loader_field_count(const sluice_loader* loader);
SLUICE_API sluice_status sluice_loader_field(const sluice_loader* loader, size_t i, sluice_field_spec* out);

/* Where the run stands, as JSON (*out malloc'ed: sluice_free it). A loader
 * opened with it as resume_json delivers exactly the batches this one would
 * deliver next. */
SLUICE_API sluice_status sluice_loader_state_json(const sluice_loader* loader, char** out);
/* With options.trace: the run so far as Chrome
 * trace-event JSON (Perfetto, chrome://tracing; sluice/loader.h), malloc'ed
 * into *out for sluice_free. SLUICE_ERROR without trace. Version 4. */
SLUICE_API sluice_status sluice_loader_trace_json(const sluice_loader* loader, char** out);
/* out->size must be set (sizeof(sluice_stats)). */
SLUICE_API sluice_status sluice_loader_stats(sluice_loader* loader, sluice_stats* out);
/* The skipped samples so far, one JSON line each, as `sluice run --skip-log`
 * writes them: {"sample":17,"reason":"..."}. *out malloc'ed ("" if none): sluice_free it. */
SLUICE_API sluice_status sluice_loader_skip_log(sluice_loader* loader, char** out);

/* --- Batches ------------------------------------------------------------------- */

SLUICE_API uint64_t sluice_batch_epoch(const sluice_batch* batch);
SLUICE_API uint64_t sluice_batch_index(const sluice_batch* batch);
SLUICE_API size_t sluice_batch_size(const sluice_batch* batch);
SLUICE_API const uint64_t* sluice_batch_sample_ids(const sluice_batch* batch);
SLUICE_API size_t sluice_batch_field_count(const sluice_batch* batch);
SLUICE_API sluice_status sluice_batch_field(const sluice_batch* batch, size_t i, sluice_field* out);
/* The field named `name`, and its index in *index (index may be NULL). */
SLUICE_API sluice_status sluice_batch_field_by_name(const sluice_batch* batch, const char* name, sluice_field* out,
                                                    size_t* index);
/* Field i as a DLPack tensor (kDLCPU, no copy). The caller owns *out and calls
 * (*out)->deleter(*out) once; the batch's slot stays alive until both the batch
 * is released and the deleter has run, in either order. */
SLUICE_API sluice_status sluice_batch_field_dlpack(sluice_batch* batch, size_t i, struct DLManagedTensor** out);
/* Gives the slot back (unless DLPack tensors still hold it). NULL is fine. */
SLUICE_API void sluice_batch_release(sluice_batch* batch);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_SLUICE_H_ */
