#!/usr/bin/env bash
# fault_matrix.sh BIN MPIEXEC RANKS STRATEGY: one run's lineage through every fault the suite
# injects (Note [Faults the suite injects], GW_TEST_FAULT) into checkpoint writes and steps, at
# RANKS ranks under STRATEGY (strategy_settings.sh). A checkpoint every 2 steps, 16 steps in all
# (mlp-small, inside the first epoch); L is the last rank. Each faulty job must end (not hang)
# with a non-zero code, and the next run must resume from the step every rank has
# (Note [Checkpoint generations]):
#   A  L stalls 1 s between the agreement and its commit at step 6, then SIGKILL: the others hold
#      (6, 4), L (4, 2)                                                      -> resumes from 4
#   B  the same again, in the first write after that resume (two kills in a row) -> from 4
#   C  rank 0 SIGKILLed at step 8 between its rotation and its rename: it holds only .prev 6
#                                                                           -> from 6
#   D  an exception on rank 1 after step 9 (its message on the way out)     -> from 8
#   E  rank 0's disk full while staging step 10: every rank stops (exit 1, no MPI abort), saying
#      so, and the previous checkpoint is kept                              -> from 8
#   F  L 0.5 s slow in its commit at step 12, rank 0 0.25 s slow staging 14: the run trains to the
#      end, and its parameters equal a straight run's bitwise.
set -u
bin=$1; mpiexec=$2; ranks=$3; strategy=$4
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/strategy_settings.sh"
strategy_settings "$strategy" || { echo "unknown strategy $strategy"; exit 2; }
export OPENBLAS_NUM_THREADS=1 GRADWIRE_FUSION_THRESHOLD_MB=0.1
last=$((ranks - 1)); total=16
train=("$bin/gradwire_train" --model mlp-small --epochs 1 --batch-size 32 --seed 5
       --train-subset 4096 --test-subset 200 --max-steps "$total" --no-progress "${extra[@]}")
ck=(--checkpoint "$work/ck" --checkpoint-every 2)
fail() { echo "FAIL ($strategy, $ranks ranks): $*"; for f in "$work"/*.log; do echo "---- $f"; tail -n 12 "$f"; done; exit 1; }
job() {  # job NAME FAULT ARGS...: the job's exit code in $rc, its seconds in $secs
  local name=$1 fault=$2; shift 2
  local t0=$SECONDS
  timeout 90 env "${vars[@]}" GW_TEST_FAULT="$fault" "$mpiexec" -n "$ranks" "${train[@]}" "$@" \
    > "$work/$name.log" 2>&1
  rc=$?; secs=$((SECONDS - t0))
  [ "$rc" -ne 124 ] || fail "$name ($fault): the job hung"
}
resumed_from() {  # resumed_from NAME STEP
  grep -q "resuming from .*: step $2 " "$work/$1.log" || fail "$1 did not resume from step $2"
}
faulty() {  # faulty NAME RESUME_STEP FAULT EXPECT: a job that must fail, its log showing EXPECT
  local name=$1 from=$2 fault=$3 expect=$4 resume=()
  [ "$from" = - ] || resume=(--resume "$work/ck")
  job "$name" "$fault" "${ck[@]}" "${resume[@]}"
  [ "$rc" -ne 0 ] || fail "$name ($fault) exited 0"
  [ "$from" = - ] || resumed_from "$name" "$from"
  if [ -n "$expect" ] && ! grep -q -- "$expect" "$work/$name.log"; then
    fail "$name ($fault): no '$expect' in its output"
  fi
  echo "$name: $fault: exit $rc after $secs s$([ "$from" = - ] || echo ", resumed from $from")"
}
job straight "" --save-params "$work/straight.bin"
[ "$rc" -eq 0 ] || fail "the straight run"
faulty A - "$last:6:commit:delay-kill=1" ""
faulty B 4 "$last:6:commit:delay-kill=1" ""
faulty C 4 "0:8:rotate:kill" ""
faulty D 6 "1:9:step:throw" "GW_TEST_FAULT '1:9:step:throw'"
faulty E 8 "0:10:stage:full-disk" "No space left on device"
grep -q "the previous checkpoint is kept" "$work/E.log" || fail "E: no word of the kept checkpoint"
# Every rank agreed on that failure: the job ends without an abort (Note [Ending the job on an error]).
! grep -qi "MPI_Abort" "$work/E.log" || fail "E: an abort for a failure every rank agreed on"
job F "$last:12:commit:delay=0.5,0:14:stage:delay=0.25" "${ck[@]}" --resume "$work/ck" \
  --save-params "$work/resumed.bin"
[ "$rc" -eq 0 ] || fail "F, resumed after five faults, failed"
resumed_from F 8
cmp -s "$work/straight.bin" "$work/resumed.bin" || fail "the resumed run's parameters differ"
echo "F: slow commits: trained to step $total in $secs s, resumed from 8, parameters bitwise equal"
echo "ok: $strategy at $ranks ranks: every fault left a run that resumes, ending bit-identical"
