#!/usr/bin/env bash
# rank_failure.sh --rc N --message REGEX [--count N] [--within S] [--json FILE] [--hang S]
#                 [--also REGEX] [--no-abort] -- COMMAND...
#
# Runs COMMAND (an MPI launcher and its ranks) in a session of its own and passes when:
#   - it exits with code N;
#   - REGEX matches exactly --count lines of its output (default 1: the real error, printed once);
#   - every process of the session is gone within --within seconds (default 10) of the first
#     matching line (or of the start, if the message only shows at the end);
#   - no "MPI_Abort after MPI_Finalize" banner is printed;
#   - with --json FILE: FILE parses as JSON (python3);
#   - with --also REGEX: that REGEX matches a line too;
#   - with --no-abort: the job ended without MPI_Abort (neither launcher's abort banner).
# A run still going after --hang seconds (default 90) is a hang: the session is killed and the
# test fails.
set -u
rc_expected="" regex="" count=1 within=10 json="" hang_limit=90 also="" no_abort=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rc) rc_expected=$2; shift 2 ;;
    --message) regex=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --within) within=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --hang) hang_limit=$2; shift 2 ;;
    --also) also=$2; shift 2 ;;
    --no-abort) no_abort=1; shift ;;
    --) shift; break ;;
    *) echo "rank_failure.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$rc_expected" ] && [ -n "$regex" ] && [ $# -gt 0 ] || {
  echo "usage: rank_failure.sh --rc N --message REGEX [--count N] [--within S] [--json F] -- CMD..." >&2
  exit 2
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

start=$(now)
setsid "$@" >"$out" 2>&1 &
pid=$!
# The job's own session. Until the child has called setsid it is still in this script's session:
# taking that one would make the hang check wait on, and a hang kill end, every process of the
# caller's session (CTest and the tests beside it). A child that is gone before it got a session
# of its own leaves sid empty: only $pid is then watched.
own_sid=$(ps -o sid= -p $$ | tr -d ' ')
sid=""
for _ in $(seq 250); do
  sid=$(ps -o sid= -p "$pid" 2>/dev/null | tr -d ' ')
  [ -n "$sid" ] && [ "$sid" != "$own_sid" ] && break
  sid=""
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.02
done

# Whether any process of the session (or the launcher itself) still runs; zombies do not count.
running() {
  ps -e -o pid=,sid=,stat= | awk -v p="$1" -v s="$2" \
    '($1 == p || (s != "" && $2 == s)) && $3 !~ /^Z/ { found = 1 } END { exit !found }'
}

seen=""
hang=0
while :; do
  if [ -z "$seen" ] && grep -Eq -- "$regex" "$out"; then seen=$(now); fi
  running "$pid" "$sid" || break
  if [ "$(elapsed "$start" "$(now)" | cut -d. -f1)" -ge "$hang_limit" ]; then hang=1; break; fi
  sleep 0.05
done
gone=$(now)
if [ "$hang" = 1 ]; then
  [ -n "$sid" ] && pkill -KILL -s "$sid" 2>/dev/null
  kill -KILL "$pid" 2>/dev/null
fi
wait "$pid"
rc=$?

cat "$out" | tail -n 40
echo "----"
fail=0
if [ "$hang" = 1 ]; then echo "FAIL: still running after $hang_limit s (a hang)"; exit 1; fi
[ -n "$seen" ] || seen=$start
took=$(elapsed "$seen" "$gone")
echo "exit code $rc; every process gone $took s after the message ($(elapsed "$start" "$gone") s in all)"
if [ "$rc" != "$rc_expected" ]; then echo "FAIL: exit code $rc, expected $rc_expected"; fail=1; fi
matches=$(grep -Ec -- "$regex" "$out")
if [ "$matches" != "$count" ]; then
  echo "FAIL: $matches lines match '$regex', expected $count"; fail=1
fi
if awk -v t="$took" -v w="$within" 'BEGIN { exit !(t > w) }'; then
  echo "FAIL: processes still running $took s after the message (limit $within s)"; fail=1
fi
if [ -n "$also" ] && ! grep -Eq -- "$also" "$out"; then
  echo "FAIL: no line matches '$also'"; fail=1
fi
if [ "$no_abort" = 1 ] && grep -Eq -- "MPI_ABORT was invoked|application called MPI_Abort" "$out"; then
  echo "FAIL: the job ended by MPI_Abort"; fail=1
fi
if grep -Eiq -- "after MPI_FINALIZE|MPI_Abort.*after.*finali" "$out"; then
  echo "FAIL: an MPI_Abort-after-MPI_Finalize banner was printed"; fail=1
fi
if [ -n "$json" ]; then
  if python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$json"; then
    echo "ok: $json is valid JSON"
  else
    echo "FAIL: $json is not valid JSON"; fail=1
  fi
fi
[ "$fail" = 0 ] && echo "ok"
exit "$fail"
