# One device session as a list of stages, run in order; logs and results go under $OUT.
#
#   tests                          the GPU tests (marker gpu, in tests/compiler/targets/gpu)
#   probe:ROWS:LABEL[:VAR=VALUE]   gpu_row_probe.py on ROWS (comma-separated) under LABEL, with the
#                                  environment settings given (compile-time switches), one process
#   pprobe:ROWS:LABEL[:VAR=VALUE]  the same with --profile (the compile's costliest functions)
#   table                          the probes so far, one line each
#   profile:ROWS                   gpu_kernel_profile.py (eager, kernel by kernel)
#   tprofile:ROWS                  the same for the rows' PyTorch counterparts (peers.py's models)
#   peers[:ROWS[:nocompile|exact]] peers.py, 3 rounds of 5, with torch.compile unless nocompile;
#                                  exact: PyTorch with TF32 off in the whole process (--torch-exact)
#                                  (torch.compile adds its own compile time per row: split the rows over commands)
#   grid:K/N[:nocompile|exact]     peers.py --grid K/N: part K of N of the family grid (batch 1 and
#                                  large, fp32 and fp16), exports and torch.compile warmed up in 8
#                                  processes first (--prewarm); peers_table.py merges the parts' logs;
#                                  GRID_DTYPES=fp32 for the fp32 rows alone (the TF32 column; N odd mixes batches)
#   peersab:REF:ROWS               ours on git REF's tree (a base, e.g. main) against this tree, peers.py
#                                  --no-compile on ROWS (the rest of the stage: tv:swin_t:16:fp16,...),
#                                  one process a side; peers_table.py --format ab
#   cold:ROWS | cold:K/N           cold_compile.py: each peers row (or part K of N of the family grid)
#                                  compiled in a fresh process with empty caches, then again warm
#                                  (COLD_PROFILE=1: the compiles' costliest functions too; COLD_ARGS:
#                                  more cold_compile.py flags, e.g. "--large-only --cold-only --prewarm 8")
#   roofline[:ROWS]                roofline.py: rows without a PyTorch counterpart against the roofline
#   conformance                    the ONNX backend node tests on the gpu target
#   suite                          gpu_suite.py over the whole default suite
#   gtests:FILES                   pytest on the test files given (comma-separated)
#   spread:ROWS:LABEL[:VAR=VALUE]  perfbot run --rounds $ROUNDS (default 8) on ROWS, then the
#                                  process-to-process spread of each row (process_spread.py)
#   aa:K/N:LABEL                   a same-commit perfbot ab (default settings) of rows K, K+N, ... of the
#                                  default suite (or of rows named instead of K/N, comma-separated), in a
#                                  scratch repository of this tree; its compare document $OUT/aa-LABEL.json
#                                  (aa_summary.py takes the parts together); AA_TIMEOUT seconds at most (560),
#                                  after which the rows measured so far are compared (ab_partial.py)
#   abref:REF:K/N:LABEL            the same A/B with git REF's tree as the base (a no-regression check
#                                  against older code); $OUT/abref-LABEL.json
#   perf:ARGS                      perfbot ARGS (words joined by '+'), database $OUT/perf.db
#   procstate:ROWS[:ACTIONS]       process_state.py: which steps, run eagerly once more, leave the
#                                  process's replays slower (ACTIONS comma-separated, default none,all; each: every kind);
#
#   bash benchmarks/gpu_session.sh tests probe:torchvision-resnet50:exact:PERFBOT_GPU_FP32_SPLIT=0 table
source benchmarks/gpu_env.sh
export PERFBOT_GPU_CACHE=${PERFBOT_GPU_CACHE:-/tmp/pc} CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-/tmp/cc}
export PERFBOT_CACHE_DIR=${PERFBOT_CACHE_DIR:-/tmp/models}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
for stage in "$@"; do
  IFS=: read -r what rows label settings <<< "$stage"
  case "$what" in
    tests)
      timeout 480 python3 -m pytest -q -p no:cacheprovider -m gpu tests/compiler/targets/gpu > "$OUT/pytest_gpu.log" 2>&1
      echo "gpu tests rc=$?: $(tail -1 "$OUT/pytest_gpu.log")"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.log" | head ;;
    probe|pprobe)
      flags=(); [ "$what" = pprobe ] && flags=(--profile)
      env ${settings//:/ } timeout 150 python3 benchmarks/gpu_row_probe.py --rows "$rows" --seconds 1 \
        --label "$label" --out "$OUT" "${flags[@]}" > /dev/null ;;
    table)
      python3 benchmarks/gpu_row_probe.py --table --out "$OUT" ;;
    profile)
      PERFBOT_GPU_GRAPHS=0 timeout 240 python3 benchmarks/gpu_kernel_profile.py --rows "$rows" --out "$OUT" 2>&1 \
        | grep -v -i warn ;;
    tprofile)
      timeout 240 python3 benchmarks/gpu_kernel_profile.py --torch --rows "$rows" --out "$OUT" 2>&1 | grep -v -i warn ;;
    peers|grid)
      # peers' row names hold colons (tv:resnet18:1:fp32): the rows are the stage less its name
      # and a trailing :nocompile or :exact
      rest=${stage#"$what"}; rest=${rest#:}; mode=""
      case "$rest" in *:nocompile) mode=nocompile ;; *:exact) mode=exact ;; nocompile|exact) mode=$rest ;; esac
      rows=${rest%:"$mode"}; [ "$rows" = "$mode" ] && rows=""
      extra=(); [ -n "$rows" ] && extra+=("--${what/peers/rows}" "$rows"); [ "$mode" = nocompile ] && extra+=(--no-compile)
      [ "$mode" = exact ] && extra+=(--torch-exact)
      # a grid part first exports and torch.compiles its rows in 8 processes side by side
      [ "$what" = grid ] && extra+=(--prewarm 8 --export-dir /tmp/peers_onnx --grid-dtypes "${GRID_DTYPES:-fp32,fp16}")
      timeout 560 python3 benchmarks/peers.py --rounds 3 --reps 5 "${extra[@]}" --out "$OUT" \
        > "$OUT/peers_stdout.txt" 2>&1
      grep -v "^\[" "$OUT/peers_stdout.txt" | grep -v -i warn | tail -16 ;;
    peersab)
      ref=$rows; rows=${stage#peersab:"$ref":}   # peers' row names hold colons themselves
      # The device copy's refs can lag this checkout's: say which commit the base is.
      echo "base $ref = $(git log --oneline -1 "$ref" 2>&1 | cut -c1-100)"
      rm -rf /tmp/ab_base && mkdir /tmp/ab_base && git archive "$ref" | tar -x -C /tmp/ab_base || exit 2
      mkdir -p "$OUT/ab_base" "$OUT/ab_head"
      for side in base head; do
        tree=$PWD; [ "$side" = base ] && tree=/tmp/ab_base
        (cd "$tree" && PYTHONPATH=/tmp/site:$tree timeout 270 python3 benchmarks/peers.py --rounds 3 --reps 5 \
          --no-compile --rows "$rows" --out "$OUT/ab_$side" > "$OUT/ab_$side/stdout.txt" 2>&1)
      done
      python3 benchmarks/peers_table.py "$OUT/ab_base/peers.log" "$OUT/ab_head/peers.log" --format ab ;;
    cold)
      rest=${stage#cold:}; sel=(--rows "$rest"); [[ "$rest" =~ ^[0-9]+/[0-9]+$ ]] && sel=(--grid "$rest")
      timeout 560 python3 benchmarks/cold_compile.py "${sel[@]}" ${COLD_PROFILE:+--profile} ${COLD_ARGS:-} --export-dir /tmp/peers_onnx --out "$OUT" \
        > "$OUT/cold_stdout.txt" 2>&1
      echo "cold rc=$?"; grep -v -i warn "$OUT/cold_stdout.txt" | tail -30 ;;
    roofline)
      extra=(); [ -n "$rows" ] && extra+=(--rows "$rows")
      timeout 500 python3 benchmarks/roofline.py "${extra[@]}" --out "$OUT" > "$OUT/roofline_stdout.txt" 2>&1
      echo "roofline rc=$?"; grep -v "^{" "$OUT/roofline_stdout.txt" | grep -v -i warn | tail -20 ;;
    conformance)
      PERFBOT_BACKEND_TARGET=gpu timeout 200 python3 -m pytest -q -p no:cacheprovider tests/compiler/onnx/test_conformance.py \
        > "$OUT/conformance_gpu.log" 2>&1
      echo "conformance rc=$?: $(tail -1 "$OUT/conformance_gpu.log")"
      grep -E "^FAILED" "$OUT/conformance_gpu.log" | cut -c1-140 | head -12 ;;
    suite)
      timeout 330 python3 benchmarks/gpu_suite.py --seconds 0.05 --out "$OUT" > "$OUT/suite_stdout.txt" 2>&1
      echo "suite rc=$?"; tail -32 "$OUT/suite_stdout.txt" | cut -c1-150 ;;
    gtests)
      timeout 300 python3 -m pytest -q -p no:cacheprovider ${rows//,/ } > "$OUT/gtests.log" 2>&1
      echo "gpu tests rc=$?: $(tail -1 "$OUT/gtests.log")"; grep -E "^(FAILED|ERROR)" "$OUT/gtests.log" | head ;;
    spread)
      env ${settings//:/ } timeout 560 python3 -m bot run --suite "$rows" --target gpu --rounds "${ROUNDS:-8}" \
        --db "sqlite:///$OUT/spread.db" --out "$OUT/spread-$label.json" --quiet --format json \
        > /dev/null 2> "$OUT/spread-$label.err"
      echo "spread $label rc=$?"; tail -3 "$OUT/spread-$label.err"
      python3 benchmarks/process_spread.py "$OUT/spread-$label.json" ;;
    aa|abref)
      # aa:ROWS:LABEL is this tree against itself; abref:REF:ROWS:LABEL git REF's tree (base)
      # against this tree (head). ROWS: K/N of the default suite, or row names joined by commas.
      ref=""; sel=$rows; name=$label
      [ "$what" = abref ] && { ref=$rows; sel=$label; name=$settings; }
      # the scratch repository is made afresh every time: REF's tree, then this tree as it is now
      rm -rf /tmp/aa && mkdir /tmp/aa && git -C /tmp/aa init -q || exit 2
      scratch_commit() { (cd /tmp/aa && git add -A && git -c user.email=aa@perfbot -c user.name=aa commit -qm "$1") > /dev/null; }
      if [ -n "$ref" ]; then
        echo "base $ref = $(git log --oneline -1 "$ref" 2>&1 | cut -c1-100)"
        git archive "$ref" | tar -x -C /tmp/aa && scratch_commit "base: $ref" || exit 2
        find /tmp/aa -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
      fi
      tar --exclude=./.whl --exclude=./.git -cf - . | tar -C /tmp/aa -xf - && scratch_commit "this tree"
      base=HEAD; [ -n "$ref" ] && base=HEAD~1
      part=$sel
      [[ "$sel" =~ ^[0-9]+/[0-9]+$ ]] && part=$(python3 -c "import sys; from bot.runner.suite import select_rows; \
k, n = map(int, sys.argv[1].split('/')); print(','.join(r.name for r in select_rows(None, 'default', (k, n))))" "$sel")
      # the A/B stops starting rows a minute before the command's limit (--time-limit)
      (cd /tmp/aa && PYTHONPATH=/tmp/site:/tmp/aa timeout "${AA_TIMEOUT:-560}" python3 -m bot ab --base "$base" --head HEAD \
        --suite "$part" --target gpu --db "sqlite:///$OUT/$what.db" --format json --quiet \
        --time-limit $(( ${AA_TIMEOUT:-560} - 60 )) > "$OUT/$what-$name.json" 2> "$OUT/$what-$name.err")
      echo "$what $name rc=$?"; tail -2 "$OUT/$what-$name.err"
      # stopped by its time limit: the rows measured so far, compared from the database
      python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$OUT/$what-$name.json" 2> /dev/null \
        || python3 benchmarks/ab_partial.py "sqlite:///$OUT/$what.db" --out "$OUT/$what-$name.json"
      if [ "$what" = aa ]; then python3 benchmarks/aa_summary.py "$OUT"/aa-*.json | tail -1
      else python3 benchmarks/aa_summary.py "$OUT/$what-$name.json" | head -n -2; fi ;;
    perf)
      args=${stage#perf:}; timeout 560 python3 -m bot ${args//+/ } --db "sqlite:///$OUT/perf.db" \
        > "$OUT/perf-stdout.txt" 2> "$OUT/perf-stderr.txt"
      echo "perf rc=$?"; tail -5 "$OUT/perf-stderr.txt"; tail -40 "$OUT/perf-stdout.txt" ;;
    procstate)
      timeout 560 python3 benchmarks/process_state.py --rows "$rows" --actions "${label:-none,all}" --out "$OUT" \
        > "$OUT/process_state_stdout.txt" 2>&1
      echo "procstate rc=$?"; grep -v -i warn "$OUT/process_state_stdout.txt" | tail -20 ;;
    *) echo "unknown stage: $stage" >&2; exit 2 ;;
  esac
done
