#include "strata/status.h"

namespace strata {

const char* StatusCodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk: return "OK";
    case Status::Code::kNotFound: return "NotFound";
    case Status::Code::kCorruption: return "Corruption";
    case Status::Code::kNotSupported: return "NotSupported";
    case Status::Code::kInvalidArgument: return "InvalidArgument";
    case Status::Code::kIOError: return "IOError";
    case Status::Code::kBusy: return "Busy";
    case Status::Code::kAborted: return "Aborted";
    case Status::Code::kAlreadyExists: return "AlreadyExists";
    case Status::Code::kResourceExhausted: return "ResourceExhausted";
    case Status::Code::kFailedPrecondition: return "FailedPrecondition";
    case Status::Code::kTimedOut: return "TimedOut";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string r = StatusCodeName(state_->code);
  if (!state_->message.empty()) {
    r += ": ";
    r += state_->message;
  }
  return r;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return Status();
  std::string msg(context);
  msg += ": ";
  msg += state_->message;
  return Status(state_->code, msg);
}

}  // namespace strata
