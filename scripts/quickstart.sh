#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: strata-indexer
# (apps/indexer/), Percolator's incremental indexing pipeline on the Python
# documentation that Debian's python3-doc package installs (530 pages linked
# to each other). It loads every page while the observers work, checks the
# index against a from-scratch batch computation, times edits from commit to
# searchable against the batch recompute, and answers two searches.
# Arguments go to strata-indexer (see strata-indexer --help); with none, the
# run above.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if ! dpkg-query -W -f='${Status}' python3-doc 2>/dev/null | grep -q "install ok installed"; then
  echo "quickstart: installing python3-doc (the corpus)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends python3-doc
fi
build_dir=$(scripts/build.sh -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF)
if [ $# -eq 0 ]; then
  set -- --corpus=/usr/share/doc/python3/html --edits=50 \
    --search="dictionary comprehension" --search="asyncio event loop"
fi
"$build_dir/apps/strata-indexer" "$@"
