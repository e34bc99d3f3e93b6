// What db_bench prints: the tables, the amplification figures they and the
// JSON document share, and the JSON document; see report.h.
#include "report.h"

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <set>
#include <string_view>

#include "common/json.h"

namespace strata::db_bench {
namespace {

// ---- Printing -----------------------------------------------------------------------

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string Ratio(double a, double b) { return b > 0 ? Fmt("%.2fx", a / b) : "n/a"; }

std::string MB(uint64_t bytes) { return Fmt("%.2f", bytes / 1048576.0); }

// Joins file names: "000012.sst 000013.sst" (or "none").
std::string FileList(const std::set<std::string>& files) {
  std::string s;
  for (const std::string& name : files) s += (s.empty() ? "" : " ") + name;
  return s.empty() ? "none" : s;
}

// The scansmall details: both scans, and what each read from table files.
void PrintGroupScan(const Flags& f, const EngineRun& s, const EngineRun* r) {
  const GroupScanResult& A = s.group;
  const GroupScanResult* B = r && r->group.ran ? &r->group : nullptr;
  size_t small_index = 0;  // the last scansmall run, the one `group` describes
  for (size_t i = 0; i < f.benchmarks.size(); i++) {
    if (f.benchmarks[i] == "scansmall") small_index = i;
  }
  const PhaseResult& as = s.phases[small_index];
  const PhaseResult* bs = B ? &r->phases[small_index] : nullptr;
  std::printf(
      "\nscansmall: one table, locality group \"big\" (family big, %zu-byte values) and "
      "locality group \"small\" (family small, %zu-byte values), both on each of %" PRIu64
      " rows, written in key order and settled; then, in each pass, opened (cold block "
      "cache; the OS page cache stays warm), one scan (one thread) of family small alone, "
      "one of family big, closed. RocksDB: column families big and small, one iterator "
      "over each. The figures are those of the median pass by small-scan rows/s.\n",
      f.value_size, kSmallValueSize, f.num);
  std::printf("%-46s | %16s %16s %7s\n", "", "Strata", "RocksDB", "ratio");
  auto row = [&](const char* name, const std::string& a, const std::string& b,
                 const std::string& ratio) {
    std::printf("%-46s | %16s %16s %7s\n", name, a.c_str(), b.c_str(), ratio.c_str());
  };
  auto count = [](const ReadIo& io, uint64_t v) { return io.known ? std::to_string(v) : "n/a"; };
  auto bytes = [](const ReadIo& io) { return io.known ? MB(io.bytes) : "n/a"; };
  auto ratio_if = [&](bool known, double a, double b) { return known ? Ratio(a, b) : ""; };
  row("table MB on disk (both families)", MB(A.settled.table_bytes),
      B ? MB(B->settled.table_bytes) : "n/a",
      B ? Ratio(A.settled.table_bytes, B->settled.table_bytes) : "n/a");
  row("table files (both families)", std::to_string(A.settled.table_files),
      B ? std::to_string(B->settled.table_files) : "n/a", "");
  row("small-family scan rows/s", Fmt("%.0f", as.OpsPerSec()),
      bs ? Fmt("%.0f", bs->OpsPerSec()) : "n/a",
      bs ? Ratio(as.OpsPerSec(), bs->OpsPerSec()) : "n/a");
  row("  table MB read", bytes(A.small_io), B ? bytes(B->small_io) : "n/a",
      ratio_if(B && A.small_io.known && B->small_io.known, A.small_io.bytes,
               B ? B->small_io.bytes : 0));
  row("  table files opened", count(A.small_io, A.small_io.opens),
      B ? count(B->small_io, B->small_io.opens) : "n/a", "");
  row("big-family scan rows/s", Fmt("%.0f", A.big.OpsPerSec()),
      B ? Fmt("%.0f", B->big.OpsPerSec()) : "n/a",
      B ? Ratio(A.big.OpsPerSec(), B->big.OpsPerSec()) : "n/a");
  row("  table MB read", bytes(A.big_io), B ? bytes(B->big_io) : "n/a",
      ratio_if(B && A.big_io.known && B->big_io.known, A.big_io.bytes, B ? B->big_io.bytes : 0));
  row("  table files opened", count(A.big_io, A.big_io.opens),
      B ? count(B->big_io, B->big_io.opens) : "n/a", "");
  row("small scan time / big scan time",
      Fmt("%.2f", A.big.seconds > 0 ? as.seconds / A.big.seconds : 0),
      bs ? Fmt("%.2f", B->big.seconds > 0 ? bs->seconds / B->big.seconds : 0) : "n/a", "");
  if (A.small_io.per_file) {
    std::set<std::string> shared;
    std::set_intersection(A.small_io.files.begin(), A.small_io.files.end(), A.big_io.files.begin(),
                          A.big_io.files.end(), std::inserter(shared, shared.begin()));
    std::printf(
        "Strata table files read: by the small scan %zu (%s), by the big scan %zu (%s); "
        "by both: %zu%s; live: %" PRIu64 "\n",
        A.small_io.files.size(), FileList(A.small_io.files).c_str(), A.big_io.files.size(),
        FileList(A.big_io.files).c_str(), shared.size(),
        shared.empty() ? "" : (" (" + FileList(shared) + ")").c_str(), A.settled.table_files);
  }
  std::printf(
      "(Table MB read: Strata counts RandomAccessFile reads of *.sst through a counting "
      "FileSystem (EngineOptions::file_system); it opens table files on first use, so "
      "their index and filter blocks count too. RocksDB: the scanning thread's "
      "IOStatsContext bytes_read and the NO_FILE_OPENS ticker; it opens every table file "
      "at DB::Open (max_open_files=-1), so index and filter reads come before the scan.)\n");
}

// ---- Amplification figures (the table's and --json's) -------------------------------

// Table bytes written (flushes and compactions) since the database was created.
uint64_t WrittenBytes(const StoreStats& x) { return x.flush_bytes + x.compaction_bytes; }

// Write amplification at the end of overwrite: table bytes written per log byte.
double WriteAmpPerLogByte(const AmpResult& a) {
  const StoreStats& x = a.after_overwrite;
  return x.log_bytes ? static_cast<double>(WrittenBytes(x)) / x.log_bytes : 0.0;
}

// Write amplification at the end of overwrite: table bytes written per user
// (key + value) byte.
double WriteAmpPerUserByte(const AmpResult& a) {
  return a.user_bytes ? static_cast<double>(WrittenBytes(a.after_overwrite)) / a.user_bytes : 0.0;
}

// Space amplification in the state `x`: table bytes per live key + value byte.
double SpaceAmp(const AmpResult& a, const StoreStats& x) {
  return a.logical_bytes ? static_cast<double>(x.table_bytes) / a.logical_bytes : 0.0;
}

// Table bytes written through settling per user byte.
// REQUIRES: a.settled
double WriteAmpThroughSettling(const AmpResult& a) {
  return a.user_bytes ? static_cast<double>(WrittenBytes(a.after_settle)) / a.user_bytes : 0.0;
}

}  // namespace

void PrintTable(const Flags& f, const std::string& compression, const EngineRun& s,
                const EngineRun* r) {
  std::printf(
      "\ncompression=%s  (ratio = Strata / RocksDB; for ops/s and MB/s above 1 means "
      "Strata is faster, for latency below 1 does)\n",
      compression.c_str());
  std::printf("%-12s | %12s %12s %7s | %8s %8s | %17s %17s | %s\n", "workload", "Strata op/s",
              "RocksDB op/s", "ratio", "S MB/s", "R MB/s", "S p50/p99 us", "R p50/p99 us",
              "p50 ratio, p99 ratio; found");
  std::printf("%s\n", std::string(136, '-').c_str());
  for (size_t i = 0; i < f.benchmarks.size(); i++) {
    const std::string& name = f.benchmarks[i];
    const PhaseResult& a = s.phases[i];
    const PhaseResult* b = r ? &r->phases[i] : nullptr;
    auto lat = [](const PhaseResult& p) {
      if (p.latency_us.Count() == 0) return std::string("n/a");
      return Fmt("%.1f", p.latency_us.Percentile(50)) + " / " +
             Fmt("%.1f", p.latency_us.Percentile(99));
    };
    std::string extra;
    if (b && a.latency_us.Count() > 0 && b->latency_us.Count() > 0) {
      extra = Ratio(a.latency_us.Percentile(50), b->latency_us.Percentile(50)) + ", " +
              Ratio(a.latency_us.Percentile(99), b->latency_us.Percentile(99)) + "; ";
    }
    auto both = [&](uint64_t x, const std::optional<uint64_t>& y) {
      return std::to_string(x) + (y ? " / " + std::to_string(*y) : "");
    };
    auto of_b = [&](uint64_t PhaseResult::*field) {
      return b ? std::optional<uint64_t>((*b).*field) : std::nullopt;
    };
    if (name == "readrandom" || name == "readmissing") {
      extra += "found " + both(a.found, of_b(&PhaseResult::found)) + " of " + std::to_string(a.ops);
    } else if (name == "readseq" || name == "scansmall") {
      extra += "rows " + both(a.rows, of_b(&PhaseResult::rows)) + " of " +
               std::to_string(f.num * (name == "readseq" ? f.threads : 1));
    } else if (name == "seekrandom" || name == "seekreuse") {
      extra += "found " + both(a.found, of_b(&PhaseResult::found)) + " of " +
               std::to_string(a.ops) + ", rows " + both(a.rows, of_b(&PhaseResult::rows)) +
               " (Seek + " + std::to_string(kSeekNexts) + " Next)";
    } else if (!extra.empty()) {
      extra.resize(extra.size() - 2);
    }
    std::printf("%-12s | %12.0f %12s %7s | %8.1f %8s | %17s %17s | %s\n", name.c_str(),
                a.OpsPerSec(), b ? Fmt("%.0f", b->OpsPerSec()).c_str() : "n/a",
                b ? Ratio(a.OpsPerSec(), b->OpsPerSec()).c_str() : "n/a", a.MBPerSec(),
                b ? Fmt("%.1f", b->MBPerSec()).c_str() : "n/a", lat(a).c_str(),
                b ? lat(*b).c_str() : "n/a", extra.c_str());
  }
  std::printf("(op/s: rows/s for readseq and scansmall, seeks/s for seekrandom and seekreuse)\n");
  if (r != nullptr && f.passes > 1) {
    std::printf(
        "read passes, Strata / RocksDB op/s per pass (engines back to back; odd passes "
        "run Strata first, even passes RocksDB):\n");
    for (size_t i = 0; i < f.benchmarks.size(); i++) {
      if (s.passes[i].empty() || s.passes[i].size() != r->passes[i].size()) continue;
      std::string line;
      for (size_t p = 0; p < s.passes[i].size(); p++) {
        line += " " + Ratio(s.passes[i][p].OpsPerSec(), r->passes[i][p].OpsPerSec());
      }
      std::printf("  %-12s%s\n", f.benchmarks[i].c_str(), line.c_str());
    }
  }
  if (s.settle_seconds >= 0) {
    std::printf(
        "settle before reads (Strata Engine::Compact, RocksDB CompactRange over all "
        "keys): Strata %.1f s -> %s; RocksDB %s -> %s\n",
        s.settle_seconds, s.settle_shape.c_str(),
        r ? Fmt("%.1f s", r->settle_seconds).c_str() : "n/a", r ? r->settle_shape.c_str() : "n/a");
  }
  if (s.group.ran) PrintGroupScan(f, s, r);
  if (!s.amp.ran) return;
  auto mb = [](uint64_t b) { return Fmt("%.1f", b / 1048576.0); };
  const AmpResult& A = s.amp;
  const AmpResult* B = r && r->amp.ran ? &r->amp : nullptr;
  std::printf(
      "\namplification after fill + overwrite (counters since the database was created, "
      "read at the end of overwrite, before settling; data still in memtables not "
      "counted):\n");
  std::printf("%-46s | %16s %16s %7s\n", "", "Strata", "RocksDB", "ratio");
  auto row = [&](const char* name, const std::string& a, const std::string& b,
                 const std::string& ratio) {
    std::printf("%-46s | %16s %16s %7s\n", name, a.c_str(), b.c_str(), ratio.c_str());
  };
  const StoreStats& ao = A.after_overwrite;
  row("log MB written", mb(ao.log_bytes), B ? mb(B->after_overwrite.log_bytes) : "n/a",
      B ? Ratio(ao.log_bytes, B->after_overwrite.log_bytes) : "n/a");
  row("flush MB written", mb(ao.flush_bytes), B ? mb(B->after_overwrite.flush_bytes) : "n/a",
      B ? Ratio(ao.flush_bytes, B->after_overwrite.flush_bytes) : "n/a");
  row("compaction MB written", mb(ao.compaction_bytes),
      B ? mb(B->after_overwrite.compaction_bytes) : "n/a",
      B ? Ratio(ao.compaction_bytes, B->after_overwrite.compaction_bytes) : "n/a");
  row("user MB written (key+value)", mb(A.user_bytes), B ? mb(B->user_bytes) : "n/a", "");
  row("write amp (flush+compaction) / log bytes", Fmt("%.2f", WriteAmpPerLogByte(A)),
      B ? Fmt("%.2f", WriteAmpPerLogByte(*B)) : "n/a",
      B ? Ratio(WriteAmpPerLogByte(A), WriteAmpPerLogByte(*B)) : "n/a");
  row("write amp (flush+compaction) / user bytes", Fmt("%.2f", WriteAmpPerUserByte(A)),
      B ? Fmt("%.2f", WriteAmpPerUserByte(*B)) : "n/a",
      B ? Ratio(WriteAmpPerUserByte(A), WriteAmpPerUserByte(*B)) : "n/a");
  row("table MB on disk after overwrite", mb(ao.table_bytes),
      B ? mb(B->after_overwrite.table_bytes) : "n/a",
      B ? Ratio(ao.table_bytes, B->after_overwrite.table_bytes) : "n/a");
  row("space amp after overwrite (tables / live k+v)", Fmt("%.2f", SpaceAmp(A, ao)),
      B ? Fmt("%.2f", SpaceAmp(*B, B->after_overwrite)) : "n/a",
      B ? Ratio(SpaceAmp(A, ao), SpaceAmp(*B, B->after_overwrite)) : "n/a");
  row("files per level after overwrite", ao.level_files, B ? B->after_overwrite.level_files : "n/a",
      "");
  if (A.settled) {
    const bool b_settled = B && B->settled;
    row("space amp after settling", Fmt("%.2f", SpaceAmp(A, A.after_settle)),
        b_settled ? Fmt("%.2f", SpaceAmp(*B, B->after_settle)) : "n/a",
        b_settled ? Ratio(SpaceAmp(A, A.after_settle), SpaceAmp(*B, B->after_settle)) : "n/a");
    // Through settling every engine has flushed all and compacted to one
    // file per key: totals that do not depend on how far behind
    // compaction was when overwrite ended.
    const StoreStats& as = A.after_settle;
    row("flush+compaction MB written through settling", mb(WrittenBytes(as)),
        b_settled ? mb(WrittenBytes(B->after_settle)) : "n/a",
        b_settled ? Ratio(WrittenBytes(as), WrittenBytes(B->after_settle)) : "n/a");
    row("write amp through settling / user bytes", Fmt("%.2f", WriteAmpThroughSettling(A)),
        b_settled ? Fmt("%.2f", WriteAmpThroughSettling(*B)) : "n/a",
        b_settled ? Ratio(WriteAmpThroughSettling(A), WriteAmpThroughSettling(*B)) : "n/a");
  }
  std::printf(
      "(RocksDB: log = WAL_FILE_BYTES, flush = FLUSH_WRITE_BYTES, compaction = "
      "COMPACT_WRITE_BYTES tickers, tables = rocksdb.live-sst-files-size; Strata: "
      "EngineStats wal_bytes, flush_bytes_written, compaction_bytes_written, "
      "table_bytes. Live k+v = num * (key_size + value_size) = %s MB.)\n",
      mb(A.logical_bytes).c_str());
}

namespace {

// ---- The JSON document (--json) -----------------------------------------------------

// Writes one JSON document with two-space indentation. The caller opens and
// closes objects and arrays in order and names each member of an object with
// Key() before its value. Numbers take the shortest text that reads back to
// the same double; NaN and infinities become null. Thread-compatible.
class JsonWriter {
 public:
  JsonWriter() = default;
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& Key(std::string_view key) {
    Element();
    Quoted(key);
    out_ += ": ";
    after_key_ = true;
    return *this;
  }
  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }
  JsonWriter& Number(double v) {
    if (!std::isfinite(v)) return Raw("null");
    char buf[64];
    const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
    return Raw(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
  }
  JsonWriter& Uint(uint64_t v) { return Raw(std::to_string(v)); }
  JsonWriter& Bool(bool v) { return Raw(v ? "true" : "false"); }
  JsonWriter& Null() { return Raw("null"); }
  JsonWriter& String(std::string_view s) {
    Element();
    Quoted(s);
    return *this;
  }

  // The document so far.
  const std::string& text() const { return out_; }

 private:
  // Before a key, or a value that is not a member's: a comma after the
  // previous element and a new line at the container's depth.
  void Element() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (empty_.empty()) return;
    if (!empty_.back()) out_ += ',';
    empty_.back() = false;
    out_ += '\n';
    out_.append(2 * empty_.size(), ' ');
  }
  JsonWriter& Raw(std::string_view v) {
    Element();
    out_ += v;
    return *this;
  }
  JsonWriter& Open(char brace) {
    Element();
    out_ += brace;
    empty_.push_back(true);
    return *this;
  }
  JsonWriter& Close(char brace) {
    const bool empty = empty_.back();
    empty_.pop_back();
    if (!empty) {
      out_ += '\n';
      out_.append(2 * empty_.size(), ' ');
    }
    out_ += brace;
    return *this;
  }
  void Quoted(std::string_view s) { out_ += JsonQuote(s); }

  std::string out_;
  std::vector<bool> empty_;  // per open container: no element written yet
  bool after_key_ = false;   // a Key() was written; its value comes next
};

double ToMB(uint64_t bytes) { return bytes / 1048576.0; }

// What a workload's ops are: rows for the scans, seeks for the seek workloads.
const char* UnitOf(const std::string& workload) {
  if (workload == "readseq" || workload == "scansmall") return "rows";
  if (workload == "seekrandom" || workload == "seekreuse") return "seeks";
  return "ops";
}

void JsonPhase(JsonWriter* j, const PhaseResult& p, const std::vector<PhaseResult>& passes) {
  j->BeginObject();
  j->Key("ops_per_sec").Number(p.OpsPerSec());
  j->Key("mb_per_sec").Number(p.MBPerSec());
  j->Key("seconds").Number(p.seconds);
  j->Key("ops").Uint(p.ops);
  j->Key("found").Uint(p.found);
  j->Key("rows").Uint(p.rows);
  j->Key("bytes").Uint(p.bytes);
  j->Key("latency_us");
  if (p.latency_us.Count() == 0) {
    j->Null();
  } else {
    j->BeginObject();
    j->Key("count").Uint(p.latency_us.Count());
    j->Key("p50").Number(p.latency_us.Percentile(50));
    j->Key("p99").Number(p.latency_us.Percentile(99));
    j->Key("p99_9").Number(p.latency_us.Percentile(99.9));
    j->Key("max").Number(p.latency_us.Max());
    j->EndObject();
  }
  j->Key("passes").BeginArray();
  for (const PhaseResult& pass : passes) {
    j->BeginObject();
    j->Key("ops_per_sec").Number(pass.OpsPerSec());
    j->Key("seconds").Number(pass.seconds);
    j->EndObject();
  }
  j->EndArray();
  j->EndObject();
}

void JsonSettle(JsonWriter* j, const EngineRun& e) {
  if (e.settle_seconds < 0) {
    j->Null();
    return;
  }
  j->BeginObject();
  j->Key("seconds").Number(e.settle_seconds);
  j->Key("levels").String(e.settle_shape);
  j->EndObject();
}

void JsonAmp(JsonWriter* j, const AmpResult& a) {
  if (!a.ran) {
    j->Null();
    return;
  }
  const StoreStats& o = a.after_overwrite;
  j->BeginObject();
  j->Key("log_mb").Number(ToMB(o.log_bytes));
  j->Key("flush_mb").Number(ToMB(o.flush_bytes));
  j->Key("compaction_mb").Number(ToMB(o.compaction_bytes));
  j->Key("user_mb").Number(ToMB(a.user_bytes));
  j->Key("write_amp_per_log_byte").Number(WriteAmpPerLogByte(a));
  j->Key("write_amp_per_user_byte").Number(WriteAmpPerUserByte(a));
  j->Key("table_mb_after_overwrite").Number(ToMB(o.table_bytes));
  j->Key("space_amp_after_overwrite").Number(SpaceAmp(a, o));
  j->Key("levels_after_overwrite").String(o.level_files);
  j->Key("settled").Bool(a.settled);
  if (a.settled) {
    j->Key("space_amp_after_settling").Number(SpaceAmp(a, a.after_settle));
    j->Key("written_mb_through_settling").Number(ToMB(WrittenBytes(a.after_settle)));
    j->Key("write_amp_through_settling").Number(WriteAmpThroughSettling(a));
  } else {
    j->Key("space_amp_after_settling").Null();
    j->Key("written_mb_through_settling").Null();
    j->Key("write_amp_through_settling").Null();
  }
  j->EndObject();
}

void JsonReadIo(JsonWriter* j, const char* prefix, const ReadIo& io) {
  const std::string p = prefix;
  if (!io.known) {
    j->Key(p + "table_mb_read").Null();
    j->Key(p + "files_opened").Null();
  } else {
    j->Key(p + "table_mb_read").Number(ToMB(io.bytes));
    j->Key(p + "files_opened").Uint(io.opens);
  }
  j->Key(p + "files_read");
  if (!io.per_file) {
    j->Null();
    return;
  }
  j->BeginArray();
  for (const std::string& name : io.files) j->String(name);
  j->EndArray();
}

// scansmall's figures of one engine; `small` is its timed scan of the small
// family (the median pass).
void JsonGroupScan(JsonWriter* j, const GroupScanResult& g, const PhaseResult& small) {
  if (!g.ran) {
    j->Null();
    return;
  }
  j->BeginObject();
  j->Key("table_mb").Number(ToMB(g.settled.table_bytes));
  j->Key("table_files").Uint(g.settled.table_files);
  j->Key("small_rows_per_sec").Number(small.OpsPerSec());
  JsonReadIo(j, "small_", g.small_io);
  j->Key("big_rows_per_sec").Number(g.big.OpsPerSec());
  JsonReadIo(j, "big_", g.big_io);
  j->Key("small_over_big_time").Number(g.big.seconds > 0 ? small.seconds / g.big.seconds : 0);
  j->EndObject();
}

// Both engines' value of one member: `write(engine)` for Strata and for
// RocksDB, null for an engine that did not run.
template <typename Write>
void JsonEngines(JsonWriter* j, const char* key, const EngineRun& s, const EngineRun* r,
                 Write write) {
  j->Key(key).BeginObject();
  j->Key("strata");
  write(s);
  j->Key("rocksdb");
  if (r != nullptr) {
    write(*r);
  } else {
    j->Null();
  }
  j->EndObject();
}

}  // namespace

// The whole --json document.
std::string JsonDocument(const Flags& f, const std::vector<Report>& reports, double total_seconds) {
  JsonWriter j;
  j.BeginObject();
  j.Key("program").String("db_bench");
  j.Key("format_version").Uint(1);
  j.Key("config").BeginObject();
  j.Key("num").Uint(f.num);
  j.Key("reads").Uint(f.reads.value_or(f.num));
  j.Key("threads").Uint(static_cast<uint64_t>(f.threads));
  j.Key("key_size").Uint(f.key_size);
  j.Key("value_size").Uint(f.value_size);
  j.Key("cache_mb").Uint(f.cache_mb);
  j.Key("write_buffer_mb").Uint(f.write_buffer_mb);
  j.Key("sync").Bool(f.sync);
  j.Key("passes").Uint(static_cast<uint64_t>(f.passes));
  j.Key("seed").Uint(f.seed);
  j.Key("compressions").BeginArray();
  for (const std::string& c : f.compressions) j.String(c);
  j.EndArray();
  j.Key("benchmarks").BeginArray();
  for (const std::string& b : f.benchmarks) j.String(b);
  j.EndArray();
  j.EndObject();
#ifdef STRATA_HAVE_ROCKSDB
  j.Key("rocksdb").Bool(true);
#else
  j.Key("rocksdb").Bool(false);
#endif
  j.Key("total_seconds").Number(total_seconds);
  j.Key("runs").BeginArray();
  for (const Report& rep : reports) {
    const EngineRun& s = rep.strata;
    const EngineRun* r = rep.rocks ? &*rep.rocks : nullptr;
    j.BeginObject();
    j.Key("compression").String(rep.compression);
    j.Key("workloads").BeginArray();
    for (size_t i = 0; i < f.benchmarks.size(); i++) {
      j.BeginObject();
      j.Key("name").String(f.benchmarks[i]);
      j.Key("unit").String(UnitOf(f.benchmarks[i]));
      j.Key("strata");
      JsonPhase(&j, s.phases[i], s.passes[i]);
      j.Key("rocksdb");
      if (r != nullptr) {
        JsonPhase(&j, r->phases[i], r->passes[i]);
      } else {
        j.Null();
      }
      j.EndObject();
    }
    j.EndArray();
    JsonEngines(&j, "settle", s, r, [&](const EngineRun& e) { JsonSettle(&j, e); });
    j.Key("live_mb").Number(ToMB(f.num * (f.key_size + f.value_size)));
    if (s.amp.ran) {
      JsonEngines(&j, "amplification", s, r, [&](const EngineRun& e) { JsonAmp(&j, e.amp); });
    } else {
      j.Key("amplification").Null();
    }
    size_t small_index = f.benchmarks.size();  // the last scansmall run, as PrintGroupScan
    for (size_t i = 0; i < f.benchmarks.size(); i++) {
      if (f.benchmarks[i] == "scansmall") small_index = i;
    }
    if (s.group.ran && small_index < f.benchmarks.size()) {
      JsonEngines(&j, "scansmall", s, r,
                  [&](const EngineRun& e) { JsonGroupScan(&j, e.group, e.phases[small_index]); });
    } else {
      j.Key("scansmall").Null();
    }
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  return j.text() + "\n";
}

}  // namespace strata::db_bench
