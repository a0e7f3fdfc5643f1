#!/usr/bin/env bash
# Point a GPU job's compile caches (perfbot's cuDNN plan cache, CuPy's kernel binaries, the CUDA
# driver's JIT cache) at the right place, through $GITHUB_ENV:
#
#   gpu-caches.sh shared    the runner's trusted caches (baseline.yml: code from the default branch)
#   gpu-caches.sh private   a copy of them under $RUNNER_TEMP (perf.yml: a pull request's code)
#
# A self-hosted runner keeps its caches between jobs. A pull request's compiler may change what a
# cached kernel or plan means without changing its key; its entries would then be loaded by later
# jobs, the default branch's baseline included. So a PR job starts warm from a copy and its writes
# go away with the job. (This keeps honest PRs from skewing later measurements; code that means
# harm can write anywhere the runner's user can: use ephemeral runners where that matters.)
set -euo pipefail
mode="${1:?usage: gpu-caches.sh shared|private}"
trusted="${PERFBOT_TRUSTED_GPU_CACHE:-$HOME/.cache/perfbot-gpu}"
case "$mode" in
  shared) root="$trusted" ;;
  private)
    root="${RUNNER_TEMP:?RUNNER_TEMP is not set}/perfbot-gpu-cache"
    rm -rf "$root"
    mkdir -p "$root"
    if [ -d "$trusted" ]; then cp -a "$trusted/." "$root/"; fi
    ;;
  *) echo "gpu-caches.sh: unknown mode '$mode' (shared or private)" >&2; exit 2 ;;
esac
for pair in PERFBOT_GPU_CACHE:plans CUPY_CACHE_DIR:cupy CUDA_CACHE_PATH:cuda; do
  mkdir -p "$root/${pair#*:}"
  echo "${pair%%:*}=$root/${pair#*:}" >> "${GITHUB_ENV:?GITHUB_ENV is not set}"
done
