// Manifest: the durable record of what the engine holds — tenants, tables
// with their schemas, tablets — kept as an append-only file of checksummed
// edits (engine/MANIFEST.md). Every open replays it and writes it anew as one
// snapshot edit, so it grows only while the engine stays open, and a torn
// last edit (an unacknowledged change) is gone for good. The snapshot, which
// comes whole with the file, is never read as torn.
//
// Manifest is thread-compatible: the engine serializes calls to Append.
#ifndef STRATA_ENGINE_MANIFEST_H_
#define STRATA_ENGINE_MANIFEST_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/cell_key.h"
#include "engine/file_meta.h"
#include "engine/schema.h"
#include "strata/options.h"
#include "strata/status.h"

namespace strata::engine {

// One atomic change to the catalog. See engine/MANIFEST.md for the encoding.
struct VersionEdit {
  struct NewTenant {
    uint64_t id = 0;
    std::string name;
  };
  struct NewTable {
    uint64_t tenant_id = 0;
    uint64_t id = 0;
    std::string name;
    Schema schema;
  };
  struct NewTablet {
    uint64_t table_id = 0;
    uint64_t id = 0;
    std::string start_row;  // inclusive; empty = unbounded
    std::string end_row;    // exclusive; empty = unbounded
  };

  // A tenant's resource budget, replacing any earlier one. Tenants without
  // one have the default TenantOptions.
  struct SetTenantOptions {
    uint64_t tenant_id = 0;
    TenantOptions options;
  };

  // An SSTable joining a level of one locality group of one tablet.
  struct NewFile {
    uint64_t tablet_id = 0;
    uint32_t locality_group = 0;
    uint32_t level = 0;
    FileMeta meta;
  };
  struct DeletedFile {
    uint64_t tablet_id = 0;
    uint32_t locality_group = 0;
    uint32_t level = 0;
    uint64_t file_number = 0;
  };
  // Every entry of the group with sequence <= `sequence` is in its files.
  struct Flushed {
    uint64_t tablet_id = 0;
    uint32_t locality_group = 0;
    SequenceNumber sequence = 0;
  };

  std::optional<uint64_t> next_id;
  // Drops apply first: tables (with their tablets and files), then tenants,
  // which must have no tables left.
  std::vector<uint64_t> dropped_tables;
  std::vector<uint64_t> dropped_tenants;
  // Tablets that are gone (their table was dropped, or they were split and
  // everything they held was flushed first): log records naming them are
  // skipped on replay, and a live tablet named here is removed with its
  // files. Snapshots repeat them, since the log may still hold such records.
  std::vector<uint64_t> retired_tablets;
  std::vector<NewTenant> tenants;
  // Apply after `tenants`, so one edit can create a tenant with its budget.
  std::vector<SetTenantOptions> tenant_options;
  std::vector<NewTable> tables;
  // A table's schema replaced by AlterTable (engine/schema.h says what may
  // change). Apply after `tables`.
  struct AlteredTable {
    uint64_t table_id = 0;
    Schema schema;
  };
  std::vector<AlteredTable> altered_tables;
  std::vector<NewTablet> tablets;
  // Deletions apply before additions, so one edit can move a file.
  std::vector<DeletedFile> deleted_files;
  std::vector<NewFile> new_files;
  std::vector<Flushed> flushed;
  // The log holds every record from this sequence on that recovery needs;
  // segments below it may be gone.
  std::optional<SequenceNumber> log_floor;
  // The newest sequence number used, for when the log holds no records.
  std::optional<SequenceNumber> last_sequence;
  // The log segment its writer has just started, or the last one recovery
  // kept while dropping a torn tail (0: none): it exists from now on until a
  // later edit names another (MANIFEST.md, "The log's segments").
  std::optional<uint64_t> log_segment;

  void EncodeTo(std::string* dst) const;
  Status DecodeFrom(Slice input);
};

// The catalog as the manifest describes it.
struct Catalog {
  // Files of one locality group of one tablet, level by level; level 0
  // newest first, deeper levels by smallest key.
  struct GroupFiles {
    std::vector<std::vector<FileMeta>> levels;
    SequenceNumber flushed = 0;
  };

  uint64_t next_id = 1;  // tenants, tables, tablets and files draw ids from one counter
  std::map<uint64_t, VersionEdit::NewTenant> tenants;
  // Budgets of the tenants that have one (others have the defaults).
  std::map<uint64_t, TenantOptions> tenant_options;
  std::map<uint64_t, VersionEdit::NewTable> tables;
  std::map<uint64_t, VersionEdit::NewTablet> tablets;
  std::map<std::pair<uint64_t, uint32_t>, GroupFiles> files;  // by (tablet, group)
  std::set<uint64_t> retired_tablets;
  SequenceNumber log_floor = 0;
  SequenceNumber last_sequence = 0;
  // The newest log segment recorded; 0 when none is (manifests from before
  // the field). Not the largest: a point-in-time recovery may restart the
  // numbering lower.
  uint64_t log_segment = 0;

  // Applies an edit; Corruption when it contradicts the catalog.
  Status Apply(const VersionEdit& edit);
  // One edit that recreates the whole catalog.
  VersionEdit Snapshot() const;
};

class Manifest {
 public:
  static constexpr const char* kFileName = "MANIFEST";
  // The largest edit (a snapshot included) written or read: 1 GiB, about ten
  // million files' worth of catalog.
  static constexpr uint64_t kMaxEditBytes = uint64_t{1} << 30;

  Manifest(const Manifest&) = delete;
  Manifest& operator=(const Manifest&) = delete;
  ~Manifest();

  // Replays dir/MANIFEST into *catalog (which must be empty), then rewrites
  // it as a snapshot. With `create`, a missing manifest starts an empty one;
  // otherwise a missing manifest is NotFound. `max_edit_bytes` (tests make
  // it small) bounds every edit: a complete record over it is Corruption, and
  // a snapshot over it fails the open with the file untouched.
  static Status Open(FileSystem* fs, const std::string& dir, bool create, Catalog* catalog,
                     std::unique_ptr<Manifest>* result, uint64_t max_edit_bytes = kMaxEditBytes);

  // Replays dir/MANIFEST into *catalog (which must be empty) and changes
  // nothing: for tools. Errors as Open's, NotFound for a missing manifest.
  static Status Read(FileSystem* fs, const std::string& dir, Catalog* catalog,
                     uint64_t max_edit_bytes = kMaxEditBytes);

  // Appends the edit and syncs it. An edit over max_edit_bytes is
  // InvalidArgument, with nothing written. On any other error the manifest
  // refuses every later edit (its tail is unknown until the next open).
  Status Append(const VersionEdit& edit);

  Status Close();

 private:
  Manifest(std::string path, std::unique_ptr<WritableFile> file, uint64_t max_edit_bytes)
      : path_(std::move(path)), file_(std::move(file)), max_edit_bytes_(max_edit_bytes) {}

  const std::string path_;
  std::unique_ptr<WritableFile> file_;
  const uint64_t max_edit_bytes_;
  Status error_;
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_MANIFEST_H_
