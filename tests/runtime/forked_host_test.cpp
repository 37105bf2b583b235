// Forks around a Loader: a child of the host that calls its parent's loader,
// a Loader made inside a worker, and a host that forks while another thread
// makes a Loader. Each case that could hang runs in a child with a deadline.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/producer.h"
#include "test_support.h"

using namespace sluice;

namespace {

Options id_options(std::uint64_t n, std::uint32_t batch, std::uint32_t workers) {
  Options o;
  o.dataset_size = n;
  o.batch_size = batch;
  o.workers = workers;
  o.fields = {{"id", DType::u64, {}}};
  o.producer = per_sample([](const SampleRef& s) { *s.as<std::uint64_t>(0) = s.index; });
  return o;
}

// "" if the loader delivers samples [first, n) in order, each with its id.
std::string consume_rest(Loader& loader, std::uint64_t first, std::uint64_t n) {
  std::uint64_t next = first;
  while (auto b = loader.next()) {
    const auto* v = static_cast<const std::uint64_t*>(b->field(0).data);
    for (std::size_t j = 0; j < b->size(); ++j, ++next) {
      if (b->sample_ids()[j] != next || v[j] != next) return "sample " + std::to_string(next) + " wrong";
    }
  }
  return next == n ? "" : "ended at sample " + std::to_string(next);
}

}  // namespace

TEST_CASE("a forked child that calls its parent's loader gets an error, and the parent's run goes on", "[fork]") {
  const std::string error = test::in_child(
      [] {
        Loader loader(id_options(400, 10, 2));
        if (!loader.next()) return std::string("no first batch");
        const pid_t child = fork();
        if (child == 0) {
          int refused = 0;
          for (auto call : {0, 1, 2, 3}) {
            try {
              if (call == 0) loader.next();
              if (call == 1) loader.try_next();
              if (call == 2) loader.next_for(std::chrono::milliseconds(10));
              if (call == 3) loader.ready_fd();
            } catch (const Error& e) {
              refused += std::string(e.what()).find("is a fork of it") != std::string::npos;
            }
          }
          _exit(refused == 4 ? 0 : 1);
        }
        int status = 0;
        waitpid(child, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::string("the child was not refused");
        std::string rest = consume_rest(loader, 10, 400);
        if (!rest.empty()) return rest;
        if (loader.stats().worker_restarts != 0) return std::string("a worker was restarted");
        return std::string();
      },
      30000);
  REQUIRE(error == "");
}

TEST_CASE("a Loader made inside a worker runs, and is no deadlock", "[fork]") {
  const std::string error = test::in_child(
      [] {
        Options o = id_options(20, 5, 2);
        o.producer = per_sample([](const SampleRef& s) {
          // A whole inner run for the sample: its sum of ids.
          Loader inner(id_options(10 + s.index, 4, 1));
          std::uint64_t sum = 0;
          while (auto b = inner.next()) {
            for (std::size_t j = 0; j < b->size(); ++j) sum += static_cast<const std::uint64_t*>(b->field(0).data)[j];
          }
          *s.as<std::uint64_t>(0) = sum;
        });
        Loader loader(o);
        std::uint64_t i = 0;
        while (auto b = loader.next()) {
          for (std::size_t j = 0; j < b->size(); ++j, ++i) {
            const std::uint64_t n = 10 + i;
            if (static_cast<const std::uint64_t*>(b->field(0).data)[j] != n * (n - 1) / 2) {
              return "wrong inner sum for sample " + std::to_string(i);
            }
          }
        }
        return i == 20 ? std::string() : std::string("missing samples");
      },
      60000);
  REQUIRE(error == "");
}

TEST_CASE("a host that forks while another thread makes Loaders: the child can make one too", "[fork]") {
  const std::string error = test::in_child(
      [] {
        std::atomic<bool> stop{false};
        std::thread maker([&] {
          while (!stop.load()) {
            Loader l(id_options(8, 4, 1));
            while (l.next()) {
            }
          }
        });
        std::string failure;
        for (int round = 0; round < 30 && failure.empty(); ++round) {
          const pid_t child = fork();
          if (child == 0) {
            Loader l(id_options(40, 10, 1));
            _exit(consume_rest(l, 0, 40).empty() ? 0 : 1);
          }
          // Each child has 20 s; a registry lock copied while held would hang it for ever.
          int status = 0;
          for (int waited = 0; waitpid(child, &status, WNOHANG) == 0; waited += 10) {
            if (waited > 20000) {
              kill(child, SIGKILL);
              waitpid(child, &status, 0);
              failure = "a child forked in round " + std::to_string(round) + " hung";
              break;
            }
            usleep(10000);
          }
          if (failure.empty() && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
            failure = "a child failed in round " + std::to_string(round);
          }
        }
        stop = true;
        maker.join();
        return failure;
      },
      120000);
  REQUIRE(error == "");
}
