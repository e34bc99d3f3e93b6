// `strata catalog` and `strata check`: the catalog an engine directory's
// MANIFEST describes, and a check that the files it names are there as
// recorded. Neither opens an engine: Manifest::Read, unlike an engine's open,
// rewrites nothing.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../tool_util.h"
#include "commands.h"
#include "common/cell_key.h"
#include "common/coding.h"
#include "common/file_system.h"
#include "engine/manifest.h"
#include "output.h"
#include "sstable/table_builder.h"
#include "sstable/table_cache.h"
#include "sstable/table_reader.h"
#include "wal/log_format.h"
#include "wal/log_reader.h"

namespace strata::cli {

std::optional<int> ReadCatalog(const std::string& dir, engine::Catalog* catalog) {
  FileSystem* fs = FileSystem::Default();
  auto fail = [](const std::string& why, int code) {
    PrintError(why);
    return code;
  };
  if (const std::string why = tools::NotAFileReason(dir); !why.empty()) {
    return fail(why, kExitUsage);
  }
  if (!fs->FileExists(dir)) return fail(dir + ": no such directory", kExitUsage);
  std::vector<std::string> names;
  if (!fs->GetChildren(dir, &names).ok()) return fail(dir + ": not a directory", kExitUsage);
  Status s = engine::Manifest::Read(fs, dir, catalog);
  if (s.IsNotFound()) {
    return fail(dir + ": no MANIFEST (not an engine directory?)", kExitUsage);
  }
  if (!s.ok()) {
    return fail("the manifest cannot be read: " + s.ToString(),
                s.IsCorruption() ? kExitProblem : kExitUsage);
  }
  return std::nullopt;
}

namespace {

using GroupKey = std::pair<uint64_t, uint32_t>;  // (tablet, group slot)

std::string RowBound(const std::string& row, const char* unbounded) {
  return row.empty() ? std::string(unbounded) : "'" + EscapeBytes(row) + "'";
}

std::string BudgetString(const TenantOptions& o) {
  std::string s = "write buffer weight " + std::to_string(o.write_buffer_weight);
  s += ", write rate limit " +
       (o.write_rate_limit == 0 ? std::string("none") : SizeString(o.write_rate_limit) + "/s");
  s += ", disk quota " + (o.disk_quota == 0 ? std::string("none") : SizeString(o.disk_quota));
  return s;
}

// One locality group of a schema: its options and families, as text or JSON.
void ShowGroup(const engine::Schema& schema, uint32_t g, JsonWriter* json) {
  const LocalityGroupOptions& o = schema.locality_groups()[g];
  const char* compression =
      sstable::CompressionTypeName(sstable::TableBuilderOptions::FromLocalityGroup(o).compression);
  if (json != nullptr) {
    json->BeginObject();
    json->Number("slot", g);
    json->Bytes("name", o.name, false);
    json->Bool("in_memory", o.in_memory);
    json->String("compression", compression);
    json->Number("block_size", o.block_size);
    json->Signed("bloom_bits_per_key", o.bloom_bits_per_key);
    json->Number("write_buffer_size", o.write_buffer_size);
    json->BeginArray("families");
    for (const engine::FamilyInfo& f : schema.families()) {
      if (f.locality_group != g) continue;
      json->BeginObject();
      json->Bytes("name", f.name, false);
      json->Number("id", f.id);
      json->Bool("column_markers_hide_by_timestamp", f.column_markers_hide_by_timestamp);
      json->End();
    }
    json->End();
    json->End();
    return;
  }
  const std::string write_buffer =
      o.write_buffer_size == 0 ? std::string("the engine's") : SizeString(o.write_buffer_size);
  std::printf(
      "    group %u '%s': %scompression %s, block size %u, bloom bits %d, write buffer %s\n", g,
      o.name.c_str(), o.in_memory ? "in memory, " : "", compression, o.block_size,
      o.bloom_bits_per_key, write_buffer.c_str());
  std::string families;
  for (const engine::FamilyInfo& f : schema.families()) {
    if (f.locality_group != g) continue;
    if (!families.empty()) families += ", ";
    families += f.name + " (id " + std::to_string(f.id) +
                (f.column_markers_hide_by_timestamp ? ", column markers hide by timestamp)" : ")");
  }
  std::printf("      families: %s\n", families.empty() ? "none" : families.c_str());
}

// One level of one group of a tablet.
void ShowLevel(size_t level, const std::vector<engine::FileMeta>& files, bool list,
               JsonWriter* json) {
  uint64_t bytes = 0, entries = 0;
  for (const engine::FileMeta& f : files) {
    bytes += f.size;
    entries += f.entries;
  }
  if (json != nullptr) {
    json->BeginObject();
    json->Number("level", level);
    json->Number("file_count", files.size());
    json->Number("bytes", bytes);
    json->Number("entries", entries);
    if (list) {
      json->BeginArray("files");
      for (const engine::FileMeta& f : files) {
        json->BeginObject();
        json->Number("number", f.number);
        json->Number("bytes", f.size);
        json->Number("entries", f.entries);
        json->Number("min_sequence", f.min_sequence);
        json->Number("max_sequence", f.max_sequence);
        json->String("smallest", CellKeyDebugString(f.smallest));
        json->String("largest", CellKeyDebugString(f.largest));
        json->End();
      }
      json->End();
    }
    json->End();
    return;
  }
  std::printf("        level %zu: %s, %s, %s\n", level,
              Count(files.size(), "file", "files").c_str(), SizeString(bytes).c_str(),
              Count(entries, "entry", "entries").c_str());
  if (!list) return;
  for (const engine::FileMeta& f : files) {
    std::printf("          %06" PRIu64 ".sst %" PRIu64 " bytes, %" PRIu64
                " entries, sequences %" PRIu64 "..%" PRIu64 ", keys %s .. %s\n",
                f.number, f.size, f.entries, f.min_sequence, f.max_sequence,
                CellKeyDebugString(f.smallest).c_str(), CellKeyDebugString(f.largest).c_str());
  }
}

// One table: its groups, tablets and their files; adds its files to *files.
void ShowTable(const engine::Catalog& c, uint64_t table_id, const Args& args, JsonWriter* json,
               std::map<uint64_t, uint64_t>* all_files) {
  const auto& table = c.tables.at(table_id);
  const engine::Schema& schema = table.schema;
  const auto& groups = schema.locality_groups();
  if (json != nullptr) {
    json->BeginObject();
    json->Number("id", table_id);
    json->Bytes("name", table.name, false);
    json->BeginArray("groups");
  } else {
    std::printf("  table %" PRIu64 " '%s'\n", table_id, EscapeBytes(table.name).c_str());
  }
  for (uint32_t g = 0; g < groups.size(); g++) {
    if (!schema.IsFreeSlot(g)) ShowGroup(schema, g, json);
  }
  if (json != nullptr) {
    json->End();
    json->BeginArray("tablets");
  }
  // A split's tablets share their parent's files: each counts once.
  std::map<uint64_t, uint64_t> table_files;  // number -> bytes
  for (const auto& [tablet_id, tablet] : c.tablets) {
    if (tablet.table_id != table_id) continue;
    const bool retired = c.retired_tablets.count(tablet_id) != 0;
    if (json != nullptr) {
      json->BeginObject();
      json->Number("id", tablet_id);
      json->Bytes("start_row", tablet.start_row, false);
      json->Bytes("end_row", tablet.end_row, false);
      json->Bool("retired", retired);
      json->BeginArray("groups");
    } else {
      std::printf("    tablet %" PRIu64 " rows [%s, %s)%s\n", tablet_id,
                  RowBound(tablet.start_row, "start").c_str(),
                  RowBound(tablet.end_row, "end").c_str(),
                  retired ? " retired (split; its files are shared)" : "");
    }
    for (uint32_t g = 0; g < groups.size(); g++) {
      auto it = c.files.find(GroupKey{tablet_id, g});
      if (it == c.files.end()) continue;
      const auto& levels = it->second.levels;
      bool any = false;
      for (size_t level = 0; level < levels.size(); level++) {
        if (levels[level].empty()) continue;
        if (!any) {
          any = true;
          if (json != nullptr) {
            json->BeginObject();
            json->Number("slot", g);
            json->Number("flushed", it->second.flushed);
            json->BeginArray("levels");
          } else {
            std::printf("      group %u: flushed to sequence %" PRIu64 "\n", g, it->second.flushed);
          }
        }
        ShowLevel(level, levels[level], args.files, json);
        for (const engine::FileMeta& f : levels[level]) table_files[f.number] = f.size;
      }
      if (any && json != nullptr) {
        json->End();
        json->End();
      }
    }
    if (json != nullptr) {
      json->End();
      json->End();
    }
  }
  uint64_t table_bytes = 0;
  for (const auto& [number, size] : table_files) table_bytes += size;
  if (json != nullptr) {
    json->End();
    json->BeginObject("total");
    json->Number("files", table_files.size());
    json->Number("bytes", table_bytes);
    json->End();
    json->End();
  } else {
    std::printf("    total: %s, %s\n", Count(table_files.size(), "file", "files").c_str(),
                SizeString(table_bytes).c_str());
  }
  all_files->insert(table_files.begin(), table_files.end());
}

}  // namespace

int CmdCatalog(const Args& args) {
  engine::Catalog c;
  if (std::optional<int> code = ReadCatalog(args.dir, &c)) return *code;
  std::unique_ptr<JsonWriter> json;
  const std::string manifest = JoinPath(args.dir, engine::Manifest::kFileName);
  if (args.json) {
    json = std::make_unique<JsonWriter>(stdout);
    json->BeginObject();
    json->String("manifest", manifest);
    json->BeginObject("log");
    json->Number("floor", c.log_floor);
    json->Number("last_sequence", c.last_sequence);
    if (c.log_segment == 0) {
      json->Null("newest_segment");
    } else {
      json->String("newest_segment", wal::SegmentFileName(c.log_segment));
    }
    json->End();
    json->Number("next_id", c.next_id);
    json->BeginArray("tenants");
  } else {
    std::printf("manifest: %s\n", manifest.c_str());
    std::printf("log: floor %" PRIu64 ", last sequence %" PRIu64 ", newest segment %s\n",
                c.log_floor, c.last_sequence,
                c.log_segment == 0 ? "not recorded" : wal::SegmentFileName(c.log_segment).c_str());
    std::printf("next id: %" PRIu64 "\n", c.next_id);
  }
  std::map<uint64_t, uint64_t> all_files;  // number -> bytes, each file once
  for (const auto& [tenant_id, tenant] : c.tenants) {
    auto it = c.tenant_options.find(tenant_id);
    const TenantOptions budget = it == c.tenant_options.end() ? TenantOptions() : it->second;
    if (json != nullptr) {
      json->BeginObject();
      json->Number("id", tenant_id);
      json->Bytes("name", tenant.name, false);
      json->BeginObject("budget");
      json->Number("write_buffer_weight", budget.write_buffer_weight);
      json->Number("write_rate_limit", budget.write_rate_limit);
      json->Number("disk_quota", budget.disk_quota);
      json->End();
      json->BeginArray("tables");
    } else {
      std::printf("\ntenant %" PRIu64 " '%s' (%s)\n", tenant_id, EscapeBytes(tenant.name).c_str(),
                  BudgetString(budget).c_str());
    }
    for (const auto& [table_id, table] : c.tables) {
      if (table.tenant_id == tenant_id) ShowTable(c, table_id, args, json.get(), &all_files);
    }
    if (json != nullptr) {
      json->End();
      json->End();
    }
  }
  uint64_t all_bytes = 0;
  for (const auto& [number, size] : all_files) all_bytes += size;
  if (json != nullptr) {
    json->End();
    json->BeginObject("total");
    json->Number("tenants", c.tenants.size());
    json->Number("tables", c.tables.size());
    json->Number("tablets", c.tablets.size());
    json->Number("files", all_files.size());
    json->Number("bytes", all_bytes);
    json->End();
    json->End();
  } else {
    std::printf("\n%s, %s, %s, %s, %s\n", Count(c.tenants.size(), "tenant", "tenants").c_str(),
                Count(c.tables.size(), "table", "tables").c_str(),
                Count(c.tablets.size(), "tablet", "tablets").c_str(),
                Count(all_files.size(), "file", "files").c_str(), SizeString(all_bytes).c_str());
  }
  return kExitOk;
}

int CmdCheck(const Args& args) {
  engine::Catalog c;
  if (std::optional<int> code = ReadCatalog(args.dir, &c)) return *code;
  FileSystem* fs = FileSystem::Default();
  // Each file once, with the groups that hold it (a split's tablets share
  // their parent's files).
  std::map<uint64_t, std::pair<engine::FileMeta, std::string>> files;
  for (const auto& [key, group] : c.files) {
    for (size_t level = 0; level < group.levels.size(); level++) {
      for (const engine::FileMeta& f : group.levels[level]) {
        files.emplace(f.number, std::make_pair(f, "tablet " + std::to_string(key.first) +
                                                      " group " + std::to_string(key.second) +
                                                      " level " + std::to_string(level)));
      }
    }
  }
  const std::string sst_dir = JoinPath(args.dir, "sst");
  std::vector<std::string> problems;
  auto problem = [&](const std::string& what) {
    if (!args.json) std::printf("PROBLEM: %s\n", what.c_str());
    problems.push_back(what);
  };
  size_t done = 0;
  for (const auto& [number, entry] : files) {
    const auto& [meta, where] = entry;
    const std::string path = sstable::TableFileName(sst_dir, number);
    Result<uint64_t> size = fs->GetFileSize(path);
    if (!size.ok()) {
      problem(path + " (" + where + ") is missing: " + size.status().ToString());
      continue;
    }
    if (*size != meta.size) {
      problem(path + " (" + where + ") holds " + std::to_string(*size) +
              " bytes; the manifest records " + std::to_string(meta.size));
      continue;
    }
    if (args.deep) {
      std::unique_ptr<RandomAccessFile> file;
      Status s = fs->NewRandomAccessFile(path, &file);
      Result<std::unique_ptr<sstable::TableReader>> table = s;
      if (s.ok()) table = sstable::TableReader::Open({}, std::move(file), *size, path);
      if (table.ok()) s = (*table)->VerifyChecksums();
      if (s.ok() && !table.ok()) s = table.status();
      if (!s.ok()) problem(path + " (" + where + "): " + s.ToString());
      if (++done % 100 == 0 || done == files.size()) {
        std::fprintf(stderr, "strata: verified %zu of %zu files\n", done, files.size());
      }
    }
  }
  // Table files nobody names: left by a crash, deleted by the next open.
  std::vector<std::string> names;
  std::vector<std::string> strays;
  if (fs->GetChildren(sst_dir, &names).ok()) {
    for (const std::string& n : names) {
      const size_t dot = n.find(".sst");
      if (dot == std::string::npos || dot == 0 || dot + 4 != n.size()) continue;
      if (n.find_first_not_of("0123456789") != dot) continue;
      if (!files.count(std::strtoull(n.c_str(), nullptr, 10))) strays.push_back(n);
    }
  }
  // The log's newest segment, as recovery wants it (MANIFEST.md, "The log's
  // segments").
  if (c.log_segment != 0) {
    Status s = wal::CheckSegmentFile(fs, JoinPath(args.dir, "wal"), c.log_segment);
    if (!s.ok()) {
      problem(std::string(s.message()) + ": the manifest names it as the log's newest segment");
    }
  }
  if (args.json) {
    JsonWriter json(stdout);
    json.BeginObject();
    json.String("dir", args.dir);
    json.Number("files_checked", files.size());
    json.Bool("deep", args.deep);
    json.BeginArray("problems");
    for (const std::string& p : problems) json.String({}, p);
    json.End();
    json.BeginArray("not_in_catalog");
    for (const std::string& n : strays) json.String({}, n);
    json.End();
    json.Bool("ok", problems.empty());
    json.End();
  } else {
    std::printf("%s checked%s; %zu not in the catalog%s\n",
                Count(files.size(), "file", "files").c_str(),
                args.deep ? " (with their checksums)" : "", strays.size(),
                strays.empty() ? "" : " (an engine deletes them when it opens):");
    for (const std::string& n : strays) std::printf("  %s\n", n.c_str());
  }
  if (!problems.empty()) {
    PrintError(std::to_string(problems.size()) + " problems found");
    return kExitProblem;
  }
  if (!args.json) std::printf("OK: every file the catalog names is there as recorded\n");
  return kExitOk;
}

}  // namespace strata::cli
