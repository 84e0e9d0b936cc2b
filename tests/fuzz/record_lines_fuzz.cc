// libFuzzer target for how the primary agent reads records: the lines a worker writes
// to its stream file, and what a forwarding node sends (a stream name, then lines), are
// stored or counted as bad; nothing crashes, and what is taken ends at a line's end.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "tracking/record_lines.h"

using namespace ddprun::tracking;

namespace {

// A run directory of its own, removed when the fuzzer exits (a plain array: it outlives
// the exit handlers).
char run_dir[] = "/tmp/ddprun_fuzz_records_XXXXXX";

RunStore& store() {
  static RunStore store = [] {
    ::mkdtemp(run_dir);
    std::atexit([] { std::filesystem::remove_all(run_dir); });
    return RunStore(run_dir, RunStore::Open::kCreate);
  }();
  return store;
}

}  // namespace

// Input: a flags byte (bit 0: the writer is gone), a stream name up to the first '\n',
// then the stream's bytes.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  bool final = (data[0] & 1) != 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t nl = rest.find('\n');
  StreamOrigin origin;
  if (nl != std::string_view::npos) {
    (void)parse_stream_name(std::string(rest.substr(0, nl)), origin);
    rest.remove_prefix(nl + 1);
  }
  IngestStats stats;
  store().begin();
  size_t taken = ingest_lines(store(), rest, origin, final, stats);
  store().rollback();
  if (taken > rest.size()) __builtin_trap();
  if (final && taken != rest.size()) __builtin_trap();
  if (!final && taken > 0 && rest[taken - 1] != '\n') __builtin_trap();
  if (!final && rest.substr(taken).find('\n') != std::string_view::npos) __builtin_trap();
  if (stats.points < 0 || stats.records < 0 || stats.bad_lines < 0) __builtin_trap();
  return 0;
}
