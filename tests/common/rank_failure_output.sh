#!/usr/bin/env bash
# rank_failure_output.sh MPIEXEC TEST_BINARY TEST_SOURCE
# The MPI test main shows a failure on a rank other than 0: the binary's one test that fails on
# rank 1 only must show on stderr, prefixed "[rank 1] ", its file:line, its message and its name,
# and the job must fail; passing tests stay quiet on ranks other than 0, rank 2 (which passes)
# prints nothing at all, and rank 0's report stays on stdout. The two streams are read apart: the
# launcher forwards each by the chunk, so within one stream rank 0's lines are not kept whole.
set -u
mpiexec=$1; bin=$2; src=$3
line=$(grep -n "DELIBERATE_FAILURE_LINE" "$src" | head -n 1 | cut -d: -f1)
[ -n "$line" ] || { echo "FAIL: no DELIBERATE_FAILURE_LINE in $src"; exit 1; }
status=0
fail() { echo "FAIL (np $np): $*"; status=1; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
for np in 2 3; do
  timeout --kill-after=5 60 "$mpiexec" -n "$np" "$bin" --gtest_color=no \
    > "$work/out" 2> "$work/err"
  rc=$?
  echo "---- $np ranks: exit code $rc; stdout:"
  cat "$work/out"
  echo "---- stderr:"
  cat "$work/err"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then fail "still running after 60 s"; continue; fi
  [ "$rc" -ne 0 ] || fail "exited 0 although rank 1 failed a test"
  has() { grep -Eq -- "$2" "$work/$1" || fail "no line on std$1 matching: $2"; }
  has err "^\[rank 1\] .*rank_failure_output_test\.cc:$line: Failure$"
  has err "^\[rank 1\] deliberate failure on rank 1$"
  has err "^\[rank 1\] \[  FAILED  \] RankOutput\.FailsOnRankOneOnly$"
  has err "^\[rank 1\] 1 FAILED TEST on this rank:$"
  has err "^\[rank 1\]   RankOutput\.FailsOnRankOneOnly$"
  has out "^\[  PASSED  \] 2 tests\.$"  # rank 0, GoogleTest's own printer
  if grep -h "\[rank [0-9]*\]" "$work/out" "$work/err" | grep -q "PassesOnEveryRank"; then
    fail "a rank other than 0 printed the passing test"
  fi
  if grep -hq "\[rank 2\]" "$work/out" "$work/err"; then fail "rank 2 passed but printed"; fi
  if grep -q "\[rank 1\]" "$work/out"; then fail "rank 1's failure went to stdout"; fi
done
[ "$status" -eq 0 ] && echo "ok: rank 1's failure is in the log, with file:line and message"
exit "$status"
