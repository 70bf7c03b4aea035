#!/usr/bin/env bash
# rank_failure_table.sh BIN_DIR [HANG_SECONDS]
# Runs issue 16's reproductions of one rank failing (and every rank failing) against the binaries
# in BIN_DIR (gradwire_train, gw_mpiexec, rank_failure_main), each through rank_failure.sh, and
# prints one Markdown row per reproduction: its exit code and the seconds from the start until
# every process of the job was gone, or "hang" when it was still running after HANG_SECONDS
# (default 30). See docs/RELIABILITY.md:
#   tests/integration/rank_failure_table.sh build/bin
set -u
bin=$(cd "$1" && pwd); hang=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
run=(--no-progress --train-subset 4096 --test-subset 500)
row() {  # row NAME -- COMMAND...
  local name=$1; shift 2
  local out rc secs
  out=$("$here/rank_failure.sh" --rc 0 --message '.' --hang "$hang" -- "$@" 2>&1)
  if printf '%s\n' "$out" | grep -q "still running after"; then
    printf '| %s | - | hang (killed after %s s) |\n' "$name" "$hang"
    return
  fi
  rc=$(printf '%s\n' "$out" | sed -n 's/^exit code \([0-9]*\);.*/\1/p')
  secs=$(printf '%s\n' "$out" | sed -n 's/.*(\([0-9.]*\) s in all).*/\1/p')
  printf '| %s | %s | %s |\n' "$name" "$rc" "$secs"
}
echo "| reproduction | exit code | seconds until every process is gone |"
echo "|---|---|---|"
row "GRADWIRE_TIMELINE unwritable on rank 1 only" -- "$bin/gw_mpiexec" \
  -n 1 "$bin/gradwire_train" --max-steps 5 "${run[@]}" : \
  -n 1 env GRADWIRE_TIMELINE=/nonexistent-gradwire-dir/t.json "$bin/gradwire_train" --max-steps 5 "${run[@]}"
row "a timeline write fails mid-run on rank 1 (file size limit, SIGXFSZ ignored)" -- "$bin/gw_mpiexec" \
  -n 1 "$bin/gradwire_train" --max-steps 150 "${run[@]}" : \
  -n 1 env GRADWIRE_TIMELINE="$tmp/t_{rank}.json" "$here/limit_file_size_later.sh" "$tmp/t_1.json" 20000 \
    -- "$bin/gradwire_train" --max-steps 150 "${run[@]}"
for where in backward step; do
  for style in run_mpi_main try uncaught; do
    row "exception in $where on rank 1, main: $style" -- \
      "$bin/gw_mpiexec" -n 2 "$bin/rank_failure_main" "$where" "$style" one
  done
done
row "GRADWIRE_TIMELINE unwritable on every rank" -- env GRADWIRE_TIMELINE=/nonexistent-gradwire-dir/t.json \
  "$bin/gw_mpiexec" -n 2 "$bin/gradwire_train" --max-steps 5 "${run[@]}"
row "every rank throws in step()" -- "$bin/gw_mpiexec" -n 2 "$bin/rank_failure_main" step run_mpi_main every
