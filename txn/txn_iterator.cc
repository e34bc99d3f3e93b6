#include "txn/txn_iterator.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "txn/records.h"

namespace strata::txn {

TxnIterator::TxnIterator(TransactionImpl* txn, std::shared_ptr<RowStore> store, std::string table,
                         std::unique_ptr<RowIterator> rows, WriteRef buffered,
                         WriteRef buffered_end, std::vector<std::string> columns)
    : txn_(txn),
      store_(std::move(store)),
      table_(std::move(table)),
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

bool TxnIterator::WantColumn(const std::string& column) const {
  return columns_.empty() || std::find(columns_.begin(), columns_.end(), column) != columns_.end();
}

void TxnIterator::FillStoreRow() {
  store_entries_.clear();
  store_pos_ = 0;
  while (status_.ok() && rows_->Valid()) {
    store_row_.assign(rows_->row());
    const std::vector<Cell>& cells = rows_->cells();
    // Cells come grouped by family (lock before write? by schema order:
    // data, write, lock), so collect per column first.
    std::map<std::string, std::pair<const Cell*, const Cell*>> by_column;  // write, lock
    for (const Cell& cell : cells) {
      auto& slot = by_column[cell.qualifier];
      if (cell.family == kWriteFamily) slot.first = &cell;
      if (cell.family == kLockFamily) slot.second = &cell;
    }
    for (auto& [column, slot] : by_column) {
      TxnKey key{table_, store_row_, column};
      Result<std::optional<std::string>> value = std::optional<std::string>();
      bool reread = false;
      if (slot.second != nullptr) {
        LockRecord lock;
        Status s = DecodeLock(slot.second->value, &lock);
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
      } else if (slot.first != nullptr) {
        WriteRecord record;
        Status s = DecodeWrite(slot.first->value, &record);
        if (!s.ok()) {
          status_ = s;
          return;
        }
        value = txn_->ValueFromWrite(*store_, key, slot.first->timestamp, std::move(record));
      }
      if (!value.ok()) {
        status_ = value.status();
        return;
      }
      if (value->has_value()) store_entries_.push_back(Entry{column, std::move(**value)});
    }
    rows_->Next();
    if (!store_entries_.empty()) return;
  }
  if (status_.ok()) status_ = rows_->status();
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

}  // namespace strata::txn
