#!/usr/bin/env bash
# full_disk.sh BIN_DIR MPIEXEC: outputs on file systems without room, each a tmpfs mounted in a
# mount namespace of this test's own (Note [Room for what a run writes]):
# - a --report on a 64 KiB tmpfs filled up: refused before training, exit 2, naming the option and
#   the reason; no hang;
# - a --checkpoint, or --save-params, on a 256 KiB tmpfs (room for the start-up probe, not for the
#   ~420 KB checkpoint of mlp-small or its 210 KB parameters): refused after the first step, exit 2,
#   nothing written; and a --checkpoint on 768 KiB, room for one rank's checkpoint but not for
#   both ranks': refused the same way (the ranks are checked together);
# - a --checkpoint on 1280 KiB, room for the first checkpoint of both ranks but not for the next
#   one beside it, the last of the run: the run ends, its report (elsewhere) is written and says
#   why the checkpoint is missing, and the job exits 1 with the reason
#   (Note [A failed final checkpoint]).
# Exits 77 (skipped) where no mount namespace and tmpfs can be made (not root, no unshare).
set -u
bin=$1; mpiexec=$2
here=$(cd "$(dirname "$0")" && pwd)
if [ "${GW_FULL_DISK_INSIDE:-}" != 1 ]; then
  if ! unshare -m true 2> /dev/null; then echo "SKIPPED: no mount namespace here"; exit 77; fi
  exec env GW_FULL_DISK_INSIDE=1 unshare -m --propagation private "$0" "$@"
fi
mnt=$(mktemp -d) small=$(mktemp -d) mid=$(mktemp -d) room=$(mktemp -d) work=$(mktemp -d)
if ! mount -t tmpfs -o size=64k gwfull "$mnt" 2> /dev/null ||
   ! mount -t tmpfs -o size=256k gwsmall "$small" 2> /dev/null ||
   ! mount -t tmpfs -o size=768k gwmid "$mid" 2> /dev/null ||
   ! mount -t tmpfs -o size=1280k gwroom "$room" 2> /dev/null; then
  umount "$mnt" "$small" "$mid" "$room" 2> /dev/null; rmdir "$mnt" "$small" "$mid" "$room" "$work"
  echo "SKIPPED: cannot mount a tmpfs here"; exit 77
fi
trap 'umount "$mnt" "$small" "$mid" "$room"; rmdir "$mnt" "$small" "$mid" "$room"; rm -rf "$work"' EXIT
dd if=/dev/zero of="$mnt/fill" bs=4096 2> /dev/null
"$here/expect_failure.sh" 60 "--report: cannot write '$mnt/r.json': No space left on device" 2 -- \
  "$mpiexec" -n 2 "$bin/gradwire_train" --max-steps 60 --no-progress --train-subset 4096 \
  --test-subset 500 --report "$mnt/r.json"
[ $? -eq 0 ] || exit 1

small_run=("$mpiexec" -n 2 "$bin/gradwire_train" --model mlp-small --max-steps 10 --no-progress
           --train-subset 4096 --test-subset 500 --report "$work/r.json")
no_room="No space left on device [(]no room for [0-9]* KiB in its folder, what it will hold"
# The 768 KiB case: rank 1 takes its probe half a second after rank 0 (GW_TEST_FAULT,
# Note [Faults the suite injects]), so that only rank 0's holding its probe until then refuses it.
for case in "--checkpoint $small/ck|--checkpoint: cannot write '$small/ck.rank[01]'|" \
            "--save-params $small/p.bin|--save-params: cannot write '$small/p.bin'|" \
            "--checkpoint $mid/ck|--checkpoint: cannot write '$mid/ck.rank1'|1:1:room:delay=0.5"; do
  IFS='|' read -r outputs message fault <<< "$case"
  rm -f "$work/r.json"
  # shellcheck disable=SC2086 # $outputs: the option and its path
  GW_TEST_FAULT=$fault "$here/expect_failure.sh" 60 "configuration error: $message: $no_room" 2 -- \
    "${small_run[@]}" $outputs || exit 1
  [ ! -e "$work/r.json" ] || { echo "FAIL: a report after the refusal ($outputs)"; exit 1; }
  left=$(find "$small" "$mid" -mindepth 1)
  [ -z "$left" ] || { echo "$left"; echo "FAIL: files left"; exit 1; }
  echo "ok: no room for $outputs: refused after the first step, exit 2, nothing written"
done

# The checkpoint before the last (about 420 KB a rank) fits; the last does not fit beside it; the
# report does. Where the run stops inside an epoch (--max-steps 10 of 64), and at an epoch's end
# (16 steps of 16).
for stop in "--max-steps 10 --train-subset 4096 --checkpoint-every 6" \
            "--epochs 1 --train-subset 1024 --checkpoint-every 10"; do
  steps=10; [ "${stop#--epochs}" != "$stop" ] && steps=16
  rm -f "$work/r.json" "$room"/*
  # shellcheck disable=SC2086 # $stop: flags and their values
  "$here/expect_failure.sh" 60 \
    "rank [01]: checkpoint: --checkpoint: cannot write .*No space left on device; the previous checkpoint is kept" \
    1 -- "$mpiexec" -n 2 "$bin/gradwire_train" --model mlp-small $stop --no-progress \
    --test-subset 500 --checkpoint "$room/ck" --report "$work/r.json" || exit 1
  "$bin/gradwire_check_report" "$work/r.json" --min /steps=$steps --max /steps=$steps \
    --min /checkpoints/written=1 --max /checkpoints/written=1 --min /final_test_accuracy=0.1 ||
    { echo "FAIL: the report's figures ($stop)"; exit 1; }
  # The training clock stays paused around the failed write, so training is within the wall time
  # (with the clock left paused, the epoch's next pause counted a segment twice).
  python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
sys.exit(not 0 < r["train_seconds"] <= r["wall_seconds"])' "$work/r.json" ||
    { grep '_seconds"' "$work/r.json"; echo "FAIL: train_seconds beyond wall_seconds"; exit 1; }
  grep -q '"final_error": "--checkpoint: .*cannot write .*No space left on device' "$work/r.json" ||
    { grep -A8 '"checkpoints"' "$work/r.json"; echo "FAIL: the report does not say why"; exit 1; }
  echo "ok: a final checkpoint that does not fit ($stop): the report written, the reason said, exit 1"
done
