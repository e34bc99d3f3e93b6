// An engine on a snapshot of an engine directory: see snapshot.h.
#include "snapshot.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "args.h"
#include "commands.h"
#include "common/coding.h"
#include "common/file_system.h"
#include "engine/manifest.h"
#include "output.h"
#include "txn/records.h"

namespace strata::cli {

namespace {

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

}  // namespace

std::optional<int> SnapshotEngine::Open(const std::string& dir,
                                        std::unique_ptr<SnapshotEngine>* out) {
  std::string error;
  const std::string snapshot = SnapshotEngineDir(dir, &error);
  if (snapshot.empty()) {
    PrintError(error);
    return kExitUsage;
  }
  std::unique_ptr<SnapshotEngine> s(new SnapshotEngine(dir, snapshot));
  EngineOptions options;
  options.use_io_uring = false;
  Result<std::unique_ptr<Engine>> engine = Engine::Open(snapshot, options);
  if (!engine.ok()) {
    PrintError("opening a snapshot of " + dir + ": " + engine.status().ToString());
    return kExitProblem;
  }
  s->engine_ = std::move(engine).value();
  *out = std::move(s);
  return std::nullopt;
}

SnapshotEngine::~SnapshotEngine() {
  if (engine_ != nullptr) engine_->Close().PermitUncheckedError();  // the first error is the one
  engine_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::optional<int> SnapshotEngine::OpenTable(const std::string& tenant, const std::string& table,
                                             bool transactional, Table* out) {
  Result<Tenant> t = engine_->OpenTenant(tenant);
  if (!t.ok()) return ReadFailed(t.status());
  Result<Table> handle = t->OpenTable(table);
  if (!handle.ok()) return ReadFailed(handle.status());
  if (transactional) {
    Result<TableSchema> schema = handle->GetSchema();
    if (!schema.ok()) return ReadFailed(schema.status());
    if (!txn::IsTransactionalSchema(*schema)) {
      return ReadFailed(Status::InvalidArgument(
          "table " + table + " of tenant " + tenant +
          " is not transactional (it was not made by TransactionDB::CreateTable)"));
    }
  }
  *out = *handle;
  return std::nullopt;
}

int SnapshotEngine::ReadFailed(const Status& s, JsonWriter* json) {
  if (json != nullptr && !json->done()) json->Fail(s.ToString());
  PrintError(s.ToString());
  return s.IsNotFound() || s.IsInvalidArgument() ? kExitUsage : kExitProblem;
}

std::optional<int> SnapshotEngine::Close() {
  Status s = engine_->Close();
  engine_.reset();
  if (!s.ok()) {
    PrintError("closing the snapshot of " + source_ + ": " + s.ToString());
    return kExitProblem;
  }
  return std::nullopt;
}

std::optional<int> OpenForRead(const Args& args, bool transactional,
                               std::unique_ptr<SnapshotEngine>* engine, Table* table) {
  engine::Catalog catalog;
  if (std::optional<int> code = ReadCatalog(args.dir, &catalog)) return code;
  if (std::optional<int> code = SnapshotEngine::Open(args.dir, engine)) return code;
  return (*engine)->OpenTable(args.tenant, args.table, transactional, table);
}

void BeginTableOutput(const Args& args, JsonWriter* json, const std::string& before,
                      const std::string& after) {
  if (json != nullptr) {
    json->BeginObject();
    json->Bytes("tenant", args.tenant, false);
    json->Bytes("table", args.table, false);
    json->String("snapshot_of", args.dir);
    return;
  }
  std::printf("%stable '%s' of tenant '%s' (a snapshot of %s)%s:\n", before.c_str(),
              EscapeBytes(args.table).c_str(), EscapeBytes(args.tenant).c_str(), args.dir.c_str(),
              after.c_str());
}

}  // namespace strata::cli
