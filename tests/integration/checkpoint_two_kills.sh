#!/usr/bin/env bash
# checkpoint_two_kills.sh BIN MPIEXEC RANKS COMPRESSOR: two kills in a row inside checkpoint commits
# (Note [Checkpoint generations], Note [Faults the suite injects]) leave a run that still resumes,
# and the resumed run ends bit-identical to a straight one.
#   run A: checkpoints every 2 steps; at its 3rd write (step 6) the last rank stalls between the
#          agreement and its commit and is killed: the other ranks hold (6, 4), it holds (4, 2).
#   run B: resumes from 4 (the others from their .prev); at its 1st write (step 6) the same again.
#          Rotating there would leave (6, 6) beside (4, 2): nothing every rank has.
#   run C: resumes from 4 again and trains to the end; its parameters equal the straight run's.
set -u
bin=$1; mpiexec=$2; ranks=$3; compressor=$4
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export GRADWIRE_COMPRESSOR=$compressor OPENBLAS_NUM_THREADS=1
total=12
run=("$bin/gradwire_train" --epochs 3 --seed 5 --train-subset 2048 --test-subset 200
     --max-steps "$total" --no-progress)
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "---- $f"; tail -n 15 "$f"; done; exit 1; }
# All ranks but the last plain, the last with the fault (MPMD: one program line each).
with_fault() {  # with_fault N LOG ARGS...
  local n=$1 log=$2; shift 2
  timeout 120 "$mpiexec" -n $((ranks - 1)) "${run[@]}" "$@" : \
    -n 1 env GW_TEST_FAULT_BEFORE_COMMIT="$n:stall-kill" "${run[@]}" "$@" > "$log" 2>&1
  local rc=$?
  [ "$rc" -ne 124 ] || fail "$log: the job hung after the kill"
  [ "$rc" -ne 0 ] || fail "$log: the killed run exited 0"
}
timeout 120 "$mpiexec" -n "$ranks" "${run[@]}" --save-params "$work/straight.bin" \
  > "$work/straight.log" 2>&1 || fail "the straight run"
with_fault 3 "$work/a.log" --checkpoint "$work/ck" --checkpoint-every 2
with_fault 1 "$work/b.log" --checkpoint "$work/ck" --checkpoint-every 2 --resume "$work/ck"
grep -q "resuming from .*: step 4 " "$work/b.log" || fail "run B did not resume from step 4"
timeout 120 "$mpiexec" -n "$ranks" "${run[@]}" --checkpoint "$work/ck" --checkpoint-every 2 \
  --resume "$work/ck" --save-params "$work/resumed.bin" > "$work/c.log" 2>&1 \
  || fail "run C could not resume after two kills in commits"
grep -q "resuming from .*: step 4 " "$work/c.log" || fail "run C did not resume from step 4"
cmp -s "$work/straight.bin" "$work/resumed.bin" || fail "the resumed run's parameters differ"
echo "ok: $ranks ranks, $compressor: two kills in commits, resumed from step 4, bit-identical"
