// The command line of `strata`: see args.h.
#include "args.h"

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../tool_util.h"

namespace strata::cli {

const char kUsage[] =
    "usage: strata <command> [options] <engine-dir>\n"
    "       strata catalog|check [--files|--deep] <engine-dir>\n"
    "       strata gc [--files] <services-dir>\n"
    "       strata notifications <engine-dir> --tenant=T --table=X [--rows=N]\n"
    "Every command takes --json; notifications takes --hex.\n"
    "\n"
    "Inspects an engine directory without changing any file. Safe on a\n"
    "directory an engine has open (catalog and check show it as of the\n"
    "manifest's last complete edit). notifications opens an engine on a\n"
    "snapshot of <engine-dir> in a directory made beside it and removed after\n"
    "(the manifest and log copied, table files linked), so <engine-dir> is only\n"
    "read.\n"
    "\n"
    "commands:\n"
    "  catalog  what the MANIFEST describes: the log's floor, last sequence and\n"
    "           newest segment; each tenant (and its budget), table (locality\n"
    "           groups with their options, families) and tablet (row range),\n"
    "           and per locality group and level the files, their bytes and\n"
    "           entries; totals per table\n"
    "  check    every file the catalog names is in <dir>/sst with the size it\n"
    "           records, and the log segment it names as the newest is in\n"
    "           <dir>/wal; table files the catalog does not name are listed\n"
    "           (an engine deletes them on open)\n"
    "  gc       in a transaction-services directory (TransactionServices::Open),\n"
    "           each tenant's garbage-collector safepoint: the timestamp and the\n"
    "           wall-clock time it carries; reads below it may find versions gone.\n"
    "           Then the safepoint through which collection is complete and the\n"
    "           round under way, with how many row ranges it has collected\n"
    "  notifications  the pending notifications and the observers' acks of\n"
    "           transactional table X of tenant T: per cell how many\n"
    "           notifications, the newest one's time, and the newest ack\n"
    "\n"
    "options:\n"
    "  --tenant=T, --table=X  notifications: the table\n"
    "  --rows=N      notifications: show at most N cells (default 50; the\n"
    "                totals count every one)\n"
    "  --files       catalog: one line per file (number, bytes, entries,\n"
    "                sequence range, first and last key) instead of a line per\n"
    "                level; gc: one line per row range the round under way\n"
    "                collected\n"
    "  --deep        check: also verify every block checksum of every file\n"
    "                (reads all of them; prints progress on standard error)\n"
    "  --hex         notifications: row keys and columns printed as hex.\n"
    "                Without it they are printed escaped: printable ASCII as\n"
    "                is, any other byte and the backslash as \\xNN, between\n"
    "                single quotes\n"
    "  --json        one JSON document on standard output instead of text.\n"
    "                Every byte string (row, column, table or tenant name) is a JSON string "
    "holding the bytes\n"
    "                escaped as above, so the document is valid whatever they\n"
    "                hold; when the bytes are not all printable ASCII (or\n"
    "                hold a backslash), or for keys with --hex, a\n"
    "                member <name>_hex beside it holds them in hex. A\n"
    "                transaction timestamp is a number, with a member\n"
    "                <name>_time beside it holding its UTC wall time. What a\n"
    "                command finds wrong (check's problems, a damaged\n"
    "                safepoint file) is in the document. A read that fails part\n"
    "                way ends it with an \"error\" member (the message also\n"
    "                printed on standard error); a command that fails before\n"
    "                its document begins (no such tenant or table, a snapshot\n"
    "                that does not open) prints {\"error\": ...}. Bad arguments\n"
    "                print nothing on standard output\n"
    "  --help        show this text\n"
    "\n"
    "The log's records are checked by 'strata-wal verify <engine-dir>', one\n"
    "file's blocks by 'strata-sst'.\n"
    "\n"
    "exit status: 0 ok; 1 the catalog and the files disagree, a file is\n"
    "damaged, or the snapshot cannot be opened; 2 bad arguments, an unreadable\n"
    "or non-engine directory, a tenant or table that is not there, a table\n"
    "that is not transactional given to notifications, or output that could\n"
    "not be written. Errors are one line on standard error\n";

int Usage(const std::string& error) {
  std::fprintf(stderr, "strata: %s\n(run 'strata --help' for usage)\n", error.c_str());
  return kExitUsage;
}

namespace {

// The options each command takes (beyond --json and --help).
const std::map<std::string, std::set<std::string>>& CommandOptions() {
  static const auto* options = new std::map<std::string, std::set<std::string>>{
      {"catalog", {"--files"}},
      {"check", {"--deep"}},
      {"gc", {"--files"}},
      {"notifications", {"--tenant", "--table", "--rows", "--hex"}},
  };
  return *options;
}

}  // namespace

std::optional<int> ParseArgs(int argc, char** argv, Args* args) {
  std::vector<std::string> positional;
  // Each option given, by name, with its value ("" for a flag).
  std::map<std::string, std::string> given;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (a.size() > 1 && a[0] == '-') {
      const size_t eq = a.find('=');
      const std::string name = a.substr(0, eq);
      static const std::set<std::string> kFlags = {"--json", "--hex", "--files", "--deep"};
      static const std::set<std::string> kValued = {"--tenant", "--table", "--rows"};
      if (kFlags.count(name) != 0) {
        if (eq != std::string::npos) return Usage(name + " takes no value");
      } else if (kValued.count(name) != 0) {
        if (eq == std::string::npos) return Usage(name + " takes a value: " + name + "=...");
      } else {
        return Usage("unknown option '" + a + "'");
      }
      if (given.count(name) != 0) return Usage(name + " given twice");
      given[name] = eq == std::string::npos ? "" : a.substr(eq + 1);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.empty()) return Usage("expected a command and a directory");
  args->command = positional[0];
  const std::string verb = args->command;
  const size_t operands = 1;
  if (CommandOptions().count(args->command) == 0) {
    return Usage("unknown command '" + args->command + "'");
  }
  if (positional.size() != operands + 1) {
    return Usage("expected a command and a directory");
  }
  args->dir = positional[operands];

  const std::set<std::string>& allowed = CommandOptions().at(verb);
  for (const auto& [name, value] : given) {
    if (name == "--json" || allowed.count(name) != 0) continue;
    std::string takers;
    for (const auto& [command, options] : CommandOptions()) {
      if (options.count(name) == 0) continue;
      takers += (takers.empty() ? "" : ", ") + command;
    }
    return Usage(name + " does not go with " + verb + " (it goes with " + takers + ")");
  }
  auto has = [&](const char* name) { return given.count(name) != 0; };
  args->json = has("--json");
  args->hex = has("--hex");
  args->files = has("--files");
  args->deep = has("--deep");
  auto number = [&](const char* name, uint64_t* out) -> std::optional<int> {
    if (!has(name)) return std::nullopt;
    if (!tools::ParseDecimal(given[name], out)) {
      return Usage(std::string(name) + " takes a number, not '" + given[name] + "'");
    }
    return std::nullopt;
  };
  if (auto code = number("--rows", &args->rows)) return code;
  args->tenant = given["--tenant"];
  args->table = given["--table"];

  const bool needs_table = allowed.count("--table") != 0;
  if (needs_table && (args->tenant.empty() || args->table.empty())) {
    return Usage(verb + " needs --tenant=T and --table=X");
  }
  return std::nullopt;
}

}  // namespace strata::cli
