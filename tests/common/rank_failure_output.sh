#!/usr/bin/env bash
# rank_failure_output.sh MPIEXEC TEST_BINARY TEST_SOURCE
# The MPI test main shows a failure on a rank other than 0: the binary's one test that fails on
# rank 1 only must show, prefixed "[rank 1] ", its file:line, its message and its name, and the
# job must fail; passing tests stay quiet on ranks other than 0, and rank 2 (which passes) prints
# nothing at all.
set -u
mpiexec=$1; bin=$2; src=$3
line=$(grep -n "DELIBERATE_FAILURE_LINE" "$src" | head -n 1 | cut -d: -f1)
[ -n "$line" ] || { echo "FAIL: no DELIBERATE_FAILURE_LINE in $src"; exit 1; }
status=0
fail() { echo "FAIL (np $np): $*"; status=1; }
for np in 2 3; do
  out=$(timeout --kill-after=5 60 "$mpiexec" -n "$np" "$bin" --gtest_color=no 2>&1)
  rc=$?
  echo "---- $np ranks: exit code $rc"
  printf '%s\n' "$out"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then fail "still running after 60 s"; continue; fi
  [ "$rc" -ne 0 ] || fail "exited 0 although rank 1 failed a test"
  has() { printf '%s\n' "$out" | grep -Eq -- "$1" || fail "no line matching: $1"; }
  has "^\[rank 1\] .*rank_failure_output_test\.cc:$line: Failure$"
  has "^\[rank 1\] deliberate failure on rank 1$"
  has "^\[rank 1\] \[  FAILED  \] RankOutput\.FailsOnRankOneOnly$"
  has "^\[rank 1\] 1 FAILED TEST on this rank:$"
  has "^\[rank 1\]   RankOutput\.FailsOnRankOneOnly$"
  has "^\[  PASSED  \] 2 tests\.$"  # rank 0, GoogleTest's own printer
  if printf '%s\n' "$out" | grep -E "^\[rank [0-9]+\]" | grep -q "PassesOnEveryRank"; then
    fail "a rank other than 0 printed the passing test"
  fi
  if printf '%s\n' "$out" | grep -q "^\[rank 2\]"; then fail "rank 2 passed but printed"; fi
done
[ "$status" -eq 0 ] && echo "ok: rank 1's failure is in the log, with file:line and message"
exit "$status"
