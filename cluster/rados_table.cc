// A RADOS table's etcd key and tablet objects (rados_table.h).
#include "cluster/rados_table.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <random>
#include <sstream>

#include "cluster/rados_keys.h"
#include "engine/schema.h"

namespace strata::cluster {
namespace {

constexpr char kHeader[] = "strata-rados-table 1";

std::string Hex(std::string_view bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

bool Unhex(std::string_view hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  auto digit = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = digit(hex[i]), lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi << 4 | lo));
  }
  return true;
}

}  // namespace

std::string RadosTableInfo::Encode() const {
  std::string out = std::string(kHeader) + "\nfamilies " + std::to_string(families.size()) + "\n";
  for (const std::string& f : families) out += f + "\n";
  out += "tablets " + std::to_string(tablets.size()) + "\n";
  for (const RadosTablet& t : tablets) {
    out += (t.start_row.empty() ? "-" : Hex(t.start_row)) + " " + t.object + " " + t.epoch + "\n";
  }
  return out;
}

Result<RadosTableInfo> RadosTableInfo::Decode(std::string_view text) {
  std::istringstream in{std::string(text)};
  auto bad = [](const std::string& why) {
    return Status::Corruption("RADOS table description: " + why);
  };
  std::string line, word;
  if (!std::getline(in, line) || line != kHeader) return bad("unknown header '" + line + "'");
  RadosTableInfo info;
  size_t n = 0;
  if (!(in >> word >> n) || word != "families") return bad("no family count");
  std::getline(in, line);
  for (size_t i = 0; i < n; i++) {
    if (!std::getline(in, line) || line.empty()) return bad("family " + std::to_string(i));
    info.families.push_back(line);
  }
  if (!(in >> word >> n) || word != "tablets" || n == 0) return bad("no tablet count");
  for (size_t i = 0; i < n; i++) {
    RadosTablet t;
    std::string start;
    if (!(in >> start >> t.object >> t.epoch)) return bad("tablet " + std::to_string(i));
    if (start != "-" && (!Unhex(start, &t.start_row) || t.start_row.empty())) {
      return bad("tablet " + std::to_string(i) + " start row");
    }
    if ((i == 0) != t.start_row.empty() ||
        (i > 0 && t.start_row <= info.tablets.back().start_row)) {
      return bad("tablet " + std::to_string(i) + " out of order");
    }
    info.tablets.push_back(std::move(t));
  }
  return info;
}

size_t RadosTableInfo::TabletFor(std::string_view row) const {
  auto it =
      std::upper_bound(tablets.begin(), tablets.end(), row,
                       [](std::string_view r, const RadosTablet& t) { return r < t.start_row; });
  return static_cast<size_t>(it - tablets.begin()) - 1;
}

const std::string& RadosTableInfo::TabletEnd(size_t i) const {
  static const std::string kNone;
  return i + 1 < tablets.size() ? tablets[i + 1].start_row : kNone;
}

std::string RadosTableKey(std::string_view root, std::string_view name) {
  return std::string(root) + "/rados/tables/" + std::string(name) + "/map";
}

Status ValidateRadosTable(const std::string& name, const TableSchema& schema,
                          const std::vector<std::string>& split_rows) {
  if (name.empty() || name.size() > 128 || !std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
      })) {
    return Status::InvalidArgument("RADOS table name '" + name +
                                   "': use 1 to 128 bytes of [A-Za-z0-9_.-]");
  }
  Result<engine::Schema> s = engine::Schema::FromUser(schema);
  if (!s.ok()) return s.status();
  if (schema.families.size() > rados_keys::kMaxFamilyId) {
    return Status::InvalidArgument("a RADOS table has at most " +
                                   std::to_string(rados_keys::kMaxFamilyId) + " families");
  }
  for (size_t i = 0; i < split_rows.size(); i++) {
    if (split_rows[i].empty() || (i > 0 && split_rows[i] <= split_rows[i - 1])) {
      return Status::InvalidArgument("split rows must be non-empty, sorted and distinct (row " +
                                     std::to_string(i) + ")");
    }
  }
  return Status::OK();
}

Status CreateRadosTableIn(EtcdClient* etcd, const RadosCluster& rados, std::string_view root,
                          const std::string& name, const TableSchema& schema,
                          const std::vector<std::string>& split_rows) {
  STRATA_RETURN_IF_ERROR(ValidateRadosTable(name, schema, split_rows));
  const std::string key = RadosTableKey(root, name);
  RadosTableInfo info;
  for (const ColumnFamilyOptions& f : schema.families) info.families.push_back(f.name);
  // A fresh id per incarnation: a table dropped and created again never
  // meets the old objects.
  std::random_device random;
  const uint64_t id = (uint64_t{random()} << 32) | random();
  std::vector<std::string> starts = {""};
  starts.insert(starts.end(), split_rows.begin(), split_rows.end());
  for (size_t i = 0; i < starts.size(); i++) {
    char object[64];
    std::snprintf(object, sizeof(object), ".%016llx.%zu", static_cast<unsigned long long>(id), i);
    info.tablets.push_back(RadosTablet{starts[i], "strata." + name + object, "1"});
  }
  // The objects first: a map in etcd never names an object that is not there.
  std::vector<std::unique_ptr<RadosWriteOp>> ops;
  std::vector<std::unique_ptr<RadosCall>> calls;
  for (const RadosTablet& t : info.tablets) {
    ops.push_back(std::make_unique<RadosWriteOp>());
    ops.back()->CreateExclusive();
    ops.back()->SetXattr(kEpochXattr, t.epoch);
    calls.push_back(std::make_unique<RadosCall>());
    calls.back()->Start(rados, t.object, ops.back().get());
  }
  Status status;
  for (size_t i = 0; i < calls.size(); i++) {
    const int rc = calls[i]->Wait();
    if (rc < 0 && status.ok()) status = RadosError(rc, "creating object " + info.tablets[i].object);
  }
  if (status.ok()) {
    Result<TxnResult> txn = etcd->Txn({Compare::Version(key, Compare::Op::kEqual, 0)},
                                      {TxnOp::Put(key, info.Encode())});
    if (!txn.ok()) {
      // The map may have been written all the same: then the table is
      // created. Otherwise its objects stay, empty: a map written later
      // by this very request must not name removed objects.
      Result<RadosTableInfo> now = LoadRadosTable(etcd, root, name);
      if (now.ok() && !now->tablets.empty() && now->tablets[0].object == info.tablets[0].object) {
        return Status::OK();
      }
      return txn.status();
    }
    if (!txn->succeeded) status = Status::AlreadyExists("RADOS table '" + name + "' exists");
  }
  if (!status.ok()) {
    for (const RadosTablet& t : info.tablets) {
      RadosWriteOp remove;
      remove.Remove();
      RadosCall call;
      call.Start(rados, t.object, &remove);
      call.Wait();  // best effort: an object left behind holds nothing
    }
  }
  return status;
}

Result<RadosTableInfo> LoadRadosTable(EtcdClient* etcd, std::string_view root,
                                      std::string_view name) {
  Result<KeyValue> kv = etcd->Get(RadosTableKey(root, name));
  if (!kv.ok()) {
    if (kv.status().IsNotFound()) {
      return Status::NotFound("RADOS table '" + std::string(name) + "' does not exist");
    }
    return kv.status();
  }
  Result<RadosTableInfo> info = RadosTableInfo::Decode(kv->value);
  if (!info.ok()) return info.status();
  info->mod_revision = kv->mod_revision;
  return info;
}

Result<std::map<std::string, RadosTableInfo>> LoadRadosTables(EtcdClient* etcd,
                                                              std::string_view root) {
  const std::string prefix = std::string(root) + "/rados/tables/";
  STRATA_ASSIGN_OR_RETURN(RangeResult range, etcd->Range(prefix, EtcdClient::PrefixEnd(prefix)));
  std::map<std::string, RadosTableInfo> tables;
  constexpr std::string_view kSuffix = "/map";
  for (KeyValue& kv : range.kvs) {
    std::string_view name(kv.key);
    name.remove_prefix(prefix.size());
    if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) continue;
    name.remove_suffix(kSuffix.size());
    Result<RadosTableInfo> info = RadosTableInfo::Decode(kv.value);
    if (!info.ok()) {
      return Status::Corruption("RADOS table '" + std::string(name) +
                                "': " + std::string(info.status().message()));
    }
    info->mod_revision = kv.mod_revision;
    tables.emplace(std::string(name), std::move(info).value());
  }
  return tables;
}

Status DropRadosTableIn(EtcdClient* etcd, const RadosCluster& rados, std::string_view root,
                        const std::string& name) {
  Result<RadosTableInfo> info = LoadRadosTable(etcd, root, name);
  if (!info.ok()) return info.status();
  const std::string key = RadosTableKey(root, name);
  Result<TxnResult> txn = etcd->Txn(
      {Compare::ModRevision(key, Compare::Op::kEqual, info->mod_revision)}, {TxnOp::Delete(key)});
  if (!txn.ok()) return txn.status();
  if (!txn->succeeded) return Status::Aborted("RADOS table '" + name + "' changed while dropped");
  Status status;
  for (const RadosTablet& t : info->tablets) {
    RadosWriteOp remove;
    remove.Remove();
    RadosCall call;
    call.Start(rados, t.object, &remove);
    const int rc = call.Wait();
    if (rc < 0 && rc != -ENOENT && status.ok()) {
      status = RadosError(rc, "removing object " + t.object);
    }
  }
  return status;
}

}  // namespace strata::cluster
