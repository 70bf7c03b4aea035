#!/usr/bin/env bash
# leak_canary.sh MPIEXEC NP CANARY
# Runs the leak canary (leak_canary.cc) on NP ranks under the ASan tree's LeakSanitizer options and
# passes only when every rank fails because it reported gradwire's two leaked blocks, and nothing
# else: Open MPI's own leaks must stay suppressed, gradwire's must not.
set -u
mpiexec=$1; np=$2; canary=$3
case "${LSAN_OPTIONS:-}" in
  *suppressions=*) ;;
  *) echo "FAIL: LSAN_OPTIONS='${LSAN_OPTIONS:-}' names no suppressions file"; exit 1 ;;
esac
# Open MPI ends the job when a rank exits non-zero, and a rank that LeakSanitizer fails exits at
# once, which would cut the other ranks' reports short: here every rank finishes, and each
# rank's own exit status is printed (by the shell around it) and checked instead of the job's.
export OMPI_MCA_orte_abort_on_non_zero_status=0
out=$(timeout --kill-after=5 90 "$mpiexec" -n "$np" \
  sh -c '"$0"; echo "leak canary: exit status $?"' "$canary" 2>&1)
rc=$?
printf '%s\n' "$out"
echo "---- exit code $rc"
status=0
fail() { echo "FAIL: $*"; status=1; }
count() { printf '%s\n' "$out" | grep -Ec -- "$1"; }
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then fail "still running after 90 s"; fi
failed=$(count '^leak canary: exit status [1-9][0-9]*$')
[ "$failed" -eq "$np" ] || fail "$failed of $np ranks exited non-zero"
ran=$(count '^leak canary: rank [0-9]+ of '"$np"' leaked a SparseMessageWriter$')
[ "$ran" -eq "$np" ] || fail "$ran of $np ranks reached the leak"
reports=$(count 'ERROR: LeakSanitizer: detected memory leaks')
[ "$reports" -eq "$np" ] || fail "$reports leak reports for $np ranks"
# Each rank: the writer (allocated in main) and its buffer (allocated in libgradwire's append).
summaries=$(count 'SUMMARY: AddressSanitizer: [0-9]+ byte\(s\) leaked in 2 allocation\(s\)\.')
[ "$summaries" -eq "$np" ] || fail "$summaries of $np ranks reported exactly the canary's 2 blocks (a leak of Open MPI's not suppressed, or one of gradwire's hidden)"
[ "$(count 'SparseMessageWriter::append')" -ge "$np" ] ||
  fail "no leak stack through libgradwire's SparseMessageWriter::append on every rank"
[ "$(count 'in main .*leak_canary\.cc')" -ge "$np" ] || fail "no leak stack from leak_canary.cc's main on every rank"
if [ "$(count 'ERROR: AddressSanitizer|runtime error:')" -ne 0 ]; then
  fail "a sanitizer error other than the leaks"
fi
[ "$status" -eq 0 ] && echo "ok: every rank reported gradwire's leaks; Open MPI's stayed suppressed"
exit "$status"
