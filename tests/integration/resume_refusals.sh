#!/usr/bin/env bash
# resume_refusals.sh BIN MPIEXEC DIR MODE: --resume of a checkpoint that cannot be continued is
# exit code 2 on every rank within seconds, with a message naming what is wrong.
#   setup: 2 ranks write DIR/base (steps 8 and 4: --checkpoint-every 4) and DIR/other (steps 12
#   and 10), which the other modes copy and damage.
#   config, world_size, corrupt, truncated, foreign, mixed, nothing_left, missing: refusals.
#   older_common_step: rank 1 lost its newest file (a kill between its renames): the run resumes
#   from step 4, which every rank has.
set -u
bin=$1; mpiexec=$2; dir=$3; mode=$4
common=(--model mlp --epochs 2 --batch-size 32 --train-subset 2048 --test-subset 200 --no-progress)
gw=("$bin/gradwire_train" "${common[@]}")

if [ "$mode" = setup ]; then
  rm -rf "$dir" && mkdir -p "$dir" || exit 1
  "$mpiexec" -n 2 "${gw[@]}" --max-steps 8 --checkpoint-every 4 --checkpoint "$dir/base" > "$dir/base.log" 2>&1 \
    || { tail -n 30 "$dir/base.log"; echo "FAIL: the base run"; exit 1; }
  "$mpiexec" -n 2 "${gw[@]}" --max-steps 12 --checkpoint-every 2 --checkpoint "$dir/other" > "$dir/other.log" 2>&1 \
    || { tail -n 30 "$dir/other.log"; echo "FAIL: the other run"; exit 1; }
  ls -l "$dir"
  exit 0
fi

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cp "$dir"/base.rank* "$work/" || exit 1
ck=$work/base

# refused COUNT REGEX... -- COMMAND...: COMMAND exits with code 2 within 60 s, and its output
# matches every REGEX, the first one COUNT times (0: any number of times).
refused() {
  local count=$1; shift
  local regexes=()
  while [ "$1" != "--" ]; do regexes+=("$1"); shift; done
  shift
  local start=$SECONDS out rc
  out=$(timeout --kill-after=5 60 "$@" 2>&1); rc=$?
  printf '%s\n' "$out" | grep -v '^GRADWIRE_\|^ \|^variable' | tail -n 20
  echo "exit code $rc after $((SECONDS - start)) s"
  if [ "$rc" -ne 2 ]; then echo "FAIL: exit code $rc, expected 2"; exit 1; fi
  for regex in "${regexes[@]}"; do
    if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then
      echo "FAIL: the output does not match: $regex"; exit 1
    fi
  done
  if [ "$count" -gt 0 ]; then
    local seen
    seen=$(printf '%s\n' "$out" | grep -Ec -- "${regexes[0]}")
    if [ "$seen" -ne "$count" ]; then
      echo "FAIL: '${regexes[0]}' printed $seen times, expected $count"; exit 1
    fi
  fi
  echo "ok: $mode refused"
}

case $mode in
  config)
    refused 0 "--lr: checkpoint '0.05', this run '0.1'" \
      "GRADWIRE_COMPRESSOR: checkpoint 'none', this run 'fp16'" "another configuration" \
      -- env GRADWIRE_COMPRESSOR=fp16 "$mpiexec" -n 2 "${gw[@]}" --lr 0.1 --resume "$ck" ;;
  world_size)
    refused 0 "world_size: checkpoint '2', this run '1'" -- "$mpiexec" -n 1 "${gw[@]}" --resume "$ck" ;;
  corrupt)
    # One byte in the middle of rank 1's newest file: rank 1 says why, once; rank 0 stops too.
    size=$(stat -c %s "$ck.rank1")
    printf '\x5a' | dd of="$ck.rank1" bs=1 seek=$((size / 2)) conv=notrunc status=none
    refused 1 "'$ck.rank1': checkpoint: checksum mismatch" "start-up failed on rank 1" \
      -- "$mpiexec" -n 2 "${gw[@]}" --resume "$ck" ;;
  truncated)
    truncate -s 1000 "$ck.rank0"
    refused 1 "'$ck.rank0': checkpoint: truncated: the header says [0-9]+ bytes, the file has 1000" \
      -- "$mpiexec" -n 2 "${gw[@]}" --resume "$ck" ;;
  foreign)
    head -c 4096 /dev/urandom > "$ck.rank1"
    refused 1 "'$ck.rank1': checkpoint: not a gradwire_train checkpoint" \
      -- "$mpiexec" -n 2 "${gw[@]}" --resume "$ck" ;;
  mixed)
    cp "$dir/other.rank1" "$ck.rank1" && cp "$dir/other.rank1.prev" "$ck.rank1.prev" || exit 1
    refused 0 "no step that every rank has a checkpoint of \(rank 0: step 8 and 4; rank 1: step 12 and 10\)" \
      -- "$mpiexec" -n 2 "${gw[@]}" --resume "$ck" ;;
  nothing_left)
    refused 0 "nothing left to train: the checkpoint is at step 8 .* --max-steps is 8" \
      -- "$mpiexec" -n 2 "${gw[@]}" --max-steps 8 --resume "$ck" ;;
  missing)
    refused 0 "no checkpoint at '$work/none.rank0' \(nor '$work/none.rank0.prev'\)" \
      -- "$mpiexec" -n 2 "${gw[@]}" --resume "$work/none" ;;
  older_common_step)
    rm "$ck.rank1"
    out=$(timeout --kill-after=5 60 "$mpiexec" -n 2 "${gw[@]}" --max-steps 10 --resume "$ck" 2>&1) || { printf '%s\n' "$out" | tail -n 20; exit 1; }
    printf '%s\n' "$out" | grep "resuming from"
    printf '%s\n' "$out" | grep -q "resuming from $ck.rank0.prev: step 4 " \
      || { echo "FAIL: did not resume from step 4, which every rank has"; exit 1; }
    echo "ok: resumed from the newest step every rank has" ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
