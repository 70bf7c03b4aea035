#!/usr/bin/env bash
# Evaluations inside epochs (--eval-every) leave the training as it was (Note [Evaluation points]):
# under local SGD, where the evaluated model is the ranks' average, the final parameters with
# an evaluation every 3 steps equal bitwise those without, with the same averaging schedule. The
# history has one point per evaluation. --time-budget stops at the first evaluation past it.
set -eu
bin=$1; mpiexec=$2; work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
common=(--model mlp --epochs 1 --max-steps 30 --batch-size 32 --lr 0.05 --momentum 0.9
        --train-subset 2048 --test-subset 500 --no-progress)
run() {  # run NAME ARGS...: 2 ranks of local SGD with k = 4
  local name=$1; shift
  GRADWIRE_SYNC=local_sgd GRADWIRE_LOCAL_SGD_K=4 "$mpiexec" -n 2 \
    "$bin/gradwire_train" "${common[@]}" \
    --save-params "$work/$name.bin" --report "$work/$name.json" "$@" > "$work/$name.log"
}
run plain --seed 3
run evaluated --seed 3 --eval-every 3
"$bin/gradwire_compare_params" "$work/evaluated.bin" "$work/plain.bin" --max-rel-diff 0
# 9 evaluations inside the epoch (steps 3..27) and the one at its end (step 30).
"$bin/gradwire_check_report" "$work/evaluated.json" \
  --min /history/0/step=3 --max /history/0/step=3 --min /history/8/step=27 \
  --max /history/8/step=27 --min /history/9/step=30 --max /history/9/step=30 \
  --min /history/9/test_accuracy=0.5 --min /history/9/train_seconds=0.000001 \
  --min /sync/scheduled_averaging_points=7 --max /sync/scheduled_averaging_points=7 \
  --min /sync/requested_averaging_points=1 --max /sync/requested_averaging_points=1
"$bin/gradwire_check_report" "$work/plain.json" \
  --min /sync/scheduled_averaging_points=7 --max /sync/scheduled_averaging_points=7
if grep -q '"step": 33' "$work/evaluated.json"; then
  echo "FAIL: an evaluation past the last step"; exit 1
fi
# The comparison can fail: the evaluation without putting each rank's parameters back would
# change the training; a different seed stands in for such a change here.
run other --eval-every 3 --seed 4
if "$bin/gradwire_compare_params" "$work/other.bin" "$work/plain.bin" --max-rel-diff 0; then
  echo "FAIL: different trainings compared equal"; exit 1
fi
# A budget smaller than any step: the run stops at its first evaluation, step 5.
run budget --seed 3 --eval-every 5 --time-budget 0.000001
"$bin/gradwire_check_report" "$work/budget.json" --min /steps=5 --max /steps=5 \
  --min /history/0/step=5 --max /history/0/step=5
grep -q '"stopped_by_time_budget": true' "$work/budget.json" \
  || { echo "FAIL: stopped_by_time_budget is not true"; exit 1; }
grep -q '"stopped_by_time_budget": false' "$work/evaluated.json" \
  || { echo "FAIL: a run without a budget says it stopped by one"; exit 1; }
echo "ok: evaluations leave the training bitwise unchanged; the budget stops at step 5"
