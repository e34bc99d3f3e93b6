// Statistics for monitoring systems: an engine's counters, gauges and
// latency histograms (the engine, each tenant, each table) and, per tenant,
// its TransactionDB's, garbage collector's and observer worker's, rendered in
// one call as the Prometheus text exposition format (version 0.0.4, what a
// Prometheus server scrapes or node_exporter's textfile collector reads) or
// as JSON. metrics/README.md lists every metric.
//
//   MetricsSources sources;
//   sources.engine = engine.get();
//   sources.tenants.push_back({"shop", txn_db.get(), gc.get(), worker.get()});
//   Result<std::string> text = RenderMetrics(sources, MetricsFormat::kPrometheus);
//
// Names start with "strata_"; counters end in "_total"; times and latencies
// are in seconds, sizes in bytes. Labels: tenant, table, and where a metric
// has kinds (a cause, an outcome, a level) one label for the kind.
// Rendering reads each source's GetStats once; it takes no lock an engine
// call would wait on for long, and may run while the sources are busy.
#ifndef STRATA_METRICS_H_
#define STRATA_METRICS_H_

#include <string>
#include <vector>

#include "strata/engine.h"
#include "strata/gc.h"
#include "strata/observer.h"
#include "strata/status.h"
#include "strata/transaction.h"

namespace strata {

// One tenant's transaction layer; any pointer may be null (left out). The
// tenant name labels what they report; it need not name a tenant of
// MetricsSources::engine.
struct TenantMetricsSources {
  std::string tenant;
  const TransactionDB* transactions = nullptr;
  const GarbageCollector* gc = nullptr;
  const ObserverWorker* observers = nullptr;
};

struct MetricsSources {
  // The engine, every tenant and every table of it; null: left out.
  const Engine* engine = nullptr;
  std::vector<TenantMetricsSources> tenants;
};

enum class MetricsFormat {
  // "# HELP" and "# TYPE" lines, then the samples, per metric.
  kPrometheus,
  // {"metrics": [{"name", "type", "help", "samples": [{"labels": {...},
  // "value"}]}]}; a histogram's samples hold "count", "sum", "buckets"
  // ([{"le", "count"}], cumulative, the last "le" the string "+Inf") and the
  // percentiles "p50", "p99" and "p999" in seconds.
  kJson,
};

// The metrics of `sources` in `format`. InvalidArgument when the engine is
// closed, or a tenant entry has no name or the name of another entry; a
// tenant or table dropped while it runs is left out.
Result<std::string> RenderMetrics(const MetricsSources& sources, MetricsFormat format);

// RenderMetrics, written to `path` whole or not at all (a temporary file
// beside it, synced, then renamed over it): a reader never sees half of it.
Status WriteMetricsFile(const MetricsSources& sources, MetricsFormat format,
                        const std::string& path);

}  // namespace strata

#endif  // STRATA_METRICS_H_
