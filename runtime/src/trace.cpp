// The run as a Chrome trace (Options::trace): trace-event JSON that Perfetto
// and chrome://tracing open. One process, one track (tid) per worker with its
// fills as complete ("X") events, one for the consumer with its waits in
// next(), restarts and skips as instant ("i") events, the slots' states as a
// counter ("C"), and metadata ("M") events naming the tracks. Times are in
// microseconds from the Loader's construction.
//
// Bounded: each worker keeps its last kTraceEvents fills in a ring in the
// arena (shared_layout.h), the consumer its last kTraceMarks events here.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "json.h"
#include "loader_core.h"
#include "sluice/error.h"
#include "sluice/loader.h"
#include "worker.h"

namespace sluice::detail {

namespace {

constexpr int kPid = 1;
constexpr int kConsumerTid = 0;  // workers are tid 1 + worker

struct Fill {
  std::uint64_t start_ns, end_ns, seq, samples;
};

// The entries of a ring that were complete when read: the seqlock reader of
// shared_layout.h (TraceEntry). The count's acquire load makes every entry
// below it visible; each entry's tag is checked before and after its fields.
std::vector<Fill> read_ring(const TraceRing& ring) {
  const std::uint64_t count = ring.count.load(std::memory_order_acquire);
  const std::uint64_t first = count > kTraceEvents ? count - kTraceEvents : 0;
  std::vector<Fill> fills;
  fills.reserve(count - first);
  for (std::uint64_t i = first; i < count; ++i) {
    const TraceEntry& e = ring.entries[i % kTraceEvents];
    const std::uint64_t tag = e.tag.load(std::memory_order_acquire);
    Fill f{e.start_ns.load(std::memory_order_relaxed), e.end_ns.load(std::memory_order_relaxed),
           e.seq.load(std::memory_order_relaxed), e.samples.load(std::memory_order_relaxed)};
    std::atomic_thread_fence(std::memory_order_acquire);  // the fields before the second tag load
    if (tag != 2 * i + 2 || e.tag.load(std::memory_order_relaxed) != tag) continue;  // being overwritten
    fills.push_back(f);
  }
  return fills;
}

void append_us(std::string& out, const char* key, std::uint64_t ns) {
  char text[48];
  std::snprintf(text, sizeof text, ",\"%s\":%llu.%03llu", key, static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  out += text;
}

void append_event_head(std::string& out, const char* name, const char* ph, int tid) {
  out += out.back() == '[' ? "\n" : ",\n";
  out += "{\"name\":\"";
  out += name;
  out += "\",\"ph\":\"";
  out += ph;
  out += "\",\"pid\":" + std::to_string(kPid) + ",\"tid\":" + std::to_string(tid);
}

void append_track_name(std::string& out, int tid, const std::string& name, int sort_index) {
  append_event_head(out, "thread_name", "M", tid);
  out += ",\"args\":{\"name\":";
  append_json_string(out, name);
  out += "}}";
  append_event_head(out, "thread_sort_index", "M", tid);
  out += ",\"args\":{\"sort_index\":" + std::to_string(sort_index) + "}}";
}

std::string first_line(const std::string& s) { return s.substr(0, std::min<std::size_t>(s.find('\n'), 300)); }

// A global instant event on the consumer's track: {key: value, why: the first line of why}.
void append_instant(std::string& out, const char* name, std::uint64_t ts_ns, const char* key, std::uint64_t value,
                    const std::string& why) {
  append_event_head(out, name, "i", kConsumerTid);
  append_us(out, "ts", ts_ns);
  out += std::string(",\"s\":\"g\",\"args\":{\"") + key + "\":" + std::to_string(value) + ",\"why\":";
  append_json_string(out, first_line(why));
  out += "}}";
}

}  // namespace

void LoaderCore::trace_mark(TraceMark::Kind kind, std::uint64_t ts_ns, std::uint64_t value, std::string what) {
  TraceMark mark{kind, ts_ns, value, std::move(what)};
  if (trace_marks_.size() < kTraceMarks) {
    trace_marks_.push_back(std::move(mark));
    return;
  }
  trace_marks_[trace_next_] = std::move(mark);
  trace_next_ = (trace_next_ + 1) % kTraceMarks;
}

void LoaderCore::trace_slots() {
  const std::uint64_t filling = slots_.count(SlotTable::State::issued);
  const std::uint64_t ready = slots_.count(SlotTable::State::ready);
  const std::uint64_t held = slots_.count(SlotTable::State::held);
  const std::uint64_t packed = filling | ready << 21 | held << 42;
  if (packed == traced_slots_) return;
  traced_slots_ = packed;
  trace_mark(TraceMark::Kind::slots, monotonic_ns(), packed);
}

std::string LoaderCore::trace_json() const {
  if (!options_.trace) throw Error("no trace: the Loader was built without options.trace");
  const std::uint64_t origin = created_ns_;
  auto since = [origin](std::uint64_t ns) { return ns > origin ? ns - origin : 0; };
  const std::uint64_t per_epoch = plan_.batches_per_epoch();
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  append_event_head(out, "process_name", "M", kConsumerTid);
  out += ",\"args\":{\"name\":\"sluice loader\"}}";
  append_track_name(out, kConsumerTid, "consumer (next)", 0);
  for (std::uint32_t w = 0; w < supervisor_->started(); ++w) {  // auto: only the workers forked so far
    const int tid = 1 + static_cast<int>(w);
    append_track_name(out, tid, "worker " + std::to_string(w), tid);
    for (const Fill& f : read_ring(trace_ring(*arena_, layout_, w))) {
      const bool failed = (f.samples >> 32) != 0;
      append_event_head(out, failed ? "fill (failed)" : "fill", "X", tid);
      append_us(out, "ts", since(f.start_ns));
      append_us(out, "dur", f.end_ns > f.start_ns ? f.end_ns - f.start_ns : 0);
      out += ",\"args\":{\"epoch\":" + std::to_string(f.seq / per_epoch) +
             ",\"batch\":" + std::to_string(f.seq % per_epoch) +
             ",\"samples\":" + std::to_string(f.samples & 0xffffffffULL) + "}}";
    }
  }
  // The consumer's ring, oldest first.
  for (std::size_t k = 0; k < trace_marks_.size(); ++k) {
    const TraceMark& m = trace_marks_[(trace_next_ + k) % trace_marks_.size()];
    switch (m.kind) {
      case TraceMark::Kind::wait:
        append_event_head(out, "wait for a batch", "X", kConsumerTid);
        append_us(out, "ts", since(m.ts_ns));
        append_us(out, "dur", m.value);
        out += "}";
        break;
      case TraceMark::Kind::restart:
        append_instant(out, "worker restart", since(m.ts_ns), "worker", m.value, m.what);
        break;
      case TraceMark::Kind::skip:
        append_instant(out, "sample skipped", since(m.ts_ns), "sample", m.value, m.what);
        break;
      case TraceMark::Kind::slots: {
        const std::uint64_t mask = (1ULL << 21) - 1;
        append_event_head(out, "slots", "C", kConsumerTid);
        append_us(out, "ts", since(m.ts_ns));
        out += ",\"args\":{\"filling\":" + std::to_string(m.value & mask) +
               ",\"ready\":" + std::to_string((m.value >> 21) & mask) +
               ",\"held\":" + std::to_string((m.value >> 42) & mask) + "}}";
        break;
      }
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace sluice::detail

namespace sluice {

std::string Loader::trace_json() const { return core_->trace_json(); }

void Loader::write_trace(const std::string& path) const {
  const std::string json = trace_json();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << json;
  if (!out.flush()) throw Error(path + ": cannot write the trace: " + std::strerror(errno));
}

}  // namespace sluice
