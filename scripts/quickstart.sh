#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: examples/quickstart,
# which writes rows into a fresh engine, reopens it and verifies every row, then
# runs audited bank transfers as transactions and audits again after a reopen.
# Arguments go to quickstart (see quickstart --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build_dir=$(scripts/build.sh -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF )
"$build_dir/examples/quickstart" "$@"
