// Points where a test may stop an engine thread to force an interleaving
// that is otherwise too narrow to reach. Each is null outside tests, and
// costs one relaxed load where the engine passes it.
#ifndef STRATA_ENGINE_TEST_HOOKS_H_
#define STRATA_ENGINE_TEST_HOOKS_H_

#include <atomic>

namespace strata::engine::test_hooks {

// A point read, after it took its groups' views and before it read its
// snapshot (EngineCore::ReadRowOpenInto).
inline std::atomic<void (*)()> after_row_read_views{nullptr};
// A read session's Get, after it took the table's schema and before its
// lookup holds the close gate (engine/read_session.cc).
inline std::atomic<void (*)()> after_session_schema{nullptr};
// A scan, at the same point as after_row_read_views (EngineCore::Scan).
inline std::atomic<void (*)()> after_scan_views{nullptr};
// A flush, after it synced the log and before it records the flush in the
// manifest (FlushJob::Run).
inline std::atomic<void (*)()> after_flush_log_sync{nullptr};
// A compaction or trivial move, after it recorded its edit in the manifest
// and before it shows the result to readers (VersionSet::InstallCompaction
// and InstallTrivialMove).
inline std::atomic<void (*)()> after_compaction_edit{nullptr};

}  // namespace strata::engine::test_hooks

#endif  // STRATA_ENGINE_TEST_HOOKS_H_
