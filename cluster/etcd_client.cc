#include "cluster/etcd_client.h"

#include <thread>

#include "common/json.h"

namespace strata::cluster {
namespace {

// gRPC status codes etcd's gateway reports (google.golang.org/grpc/codes).
constexpr int64_t kGrpcInvalidArgument = 3;
constexpr int64_t kGrpcDeadlineExceeded = 4;
constexpr int64_t kGrpcNotFound = 5;
constexpr int64_t kGrpcFailedPrecondition = 9;
constexpr int64_t kGrpcUnavailable = 14;

// Pause between two rounds over every endpoint.
constexpr auto kRetryPause = std::chrono::milliseconds(50);

std::string Short(std::string_view s) {
  return std::string(s.substr(0, 200)) + (s.size() > 200 ? "..." : "");
}

std::string B64(std::string_view s) { return JsonQuote(Base64Encode(s)); }
std::string Num(int64_t v) { return "\"" + std::to_string(v) + "\""; }

// An error reply of the gateway: {"error": ..., "message": ..., "code": N}
// for unary calls, {"error": {"grpc_code": N, "message": ...}} in a stream.
Status GatewayError(std::string_view path, int http_status, const std::string& body,
                    bool* retryable) {
  *retryable = http_status == 503;
  int64_t code = -1;
  std::string message = Short(body);
  Result<Json> j = Json::Parse(body);
  if (j.ok() && j->is_object()) {
    const Json* err = j->Find("error");
    const Json* holder = err != nullptr && err->is_object() ? err : &*j;
    Result<int64_t> c = Int64Member(*holder, holder == err ? "grpc_code" : "code", -1);
    if (c.ok()) code = *c;
    if (const Json* m = holder->Find("message"); m != nullptr && m->is_string()) {
      message = Short(m->text());
    }
  }
  const std::string what = "etcd " + std::string(path) + ": " + message;
  switch (code) {
    case kGrpcInvalidArgument:
      return Status::InvalidArgument(what);
    case kGrpcNotFound:
      return Status::NotFound(what);
    case kGrpcFailedPrecondition:
      return Status::FailedPrecondition(what);
    case kGrpcDeadlineExceeded:
      *retryable = true;
      return Status::TimedOut(what);
    case kGrpcUnavailable:
      *retryable = true;
      return Status::IOError(what);
    default:
      return Status::IOError(what + " (HTTP " + std::to_string(http_status) + ")");
  }
}

Status ParseKeyValue(const Json& j, KeyValue* kv) {
  if (!j.is_object()) return Status::Corruption("etcd: a key-value is not an object");
  if (const Json* k = j.Find("key")) {
    STRATA_ASSIGN_OR_RETURN(kv->key, Base64Decode(k->text()));
  }
  if (const Json* v = j.Find("value")) {
    STRATA_ASSIGN_OR_RETURN(kv->value, Base64Decode(v->text()));
  }
  STRATA_ASSIGN_OR_RETURN(kv->create_revision, Int64Member(j, "create_revision"));
  STRATA_ASSIGN_OR_RETURN(kv->mod_revision, Int64Member(j, "mod_revision"));
  STRATA_ASSIGN_OR_RETURN(kv->version, Int64Member(j, "version"));
  STRATA_ASSIGN_OR_RETURN(kv->lease, Int64Member(j, "lease"));
  return Status::OK();
}

Status ParseHeaderRevision(const Json& j, int64_t* revision) {
  const Json* header = j.Find("header");
  *revision = 0;
  if (header == nullptr) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(*revision, Int64Member(*header, "revision"));
  return Status::OK();
}

Status ParseRange(const Json& j, RangeResult* out) {
  STRATA_RETURN_IF_ERROR(ParseHeaderRevision(j, &out->revision));
  STRATA_ASSIGN_OR_RETURN(out->count, Int64Member(j, "count"));
  if (const Json* more = j.Find("more")) out->more = more->boolean();
  if (const Json* kvs = j.Find("kvs")) {
    for (const Json& e : kvs->elements()) {
      KeyValue kv;
      STRATA_RETURN_IF_ERROR(ParseKeyValue(e, &kv));
      out->kvs.push_back(std::move(kv));
    }
  }
  return Status::OK();
}

Result<Json> ParseReply(std::string_view path, const std::string& body) {
  Result<Json> j = Json::Parse(body);
  if (!j.ok() || !j->is_object()) {
    return Status::Corruption("etcd " + std::string(path) +
                              ": reply is not a JSON object: " + Short(body));
  }
  return j;
}

std::string RangeBody(std::string_view key, std::string_view range_end, int64_t limit) {
  std::string body = "{\"key\":" + B64(key);
  if (!range_end.empty()) body += ",\"range_end\":" + B64(range_end);
  if (limit > 0) body += ",\"limit\":" + Num(limit);
  body += "}";
  return body;
}

std::string PutBody(std::string_view key, std::string_view value, int64_t lease) {
  std::string body = "{\"key\":" + B64(key) + ",\"value\":" + B64(value);
  if (lease != 0) body += ",\"lease\":" + Num(lease);
  body += "}";
  return body;
}

std::string DeleteBody(std::string_view key, std::string_view range_end) {
  std::string body = "{\"key\":" + B64(key);
  if (!range_end.empty()) body += ",\"range_end\":" + B64(range_end);
  body += "}";
  return body;
}

std::string OpBody(const TxnOp& op) {
  switch (op.kind) {
    case TxnOp::Kind::kRange:
      return "{\"request_range\":" + RangeBody(op.key, op.range_end, 0) + "}";
    case TxnOp::Kind::kPut:
      return "{\"request_put\":" + PutBody(op.key, op.value, op.lease) + "}";
    case TxnOp::Kind::kDelete:
      return "{\"request_delete_range\":" + DeleteBody(op.key, op.range_end) + "}";
  }
  return "{}";
}

std::string CompareBody(const Compare& c) {
  static constexpr const char* kOps[] = {"EQUAL", "NOT_EQUAL", "LESS", "GREATER"};
  std::string body = "{\"key\":" + B64(c.key) + ",\"result\":\"" + kOps[static_cast<int>(c.op)] +
                     "\",\"target\":\"";
  switch (c.target) {
    case Compare::Target::kValue:
      body += "VALUE\",\"value\":" + B64(c.value);
      break;
    case Compare::Target::kVersion:
      body += "VERSION\",\"version\":" + Num(c.number);
      break;
    case Compare::Target::kCreateRevision:
      body += "CREATE\",\"create_revision\":" + Num(c.number);
      break;
    case Compare::Target::kModRevision:
      body += "MOD\",\"mod_revision\":" + Num(c.number);
      break;
    case Compare::Target::kLease:
      body += "LEASE\",\"lease\":" + Num(c.number);
      break;
  }
  body += "}";
  return body;
}

template <typename T>
std::string JoinBodies(const std::vector<T>& items, std::string (*one)(const T&)) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ",";
    out += one(items[i]);
  }
  return out + "]";
}

Status ParseEvents(const Json& result, std::vector<WatchEvent>* events) {
  const Json* list = result.Find("events");
  if (list == nullptr) return Status::OK();
  for (const Json& e : list->elements()) {
    WatchEvent event;
    if (const Json* type = e.Find("type"); type != nullptr && type->text() == "DELETE") {
      event.type = WatchEvent::Type::kDelete;
    }
    if (const Json* kv = e.Find("kv")) STRATA_RETURN_IF_ERROR(ParseKeyValue(*kv, &event.kv));
    events->push_back(std::move(event));
  }
  return Status::OK();
}

}  // namespace

Compare Compare::ValueEquals(std::string_view key, std::string_view value) {
  Compare c;
  c.key.assign(key);
  c.target = Target::kValue;
  c.op = Op::kEqual;
  c.value.assign(value);
  return c;
}

Compare Compare::Version(std::string_view key, Op op, int64_t version) {
  Compare c;
  c.key.assign(key);
  c.target = Target::kVersion;
  c.op = op;
  c.number = version;
  return c;
}

Compare Compare::CreateRevision(std::string_view key, Op op, int64_t revision) {
  Compare c = Version(key, op, revision);
  c.target = Target::kCreateRevision;
  return c;
}

Compare Compare::ModRevision(std::string_view key, Op op, int64_t revision) {
  Compare c = Version(key, op, revision);
  c.target = Target::kModRevision;
  return c;
}

TxnOp TxnOp::Get(std::string_view key) { return Range(key, {}); }

TxnOp TxnOp::Range(std::string_view key, std::string_view range_end) {
  TxnOp op;
  op.kind = Kind::kRange;
  op.key.assign(key);
  op.range_end.assign(range_end);
  return op;
}

TxnOp TxnOp::Put(std::string_view key, std::string_view value, int64_t lease) {
  TxnOp op;
  op.kind = Kind::kPut;
  op.key.assign(key);
  op.value.assign(value);
  op.lease = lease;
  return op;
}

TxnOp TxnOp::Delete(std::string_view key, std::string_view range_end) {
  TxnOp op;
  op.kind = Kind::kDelete;
  op.key.assign(key);
  op.range_end.assign(range_end);
  return op;
}

// ---------------------------------------------------------------------------
// EtcdWatch

EtcdWatch::EtcdWatch(std::unique_ptr<HttpConnection> connection)
    : connection_(std::move(connection)) {}

EtcdWatch::~EtcdWatch() = default;

void EtcdWatch::Cancel() { connection_->Shutdown(); }

Result<std::vector<WatchEvent>> EtcdWatch::Next(uint64_t timeout_millis) {
  const Deadline deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_millis);
  while (true) {
    STRATA_ASSIGN_OR_RETURN(std::string line, connection_->NextLine(deadline));
    if (line.empty()) continue;
    STRATA_ASSIGN_OR_RETURN(Json j, ParseReply("/v3/watch", line));
    if (j.Find("error") != nullptr) {
      bool retryable;
      return GatewayError("/v3/watch", 200, line, &retryable);
    }
    const Json* result = j.Find("result");
    if (result == nullptr) continue;
    if (const Json* canceled = result->Find("canceled");
        canceled != nullptr && canceled->boolean()) {
      std::string why = "etcd ended the watch";
      if (const Json* reason = result->Find("cancel_reason")) why += ": " + Short(reason->text());
      Result<int64_t> compacted = Int64Member(*result, "compact_revision");
      if (compacted.ok() && *compacted > 0) {
        why += " (revisions up to " + std::to_string(*compacted) + " were compacted)";
      }
      return Status::Aborted(why);
    }
    std::vector<WatchEvent> events;
    STRATA_RETURN_IF_ERROR(ParseEvents(*result, &events));
    if (!events.empty()) return events;
  }
}

// ---------------------------------------------------------------------------
// EtcdClient

EtcdClient::EtcdClient(EtcdOptions options, std::vector<Endpoint> endpoints)
    : options_(std::move(options)), endpoints_(std::move(endpoints)) {
  idle_.resize(endpoints_.size());
}

Result<std::unique_ptr<EtcdClient>> EtcdClient::Open(const EtcdOptions& options) {
  if (options.endpoints.empty()) return Status::InvalidArgument("etcd: no endpoint given");
  if (options.call_timeout_millis == 0) {
    return Status::InvalidArgument("etcd: call_timeout_millis must be positive");
  }
  std::vector<Endpoint> endpoints;
  for (const std::string& text : options.endpoints) {
    STRATA_ASSIGN_OR_RETURN(Endpoint e, Endpoint::Parse(text));
    endpoints.push_back(std::move(e));
  }
  return std::unique_ptr<EtcdClient>(new EtcdClient(options, std::move(endpoints)));
}

std::unique_ptr<HttpConnection> EtcdClient::TakeConnection(size_t endpoint) {
  while (true) {
    std::unique_ptr<HttpConnection> c;
    {
      MutexLock l(&mu_);
      std::vector<std::unique_ptr<HttpConnection>>& idle = idle_[endpoint];
      if (idle.empty()) return nullptr;
      c = std::move(idle.back());
      idle.pop_back();
    }
    // One the server has closed meanwhile is dropped here, before a request
    // that could not be sent again is written to it.
    if (!c->PeerClosed()) return c;
  }
}

void EtcdClient::ReturnConnection(size_t endpoint, std::unique_ptr<HttpConnection> connection) {
  if (!connection->reusable()) return;
  MutexLock l(&mu_);
  idle_[endpoint].push_back(std::move(connection));
}

Status EtcdClient::Call(std::string_view path, const std::string& body, bool retry_after_send,
                        std::string* reply) {
  const Deadline deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.call_timeout_millis);
  size_t first;
  {
    MutexLock l(&mu_);
    first = preferred_;
  }
  Status last;
  for (int round = 0;; ++round) {
    if (round > 0) {
      if (std::chrono::steady_clock::now() + kRetryPause >= deadline) break;
      std::this_thread::sleep_for(kRetryPause);
    }
    for (size_t i = 0; i < endpoints_.size(); ++i) {
      const size_t e = (first + i) % endpoints_.size();
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::unique_ptr<HttpConnection> conn = TakeConnection(e);
      bool pooled = conn != nullptr;
      if (!pooled) {
        Result<std::unique_ptr<HttpConnection>> c =
            HttpConnection::Connect(endpoints_[e], deadline);
        if (!c.ok()) {
          last = c.status();
          continue;
        }
        conn = std::move(c).value();
      }
      bool sent = false;
      Result<HttpConnection::Response> r = conn->Post(path, body, deadline, &sent);
      // A pooled connection the server closed while idle (a restart) fails
      // at once. Sent again on a fresh one only when nothing was written or
      // repeating is safe: the server may have read the request before the
      // connection broke.
      if (!r.ok() && pooled && r.status().code() == Status::Code::kIOError &&
          (!sent || retry_after_send)) {
        Result<std::unique_ptr<HttpConnection>> c =
            HttpConnection::Connect(endpoints_[e], deadline);
        if (c.ok()) {
          conn = std::move(c).value();
          r = conn->Post(path, body, deadline, &sent);
        }
      }
      if (!r.ok()) {
        last = r.status();
        if (sent && !retry_after_send) {
          return Status::IOError("etcd " + std::string(path) + " at " + endpoints_[e].ToString() +
                                 ": " + std::string(r.status().message()) +
                                 "; the request was sent, its outcome is unknown");
        }
        continue;
      }
      if (r->status != 200) {
        bool retryable = false;
        Status s = GatewayError(path, r->status, r->body, &retryable);
        ReturnConnection(e, std::move(conn));
        if (!retryable) return s;
        last = std::move(s);
        if (!retry_after_send) {
          return Status::IOError(std::string(last.message()) + "; its outcome is unknown");
        }
        continue;
      }
      *reply = std::move(r->body);
      ReturnConnection(e, std::move(conn));
      {
        MutexLock l(&mu_);
        preferred_ = e;
      }
      return Status::OK();
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  return Status::TimedOut(
      "etcd " + std::string(path) + ": no endpoint answered within " +
      std::to_string(options_.call_timeout_millis) + " ms" +
      (last.ok() ? std::string() : " (last error: " + std::string(last.message()) + ")"));
}

Result<RangeResult> EtcdClient::Range(std::string_view key, std::string_view range_end,
                                      int64_t limit) {
  std::string reply;
  STRATA_RETURN_IF_ERROR(
      Call("/v3/kv/range", RangeBody(key, range_end, limit), /*retry_after_send=*/true, &reply));
  STRATA_ASSIGN_OR_RETURN(Json j, ParseReply("/v3/kv/range", reply));
  RangeResult out;
  STRATA_RETURN_IF_ERROR(ParseRange(j, &out));
  return out;
}

Result<KeyValue> EtcdClient::Get(std::string_view key) {
  STRATA_ASSIGN_OR_RETURN(RangeResult r, Range(key, {}));
  if (r.kvs.empty()) return Status::NotFound("etcd: no key '" + Short(key) + "'");
  return std::move(r.kvs.front());
}

Result<int64_t> EtcdClient::Put(std::string_view key, std::string_view value, int64_t lease) {
  std::string reply;
  STRATA_RETURN_IF_ERROR(
      Call("/v3/kv/put", PutBody(key, value, lease), /*retry_after_send=*/false, &reply));
  STRATA_ASSIGN_OR_RETURN(Json j, ParseReply("/v3/kv/put", reply));
  int64_t revision;
  STRATA_RETURN_IF_ERROR(ParseHeaderRevision(j, &revision));
  return revision;
}

Result<int64_t> EtcdClient::Delete(std::string_view key, std::string_view range_end) {
  std::string reply;
  STRATA_RETURN_IF_ERROR(Call("/v3/kv/deleterange", DeleteBody(key, range_end),
                              /*retry_after_send=*/false, &reply));
  STRATA_ASSIGN_OR_RETURN(Json j, ParseReply("/v3/kv/deleterange", reply));
  return Int64Member(j, "deleted");
}

Result<TxnResult> EtcdClient::Txn(const std::vector<Compare>& compares,
                                  const std::vector<TxnOp>& success,
                                  const std::vector<TxnOp>& failure) {
  const std::string body = "{\"compare\":" + JoinBodies(compares, &CompareBody) +
                           ",\"success\":" + JoinBodies(success, &OpBody) +
                           ",\"failure\":" + JoinBodies(failure, &OpBody) + "}";
  std::string reply;
  STRATA_RETURN_IF_ERROR(Call("/v3/kv/txn", body, /*retry_after_send=*/false, &reply));
  STRATA_ASSIGN_OR_RETURN(Json j, ParseReply("/v3/kv/txn", reply));
  TxnResult out;
  STRATA_RETURN_IF_ERROR(ParseHeaderRevision(j, &out.revision));
  if (const Json* s = j.Find("succeeded")) out.succeeded = s->boolean();
  if (const Json* responses = j.Find("responses")) {
    for (const Json& r : responses->elements()) {
      if (const Json* range = r.Find("response_range")) {
        RangeResult rr;
        STRATA_RETURN_IF_ERROR(ParseRange(*range, &rr));
        out.ranges.push_back(std::move(rr));
      }
    }
  }
  return out;
}

Result<std::pair<int64_t, int64_t>> EtcdClient::GrantLease(int64_t ttl_seconds) {
  if (ttl_seconds <= 0) return Status::InvalidArgument("etcd: a lease TTL must be positive");
  std::string reply;
  STRATA_RETURN_IF_ERROR(Call("/v3/lease/grant", "{\"TTL\":" + Num(ttl_seconds) + "}",
                              /*retry_after_send=*/true, &reply));
  STRATA_ASSIGN_OR_RETURN(Json j, ParseReply("/v3/lease/grant", reply));
  if (const Json* err = j.Find("error"); err != nullptr && !err->text().empty()) {
    return Status::IOError("etcd /v3/lease/grant: " + Short(err->text()));
  }
  STRATA_ASSIGN_OR_RETURN(int64_t id, Int64Member(j, "ID"));
  STRATA_ASSIGN_OR_RETURN(int64_t ttl, Int64Member(j, "TTL"));
  if (id == 0) return Status::Corruption("etcd /v3/lease/grant: no lease id in " + Short(reply));
  return std::make_pair(id, ttl);
}

Result<int64_t> EtcdClient::KeepAliveOnce(int64_t lease) {
  std::string reply;
  STRATA_RETURN_IF_ERROR(Call("/v3/lease/keepalive", "{\"ID\":" + Num(lease) + "}",
                              /*retry_after_send=*/true, &reply));
  // A stream of one message: {"result": {...}} or {"error": {...}}.
  const size_t eol = reply.find('\n');
  if (eol != std::string::npos) reply.resize(eol);
  STRATA_ASSIGN_OR_RETURN(Json j, ParseReply("/v3/lease/keepalive", reply));
  if (j.Find("error") != nullptr) {
    bool retryable;
    return GatewayError("/v3/lease/keepalive", 200, reply, &retryable);
  }
  const Json* result = j.Find("result");
  if (result == nullptr) return Status::Corruption("etcd /v3/lease/keepalive: " + Short(reply));
  STRATA_ASSIGN_OR_RETURN(int64_t ttl, Int64Member(*result, "TTL"));
  if (ttl <= 0) return Status::NotFound("etcd: lease " + std::to_string(lease) + " has expired");
  return ttl;
}

Status EtcdClient::RevokeLease(int64_t lease) {
  std::string reply;
  return Call("/v3/lease/revoke", "{\"ID\":" + Num(lease) + "}", /*retry_after_send=*/true, &reply);
}

Result<int64_t> EtcdClient::LeaseTimeToLive(int64_t lease) {
  std::string reply;
  STRATA_RETURN_IF_ERROR(Call("/v3/lease/timetolive", "{\"ID\":" + Num(lease) + "}",
                              /*retry_after_send=*/true, &reply));
  STRATA_ASSIGN_OR_RETURN(Json j, ParseReply("/v3/lease/timetolive", reply));
  STRATA_ASSIGN_OR_RETURN(int64_t ttl, Int64Member(j, "TTL"));
  if (ttl < 0) return Status::NotFound("etcd: lease " + std::to_string(lease) + " does not exist");
  return ttl;
}

Result<std::unique_ptr<EtcdWatch>> EtcdClient::Watch(std::string_view key,
                                                     std::string_view range_end,
                                                     int64_t start_revision) {
  std::string request = "{\"create_request\":{\"key\":" + B64(key);
  if (!range_end.empty()) request += ",\"range_end\":" + B64(range_end);
  if (start_revision > 0) request += ",\"start_revision\":" + Num(start_revision);
  request += "}}";
  const Deadline deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.call_timeout_millis);
  size_t first;
  {
    MutexLock l(&mu_);
    first = preferred_;
  }
  Status last = Status::TimedOut("etcd /v3/watch: no endpoint answered within " +
                                 std::to_string(options_.call_timeout_millis) + " ms");
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    const size_t e = (first + i) % endpoints_.size();
    Result<std::unique_ptr<HttpConnection>> c = HttpConnection::Connect(endpoints_[e], deadline);
    if (!c.ok()) {
      last = c.status();
      continue;
    }
    int status = 0;
    std::string error_body;
    Status s = (*c)->PostStream("/v3/watch", request, deadline, &status, &error_body);
    if (!s.ok()) {
      last = std::move(s);
      continue;
    }
    if (status != 200) {
      bool retryable;
      last = GatewayError("/v3/watch", status, error_body, &retryable);
      if (!retryable) return last;
      continue;
    }
    // The first message confirms the watch.
    Result<std::string> line = (*c)->NextLine(deadline);
    if (!line.ok()) {
      last = line.status();
      continue;
    }
    Result<Json> j = ParseReply("/v3/watch", *line);
    if (!j.ok()) return j.status();
    const Json* result = j->Find("result");
    const Json* created = result == nullptr ? nullptr : result->Find("created");
    if (created == nullptr || !created->boolean()) {
      bool retryable;
      return j->Find("error") != nullptr
                 ? GatewayError("/v3/watch", 200, *line, &retryable)
                 : Status::Corruption("etcd /v3/watch: unexpected first message " + Short(*line));
    }
    return std::unique_ptr<EtcdWatch>(new EtcdWatch(std::move(c).value()));
  }
  return last;
}

std::string EtcdClient::PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key: etcd reads "\0" as "to the end"
}

}  // namespace strata::cluster
