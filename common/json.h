// Json: a parsed JSON value, and a few writing helpers: string quoting for
// every JSON writer of the project (metrics, tools), and what the etcd client
// needs (etcd's JSON gateway speaks proto3 JSON: 64-bit integers as strings,
// bytes as base64).
//
// The parser takes RFC 8259 text whole (one value, surrounding whitespace
// allowed), nests at most kMaxDepth deep, and keeps numbers as their text.
// It is meant for replies of a server, not for large documents. A Json is an
// immutable value; thread-compatible.
#ifndef STRATA_COMMON_JSON_H_
#define STRATA_COMMON_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/status.h"

namespace strata {

class Json {
 public:
  // Intentionally copyable.
  enum class Type : unsigned char { kNull, kBool, kNumber, kString, kArray, kObject };
  static constexpr int kMaxDepth = 64;

  // The value `text` holds; InvalidArgument (with the offset) when it is not
  // one well-formed JSON value.
  static Result<Json> Parse(std::string_view text);

  Json() = default;

  Type type() const { return type_; }
  bool is_object() const { return type_ == Type::kObject; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_string() const { return type_ == Type::kString; }

  // The member `key` of an object; nullptr when this is not an object or has
  // no such member (the first one when a key repeats).
  const Json* Find(std::string_view key) const;
  // A string's decoded text, or a number's text as written; empty otherwise.
  const std::string& text() const { return text_; }
  // A boolean's value; false for every other type.
  bool boolean() const { return type_ == Type::kBool && text_ == "true"; }
  // An array's elements; empty for every other type.
  const std::vector<Json>& elements() const { return elements_; }
  // An object's members in the order written; empty for every other type.
  const std::vector<std::pair<std::string, Json>>& members() const { return members_; }

  // A proto3 int64: a number or a string holding a decimal integer.
  // InvalidArgument for anything else or out of range.
  Result<int64_t> ToInt64() const;

 private:
  friend class JsonParser;
  Type type_ = Type::kNull;
  std::string text_;
  std::vector<Json> elements_;
  std::vector<std::pair<std::string, Json>> members_;
};

// Member `key` of `object` as an int64 when present, `fallback` when absent
// (proto3 JSON leaves out fields at their default, zero). InvalidArgument
// when present but not an integer.
Result<int64_t> Int64Member(const Json& object, std::string_view key, int64_t fallback = 0);

// `s` as a JSON string literal, quotes included.
std::string JsonQuote(std::string_view s);

// Standard base64 (RFC 4648, with padding), as proto3 JSON writes bytes.
std::string Base64Encode(std::string_view bytes);
// The bytes `text` encodes; accepts the standard and the URL-safe alphabet,
// with or without padding. InvalidArgument for anything else.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace strata

#endif  // STRATA_COMMON_JSON_H_
