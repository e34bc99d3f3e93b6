// quickstart: the smallest complete use of Strata.
//
// Opens an engine in a fresh directory, creates a tenant and a table, writes
// rows, reads them back, closes, reopens (recovering from the log) and checks
// that every row survived. Prints each step; exits non-zero on any mismatch.
//
//   quickstart [--dir DIR] [--rows N] [--help]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "strata/engine.h"

namespace {

void Usage(const char* argv0) {
  std::printf(
      "Usage: %s [--dir DIR] [--rows N]\n"
      "Writes N rows (default 10000) into a new Strata engine in DIR (default: a fresh\n"
      "directory under the system temp dir), reads them back, reopens the engine and\n"
      "verifies every row again. DIR must not exist yet.\n",
      argv0);
}

int Fail(const std::string& what, const strata::Status& s) {
  std::fprintf(stderr, "FAILED: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

std::string RowKey(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "user%08d", i);
  return buf;
}

std::string Value(int i, int version) {
  return "value-" + std::to_string(i) + "-v" + std::to_string(version);
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Reads every row back and checks both columns.
int Verify(strata::Table& table, int rows, const char* when) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < rows; i++) {
    auto cells = table.ReadRow(strata::ReadOptions(), RowKey(i));
    if (!cells.ok()) return Fail("read " + RowKey(i), cells.status());
    // Expect info:name@2, info:name@1 (two versions) and stats:visits@1.
    const auto& c = *cells;
    bool good = c.size() == 3 && c[0].family == "info" && c[0].qualifier == "name" &&
                c[0].timestamp == 2 && c[0].value == Value(i, 2) && c[1].timestamp == 1 &&
                c[1].value == Value(i, 1) && c[2].family == "stats" &&
                c[2].value == std::to_string(i * 7);
    if (!good) {
      std::fprintf(stderr, "FAILED: row %s %s has %zu cells, not the ones written\n",
                   RowKey(i).c_str(), when, c.size());
      return 1;
    }
  }
  std::printf("  verified %d rows %s in %.3f s\n", rows, when, Seconds(start));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int rows = 10000;
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      Usage(argv[0]);
      return 0;
    } else if (std::strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else if (std::strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
      rows = std::atoi(argv[++i]);
      if (rows <= 0) {
        std::fprintf(stderr, "--rows wants a positive number\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "unknown argument '%s'\n", argv[i]);
      Usage(argv[0]);
      return 2;
    }
  }
  if (dir.empty()) {
    dir = (std::filesystem::temp_directory_path() /
           ("strata-quickstart-" + std::to_string(std::chrono::system_clock::now()
                                                      .time_since_epoch()
                                                      .count())))
              .string();
  }
  if (std::filesystem::exists(dir)) {
    std::fprintf(stderr, "%s already exists; give a new directory\n", dir.c_str());
    return 2;
  }

  std::printf("1. open a new engine in %s\n", dir.c_str());
  auto engine = strata::Engine::Open(dir);
  if (!engine.ok()) return Fail("open", engine.status());
  std::printf("   log written through %s\n",
              (*engine)->GetStats().wal_uses_io_uring ? "io_uring" : "pwritev+fdatasync");

  std::printf("2. create tenant 'demo' and table 'users' (families info, stats)\n");
  strata::Status s = (*engine)->CreateTenant("demo");
  if (!s.ok()) return Fail("create tenant", s);
  auto tenant = (*engine)->OpenTenant("demo");
  if (!tenant.ok()) return Fail("open tenant", tenant.status());
  strata::TableSchema schema;
  schema.locality_groups.push_back({.name = "hot"});
  schema.families.push_back({.name = "info", .locality_group = "hot"});
  schema.families.push_back({.name = "stats"});
  s = tenant->CreateTable("users", schema);
  if (!s.ok()) return Fail("create table", s);
  auto table = tenant->OpenTable("users");
  if (!table.ok()) return Fail("open table", table.status());

  std::printf("3. write %d rows, each an atomic mutation of 3 cells, synced\n", rows);
  auto start = std::chrono::steady_clock::now();
  strata::WriteOptions wo;  // sync = true: acknowledged once durable
  for (int i = 0; i < rows; i++) {
    strata::RowMutation m;
    m.Put("info", "name", 1, Value(i, 1));
    m.Put("info", "name", 2, Value(i, 2));
    m.Put("stats", "visits", 1, std::to_string(i * 7));
    s = table->Mutate(wo, RowKey(i), m);
    if (!s.ok()) return Fail("write " + RowKey(i), s);
    if ((i + 1) % (rows / 4 > 0 ? rows / 4 : 1) == 0) {
      std::printf("  %d rows written\n", i + 1);
    }
  }
  double secs = Seconds(start);
  std::printf("  %d rows in %.3f s (%.0f rows/s, one thread)\n", rows, secs, rows / secs);

  std::printf("4. read every row back\n");
  if (Verify(*table, rows, "before reopen") != 0) return 1;

  std::printf("5. close and reopen: the log is replayed\n");
  s = (*engine)->Close();
  if (!s.ok()) return Fail("close", s);
  engine->reset();
  start = std::chrono::steady_clock::now();
  engine = strata::Engine::Open(dir);
  if (!engine.ok()) return Fail("reopen", engine.status());
  std::printf("  reopened in %.3f s\n", Seconds(start));
  tenant = (*engine)->OpenTenant("demo");
  if (!tenant.ok()) return Fail("open tenant after reopen", tenant.status());
  table = tenant->OpenTable("users");
  if (!table.ok()) return Fail("open table after reopen", table.status());

  std::printf("6. verify after reopen\n");
  if (Verify(*table, rows, "after reopen") != 0) return 1;

  strata::EngineStats st = (*engine)->GetStats();
  std::printf("7. stats: last sequence %llu, memtables %llu bytes\n",
              static_cast<unsigned long long>(st.last_sequence),
              static_cast<unsigned long long>(st.memtable_bytes));
  s = (*engine)->Close();
  if (!s.ok()) return Fail("close", s);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::printf("OK: all %d rows survived the reopen\n", rows);
  return 0;
}
