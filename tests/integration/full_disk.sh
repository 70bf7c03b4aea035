#!/usr/bin/env bash
# full_disk.sh BIN_DIR MPIEXEC: a --report on a file system that is already full (a 64 KiB tmpfs
# filled up, mounted in a mount namespace of this test's own) is refused before training, exit 2,
# naming the option and the reason; no hang. Then a --checkpoint on a 256 KiB tmpfs with room for
# the start-up check but not for the final checkpoint: the run ends, its report (elsewhere) is
# written and says why the checkpoint is missing, and the job exits 1 with the reason
# (Note [A failed final checkpoint]). Exits 77 (skipped) where no mount namespace and tmpfs can
# be made (not root, no unshare).
set -u
bin=$1; mpiexec=$2
here=$(cd "$(dirname "$0")" && pwd)
if [ "${GW_FULL_DISK_INSIDE:-}" != 1 ]; then
  if ! unshare -m true 2> /dev/null; then echo "SKIPPED: no mount namespace here"; exit 77; fi
  exec env GW_FULL_DISK_INSIDE=1 unshare -m --propagation private "$0" "$@"
fi
mnt=$(mktemp -d) small=$(mktemp -d) work=$(mktemp -d)
if ! mount -t tmpfs -o size=64k gwfull "$mnt" 2> /dev/null ||
   ! mount -t tmpfs -o size=256k gwsmall "$small" 2> /dev/null; then
  umount "$mnt" 2> /dev/null; rmdir "$mnt" "$small" "$work"
  echo "SKIPPED: cannot mount a tmpfs here"; exit 77
fi
trap 'umount "$mnt" "$small"; rmdir "$mnt" "$small"; rm -rf "$work"' EXIT
dd if=/dev/zero of="$mnt/fill" bs=4096 2> /dev/null
"$here/expect_failure.sh" 60 "--report: cannot write '$mnt/r.json': No space left on device" 2 -- \
  "$mpiexec" -n 2 "$bin/gradwire_train" --max-steps 60 --no-progress --train-subset 4096 \
  --test-subset 500 --report "$mnt/r.json"
[ $? -eq 0 ] || exit 1

# The final checkpoint (about 420 KB a rank for mlp-small) does not fit; the report does. Where
# the run stops inside an epoch (--max-steps 10 of 64), and at an epoch's end (16 steps of 16).
for stop in "--max-steps 10 --train-subset 4096" "--epochs 1 --train-subset 1024"; do
  steps=10; [ "${stop#--epochs}" != "$stop" ] && steps=16
  rm -f "$work/r.json"
  # shellcheck disable=SC2086 # $stop: two flags and their values
  "$here/expect_failure.sh" 60 \
    "rank 0: checkpoint: --checkpoint: cannot write .*No space left on device; no checkpoint was written before" \
    1 -- "$mpiexec" -n 2 "$bin/gradwire_train" --model mlp-small $stop --no-progress \
    --test-subset 500 --checkpoint "$small/ck" --report "$work/r.json" || exit 1
  "$bin/gradwire_check_report" "$work/r.json" --min /steps=$steps --max /steps=$steps \
    --min /checkpoints/written=0 --max /checkpoints/written=0 --min /final_test_accuracy=0.1 ||
    { echo "FAIL: the report's figures ($stop)"; exit 1; }
  # The training clock stays paused around the failed write, so training is within the wall time
  # (with the clock left paused, the epoch's next pause counted a segment twice).
  python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
sys.exit(not 0 < r["train_seconds"] <= r["wall_seconds"])' "$work/r.json" ||
    { grep '_seconds"' "$work/r.json"; echo "FAIL: train_seconds beyond wall_seconds"; exit 1; }
  grep -q '"final_error": "--checkpoint: cannot write .*No space left on device' "$work/r.json" ||
    { grep -A8 '"checkpoints"' "$work/r.json"; echo "FAIL: the report does not say why"; exit 1; }
  echo "ok: a final checkpoint that does not fit ($stop): the report written, the reason said, exit 1"
done
