// strata-stress: random operations on an engine from many threads, checked
// against an expected state kept outside the engine, so that a run can be
// killed at any moment (scripts/crash-test.sh does, in a loop) and the next
// run proves that every acknowledged write survived and that nothing
// unacknowledged half-exists.
//
// The database (--db DIR) holds the engine (DIR/db), the transaction services
// (DIR/services) and the expected state (DIR/expected), a file mapped into
// memory: writes to it reach the page cache at once, so they outlive a
// SIGKILL of the process (not a power loss of the machine: the power losses
// this tool checks are simulated in the process, below).
//
// The data. Every tenant (tenant0, tenant1, ...) has --tables plain tables of
// --rows rows, with two locality groups (family "a" in g1, "b" in g2, zstd),
// and one transactional table ("txn") of --txn-rows rows. Each row has one
// slot in the expected state: the version it holds (0: no row), the version a
// write under way may leave instead (pending), and the next version to use.
// Version v of a plain row is three cells at timestamp v whose values name v
// and the row (a:x, a:y and b:z, of varying length); of a transactional row,
// column "v" with such a value. So a read tells which version a row holds and
// whether the row is whole.
//
// The threads. Each owns the rows whose number modulo --threads is its own
// index, so a row changes only through its owner and the owner always knows
// what it must read. Operations, picked at random: Mutate (put a new version,
// delete the row), CheckAndMutate (that must apply, and that must not),
// CheckAndMutateBatch and CheckAndMutateAll of several rows (all-or-nothing
// ones that must fail too), reads and scans checked against the expected
// state (a scan also checks that the rows of other threads it meets are
// whole), transactions over several rows (optimistic and pessimistic; the
// TransactionDB options, such as one-phase commit, are drawn at each open),
// flushes and full compactions. Tablets split on their own (small split
// size), the garbage collector runs every fraction of a second, a strong
// observer of column "v" of the transactional tables copies each value it
// sees to column "seen" of its row, and the main thread closes and reopens
// everything every few seconds.
//
// Before a write, its owner records the version it writes as pending (and,
// for a write of several rows, the rows in the thread's batch record); once
// acknowledged, the version becomes the row's. Verification, at every start
// and after every reopen, reads every row: it must be whole, at its version
// or at its pending one, and the rows of a batch record must be all at their
// pending versions or none. Then the expected state takes what was read.
// Verification also waits for the observers to finish every notification
// (those of writes a kill interrupted too) and checks that each
// transactional row's "seen" holds its newest "v".
//
// With --faults, the engine writes through a fault-injecting file system:
// writes, syncs and opens of the log, tables and manifest fail at random
// (EIO, ENOSPC), after which the engine refuses writes and the run reopens
// it; and half of the reopens are power losses, which drop (or tear) every
// write not yet synced before the engine opens again. Every write of the
// tool is synced, so none it was told succeeded may be lost.
//
// Options and exit codes: stress_args.h (a failed check names the row, what
// was expected and what was read).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/coding.h"
#include "common/fault_injection_fs.h"
#include "common/random.h"
#include "strata/engine.h"
#include "strata/gc.h"
#include "strata/observer.h"
#include "strata/transaction.h"
#include "stress_args.h"
#include "stress_rows.h"
#include "tool_util.h"

namespace strata::stress {
namespace {

// ---- The expected state ------------------------------------------------------

struct Slot {
  uint32_t version;  // what the row holds; 0: no row
  uint32_t pending;  // kPending | the version a write under way may leave; 0: none
  uint32_t next;     // the next version to write (above every one written)
  uint32_t unused;
};

struct BatchRecord {
  uint32_t active;  // 1 while a write of several rows is under way
  uint32_t count;
  uint32_t slots[kMaxBatch];
};

struct Header {
  char magic[8];
  uint32_t format;
  uint32_t tenants, tables, rows, txn_rows;
  uint32_t unused;
  uint64_t runs;  // runs that opened this state (killed ones included)
  // Totals over every run, killed ones included (a killed run's last few
  // operations may be missing: the main thread adds them up every 20 ms).
  uint64_t operations, writes, transactions;
  uint64_t verifications, rows_verified;  // verifications: starts and reopens
  uint64_t reopens, power_losses;
  uint64_t pending_found_new, pending_found_old;
};
constexpr char kMagic[8] = {'S', 'T', 'R', 'E', 'S', 'S', '0', '1'};
constexpr uint32_t kFormat = 2;

// The file DIR/expected, mapped. Each slot and batch record is written only by
// the thread that owns it (or by the main thread while the workers wait), so
// relaxed atomic accesses in program order are all it needs: a SIGKILL stops
// the process between two stores, never within one.
class ExpectedState {
 public:
  ~ExpectedState() {
    if (base_ != nullptr) ::munmap(base_, size_);
  }

  // Opens the file, creating it for `args`' layout when missing; an error
  // message when it cannot, or when it was made for another layout.
  std::string Open(const std::string& path, const Args& args) {
    const uint64_t slots = Slots(args);
    size_ = sizeof(Header) + slots * sizeof(Slot) + kMaxThreads * sizeof(BatchRecord);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return path + ": " + std::strerror(errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return path + ": " + std::strerror(err);
    }
    const bool fresh = st.st_size == 0;
    if (fresh && ::ftruncate(fd, static_cast<off_t>(size_)) != 0) {
      const int err = errno;
      ::close(fd);
      return path + ": " + std::strerror(err);
    }
    if (!fresh && static_cast<uint64_t>(st.st_size) < sizeof(Header)) {
      ::close(fd);
      return path + ": too short to be an expected-state file";
    }
    void* p = ::mmap(nullptr, fresh ? size_ : static_cast<size_t>(st.st_size),
                     PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) return path + ": mmap: " + std::strerror(errno);
    base_ = static_cast<char*>(p);
    if (!fresh) {
      const size_t mapped = static_cast<size_t>(st.st_size);
      Header* h = header();
      if (std::memcmp(h->magic, kMagic, sizeof(kMagic)) != 0 || h->format != kFormat) {
        ::munmap(base_, mapped);
        base_ = nullptr;
        return path + ": not an expected-state file of this version";
      }
      if (h->tenants != args.tenants || h->tables != args.tables || h->rows != args.rows ||
          h->txn_rows != args.txn_rows || mapped != size_) {
        char buf[256];
        std::snprintf(buf, sizeof(buf),
                      "%s: made for --tenants %u --tables %u --rows %u --txn-rows %u; run with "
                      "those or use another --db",
                      path.c_str(), h->tenants, h->tables, h->rows, h->txn_rows);
        ::munmap(base_, mapped);
        base_ = nullptr;
        return buf;
      }
    } else {
      Header* h = header();
      std::memcpy(h->magic, kMagic, sizeof(kMagic));
      h->format = kFormat;
      h->tenants = args.tenants;
      h->tables = args.tables;
      h->rows = args.rows;
      h->txn_rows = args.txn_rows;
      for (uint64_t s = 0; s < slots; s++) slot(s)->next = 1;
    }
    return "";
  }

  static uint64_t Slots(const Args& a) {
    return uint64_t{a.tenants} * (uint64_t{a.tables} * a.rows + a.txn_rows);
  }

  Header* header() { return reinterpret_cast<Header*>(base_); }
  Slot* slot(uint64_t i) { return reinterpret_cast<Slot*>(base_ + sizeof(Header)) + i; }
  BatchRecord* batch(uint32_t thread) {
    return reinterpret_cast<BatchRecord*>(base_ + size_ - kMaxThreads * sizeof(BatchRecord)) +
           thread;
  }

  static uint32_t Load(const uint32_t& field) {
    return std::atomic_ref<uint32_t>(const_cast<uint32_t&>(field)).load(std::memory_order_acquire);
  }
  static void Store(uint32_t& field, uint32_t v) {
    std::atomic_ref<uint32_t>(field).store(v, std::memory_order_release);
  }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
};

// The observer of column "v" of the transactional tables: it copies what it
// reads there to column "seen" of the row ("none" when "v" is erased), so
// that once the observers are quiet every row's "seen" matches its "v".
class CopyObserver final : public Observer {
 public:
  Status Process(Transaction* txn, std::string_view table, std::string_view row,
                 std::string_view column) override {
    Result<std::string> value = txn->Get(table, row, column);
    if (!value.ok() && !value.status().IsNotFound()) return value.status();
    return txn->Set(table, row, "seen", SeenValue(value.ok() ? &*value : nullptr));
  }

  static std::string SeenValue(const std::string* value) {
    return value == nullptr ? "none" : "seen " + *value;
  }
};

// ---- The run -------------------------------------------------------------------

EngineOptions StressEngineOptions() {
  EngineOptions o;
  o.wal_segment_size = 1 << 20;     // crashes land on segment switches
  o.write_buffer_size = 64 << 10;   // and on flushes
  o.level0_compaction_trigger = 2;  // and compactions
  o.level1_max_bytes = 256 << 10;
  o.target_file_size = 64 << 10;
  o.tablet_split_size = 128 << 10;  // and tablet splits
  return o;
}

class Stress {
 public:
  explicit Stress(const Args& args) : args_(args), rnd_(args.seed) {}

  int Run();

 private:
  struct TenantHandles {
    Tenant tenant;
    std::vector<Table> tables;
    std::unique_ptr<TransactionDB> db;
    std::unique_ptr<GarbageCollector> gc;
    std::unique_ptr<ObserverWorker> observers;
  };

  class Worker;

  uint64_t PlainSlot(uint32_t tenant, uint32_t table, uint32_t row) const {
    return (uint64_t{tenant} * args_.tables + table) * args_.rows + row;
  }
  uint64_t TxnSlot(uint32_t tenant, uint32_t row) const {
    return uint64_t{args_.tenants} * args_.tables * args_.rows + uint64_t{tenant} * args_.txn_rows +
           row;
  }
  static std::string TenantName(uint32_t t) { return "tenant" + std::to_string(t); }
  static std::string TableName(uint32_t t) { return "table" + std::to_string(t); }

  // Opens the engine and everything on it, creating what is missing; an
  // error message on failure.
  std::string OpenAll();
  // Closes everything; with `power_loss`, as a crash of the machine: the
  // file system stops, and what was not synced is dropped or torn.
  std::string CloseAll(bool power_loss);
  // Reads every row and checks it against the expected state, then makes the
  // expected state what was read. Returns the number of failed checks.
  uint64_t Verify();
  void ArmFaults();

  // Records a failed check (the run ends with exit code 1).
  void Fail(const std::string& message) {
    std::lock_guard<std::mutex> l(fail_mu_);
    failures_++;
    if (failures_ <= 20) std::fprintf(stderr, "strata-stress: FAILED: %s\n", message.c_str());
    stop_.store(true);
  }
  // An operation returned an error: with --faults the engine may now refuse
  // writes, so the run reopens it; without, an error is a failure.
  void OperationError(const std::string& what, const Status& s) {
    if (args_.faults) {
      op_errors_.fetch_add(1);
      need_reopen_.store(true);
    } else {
      Fail(what + ": " + s.ToString());
    }
  }

  const Args args_;
  Random rnd_;  // the main thread's
  ExpectedState state_;
  FaultInjectionFileSystem fs_;
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<TransactionServices> services_;
  std::vector<TenantHandles> tenants_;

  // Workers hold gate_ shared for each operation; the main thread takes it
  // exclusively to reopen, after setting pause_ so that they let go.
  std::shared_mutex gate_;
  std::atomic<bool> pause_{false};
  std::atomic<bool> stop_{false};
  std::atomic<bool> need_reopen_{false};

  std::mutex fail_mu_;
  uint64_t failures_ = 0;  // GUARDED_BY(fail_mu_)

  std::atomic<uint64_t> ops_{0};
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> txns_{0};
  std::atomic<uint64_t> txn_aborts_{0};  // transactions that aborted on a conflict
  std::atomic<uint64_t> op_errors_{0};
  uint64_t reopens_ = 0;
  uint64_t power_losses_ = 0;
  uint64_t rows_verified_ = 0;
  uint64_t observer_checks_ = 0;    // tenants whose observers were checked
  uint64_t pending_found_new_ = 0;  // pending writes that verification found done
  uint64_t pending_found_old_ = 0;  // and not done
  // What of the counters the expected state's totals have.
  uint64_t counted_found_new_ = 0, counted_found_old_ = 0;
  uint64_t counted_ops_ = 0, counted_writes_ = 0, counted_txns_ = 0;

  // Adds the operations since the last call to the expected state's totals.
  void CountOperations() {
    Header* h = state_.header();
    const uint64_t ops = ops_.load(), writes = writes_.load(), txns = txns_.load();
    h->operations += ops - counted_ops_;
    h->writes += writes - counted_writes_;
    h->transactions += txns - counted_txns_;
    counted_ops_ = ops;
    counted_writes_ = writes;
    counted_txns_ = txns;
  }
};

std::string Stress::OpenAll() {
  EngineOptions o = StressEngineOptions();
  o.use_io_uring = rnd_.OneIn(2);
  o.apply_before_sync = rnd_.OneIn(3);
  if (args_.faults) o.file_system = &fs_;
  Result<std::unique_ptr<Engine>> e = Engine::Open(args_.db + "/db", o);
  if (!e.ok()) return "open " + args_.db + "/db: " + e.status().ToString();
  engine_ = std::move(e.value());
  if (args_.txn_rows != 0) {
    Result<std::shared_ptr<TransactionServices>> s =
        TransactionServices::Open(args_.db + "/services");
    if (!s.ok()) return "open " + args_.db + "/services: " + s.status().ToString();
    services_ = std::move(s.value());
  }
  tenants_.clear();
  tenants_.resize(args_.tenants);
  for (uint32_t t = 0; t < args_.tenants; t++) {
    Status s = engine_->CreateTenant(TenantName(t));
    if (!s.ok() && !s.IsAlreadyExists()) return "create tenant: " + s.ToString();
    Result<Tenant> tenant = engine_->OpenTenant(TenantName(t));
    if (!tenant.ok()) return "open tenant: " + tenant.status().ToString();
    TenantHandles& h = tenants_[t];
    h.tenant = *tenant;
    for (uint32_t i = 0; i < args_.tables; i++) {
      TableSchema schema;
      schema.locality_groups.push_back({.name = "g1"});
      schema.locality_groups.push_back({.name = "g2", .compression = Compression::kZstd});
      schema.families.push_back({.name = "a", .locality_group = "g1"});
      schema.families.push_back({.name = "b", .locality_group = "g2"});
      s = h.tenant.CreateTable(TableName(i), schema);
      if (!s.ok() && !s.IsAlreadyExists()) return "create table: " + s.ToString();
      Result<Table> table = h.tenant.OpenTable(TableName(i));
      if (!table.ok()) return "open table: " + table.status().ToString();
      h.tables.push_back(*table);
    }
    if (args_.txn_rows == 0) continue;
    TransactionDBOptions dbo;
    dbo.one_phase_commit = !rnd_.OneIn(3);
    dbo.prewrite_primary_alone = rnd_.OneIn(4);
    dbo.commit_secondaries_in_background = !rnd_.OneIn(3);
    dbo.max_inline_value = rnd_.OneIn(2) ? 64 : 0;
    dbo.observed_columns = {{"txn", "v"}};
    Result<std::unique_ptr<TransactionDB>> db = TransactionDB::Open(services_, h.tenant, dbo);
    if (!db.ok()) return "open transactions: " + db.status().ToString();
    h.db = std::move(db.value());
    Result<std::vector<std::string>> names = h.tenant.ListTables();
    if (!names.ok()) return "list tables: " + names.status().ToString();
    if (std::find(names->begin(), names->end(), "txn") == names->end()) {
      s = h.db->CreateTable("txn");
      if (!s.ok()) return "create the transactional table: " + s.ToString();
    }
    GcOptions gco;
    gco.life_time_millis = 500;
    gco.interval_millis = 300;
    Result<std::unique_ptr<GarbageCollector>> gc =
        GarbageCollector::Open(services_, h.db.get(), gco);
    if (!gc.ok()) return "open the garbage collector: " + gc.status().ToString();
    h.gc = std::move(gc.value());
    ObserverWorkerOptions woo;
    woo.threads = 2;
    woo.retry_max_millis = 200;
    Result<std::unique_ptr<ObserverWorker>> observers = ObserverWorker::Start(
        h.db.get(), {{"txn", "v", NotificationKind::kStrong, std::make_shared<CopyObserver>()}},
        woo);
    if (!observers.ok()) return "start the observers: " + observers.status().ToString();
    h.observers = std::move(observers.value());
  }
  return "";
}

std::string Stress::CloseAll(bool power_loss) {
  if (power_loss) fs_.SetFilesystemActive(false);
  std::string error;
  auto note = [&](const char* what, const Status& s) {
    if (!s.ok() && !args_.faults && error.empty()) error = std::string(what) + ": " + s.ToString();
  };
  for (TenantHandles& h : tenants_) {
    if (h.observers != nullptr) note("stop the observers", h.observers->Stop());
    h.observers.reset();
    if (h.gc != nullptr) note("close the garbage collector", h.gc->Close());
    h.gc.reset();
    if (h.db != nullptr) note("close transactions", h.db->Close());
    h.db.reset();
  }
  tenants_.clear();
  services_.reset();
  if (engine_ != nullptr) note("close the engine", engine_->Close());
  engine_.reset();
  if (args_.faults) {
    fs_.SetFilesystemActive(true);
    fs_.ClearFaults();
    if (power_loss) {
      Status s = rnd_.OneIn(2) ? fs_.TearUnsyncedData(&rnd_) : fs_.DropUnsyncedData();
      if (!s.ok() && error.empty()) error = "simulated power loss: " + s.ToString();
    }
  }
  return error;
}

void Stress::ArmFaults() {
  if (!args_.faults) return;
  const uint64_t seed = rnd_.Next64();
  // One kind of fault per stretch between reopens, or none.
  struct Fault {
    FaultOp op;
    double probability;
    int err;
    const char* path;
  };
  static constexpr Fault kFaults[] = {
      {FaultOp::kSync, 0.002, EIO, "wal"},     {FaultOp::kWrite, 0.0005, ENOSPC, "wal"},
      {FaultOp::kOpen, 0.05, ENOSPC, "/sst/"}, {FaultOp::kSync, 0.05, EIO, "MANIFEST"},
      {FaultOp::kWrite, 0.002, EIO, "/sst/"},
  };
  const uint64_t pick = rnd_.Uniform(std::size(kFaults) + 1);
  if (pick == std::size(kFaults)) return;
  const Fault& f = kFaults[pick];
  fs_.FailRandomly(f.op, f.probability, seed, f.err, f.path);
}

uint64_t Stress::Verify() {
  uint64_t failed = 0;
  auto fail = [&](const std::string& m) {
    failed++;
    Fail(m);
  };
  const uint64_t slots = ExpectedState::Slots(args_);
  std::vector<uint32_t> found(slots, 0);
  std::vector<bool> read(slots, false);
  RowFilter newest;
  newest.max_versions = 1;
  for (uint32_t t = 0; t < args_.tenants; t++) {
    for (uint32_t i = 0; i < args_.tables; i++) {
      for (uint32_t r = 0; r < args_.rows; r++) {
        const uint64_t slot = PlainSlot(t, i, r);
        const std::string where = TenantName(t) + "/" + TableName(i) + "/" + RowKey(r) + " (slot " +
                                  std::to_string(slot) + ")";
        Result<std::vector<Cell>> cells =
            tenants_[t].tables[i].ReadRow(ReadOptions(), RowKey(r), newest);
        if (!cells.ok()) {
          fail(where + ": read failed: " + cells.status().ToString());
          continue;
        }
        std::string why;
        std::optional<uint32_t> v = PlainVersion(*cells, slot, &why);
        if (!v) {
          fail(where + ": " + why);
          continue;
        }
        found[slot] = *v;
        read[slot] = true;
      }
    }
    if (args_.txn_rows == 0) continue;
    Result<std::unique_ptr<Transaction>> txn = tenants_[t].db->Begin();
    if (!txn.ok()) {
      fail(TenantName(t) + ": begin a read transaction: " + txn.status().ToString());
      continue;
    }
    for (uint32_t r = 0; r < args_.txn_rows; r++) {
      const uint64_t slot = TxnSlot(t, r);
      const std::string where =
          TenantName(t) + "/txn/" + RowKey(r) + " (slot " + std::to_string(slot) + ")";
      Result<std::string> value = (*txn)->Get("txn", RowKey(r), "v");
      if (!value.ok() && !value.status().IsNotFound()) {
        fail(where + ": read failed: " + value.status().ToString());
        continue;
      }
      std::string why;
      std::optional<uint32_t> v = value.ok() ? TxnVersion(*value, slot, &why) : 0;
      if (!v) {
        fail(where + ": " + why);
        continue;
      }
      found[slot] = *v;
      read[slot] = true;
    }
    (*txn)->Rollback().PermitUncheckedError();
  }

  // Every change of a transactional row reached its observer: once they
  // are quiet, each row's "seen" matches its "v".
  for (uint32_t t = 0; t < args_.tenants && args_.txn_rows != 0; t++) {
    Status quiet = tenants_[t].observers->WaitForQuiescence(60'000);
    if (!quiet.ok()) {
      fail(TenantName(t) + ": the observers did not finish: " + quiet.ToString() + "; " +
           tenants_[t].observers->GetStats().last_failure);
      continue;
    }
    Result<std::unique_ptr<Transaction>> txn = tenants_[t].db->Begin();
    if (!txn.ok()) {
      fail(TenantName(t) + ": begin a read transaction: " + txn.status().ToString());
      continue;
    }
    for (uint32_t r = 0; r < args_.txn_rows; r++) {
      Result<std::string> value = (*txn)->Get("txn", RowKey(r), "v");
      Result<std::string> seen = (*txn)->Get("txn", RowKey(r), "seen");
      if (!seen.ok() && seen.status().IsNotFound() && value.status().IsNotFound()) continue;
      const std::string want = CopyObserver::SeenValue(value.ok() ? &*value : nullptr);
      if (!seen.ok() || *seen != want) {
        fail(TenantName(t) + "/txn/" + RowKey(r) + ": its observer saw \"" +
             (seen.ok() ? EscapePrefix(*seen, 40) : seen.status().ToString()) +
             "\", not the row's newest value \"" + EscapePrefix(want, 40) + "\"");
      }
    }
    (*txn)->Rollback().PermitUncheckedError();
    observer_checks_++;
  }

  // Each row at its version or its pending one.
  for (uint64_t s = 0; s < slots; s++) {
    if (!read[s]) continue;
    Slot* slot = state_.slot(s);
    const uint32_t version = ExpectedState::Load(slot->version);
    const uint32_t pending = ExpectedState::Load(slot->pending);
    if (found[s] == version) {
      if (pending != 0 && (pending & ~kPending) != version) pending_found_old_++;
    } else if (pending != 0 && found[s] == (pending & ~kPending)) {
      pending_found_new_++;
    } else {
      fail("slot " + std::to_string(s) + ": holds version " + std::to_string(found[s]) +
           ", expected " + std::to_string(version) + " (pending " + PendingText(pending) + ")" +
           (found[s] < version ? ": an acknowledged write was lost" : ""));
    }
  }
  // The rows of a write of several rows: all new or all old.
  for (uint32_t t = 0; t < kMaxThreads; t++) {
    BatchRecord* b = state_.batch(t);
    if (ExpectedState::Load(b->active) == 0) continue;
    const uint32_t count = std::min(ExpectedState::Load(b->count), kMaxBatch);
    int news = 0, olds = 0;
    std::string rows;
    for (uint32_t i = 0; i < count; i++) {
      const uint32_t s = ExpectedState::Load(b->slots[i]);
      if (s >= slots || !read[s]) continue;
      const uint32_t version = ExpectedState::Load(state_.slot(s)->version);
      const uint32_t pending = ExpectedState::Load(state_.slot(s)->pending);
      if (pending == 0 || (pending & ~kPending) == version) continue;  // either way
      const bool is_new = found[s] == (pending & ~kPending);
      (is_new ? news : olds)++;
      rows += " " + std::to_string(s) + (is_new ? "(new)" : "(old)");
    }
    if (news != 0 && olds != 0) {
      fail("a write of several rows under way at the stop is half applied, slots:" + rows);
    }
  }
  // The expected state becomes what was read.
  for (uint64_t s = 0; s < slots; s++) {
    if (!read[s]) continue;
    Slot* slot = state_.slot(s);
    const uint32_t pending = ExpectedState::Load(slot->pending);
    uint32_t next = ExpectedState::Load(slot->next);
    next = std::max({next, found[s] + 1, pending != 0 ? (pending & ~kPending) + 1 : 0u});
    ExpectedState::Store(slot->next, next);
    ExpectedState::Store(slot->version, found[s]);
    ExpectedState::Store(slot->pending, 0);
  }
  for (uint32_t t = 0; t < kMaxThreads; t++) ExpectedState::Store(state_.batch(t)->active, 0);
  rows_verified_ += slots;
  Header* h = state_.header();
  h->verifications++;
  h->rows_verified += slots;
  h->pending_found_new = h->pending_found_new + pending_found_new_ - counted_found_new_;
  h->pending_found_old = h->pending_found_old + pending_found_old_ - counted_found_old_;
  counted_found_new_ = pending_found_new_;
  counted_found_old_ = pending_found_old_;
  return failed;
}

// One worker thread: random operations on the rows it owns.
class Stress::Worker {
 public:
  Worker(Stress* s, uint32_t index, uint64_t seed) : s_(s), index_(index), rnd_(seed) {}

  void Run() {
    while (!s_->stop_.load()) {
      if (s_->pause_.load() || s_->need_reopen_.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      std::shared_lock<std::shared_mutex> gate(s_->gate_);
      if (s_->pause_.load() || s_->need_reopen_.load()) continue;
      OneOperation();
      s_->ops_.fetch_add(1, std::memory_order_relaxed);
    }
  }

 private:
  ExpectedState& state() { return s_->state_; }
  const Args& args() const { return s_->args_; }

  // A random row of `n` this thread owns.
  uint32_t OwnRow(uint32_t n) {
    const uint32_t owned = (n - index_ + args().threads - 1) / args().threads;
    return index_ + args().threads * static_cast<uint32_t>(rnd_.Uniform(owned));
  }
  bool Owns(uint32_t row) const { return row % args().threads == index_; }

  uint32_t Version(uint64_t slot) { return ExpectedState::Load(state().slot(slot)->version); }
  // Marks a new version of `slot` as pending and returns it (0: a delete).
  uint32_t BeginWrite(uint64_t slot, bool erase) {
    Slot* sl = state().slot(slot);
    uint32_t v = 0;
    if (!erase) {
      v = ExpectedState::Load(sl->next);
      ExpectedState::Store(sl->next, v + 1);
    }
    ExpectedState::Store(sl->pending, kPending | v);
    return v;
  }
  void EndWrite(uint64_t slot) {
    Slot* sl = state().slot(slot);
    ExpectedState::Store(sl->version, ExpectedState::Load(sl->pending) & ~kPending);
    ExpectedState::Store(sl->pending, 0);
  }
  void BeginBatch(const std::vector<uint64_t>& slots) {
    BatchRecord* b = state().batch(index_);
    for (size_t i = 0; i < slots.size(); i++) {
      ExpectedState::Store(b->slots[i], static_cast<uint32_t>(slots[i]));
    }
    ExpectedState::Store(b->count, static_cast<uint32_t>(slots.size()));
    ExpectedState::Store(b->active, 1);
  }
  void EndBatch() { ExpectedState::Store(state().batch(index_)->active, 0); }

  // Distinct rows this thread owns, up to `max` of them.
  std::vector<uint32_t> OwnRows(uint32_t n, uint32_t max) {
    std::vector<uint32_t> rows;
    const uint32_t want = 1 + static_cast<uint32_t>(rnd_.Uniform(max));
    for (uint32_t tries = 0; rows.size() < want && tries < 4 * want; tries++) {
      const uint32_t r = OwnRow(n);
      if (std::find(rows.begin(), rows.end(), r) == rows.end()) rows.push_back(r);
    }
    return rows;
  }

  std::string Where(uint32_t tenant, uint32_t table, uint32_t row) const {
    return TenantName(tenant) + "/" + TableName(table) + "/" + RowKey(row);
  }

  // The condition "the row is at `version`" (0: no row).
  static Condition AtVersion(uint32_t version, uint64_t slot) {
    if (version == 0) return Condition::NoCellInRange("a", "x", kMinTimestamp, kMaxTimestamp);
    return Condition::ValueEquals("a", "x", version, Id(version, slot));
  }

  // The row mutation that takes `slot` to `version` (0: deletes the row at
  // `delete_ts`, above every version written so far).
  static RowMutation To(uint32_t version, uint64_t slot, uint32_t delete_ts) {
    if (version != 0) return PlainRowVersion(version, slot);
    RowMutation m;
    m.DeleteRow(delete_ts);
    return m;
  }

  void OneOperation() {
    const uint64_t pick = rnd_.Uniform(1000);
    if (args().txn_rows != 0 && pick < 120) return Transact();
    const uint32_t tenant = static_cast<uint32_t>(rnd_.Uniform(args().tenants));
    const uint32_t table = static_cast<uint32_t>(rnd_.Uniform(args().tables));
    if (pick < 350) return Write(tenant, table);
    if (pick < 500) return ConditionalWrite(tenant, table);
    if (pick < 600) return BatchWrite(tenant, table, /*all_or_nothing=*/false);
    if (pick < 700) return BatchWrite(tenant, table, /*all_or_nothing=*/true);
    if (pick < 900) return Read(tenant, table);
    if (pick < 996) return ScanRange(tenant, table);
    if (pick < 999) {
      Status st = s_->engine_->Flush();
      if (!st.ok()) s_->OperationError("flush", st);
      return;
    }
    Status st = s_->engine_->Compact();
    if (!st.ok()) s_->OperationError("compact", st);
  }

  Table& TableOf(uint32_t tenant, uint32_t table) { return s_->tenants_[tenant].tables[table]; }

  void Write(uint32_t tenant, uint32_t table) {
    const uint32_t row = OwnRow(args().rows);
    const uint64_t slot = s_->PlainSlot(tenant, table, row);
    const bool erase = rnd_.OneIn(8);
    const uint32_t delete_ts = ExpectedState::Load(state().slot(slot)->next);
    const uint32_t v = BeginWrite(slot, erase);
    if (erase) ExpectedState::Store(state().slot(slot)->next, delete_ts + 1);
    Status st = TableOf(tenant, table).Mutate(WriteOptions(), RowKey(row), To(v, slot, delete_ts));
    if (!st.ok()) return s_->OperationError("mutate " + Where(tenant, table, row), st);
    EndWrite(slot);
    s_->writes_.fetch_add(1, std::memory_order_relaxed);
  }

  void ConditionalWrite(uint32_t tenant, uint32_t table) {
    const uint32_t row = OwnRow(args().rows);
    const uint64_t slot = s_->PlainSlot(tenant, table, row);
    const uint32_t current = Version(slot);
    if (rnd_.OneIn(4)) {
      // A condition that does not hold: nothing may be written.
      const Condition wrong = current == 0 ? Condition::CellExists("a", "x", 1)
                                           : Condition::ValueEquals("a", "x", current, "wrong");
      const uint32_t v = ExpectedState::Load(state().slot(slot)->next);
      Result<CheckAndMutateResult> r =
          TableOf(tenant, table)
              .CheckAndMutate(WriteOptions(), RowKey(row), {wrong}, PlainRowVersion(v, slot));
      if (!r.ok())
        return s_->OperationError("check-and-mutate " + Where(tenant, table, row), r.status());
      if (r->applied) {
        s_->Fail(Where(tenant, table, row) + ": a check-and-mutate whose condition fails applied");
      }
      return;
    }
    const uint32_t delete_ts = ExpectedState::Load(state().slot(slot)->next);
    const bool erase = rnd_.OneIn(8);
    const uint32_t v = BeginWrite(slot, erase);
    if (erase) ExpectedState::Store(state().slot(slot)->next, delete_ts + 1);
    Result<CheckAndMutateResult> r =
        TableOf(tenant, table)
            .CheckAndMutate(WriteOptions(), RowKey(row), {AtVersion(current, slot)},
                            To(v, slot, delete_ts));
    if (!r.ok()) {
      return s_->OperationError("check-and-mutate " + Where(tenant, table, row), r.status());
    }
    if (!r->applied) {
      s_->Fail(Where(tenant, table, row) + ": check-and-mutate on version " +
               std::to_string(current) + " did not apply: the row is not at that version");
      return;
    }
    EndWrite(slot);
    s_->writes_.fetch_add(1, std::memory_order_relaxed);
  }

  void BatchWrite(uint32_t tenant, uint32_t table, bool all_or_nothing) {
    const std::vector<uint32_t> rows = OwnRows(args().rows, kMaxBatch);
    const bool must_fail = all_or_nothing && rows.size() > 1 && rnd_.OneIn(4);
    const size_t wrong = rnd_.Uniform(rows.size());
    std::vector<ConditionalMutation> batch;
    std::vector<uint64_t> slots;
    for (size_t i = 0; i < rows.size(); i++) {
      const uint64_t slot = s_->PlainSlot(tenant, table, rows[i]);
      slots.push_back(slot);
      const uint32_t current = Version(slot);
      ConditionalMutation cm;
      cm.row = RowKey(rows[i]);
      if (must_fail && i == wrong) {
        cm.conditions.push_back(current == 0 ? Condition::CellExists("a", "x", 1)
                                             : Condition::ValueEquals("a", "x", current, "no"));
      } else {
        cm.conditions.push_back(AtVersion(current, slot));
      }
      const uint32_t delete_ts = ExpectedState::Load(state().slot(slot)->next);
      const bool erase = rnd_.OneIn(8);
      const uint32_t v = must_fail ? delete_ts : BeginWrite(slot, erase);
      if (!must_fail && erase) ExpectedState::Store(state().slot(slot)->next, delete_ts + 1);
      cm.mutation = To(v, slot, delete_ts);
      batch.push_back(std::move(cm));
    }
    if (!must_fail) BeginBatch(slots);
    Table& t = TableOf(tenant, table);
    Result<std::vector<CheckAndMutateResult>> r =
        all_or_nothing ? t.CheckAndMutateAll(WriteOptions(), batch)
                       : t.CheckAndMutateBatch(WriteOptions(), batch);
    const std::string what = std::string(all_or_nothing ? "check-and-mutate-all" : "batch") +
                             " of " + std::to_string(rows.size()) + " rows from " +
                             Where(tenant, table, rows[0]);
    if (!r.ok()) return s_->OperationError(what, r.status());
    if (r->size() != rows.size()) return s_->Fail(what + ": wrong number of results");
    for (size_t i = 0; i < rows.size(); i++) {
      if ((*r)[i].applied == must_fail) {
        return s_->Fail(what + ": row " + RowKey(rows[i]) +
                        ((*r)[i].applied ? " applied though a condition failed"
                                         : " did not apply though its row is at the version"));
      }
    }
    if (must_fail) {
      // Nothing may have changed.
      for (size_t i = 0; i < rows.size(); i++) CheckRow(tenant, table, rows[i], "after " + what);
      return;
    }
    for (uint64_t slot : slots) EndWrite(slot);
    EndBatch();
    s_->writes_.fetch_add(rows.size(), std::memory_order_relaxed);
  }

  void CheckRow(uint32_t tenant, uint32_t table, uint32_t row, const std::string& when) {
    const uint64_t slot = s_->PlainSlot(tenant, table, row);
    RowFilter newest;
    newest.max_versions = 1;
    Result<std::vector<Cell>> cells =
        TableOf(tenant, table).ReadRow(ReadOptions(), RowKey(row), newest);
    if (!cells.ok()) return s_->OperationError("read " + Where(tenant, table, row), cells.status());
    std::string why;
    std::optional<uint32_t> v = PlainVersion(*cells, slot, &why);
    if (!v) return s_->Fail(Where(tenant, table, row) + " " + when + ": " + why);
    if (*v != Version(slot)) {
      s_->Fail(Where(tenant, table, row) + " " + when + ": read version " + std::to_string(*v) +
               ", expected " + std::to_string(Version(slot)));
    }
  }

  void Read(uint32_t tenant, uint32_t table) {
    CheckRow(tenant, table, OwnRow(args().rows), "on a read");
  }

  // Scans up to 64 rows: this thread's must be at their versions (and the
  // ones the scan skips absent), every other row whole.
  void ScanRange(uint32_t tenant, uint32_t table) {
    const uint32_t first = static_cast<uint32_t>(rnd_.Uniform(args().rows));
    const uint32_t end = std::min(args().rows, first + 64);
    ScanSpec spec;
    spec.start_row = RowKey(first);
    spec.end_row = RowKey(end);
    spec.filter.max_versions = 1;
    Result<std::unique_ptr<RowIterator>> it = TableOf(tenant, table).Scan(ReadOptions(), spec);
    if (!it.ok()) return s_->OperationError("scan " + Where(tenant, table, first), it.status());
    uint32_t expect_from = first;  // rows below it were accounted for
    auto check_absent_below = [&](uint32_t limit) {
      for (uint32_t r = expect_from; r < limit; r++) {
        if (Owns(r) && Version(s_->PlainSlot(tenant, table, r)) != 0) {
          s_->Fail(Where(tenant, table, r) + ": a scan skipped it, at version " +
                   std::to_string(Version(s_->PlainSlot(tenant, table, r))));
        }
      }
    };
    for ((*it)->Seek(spec.start_row); (*it)->Valid(); (*it)->Next()) {
      const std::optional<uint32_t> row = RowNumber((*it)->row());
      if (!row || *row < expect_from || *row >= end) {
        return s_->Fail(TenantName(tenant) + "/" + TableName(table) + ": scan from " +
                        RowKey(first) + " returned row \"" + EscapePrefix((*it)->row(), 32) +
                        "\" out of order or range");
      }
      check_absent_below(*row);
      const uint64_t slot = s_->PlainSlot(tenant, table, *row);
      std::string why;
      std::optional<uint32_t> v = PlainVersion((*it)->cells(), slot, &why);
      if (!v) return s_->Fail(Where(tenant, table, *row) + " in a scan: " + why);
      if (Owns(*row) && *v != Version(slot)) {
        return s_->Fail(Where(tenant, table, *row) + " in a scan: version " + std::to_string(*v) +
                        ", expected " + std::to_string(Version(slot)));
      }
      expect_from = *row + 1;
    }
    if (!(*it)->status().ok()) {
      return s_->OperationError("scan " + Where(tenant, table, first), (*it)->status());
    }
    check_absent_below(end);
  }

  // A transaction over a few of this thread's rows of a tenant's
  // transactional table: reads each (it must be at its version), then writes
  // a new version of each or erases it.
  void Transact() {
    const uint32_t tenant = static_cast<uint32_t>(rnd_.Uniform(args().tenants));
    TransactionDB* db = s_->tenants_[tenant].db.get();
    const std::vector<uint32_t> rows = OwnRows(args().txn_rows, 4);
    TransactionOptions to;
    const bool pessimistic = rnd_.OneIn(3);
    to.mode = pessimistic ? TransactionOptions::Mode::kPessimistic
                          : TransactionOptions::Mode::kOptimistic;
    Result<std::unique_ptr<Transaction>> txn = db->Begin(to);
    if (!txn.ok()) return s_->OperationError("begin", txn.status());
    const std::string what = "transaction on " + TenantName(tenant) + "/txn/" + RowKey(rows[0]);
    std::vector<uint64_t> slots;
    for (uint32_t row : rows) {
      const uint64_t slot = s_->TxnSlot(tenant, row);
      slots.push_back(slot);
      Result<std::string> value = pessimistic ? (*txn)->GetForUpdate("txn", RowKey(row), "v")
                                              : (*txn)->Get("txn", RowKey(row), "v");
      if (!value.ok() && !value.status().IsNotFound()) {
        if (Aborted(**txn)) return;  // nothing written
        return s_->OperationError(what + ": read " + RowKey(row), value.status());
      }
      std::string why;
      std::optional<uint32_t> v = value.ok() ? TxnVersion(*value, slot, &why) : 0;
      if (!v) return s_->Fail(TenantName(tenant) + "/txn/" + RowKey(row) + ": " + why);
      if (*v != Version(slot)) {
        return s_->Fail(TenantName(tenant) + "/txn/" + RowKey(row) + ": a transaction read " +
                        std::to_string(*v) + ", expected " + std::to_string(Version(slot)));
      }
    }
    for (size_t i = 0; i < rows.size(); i++) {
      const bool erase = rnd_.OneIn(8);
      const uint32_t v = BeginWrite(slots[i], erase);
      Status st = erase ? (*txn)->Erase("txn", RowKey(rows[i]), "v")
                        : (*txn)->Set("txn", RowKey(rows[i]), "v", Value(v, slots[i], 200));
      if (!st.ok()) {
        // Nothing is written before Commit: the row stays as it was.
        for (size_t j = 0; j <= i; j++) ExpectedState::Store(state().slot(slots[j])->pending, 0);
        return s_->OperationError(what + ": buffer a write", st);
      }
    }
    BeginBatch(slots);
    Status st = (*txn)->Commit();
    if (!st.ok() && Aborted(**txn)) {
      // Nothing was committed: the rows stay as they were.
      for (uint64_t slot : slots) ExpectedState::Store(state().slot(slot)->pending, 0);
      EndBatch();
      return;
    }
    if (!st.ok()) return s_->OperationError(what + ": commit", st);
    for (uint64_t slot : slots) EndWrite(slot);
    EndBatch();
    s_->txns_.fetch_add(1, std::memory_order_relaxed);
  }

  // Whether `txn` failed in a way that leaves nothing committed: a conflict
  // (with an observer's run, too: a run locks the cell it runs for, as
  // GetForUpdate does, and commits that lock) or a lock it gave way to.
  bool Aborted(const Transaction& txn) {
    using Kind = TransactionError::Kind;
    switch (txn.error().kind) {
      case Kind::kWriteConflict:
      case Kind::kKeyLocked:
      case Kind::kAbortedByOlder:
      case Kind::kRolledBack:
      case Kind::kDeadlock:
      case Kind::kLockWaitTimeout:
        s_->txn_aborts_.fetch_add(1, std::memory_order_relaxed);
        return true;
      default:
        return false;
    }
  }

  Stress* const s_;
  const uint32_t index_;
  Random rnd_;
};

int Stress::Run() {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (::mkdir(args_.db.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "strata-stress: %s: %s\n", args_.db.c_str(), std::strerror(errno));
    return kExitSetup;
  }
  std::string err = state_.Open(args_.db + "/expected", args_);
  if (!err.empty()) {
    std::fprintf(stderr, "strata-stress: %s\n", err.c_str());
    return kExitSetup;
  }
  err = OpenAll();  // the engine's lock keeps a second run on DIR out
  if (!err.empty()) {
    std::fprintf(stderr, "strata-stress: %s\n", err.c_str());
    return kExitSetup;
  }
  state_.header()->runs++;
  Verify();
  if (!args_.quiet) {
    std::fprintf(stderr,
                 "strata-stress: run %" PRIu64 ", seed %" PRIu64 ": verified %" PRIu64
                 " rows in %.2f s (%" PRIu64
                 " writes under way at the stop were found done, %" PRIu64 " not)\n",
                 state_.header()->runs, args_.seed, rows_verified_, elapsed(), pending_found_new_,
                 pending_found_old_);
  }
  if (!args_.verify_only && !stop_.load()) {
    ArmFaults();
    std::vector<std::unique_ptr<Worker>> workers;
    std::vector<std::thread> threads;
    for (uint32_t i = 0; i < args_.threads; i++) {
      workers.push_back(std::make_unique<Worker>(this, i, rnd_.Next64()));
    }
    for (auto& w : workers) threads.emplace_back([&w] { w->Run(); });
    auto next_reopen = [&] {
      return args_.reopen_seconds == 0
                 ? 1e300
                 : elapsed() +
                       static_cast<double>(rnd_.Uniform(2000 * args_.reopen_seconds)) / 1000.0;
    };
    double reopen_at = next_reopen();
    double progress_at = elapsed() + 5;
    while (!stop_.load() &&
           (args_.seconds == 0 || elapsed() < static_cast<double>(args_.seconds))) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      CountOperations();
      const bool faulted = need_reopen_.load();
      if (faulted || elapsed() >= reopen_at) {
        pause_.store(true);
        std::unique_lock<std::shared_mutex> gate(gate_);
        const bool power_loss = args_.faults && rnd_.OneIn(2);
        err = CloseAll(power_loss);
        if (!err.empty()) {
          Fail(err);
          break;
        }
        err = OpenAll();
        if (!err.empty()) {
          Fail("reopen" + std::string(power_loss ? " after a simulated power loss" : "") + ": " +
               err);
          break;
        }
        Verify();
        reopens_++;
        power_losses_ += power_loss ? 1 : 0;
        state_.header()->reopens++;
        state_.header()->power_losses += power_loss ? 1 : 0;
        need_reopen_.store(false);
        ArmFaults();
        pause_.store(false);
        reopen_at = next_reopen();
      }
      if (!args_.quiet && elapsed() >= progress_at) {
        progress_at += 5;
        std::fprintf(stderr,
                     "strata-stress: %.0f s: %" PRIu64 " operations, %" PRIu64 " writes, %" PRIu64
                     " transactions, %" PRIu64 " reopens (%" PRIu64 " power losses), %" PRIu64
                     " failed calls\n",
                     elapsed(), ops_.load(), writes_.load(), txns_.load(), reopens_, power_losses_,
                     op_errors_.load());
      }
    }
    stop_.store(true);
    pause_.store(false);
    for (auto& t : threads) t.join();
    CountOperations();
  }
  if (engine_ != nullptr) {
    if (args_.faults) fs_.ClearFaults();
    err = CloseAll(/*power_loss=*/false);
    if (!err.empty()) Fail(err);
  }
  uint64_t failures;
  {
    std::lock_guard<std::mutex> l(fail_mu_);
    failures = failures_;
  }
  std::printf("strata-stress: %.1f s, %" PRIu64 " operations, %" PRIu64 " writes, %" PRIu64
              " transactions, %" PRIu64 " reopens (%" PRIu64 " power losses), %" PRIu64
              " failed calls, %" PRIu64 " transactions aborted on conflicts, %" PRIu64
              " rows verified, %" PRIu64 " observer checks, %" PRIu64 " failed checks\n",
              elapsed(), ops_.load(), writes_.load(), txns_.load(), reopens_, power_losses_,
              op_errors_.load(), txn_aborts_.load(), rows_verified_, observer_checks_, failures);
  const Header* h = state_.header();
  std::printf("strata-stress: all %" PRIu64 " runs on this database: %" PRIu64
              " operations, %" PRIu64 " writes, %" PRIu64 " transactions, %" PRIu64
              " verifications of every row (%" PRIu64 " rows), %" PRIu64 " reopens (%" PRIu64
              " power losses); of the writes under way "
              "at a stop, %" PRIu64 " were found done and %" PRIu64 " not\n",
              h->runs, h->operations, h->writes, h->transactions, h->verifications,
              h->rows_verified, h->reopens, h->power_losses, h->pending_found_new,
              h->pending_found_old);
  return tools::FinishOutput("strata-stress", failures == 0 ? kExitOk : kExitCheckFailed,
                             kExitCheckFailed);
}

}  // namespace
}  // namespace strata::stress

int main(int argc, char** argv) {
  strata::stress::Args args;
  if (std::optional<int> code = strata::stress::ParseArgs(argc, argv, &args)) return *code;
  if (!args.seed_given) {
    args.seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count() ^
                                      (static_cast<uint64_t>(::getpid()) << 32));
  }
  strata::stress::Stress stress(args);
  return stress.Run();
}
