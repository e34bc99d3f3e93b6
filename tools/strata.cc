// strata: inspects an engine directory (engine/README.md, "Directory
// layout") without opening an engine: the catalog its MANIFEST describes
// (tenants, tables and their schemas, tablets, the files of each locality
// group level by level, the log's floor and newest segment), and a check that
// the files the catalog names are there as recorded. It only reads: no file
// is ever changed (Manifest::Read, unlike an engine's open, rewrites nothing).
//
// The log itself is strata-wal's (`strata-wal verify <dir>` checks it as
// recovery would); one SSTable's blocks and cells are strata-sst's. `strata
// gc <services-dir>` reads the garbage collectors' safepoints from a
// transaction-services directory (gc/README.md). `strata notifications
// <dir> --tenant=T --table=X` shows a transactional table's pending
// notifications and observers' acks (observer/README.md): it opens an engine
// on a snapshot of the directory (its manifest and log copied, its table
// files linked) in a directory made beside it and removed after, so the
// directory itself is only read, as with the other commands.
//
// Exit codes: 0 ok; 1 the catalog and the files disagree, or a file is
// damaged (check); 2 bad arguments, a directory that cannot be read or is no
// engine directory, or output that could not be written.
#include <algorithm>
#include <cinttypes>
#include <cerrno>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "common/file_system.h"
#include "engine/manifest.h"
#include "gc/progress_log.h"
#include "sstable/table_builder.h"
#include "sstable/table_cache.h"
#include "sstable/table_reader.h"
#include "strata/engine.h"
#include "strata/table.h"
#include "tool_util.h"
#include "txn/ceiling_file.h"
#include "txn/records.h"
#include "txn/timestamp.h"
#include "wal/log_format.h"
#include "wal/log_reader.h"

namespace strata {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitProblem = 1;
constexpr int kExitUsage = 2;

const char kUsage[] =
    "usage: strata <command> [options] <engine-dir>\n"
    "       strata gc <services-dir>\n"
    "       strata notifications <engine-dir> --tenant=T --table=X [--rows=N]\n"
    "\n"
    "Inspects an engine directory without changing any file. Safe on a\n"
    "directory an engine has open (it shows the catalog as of the manifest's\n"
    "last complete edit).\n"
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
    "           notifications, the newest one's time, and the newest ack. Opens\n"
    "           an engine on a snapshot of <engine-dir> in a directory made beside\n"
    "           it and removed after (the manifest and log copied, table files\n"
    "           linked), so <engine-dir> is only read\n"
    "\n"
    "options:\n"
    "  --tenant=T, --table=X  notifications: the table to show\n"
    "  --rows=N  notifications: show at most N cells (default 50; the totals\n"
    "            count every one)\n"
    "  --files   catalog: one line per file (number, bytes, entries, sequence\n"
    "            range, first and last key) instead of a line per level;\n"
    "            gc: one line per row range the round under way collected\n"
    "  --deep    check: also verify every block checksum of every file (reads\n"
    "            all of them; prints progress)\n"
    "  --help    show this text\n"
    "\n"
    "The log's records are checked by 'strata-wal verify <engine-dir>', one\n"
    "file's blocks by 'strata-sst'.\n"
    "\n"
    "exit status: 0 ok; 1 the catalog and the files disagree, or a file is\n"
    "damaged; 2 bad arguments, an unreadable or non-engine directory, or\n"
    "output that could not be written\n";

// A garbage collector's files: GC_SAFEPOINT-<tenant> and
// GC_PROGRESS-<tenant> (gc/FORMAT.md).
constexpr char kSafepointPrefix[] = "GC_SAFEPOINT-";
constexpr char kProgressPrefix[] = "GC_PROGRESS-";

struct Args {
  std::string command;
  std::string dir;
  bool files = false;
  bool deep = false;
  std::string tenant;  // notifications
  std::string table;
  uint64_t rows = 50;
};

int Usage(const std::string& error) {
  std::fprintf(stderr, "strata: %s\n(run 'strata --help' for usage)\n", error.c_str());
  return kExitUsage;
}

std::optional<int> ParseArgs(int argc, char** argv, Args* args) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (a == "--files") {
      args->files = true;
    } else if (a == "--deep") {
      args->deep = true;
    } else if (a.rfind("--tenant=", 0) == 0) {
      args->tenant = a.substr(9);
    } else if (a.rfind("--table=", 0) == 0) {
      args->table = a.substr(8);
    } else if (a.rfind("--rows=", 0) == 0) {
      char* end = nullptr;
      args->rows = std::strtoull(a.c_str() + 7, &end, 10);
      if (a.size() == 7 || *end != '\0') return Usage("--rows takes a number");
    } else if (a.size() > 1 && a[0] == '-') {
      return Usage("unknown option '" + a + "'");
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 2) return Usage("expected a command and a directory");
  args->command = positional[0];
  args->dir = positional[1];
  if (args->command != "catalog" && args->command != "check" && args->command != "gc" &&
      args->command != "notifications") {
    return Usage("unknown command '" + args->command + "'");
  }
  const bool notifications = args->command == "notifications";
  if (notifications && (args->tenant.empty() || args->table.empty())) {
    return Usage("notifications needs --tenant=T and --table=X");
  }
  if (!notifications && (!args->tenant.empty() || !args->table.empty())) {
    return Usage("--tenant and --table only go with notifications");
  }
  if (args->files && args->command == "check") return Usage("--files goes with catalog or gc");
  if (args->deep && args->command != "check") return Usage("--deep only goes with check");
  return std::nullopt;
}

std::string Bytes(uint64_t n) {
  char buf[32];
  if (n < 1024) {
    std::snprintf(buf, sizeof(buf), "%" PRIu64 " B", n);
  } else if (n < (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", static_cast<double>(n) / 1024);
  } else if (n < (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(n) / (1 << 20));
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", static_cast<double>(n) / (1 << 30));
  }
  return buf;
}

std::string Count(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string RowBound(const std::string& row, const char* unbounded) {
  return row.empty() ? std::string(unbounded) : "'" + EscapeBytes(row) + "'";
}

std::string BudgetString(const TenantOptions& o) {
  std::string s = "write buffer weight " + std::to_string(o.write_buffer_weight);
  s += ", write rate limit " +
       (o.write_rate_limit == 0 ? std::string("none") : Bytes(o.write_rate_limit) + "/s");
  s += ", disk quota " + (o.disk_quota == 0 ? std::string("none") : Bytes(o.disk_quota));
  return s;
}

// The catalog, read without changing anything; an exit code when it cannot be.
std::optional<int> ReadCatalog(FileSystem* fs, const std::string& dir, engine::Catalog* catalog) {
  if (const std::string why = tools::NotAFileReason(dir); !why.empty()) return Usage(why);
  if (!fs->FileExists(dir)) return Usage(dir + ": no such directory");
  std::vector<std::string> names;
  if (!fs->GetChildren(dir, &names).ok()) return Usage(dir + ": not a directory");
  Status s = engine::Manifest::Read(fs, dir, catalog);
  if (s.IsNotFound()) return Usage(dir + ": no MANIFEST (not an engine directory?)");
  if (!s.ok()) {
    std::fflush(stdout);
    std::fprintf(stderr, "strata: the manifest cannot be read: %s\n", s.ToString().c_str());
    return s.IsCorruption() ? kExitProblem : kExitUsage;
  }
  return std::nullopt;
}

using GroupKey = std::pair<uint64_t, uint32_t>;  // (tablet, group slot)

int CmdCatalog(const engine::Catalog& c, const Args& args) {
  std::printf("manifest: %s\n", JoinPath(args.dir, engine::Manifest::kFileName).c_str());
  std::printf("log: floor %" PRIu64 ", last sequence %" PRIu64 ", newest segment %s\n", c.log_floor,
              c.last_sequence,
              c.log_segment == 0 ? "not recorded" : wal::SegmentFileName(c.log_segment).c_str());
  std::printf("next id: %" PRIu64 "\n", c.next_id);
  uint64_t all_files = 0, all_bytes = 0;
  for (const auto& [tenant_id, tenant] : c.tenants) {
    auto budget = c.tenant_options.find(tenant_id);
    std::printf(
        "\ntenant %" PRIu64 " '%s' (%s)\n", tenant_id, EscapeBytes(tenant.name).c_str(),
        BudgetString(budget == c.tenant_options.end() ? TenantOptions() : budget->second).c_str());
    for (const auto& [table_id, table] : c.tables) {
      if (table.tenant_id != tenant_id) continue;
      std::printf("  table %" PRIu64 " '%s'\n", table_id, EscapeBytes(table.name).c_str());
      const engine::Schema& schema = table.schema;
      const auto& groups = schema.locality_groups();
      for (uint32_t g = 0; g < groups.size(); g++) {
        if (schema.IsFreeSlot(g)) continue;
        const LocalityGroupOptions& o = groups[g];
        std::string write_buffer =
            o.write_buffer_size == 0 ? std::string("the engine's") : Bytes(o.write_buffer_size);
        std::printf(
            "    group %u '%s': %scompression %s, block size %u, bloom bits %d, write "
            "buffer %s\n",
            g, o.name.c_str(), o.in_memory ? "in memory, " : "",
            sstable::CompressionTypeName(
                sstable::TableBuilderOptions::FromLocalityGroup(o).compression),
            o.block_size, o.bloom_bits_per_key, write_buffer.c_str());
        std::string families;
        for (const engine::FamilyInfo& f : schema.families()) {
          if (f.locality_group != g) continue;
          if (!families.empty()) families += ", ";
          families +=
              f.name + " (id " + std::to_string(f.id) +
              (f.column_markers_hide_by_timestamp ? ", column markers hide by timestamp)" : ")");
        }
        std::printf("      families: %s\n", families.empty() ? "none" : families.c_str());
      }
      // A split's tablets share their parent's files: each counts once.
      std::map<uint64_t, uint64_t> table_files;  // number -> bytes
      for (const auto& [tablet_id, tablet] : c.tablets) {
        if (tablet.table_id != table_id) continue;
        std::printf(
            "    tablet %" PRIu64 " rows [%s, %s)%s\n", tablet_id,
            RowBound(tablet.start_row, "start").c_str(), RowBound(tablet.end_row, "end").c_str(),
            c.retired_tablets.count(tablet_id) ? " retired (split; its files are shared)" : "");
        for (uint32_t g = 0; g < groups.size(); g++) {
          auto it = c.files.find(GroupKey{tablet_id, g});
          if (it == c.files.end()) continue;
          const auto& levels = it->second.levels;
          bool any = false;
          for (size_t level = 0; level < levels.size(); level++) {
            if (levels[level].empty()) continue;
            uint64_t bytes = 0, entries = 0;
            for (const engine::FileMeta& f : levels[level]) {
              bytes += f.size;
              entries += f.entries;
            }
            if (!any) {
              std::printf("      group %u: flushed to sequence %" PRIu64 "\n", g,
                          it->second.flushed);
              any = true;
            }
            std::printf("        level %zu: %s, %s, %s\n", level,
                        Count(levels[level].size(), "file", "files").c_str(), Bytes(bytes).c_str(),
                        Count(entries, "entry", "entries").c_str());
            if (args.files) {
              for (const engine::FileMeta& f : levels[level]) {
                std::printf("          %06" PRIu64 ".sst %" PRIu64 " bytes, %" PRIu64
                            " entries, sequences %" PRIu64 "..%" PRIu64 ", keys %s .. %s\n",
                            f.number, f.size, f.entries, f.min_sequence, f.max_sequence,
                            CellKeyDebugString(f.smallest).c_str(),
                            CellKeyDebugString(f.largest).c_str());
              }
            }
            for (const engine::FileMeta& f : levels[level]) table_files[f.number] = f.size;
          }
        }
      }
      uint64_t table_bytes = 0;
      for (const auto& [number, size] : table_files) table_bytes += size;
      std::printf("    total: %s, %s\n", Count(table_files.size(), "file", "files").c_str(),
                  Bytes(table_bytes).c_str());
      all_files += table_files.size();
      all_bytes += table_bytes;
    }
  }
  std::printf("\n%s, %s, %s, %s, %s\n", Count(c.tenants.size(), "tenant", "tenants").c_str(),
              Count(c.tables.size(), "table", "tables").c_str(),
              Count(c.tablets.size(), "tablet", "tablets").c_str(),
              Count(all_files, "file", "files").c_str(), Bytes(all_bytes).c_str());
  return kExitOk;
}

int CmdCheck(FileSystem* fs, const engine::Catalog& c, const Args& args) {
  // Each file once, with the groups that hold it (a split's tablets share
  // their parent's files).
  std::map<uint64_t, std::pair<engine::FileMeta, std::string>> files;
  for (const auto& [key, group] : c.files) {
    for (size_t level = 0; level < group.levels.size(); level++) {
      for (const engine::FileMeta& f : group.levels[level]) {
        files.emplace(f.number, std::make_pair(f, "tablet " + std::to_string(key.first) +
                                                      " group " + std::to_string(key.second) +
                                                      " level " + std::to_string(level)));
      }
    }
  }
  const std::string sst_dir = JoinPath(args.dir, "sst");
  int problems = 0;
  auto problem = [&](const std::string& what) {
    std::printf("PROBLEM: %s\n", what.c_str());
    problems++;
  };
  size_t done = 0;
  for (const auto& [number, entry] : files) {
    const auto& [meta, where] = entry;
    const std::string path = sstable::TableFileName(sst_dir, number);
    Result<uint64_t> size = fs->GetFileSize(path);
    if (!size.ok()) {
      problem(path + " (" + where + ") is missing: " + size.status().ToString());
      continue;
    }
    if (*size != meta.size) {
      problem(path + " (" + where + ") holds " + std::to_string(*size) +
              " bytes; the manifest records " + std::to_string(meta.size));
      continue;
    }
    if (args.deep) {
      std::unique_ptr<RandomAccessFile> file;
      Status s = fs->NewRandomAccessFile(path, &file);
      Result<std::unique_ptr<sstable::TableReader>> table = s;
      if (s.ok()) table = sstable::TableReader::Open({}, std::move(file), *size, path);
      if (table.ok()) s = (*table)->VerifyChecksums();
      if (s.ok() && !table.ok()) s = table.status();
      if (!s.ok()) problem(path + " (" + where + "): " + s.ToString());
      if (++done % 100 == 0 || done == files.size()) {
        std::fprintf(stderr, "strata: verified %zu of %zu files\n", done, files.size());
      }
    }
  }
  // Table files nobody names: left by a crash, deleted by the next open.
  std::vector<std::string> names;
  std::vector<std::string> strays;
  if (fs->GetChildren(sst_dir, &names).ok()) {
    for (const std::string& n : names) {
      const size_t dot = n.find(".sst");
      if (dot == std::string::npos || dot == 0 || dot + 4 != n.size()) continue;
      if (n.find_first_not_of("0123456789") != dot) continue;
      if (!files.count(std::strtoull(n.c_str(), nullptr, 10))) strays.push_back(n);
    }
  }
  // The log's newest segment, as recovery wants it (MANIFEST.md, "The log's
  // segments").
  if (c.log_segment != 0) {
    Status s = wal::CheckSegmentFile(fs, JoinPath(args.dir, "wal"), c.log_segment);
    if (!s.ok()) {
      problem(std::string(s.message()) + ": the manifest names it as the log's newest segment");
    }
  }
  std::printf("%s checked%s; %zu not in the catalog%s\n",
              Count(files.size(), "file", "files").c_str(),
              args.deep ? " (with their checksums)" : "", strays.size(),
              strays.empty() ? "" : " (an engine deletes them when it opens):");
  for (const std::string& n : strays) std::printf("  %s\n", n.c_str());
  if (problems > 0) {
    std::fflush(stdout);
    std::fprintf(stderr, "strata: %d problems found\n", problems);
    return kExitProblem;
  }
  std::printf("OK: every file the catalog names is there as recorded\n");
  return kExitOk;
}

// A timestamp's wall-clock part as UTC ("2023-11-14 22:13:20.123").
std::string WallTime(uint64_t ts) {
  const uint64_t ms = txn::PhysicalMillis(ts);
  const time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm;
  char buf[64];
  if (gmtime_r(&secs, &tm) == nullptr || std::strftime(buf, sizeof(buf), "%F %T", &tm) == 0) {
    return "?";
  }
  char out[80];
  std::snprintf(out, sizeof(out), "%s.%03u UTC", buf, static_cast<unsigned>(ms % 1000));
  return out;
}

int CmdGc(FileSystem* fs, const Args& args) {
  std::vector<std::string> names;
  Status s = fs->GetChildren(args.dir, &names);
  if (!s.ok()) {
    std::fprintf(stderr, "strata: %s\n", s.ToString().c_str());
    return kExitUsage;
  }
  std::sort(names.begin(), names.end());
  int code = kExitOk;
  size_t found = 0;
  for (const std::string& name : names) {
    const bool lock_file = name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0;
    if (name.rfind(kSafepointPrefix, 0) != 0 || name.size() <= sizeof(kSafepointPrefix) - 1 ||
        lock_file) {
      continue;
    }
    found++;
    const std::string tenant = name.substr(sizeof(kSafepointPrefix) - 1);
    const std::string path = JoinPath(args.dir, name);
    std::string contents;
    uint64_t safepoint = 0;
    int slot = 0;
    s = ReadFileToString(fs, path, &contents);
    if (s.ok()) s = txn::CeilingFile::DecodeFile(contents, path, &safepoint, &slot);
    if (!s.ok()) {
      std::printf("tenant %s: %s\n", tenant.c_str(), s.ToString().c_str());
      code = kExitProblem;
      continue;
    }
    if (safepoint == 0) {
      std::printf("tenant %s: no safepoint published yet\n", tenant.c_str());
    } else {
      std::printf("tenant %s: safepoint %" PRIu64 " (%s, logical %" PRIu64 ")\n", tenant.c_str(),
                  safepoint, WallTime(safepoint).c_str(), txn::LogicalPart(safepoint));
    }
    // The rounds' progress, when the collector keeps it.
    const std::string progress_path = JoinPath(args.dir, std::string(kProgressPrefix) + tenant);
    if (!fs->FileExists(progress_path)) continue;
    gc::RoundProgress progress;
    bool torn = false;
    s = ReadFileToString(fs, progress_path, &contents);
    if (s.ok()) s = gc::ProgressLog::Decode(contents, progress_path, &progress, &torn);
    if (!s.ok()) {
      std::printf("  progress: %s\n", s.ToString().c_str());
      code = kExitProblem;
      continue;
    }
    if (progress.collected == 0) {
      std::printf("  collected: no round finished yet\n");
    } else {
      std::printf("  collected through %" PRIu64 " (%s)\n", progress.collected,
                  WallTime(progress.collected).c_str());
    }
    if (progress.round != 0) {
      std::printf("  round at %" PRIu64 " under way: locks resolved, %zu row ranges collected\n",
                  progress.round, progress.done.size());
      if (args.files) {
        for (const gc::RowRange& r : progress.done) {
          std::printf("    table '%s' rows %s to %s\n", EscapeBytes(r.table).c_str(),
                      RowBound(r.start_row, "the first").c_str(),
                      RowBound(r.end_row, "the end").c_str());
        }
      }
    }
    if (torn) std::printf("  (a torn last record, which the collector drops)\n");
  }
  if (found == 0) std::printf("no garbage collector's safepoint in %s\n", args.dir.c_str());
  return code;
}

// Copies the engine directory `dir` into `to` (an empty directory): the
// manifest and the log's segments copied (an engine open on `dir` goes on
// writing them), the table files, which never change, linked (copied where
// links cannot be made). False with *error set on failure.
bool CopyEngineDir(const std::filesystem::path& dir, const std::filesystem::path& to,
                   std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == "LOCK") continue;
    if (it->is_directory(ec)) {
      fs::create_directory(to / name, ec);
      for (fs::directory_iterator f(it->path(), ec); !ec && f != end; f.increment(ec)) {
        if (!f->is_regular_file(ec)) continue;
        const fs::path target = to / name / f->path().filename();
        if (name == "sst") {
          fs::create_hard_link(f->path(), target, ec);
          if (!ec) continue;
          ec.clear();
        }
        fs::copy_file(f->path(), target, ec);
        // Gone meanwhile (a compaction or a log release): the manifest
        // changed too, and the caller copies again.
        if (ec && !fs::exists(f->path())) ec.clear();
      }
    } else if (!ec && it->is_regular_file(ec)) {
      fs::copy_file(it->path(), to / name, ec);
    }
  }
  if (ec) *error = "cannot snapshot " + dir.string() + ": " + ec.message();
  return !ec;
}

// A snapshot of the engine directory `dir` in a new directory beside it
// (on its file system, so that table files are linked, not copied): taken
// again while the manifest changes under it (a flush or compaction of an
// engine open on `dir`). Empty on failure, with *error set.
std::string SnapshotEngineDir(const std::string& dir, std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path source = fs::absolute(dir, ec);
  std::string tmpl = (source.parent_path() / ".strata-snapshot-XXXXXX").string();
  if (ec || ::mkdtemp(tmpl.data()) == nullptr) {
    *error = "cannot make a directory beside " + dir + ": " + std::string(std::strerror(errno));
    return "";
  }
  const fs::path to(tmpl);
  const std::string manifest = JoinPath(dir, engine::Manifest::kFileName);
  for (int attempt = 0; attempt < 5; attempt++) {
    std::string before, after;
    if (!ReadFileToString(FileSystem::Default(), manifest, &before).ok()) break;
    fs::remove_all(to, ec);
    fs::create_directory(to, ec);
    if (!CopyEngineDir(source, to, error)) break;
    if (ReadFileToString(FileSystem::Default(), manifest, &after).ok() && after == before) {
      return tmpl;
    }
    *error = "the manifest of " + dir + " kept changing while it was copied";
  }
  if (error->empty()) *error = "cannot read " + manifest;
  fs::remove_all(to, ec);
  return "";
}

int CmdNotifications(const Args& args) {
  std::string error;
  const std::string snapshot = SnapshotEngineDir(args.dir, &error);
  if (snapshot.empty()) {
    std::fprintf(stderr, "strata: %s\n", error.c_str());
    return kExitUsage;
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{snapshot};
  EngineOptions options;
  options.use_io_uring = false;
  Result<std::unique_ptr<Engine>> engine = Engine::Open(snapshot, options);
  if (!engine.ok()) {
    std::fprintf(stderr, "strata: opening a snapshot of %s: %s\n", args.dir.c_str(),
                 engine.status().ToString().c_str());
    return kExitProblem;
  }
  // A tenant or table that is not there, or not transactional, exits 2; a
  // store that fails to read, 1.
  auto fail = [&](const Status& s) {
    std::fprintf(stderr, "strata: %s\n", s.ToString().c_str());
    (*engine)->Close().PermitUncheckedError();  // the first error is the one
    return s.IsNotFound() || s.IsInvalidArgument() ? kExitUsage : kExitProblem;
  };
  auto problem = [&](const Status& s) {
    std::fprintf(stderr, "strata: reading the snapshot: %s\n", s.ToString().c_str());
    (*engine)->Close().PermitUncheckedError();
    return kExitProblem;
  };
  Result<Tenant> tenant = (*engine)->OpenTenant(args.tenant);
  if (!tenant.ok()) return fail(tenant.status());
  Result<Table> table = tenant->OpenTable(args.table);
  if (!table.ok()) return fail(table.status());
  Result<TableSchema> schema = table->GetSchema();
  if (!schema.ok()) return fail(schema.status());
  if (!txn::IsTransactionalSchema(*schema)) {
    return fail(Status::InvalidArgument("table " + args.table +
                                        " is not transactional: it has no notifications"));
  }
  ScanSpec spec;
  spec.filter.families = {std::string(txn::kNotifyFamily), std::string(txn::kAckFamily)};
  Result<std::unique_ptr<RowIterator>> it = table->Scan(ReadOptions(), spec);
  if (!it.ok()) return problem(it.status());
  uint64_t cells = 0, notifications = 0, acks = 0, shown = 0;
  uint64_t oldest = UINT64_MAX;
  std::printf("table '%s' of tenant '%s' (a snapshot of %s):\n", EscapeBytes(args.table).c_str(),
              EscapeBytes(args.tenant).c_str(), args.dir.c_str());
  for (; (*it)->Valid(); (*it)->Next()) {
    // Per column: its notifications (newest first) and newest ack.
    std::map<std::string, std::pair<std::vector<uint64_t>, uint64_t>> columns;
    for (const Cell& c : (*it)->cells()) {
      auto& [notes, ack] = columns[c.qualifier];
      if (c.family == txn::kNotifyFamily) {
        notes.push_back(c.timestamp);
      } else if (ack == 0) {
        ack = c.timestamp;
        acks++;
      }
    }
    for (const auto& [column, v] : columns) {
      const auto& [notes, ack] = v;
      if (notes.empty()) continue;
      cells++;
      notifications += notes.size();
      oldest = std::min(oldest, notes.back());
      if (shown >= args.rows) continue;
      shown++;
      std::printf("  row '%s' column '%s': %zu pending, newest %" PRIu64 " (%s)",
                  EscapeBytes((*it)->row()).c_str(), EscapeBytes(column).c_str(), notes.size(),
                  notes.front(), WallTime(notes.front()).c_str());
      if (ack != 0) {
        std::printf(", ack %" PRIu64 "%s", ack,
                    ack > notes.front() ? " (newer: a worker erases them without a run)" : "");
      }
      std::printf("\n");
    }
  }
  Status s = (*it)->status();
  if (!s.ok()) return problem(s);
  if (shown < cells) std::printf("  ... %" PRIu64 " more cells\n", cells - shown);
  std::printf("%" PRIu64 " notifications pending in %" PRIu64 " cells", notifications, cells);
  if (cells > 0) std::printf(", the oldest from %s", WallTime(oldest).c_str());
  std::printf("; %" PRIu64 " cells with an ack\n", acks);
  s = (*engine)->Close();
  if (!s.ok()) {
    std::fprintf(stderr, "strata: closing the snapshot: %s\n", s.ToString().c_str());
    return kExitProblem;
  }
  return kExitOk;
}

int Main(int argc, char** argv) {
  Args args;
  if (std::optional<int> code = ParseArgs(argc, argv, &args)) return *code;
  FileSystem* fs = FileSystem::Default();
  if (args.command == "gc") return CmdGc(fs, args);
  if (args.command == "notifications") {
    engine::Catalog catalog;  // an engine directory, before anything is copied
    if (std::optional<int> code = ReadCatalog(fs, args.dir, &catalog)) return *code;
    return CmdNotifications(args);
  }
  engine::Catalog catalog;
  if (std::optional<int> code = ReadCatalog(fs, args.dir, &catalog)) return *code;
  if (args.command == "catalog") return CmdCatalog(catalog, args);
  return CmdCheck(fs, catalog, args);
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  const int code = strata::Main(argc, argv);
  return strata::tools::FinishOutput("strata", code, /*error_code=*/2);
}
