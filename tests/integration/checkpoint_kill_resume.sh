#!/usr/bin/env bash
# checkpoint_kill_resume.sh BIN MPIEXEC: a 4-rank run writes a checkpoint every 2 steps; once
# some exist, rank 1 gets SIGKILL, wherever it is (computing, or between two ranks' writes). Every
# process of the job must be gone within 10 s, the checkpoints left behind must resume (the
# newest step every rank has, Note [Checkpoint generations]), and the resumed run's final
# parameters must equal a straight run's bitwise.
set -u
bin=$1; mpiexec=$2
work=$(mktemp -d)
sid=""
job=()
# The job's processes: the launcher's session, and every descendant of the launcher (MPICH's
# Hydra starts each rank in a session of its own).
job_processes() {
  local all found=("$sid") grew=1
  all=$(ps -eo pid=,ppid=)
  while [ "$grew" -eq 1 ]; do
    grew=0
    while read -r pid ppid; do
      if [[ " ${found[*]} " == *" $ppid "* && " ${found[*]} " != *" $pid "* ]]; then
        found+=("$pid"); grew=1
      fi
    done <<< "$all"
  done
  printf '%s\n' "${found[@]}" $(pgrep -s "$sid") | sort -u
}
alive() {  # the pids among "$@" that still run
  local pid
  for pid in "$@"; do kill -0 "$pid" 2> /dev/null && echo "$pid"; done
}
cleanup() {
  # A job that outlived the test's checks is ended here, all of it.
  if [ ${#job[@]} -gt 0 ]; then kill -KILL $(alive "${job[@]}") 2> /dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT
total=64
run=("$bin/gradwire_train" --model mlp --epochs 3 --batch-size 32 --seed 9 --train-subset 4096
     --test-subset 500 --max-steps "$total" --no-progress)

"$mpiexec" -n 4 "${run[@]}" --save-params "$work/straight.bin" > "$work/straight.log" 2>&1 \
  || { tail -n 30 "$work/straight.log"; echo "FAIL: the straight run"; exit 1; }

# The launcher in a session of its own (setsid: a background job of this non-interactive shell is
# not a process group leader, so setsid execs in place and $! is the session's id).
setsid "$mpiexec" -n 4 "${run[@]}" --checkpoint "$work/ck" --checkpoint-every 2 \
  > "$work/killed.log" 2>&1 &
sid=$!
# Wait until every rank has written two generations (steps 2 and 4).
for _ in $(seq 600); do
  [ -e "$work/ck.rank3.prev" ] && [ -e "$work/ck.rank1.prev" ] && break
  kill -0 "$sid" 2> /dev/null || break
  sleep 0.05
done
[ -e "$work/ck.rank1.prev" ] || { tail -n 30 "$work/killed.log"; echo "FAIL: no checkpoint"; exit 1; }
# Rank 1: the process of the job whose launcher-given rank is 1 (Open MPI, or PMI's).
mapfile -t job < <(job_processes)
rank1=""
for pid in "${job[@]}"; do
  if tr '\0' '\n' < "/proc/$pid/environ" 2> /dev/null \
      | grep -Eqx 'OMPI_COMM_WORLD_RANK=1|PMI_RANK=1'; then
    rank1=$pid; break
  fi
done
[ -n "$rank1" ] || { echo "FAIL: rank 1 not found (has the run ended already?)"; exit 1; }
kill -KILL "$rank1"
killed_at=$(date +%s.%N)
gone=""
for _ in $(seq 200); do
  if [ -z "$(alive "${job[@]}")" ]; then gone=$(date +%s.%N); break; fi
  sleep 0.05
done
if [ -z "$gone" ]; then
  echo "FAIL: processes of the job still running 10 s after rank 1 was killed:"
  ps -o pid,cmd -p "$(alive "${job[@]}" | paste -sd,)"; exit 1
fi
wait "$sid"; rc=$?
echo "all ${#job[@]} processes of the job gone $(awk -v a="$gone" -v b="$killed_at" 'BEGIN { printf "%.2f", a - b }') s" \
  "after the kill (launcher exit code $rc)"
[ "$rc" -ne 0 ] || { echo "FAIL: the killed job exited 0"; exit 1; }
ls "$work" | grep '^ck'

"$mpiexec" -n 4 "${run[@]}" --checkpoint "$work/ck" --resume "$work/ck" \
  --save-params "$work/resumed.bin" > "$work/resumed.log" 2>&1 \
  || { tail -n 30 "$work/resumed.log"; echo "FAIL: the resumed run"; exit 1; }
grep "resuming from" "$work/resumed.log"
step=$(sed -n 's/^resuming from .*: step \([0-9]*\) .*/\1/p' "$work/resumed.log")
if [ -z "$step" ] || [ "$step" -lt 2 ] || [ "$step" -ge "$total" ]; then
  echo "FAIL: resumed at step '$step', expected a step the killed run reached before $total"; exit 1
fi
"$bin/gradwire_compare_params" "$work/resumed.bin" "$work/straight.bin" --max-rel-diff 0
echo "ok: killed, every process gone, resumed at step $step, final parameters bitwise equal"
