#!/usr/bin/env bash
# limit_file_size_later.sh FILE EXTRA_BYTES -- COMMAND...
# Runs COMMAND with SIGXFSZ ignored and, as soon as FILE has been written, caps the size of the
# files COMMAND writes at FILE's size + EXTRA_BYTES (prlimit --fsize), as a disk that fills up in
# the middle of a run would: a write past the cap then fails with EFBIG. The cap is set once the
# run is under way because MPI's start-up (shared-memory segments, MPICH's UCX) itself writes files
# that a cap set beforehand would break.
set -u
file=$1; extra=$2; shift 2
[ "${1:-}" = "--" ] && shift
trap '' XFSZ
"$@" &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  size=$(stat -c %s "$file" 2>/dev/null || echo 0)
  if [ "$size" -gt 0 ]; then
    prlimit --pid "$pid" --fsize=$((size + extra)) || echo "limit_file_size_later.sh: prlimit failed" >&2
    break
  fi
  sleep 0.01
done
wait "$pid"
