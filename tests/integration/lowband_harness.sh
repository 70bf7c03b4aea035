#!/usr/bin/env bash
# lowband_harness.sh SRC BIN MODE: the low-bandwidth harness (benchmarks/lowband).
#   options    bad options are refused with what is accepted, before anything is made
#   lifecycle  it refuses namespaces left by another run, --cleanup removes them, and Ctrl-C
#              (SIGINT) in the middle of a job stops the job and removes every namespace
#   unshaped   --no-shaping: loopback, no namespaces, and every output says UNSHAPED
#   smoke      2 hosts at 100 Mbit/s, one short dgc run: the shaping is in force (a 4 MiB
#              allreduce no faster than 0.75x what the rate predicts; unshaped, it takes a few
#              hundredths of that), the report has every field, the plot is drawn, and nothing is
#              left behind. How close the allreduce comes to the prediction is a benchmark figure
#              (./gradwire.sh bench lowband, --check-probe), not asserted here: on a shared 2-core
#              machine a probe can take well past 1.25x. The upper bound, 3x, catches a unit slip
#              (a rate 10x too low), not a slow machine.
#   watchdog   a mode run past its limit (here long, given 10 s) is ended: the harness gets
#              SIGTERM and removes its namespaces itself, and the test exits 124 saying why
#   long       dense at 10 Mbit/s for an epoch, minutes at 1.3 s a step: only for watchdog
# Namespaces are named $GWLB_PREFIX-* (gwlbtest here, apart from a user's gwlb runs). Where they
# cannot be made (not root, no iproute2, no tbf), lifecycle and smoke say so and exit 77 (skip).
# Every mode runs under its own limit, GWLB_TEST_LIMIT seconds (default 240), below CTest's 300:
# CTest ends a test past its timeout with SIGKILL, which leaves the harness no chance to remove
# its namespaces, and the lowband tests after it would then refuse to start. Past the limit the
# harness gets SIGTERM (it stops the job and removes the namespaces); should the mode still be up
# 30 s later, it is killed and its namespaces are removed here.
set -u
src=$1; bin=$2; mode=$3
export GWLB_PREFIX=gwlbtest
harness=(python3 "$src/benchmarks/lowband/gradwire_lowband.py" --bin "$bin")
leftovers() { ip netns list 2>/dev/null | awk '{print $1}' | grep "^$GWLB_PREFIX-" || true; }
if [ -z "${GWLB_TEST_WATCHED:-}" ]; then
  limit=${GWLB_TEST_LIMIT:-240}
  GWLB_TEST_WATCHED=1 timeout -k 30 "$limit" "$0" "$@"
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "FAIL: lowband_harness.sh $mode ran past its limit of $limit s (GWLB_TEST_LIMIT) and was ended"
    [ -z "$(leftovers)" ] || "${harness[@]}" --cleanup
  fi
  exit "$rc"
fi
# Past the limit: the harness, in the foreground, stops its job and removes its namespaces; the
# script then goes on to fail on the harness's exit code, and its EXIT trap runs.
trap 'echo "SIGTERM: past the limit"' TERM
work=$(mktemp -d)
cleanup() { "${harness[@]}" --cleanup > /dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

expect_refusal() {  # expect_refusal REGEX ARGS...: exit 2, message matching REGEX, nothing made
  local regex=$1; shift
  local out rc
  out=$("${harness[@]}" "$@" 2>&1); rc=$?
  printf '%s\n' "$out" | tail -n 3
  [ "$rc" -eq 2 ] || fail "exit $rc for '$*', expected 2"
  printf '%s\n' "$out" | grep -Eq -- "$regex" || fail "message for '$*' does not match: $regex"
}

case "$mode" in
options)
  expect_refusal "--rates '0': accepted a comma list of distinct whole Mbit/s" --rates 0
  expect_refusal "--rates '100,x'" --rates 100,x
  expect_refusal "unknown or repeated \['zip'\]; accepted: dense, dense_hier, fp16, topk, dgc, dgc_hier, dgc_warmup, powersgd" \
    --strategies dense,zip
  expect_refusal "--hosts 1: accepted 2 to 16" --hosts 1
  expect_refusal "--ranks-per-host 9: accepted 1 to 8" --ranks-per-host 9
  expect_refusal "--exchange 'flat,ring': accepted a comma list of flat, hier, each once" \
    --exchange flat,ring
  expect_refusal "--mca 'btl_tcp_flags': accepted NAME=VALUE" --mca btl_tcp_flags
  expect_refusal "--target-accuracy 1.5: accepted \(0, 1\]" --target-accuracy 1.5
  expect_refusal "gradwire_train not found in /nonexistent" --bin /nonexistent
  expect_refusal "--rerender /nonexistent.json: cannot read the report" --rerender /nonexistent.json
  expect_refusal "--env 'OMP_NUM_THREADS=2': accepted GRADWIRE_NAME=VALUE" --env OMP_NUM_THREADS=2
  echo "ok: bad options refused"
  ;;
unshaped)
  # No --probe-bytes: the unshaped probe's default size (there is no rate to size it by).
  "${harness[@]}" --no-shaping --hosts 2 --strategies dense,local_sgd_k4 --epochs 1 \
    --train-subset 1280 --test-subset 200 --report "$work/u.json" \
    > "$work/u.log" 2>&1 || { cat "$work/u.log"; fail "the unshaped run failed"; }
  grep -q '"shaped": false' "$work/u.json" || fail "the JSON does not say unshaped"
  grep -q "UNSHAPED" "$work/u.md" || fail "the Markdown does not say UNSHAPED"
  grep -q '"rate_mbit": null' "$work/u.json" || fail "an unshaped run has a rate"
  "$bin/gradwire_check_report" "$work/u.json" --min /runs/1/exchange_bytes_vs_dense=2 \
    --min /runs/0/gradient_bytes_vs_dense_after_warmup=1 \
    --max /runs/0/gradient_bytes_vs_dense_after_warmup=1 || fail "report figures"
  [ -z "$(leftovers)" ] || fail "namespaces made by an unshaped run: $(leftovers)"
  # --env reaches the runs (here a timeline, which tools/timeline_summary.py reads), and the
  # report records it.
  "${harness[@]}" --no-shaping --hosts 2 --strategies dense --epochs 1 --train-subset 640 \
    --test-subset 100 --report "$work/t.json" --env "GRADWIRE_TIMELINE=$work/trace.json" \
    > "$work/t.log" 2>&1 || { cat "$work/t.log"; fail "the run with --env failed"; }
  grep -q '"GRADWIRE_TIMELINE"' "$work/t.json" || fail "the report does not record --env"
  python3 "$src/tools/timeline_summary.py" "$work/trace.rank1.json" | grep -q "bucket 0 exchange" \
    || fail "no timeline from --env GRADWIRE_TIMELINE, or tools/timeline_summary.py cannot read it"
  echo "ok: unshaped run labelled in every output"
  ;;
lifecycle)
  out=$("${harness[@]}" --hosts 2 --rates 10 --strategies dense --report "$work/skip.json" \
        --epochs 1 --probe-bytes 65536 --train-subset 640 --test-subset 100 --time-budget 1 2>&1)
  rc=$?
  if [ "$rc" -eq 77 ]; then echo "$out"; exit 77; fi
  [ "$rc" -eq 0 ] || { echo "$out"; fail "a short run failed (exit $rc)"; }
  [ -z "$(leftovers)" ] || fail "namespaces left after a run: $(leftovers)"
  # Namespaces of another run: refused, named, and --cleanup removes them.
  ip netns add "$GWLB_PREFIX-h0" || fail "cannot add a namespace"
  expect_refusal "namespaces left by another lowband run exist: $GWLB_PREFIX-h0" \
    --hosts 2 --rates 10 --strategies dense --report "$work/r.json"
  "${harness[@]}" --cleanup | grep -q "removed $GWLB_PREFIX-h0" || fail "--cleanup said nothing"
  [ -z "$(leftovers)" ] || fail "--cleanup left $(leftovers)"
  # SIGINT while a job runs (dense at 10 Mbit/s moves 1.3 s per step): exit 130, nothing left.
  "${harness[@]}" --hosts 2 --rates 10 --strategies dense --epochs 1 --report "$work/i.json" \
    --probe-bytes 65536 > "$work/i.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 120); do
    grep -q "dense at 10 Mbit/s: running" "$work/i.log" && break
    sleep 0.5
  done
  grep -q "running" "$work/i.log" || { cat "$work/i.log"; fail "the job never started"; }
  sleep 3
  # This run's trainers only (their --report is under $work/i_runs): other tests of the suite may
  # run gradwire_train from the same folder at the same time.
  pgrep -f "$work/i_runs/" > /dev/null || fail "no gradwire_train running before SIGINT"
  kill -INT "$pid"
  wait "$pid"; rc=$?
  cat "$work/i.log" | tail -n 3
  [ "$rc" -eq 130 ] || fail "exit $rc after SIGINT, expected 130"
  [ -z "$(leftovers)" ] || fail "namespaces left after SIGINT: $(leftovers)"
  sleep 1
  ! pgrep -f "$work/i_runs/" > /dev/null || fail "gradwire_train still running after SIGINT"
  echo "ok: leftovers refused and cleaned; SIGINT removes the job and the namespaces"
  ;;
smoke)
  # With the PyTorch bridge built in this tree, the PyTorch example's run beside (torch:dgc).
  strategies=dgc
  if PYTHONPATH="$bin/../python" python3 -c 'import gradwire.torch' 2> /dev/null; then
    strategies=dgc,torch:dgc
  fi
  "${harness[@]}" --hosts 2 --rates 100 --strategies "$strategies" --epochs 1 --train-subset 4096 \
    --test-subset 1000 --probe-bytes 4194304 --target-accuracy 0.5 \
    --report "$work/report.json"
  rc=$?
  [ "$rc" -eq 77 ] && exit 77
  [ "$rc" -eq 0 ] || fail "the smoke run failed (exit $rc)"
  [ -z "$(leftovers)" ] || fail "namespaces left: $(leftovers)"
  "$bin/gradwire_check_report" "$work/report.json" \
    --min /probes/100/measured_over_predicted=0.75 --max /probes/100/measured_over_predicted=3 \
    --max /probes/100/wrong=0 --min /runs/0/rate_mbit=100 --max /runs/0/rate_mbit=100 \
    --min /runs/0/final_test_accuracy=0.5 --min /runs/0/time_to_target_seconds=0 \
    --min /runs/0/gradient_bytes_per_step=1 --min /runs/0/samples_per_second=1 \
    --min /runs/0/history/0/exchange_bytes=1 || fail "report figures"
  grep -q '"strategy": "dgc"' "$work/report.json" || fail "no dgc run in the report"
  if grep -q '"flavor": "openmpi"' "$bin/gw_mpi.json"; then
    grep -q '"btl_tcp_eager_limit": "4194304"' "$work/report.json" ||
      fail "the report's mpi_mca lacks the harness's eager limit"
  fi
  [ ! -e "$work/report_runs/hosts" ] || fail "the hosts' session folders were left behind"
  grep -q '"tcp_congestion_control": "cubic"' "$work/report.json" ||
    fail "the report does not say the hosts' TCP ran cubic (the harness's default)"
  grep -q '"speedup_vs_dense": null' "$work/report.json" || fail "speedup_vs_dense without dense"
  grep -q "^| dgc | " "$work/report.md" || fail "no dgc row in the Markdown report"
  if command -v gnuplot > /dev/null; then
    [ -s "$work/report.png" ] || fail "gnuplot is here but no plot was drawn"
    head -c 8 "$work/report.png" | od -c | grep -q "P   N   G" || fail "the plot is not a PNG"
  fi
  if [ "$strategies" = dgc,torch:dgc ]; then
    "$bin/gradwire_check_report" "$work/report.json" --min /runs/1/final_test_accuracy=0.3 \
      --min /runs/1/gradient_bytes_per_step=1 --min /runs/1/samples_per_second=1 \
      --min /runs/1/host_link_bytes_per_step_max=1 --min /runs/1/history/0/exchange_bytes=1 ||
      fail "the PyTorch example's figures"
    grep -q "^| torch:dgc | " "$work/report.md" || fail "no torch:dgc row in the Markdown report"
    echo "ok: the PyTorch example (torch:dgc) ran on the shaped cluster beside gradwire_train"
  fi
  echo "ok: shaped 2-host run, shaping in force, report and plot complete"
  ;;
hierarchy)
  # 2 hosts x 2 ranks, dense and dgc, flat and over two levels, at 100 Mbit/s: the two-level
  # exchange must send 2/3 of the flat ring's gradient bytes out of each host, by gradwire's
  # counters and by tc's on the hosts' links; dgc's sparse split over two levels about half of the
  # flat split's (Note [Sparse allreduce over two levels]); and every rank must find its host's
  # ranks (hostnames of their own).
  "${harness[@]}" --hosts 2 --ranks-per-host 2 --rates 100 --strategies dense,dgc \
    --exchange flat,hier --epochs 1 --train-subset 1024 --test-subset 500 --probe-bytes 1048576 \
    --target-accuracy 0.3 --report "$work/report.json"
  rc=$?
  [ "$rc" -eq 77 ] && exit 77
  [ "$rc" -eq 0 ] || fail "the 2x2 run failed (exit $rc)"
  [ -z "$(leftovers)" ] || fail "namespaces left: $(leftovers)"
  # tc's bytes follow the counters where the flat allreduce is the ring they assume: Open MPI,
  # which the harness sets to ring. MPICH 4.0 has no ring for it; its default moved fewer bytes
  # between the hosts than a ring, the same flat as over two levels (docs/TOPOLOGY.md).
  link=(--min /runs/1/vs_flat/host_link_bytes=0.55 --max /runs/1/vs_flat/host_link_bytes=0.78)
  grep -q '"flavor": "openmpi"' "$bin/gw_mpi.json" || link=(--max /runs/1/vs_flat/host_link_bytes=1.05)
  "$bin/gradwire_check_report" "$work/report.json" \
    --min /probes/100/measured_over_predicted=0.75 --max /probes/100/measured_over_predicted=3 \
    --min /runs/1/vs_flat/inter_node_bytes=0.66 --max /runs/1/vs_flat/inter_node_bytes=0.67 \
    "${link[@]}" --min /runs/0/inter_node_bytes_per_step=1 \
    --min /runs/3/vs_flat/inter_node_bytes=0.4 --max /runs/3/vs_flat/inter_node_bytes=0.6 \
    || fail "report figures"
  grep -q '"strategy": "dense@hier"' "$work/report.json" || fail "no dense@hier run"
  grep -q '"strategy": "dgc@hier"' "$work/report.json" || fail "no dgc@hier run"
  grep -q '"reason": "GRADWIRE_HIERARCHICAL=1: two levels, 2 node(s) x 2 rank(s)' \
    "$work/report_runs/100_dense_hier.json" || fail "the two-level run did not say so"
  grep -q '"reason": "GRADWIRE_HIERARCHICAL=0: flat' "$work/report_runs/100_dense_flat.json" ||
    fail "the flat run did not say so"
  grep -q "^| dense@hier | " "$work/report.md" || fail "no flat-against-two-level table"
  echo "ok: 2 hosts x 2 ranks, two levels send 2/3 of the flat dense bytes and about half of the flat dgc bytes between hosts"
  ;;
watchdog)
  out=$(GWLB_TEST_WATCHED= GWLB_TEST_LIMIT=10 "$0" "$src" "$bin" long 2>&1)
  rc=$?
  printf '%s\n' "$out" | tail -n 6
  if [ "$rc" -eq 77 ]; then exit 77; fi
  [ "$rc" -eq 124 ] || fail "exit $rc from long given 10 s, expected 124"
  printf '%s\n' "$out" | grep -q "FAIL: lowband_harness.sh long ran past its limit of 10 s" ||
    fail "the ended run did not say why"
  printf '%s\n' "$out" | grep -q "interrupted (SIGTERM): stopping the job and removing the namespaces" ||
    fail "the harness was not told (SIGTERM) to stop"
  printf '%s\n' "$out" | grep -q "^\[lowband\] namespaces removed$" ||
    fail "the harness did not remove its namespaces itself"
  [ -z "$(leftovers)" ] || fail "namespaces left after the limit: $(leftovers)"
  echo "ok: a run past its limit is ended, says so, and the harness removes its namespaces"
  ;;
long)
  "${harness[@]}" --hosts 2 --rates 10 --strategies dense --epochs 1 --probe-bytes 65536 \
    --train-subset 6400 --test-subset 100 --report "$work/long.json"
  rc=$?
  [ "$rc" -eq 77 ] && exit 77
  fail "the long run ended (exit $rc); it is meant to run past its limit"
  ;;
*) fail "mode '$mode': accepted options, unshaped, lifecycle, smoke, hierarchy, watchdog, long" ;;
esac
