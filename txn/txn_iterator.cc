#include "txn/txn_iterator.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "txn/records.h"

namespace strata::txn {

TxnIterator::TxnIterator(TransactionImpl* txn, std::shared_ptr<RowStore> store, std::string table,
                         std::string start_row, std::string end_row,
                         std::unique_ptr<RowIterator> rows, WriteRef buffered,
                         WriteRef buffered_end, std::vector<std::string> columns)
    : txn_(txn),
      store_(std::move(store)),
      table_(std::move(table)),
      start_row_(std::move(start_row)),
      end_row_(std::move(end_row)),
      rows_(std::move(rows)),
      buffered_(buffered),
      buffered_end_(buffered_end),
      columns_(std::move(columns)) {
  FillStoreRow();
  Settle();
}

void TxnIterator::Next() {
  Advance();
  Settle();
}

void TxnIterator::Seek(std::string_view row) {
  if (!status_.ok()) return;
  const std::string_view target = row < start_row_ ? std::string_view(start_row_) : row;
  rows_->Seek(target);
  FillStoreRow();
  if (!end_row_.empty() && target >= end_row_) {
    buffered_ = buffered_end_;
  } else {
    buffered_ = txn_->writes().lower_bound(TxnKey{table_, std::string(target), ""});
  }
  Settle();
}

bool TxnIterator::WantColumn(const std::string& column) const {
  return columns_.empty() || std::find(columns_.begin(), columns_.end(), column) != columns_.end();
}

void TxnIterator::FillStoreRow() {
  store_entries_.clear();
  store_pos_ = 0;
  while (status_.ok() && rows_->Valid()) {
    store_row_.assign(rows_->row());
    // Cells come grouped by family in schema order (data, write, lock),
    // each family's by qualifier, one version per column: the write and
    // lock cells are two runs in column order, walked side by side.
    const std::vector<CellView>& cells = rows_->cell_views();
    write_cells_.clear();
    lock_cells_.clear();
    for (const CellView& cell : cells) {
      if (cell.family == kWriteFamily) write_cells_.push_back(&cell);
      if (cell.family == kLockFamily) lock_cells_.push_back(&cell);
    }
    size_t w = 0;
    size_t l = 0;
    while (w < write_cells_.size() || l < lock_cells_.size()) {
      const CellView* write = nullptr;
      const CellView* lock_cell = nullptr;
      if (l == lock_cells_.size() ||
          (w < write_cells_.size() && write_cells_[w]->qualifier <= lock_cells_[l]->qualifier)) {
        write = write_cells_[w++];
      }
      if (l < lock_cells_.size() &&
          (write == nullptr || lock_cells_[l]->qualifier == write->qualifier)) {
        lock_cell = lock_cells_[l++];
      }
      const std::string_view column = write != nullptr ? write->qualifier : lock_cell->qualifier;
      TxnKey key{table_, store_row_, std::string(column)};
      Result<std::optional<std::string>> value = std::optional<std::string>();
      bool reread = false;
      if (lock_cell != nullptr) {
        LockRecord lock;
        Status s = DecodeLock(lock_cell->value, &lock);
        if (!s.ok()) {
          status_ = s;
          return;
        }
        if (lock.kind == MutationKind::kLock) {
          s = txn_->CleanUpLockKind(key, lock);
          if (!s.ok()) {
            status_ = s;
            return;
          }
        }
        reread = txn_->LockBlocksRead(lock, txn_->start_ts());
      }
      if (reread) {
        value = txn_->ReadCommitted(*store_, key);
      } else if (write != nullptr) {
        WriteRecord record;
        Status s = DecodeWrite(write->value, &record);
        if (!s.ok()) {
          status_ = s;
          return;
        }
        value = txn_->ValueFromWrite(*store_, key, write->timestamp, std::move(record));
      }
      if (!value.ok()) {
        status_ = value.status();
        return;
      }
      if (value->has_value()) {
        store_entries_.push_back(Entry{std::string(column), std::move(**value)});
      }
    }
    rows_->Next();
    if (!store_entries_.empty()) {
      status_ = txn_->CheckSnapshotHeld();
      if (!status_.ok()) store_entries_.clear();
      return;
    }
  }
  if (status_.ok()) status_ = rows_->status();
  if (status_.ok()) status_ = txn_->CheckSnapshotHeld();
  store_row_.clear();
}

void TxnIterator::Settle() {
  valid_ = false;
  while (status_.ok() && (StoreValid() || BufferedValid())) {
    int cmp;
    if (!StoreValid()) {
      cmp = 1;
    } else if (!BufferedValid()) {
      cmp = -1;
    } else {
      const TxnKey& b = buffered_->first;
      cmp = store_row_.compare(b.row);
      if (cmp == 0) cmp = store_entries_[store_pos_].column.compare(b.column);
      cmp = cmp < 0 ? -1 : (cmp > 0 ? 1 : 0);
    }
    if (cmp < 0) {
      row_ = store_row_;
      column_ = store_entries_[store_pos_].column;
      value_ = store_entries_[store_pos_].value;
      from_ = kStore;
      valid_ = true;
      return;
    }
    const PendingWrite& w = buffered_->second;
    if (!WantColumn(buffered_->first.column) || w.kind == MutationKind::kDelete ||
        (w.kind == MutationKind::kLock && cmp != 0)) {
      // Erased here (hide the stored value too), or not a value.
      if (cmp == 0 && w.kind == MutationKind::kDelete) StepStore();
      ++buffered_;
      continue;
    }
    row_ = buffered_->first.row;
    column_ = buffered_->first.column;
    if (w.kind == MutationKind::kLock) {
      value_ = store_entries_[store_pos_].value;  // cmp == 0: the stored value
    } else {
      value_ = w.value;
    }
    from_ = cmp == 0 ? kBoth : kBuffer;
    valid_ = true;
    return;
  }
}

void TxnIterator::StepStore() {
  if (++store_pos_ >= store_entries_.size()) FillStoreRow();
}

void TxnIterator::Advance() {
  if (from_ == kStore || from_ == kBoth) StepStore();
  if (from_ == kBuffer || from_ == kBoth) ++buffered_;
}

// TransactionImpl::Scan, here with the iterator it builds.
Result<std::unique_ptr<TransactionIterator>> TransactionImpl::Scan(
    std::string_view table, std::string_view start_row, std::string_view end_row,
    const std::vector<std::string>& columns) {
  STRATA_RETURN_IF_ERROR(CheckOpen());
  if (table.empty()) return Status::InvalidArgument("empty table name");
  if (!end_row.empty() && start_row > end_row) {
    return Status::InvalidArgument("scan start row is after its end row");
  }
  for (const std::string& c : columns) {
    if (c.empty()) return Status::InvalidArgument("empty column name in a scan");
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RowStore> store, StoreFor(std::string(table)));
  ScanSpec spec;
  spec.start_row = std::string(start_row);
  spec.end_row = std::string(end_row);
  if (columns.empty()) {
    spec.filter.families = {std::string(kWriteFamily), std::string(kLockFamily)};
  } else {
    for (const std::string& c : columns) {
      spec.filter.columns.push_back(std::make_pair(std::string(kWriteFamily), c));
      spec.filter.columns.push_back(std::make_pair(std::string(kLockFamily), c));
    }
  }
  spec.filter.max_timestamp = start_ts_;
  spec.filter.max_versions = 1;
  // The scan's snapshot is taken below: every one-phase commit in the range
  // that it must see is written before it (txn/FORMAT.md, "One-phase commit").
  db_->latches()->WaitForRange(table, start_row, end_row, start_ts_);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RowIterator> rows, store->Scan(ReadOptions(), spec));
  auto lo = writes_.lower_bound(TxnKey{std::string(table), std::string(start_row), ""});
  auto hi = end_row.empty()
                ? writes_.lower_bound(TxnKey{std::string(table) + '\0', "", ""})
                : writes_.lower_bound(TxnKey{std::string(table), std::string(end_row), ""});
  return std::unique_ptr<TransactionIterator>(
      new TxnIterator(this, std::move(store), std::string(table), std::string(start_row),
                      std::string(end_row), std::move(rows), lo, hi, columns));
}

}  // namespace strata::txn
