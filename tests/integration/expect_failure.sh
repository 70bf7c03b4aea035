#!/usr/bin/env bash
# expect_failure.sh SECONDS REGEX -- COMMAND...
# Passes when COMMAND exits non-zero within SECONDS (no hang) and its output matches REGEX.
set -u
limit=$1; regex=$2; shift 2
[ "$1" = "--" ] && shift
out=$(timeout --kill-after=5 "$limit" "$@" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -n 30
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "FAIL: still running after ${limit}s (a hang)"; exit 1
fi
if [ "$rc" -eq 0 ]; then
  echo "FAIL: exited 0, expected an error"; exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then
  echo "FAIL: exit code $rc but the output does not match: $regex"; exit 1
fi
echo "ok: exit code $rc, message matches"
