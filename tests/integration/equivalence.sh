#!/usr/bin/env bash
# 4 ranks x batch 16 and 1 rank x batch 64 see the same 64 samples per step; after 20 steps their
# parameters must agree within a relative difference of 1e-5.
set -eu
bin=$1; mpiexec=$2; work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
common=(--model mlp --epochs 1 --max-steps 20 --lr 0.05 --momentum 0.9
        --test-subset 500 --no-progress)
"$mpiexec" -n 4 "$bin/gradwire_train" "${common[@]}" \
  --seed 7 --batch-size 16 --save-params "$work/four.bin" > "$work/four.log"
"$mpiexec" -n 1 "$bin/gradwire_train" "${common[@]}" \
  --seed 7 --batch-size 64 --save-params "$work/one.bin" > "$work/one.log"
grep -h "summary" -A3 "$work/four.log" "$work/one.log" || true
"$bin/gradwire_compare_params" "$work/four.bin" "$work/one.bin" --max-rel-diff 1e-5
# And the comparison can fail: a different seed gives different parameters.
"$mpiexec" -n 1 "$bin/gradwire_train" "${common[@]}" \
  --batch-size 64 --seed 8 --save-params "$work/other.bin" > /dev/null
if "$bin/gradwire_compare_params" "$work/other.bin" "$work/one.bin" --max-rel-diff 1e-5; then
  echo "FAIL: parameters of different seeds compared equal"; exit 1
fi
