// fuzz_seeds: writes a seed corpus for every fuzz target from real files.
// It runs a small engine (two locality groups, one compressed; puts, every
// kind of delete, flushes, a compaction, transactions) in a temporary
// directory, then takes its table files, their blocks, its log segments and
// its manifest, and adds the records the transaction layer and the GC write.
//
//   fuzz_seeds <corpus-root>     # writes <corpus-root>/<target>/seed-N
//
// Each seed starts with the byte its target reads first (see each target's
// header comment).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "engine/log_record.h"
#include "engine/manifest.h"
#include "gc/progress_log.h"
#include "mem_fs.h"
#include "sstable/table_reader.h"
#include "strata/engine.h"
#include "strata/table.h"
#include "strata/transaction.h"
#include "txn/instance_id_file.h"
#include "txn/records.h"
#include "wal/log_format.h"

namespace fs = std::filesystem;
using namespace strata;

namespace {

std::string root;
int seeds = 0;

void Seed(const std::string& target, const std::string& bytes) {
  const fs::path dir = fs::path(root) / target;
  fs::create_directories(dir);
  std::ofstream out(dir / ("seed-" + std::to_string(seeds++)), std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "fuzz_seeds: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

// Writes rows into a two-group table, with flushes and a compaction between,
// and runs a few transactions; leaves the last writes in the log.
void RunEngine(const std::string& dir) {
  EngineOptions options;
  auto engine = Engine::Open(dir, options);
  Check(engine.status(), "open");
  Check((*engine)->CreateTenant("t"), "create tenant");
  auto tenant = (*engine)->OpenTenant("t");
  Check(tenant.status(), "open tenant");
  TableSchema schema;
  LocalityGroupOptions plain;
  plain.name = "plain";
  plain.block_size = 512;
  LocalityGroupOptions packed;
  packed.name = "packed";
  packed.block_size = 1024;
  packed.compression = Compression::kZstd;
  schema.locality_groups = {plain, packed};
  schema.families = {{.name = "a", .locality_group = "plain"},
                     {.name = "b", .locality_group = "packed"}};
  Check(tenant->CreateTable("x", schema), "create table");
  auto table = tenant->OpenTable("x");
  Check(table.status(), "open table");
  WriteOptions w;
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 200; i++) {
      char row[32];
      std::snprintf(row, sizeof(row), "row%05d", i * 7 % 200);
      RowMutation m;
      m.Put("a", "q", 10 + round, "value " + std::to_string(i * round))
          .Put("b", std::string("q\0z", 3), 5, std::string(40, static_cast<char>('a' + i % 26)));
      if (i % 17 == 0) m.DeleteCell("a", "q", 9);
      if (i % 23 == 0) m.DeleteColumn("b", "old", 3);
      if (i % 41 == 0) m.DeleteRow(2);
      Check(table->Mutate(w, row, m), "mutate");
    }
    Check((*engine)->Flush(), "flush");
  }
  Check((*engine)->Compact(), "compact");
  auto services = TransactionServices::Open(dir + "/txn");
  Check(services.status(), "transaction services");
  auto db = TransactionDB::Open(*services, *tenant);
  Check(db.status(), "transaction db");
  Check((*db)->CreateTable("accounts"), "create accounts");
  for (int i = 0; i < 5; i++) {
    auto t = (*db)->Begin();
    Check(t.status(), "begin");
    Check((*t)->Set("accounts", "acct" + std::to_string(i), "balance", std::to_string(100 * i)),
          "set");
    Check((*t)->Commit(), "commit");
  }
  Check((*db)->Close(), "close transactions");
  db->reset();
  services->reset();
  for (int i = 0; i < 20; i++) {
    RowMutation m;
    m.Put("a", "late", 50, "in the log only");
    Check(table->Mutate(w, "late" + std::to_string(i), m), "mutate");
  }
  Check((*engine)->Close(), "close");
}

void TableSeeds(const fs::path& path) {
  const std::string bytes = ReadFile(path);
  Seed("sstable", '\0' + bytes);
  Seed("sstable", '\1' + bytes);  // through the block cache
  std::unique_ptr<RandomAccessFile> file;
  Check(FileSystem::Default()->NewRandomAccessFile(path.string(), &file), "open table file");
  auto reader = sstable::TableReader::Open(sstable::TableReaderOptions(), std::move(file),
                                           bytes.size(), path.string());
  Check(reader.status(), "open table");
  std::vector<sstable::TableReader::BlockInfo> blocks;
  Check((*reader)->ListBlocks(&blocks), "list blocks");
  int data_blocks = 0;
  for (const auto& b : blocks) {
    const bool data = b.kind == sstable::BlockKind::kData;
    if (data && ++data_blocks > 4) continue;
    if (!data && b.kind != sstable::BlockKind::kIndex) continue;
    sstable::BlockContents contents;
    Check((*reader)->ReadBlockContents(b.kind, b.handle, &contents), "read block");
    const sstable::KeyEncoding encoding =
        data ? (*reader)->data_key_encoding() : sstable::KeyEncoding::kWholeKey;
    Seed("block", std::string(1, static_cast<char>(encoding)) + contents.data);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "--help") {
    std::fprintf(argc == 2 ? stdout : stderr, "usage: fuzz_seeds <corpus-root>\n");
    return argc == 2 ? 0 : 2;
  }
  root = argv[1];
  const fs::path dir =
      fs::temp_directory_path() / ("strata-fuzz-seeds-" + std::to_string(getpid()));
  fs::remove_all(dir);
  RunEngine(dir.string());

  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const fs::path& p = entry.path();
    if (p.extension() == ".sst") TableSeeds(p);
  }
  // The log: one segment per seed, numbered as the engine named it.
  for (const auto& entry : fs::directory_iterator(dir / "wal")) {
    uint64_t number = 0;
    wal::LogFileKind kind;
    if (!wal::ParseLogFileName(entry.path().filename().string(), &number, &kind) ||
        kind != wal::LogFileKind::kSegment || number < 1 || number > 64) {
      continue;
    }
    std::string bytes = ReadFile(entry.path());
    // Segments are preallocated: keep the written part and a little after.
    const size_t used = bytes.find_last_not_of('\0');
    bytes.resize(std::min(bytes.size(), used == std::string::npos ? 4096 : used + 4096));
    const std::string selector(1, static_cast<char>((number - 1) << 2));
    Seed("wal", selector + bytes);
    // Its first 8 KiB: the header and the first records, then a torn one.
    Seed("wal", selector + bytes.substr(0, 8192));
  }
  // The manifest, its edits and the table's schema.
  Seed("manifest", std::string(1, '\0') + ReadFile(dir / "MANIFEST"));
  {
    engine::Catalog catalog;
    Check(engine::Manifest::Read(FileSystem::Default(), dir.string(), &catalog), "manifest");
    std::string edit;
    catalog.Snapshot().EncodeTo(&edit);
    Seed("manifest", std::string(1, '\1') + edit);
    for (const auto& [id, table] : catalog.tables) {
      std::string schema;
      table.schema.EncodeTo(&schema);
      Seed("manifest", std::string(1, '\2') + schema);
    }
  }
  // Log record payloads.
  {
    engine::LogRecordBuilder b;
    const std::vector<engine::CellEntry> entries = {
        {CellType::kPut, 1, "q", 7, "value"},
        {CellType::kDeleteCell, 1, "q", 6, ""},
        {CellType::kDeleteColumn, 2, std::string_view("q\0r", 3), 5, ""},
        {CellType::kDeleteRow, kRowMarkerFamily, "", 4, ""}};
    b.AddRow(3, "row", entries);
    b.AddRow(4, std::string_view("r\0w", 3), {entries[0]});
    Seed("log_record", b.Finish().ToString());
    Seed("log_record", engine::SequenceSkipPayload().ToString());
  }
  // Transaction records, a GC progress log and an instance-id file.
  {
    txn::LockRecord lock;
    lock.kind = txn::MutationKind::kPut;
    lock.start_ts = (uint64_t{1700000000000} << 18) | 5;
    lock.wall_millis = 1700000000000;
    lock.ttl_millis = 3000;
    lock.min_commit_ts = lock.start_ts + 1;
    lock.owner = {7, 9};
    lock.primary_table = "accounts";
    lock.primary_row = "acct1";
    lock.primary_column = "balance";
    lock.has_inline_value = true;
    lock.inline_value = "100";
    Seed("records", std::string(1, '\0') + txn::EncodeLock(lock));
    lock.has_inline_value = false;
    lock.inline_value.clear();
    lock.kind = txn::MutationKind::kDelete;
    Seed("records", std::string(1, '\0') + txn::EncodeLock(lock));
    txn::WriteRecord write;
    write.start_ts = lock.start_ts;
    write.has_inline_value = true;
    write.inline_value = "100";
    Seed("records", std::string(1, '\1') + txn::EncodeWrite(write));
    write = txn::WriteRecord();
    write.kind = txn::WriteKind::kRollback;
    write.start_ts = 12345;
    write.rolled_back_by = 12000;
    Seed("records", std::string(1, '\1') + txn::EncodeWrite(write));

    fuzz::MemFileSystem mem;
    std::unique_ptr<gc::ProgressLog> log;
    Check(gc::ProgressLog::Open(&mem, "progress", &log), "progress log");
    Check(log->StartRound(1000), "start round");
    Check(log->RangeDone({"accounts", "", "acct3"}), "range done");
    Check(log->RangeDone({"accounts", "acct3", ""}), "range done");
    Check(log->FinishRound(), "finish round");
    Check(log->StartRound(2000), "start round");
    std::unique_ptr<SequentialFile> file;
    Check(mem.NewSequentialFile("progress", &file), "read progress log");
    std::string image(1 << 16, '\0');
    Slice got;
    Check(file->Read(image.size(), &got, image.data()), "read progress log");
    Seed("records", std::string(1, '\2') + got.ToString());
    Seed("records", std::string(1, '\3') + txn::EncodeInstanceIdFile(42));
  }
  // Tool arguments: the tool's byte, then NUL-separated arguments.
  using namespace std::string_literals;
  for (const std::string& args :
       {"\0catalog\0/nonexistent"s, "\0check\0--deep\0/nonexistent"s,
        "\0gc\0--files\0/nonexistent"s,
        "\0notifications\0--tenant=t\0--table=x\0--rows=5\0/nonexistent"s,
        "\1scan\0/nonexistent.sst"s, "\1dump-block\0--help"s, "\1layout\0/nonexistent.sst"s,
        "\2verify\0/nonexistent"s, "\2dump\0/nonexistent"s,
        "\3--db\0/nonexistent\0--seconds\0003\0--threads=2\0--faults"s,
        "\3--db=/nonexistent\0--verify-only\0--rows\00064\0--txn-rows\0000"s}) {
    Seed("tool_args", args);
  }
  fs::remove_all(dir);
  std::printf("fuzz_seeds: %d seeds under %s\n", seeds, root.c_str());
  return 0;
}
