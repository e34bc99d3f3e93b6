// The Strata and RocksDB implementations of Store and Cursor; see stores.h.
#include "stores.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/engine.h"

#ifdef STRATA_HAVE_ROCKSDB
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/iostats_context.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/statistics.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#endif

namespace strata::db_bench {
namespace {

std::string LevelString(const std::vector<uint64_t>& files) {
  std::string s;
  for (size_t l = 0; l < files.size(); l++) {
    if (files[l] == 0) continue;
    if (!s.empty()) s += ' ';
    s += "L" + std::to_string(l) + ":" + std::to_string(files[l]);
  }
  return s.empty() ? "none" : s;
}

class StrataCursor final : public Cursor {
 public:
  StrataCursor(std::unique_ptr<strata::RowIterator> it, std::string family)
      : it_(std::move(it)), family_(std::move(family)) {
    CheckRow();
  }

  bool Valid() const override { return error_.empty() && it_->Valid(); }
  void Next() override {
    it_->Next();
    CheckRow();
  }
  void Seek(std::string_view key) override {
    it_->Seek(key);
    CheckRow();
  }
  std::string_view key() const override { return it_->row(); }
  std::string_view value() const override { return it_->cell_views()[0].value; }
  std::string error() const override {
    if (!error_.empty()) return error_;
    const strata::Status s = it_->status();
    return s.ok() ? std::string() : "scan: " + s.ToString();
  }

 private:
  void CheckRow() {
    if (!it_->Valid()) return;
    const std::vector<strata::CellView>& cells = it_->cell_views();
    if (cells.size() != 1 || cells[0].family != family_) {
      error_ = "scan: row '" + std::string(it_->row()) + "' has " + std::to_string(cells.size()) +
               " cells" +
               (cells.empty() ? std::string()
                              : ", the first of family " + std::string(cells[0].family)) +
               "; expected one cell of family " + family_;
    }
  }

  const std::unique_ptr<strata::RowIterator> it_;
  const std::string family_;
  std::string error_;
};

class StrataStore final : public Store {
 public:
  // Creates the tenant and table when they are missing, so it also reopens.
  static std::unique_ptr<Store> Open(const Flags& f, const StoreSpec& spec, std::string* error) {
    strata::EngineOptions o;
    o.write_buffer_size = f.write_buffer_mb << 20;
    o.block_cache_size = f.cache_mb << 20;
    o.file_system = spec.fs;
    auto e = strata::Engine::Open(spec.dir, o);
    if (!e.ok()) {
      *error = "Engine::Open: " + e.status().ToString();
      return nullptr;
    }
    auto store = std::unique_ptr<StrataStore>(new StrataStore(f.sync, spec.fs));
    store->engine_ = std::move(e.value());
    auto group = [&](const char* name) {
      strata::LocalityGroupOptions g;
      g.name = name;
      g.compression = spec.zstd ? strata::Compression::kZstd : strata::Compression::kNone;
      g.compression_level = 3;
      g.block_size = 16 << 10;
      g.bloom_bits_per_key = 10;
      return g;
    };
    strata::TableSchema schema;
    if (spec.layout == Layout::kOneFamily) {
      schema.locality_groups.push_back(group("default"));
      schema.families.push_back({.name = "f", .locality_group = "default"});
    } else {
      schema.locality_groups.push_back(group("big"));
      schema.locality_groups.push_back(group("small"));
      schema.families.push_back({.name = "big", .locality_group = "big"});
      schema.families.push_back({.name = "small", .locality_group = "small"});
    }
    strata::Status s = store->engine_->CreateTenant("bench");
    if (s.IsAlreadyExists()) s = strata::Status::OK();
    if (s.ok()) {
      auto tenant = store->engine_->OpenTenant("bench");
      s = tenant.ok() ? tenant->CreateTable("t", schema) : tenant.status();
      if (s.IsAlreadyExists()) s = strata::Status::OK();
      if (s.ok()) {
        auto table = tenant->OpenTable("t");
        if (table.ok()) {
          store->table_ = *table;
        } else {
          s = table.status();
        }
      }
    }
    if (!s.ok()) {
      *error = "creating the table: " + s.ToString();
      return nullptr;
    }
    return store;
  }

  std::string Put(std::string_view key, std::string_view value) override {
    strata::RowMutation m;
    m.Put("f", "q", 1, value);
    strata::Status s = table_.Mutate(write_options_, key, m);
    return s.ok() ? std::string() : s.ToString();
  }

  std::string Get(std::string_view key, size_t value_size, bool* found) override {
    auto cells = table_.ReadRow(read_options_, key);
    if (!cells.ok()) return cells.status().ToString();
    *found = !cells->empty();
    if (*found && (*cells)[0].value.size() != value_size) {
      return "row " + std::string(key) + " has a value of " +
             std::to_string((*cells)[0].value.size()) + " bytes";
    }
    return std::string();
  }

  std::string PutRow(std::string_view key, std::string_view big, std::string_view small) override {
    strata::RowMutation m;
    m.Put("big", "q", 1, big).Put("small", "q", 1, small);
    strata::Status s = table_.Mutate(write_options_, key, m);
    return s.ok() ? std::string() : s.ToString();
  }

  std::string NewCursor(Family family, std::string_view start,
                        std::unique_ptr<Cursor>* cursor) override {
    strata::ScanSpec spec;
    spec.start_row = start;
    std::string name = "f";  // the only family: no filter, as a whole-row reader asks
    if (family != Family::kMain) {
      name = family == Family::kBig ? "big" : "small";
      spec.filter.families = {name};
    }
    auto it = table_.Scan(read_options_, spec);
    if (!it.ok()) return "Table::Scan: " + it.status().ToString();
    *cursor = std::make_unique<StrataCursor>(std::move(it.value()), std::move(name));
    return std::string();
  }

  std::string Settle() override {
    strata::Status s = engine_->Compact();
    return s.ok() ? std::string() : "Engine::Compact: " + s.ToString();
  }

  StoreStats Stats() override {
    const strata::EngineStats s = engine_->GetStats();
    StoreStats out;
    out.log_bytes = s.wal_bytes;
    out.flush_bytes = s.flush_bytes_written;
    out.compaction_bytes = s.compaction_bytes_written;
    out.table_bytes = s.table_bytes;
    out.table_files = s.table_files;
    out.level_files = LevelString(s.level_files);
    return out;
  }

  void ResetReadIo() override {
    if (fs_ != nullptr) fs_->Reset();
  }
  ReadIo GetReadIo() override { return fs_ != nullptr ? fs_->Get() : ReadIo(); }

  std::string Close() override {
    table_ = strata::Table();
    strata::Status s = engine_->Close();
    engine_.reset();
    return s.ok() ? std::string() : "Engine::Close: " + s.ToString();
  }

 private:
  StrataStore(bool sync, CountingFileSystem* fs) : fs_(fs) { write_options_.sync = sync; }

  CountingFileSystem* const fs_;  // null when the engine's reads are not counted
  std::unique_ptr<strata::Engine> engine_;
  strata::Table table_;
  strata::WriteOptions write_options_;
  strata::ReadOptions read_options_;
};

#ifdef STRATA_HAVE_ROCKSDB
class RocksCursor final : public Cursor {
 public:
  RocksCursor(std::unique_ptr<rocksdb::Iterator> it, std::string_view start) : it_(std::move(it)) {
    if (start.empty()) {
      it_->SeekToFirst();
    } else {
      it_->Seek(rocksdb::Slice(start.data(), start.size()));
    }
  }

  bool Valid() const override { return it_->Valid(); }
  void Next() override { it_->Next(); }
  void Seek(std::string_view key) override { it_->Seek(rocksdb::Slice(key.data(), key.size())); }
  std::string_view key() const override {
    const rocksdb::Slice k = it_->key();
    return std::string_view(k.data(), k.size());
  }
  std::string_view value() const override {
    const rocksdb::Slice v = it_->value();
    return std::string_view(v.data(), v.size());
  }
  std::string error() const override {
    const rocksdb::Status s = it_->status();
    return s.ok() ? std::string() : "rocksdb::Iterator: " + s.ToString();
  }

 private:
  const std::unique_ptr<rocksdb::Iterator> it_;
};

class RocksStore final : public Store {
 public:
  // With Layout::kTwoGroups the database has column families "big" and
  // "small" (created when missing) beside the unused default one.
  static std::unique_ptr<Store> Open(const Flags& f, const StoreSpec& spec, std::string* error) {
    auto store = std::unique_ptr<RocksStore>(new RocksStore);
    rocksdb::Options o;
    o.create_if_missing = true;
    o.create_missing_column_families = true;
    o.write_buffer_size = f.write_buffer_mb << 20;
    o.compression = spec.zstd ? rocksdb::kZSTD : rocksdb::kNoCompression;
    o.compression_opts.level = 3;
    // Strata's level shape (EngineOptions defaults).
    o.level0_file_num_compaction_trigger = 4;
    o.max_bytes_for_level_base = 64ull << 20;
    o.max_bytes_for_level_multiplier = 10;
    o.target_file_size_base = 32ull << 20;
    rocksdb::BlockBasedTableOptions t;
    t.block_cache = rocksdb::NewLRUCache(f.cache_mb << 20);
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    t.block_size = 16 << 10;
    o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    store->stats_ = rocksdb::CreateDBStatistics();
    o.statistics = store->stats_;
    // Every column family shares the table factory, so the block cache too.
    std::vector<rocksdb::ColumnFamilyDescriptor> families = {
        {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(o)}};
    if (spec.layout == Layout::kTwoGroups) {
      families.push_back({"big", rocksdb::ColumnFamilyOptions(o)});
      families.push_back({"small", rocksdb::ColumnFamilyOptions(o)});
    }
    rocksdb::DB* db = nullptr;
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::Status s = rocksdb::DB::Open(rocksdb::DBOptions(o), spec.dir, families, &handles, &db);
    if (!s.ok()) {
      *error = "rocksdb::DB::Open: " + s.ToString();
      return nullptr;
    }
    store->db_.reset(db);
    store->handles_ = std::move(handles);
    store->write_options_.sync = f.sync;
    store->write_options_.disableWAL = false;
    return store;
  }

  ~RocksStore() override {
    if (db_) (void)Close();
  }

  std::string Put(std::string_view key, std::string_view value) override {
    rocksdb::Status s = db_->Put(write_options_, handles_[0], ToSlice(key), ToSlice(value));
    return s.ok() ? std::string() : s.ToString();
  }

  std::string Get(std::string_view key, size_t value_size, bool* found) override {
    rocksdb::PinnableSlice value;
    rocksdb::Status s = db_->Get(read_options_, handles_[0], ToSlice(key), &value);
    if (s.IsNotFound()) {
      *found = false;
      return std::string();
    }
    if (!s.ok()) return s.ToString();
    *found = true;
    if (value.size() != value_size) {
      return "key " + std::string(key) + " has a value of " + std::to_string(value.size()) +
             " bytes";
    }
    return std::string();
  }

  std::string PutRow(std::string_view key, std::string_view big, std::string_view small) override {
    rocksdb::WriteBatch batch;
    rocksdb::Status s = batch.Put(Handle(Family::kBig), ToSlice(key), ToSlice(big));
    if (s.ok()) s = batch.Put(Handle(Family::kSmall), ToSlice(key), ToSlice(small));
    if (s.ok()) s = db_->Write(write_options_, &batch);
    return s.ok() ? std::string() : s.ToString();
  }

  std::string NewCursor(Family family, std::string_view start,
                        std::unique_ptr<Cursor>* cursor) override {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read_options_, Handle(family)));
    *cursor = std::make_unique<RocksCursor>(std::move(it), start);
    return std::string();
  }

  std::string Settle() override {
    rocksdb::CompactRangeOptions cro;
    for (rocksdb::ColumnFamilyHandle* h : handles_) {
      rocksdb::Status s = db_->CompactRange(cro, h, nullptr, nullptr);
      if (!s.ok()) return "CompactRange of " + h->GetName() + ": " + s.ToString();
    }
    return std::string();
  }

  StoreStats Stats() override {
    StoreStats out;
    out.log_bytes = stats_->getTickerCount(rocksdb::WAL_FILE_BYTES);
    out.flush_bytes = stats_->getTickerCount(rocksdb::FLUSH_WRITE_BYTES);
    out.compaction_bytes = stats_->getTickerCount(rocksdb::COMPACT_WRITE_BYTES);
    std::vector<uint64_t> files;
    for (rocksdb::ColumnFamilyHandle* h : handles_) {
      uint64_t live = 0;
      if (db_->GetIntProperty(h, rocksdb::DB::Properties::kLiveSstFilesSize, &live)) {
        out.table_bytes += live;
      }
      files.resize(std::max<size_t>(files.size(), db_->NumberLevels(h)));
      for (int l = 0; l < db_->NumberLevels(h); l++) {
        std::string v;
        db_->GetProperty(h, rocksdb::DB::Properties::kNumFilesAtLevelPrefix + std::to_string(l),
                         &v);
        files[l] += std::strtoull(v.c_str(), nullptr, 10);
      }
    }
    for (uint64_t n : files) out.table_files += n;
    out.level_files = LevelString(files);
    return out;
  }

  void ResetReadIo() override {
    read_bytes_base_ = rocksdb::get_iostats_context()->bytes_read;
    opens_base_ = stats_->getTickerCount(rocksdb::NO_FILE_OPENS);
  }
  ReadIo GetReadIo() override {
    ReadIo io;
    io.known = true;
    io.bytes = rocksdb::get_iostats_context()->bytes_read - read_bytes_base_;
    io.opens = stats_->getTickerCount(rocksdb::NO_FILE_OPENS) - opens_base_;
    return io;
  }

  std::string Close() override {
    std::string error;
    for (rocksdb::ColumnFamilyHandle* h : handles_) {
      rocksdb::Status s = db_->DestroyColumnFamilyHandle(h);
      if (!s.ok() && error.empty()) error = "DestroyColumnFamilyHandle: " + s.ToString();
    }
    handles_.clear();
    rocksdb::Status s = db_->Close();
    db_.reset();
    if (!s.ok() && error.empty()) error = "rocksdb::DB::Close: " + s.ToString();
    return error;
  }

 private:
  RocksStore() = default;

  static rocksdb::Slice ToSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

  // handles_ is {default} or {default, big, small}, as Open asked for them.
  rocksdb::ColumnFamilyHandle* Handle(Family family) const {
    switch (family) {
      case Family::kBig:
        return handles_.at(1);
      case Family::kSmall:
        return handles_.at(2);
      case Family::kMain:
        break;
    }
    return handles_[0];
  }

  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::shared_ptr<rocksdb::Statistics> stats_;
  rocksdb::WriteOptions write_options_;
  rocksdb::ReadOptions read_options_;
  uint64_t read_bytes_base_ = 0;
  uint64_t opens_base_ = 0;
};
#endif  // STRATA_HAVE_ROCKSDB

}  // namespace

std::unique_ptr<Store> OpenStrataStore(const Flags& f, const StoreSpec& spec, std::string* error) {
  return StrataStore::Open(f, spec, error);
}

#ifdef STRATA_HAVE_ROCKSDB
std::unique_ptr<Store> OpenRocksStore(const Flags& f, const StoreSpec& spec, std::string* error) {
  return RocksStore::Open(f, spec, error);
}
#endif

}  // namespace strata::db_bench
