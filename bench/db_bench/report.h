// What db_bench prints: the table of each compression's run (with the
// per-pass ratios, the settle times, the scansmall details and the
// amplification figures) and the --json document of every run. Stateless;
// the functions only read their arguments.
#ifndef STRATA_BENCH_DB_BENCH_REPORT_H_
#define STRATA_BENCH_DB_BENCH_REPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "flags.h"
#include "run.h"

namespace strata::db_bench {

// The figures of one compression's run of every workload on each engine.
struct Report {
  std::string compression;
  EngineRun strata;
  std::optional<EngineRun> rocks;
};

// Prints to stdout the figures of one compression's run on Strata (`s`) and
// on RocksDB (`r`; nullptr when it was not built in), side by side.
void PrintTable(const Flags& f, const std::string& compression, const EngineRun& s,
                const EngineRun* r);

// The whole --json document.
std::string JsonDocument(const Flags& f, const std::vector<Report>& reports, double total_seconds);

}  // namespace strata::db_bench

#endif  // STRATA_BENCH_DB_BENCH_REPORT_H_
