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
    "       strata get <engine-dir> --tenant=T --table=X --row=R [--family=F]\n"
    "                  [--column=Q] [--versions=N]\n"
    "       strata scan <engine-dir> --tenant=T --table=X [--start=R] [--end=R]\n"
    "                  [--family=F] [--versions=N] [--limit=N]\n"
    "       strata txn row <engine-dir> --tenant=T --table=X --row=R [--column=C]\n"
    "       strata txn locks <engine-dir> --tenant=T --table=X [--older-than=SECONDS]\n"
    "                  [--limit=N]\n"
    "Every command takes --json; get, scan, txn and notifications take --hex.\n"
    "\n"
    "Inspects an engine directory without changing any file. Safe on a\n"
    "directory an engine has open (catalog and check show it as of the\n"
    "manifest's last complete edit). notifications, get, scan and txn open an\n"
    "engine on a snapshot of <engine-dir> in a directory made beside it and\n"
    "removed after (the manifest and log copied; table files hard-linked, or\n"
    "copied when the file system cannot link them), so <engine-dir> is only\n"
    "read; they show what the directory held when the snapshot was taken, as a\n"
    "reopened engine would see it. While the manifest changes under the copy,\n"
    "the snapshot is taken again, a few times. A copy of an engine directory\n"
    "(a checkpoint) is read the same way.\n"
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
    "  get      the cells of one row of table X of tenant T, as Table::ReadRow\n"
    "           returns them: per cell the family, qualifier, timestamp and\n"
    "           value, newest version first within a column. Deleted versions\n"
    "           and delete markers are not shown (the read applies them)\n"
    "  scan     the cells of the rows in [--start, --end) of table X, in row\n"
    "           order, one line per cell as get prints them\n"
    "  txn row  the history of one row of transactional table X, per user\n"
    "           column (txn/FORMAT.md): its lock, if any (the transaction's\n"
    "           start_ts, kind, primary cell, age = now - the lock's wall time,\n"
    "           TTL, min_commit_ts, owner instance/token, a put's value, inline\n"
    "           or from the data family) and the transaction's state as its\n"
    "           primary says it, read in the same snapshot: a resolver decides\n"
    "           on the primary's lock alone, and only the primary's TTL is\n"
    "           refreshed. A primary shows whether its TTL is spent; a secondary\n"
    "           shows its primary locked (its age, TTL, whether it is spent,\n"
    "           owner), committed (commit_ts), rolled back, with no lock or\n"
    "           record (not prewritten yet: the secondary's own TTL decides), or\n"
    "           in a table that is not there. JSON: ttl_spent is the lock's\n"
    "           own; primary_state is locked, committed, rolled_back,\n"
    "           no_record, table_gone or unreadable, with primary_age_millis,\n"
    "           primary_ttl_millis, primary_ttl_spent and primary_owner when\n"
    "           locked, primary_commit_ts when committed, primary_error when\n"
    "           gone or unreadable. Then its write records newest first\n"
    "           (commit_ts, kind put/delete/lock/rollback, start_ts, and a\n"
    "           put's value, inline or from the data family; a rollback's\n"
    "           rolled_back_by); data cells no record names; notifications and\n"
    "           acks. Timestamps as the number and as the UTC wall time they\n"
    "           carry\n"
    "  txn locks  every lock of transactional table X (at least --older-than\n"
    "           seconds old): row, column, start_ts, kind, primary, age, TTL,\n"
    "           min_commit_ts, owner, value and the primary's state, as txn\n"
    "           row shows a lock. The locks of a transaction that looks stuck: a\n"
    "           reader resolves one once its primary's TTL is spent or its\n"
    "           owner is dead, or its primary is decided\n"
    "\n"
    "options:\n"
    "  --tenant=T, --table=X  notifications, get, scan, txn: the table\n"
    "  --row=R       get, txn row: the row\n"
    "  --family=F    get, scan: only this column family\n"
    "  --column=Q    get: only this qualifier (of --family, or of any family);\n"
    "                txn row: only this user column\n"
    "  --versions=N  get, scan: at most N versions of each column (N >= 1;\n"
    "                default all)\n"
    "  --start=R, --end=R  scan: the first row, and the row the scan stops\n"
    "                before (default the whole table)\n"
    "  --limit=N     scan: at most N rows; txn locks: at most N locks shown\n"
    "                (the totals count every one); default 0, no limit\n"
    "  --older-than=SECONDS  txn locks: only locks at least this old (default\n"
    "                0: every lock)\n"
    "  --rows=N      notifications: show at most N cells (default 50; the\n"
    "                totals count every one)\n"
    "  --files       catalog: one line per file (number, bytes, entries,\n"
    "                sequence range, first and last key) instead of a line per\n"
    "                level; gc: one line per row range the round under way\n"
    "                collected\n"
    "  --deep        check: also verify every block checksum of every file\n"
    "                (reads all of them; prints progress on standard error)\n"
    "  --hex         get, scan, txn, notifications: row keys, qualifiers,\n"
    "                columns and values printed as hex, and the values of --row,\n"
    "                --start, --end and --column read as hex. Without it they\n"
    "                are printed escaped: printable ASCII as is, any other byte\n"
    "                and the backslash as \\xNN, between single quotes\n"
    "  --json        one JSON document on standard output instead of text.\n"
    "                Every byte string (row, qualifier, column, value, table\n"
    "                or tenant name) is a JSON string holding the bytes\n"
    "                escaped as above, so the document is valid whatever they\n"
    "                hold; when the bytes are not all printable ASCII (or\n"
    "                hold a backslash), or for keys and values with --hex, a\n"
    "                member <name>_hex beside it holds them in hex. A\n"
    "                transaction timestamp is a number, with a member\n"
    "                <name>_time beside it holding its UTC wall time, or null\n"
    "                where there is none (a rollback's rolled_back_by when a\n"
    "                lock resolver or the coordinator rolled it back). What a\n"
    "                command finds wrong (check's problems, records that do\n"
    "                not decode) is in the document. A read that fails part\n"
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
    "damaged or missing (a table file that cannot be read, a record that cannot\n"
    "be decoded), or the snapshot cannot be taken (no directory can be made\n"
    "beside <engine-dir>, a file cannot be copied, or the manifest kept\n"
    "changing while it was copied) or opened; 2 bad arguments, an unreadable or\n"
    "non-engine directory, a tenant or table that is not there, a family the\n"
    "table does not have, a table that is not transactional given to\n"
    "notifications or txn, or output that could not be written. Errors are one\n"
    "line on standard error, naming the files of <engine-dir>\n";

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
      {"get", {"--tenant", "--table", "--row", "--family", "--column", "--versions", "--hex"}},
      {"scan",
       {"--tenant", "--table", "--start", "--end", "--family", "--versions", "--limit", "--hex"}},
      {"txn row", {"--tenant", "--table", "--row", "--column", "--hex"}},
      {"txn locks", {"--tenant", "--table", "--older-than", "--limit", "--hex"}},
  };
  return *options;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The bytes an even number of hex digits spell; false for anything else.
bool DecodeHex(const std::string& hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexDigit(hex[i]), lo = HexDigit(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi << 4 | lo));
  }
  return true;
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
      static const std::set<std::string> kValued = {
          "--tenant", "--table", "--rows",  "--row",      "--family",    "--column",
          "--start",  "--end",   "--limit", "--versions", "--older-than"};
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
  std::string verb = args->command;
  size_t operands = 1;
  if (args->command == "txn") {
    if (positional.size() < 2 || (positional[1] != "row" && positional[1] != "locks")) {
      return Usage("txn takes 'row' or 'locks'");
    }
    args->subcommand = positional[1];
    verb += " " + args->subcommand;
    operands = 2;
  } else if (CommandOptions().count(args->command) == 0) {
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
  // A key: as given, or hex with --hex.
  auto key = [&](const char* name, std::string* out) -> std::optional<int> {
    if (!has(name)) return std::nullopt;
    if (!args->hex) {
      *out = given[name];
    } else if (!DecodeHex(given[name], out)) {
      return Usage(std::string(name) + " takes hex digits with --hex, not '" + given[name] + "'");
    }
    return std::nullopt;
  };
  if (auto code = number("--rows", &args->rows)) return code;
  if (auto code = number("--limit", &args->limit)) return code;
  if (auto code = number("--older-than", &args->older_than_seconds)) return code;
  if (args->older_than_seconds > UINT64_MAX / 1000) return Usage("--older-than is too large");
  uint64_t versions = 0;
  if (auto code = number("--versions", &versions)) return code;
  if (has("--versions")) {
    if (versions == 0 || versions > UINT32_MAX) {
      return Usage("--versions takes a number from 1 to " + std::to_string(UINT32_MAX));
    }
    args->versions = static_cast<uint32_t>(versions);
  }
  if (auto code = key("--row", &args->row)) return code;
  if (auto code = key("--start", &args->start_row)) return code;
  if (auto code = key("--end", &args->end_row)) return code;
  if (has("--column")) {
    args->column.emplace();
    if (auto code = key("--column", &*args->column)) return code;
    if (args->column->empty()) return Usage("--column needs a name");
  }
  if (has("--family")) {
    args->family = given["--family"];
    if (args->family->empty()) return Usage("--family needs a name");
  }
  args->tenant = given["--tenant"];
  args->table = given["--table"];

  const bool needs_table = allowed.count("--table") != 0;
  if (needs_table && (args->tenant.empty() || args->table.empty())) {
    return Usage(verb + " needs --tenant=T and --table=X");
  }
  if (allowed.count("--row") != 0 && args->row.empty()) return Usage(verb + " needs --row=R");
  if (!args->end_row.empty() && args->start_row >= args->end_row) {
    return Usage("--start must come before --end");
  }
  return std::nullopt;
}

}  // namespace strata::cli
