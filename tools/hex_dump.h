// HexDump: the classic 16-bytes-a-line hex and ASCII view the tools print.
#ifndef STRATA_TOOLS_HEX_DUMP_H_
#define STRATA_TOOLS_HEX_DUMP_H_

#include <cinttypes>
#include <cstdint>
#include <cstdio>

#include "strata/slice.h"

namespace strata::tools {

// Each line: `indent`, the offset (base + position) in `offset_digits` hex
// digits, 16 bytes in hex, and the printable ones between bars.
inline void HexDump(const Slice& data, uint64_t base, const char* indent, int offset_digits) {
  for (size_t i = 0; i < data.size(); i += 16) {
    std::printf("%s%0*" PRIx64 " ", indent, offset_digits, base + i);
    for (size_t j = 0; j < 16; j++) {
      if (i + j < data.size()) {
        std::printf(" %02x", static_cast<uint8_t>(data[i + j]));
      } else {
        std::printf("   ");
      }
    }
    std::printf("  |");
    for (size_t j = 0; j < 16 && i + j < data.size(); j++) {
      const char c = data[i + j];
      std::putchar(c >= 0x20 && c < 0x7f ? c : '.');
    }
    std::printf("|\n");
  }
}

}  // namespace strata::tools

#endif  // STRATA_TOOLS_HEX_DUMP_H_
