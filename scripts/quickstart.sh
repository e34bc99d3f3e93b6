#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: strata-indexer
# (apps/indexer/), Percolator's incremental indexing pipeline, on the Boost
# documentation of two releases, 1.74 and 1.81, as Debian packages them
# (libboost1.74-doc, libboost1.81-doc): 7,707 pages that link to each other,
# a little over 3,000 of them unchanged between the releases, so published
# twice, under two URLs, as on a site that keeps every release's manual.
# The two packages conflict, so they are downloaded and unpacked under
# build/corpus/, not installed. The job loads every page while the observers
# work, checks the index against a from-scratch batch computation, times
# edits from commit to searchable against the batch recompute, and answers
# two searches; it leaves the run's metrics (strata/metrics.h) in Prometheus
# text in build/indexer-metrics.prom. Arguments go to strata-indexer (see strata-indexer --help);
# with none, the run above.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
corpus=build/corpus
releases=(1.74 1.81)
for r in "${releases[@]}"; do
  if [ ! -d "$corpus/$r/usr/share/doc/libboost$r-doc/doc/html" ]; then
    echo "quickstart: downloading libboost$r-doc (the corpus) from the Debian archive"
    mkdir -p "$corpus/$r"
    if ! (cd "$corpus" && apt-get download -q -o APT::Sandbox::User=root "libboost$r-doc" 2>/dev/null); then
      apt-get update -q
      (cd "$corpus" && apt-get download -q -o APT::Sandbox::User=root "libboost$r-doc")
    fi
    dpkg-deb -x "$corpus"/libboost"$r"-doc_*.deb "$corpus/$r"
    rm -f "$corpus"/libboost"$r"-doc_*.deb
  fi
done
build_dir=$(scripts/build.sh -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF)
if [ $# -eq 0 ]; then
  args=()
  for r in "${releases[@]}"; do
    args+=("--corpus=boost-$r=$corpus/$r/usr/share/doc/libboost$r-doc/doc/html")
  done
  set -- "${args[@]}" --edits=50 --search="shared pointer" --search="regular expression match" \
    --metrics="$build_dir/indexer-metrics.prom"
fi
"$build_dir/apps/strata-indexer" "$@"
