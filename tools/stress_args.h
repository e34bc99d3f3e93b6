// strata-stress's command line (tools/strata_stress.cc): its usage, its
// options and their parsing, and the limits they are checked against.
#ifndef STRATA_TOOLS_STRESS_ARGS_H_
#define STRATA_TOOLS_STRESS_ARGS_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "common/coding.h"
#include "tool_util.h"

namespace strata::stress {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitSetup = 3;

inline constexpr uint32_t kMaxThreads = 64;
inline constexpr uint32_t kMaxBatch = 8;  // rows of one batch or transaction
inline constexpr uint32_t kPending = 0x80000000u;
inline constexpr uint32_t kMaxRows = 1u << 20;

inline constexpr char kUsage[] =
    "usage: strata-stress --db DIR [options]\n"
    "\n"
    "Runs random operations on the engine in DIR from several threads and\n"
    "checks every result against an expected state kept in DIR/expected. Each\n"
    "run starts by verifying every row, so a run killed at any moment (SIGKILL)\n"
    "is checked by the next one: every acknowledged write must be there and\n"
    "no row may be half written. scripts/crash-test.sh runs it in a loop.\n"
    "\n"
    "options:\n"
    "  --db DIR            the database (created when missing)\n"
    "  --seconds N         run for N seconds, then close and exit (default 10;\n"
    "                      0 runs until killed)\n"
    "  --verify-only       open, verify every row, close\n"
    "  --threads N         worker threads, 1 to 64 (default 4)\n"
    "  --tenants N         tenants (default 2)\n"
    "  --tables N          plain tables per tenant (default 2)\n"
    "  --rows N            rows per plain table (default 1000)\n"
    "  --txn-rows N        rows of each tenant's transactional table (default\n"
    "                      200; 0: no transactions and no garbage collector)\n"
    "  --reopen-seconds N  close and reopen everything every N seconds on\n"
    "                      average (default 5; 0 never)\n"
    "  --faults            inject write, sync and open failures and simulate\n"
    "                      power losses (see the top of tools/strata_stress.cc)\n"
    "  --seed N            seed of every random choice (default: from the clock)\n"
    "  --quiet             no progress lines on standard error\n"
    "\n"
    "The layout options (--tenants, --tables, --rows, --txn-rows) must stay the\n"
    "same for one DIR; --threads may change between runs.\n"
    "\n"
    "exit codes: 0 every check held; 1 a check failed; 2 bad arguments; 3 the\n"
    "database could not be opened or set up.\n";

struct Args {
  std::string db;
  uint64_t seconds = 10;
  bool verify_only = false;
  uint32_t threads = 4;
  uint32_t tenants = 2;
  uint32_t tables = 2;
  uint32_t rows = 1000;
  uint32_t txn_rows = 200;
  uint64_t reopen_seconds = 5;
  bool faults = false;
  uint64_t seed = 0;
  bool seed_given = false;
  bool quiet = false;
};

inline int Usage(const std::string& message) {
  std::fprintf(stderr, "strata-stress: %s\n(strata-stress --help shows the usage)\n",
               message.c_str());
  return kExitUsage;
}

// Parses argv; returns an exit code to stop with, or nullopt to go on.
inline std::optional<int> ParseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (a.rfind("--", 0) != 0) return Usage("unexpected argument '" + EscapePrefix(a) + "'");
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    if (name == "--verify-only" || name == "--faults" || name == "--quiet") {
      if (eq != std::string::npos) return Usage("option " + name + " takes no value");
      if (name == "--verify-only") args->verify_only = true;
      if (name == "--faults") args->faults = true;
      if (name == "--quiet") args->quiet = true;
      continue;
    }
    const std::optional<std::string> option_value = tools::OptionValue(a, eq, argc, argv, &i);
    if (!option_value) return Usage("option " + EscapePrefix(name) + " needs a value");
    const std::string& value = *option_value;
    if (name == "--db") {
      if (value.empty()) return Usage("--db needs a directory");
      args->db = value;
      continue;
    }
    struct Numeric {
      const char* name;
      uint64_t min, max;
      uint64_t* out64;
      uint32_t* out32;
    };
    const Numeric numerics[] = {
        {"--seconds", 0, 1'000'000'000, &args->seconds, nullptr},
        {"--threads", 1, kMaxThreads, nullptr, &args->threads},
        {"--tenants", 1, 64, nullptr, &args->tenants},
        {"--tables", 1, 64, nullptr, &args->tables},
        {"--rows", 1, kMaxRows, nullptr, &args->rows},
        {"--txn-rows", 0, kMaxRows, nullptr, &args->txn_rows},
        {"--reopen-seconds", 0, 1'000'000, &args->reopen_seconds, nullptr},
        {"--seed", 0, UINT64_MAX, &args->seed, nullptr},
    };
    const Numeric* n = nullptr;
    for (const Numeric& cand : numerics) {
      if (name == cand.name) n = &cand;
    }
    if (n == nullptr) return Usage("unknown option " + EscapePrefix(a));
    uint64_t v = 0;
    if (!tools::ParseDecimal(value, &v) || v < n->min || v > n->max) {
      return Usage("bad value '" + EscapePrefix(value) + "' for " + name + " (a number from " +
                   std::to_string(n->min) + " to " + std::to_string(n->max) + ")");
    }
    if (n->out64 != nullptr) *n->out64 = v;
    if (n->out32 != nullptr) *n->out32 = static_cast<uint32_t>(v);
    if (name == "--seed") args->seed_given = true;
  }
  if (args->db.empty()) return Usage("--db DIR is required");
  if (args->threads > args->rows) return Usage("--threads must not exceed --rows");
  if (args->txn_rows != 0 && args->threads > args->txn_rows) {
    return Usage("--threads must not exceed --txn-rows (or give --txn-rows 0)");
  }
  const uint64_t slots =
      uint64_t{args->tenants} * (uint64_t{args->tables} * args->rows + args->txn_rows);
  if (slots > (uint64_t{1} << 26)) return Usage("too many rows in all (at most 2^26)");
  return std::nullopt;
}

}  // namespace strata::stress

#endif  // STRATA_TOOLS_STRESS_ARGS_H_
