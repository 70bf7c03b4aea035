#!/usr/bin/env bash
# expect_failure.sh SECONDS REGEX [EXIT_CODE] -- COMMAND...
# Passes when COMMAND exits non-zero (EXIT_CODE exactly, when given) within SECONDS (no hang), its
# output matches REGEX, and no sanitizer reported an error in it.
set -u
limit=$1; regex=$2; shift 2
expected_rc=""
[ "$1" != "--" ] && { expected_rc=$1; shift; }
[ "$1" = "--" ] && shift
out=$(timeout --kill-after=5 "$limit" "$@" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -n 30
# In a sanitizer tree the expected error must be the only one: a sanitizer's report anywhere in
# the output (above the last 30 lines too) fails the test.
# See Note "Sanitizer reports fail every test" in cmake/GradwireSanitizers.cmake.
report='ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|SUMMARY: [A-Za-z]*Sanitizer|: runtime error: '
if printf '%s\n' "$out" | grep -Eq -- "$report"; then
  echo "---- the whole output:"
  printf '%s\n' "$out" | head -n 400
  echo "FAIL: a sanitizer reported an error (exit code $rc)"; exit 1
fi
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "FAIL: still running after ${limit}s (a hang)"; exit 1
fi
if [ "$rc" -eq 0 ]; then
  echo "FAIL: exited 0, expected an error"; exit 1
fi
if [ -n "$expected_rc" ] && [ "$rc" -ne "$expected_rc" ]; then
  echo "FAIL: exit code $rc, expected $expected_rc"; exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then
  echo "FAIL: exit code $rc but the output does not match: $regex"; exit 1
fi
echo "ok: exit code $rc, message matches"
