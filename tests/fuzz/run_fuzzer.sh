#!/usr/bin/env bash
# run_fuzzer.sh FUZZER CORPUS SCRATCH SECONDS [libFuzzer flags...]
# Runs one libFuzzer target for SECONDS from its committed seed corpus CORPUS (read only: new
# inputs go to SCRATCH/new, findings to SCRATCH/findings), prints the number of inputs it executed,
# and fails on a finding, naming the reproducer and the command that replays it.
set -u
fuzzer=$1; corpus=$2; scratch=$3; seconds=$4; shift 4
name=$(basename "$fuzzer")
case "$seconds" in ''|*[!0-9]*|0) echo "FAIL: seconds '$seconds' is not a positive whole number"; exit 1 ;; esac
[ -d "$corpus" ] && [ -n "$(ls -A "$corpus")" ] || { echo "FAIL: no seeds in $corpus"; exit 1; }
rm -rf "$scratch"
mkdir -p "$scratch/new" "$scratch/findings"
log=$scratch/fuzz.log
# Unit timeout: a single input that takes seconds is a finding (a hang), not slowness.
"$fuzzer" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$scratch/findings/" "$@" "$scratch/new" "$corpus" > "$log" 2>&1
rc=$?
grep -aE '^(INFO: (seed corpus|-max_len)|#[0-9]+ +(INITED|DONE))' "$log"
executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
[ -n "$executions" ] || executions=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -n 1)
new=$(find "$scratch/new" -type f | wc -l)
findings=$(find "$scratch/findings" -type f | sort)
if [ "$rc" -ne 0 ] || [ -n "$findings" ]; then
  echo "---- last lines of $log:"
  tail -n 60 "$log"
  echo "FAIL: $name: finding after ${executions:-?} executions (exit code $rc)"
  for f in $findings; do echo "reproducer: $f  (replay: $fuzzer $f)"; done
  exit 1
fi
echo "ok: $name: ${executions:-?} executions in ${seconds} s, $new new inputs (in $scratch/new), no findings"
