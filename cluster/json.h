// The JSON helpers moved to common/json.h; this name stays for code that
// still includes it.
#ifndef STRATA_CLUSTER_JSON_H_
#define STRATA_CLUSTER_JSON_H_

#include "common/json.h"

namespace strata::cluster {
using strata::Base64Decode;
using strata::Base64Encode;
using strata::Int64Member;
using strata::Json;
using strata::JsonQuote;
}  // namespace strata::cluster

#endif  // STRATA_CLUSTER_JSON_H_
