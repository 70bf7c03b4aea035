#!/usr/bin/env bash
# accumulation.sh BIN MPIEXEC: gradient accumulation in gradwire_train (--accumulation-steps,
# Note [Gradient accumulation], Note [Epoch sharding]), 24 steps of mlp-small each:
# - 1 rank of 2 passes == 2 ranks of one, bitwise (the same samples, and a sum of two is the
#   same in either order), dense;
# - 2 ranks of 2 passes of 16 against 2 ranks of one pass of 32 (the same 64 samples a step):
#   within 1e-5 relative for dense (only the matrix products' summation order differs), 1e-3 on the
#   fp16 wire (which rounds those differences to fp16's 11 bits every step) and 2e-3 under dgc
#   (whose top-k can flip on a rounding); the same gradient bytes a step (dgc's within 1%);
# - the gradient bytes of a step are the same at 1 and 4 passes: the bytes per sample fall by
#   exactly 4;
# - --accumulation-steps against a different GRADWIRE_ACCUMULATION_STEPS is refused, exit 2.
set -u
bin=$1; mpiexec=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1
common=(--model mlp-small --epochs 1 --max-steps 24 --seed 11 --train-subset 8192
        --test-subset 200 --no-progress)
fail() { echo "FAIL: $*"; exit 1; }
vars=()  # GRADWIRE_* settings of the runs
train() {  # train NAME RANKS ARGS...
  local name=$1 ranks=$2; shift 2
  env "${vars[@]}" "$mpiexec" -n "$ranks" "$bin/gradwire_train" "${common[@]}" --report "$work/$name.json" \
    --save-params "$work/$name.bin" "$@" > "$work/$name.log" 2>&1 ||
    { tail -n 20 "$work/$name.log"; fail "the $name run"; }
}
field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"; }

train one_by_two 1 --batch-size 32 --accumulation-steps 2
train two_by_one 2 --batch-size 32
grep -q "1 ranks x batch 32 x 2 backward passes" "$work/one_by_two.log" || fail "no passes in the run's line"
cmp -s "$work/one_by_two.bin" "$work/two_by_one.bin" || fail "1 rank x 2 passes != 2 ranks, bitwise"
echo "ok: 1 rank x 2 passes == 2 ranks x 1 pass, bitwise"

for strategy in dense fp16 dgc; do
  vars=(); tolerance=1e-5
  case $strategy in
    fp16) vars=(GRADWIRE_COMPRESSOR=fp16); tolerance=1e-3 ;;
    dgc) vars=(GRADWIRE_COMPRESSOR=dgc); tolerance=2e-3 ;;
  esac
  train "${strategy}_passes" 2 --batch-size 16 --accumulation-steps 2
  train "${strategy}_batch" 2 --batch-size 32
  "$bin/gradwire_compare_params" "$work/${strategy}_passes.bin" "$work/${strategy}_batch.bin" \
    --max-rel-diff "$tolerance" || fail "$strategy: 2 passes of 16 against one of 32"
  [ "$(field "$work/${strategy}_passes.json" global_batch_size)" = 64 ] || fail "the global batch"
  # The same bytes a step: exactly, but for dgc's messages, whose size moves with what top-k picks.
  python3 -c 'import json, sys
a, b = (json.load(open(f))["gradient_bytes_per_step"] for f in sys.argv[1:3])
sys.exit(not abs(a - b) <= float(sys.argv[3]) * b)' "$work/${strategy}_passes.json" \
    "$work/${strategy}_batch.json" "$([ $strategy = dgc ] && echo 0.01 || echo 0)" ||
    fail "$strategy: the gradient bytes per step differ"
  echo "ok: $strategy: 2 ranks x 2 passes of 16 == 2 ranks x 32 within $tolerance, the same bytes"
done

vars=()
train four_passes 2 --batch-size 32 --accumulation-steps 4
one=$(field "$work/two_by_one.json" gradient_bytes_per_step)
four=$(field "$work/four_passes.json" gradient_bytes_per_step)
[ "$one" = "$four" ] || fail "gradient bytes per step: $one at 1 pass, $four at 4"
[ "$(field "$work/four_passes.json" global_batch_size)" = 256 ] || fail "global batch at 4 passes"
[ "$(field "$work/four_passes.json" accumulation_steps)" = 4 ] || fail "accumulation_steps"
echo "ok: $one gradient bytes per step at 1 and 4 passes: per sample, 4 x fewer"

out=$(GRADWIRE_ACCUMULATION_STEPS=2 "$mpiexec" -n 2 "$bin/gradwire_train" "${common[@]}" \
  --accumulation-steps 3 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "a conflicting --accumulation-steps exited $rc"
grep -q -- "--accumulation-steps 3 and GRADWIRE_ACCUMULATION_STEPS=2 differ" <<< "$out" ||
  fail "the conflict's message: $out"
echo "ok: --accumulation-steps 3 against GRADWIRE_ACCUMULATION_STEPS=2 refused"
