#!/usr/bin/env bash
# full_disk.sh BIN_DIR MPIEXEC: a --report on a file system that is already full (a 64 KiB tmpfs
# filled up, mounted in a mount namespace of this test's own) is refused before training, exit 2,
# naming the option and the reason; no hang. Exits 77 (skipped) where no mount namespace and
# tmpfs can be made (not root, no unshare).
set -u
bin=$1; mpiexec=$2
here=$(cd "$(dirname "$0")" && pwd)
if [ "${GW_FULL_DISK_INSIDE:-}" != 1 ]; then
  if ! unshare -m true 2> /dev/null; then echo "SKIPPED: no mount namespace here"; exit 77; fi
  exec env GW_FULL_DISK_INSIDE=1 unshare -m --propagation private "$0" "$@"
fi
mnt=$(mktemp -d)
if ! mount -t tmpfs -o size=64k gwfull "$mnt" 2> /dev/null; then
  rmdir "$mnt"; echo "SKIPPED: cannot mount a tmpfs here"; exit 77
fi
trap 'umount "$mnt"; rmdir "$mnt"' EXIT
dd if=/dev/zero of="$mnt/fill" bs=4096 2> /dev/null
"$here/expect_failure.sh" 60 "--report: cannot write '$mnt/r.json': No space left on device" 2 -- \
  "$mpiexec" -n 2 "$bin/gradwire_train" --max-steps 60 --no-progress --train-subset 4096 \
  --test-subset 500 --report "$mnt/r.json"
