#!/usr/bin/env bash
# GRADWIRE_LOG_LEVEL: debug shows per-step exchange lines and the whole configuration table; error
# shows nothing from gradwire.
set -u
bin=$1; mpiexec=$2
run() { GRADWIRE_LOG_LEVEL=$1 "$mpiexec" -n 2 \
          "$bin/gradwire_train" --max-steps 3 --test-subset 200 --no-progress 2>&1; }
debug=$(run debug) || { echo "$debug"; echo "FAIL: debug run failed"; exit 1; }
quiet=$(run error) || { echo "$quiet"; echo "FAIL: error-level run failed"; exit 1; }
echo "$debug" | grep -q "gradwire\[1\]: step 2: none exchange of 1333770 floats in 2 buckets" \
  || { echo "$debug"; echo "FAIL: no debug line from rank 1"; exit 1; }
# debug prints the whole GRADWIRE_* table (info only the one line of what was set:
# progress_output.sh).
echo "$debug" | grep -q "^gradwire configuration (2 ranks):$" \
  || { echo "$debug"; echo "FAIL: no config table"; exit 1; }
echo "$debug" | grep -q "^GRADWIRE_LOG_LEVEL  *debug  *environment" \
  || { echo "$debug"; echo "FAIL: the config table has no GRADWIRE_LOG_LEVEL row"; exit 1; }
if echo "$quiet" | grep -Eq "gradwire\[|gradwire configuration"; then
  echo "$quiet"; echo "FAIL: messages at GRADWIRE_LOG_LEVEL=error"; exit 1
fi
echo "ok"
