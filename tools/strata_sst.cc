// strata-sst: inspects one SSTable file (sstable/FORMAT.md): properties,
// cells, checksums, block layout and raw blocks.
//
// Exit codes: 0 ok; 1 the file is damaged (the message names the file, the
// block and its offset); 2 bad arguments, a file that cannot be read, or
// output that could not be written.
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "common/coding.h"
#include "common/file_system.h"
#include "hex_dump.h"
#include "sstable/block.h"
#include "sstable/format.h"
#include "sstable/table_reader.h"
#include "tool_util.h"

namespace strata::sstable {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitCorruption = 1;
constexpr int kExitUsage = 2;

const char kUsage[] =
    "usage: strata-sst <command> [options] <file>\n"
    "\n"
    "Inspects one SSTable file.\n"
    "\n"
    "commands:\n"
    "  props        show the properties block and the footer\n"
    "  scan         list cells: row, family id, qualifier, timestamp, sequence,\n"
    "               type and value (bytes outside printable ASCII as \\xHH)\n"
    "  verify       read every block and check its checksum, its decoding and\n"
    "               the key order\n"
    "  layout       list every block with its offset, stored and uncompressed\n"
    "               size and compression, the index separators and the filter\n"
    "  dump-block   print one block as stored on disk (contents and trailer) in hex\n"
    "\n"
    "When the table cannot be opened (a damaged index, filter or properties\n"
    "block), props and layout show the blocks its footer points to, each checked\n"
    "on its own, and the properties when their block is sound; they exit 1.\n"
    "\n"
    "options:\n"
    "  --hex             scan: print keys and values as hex instead\n"
    "  --from=ROW        scan: start at this row (inclusive)\n"
    "  --to=ROW          scan: stop before this row (exclusive)\n"
    "  --limit=N         scan: print at most N cells\n"
    "  --index=N         dump-block: the N-th block of 'layout' (from 0)\n"
    "  --offset=N        dump-block: the block at byte offset N\n"
    "  --size=N          dump-block: with --offset, read N bytes + trailer\n"
    "                    without opening the table (for damaged files)\n"
    "  --help            show this text\n"
    "\n"
    "ROW may contain \\xHH escapes and \\\\.\n"
    "\n"
    "exit status: 0 ok, 1 corruption found, 2 bad arguments, unreadable file or\n"
    "output that could not be written\n";

struct Args {
  std::string command;
  std::string file;
  bool hex = false;
  std::optional<std::string> from, to;
  std::optional<uint64_t> limit, index, offset, size;
};

int Usage(const std::string& error) {
  std::fprintf(stderr, "strata-sst: %s\n(run 'strata-sst --help' for usage)\n", error.c_str());
  return kExitUsage;
}

// Exit code for a failed status, after printing it.
int Fail(const Status& s) {
  std::fprintf(stderr, "strata-sst: %s\n", s.ToString().c_str());
  return s.IsCorruption() ? kExitCorruption : kExitUsage;
}

bool Unescape(const std::string& in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); i++) {
    if (in[i] != '\\') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 1 < in.size() && in[i + 1] == '\\') {
      out->push_back('\\');
      i++;
    } else if (i + 3 < in.size() && in[i + 1] == 'x' && std::isxdigit(in[i + 2]) &&
               std::isxdigit(in[i + 3])) {
      out->push_back(static_cast<char>(std::stoi(in.substr(i + 2, 2), nullptr, 16)));
      i += 3;
    } else {
      return false;
    }
  }
  return true;
}

// Parses argv; returns an exit code to stop with, or nullopt to go on.
std::optional<int> ParseArgs(int argc, char** argv, Args* args) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h" || a == "help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (a.rfind("--", 0) != 0) {
      positional.push_back(a);
      continue;
    }
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : a.substr(eq + 1);
    const bool has_value = eq != std::string::npos;
    auto number = [&](std::optional<uint64_t>* out) -> bool {
      uint64_t v;
      if (!has_value || !tools::ParseDecimal(value, &v)) return false;
      *out = v;
      return true;
    };
    auto row = [&](std::optional<std::string>* out) -> bool {
      std::string v;
      if (!has_value || !Unescape(value, &v)) return false;
      *out = v;
      return true;
    };
    bool ok;
    if (name == "--hex" && !has_value) {
      args->hex = true;
      ok = true;
    } else if (name == "--from") {
      ok = row(&args->from);
    } else if (name == "--to") {
      ok = row(&args->to);
    } else if (name == "--limit") {
      ok = number(&args->limit);
    } else if (name == "--index") {
      ok = number(&args->index);
    } else if (name == "--offset") {
      ok = number(&args->offset);
    } else if (name == "--size") {
      ok = number(&args->size);
    } else {
      return Usage("unknown option " + a);
    }
    if (!ok) return Usage("bad value in " + a);
  }
  if (positional.size() != 2) {
    return Usage(positional.empty() ? "no command given"
                                    : "expected a command and one file, got " +
                                          std::to_string(positional.size()) + " arguments");
  }
  args->command = positional[0];
  args->file = positional[1];
  return std::nullopt;
}

Result<std::unique_ptr<TableReader>> Open(const std::string& path) {
  FileSystem* fs = FileSystem::Default();
  std::unique_ptr<RandomAccessFile> file;
  STRATA_RETURN_IF_ERROR(fs->NewRandomAccessFile(path, &file));
  Result<uint64_t> size = file->Size();
  if (!size.ok()) return size.status();
  return TableReader::Open(TableReaderOptions{}, std::move(file), *size, path);
}

std::string HandleString(const BlockHandle& h) {
  return "offset " + std::to_string(h.offset) + " size " + std::to_string(h.size);
}

int CmdProps(const TableReader& t) {
  std::printf("file: %s\nfile_size: %" PRIu64 "\n", t.file_name().c_str(), t.file_size());
  std::fputs(t.properties().ToString().c_str(), stdout);
  const Footer& f = t.footer();
  std::printf("footer.format_version: %u\n", f.format_version);
  std::printf("footer.filter: %s\n",
              t.has_filter() ? HandleString(f.filter).c_str() : "none");
  std::printf("footer.index: %s\n", HandleString(f.index).c_str());
  std::printf("footer.properties: %s\n", HandleString(f.properties).c_str());
  return kExitOk;
}

int CmdScan(const TableReader& t, const Args& args) {
  auto it = t.NewIterator();
  if (args.from) {
    std::string target;
    AppendRowPrefix(&target, *args.from);
    it->Seek(target);
  } else {
    it->SeekToFirst();
  }
  std::string to_prefix;
  if (args.to) AppendRowPrefix(&to_prefix, *args.to);
  uint64_t n = 0;
  for (; it->Valid(); it->Next()) {
    if (args.to && it->key().compare(to_prefix) >= 0) break;
    if (args.limit && n >= *args.limit) break;
    if (args.hex) {
      std::printf("%s => %s\n", HexBytes(it->key()).c_str(), HexBytes(it->value()).c_str());
    } else {
      ParsedCellKey k;
      if (!ParseCellKey(it->key(), &k)) {
        std::fflush(stdout);
        return Fail(Status::Corruption("file " + t.file_name() + ": malformed cell key " +
                                       HexBytes(it->key())));
      }
      std::printf("%s => '%s'\n", CellKeyDebugString(it->key()).c_str(),
                  EscapeBytes(it->value()).c_str());
    }
    n++;
  }
  std::fflush(stdout);
  if (!it->status().ok()) return Fail(it->status());
  std::fprintf(stderr, "%" PRIu64 " cells\n", n);
  return kExitOk;
}

int CmdVerify(const TableReader& t) {
  Status s = t.VerifyChecksums();
  if (!s.ok()) return Fail(s);
  std::vector<TableReader::BlockInfo> blocks;
  s = t.ListBlocks(&blocks);
  if (!s.ok()) return Fail(s);
  std::printf("%s: OK (%zu blocks, %" PRIu64 " cells)\n", t.file_name().c_str(), blocks.size(),
              t.properties().num_cells);
  return kExitOk;
}

int CmdLayout(const TableReader& t) {
  std::vector<TableReader::BlockInfo> blocks;
  Status s = t.ListBlocks(&blocks);
  if (!s.ok()) return Fail(s);
  std::printf("%-5s %-10s %12s %10s %10s %-5s  %s\n", "#", "kind", "offset", "stored",
              "raw", "comp", "index separator (data blocks)");
  Status first_error;
  for (size_t i = 0; i < blocks.size(); i++) {
    const auto& b = blocks[i];
    BlockContents c;
    Status bs = t.ReadBlockContents(b.kind, b.handle, &c);
    std::string raw = bs.ok() ? std::to_string(c.data.size()) : "BAD";
    std::string comp = bs.ok() ? CompressionTypeName(c.stored_as) : "?";
    std::printf("%-5zu %-10s %12" PRIu64 " %10" PRIu64 " %10s %-5s  %s\n", i,
                BlockKindName(b.kind), b.handle.offset, b.handle.size + kBlockTrailerSize,
                raw.c_str(), comp.c_str(),
                b.kind == BlockKind::kData ? HexBytes(b.separator).c_str() : "");
    if (!bs.ok() && first_error.ok()) first_error = bs;
  }
  std::printf("%-5s %-10s %12" PRIu64 " %10zu\n", "-", "footer",
              t.file_size() - Footer::kEncodedLength, Footer::kEncodedLength);
  std::printf("format version %u\n", t.footer().format_version);
  if (const FilterBlockReader* f = t.filter()) {
    const char* layout = f->layout() == BloomLayout::kBlocked ? "blocked" : "flat";
    std::printf("filter: %s blooms, %u bits per key; row bloom %zu bytes, %d probes; ", layout,
                t.properties().bloom_bits_per_key, f->row_filter_size() - 1, f->row_probes());
    if (f->has_column_filter()) {
      std::printf("column bloom %zu bytes, %d probes\n", f->column_filter_size() - 1,
                  f->column_probes());
    } else {
      std::printf("no column bloom (one column per row)\n");
    }
  } else {
    std::printf("filter: none\n");
  }
  std::fflush(stdout);
  if (!first_error.ok()) return Fail(first_error);
  return kExitOk;
}

// props and layout of a table that cannot be opened (a damaged index,
// filter or properties block): what the footer says, each block it points
// to checked on its own, and the properties when their block is sound. The
// data blocks cannot be listed without the index. Fails with `why`.
int CmdFooterBlocks(const std::string& path, bool props, const Status& why) {
  FileSystem* fs = FileSystem::Default();
  std::unique_ptr<RandomAccessFile> file;
  if (Status s = fs->NewRandomAccessFile(path, &file); !s.ok()) return Fail(s);
  Result<uint64_t> size = file->Size();
  if (!size.ok()) return Fail(size.status());
  Result<Footer> footer = Footer::Read(*file, *size, path);
  if (!footer.ok()) return Fail(why);  // the open failed on the footer itself
  const uint64_t footer_offset = *size - Footer::kEncodedLength;
  const bool has_filter = !(footer->filter.offset == 0 && footer->filter.size == 0);
  struct Meta {
    BlockKind kind;
    BlockHandle handle;
  };
  std::vector<Meta> blocks;
  if (has_filter) blocks.push_back({BlockKind::kFilter, footer->filter});
  blocks.push_back({BlockKind::kIndex, footer->index});
  blocks.push_back({BlockKind::kProperties, footer->properties});
  std::printf("file: %s\nfile_size: %" PRIu64 "\n", path.c_str(), *size);
  std::printf("the table cannot be opened; the blocks its footer points to:\n");
  std::optional<TableProperties> properties;
  for (const Meta& m : blocks) {
    BlockContents c;
    Status s = m.handle.FitsBelow(footer_offset)
                   ? ReadBlock(*file, path, m.kind, m.handle, &c)
                   : Status::Corruption("the handle points past the end of the blocks");
    if (s.ok() && m.kind == BlockKind::kProperties) {
      Result<TableProperties> p = TableProperties::Decode(c.data);
      if (p.ok()) {
        properties = *p;
      } else {
        s = p.status();
      }
    }
    std::printf("  %-10s offset %" PRIu64 " size %" PRIu64 ": %s\n", BlockKindName(m.kind),
                m.handle.offset, m.handle.size, s.ok() ? "OK" : s.ToString().c_str());
  }
  std::printf("footer.format_version: %u\n", footer->format_version);
  if (props && properties) std::fputs(properties->ToString().c_str(), stdout);
  if (!props) std::printf("data blocks: not listed (they are found through the index)\n");
  std::fflush(stdout);
  return Fail(why);
}

void HexDump(const std::string& data, uint64_t base) {
  tools::HexDump(data, base, /*indent=*/"", /*offset_digits=*/8);
}

// Prints the stored bytes and what the trailer says; checks the checksum.
int DumpStored(const std::string& file_name, std::optional<BlockKind> kind, uint64_t offset,
               const std::string& stored) {
  if (stored.size() < kBlockTrailerSize) {
    return Fail(Status::Corruption(
        "file " + file_name + ": block at offset " + std::to_string(offset) + " has " +
        std::to_string(stored.size()) + " bytes, less than its trailer"));
  }
  std::printf("block at offset %" PRIu64 ", %zu stored bytes (contents %zu + trailer %zu)",
              offset, stored.size(), stored.size() - kBlockTrailerSize, kBlockTrailerSize);
  if (kind) std::printf(", kind %s", BlockKindName(*kind));
  std::printf("\n");
  HexDump(stored, offset);
  const uint8_t type = static_cast<uint8_t>(stored[stored.size() - kBlockTrailerSize]);
  const uint32_t crc = DecodeFixed32(stored.data() + stored.size() - 4);
  std::printf("trailer: compression %u (%s), checksum 0x%08x\n", type,
              type <= 1 ? CompressionTypeName(static_cast<CompressionType>(type)) : "unknown",
              crc);
  std::fflush(stdout);
  if (kind) {
    BlockContents c;
    Status s = DecodeStoredBlock(stored, file_name, *kind, offset, &c);
    if (!s.ok()) return Fail(s);
    std::printf("checksum OK; %zu bytes uncompressed\n", c.data.size());
    return kExitOk;
  }
  // Unknown kind: try each.
  for (BlockKind k :
       {BlockKind::kData, BlockKind::kIndex, BlockKind::kFilter, BlockKind::kProperties}) {
    BlockContents c;
    if (DecodeStoredBlock(stored, file_name, k, offset, &c).ok()) {
      std::printf("checksum OK as a %s block; %zu bytes uncompressed\n", BlockKindName(k),
                  c.data.size());
      return kExitOk;
    }
  }
  return Fail(Status::Corruption("file " + file_name + ": block at offset " +
                                 std::to_string(offset) +
                                 ": checksum matches no block kind"));
}

int CmdDumpBlockRaw(const Args& args) {
  FileSystem* fs = FileSystem::Default();
  std::unique_ptr<RandomAccessFile> file;
  Status s = fs->NewRandomAccessFile(args.file, &file);
  if (!s.ok()) return Fail(s);
  Result<uint64_t> file_size = file->Size();
  if (!file_size.ok()) return Fail(file_size.status());
  // Compared without adding, so that no size wraps around.
  if (*args.offset > *file_size || *file_size - *args.offset < kBlockTrailerSize ||
      *args.size > *file_size - *args.offset - kBlockTrailerSize) {
    return Usage("offset " + std::to_string(*args.offset) + " + size " +
                 std::to_string(*args.size) + " + the " + std::to_string(kBlockTrailerSize) +
                 "-byte trailer is past the end of the file (" + std::to_string(*file_size) +
                 " bytes)");
  }
  const uint64_t n = *args.size + kBlockTrailerSize;
  std::string buf(n, '\0');
  Slice got;
  s = file->Read(*args.offset, n, &got, buf.data());
  if (!s.ok()) return Fail(s);
  return DumpStored(args.file, std::nullopt, *args.offset, got.ToString());
}

int CmdDumpBlock(const TableReader& t, const Args& args) {
  std::vector<TableReader::BlockInfo> blocks;
  Status s = t.ListBlocks(&blocks);
  if (!s.ok()) return Fail(s);
  const TableReader::BlockInfo* b = nullptr;
  if (args.index) {
    if (*args.index >= blocks.size()) {
      return Usage("--index=" + std::to_string(*args.index) + ": the file has " +
                   std::to_string(blocks.size()) + " blocks");
    }
    b = &blocks[*args.index];
  } else {
    for (const auto& x : blocks) {
      if (x.handle.offset == *args.offset) b = &x;
    }
    if (b == nullptr) {
      return Usage("no block starts at offset " + std::to_string(*args.offset) +
                   " (see 'strata-sst layout')");
    }
  }
  std::string stored;
  s = t.ReadRawBlock(b->handle, &stored);
  if (!s.ok()) return Fail(s);
  return DumpStored(t.file_name(), b->kind, b->handle.offset, stored);
}

int Main(int argc, char** argv) {
  Args args;
  if (std::optional<int> code = ParseArgs(argc, argv, &args)) return *code;
  const std::string& cmd = args.command;
  if (cmd != "props" && cmd != "scan" && cmd != "verify" && cmd != "layout" &&
      cmd != "dump-block") {
    return Usage("unknown command '" + cmd + "'");
  }
  const bool scan_opts = args.hex || args.from || args.to || args.limit;
  const bool block_opts = args.index || args.offset || args.size;
  if (scan_opts && cmd != "scan") return Usage("--hex/--from/--to/--limit only go with scan");
  if (block_opts && cmd != "dump-block") {
    return Usage("--index/--offset/--size only go with dump-block");
  }
  if (cmd == "dump-block") {
    if (args.index.has_value() == args.offset.has_value()) {
      return Usage("dump-block needs exactly one of --index and --offset");
    }
    if (args.size && !args.offset) return Usage("--size needs --offset");
  }
  if (const std::string why = tools::NotAFileReason(args.file); !why.empty()) return Usage(why);
  if (args.size) return CmdDumpBlockRaw(args);
  Result<std::unique_ptr<TableReader>> table = Open(args.file);
  if (!table.ok() && table.status().IsCorruption() && (cmd == "props" || cmd == "layout")) {
    return CmdFooterBlocks(args.file, cmd == "props", table.status());
  }
  if (!table.ok()) return Fail(table.status());
  if (cmd == "props") return CmdProps(**table);
  if (cmd == "scan") return CmdScan(**table, args);
  if (cmd == "verify") return CmdVerify(**table);
  if (cmd == "layout") return CmdLayout(**table);
  return CmdDumpBlock(**table, args);
}

}  // namespace
}  // namespace strata::sstable

int main(int argc, char** argv) {
  const int code = strata::sstable::Main(argc, argv);
  return strata::tools::FinishOutput("strata-sst", code, /*error_code=*/2);
}
