// Fuzzes the argument parsing of the four tools (tools/strata_cli/args.cc,
// tools/strata_sst.cc, tools/strata_wal.cc, tools/strata_stress.cc): the
// first input byte picks the tool, the rest is its arguments separated by
// NUL bytes. Only ParseArgs runs, so no file is opened; it must return a
// clean exit code or nothing.
// The tools' sources are compiled into this file, their main functions
// renamed (strata's command line is a file of its own, with no main).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../../tools/strata_cli/args.cc"
#define main strata_sst_main
#include "../../tools/strata_sst.cc"
#undef main
#define main strata_wal_main
#include "../../tools/strata_wal.cc"
#undef main
#define main strata_stress_main
#include "../../tools/strata_stress.cc"
#undef main

#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  std::vector<std::string> args = {"tool"};
  std::string current;
  for (size_t i = 1; i < size; i++) {
    if (data[i] == 0) {
      args.push_back(current);
      current.clear();
    } else {
      current.push_back(static_cast<char>(data[i]));
    }
  }
  if (!current.empty() || size > 1) args.push_back(current);
  if (args.size() > 64) return 0;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int argc = static_cast<int>(args.size());
  std::optional<int> code;
  switch (data[0] % 4) {
    case 0: {
      strata::cli::Args parsed;
      code = strata::cli::ParseArgs(argc, argv.data(), &parsed);
      break;
    }
    case 1: {
      strata::sstable::Args parsed;
      code = strata::sstable::ParseArgs(argc, argv.data(), &parsed);
      break;
    }
    case 2: {
      strata::wal::Args parsed;
      code = strata::wal::ParseArgs(argc, argv.data(), &parsed);
      break;
    }
    default: {
      strata::stress::Args parsed;
      code = strata::stress::ParseArgs(argc, argv.data(), &parsed);
      break;
    }
  }
  FUZZ_CHECK(!code || *code == 0 || *code == 2);
  return 0;
}
