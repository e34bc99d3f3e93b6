// Fuzzes the decoders of the transaction layer's records and of the files
// beside them: lock and write records (txn/records.h), the GC's progress log
// (gc/progress_log.h) and the instance-id file (txn/instance_id_file.h). The
// first input byte picks the decoder. A lock or write record that decodes
// must encode to bytes that decode to the same record; a progress log that
// decodes must decode the same way twice.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "gc/progress_log.h"
#include "txn/instance_id_file.h"
#include "txn/records.h"

using namespace strata;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      txn::LockRecord lock;
      if (!txn::DecodeLock(input, &lock).ok()) break;
      const std::string once = txn::EncodeLock(lock);
      txn::LockRecord again;
      FUZZ_CHECK(txn::DecodeLock(once, &again).ok());
      FUZZ_CHECK(again == lock);
      break;
    }
    case 1: {
      txn::WriteRecord write;
      if (!txn::DecodeWrite(input, &write).ok()) break;
      const std::string once = txn::EncodeWrite(write);
      txn::WriteRecord again;
      FUZZ_CHECK(txn::DecodeWrite(once, &again).ok());
      FUZZ_CHECK(again == write);
      break;
    }
    case 2: {
      gc::RoundProgress progress;
      bool torn = false;
      if (!gc::ProgressLog::Decode(input, "progress", &progress, &torn).ok()) break;
      gc::RoundProgress again;
      bool again_torn = false;
      FUZZ_CHECK(gc::ProgressLog::Decode(input, "progress", &again, &again_torn).ok());
      FUZZ_CHECK(again == progress && again_torn == torn);
      break;
    }
    default: {
      uint64_t id = 0;
      (void)txn::DecodeInstanceIdFile(input, "instance-id", &id);
      break;
    }
  }
  return 0;
}
