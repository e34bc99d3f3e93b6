// `strata gc`: the garbage collectors' safepoints and progress, read from a
// transaction-services directory (gc/FORMAT.md).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common/coding.h"
#include "common/file_system.h"
#include "gc/progress_log.h"
#include "output.h"
#include "txn/ceiling_file.h"
#include "txn/timestamp.h"

namespace strata::cli {

namespace {

// A garbage collector's files: GC_SAFEPOINT-<tenant> and
// GC_PROGRESS-<tenant> (gc/FORMAT.md).
constexpr char kSafepointPrefix[] = "GC_SAFEPOINT-";
constexpr char kProgressPrefix[] = "GC_PROGRESS-";

std::string RowBound(const std::string& row, const char* unbounded) {
  return row.empty() ? std::string(unbounded) : "'" + EscapeBytes(row) + "'";
}

// One tenant's collector: its safepoint file and, if kept, its progress.
// False when a file is damaged (said in the output).
bool ShowTenant(FileSystem* fs, const Args& args, const std::string& name, JsonWriter* json) {
  const std::string tenant = name.substr(sizeof(kSafepointPrefix) - 1);
  const std::string path = JoinPath(args.dir, name);
  if (json != nullptr) {
    json->BeginObject();
    json->Bytes("tenant", tenant, false);
  }
  // Closes the tenant's JSON object.
  auto finish = [&](bool ok) {
    if (json != nullptr) json->End();
    return ok;
  };
  std::string contents;
  uint64_t safepoint = 0;
  int slot = 0;
  Status s = ReadFileToString(fs, path, &contents);
  if (s.ok()) s = txn::CeilingFile::DecodeFile(contents, path, &safepoint, &slot);
  if (!s.ok()) {
    if (json != nullptr) {
      json->String("error", s.ToString());
    } else {
      std::printf("tenant %s: %s\n", tenant.c_str(), s.ToString().c_str());
    }
    return finish(false);
  }
  if (json != nullptr) {
    if (safepoint == 0) {
      json->Null("safepoint");
    } else {
      json->Timestamp("safepoint", safepoint);
      json->Number("safepoint_logical", txn::LogicalPart(safepoint));
    }
  } else if (safepoint == 0) {
    std::printf("tenant %s: no safepoint published yet\n", tenant.c_str());
  } else {
    std::printf("tenant %s: safepoint %" PRIu64 " (%s, logical %" PRIu64 ")\n", tenant.c_str(),
                safepoint, WallTime(safepoint).c_str(), txn::LogicalPart(safepoint));
  }
  // The rounds' progress, when the collector keeps it.
  const std::string progress_path = JoinPath(args.dir, std::string(kProgressPrefix) + tenant);
  if (!fs->FileExists(progress_path)) return finish(true);
  gc::RoundProgress progress;
  bool torn = false;
  s = ReadFileToString(fs, progress_path, &contents);
  if (s.ok()) s = gc::ProgressLog::Decode(contents, progress_path, &progress, &torn);
  if (!s.ok()) {
    if (json != nullptr) {
      json->String("progress_error", s.ToString());
    } else {
      std::printf("  progress: %s\n", s.ToString().c_str());
    }
    return finish(false);
  }
  if (json != nullptr) {
    if (progress.collected == 0) {
      json->Null("collected");
    } else {
      json->Timestamp("collected", progress.collected);
    }
    if (progress.round == 0) {
      json->Null("round");
    } else {
      json->BeginObject("round");
      json->Timestamp("safepoint", progress.round);
      json->Number("ranges_collected", progress.done.size());
      if (args.files) {
        json->BeginArray("ranges");
        for (const gc::RowRange& r : progress.done) {
          json->BeginObject();
          json->Bytes("table", r.table, false);
          json->Bytes("start_row", r.start_row, false);
          json->Bytes("end_row", r.end_row, false);
          json->End();
        }
        json->End();
      }
      json->End();
    }
    json->Bool("torn_last_record", torn);
    return finish(true);
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
  return true;
}

}  // namespace

int CmdGc(const Args& args) {
  FileSystem* fs = FileSystem::Default();
  std::vector<std::string> names;
  Status s = fs->GetChildren(args.dir, &names);
  if (!s.ok()) {
    PrintError(s.ToString());
    return kExitUsage;
  }
  std::sort(names.begin(), names.end());
  std::unique_ptr<JsonWriter> json;
  if (args.json) {
    json = std::make_unique<JsonWriter>(stdout);
    json->BeginObject();
    json->String("dir", args.dir);
    json->BeginArray("tenants");
  }
  int code = kExitOk;
  size_t found = 0;
  for (const std::string& name : names) {
    const bool lock_file = name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0;
    if (name.rfind(kSafepointPrefix, 0) != 0 || name.size() <= sizeof(kSafepointPrefix) - 1 ||
        lock_file) {
      continue;
    }
    found++;
    if (!ShowTenant(fs, args, name, json.get())) code = kExitProblem;
  }
  if (json != nullptr) {
    json->End();
    json->End();
  } else if (found == 0) {
    std::printf("no garbage collector's safepoint in %s\n", args.dir.c_str());
  }
  return code;
}

}  // namespace strata::cli
