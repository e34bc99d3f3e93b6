// strata/rados.h in a build without the row store on RADOS
// (-DSTRATA_WITH_RADOS=OFF): every function answers NotSupported, and
// nothing links librados.
#include "strata/rados.h"

namespace strata {
namespace {

Status NotBuilt() {
  return Status::NotSupported(
      "Strata was built without the row store on RADOS (-DSTRATA_WITH_RADOS=OFF)");
}

}  // namespace

Status CreateRadosTable(const RadosOptions&, const std::string&, const TableSchema&,
                        const std::vector<std::string>&) {
  return NotBuilt();
}

Status SplitRadosTablet(const RadosOptions&, const std::string&, const std::string&) {
  return NotBuilt();
}

Result<int> SplitLargeRadosTablets(const RadosOptions&, const std::string&, uint64_t) {
  return NotBuilt();
}

Status DropRadosTable(const RadosOptions&, const std::string&) { return NotBuilt(); }

Result<std::unique_ptr<RowStore>> OpenRadosRowStore(const RadosOptions&, const std::string&) {
  return NotBuilt();
}

Result<std::unique_ptr<TransactionDB>> OpenRadosTransactionDB(std::shared_ptr<TransactionServices>,
                                                              const RadosOptions&,
                                                              const TransactionDBOptions&) {
  return NotBuilt();
}

}  // namespace strata
