#!/usr/bin/env bash
# resume.sh BIN MPIEXEC STRATEGY: 4 ranks train TOTAL steps straight, and again, for each SPLIT,
# as SPLIT steps, stop, resume from the checkpoint, the rest (docs/CHECKPOINT.md). The final
# parameters must be bitwise equal, and every rank's final checkpoint too, section by section, but
# for its clock readings (TIME): the training state, and the report's figures of the whole run.
# An epoch is 32 steps here (4096 samples, 4 x 32 per step). The model is the MLP narrowed
# (mlp-small: the same layers, 1/25 of the parameters; the subject here is the state a run keeps
# and resumes, not the model), with a fusion threshold that keeps the reference MLP's two buckets.
set -eu
bin=$1; mpiexec=$2; strategy=$3
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
common=(--model mlp-small --epochs 3 --batch-size 32 --seed 5 --train-subset 4096 --test-subset 500
        --no-progress)
. "$(dirname "$0")/strategy_settings.sh"
strategy_settings "$strategy" || { echo "unknown strategy $strategy"; exit 2; }
total=40; splits=(20)
case $strategy in
  # The warm-up's sparsity steps up every 6 steps until step 30: split inside it and after it.
  dgc) total=44; splits=(14 35) ;;
  # Split inside an averaging period (20 is not a multiple of 3), with evaluations of the average
  # model on both sides: the end of the first part averages for its evaluation, which the
  # checkpoint must not hold (Note [When a checkpoint is taken]); and at epoch 1's end (step 32,
  # not a multiple of 3 either), where the straight run averages too.
  local_sgd) extra+=(--eval-every 7); total=48; splits=(20 32) ;;
  post_local_sgd) splits=(22) ;;
  adaptive_local_sgd) splits=(21) ;;
  # Fragment 0's exchange after step 15 is in flight at the split (its outer step after step 17),
  # and fragment 1's after step 19 at the second; epoch 1 ends (and synchronizes) at step 32.
  streaming_diloco) total=44; splits=(17 21) ;;
  # The amp settings change the loss scale on both sides of the split.
esac

run() {  # run NAME ARGS...
  local name=$1; shift
  if ! env GRADWIRE_FUSION_THRESHOLD_MB=0.1 "${vars[@]}" "$mpiexec" -n 4 "$bin/gradwire_train" \
      "${common[@]}" "${extra[@]}" --report "$work/$name.json" "$@" > "$work/$name.log" 2>&1; then
    tail -n 30 "$work/$name.log"; echo "FAIL: the $name run failed"; exit 1
  fi
}
run straight --max-steps "$total" --checkpoint "$work/straight" --save-params "$work/straight.bin"
for split in "${splits[@]}"; do
  echo "---- $split + $((total - split)) steps"
  run "first$split" --max-steps "$split" --checkpoint "$work/split$split"
  run "resumed$split" --max-steps "$total" --checkpoint "$work/split$split" \
    --resume "$work/split$split" --save-params "$work/resumed$split.bin"
  grep -h "resuming from" "$work/resumed$split.log"
  "$bin/gradwire_compare_params" "$work/resumed$split.bin" "$work/straight.bin" --max-rel-diff 0
  for r in 0 1 2 3; do
    echo "rank $r's final checkpoint, resumed vs straight:"
    "$bin/gradwire_compare_checkpoints" "$work/split$split.rank$r" "$work/straight.rank$r"
  done
  "$bin/gradwire_check_report" "$work/resumed$split.json" --min /steps="$total" \
    --max /steps="$total" --min /resumed_from/step="$split" --max /resumed_from/step="$split"
  # The comparison can fail: the generation before (the first part's last step) differs.
  if "$bin/gradwire_compare_checkpoints" "$work/split$split.rank1.prev" "$work/straight.rank1" \
      > /dev/null; then
    echo "FAIL: the checkpoints of steps $split and $total compared equal"; exit 1
  fi
  if [ "$strategy" = amp ]; then
    # The loss scale history: the initial scale and at least one change before the split, more
    # after it, carried over into the resumed run's report.
    before=$(grep -o '"event"' "$work/first$split.json" | wc -l)
    whole=$(grep -o '"event"' "$work/resumed$split.json" | wc -l)
    echo "loss scale history: $before entries up to step $split, $whole over $total steps"
    if [ "$before" -lt 2 ] || [ "$whole" -le "$before" ]; then
      echo "FAIL: the loss scale did not change on both sides of the split"; exit 1
    fi
  fi
done
echo "ok: $strategy, split at ${splits[*]} and resumed == $total steps straight, bitwise"
