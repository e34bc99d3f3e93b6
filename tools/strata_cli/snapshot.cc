// An engine on a snapshot of an engine directory: see snapshot.h.
#include "snapshot.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "args.h"
#include "commands.h"
#include "common/clock.h"
#include "common/coding.h"
#include "common/file_system.h"
#include "engine/manifest.h"
#include "output.h"
#include "txn/records.h"

namespace strata::cli {

namespace {

namespace fs = std::filesystem;

// How often a snapshot is taken before giving up on a manifest that keeps
// changing under it, and the pause before the second try (doubled for each
// try after it).
constexpr int kSnapshotAttempts = 6;
constexpr uint64_t kFirstRetryMicros = 10 * 1000;

// Whether `path` is not there (deleted meanwhile).
bool Gone(const fs::path& path) {
  std::error_code ec;
  return fs::symlink_status(path, ec).type() == fs::file_type::not_found;
}

// What went wrong doing `what` to `path` of the engine directory `dir`.
std::string CopyError(const fs::path& dir, const char* what, const fs::path& path,
                      const std::error_code& ec) {
  return "cannot snapshot " + dir.string() + ": " + what + " " + path.string() + ": " +
         ec.message();
}

// Puts the file `from` at `to`: a hard link with `link` (copied when the file
// system cannot link it), else a copy. A file gone meanwhile (a compaction's
// input, a released log segment) is skipped: the manifest changed too, and
// the caller takes the snapshot again. False with *error set on failure.
bool CopyFile(const fs::path& dir, const fs::path& from, const fs::path& to, bool link,
              std::string* error) {
  std::error_code ec;
  if (link) {
    fs::create_hard_link(from, to, ec);
    if (!ec) return true;
  }
  ec.clear();
  fs::copy_file(from, to, ec);
  if (!ec || Gone(from)) return true;
  *error = CopyError(dir, "copying", from, ec);
  return false;
}

// Copies the engine directory `dir` into `to` (an empty directory): the
// manifest and the log's segments copied (an engine open on `dir` goes on
// writing them), the table files, which never change, linked (copied where
// the file system cannot link them). False with *error set on the first
// failure.
bool CopyEngineDir(const fs::path& dir, const fs::path& to, std::string* error) {
  std::error_code list_ec;
  fs::directory_iterator it(dir, list_ec), end;
  for (; !list_ec && it != end; it.increment(list_ec)) {
    const fs::path& from = it->path();
    const std::string name = from.filename().string();
    if (name == "LOCK") continue;
    std::error_code ec;
    const fs::file_type type = it->status(ec).type();  // follows links, as an engine's open does
    if (ec && !Gone(from)) {
      *error = CopyError(dir, "reading", from, ec);
      return false;
    }
    if (type == fs::file_type::regular) {
      if (!CopyFile(dir, from, to / name, /*link=*/false, error)) return false;
      continue;
    }
    if (type != fs::file_type::directory) continue;
    fs::create_directory(to / name, ec);
    if (ec) {
      *error = CopyError(dir, "making a directory for", from, ec);
      return false;
    }
    std::error_code sub_ec;
    fs::directory_iterator f(from, sub_ec);
    for (; !sub_ec && f != end; f.increment(sub_ec)) {
      std::error_code file_ec;
      if (!f->is_regular_file(file_ec)) {
        if (file_ec && !Gone(f->path())) {
          *error = CopyError(dir, "reading", f->path(), file_ec);
          return false;
        }
        continue;
      }
      if (!CopyFile(dir, f->path(), to / name / f->path().filename(), /*link=*/name == "sst",
                    error)) {
        return false;
      }
    }
    if (sub_ec) {
      *error = CopyError(dir, "listing", from, sub_ec);
      return false;
    }
  }
  if (list_ec) {
    *error = CopyError(dir, "listing", dir, list_ec);
    return false;
  }
  return true;
}

// `dir` as an absolute path without "." or ".." parts or a trailing
// separator, so that its parent is the directory it is in ("db/" and "."
// name the directory itself). Empty, with *error set, when it has no parent.
fs::path NormalDir(const std::string& dir, std::string* error) {
  std::error_code ec;
  fs::path path = fs::absolute(dir, ec);
  if (ec) {
    *error = "cannot snapshot " + dir + ": " + ec.message();
    return {};
  }
  path = path.lexically_normal();
  if (!path.has_filename()) path = path.parent_path();
  if (path == path.root_path()) {
    *error = "cannot snapshot " + dir + ": the root directory has no directory beside it";
    return {};
  }
  return path;
}

// A snapshot of the engine directory `source` (NormalDir) in a new
// directory beside it (on its file system, so that table files are linked,
// not copied): taken again, after a pause, while the manifest changes under
// it (a flush or compaction of an engine open on `source`). Empty on
// failure, with *error set.
std::string SnapshotEngineDir(const fs::path& source, std::string* error) {
  std::string tmpl = (source.parent_path() / ".strata-snapshot-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    const int err = errno;
    *error = "cannot make a directory beside " + source.string() + ": " + std::strerror(err);
    return "";
  }
  const fs::path to(tmpl);
  const std::string manifest = (source / engine::Manifest::kFileName).string();
  uint64_t pause_micros = kFirstRetryMicros;
  bool taken = false;
  for (int attempt = 0; attempt < kSnapshotAttempts && !taken; attempt++) {
    if (attempt > 0) {
      Clock::Default()->SleepMicros(pause_micros);
      pause_micros *= 2;
    }
    std::string before, after;
    if (Status s = ReadFileToString(FileSystem::Default(), manifest, &before); !s.ok()) {
      *error = "cannot read " + manifest + ": " + s.ToString();
      break;
    }
    std::error_code ec;
    fs::remove_all(to, ec);
    if (!ec) fs::create_directory(to, ec);
    if (ec) {
      *error = "cannot make the snapshot directory " + tmpl + ": " + ec.message();
      break;
    }
    if (!CopyEngineDir(source, to, error)) break;
    if (ReadFileToString(FileSystem::Default(), manifest, &after).ok() && after == before) {
      taken = true;
    } else {
      *error = "the manifest of " + source.string() + " kept changing while it was copied (" +
               std::to_string(attempt + 1) + " tries)";
    }
  }
  if (taken) return tmpl;
  std::error_code ec;
  fs::remove_all(to, ec);
  return "";
}

}  // namespace

std::optional<int> SnapshotEngine::Open(const std::string& dir,
                                        std::unique_ptr<SnapshotEngine>* out) {
  std::string error;
  const fs::path source = NormalDir(dir, &error);
  const std::string snapshot = source.empty() ? "" : SnapshotEngineDir(source, &error);
  if (snapshot.empty()) {
    PrintError(error);
    return kExitProblem;
  }
  std::unique_ptr<SnapshotEngine> s(new SnapshotEngine(source.string(), snapshot));
  EngineOptions options;
  options.use_io_uring = false;
  Result<std::unique_ptr<Engine>> engine = Engine::Open(snapshot, options);
  if (!engine.ok()) {
    PrintError("opening a snapshot of " + dir + ": " + s->InSource(engine.status().ToString()));
    return kExitProblem;
  }
  s->engine_ = std::move(engine).value();
  *out = std::move(s);
  return std::nullopt;
}

std::string SnapshotEngine::InSource(std::string message) const {
  for (size_t at = message.find(dir_); at != std::string::npos;
       at = message.find(dir_, at + source_.size())) {
    message.replace(at, dir_.size(), source_);
  }
  return message;
}

SnapshotEngine::~SnapshotEngine() {
  if (engine_ != nullptr) engine_->Close().PermitUncheckedError();  // the first error is the one
  engine_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

Result<Table> SnapshotEngine::FindTable(const std::string& tenant, const std::string& table) {
  Result<Tenant> t = engine_->OpenTenant(tenant);
  if (!t.ok()) return t.status();
  return t->OpenTable(table);
}

std::optional<int> SnapshotEngine::OpenTable(const std::string& tenant, const std::string& table,
                                             bool transactional, Table* out) {
  Result<Table> handle = FindTable(tenant, table);
  if (!handle.ok()) {
    // NotFound here is a name that is not there: bad arguments.
    const Status& s = handle.status();
    if (s.IsNotFound() || s.IsInvalidArgument()) return Refuse(s);
    return ReadFailed(s);
  }
  if (transactional) {
    Result<TableSchema> schema = handle->GetSchema();
    if (!schema.ok()) return ReadFailed(schema.status());
    if (!txn::IsTransactionalSchema(*schema)) {
      return Refuse(Status::InvalidArgument(
          "table " + table + " of tenant " + tenant +
          " is not transactional (it was not made by TransactionDB::CreateTable)"));
    }
  }
  *out = *handle;
  return std::nullopt;
}

int SnapshotEngine::Refuse(const Status& s) {
  PrintError(InSource(s.ToString()));
  return kExitUsage;
}

int SnapshotEngine::ReadFailed(const Status& s, JsonWriter* json) {
  const std::string message = InSource(s.ToString());
  if (json != nullptr && !json->done()) json->Fail(message);
  PrintError(message);
  return s.IsInvalidArgument() ? kExitUsage : kExitProblem;
}

std::optional<int> SnapshotEngine::Close() {
  Status s = engine_->Close();
  engine_.reset();
  if (!s.ok()) {
    PrintError("closing the snapshot of " + source_ + ": " + InSource(s.ToString()));
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
