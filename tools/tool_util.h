// Argument and path checks the command-line tools share.
#ifndef STRATA_TOOLS_TOOL_UTIL_H_
#define STRATA_TOOLS_TOOL_UTIL_H_

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace strata::tools {

// A decimal number: digits only (no sign, space, 0x or octal prefix), no
// overflow. False for anything else.
inline bool ParseDecimal(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

// The value of the option in argv[*i], whose name ends at `eq` (npos: the
// whole argument is the name): what follows '=', or else the next argument,
// which *i then moves past. nullopt when there is neither.
inline std::optional<std::string> OptionValue(const std::string& arg, size_t eq, int argc,
                                              char** argv, int* i) {
  if (eq != std::string::npos) return arg.substr(eq + 1);
  if (*i + 1 < argc) return std::string(argv[++*i]);
  return std::nullopt;
}

// Why `path` is not something the tools read, or "" when it is a regular
// file, a directory or missing (the open reports that). A FIFO or a device
// would block the open or never end.
inline std::string NotAFileReason(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "";
  if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return "";
  return path + ": not a regular file or directory";
}

// Flushes standard output and returns `code`, or `error_code` (after saying
// why on standard error) when anything written to it was lost: a dump
// redirected to a full disk must not look like a success.
inline int FinishOutput(const char* tool, int code, int error_code) {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return code;
  const int err = errno;
  std::fprintf(stderr, "%s: writing the output failed: %s\n", tool,
               err != 0 ? std::strerror(err) : "write error");
  return error_code;
}

}  // namespace strata::tools

#endif  // STRATA_TOOLS_TOOL_UTIL_H_
