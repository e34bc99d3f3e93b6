// Manifest file format: engine/MANIFEST.md.
#include "engine/manifest.h"

#include <algorithm>
#include <cstring>

#include "common/coding.h"
#include "common/hash.h"
#include "engine/resource_governor.h"

namespace strata::engine {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'M', 'F'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderSize = 16;      // magic, version, checksum
constexpr size_t kRecordHeaderSize = 12;  // checksum, length, ~length
constexpr uint64_t kChecksumSeed = 0x4d414e49464553ULL;  // "MANIFES"

// DO NOT CHANGE: stored on disk.
enum Tag : uint32_t {
  kTagNextId = 1,
  kTagNewTenant = 2,
  kTagNewTable = 3,
  kTagNewTablet = 4,
  kTagNewFile = 5,
  kTagDeletedFile = 6,
  kTagFlushed = 7,
  kTagLogFloor = 8,
  kTagLastSequence = 9,
  kTagDroppedTable = 10,
  kTagDroppedTenant = 11,
  kTagRetiredTablet = 12,
  kTagTenantOptions = 13,
  kTagAlteredTable = 14,
  kTagLogSegment = 15,
};

// Version of the body of a tenant_options field (engine/MANIFEST.md).
constexpr uint32_t kTenantOptionsVersion = 1;

void EncodeTenantOptions(const TenantOptions& o, std::string* dst) {
  std::string body;
  PutVarint32(&body, kTenantOptionsVersion);
  PutVarint32(&body, o.write_buffer_weight);
  PutVarint64(&body, o.write_rate_limit);
  PutVarint64(&body, o.disk_quota);
  PutLengthPrefixedSlice(dst, body);
}

bool DecodeTenantOptions(Slice body, TenantOptions* o) {
  uint32_t version = 0;
  if (!GetVarint32(&body, &version) || version != kTenantOptionsVersion) return false;
  if (!GetVarint32(&body, &o->write_buffer_weight) || !GetVarint64(&body, &o->write_rate_limit) ||
      !GetVarint64(&body, &o->disk_quota)) {
    return false;
  }
  // Checksummed but out of range: refused as CreateTenant would refuse it.
  return body.empty() && ValidateTenantOptions(*o).ok();
}

std::string EncodeHeader() {
  std::string h(kMagic, sizeof(kMagic));
  PutFixed32(&h, kFormatVersion);
  PutFixed32(&h, Checksum32(h.data(), h.size(), kChecksumSeed));
  return h;
}

// Readers refuse longer edits, so none is ever written.
Status CheckEditSize(const std::string& path, const std::string& payload, uint64_t limit) {
  if (payload.size() <= limit) return Status::OK();
  return Status::InvalidArgument(path + ": manifest edit of " + std::to_string(payload.size()) +
                                 " bytes is over the limit of " + std::to_string(limit));
}

std::string FrameRecord(const std::string& payload) {
  std::string rec;
  char len[4];
  EncodeFixed32(len, static_cast<uint32_t>(payload.size()));
  ChecksumBuilder ck(kChecksumSeed);
  ck.Update(len, 4);
  ck.Update(payload);
  PutFixed32(&rec, ck.Finish32());
  rec.append(len, 4);
  PutFixed32(&rec, ~static_cast<uint32_t>(payload.size()));
  rec += payload;
  return rec;
}

}  // namespace

void VersionEdit::EncodeTo(std::string* dst) const {
  if (next_id) {
    PutVarint32(dst, kTagNextId);
    PutVarint64(dst, *next_id);
  }
  for (const auto& [tag, ids] : {std::pair{kTagDroppedTable, &dropped_tables},
                                  std::pair{kTagDroppedTenant, &dropped_tenants},
                                  std::pair{kTagRetiredTablet, &retired_tablets}}) {
    for (uint64_t id : *ids) {
      PutVarint32(dst, tag);
      PutVarint64(dst, id);
    }
  }
  for (const auto& t : tenants) {
    PutVarint32(dst, kTagNewTenant);
    PutVarint64(dst, t.id);
    PutLengthPrefixedSlice(dst, t.name);
  }
  for (const auto& t : tenant_options) {
    PutVarint32(dst, kTagTenantOptions);
    PutVarint64(dst, t.tenant_id);
    EncodeTenantOptions(t.options, dst);
  }
  for (const auto& t : tables) {
    PutVarint32(dst, kTagNewTable);
    PutVarint64(dst, t.tenant_id);
    PutVarint64(dst, t.id);
    PutLengthPrefixedSlice(dst, t.name);
    std::string schema;
    t.schema.EncodeTo(&schema);
    PutLengthPrefixedSlice(dst, schema);
  }
  for (const auto& t : altered_tables) {
    PutVarint32(dst, kTagAlteredTable);
    PutVarint64(dst, t.table_id);
    std::string schema;
    t.schema.EncodeTo(&schema);
    PutLengthPrefixedSlice(dst, schema);
  }
  for (const auto& t : tablets) {
    PutVarint32(dst, kTagNewTablet);
    PutVarint64(dst, t.table_id);
    PutVarint64(dst, t.id);
    PutLengthPrefixedSlice(dst, t.start_row);
    PutLengthPrefixedSlice(dst, t.end_row);
  }
  for (const auto& f : deleted_files) {
    PutVarint32(dst, kTagDeletedFile);
    PutVarint64(dst, f.tablet_id);
    PutVarint32(dst, f.locality_group);
    PutVarint32(dst, f.level);
    PutVarint64(dst, f.file_number);
  }
  for (const auto& f : new_files) {
    PutVarint32(dst, kTagNewFile);
    PutVarint64(dst, f.tablet_id);
    PutVarint32(dst, f.locality_group);
    PutVarint32(dst, f.level);
    PutVarint64(dst, f.meta.number);
    PutVarint64(dst, f.meta.size);
    PutLengthPrefixedSlice(dst, f.meta.smallest);
    PutLengthPrefixedSlice(dst, f.meta.largest);
    PutVarint64(dst, f.meta.min_sequence);
    PutVarint64(dst, f.meta.max_sequence);
    PutVarint64(dst, f.meta.entries);
  }
  for (const auto& f : flushed) {
    PutVarint32(dst, kTagFlushed);
    PutVarint64(dst, f.tablet_id);
    PutVarint32(dst, f.locality_group);
    PutVarint64(dst, f.sequence);
  }
  if (log_floor) {
    PutVarint32(dst, kTagLogFloor);
    PutVarint64(dst, *log_floor);
  }
  if (last_sequence) {
    PutVarint32(dst, kTagLastSequence);
    PutVarint64(dst, *last_sequence);
  }
  if (log_segment) {
    PutVarint32(dst, kTagLogSegment);
    PutVarint64(dst, *log_segment);
  }
}

Status VersionEdit::DecodeFrom(Slice input) {
  *this = VersionEdit();
  auto bad = [](const char* what) { return Status::Corruption(std::string("manifest edit: ") + what); };
  while (!input.empty()) {
    uint32_t tag;
    if (!GetVarint32(&input, &tag)) return bad("truncated tag");
    Slice a, b;
    switch (tag) {
      case kTagNextId: {
        uint64_t v;
        if (!GetVarint64(&input, &v)) return bad("truncated next id");
        next_id = v;
        break;
      }
      case kTagNewTenant: {
        NewTenant t;
        if (!GetVarint64(&input, &t.id) || !GetLengthPrefixedSlice(&input, &a)) {
          return bad("truncated tenant");
        }
        t.name = a.ToString();
        tenants.push_back(std::move(t));
        break;
      }
      case kTagTenantOptions: {
        SetTenantOptions t;
        if (!GetVarint64(&input, &t.tenant_id) || !GetLengthPrefixedSlice(&input, &a)) {
          return bad("truncated tenant options");
        }
        if (!DecodeTenantOptions(a, &t.options)) return bad("bad tenant options");
        tenant_options.push_back(t);
        break;
      }
      case kTagNewTable: {
        NewTable t;
        if (!GetVarint64(&input, &t.tenant_id) || !GetVarint64(&input, &t.id) ||
            !GetLengthPrefixedSlice(&input, &a) || !GetLengthPrefixedSlice(&input, &b)) {
          return bad("truncated table");
        }
        t.name = a.ToString();
        STRATA_RETURN_IF_ERROR(Schema::DecodeFrom(&b, &t.schema));
        if (!b.empty()) return bad("trailing bytes after a schema");
        tables.push_back(std::move(t));
        break;
      }
      case kTagAlteredTable: {
        AlteredTable t;
        if (!GetVarint64(&input, &t.table_id) || !GetLengthPrefixedSlice(&input, &a)) {
          return bad("truncated altered table");
        }
        STRATA_RETURN_IF_ERROR(Schema::DecodeFrom(&a, &t.schema));
        if (!a.empty()) return bad("trailing bytes after a schema");
        altered_tables.push_back(std::move(t));
        break;
      }
      case kTagNewTablet: {
        NewTablet t;
        if (!GetVarint64(&input, &t.table_id) || !GetVarint64(&input, &t.id) ||
            !GetLengthPrefixedSlice(&input, &a) || !GetLengthPrefixedSlice(&input, &b)) {
          return bad("truncated tablet");
        }
        t.start_row = a.ToString();
        t.end_row = b.ToString();
        tablets.push_back(std::move(t));
        break;
      }
      case kTagDeletedFile: {
        DeletedFile f;
        if (!GetVarint64(&input, &f.tablet_id) || !GetVarint32(&input, &f.locality_group) ||
            !GetVarint32(&input, &f.level) || !GetVarint64(&input, &f.file_number)) {
          return bad("truncated deleted file");
        }
        deleted_files.push_back(f);
        break;
      }
      case kTagNewFile: {
        NewFile f;
        if (!GetVarint64(&input, &f.tablet_id) || !GetVarint32(&input, &f.locality_group) ||
            !GetVarint32(&input, &f.level) || !GetVarint64(&input, &f.meta.number) ||
            !GetVarint64(&input, &f.meta.size) || !GetLengthPrefixedSlice(&input, &a) ||
            !GetLengthPrefixedSlice(&input, &b) || !GetVarint64(&input, &f.meta.min_sequence) ||
            !GetVarint64(&input, &f.meta.max_sequence) || !GetVarint64(&input, &f.meta.entries)) {
          return bad("truncated new file");
        }
        f.meta.smallest = a.ToString();
        f.meta.largest = b.ToString();
        new_files.push_back(std::move(f));
        break;
      }
      case kTagFlushed: {
        Flushed f;
        if (!GetVarint64(&input, &f.tablet_id) || !GetVarint32(&input, &f.locality_group) ||
            !GetVarint64(&input, &f.sequence)) {
          return bad("truncated flushed sequence");
        }
        flushed.push_back(f);
        break;
      }
      case kTagLogFloor: {
        uint64_t v;
        if (!GetVarint64(&input, &v)) return bad("truncated log floor");
        log_floor = v;
        break;
      }
      case kTagLastSequence: {
        uint64_t v;
        if (!GetVarint64(&input, &v)) return bad("truncated last sequence");
        last_sequence = v;
        break;
      }
      case kTagLogSegment: {
        uint64_t v;
        if (!GetVarint64(&input, &v)) return bad("truncated log segment number");
        log_segment = v;
        break;
      }
      case kTagDroppedTable:
      case kTagDroppedTenant:
      case kTagRetiredTablet: {
        uint64_t v;
        if (!GetVarint64(&input, &v)) return bad("truncated drop");
        (tag == kTagDroppedTable    ? dropped_tables
         : tag == kTagDroppedTenant ? dropped_tenants
                                    : retired_tablets)
            .push_back(v);
        break;
      }
      default:
        return Status::Corruption("manifest edit: unknown tag " + std::to_string(tag));
    }
  }
  return Status::OK();
}

Status Catalog::Apply(const VersionEdit& edit) {
  auto bad = [](const std::string& what) { return Status::Corruption("manifest: " + what); };
  for (uint64_t id : edit.dropped_tables) {
    if (!tables.count(id)) return bad("dropped table " + std::to_string(id) + " is unknown");
  }
  for (uint64_t id : edit.dropped_tables) {
    tables.erase(id);
    for (auto it = tablets.begin(); it != tablets.end();) {
      if (it->second.table_id != id) {
        ++it;
        continue;
      }
      retired_tablets.insert(it->first);
      files.erase(files.lower_bound({it->first, 0}), files.lower_bound({it->first + 1, 0}));
      it = tablets.erase(it);
    }
  }
  for (uint64_t id : edit.dropped_tenants) {
    if (!tenants.count(id)) return bad("dropped tenant " + std::to_string(id) + " is unknown");
    for (const auto& [tid, t] : tables) {
      if (t.tenant_id == id) return bad("dropped tenant " + std::to_string(id) + " has tables");
    }
    tenants.erase(id);
    tenant_options.erase(id);
  }
  // A tablet retired on its own (split into new tablets) goes with its files;
  // the new tablets list the files they keep.
  for (uint64_t id : edit.retired_tablets) {
    if (tablets.erase(id) != 0) {
      files.erase(files.lower_bound({id, 0}), files.lower_bound({id + 1, 0}));
    }
    retired_tablets.insert(id);
  }
  for (const auto& t : edit.tenants) {
    if (tenants.count(t.id)) return bad("tenant id " + std::to_string(t.id) + " reused");
  }
  for (const auto& t : edit.tables) {
    if (tables.count(t.id)) return bad("table id " + std::to_string(t.id) + " reused");
  }
  for (const auto& t : edit.tablets) {
    if (tablets.count(t.id) || retired_tablets.count(t.id)) {
      return bad("tablet id " + std::to_string(t.id) + " reused");
    }
  }
  for (const auto& t : edit.tenants) tenants[t.id] = t;
  for (const auto& t : edit.tenant_options) {
    if (!tenants.count(t.tenant_id)) {
      return bad("options of unknown tenant " + std::to_string(t.tenant_id));
    }
  }
  for (const auto& t : edit.tenant_options) {
    if (t.options == TenantOptions()) {
      tenant_options.erase(t.tenant_id);
    } else {
      tenant_options[t.tenant_id] = t.options;
    }
  }
  for (const auto& t : edit.tables) {
    if (!tenants.count(t.tenant_id)) return bad("table " + t.name + " of unknown tenant");
    tables[t.id] = t;
  }
  for (const auto& t : edit.altered_tables) {
    auto it = tables.find(t.table_id);
    if (it == tables.end()) {
      return bad("schema change of unknown table " + std::to_string(t.table_id));
    }
    // Slots and family ids are never taken back (engine/schema.h).
    if (t.schema.locality_groups().size() < it->second.schema.locality_groups().size() ||
        t.schema.next_family_id() < it->second.schema.next_family_id()) {
      return bad("schema change of table " + it->second.name +
                 " drops group slots or family ids");
    }
  }
  for (const auto& t : edit.altered_tables) tables[t.table_id].schema = t.schema;
  for (const auto& t : edit.tablets) {
    if (!tables.count(t.table_id)) return bad("tablet of unknown table");
    tablets[t.id] = t;
  }
  for (const auto& d : edit.deleted_files) {
    auto it = files.find({d.tablet_id, d.locality_group});
    bool found = false;
    if (it != files.end() && d.level < it->second.levels.size()) {
      auto& level = it->second.levels[d.level];
      for (size_t i = 0; i < level.size(); i++) {
        if (level[i].number == d.file_number) {
          level.erase(level.begin() + i);
          found = true;
          break;
        }
      }
    }
    if (!found) {
      return bad("deleted file " + std::to_string(d.file_number) + " is not in tablet " +
                 std::to_string(d.tablet_id) + " group " + std::to_string(d.locality_group) +
                 " level " + std::to_string(d.level));
    }
  }
  for (const auto& f : edit.new_files) {
    if (!tablets.count(f.tablet_id)) return bad("file of unknown tablet");
    if (f.level >= kNumLevels) return bad("file at level " + std::to_string(f.level));
    auto& g = files[{f.tablet_id, f.locality_group}];
    if (g.levels.size() < kNumLevels) g.levels.resize(kNumLevels);
    auto& level = g.levels[f.level];
    if (f.level == 0) {
      level.insert(level.begin(), f.meta);  // newest first
    } else {
      auto pos = std::lower_bound(level.begin(), level.end(), f.meta,
                                  [](const FileMeta& a, const FileMeta& b) {
                                    return a.smallest < b.smallest;
                                  });
      level.insert(pos, f.meta);
    }
  }
  for (const auto& f : edit.flushed) {
    auto& g = files[{f.tablet_id, f.locality_group}];
    if (g.levels.size() < kNumLevels) g.levels.resize(kNumLevels);
    g.flushed = std::max(g.flushed, f.sequence);
  }
  if (edit.log_floor) log_floor = std::max(log_floor, *edit.log_floor);
  if (edit.last_sequence) last_sequence = std::max(last_sequence, *edit.last_sequence);
  if (edit.log_segment) log_segment = *edit.log_segment;  // the newest edit's, not the largest
  if (edit.next_id) next_id = std::max(next_id, *edit.next_id);
  return Status::OK();
}

VersionEdit Catalog::Snapshot() const {
  VersionEdit e;
  e.next_id = next_id;
  for (const auto& [id, t] : tenants) e.tenants.push_back(t);
  for (const auto& [id, o] : tenant_options) e.tenant_options.push_back({id, o});
  for (const auto& [id, t] : tables) e.tables.push_back(t);
  for (const auto& [id, t] : tablets) e.tablets.push_back(t);
  e.retired_tablets.assign(retired_tablets.begin(), retired_tablets.end());
  for (const auto& [key, g] : files) {
    for (uint32_t level = 0; level < g.levels.size(); level++) {
      // Level 0 is listed oldest first so that replaying the edit, which puts
      // each level-0 file in front, restores newest-first order.
      const auto& files_at = g.levels[level];
      for (size_t i = 0; i < files_at.size(); i++) {
        const FileMeta& m = level == 0 ? files_at[files_at.size() - 1 - i] : files_at[i];
        e.new_files.push_back({key.first, key.second, level, m});
      }
    }
    if (g.flushed > 0) e.flushed.push_back({key.first, key.second, g.flushed});
  }
  if (log_floor > 0) e.log_floor = log_floor;
  if (last_sequence > 0) e.last_sequence = last_sequence;
  if (log_segment > 0) e.log_segment = log_segment;
  return e;
}

Manifest::~Manifest() { Close().PermitUncheckedError();  // callers that care call Close()
}

Status Manifest::Read(FileSystem* fs, const std::string& dir, Catalog* catalog,
                      uint64_t max_edit_bytes) {
  const std::string path = JoinPath(dir, kFileName);
  if (!fs->FileExists(path))
    return Status::NotFound(path + ": no manifest (not a Strata directory?)");
  std::string data;
  STRATA_RETURN_IF_ERROR(ReadFileToString(fs, path, &data));
  if (data.size() < kHeaderSize || std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    return Status::Corruption(path + ": not a manifest (bad magic or short header)");
  }
  if (!ChecksumMatches(DecodeFixed32(data.data() + 12),
                       Checksum32(data.data(), 12, kChecksumSeed))) {
    return Status::Corruption(path + ": header checksum mismatch at offset 0");
  }
  if (DecodeFixed32(data.data() + 8) != kFormatVersion) {
    return Status::NotSupported(path + ": manifest format version " +
                                std::to_string(DecodeFixed32(data.data() + 8)));
  }
  size_t pos = kHeaderSize;
  // The first record is the snapshot, which came whole with the file (see
  // below): it can never be torn, and must be there.
  if (data.size() == kHeaderSize) {
    return Status::Corruption(path + ": the snapshot record is missing");
  }
  while (pos < data.size()) {
    // A record that does not fit, or whose checksum fails, is only
    // acceptable as the last thing in the file and not the snapshot: an
    // edit torn by a crash before it was acknowledged.
    const std::string where = path + " at offset " + std::to_string(pos);
    const bool snapshot = pos == kHeaderSize;
    if (data.size() - pos < kRecordHeaderSize) {
      if (snapshot) return Status::Corruption(where + ": the snapshot record is cut short");
      break;  // torn header
    }
    uint32_t len = DecodeFixed32(data.data() + pos + 4);
    if (len != ~DecodeFixed32(data.data() + pos + 8)) {
      // Zeros from here to the end: an append whose size reached the disk
      // but whose bytes did not (file systems may show such a tail after
      // a crash). Any other damage to a length is Corruption.
      if (!snapshot && std::all_of(data.begin() + static_cast<std::ptrdiff_t>(pos), data.end(),
                                   [](char c) { return c == 0; })) {
        break;
      }
      return Status::Corruption(where + ": edit length field damaged");
    }
    if (data.size() - pos - kRecordHeaderSize < len) {
      if (snapshot) return Status::Corruption(where + ": the snapshot record is cut short");
      break;  // torn body
    }
    if (len > max_edit_bytes) {
      return Status::Corruption(where + ": edit of " + std::to_string(len) +
                                " bytes is over the limit of " + std::to_string(max_edit_bytes));
    }
    uint32_t expected = DecodeFixed32(data.data() + pos);
    ChecksumBuilder ck(kChecksumSeed);
    ck.Update(data.data() + pos + 4, 4);
    ck.Update(data.data() + pos + kRecordHeaderSize, len);
    uint32_t actual = ck.Finish32();
    if (!ChecksumMatches(expected, actual)) {
      if (!snapshot && pos + kRecordHeaderSize + len == data.size()) break;  // torn last record
      return Status::Corruption(where + ": edit checksum mismatch");
    }
    VersionEdit edit;
    Status s = edit.DecodeFrom(Slice(data.data() + pos + kRecordHeaderSize, len));
    if (s.ok()) s = catalog->Apply(edit);
    if (!s.ok()) return s.WithContext(where);
    pos += kRecordHeaderSize + len;
  }
  return Status::OK();
}

Status Manifest::Open(FileSystem* fs, const std::string& dir, bool create, Catalog* catalog,
                      std::unique_ptr<Manifest>* result, uint64_t max_edit_bytes) {
  const std::string path = JoinPath(dir, kFileName);
  if (fs->FileExists(path)) {
    STRATA_RETURN_IF_ERROR(Read(fs, dir, catalog, max_edit_bytes));
  } else if (!create) {
    return Status::NotFound(path + ": no manifest (not a Strata directory?)");
  }

  // Write the catalog anew as one snapshot edit, atomically.
  std::string fresh = EncodeHeader();
  std::string payload;
  catalog->Snapshot().EncodeTo(&payload);
  STRATA_RETURN_IF_ERROR(CheckEditSize(path, payload, max_edit_bytes));
  fresh += FrameRecord(payload);
  STRATA_RETURN_IF_ERROR(WriteFileAtomically(fs, path, fresh));

  std::unique_ptr<WritableFile> file;
  FileOpenOptions opts;
  opts.truncate = false;
  STRATA_RETURN_IF_ERROR(fs->NewWritableFile(path, opts, &file));
  result->reset(new Manifest(path, std::move(file), max_edit_bytes));
  return Status::OK();
}

Status Manifest::Append(const VersionEdit& edit) {
  if (!error_.ok()) return error_;
  if (file_ == nullptr) return Status::InvalidArgument(path_ + ": manifest is closed");
  std::string payload;
  edit.EncodeTo(&payload);
  // Refused before anything is written: the manifest stays as it was.
  STRATA_RETURN_IF_ERROR(CheckEditSize(path_, payload, max_edit_bytes_));
  Status s = file_->Append(FrameRecord(payload));
  if (s.ok()) s = file_->Sync();
  if (!s.ok()) error_ = s;
  return s;
}

Status Manifest::Close() {
  if (file_ == nullptr) return Status::OK();
  Status s = file_->Close();
  file_.reset();
  return s;
}

}  // namespace strata::engine
