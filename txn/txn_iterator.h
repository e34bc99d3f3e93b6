// TxnIterator: the TransactionIterator that TransactionImpl::Scan returns.
// It walks the store's rows of the range (write and lock families, newest
// version at or below start_ts) and the transaction's own buffered writes,
// merged in (row, column) order; a buffered write hides the stored value of
// its key, and an erase hides it altogether.
//
// Thread-compatible, like its transaction. It must not outlive the
// transaction: it reads through it (resolving the locks it meets) and walks
// its buffered writes, which a Rollback leaves in place.
//
// Invariants: store_entries_ holds the visible values of the store row
// store_row_, in column order, and store_pos_ the next one; buffered_ is the
// next buffered write of the range. While Valid(), row()/column()/value()
// are the smaller of the two streams' heads (from_ says which); an error
// sticks in status() and ends the iteration.
#ifndef STRATA_TXN_TXN_ITERATOR_H_
#define STRATA_TXN_TXN_ITERATOR_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "strata/row_store.h"
#include "strata/status.h"
#include "strata/transaction.h"
#include "txn/transaction.h"

namespace strata::txn {

class TxnIterator final : public TransactionIterator {
 public:
  // `rows` scans `table`'s store over [start_row, end_row) (an empty end is
  // open); [buffered, buffered_end) are the transaction's writes of the same
  // range; `columns` empty means every column.
  TxnIterator(TransactionImpl* txn, std::shared_ptr<RowStore> store, std::string table,
              std::string start_row, std::string end_row, std::unique_ptr<RowIterator> rows,
              WriteRef buffered, WriteRef buffered_end, std::vector<std::string> columns);
  TxnIterator(const TxnIterator&) = delete;
  TxnIterator& operator=(const TxnIterator&) = delete;

  bool Valid() const override { return valid_; }
  void Next() override;
  void Seek(std::string_view row) override;
  std::string_view row() const override { return row_; }
  std::string_view column() const override { return column_; }
  std::string_view value() const override { return value_; }
  Status status() const override { return status_; }

 private:
  struct Entry {
    std::string column;
    std::string value;
  };

  bool WantColumn(const std::string& column) const;
  // Loads the next store row that has a visible value into store_row_.
  void FillStoreRow();
  bool StoreValid() const { return store_pos_ < store_entries_.size(); }
  bool BufferedValid() const { return buffered_ != buffered_end_; }
  // Picks the smaller of the two streams; skips what the buffer erased.
  void Settle();
  void StepStore();
  void Advance();

  enum From { kStore, kBuffer, kBoth };
  TransactionImpl* const txn_;
  std::shared_ptr<RowStore> store_;
  const std::string table_;
  const std::string start_row_;
  const std::string end_row_;
  std::unique_ptr<RowIterator> rows_;
  WriteRef buffered_;
  const WriteRef buffered_end_;
  const std::vector<std::string> columns_;
  std::string store_row_;
  std::vector<Entry> store_entries_;
  // Scratch of FillStoreRow: the row's write and lock cells.
  std::vector<const CellView*> write_cells_;
  std::vector<const CellView*> lock_cells_;
  size_t store_pos_ = 0;
  bool valid_ = false;
  From from_ = kStore;
  std::string row_;
  std::string column_;
  std::string value_;
  Status status_;
};

}  // namespace strata::txn

#endif  // STRATA_TXN_TXN_ITERATOR_H_
