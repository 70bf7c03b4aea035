#!/usr/bin/env bash
# Output fit for terminals and logs (Note [Progress in terminals and logs],
# Note [The configuration at the start of a run]): under a pseudo-terminal the progress bar redraws in place; piped, the
# output holds plain "progress:" lines and no carriage return nor escape anywhere; at the default
# log level the configuration is one line, at debug the whole table.
set -u
bin=$1; mpiexec=$2
data=/usr/share/datasets/fashion-mnist
if [ ! -d "$data" ]; then echo "SKIP: $data missing (install dataset-fashion-mnist)"; exit 77; fi
# Only what this script sets: a GRADWIRE_* variable of the caller's would change the config line.
while IFS= read -r v; do unset "$v"; done < <(compgen -e | grep '^GRADWIRE_')
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
# One epoch: 64 steps on 1 rank, 32 on 2; the bar draws at least its first step and its last.
train=("$bin/gradwire_train" --epochs 1 --train-subset 2048 --test-subset 200)
fail() { echo "--- output:"; cat -A "$1" | head -60; echo "FAIL: $2"; exit 1; }

# (a) A pseudo-terminal: a single process (no mpirun: Open MPI gives a rank's stderr a pipe, never
# the launcher's terminal). A pty turns each "\n" into "\r\n", so the redraws are found as "\r"
# followed by the bar's text.
if command -v script > /dev/null; then
  timeout 120 script -qfec "$(printf '%q ' "${train[@]}" --progress-every 0.001)" /dev/null \
    < /dev/null > "$work/pty.out" 2>&1 || fail "$work/pty.out" "the run under a pty failed"
elif command -v python3 > /dev/null; then
  spawn='import os, pty, sys; sys.exit(os.waitstatus_to_exitcode(pty.spawn(sys.argv[1:])))'
  timeout 120 python3 -c "$spawn" \
    "${train[@]}" --progress-every 0.001 < /dev/null > "$work/pty.out" 2>&1 \
    || fail "$work/pty.out" "the run under a pty failed"
else
  echo "SKIP: neither script (util-linux) nor python3 to make a pseudo-terminal"; exit 77
fi
redraws=$(grep -ao $'\repoch 1/1 \\[' "$work/pty.out" | wc -l)
[ "$redraws" -ge 2 ] || fail "$work/pty.out" "$redraws bar redraws under a pty, expected 2 or more"
grep -aq $'\repoch 1/1 \\[=*\\] 100.0%  step 64/64' "$work/pty.out" \
  || fail "$work/pty.out" "the bar never reached the epoch's end"
grep -aq $'\r\033\\[K' "$work/pty.out" || fail "$work/pty.out" "the bar was not erased"
if grep -aq '^progress:' "$work/pty.out"; then
  fail "$work/pty.out" "plain progress lines on a terminal"
fi

# (b) Piped to a file, under mpirun: every "progress:" line is a line of its own, and there is no
# carriage return (before this, a rank's stdout, a pty under Open MPI, carried the bar into logs).
GRADWIRE_COMPRESSOR=fp16 timeout 120 "$mpiexec" -n 2 "${train[@]}" --progress-every 0.001 \
  > "$work/piped.out" 2>&1 || fail "$work/piped.out" "the piped run failed"
grep -q '^progress: epoch 1/1 step [0-9]*/32 ([0-9.]*%) loss [0-9.]* elapsed [0-9.]* s$' \
  "$work/piped.out" || fail "$work/piped.out" "no plain progress line"
if grep -q $'\r' "$work/piped.out"; then fail "$work/piped.out" "a carriage return in a log"; fi
if grep -q $'\033' "$work/piped.out"; then fail "$work/piped.out" "an escape code in a log"; fi
# At the default log level, one configuration line naming what was set; then the backend line.
[ "$(grep -c 'gradwire configuration' "$work/piped.out")" = 1 ] \
  || fail "$work/piped.out" "not exactly one configuration line"
line='gradwire configuration (2 ranks): GRADWIRE_COMPRESSOR=fp16 (everything else default; '
line+='--print-config or GRADWIRE_LOG_LEVEL=debug lists every parameter)'
grep -Fx -A1 "$line" "$work/piped.out" | grep -q '^backend: ' \
  || fail "$work/piped.out" "the configuration line is not one line naming GRADWIRE_COMPRESSOR=fp16"
if grep -q '^variable  *value  *source' "$work/piped.out"; then
  fail "$work/piped.out" "the whole table at the default log level"
fi

# --no-progress: no bar and no lines; --progress-every 0: no timed lines.
for quiet in --no-progress "--progress-every 0"; do
  # shellcheck disable=SC2086  # $quiet is one option or an option and its value
  timeout 120 "$mpiexec" -n 1 "${train[@]}" $quiet > "$work/quiet.out" 2>&1 \
    || fail "$work/quiet.out" "the run with $quiet failed"
  if grep -q '^progress:' "$work/quiet.out"; then
    fail "$work/quiet.out" "progress lines with $quiet"
  fi
  grep -q '^gradwire configuration (1 rank): all defaults (' "$work/quiet.out" \
    || fail "$work/quiet.out" "no all-defaults configuration line"
done

# At debug the whole table, every parameter with its source.
GRADWIRE_LOG_LEVEL=debug timeout 120 "$mpiexec" -n 1 "${train[@]}" --max-steps 2 --no-progress \
  > "$work/debug.out" 2>&1 || fail "$work/debug.out" "the debug run failed"
grep -q '^gradwire configuration (1 rank):$' "$work/debug.out" \
  || fail "$work/debug.out" "no table header at debug"
GRADWIRE_LOG_LEVEL=debug "$bin/gradwire_train" --print-config > "$work/table"
[ "$(grep -c '^GRADWIRE_' "$work/table")" -gt 10 ] || fail "$work/table" "--print-config too short"
missing=$(grep -Fxvf "$work/debug.out" "$work/table")
[ -z "$missing" ] || fail "$work/debug.out" "--print-config's lines missing at debug: $missing"
grep -q '^GRADWIRE_LOG_LEVEL  *debug  *environment' "$work/debug.out" \
  || fail "$work/debug.out" "GRADWIRE_LOG_LEVEL not shown as set in the environment"
echo "ok: $redraws bar redraws under a pty; $(grep -c '^progress:' "$work/piped.out")" \
  "progress lines piped, no carriage return"
