// RadosStoreState and RowRead (rados_store_state.h).
#include "cluster/rados_store_state.h"

#include <algorithm>
#include <cerrno>
#include <random>
#include <thread>

#include "cluster/rados_keys.h"
#include "engine/input_checks.h"

namespace strata::cluster {

RowRead::RowRead(std::string_view row, std::vector<KeyRange> ranges)
    : version_key_(rados_keys::VersionKey(row)), ranges_(std::move(ranges)) {
  Reset();
}

void RowRead::Reset() {
  first_ = true;
  entries_.clear();
  version_.clear();
  next_after_.clear();
  remaining_.clear();
  open_.assign(ranges_.size(), true);
  for (const KeyRange& r : ranges_) {
    next_after_.push_back(r.start_after);
    remaining_.push_back(r.limited ? r.max : UINT64_MAX);
  }
}

void RowRead::Build(const RadosTablet& tablet, RadosReadOp* op) {
  op->CmpXattr(kEpochXattr, tablet.epoch);
  if (first_) {
    version_page_ = op->GetVals("", version_key_, 1);
  } else {
    // Later pages only from the snapshot of the first.
    op->OmapEquals(version_key_, version_);
    version_page_ = SIZE_MAX;
  }
  page_of_range_.assign(ranges_.size(), SIZE_MAX);
  for (size_t i = 0; i < ranges_.size(); i++) {
    if (open_[i]) {
      page_of_range_[i] =
          op->GetVals(next_after_[i], ranges_[i].prefix, std::min(remaining_[i], ranges_[i].max));
    }
  }
}

RowRead::Outcome RowRead::Finish(int rc, RadosReadOp* op, const RadosTablet& tablet,
                                 Status* error) {
  if (rc == -ENOENT) {  // a split removed the object after a new map took it in
    Reset();
    return Outcome::kFenced;
  }
  if (rc == -ECANCELED) {
    // The first page compares only the epoch: the tablet is fenced. A later
    // page also compares the row's version: start over, and the first page
    // tells which it was.
    if (first_) return Outcome::kFenced;
    Reset();
    return Outcome::kNextPage;
  }
  if (rc < 0) {
    *error = RadosError(rc, "reading tablet object " + tablet.object);
    return Outcome::kFailed;
  }
  if (first_) {
    for (auto& [key, value] : op->page(version_page_).entries) {
      if (key == version_key_) version_ = value;
    }
    first_ = false;
  }
  bool more = false;
  for (size_t i = 0; i < ranges_.size(); i++) {
    if (page_of_range_[i] == SIZE_MAX) continue;
    OmapPage& page = op->page(page_of_range_[i]);
    // The OSD may give fewer keys than asked for (at most
    // osd_max_omap_entries_per_request, 1024 by default): a limited range
    // goes on until it has its `max`.
    if (ranges_[i].limited) remaining_[i] -= std::min<uint64_t>(remaining_[i], page.entries.size());
    for (auto& [key, value] : page.entries) entries_.insert_or_assign(key, std::move(value));
    open_[i] = page.more && remaining_[i] > 0 && !page.entries.empty();
    if (open_[i]) next_after_[i] = page.entries.back().first;
    more = more || open_[i];
  }
  return more ? Outcome::kNextPage : Outcome::kDone;
}

RadosStoreState::RadosStoreState(RadosOptions options, std::string name,
                                 std::shared_ptr<RadosCluster> rados,
                                 std::unique_ptr<EtcdClient> etcd, engine::Schema schema,
                                 RadosTableInfo map)
    : options_(std::move(options)),
      name_(std::move(name)),
      rados_(std::move(rados)),
      etcd_(std::move(etcd)),
      schema_(std::move(schema)),
      nonce_((uint64_t{std::random_device()()} << 32) | std::random_device()()),
      map_(std::move(map)) {
  limits_.max_row_key_size = options_.limits.max_row_key_size;
  limits_.max_qualifier_size = options_.limits.max_qualifier_size;
  limits_.max_value_size = options_.limits.max_value_size;
}

Status RadosStoreState::CheckDeadline(Clock::time_point deadline, std::string_view what) {
  if (Clock::now() < deadline) return Status::OK();
  return Status::TimedOut(std::string(what) + ": the call's deadline passed");
}

RadosTablet RadosStoreState::TabletFor(std::string_view row) const {
  MutexLock l(&mu_);
  return map_.tablets[map_.TabletFor(row)];
}

RadosTableInfo RadosStoreState::Map() const {
  MutexLock l(&mu_);
  return map_;
}

Status RadosStoreState::ReloadMap(const std::string& fenced_object) const {
  // A fenced tablet whose new map is not in etcd yet (a split between its
  // steps) is retried until the call's deadline: not in a hot loop.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  Result<RadosTableInfo> info = LoadRadosTable(etcd_.get(), options_.root, name_);
  if (!info.ok()) return info.status();
  RadosTableInfo unchanged;  // the map, when it did not change
  size_t fenced = SIZE_MAX;  // the fenced tablet's index in it
  {
    MutexLock l(&mu_);
    if (RadosObjectIncarnation(info->tablets[0].object) !=
        RadosObjectIncarnation(map_.tablets[0].object)) {
      return Status::NotFound("RADOS table '" + name_ + "' was dropped");
    }
    if (info->mod_revision > map_.mod_revision) {
      map_ = std::move(info).value();
      return Status::OK();
    }
    // The same map, and the tablet still fenced: a split that died may
    // have left the fence. Looked at now and then, not on every retry.
    if (fenced_object.empty() || Clock::now() < next_repair_) return Status::OK();
    next_repair_ = Clock::now() + std::chrono::milliseconds(250);
    for (size_t i = 0; i < map_.tablets.size(); i++) {
      if (map_.tablets[i].object == fenced_object) fenced = i;
    }
    if (fenced == SIZE_MAX) return Status::OK();
    unchanged = map_;
  }
  return RecoverRadosFence(etcd_.get(), *rados_, options_.root, name_, unchanged, fenced);
}

Result<CellFilter> RadosStoreState::Resolve(const RowFilter& filter) const {
  engine::ResolvedFilter checked;
  STRATA_RETURN_IF_ERROR(engine::ResolveFilter(name_, schema_, filter, &checked));
  CellFilter f;
  f.all = filter.families.empty() && filter.columns.empty();
  f.min_timestamp = filter.min_timestamp;
  f.max_timestamp = filter.max_timestamp;
  f.max_versions = filter.max_versions;
  for (const std::string& family : filter.families) {
    const uint16_t id = schema_.FindFamily(family)->id;
    if (f.families.size() <= id) f.families.resize(id + 1);
    f.families[id] = true;
  }
  for (const auto& [family, qualifier] : filter.columns) {
    f.columns.insert({schema_.FindFamily(family)->id, qualifier});
  }
  return f;
}

std::vector<KeyRange> RadosStoreState::RangesFor(std::string_view row,
                                                 const CellFilter& filter) const {
  if (filter.all) return {KeyRange{rados_keys::RowPrefix(row), "", kOmapPage, false}};
  std::vector<KeyRange> ranges;
  for (uint16_t id = 0; id < filter.families.size(); id++) {
    if (filter.families[id]) {
      ranges.push_back(KeyRange{rados_keys::FamilyPrefix(row, id), "", kOmapPage, false});
    }
  }
  for (const auto& [family, qualifier] : filter.columns) {
    if (family < filter.families.size() && filter.families[family]) continue;
    KeyRange r;
    r.prefix = rados_keys::ColumnPrefix(row, family, qualifier);
    // Versions come newest first: skip those above max_timestamp, and take
    // no more than max_versions.
    // (From the newest when no version lies above max_timestamp: one more
    // than the largest timestamp would wrap.)
    if (filter.max_timestamp < kMaxTimestamp) {
      r.start_after = rados_keys::CellKey(r.prefix, filter.max_timestamp + 1);
    }
    r.limited = filter.max_versions <= kOmapPage;
    r.max = r.limited ? filter.max_versions : kOmapPage;
    ranges.push_back(std::move(r));
  }
  return ranges;
}

Status RadosStoreState::AppendCells(
    const std::vector<std::pair<std::string_view, std::string_view>>& entries,
    const CellFilter& filter, std::vector<Cell>* cells) const {
  rados_keys::DecodedKey key;
  uint32_t versions = 0;
  std::string_view column;  // the key bytes before the timestamp, of the column counted
  for (const auto& [k, v] : entries) {
    if (!rados_keys::DecodeKey(k, &key)) {
      return Status::Corruption("RADOS table '" + name_ + "': a key not of this format");
    }
    if (key.is_version) continue;
    if (v.empty() || v[0] != rados_keys::kCellTag) {
      return Status::Corruption("RADOS table '" + name_ + "': a cell value without its tag");
    }
    const engine::FamilyInfo* family = schema_.FamilyById(key.family_id);
    if (family == nullptr) {
      return Status::Corruption("RADOS table '" + name_ + "': a cell of unknown family id " +
                                std::to_string(key.family_id));
    }
    if (!filter.Wants(key.family_id, key.qualifier)) continue;
    if (key.timestamp < filter.min_timestamp || key.timestamp > filter.max_timestamp) continue;
    const std::string_view this_column = k.substr(0, k.size() - 16);
    if (this_column != column) {
      column = this_column;
      versions = 0;
    }
    if (versions++ >= filter.max_versions) continue;
    cells->push_back(Cell{family->name, key.qualifier, key.timestamp, std::string(v.substr(1))});
  }
  return Status::OK();
}

Status RadosStoreState::ReadRowKeys(std::string_view row, std::vector<KeyRange> ranges,
                                    Clock::time_point deadline, OmapEntries* entries) const {
  RowRead read(row, std::move(ranges));
  RadosTablet tablet = TabletFor(row);
  for (;;) {
    STRATA_RETURN_IF_ERROR(CheckDeadline(deadline, "reading a row of RADOS table '" + name_ + "'"));
    RadosReadOp op;
    read.Build(tablet, &op);
    RadosCall call;
    call.Start(*rados_, tablet.object, &op);
    Status error;
    switch (read.Finish(call.Wait(), &op, tablet, &error)) {
      case RowRead::Outcome::kDone:
        *entries = read.entries();
        return Status::OK();
      case RowRead::Outcome::kNextPage:
        break;
      case RowRead::Outcome::kFenced:
        STRATA_RETURN_IF_ERROR(ReloadMap(tablet.object));
        tablet = TabletFor(row);
        read.Reset();
        break;
      case RowRead::Outcome::kFailed:
        return error;
    }
  }
}

RadosStoreState::~RadosStoreState() {
  {
    MutexLock l(&split_mu_);
    stopping_ = true;
  }
  split_cv_.SignalAll();
  if (split_thread_.joinable()) split_thread_.join();
}

void RadosStoreState::NoteWrite(const RadosTablet& tablet) {
  if (options_.split_keys == 0) return;
  const uint64_t every = std::max<uint64_t>(1, options_.split_keys / 4);
  MutexLock l(&split_mu_);
  SplitCount& c = writes_since_check_[tablet.object];
  if (++c.writes < every << c.backoff || stopping_) return;
  c.writes = 0;
  to_check_.push_back(tablet);
  if (!split_thread_.joinable()) split_thread_ = std::thread([this] { SplitThread(); });
  split_cv_.Signal();
}

void RadosStoreState::SplitThread() {
  for (;;) {
    RadosTablet tablet;
    {
      MutexLock l(&split_mu_);
      while (!stopping_ && to_check_.empty()) split_cv_.Wait();
      if (stopping_) return;
      tablet = std::move(to_check_.front());
      to_check_.pop_front();
    }
    // Best effort. A check that fails (the cluster unreachable, a tablet
    // too big to copy within the deadline) is made again after twice as
    // many writes each time, up to 64 times as many: a tablet that cannot
    // be split does not stall its writers at every turn.
    TabletCheck check = TabletCheck::kRaced;
    Status s = SplitTabletIfOver(etcd_.get(), *rados_, options_.root, name_, tablet,
                                 options_.split_keys, Deadline(), &check);
    {
      MutexLock l(&split_mu_);
      if (s.ok()) {
        writes_since_check_.erase(tablet.object);  // a split-away object's count goes too
      } else {
        SplitCount& c = writes_since_check_[tablet.object];
        c.writes = 0;
        c.backoff = std::min(c.backoff + 1, 6);
      }
    }
    if (s.ok() && check == TabletCheck::kSplit) {
      background_splits_.fetch_add(1);
      ReloadMap().PermitUncheckedError();  // spares the next call a fence
    }
  }
}

std::string RadosStoreState::NewVersion() {
  const uint64_t n = versions_.fetch_add(1, std::memory_order_relaxed);
  std::string v(1, rados_keys::kVersionTag);
  for (uint64_t x : {nonce_, n}) {
    for (int shift = 56; shift >= 0; shift -= 8) v.push_back(static_cast<char>(x >> shift));
  }
  return v;
}

}  // namespace strata::cluster
