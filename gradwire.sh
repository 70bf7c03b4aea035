#!/usr/bin/env bash
# gradwire's one entry point: ./gradwire.sh setup|build|demo|test|bench|gpu-check|readme-table|results
#
#   setup [--all|--torch] apt-get install what is missing (Debian 12; as root or with sudo);
#                 --all: also what --mpi mpich and --sanitize install; --torch: PyPI's torch alone
#   build [--sanitize=LIST [--mpi mpich] | CMAKE ARGS]  configure and build into ./build (Release);
#                 CUDA kernels too when nvcc is found; --sanitize: the sanitizer trees test
#                 --sanitize would build, built and not run
#   demo          setup, build gradwire_train alone (CUDA only where a GPU is usable), then train
#                 the reference MLP on Fashion-MNIST across 4 MPI ranks; a table of each phase's time
#   test [OPTIONS] [CTEST ARGS]  setup, build, then run every test but the long accuracy runs
#                 (label accuracy: ctest -L '^accuracy$', or ./gradwire.sh results --run; their
#                 CI-length twins, label accuracy-ci, run); OPTIONS:
#                 --mpi openmpi|mpich  the MPI to build and test against (default openmpi; mpich
#                                      installs MPICH beside it, builds ./build-mpich and runs
#                                      every test but the long accuracy runs)
#                 --repeat N           repeat each test until it fails, at most N times
#                 --stress             bursty CPU-bound workers (one per core) run beside the tests;
#                                      without -R/-L, the multi-rank and engine tests (docs/TESTING.md)
#                 --sanitize[=LIST]    instead of ./build, the sanitizer trees (installs clang and
#                                      libclang-rt-14-dev): ./build-asan (ASan+UBSan: every test but
#                                      the accuracy and low-bandwidth runs, plus the leak canary),
#                                      ./build-tsan (TSan: engine, fusion, engine failure, overlap
#                                      smoke) and ./build-fuzz (libFuzzer targets of tests/fuzz, each
#                                      FUZZ_SECONDS); LIST picks some of address,thread,fuzzer;
#                                      with --mpi mpich, address alone: ./build-asan-mpich against
#                                      MPICH, every test but the accuracy runs (what CI runs)
#   bench         setup, build, then run the benchmarks (reports in ./build/bench/)
#   bench lowband [OPTIONS]  setup, build, then train across a virtual cluster of shaped links
#                 (root; benchmarks/lowband/gradwire_lowband.py --help; report in ./build/lowband/)
#   gpu-check [--kit DIR | --prefix DIR] [--report PATH]  on a machine with a GPU: build
#                 ./build-gpu (CUDA on), run the GPU tests (ctest -L '^gpu$') and the benchmarks'
#                 --device cuda modes, write results/gpu/<date>_<GPU>.json and .md (or PATH); fails
#                 if a GPU test fails or skips. Dependencies: --kit, a staged offline kit (unpacked
#                 into ./build-gpu-deps), --prefix, one unpacked before, or else the system's.
#                 Without a usable GPU: exit 3 before building anything (docs/GPU.md). It runs
#                 tools/gpu_check.sh, whose --help lists its environment variables too
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
# BUILD_DIR_ASAN, BUILD_DIR_ASAN_MPICH, BUILD_DIR_TSAN, BUILD_DIR_FUZZ (--sanitize, default
# ./build-asan, ./build-asan-mpich, ./build-tsan, ./build-fuzz), JOBS (default: number of cores),
# NP (demo ranks, 4), STRESS_LOAD (--stress workers, default: the number of cores), FUZZ_SECONDS
# (--sanitize: each fuzz target's run, 30), TEST_JOBS (tests at once, default 1;
# Note "Tests one at a time"), USE_CCACHE (0: compile without ccache; Note "One compiler cache"),
# STAGE_TIMES (a file each phase's name, seconds and exit status are appended to: .ci/run's table),
# STAGE_BESIDE (1: this run's phases ran beside others, so the table leaves them out of its total);
# gpu-check's own (BUILD_DIR_GPU, GPU_DEPS_DIR, GPU_CHECK_*, ...): tools/gpu_check.sh --help.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}  # Note "One compiler cache"
JOBS=${JOBS:-$(nproc)}
NP=${NP:-4}

PACKAGES=(build-essential cmake pkg-config openmpi-bin libopenmpi-dev libopenblas-dev zlib1g-dev
          libcli11-dev nlohmann-json3-dev googletest libgtest-dev libgmock-dev libbenchmark-dev
          libdeflate-dev dataset-fashion-mnist iproute2 python3 gnuplot-nox ccache)
# MPICH beside Open MPI (./gradwire.sh test --mpi mpich); Open MPI stays the system's default MPI.
MPICH_PACKAGES=(mpich libmpich-dev)
MPICH_CONFIG=(-DMPI_C_COMPILER=mpicc.mpich -DMPI_CXX_COMPILER=mpicxx.mpich
              -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich)
# The sanitizer trees (./gradwire.sh test --sanitize): g++'s ASan, UBSan and TSan runtimes come with
# build-essential; libFuzzer and clang's own sanitizer runtimes with libclang-rt-14-dev.
SANITIZE_PACKAGES=(clang libclang-rt-14-dev)

log() { printf '\033[1m[gradwire]\033[0m %s\n' "$*"; }

# phase NAME COMMAND...: runs COMMAND, notes how long it took (in PHASE_FILE, made by the first
# phase, and in STAGE_TIMES's file for .ci/run's table), returns its status; tools/phase_times.py.
PHASE_FILE=""
trap 'stop_stress; [ -z "$PHASE_FILE" ] || rm -f "$PHASE_FILE"' EXIT
phase() {
  local name=$1 start=$SECONDS rc=0 file
  shift
  [ -n "$PHASE_FILE" ] || PHASE_FILE=$(mktemp)
  "$@" || rc=$?
  for file in "$PHASE_FILE" ${STAGE_TIMES:+"$STAGE_TIMES"}; do
    printf '%s\t%s\t%s%s\n' "$name" "$((SECONDS - start))" "$rc" \
      "$([ "${STAGE_BESIDE:-0}" = 1 ] && printf '\tbeside')" >> "$file"
  done
  return "$rc"
}

# Whether the CUDA driver finds a usable GPU here (tools/gpu_probe.py; Note "gpu-check needs a GPU").
gpu_usable() {
  command -v python3 >/dev/null 2>&1 && timeout 120 python3 "$ROOT/tools/gpu_probe.py" >/dev/null 2>&1
}

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

# Note "One compiler cache"
# The Release trees (./build, ./build-mpich, the demo's) compile through ccache where it is
# installed (setup installs it), with the checkout as its base directory: the MPICH tree then takes
# every object that does not include mpi.h from the Open MPI tree's compile of the same file, and a
# rebuilt tree, or a second clone, from the last. The sanitizer trees do not: each has flags of its
# own, so in a clean clone every file would miss, and a miss costs a preprocessor run besides the
# compile. USE_CCACHE=0 compiles without it.
cache_flags() {
  [ "${USE_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1 || return 0
  printf '%s\n' -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
}
cmd_configure() {
  log "configure: $BUILD_DIR"
  local cache=()
  mapfile -t cache < <(cache_flags)
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "${cache[@]}" "$@"
}
# compile [TARGET...]: everything, or the targets named.
compile() {
  log "build: $BUILD_DIR ($JOBS jobs${1:+: $*})"
  local targets=()
  [ $# -eq 0 ] || targets=(--target "$@")
  cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
}
cmd_build() {
  cmd_configure "$@"
  compile
}

# Note "The demo builds what it runs"
# The demo trains on the CPU, so it builds gradwire_train and what it links, not the tests, the
# benchmarks or, where no GPU is usable, the CUDA kernels (two architectures of them, most of the
# build's time on two cores). A tree configured before keeps its CUDA setting; ./gradwire.sh test
# turns CUDA on where nvcc is, so a test run after the demo compiles the kernels then.
cmd_demo() {
  local cuda=()
  phase install cmd_setup
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ] && ! gpu_usable; then
    cuda=(-DGRADWIRE_ENABLE_CUDA=OFF)
  fi
  phase configure cmd_configure "${cuda[@]}"
  phase "build gradwire_train" compile gradwire_train
  mpi_env
  mkdir -p "$BUILD_DIR/demo"
  log "demo: gradwire_train, MLP on Fashion-MNIST, $NP ranks (report: $BUILD_DIR/demo/report.json)"
  local rc=0
  phase train "$MPIEXEC" -n "$NP" "$BUILD_DIR/bin/gradwire_train" \
    --model mlp --epochs 3 --batch-size 32 --lr 0.05 --momentum 0.9 \
    --report "$BUILD_DIR/demo/report.json" "$@" || rc=$?
  python3 "$ROOT/tools/phase_times.py" demo "$PHASE_FILE" "$BUILD_DIR/demo/phases.json" \
    --command "./gradwire.sh demo" || true
  log "demo: phase times in $BUILD_DIR/demo/phases.json"
  return "$rc"
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
sanitize_tree() {  # sanitize_tree KIND MPI CTEST-ARGS...
  local kind=$1 mpi=$2; shift 2
  local dir target="" select=() config=(-DCMAKE_BUILD_TYPE=Debug -DGRADWIRE_SANITIZE="$kind")
  local name=${kind/address/asan}
  name=${name/thread/tsan}
  name=${name/fuzzer/fuzz}
  case "$kind" in
    address)
      if [ "$mpi" = mpich ]; then
        # Against MPICH, CI's only MPICH tree: every test but the accuracy runs (both lengths:
        # their strategies run in the shorter multi-rank and trainer tests too), the
        # low-bandwidth harness's included, whose launch of MPICH's Hydra is checked nowhere
        # else (docs/TESTING.md).
        dir=${BUILD_DIR_ASAN_MPICH:-$ROOT/build-asan-mpich}; name=asan-mpich
        config+=("${MPICH_CONFIG[@]}")
        select=(-LE 'accuracy')
      else
        dir=${BUILD_DIR_ASAN:-$ROOT/build-asan}
        # Every test but the accuracy runs and the low-bandwidth harness's (the namespaces,
        # links and rates it checks are not gradwire's memory; the trainer it runs is the one
        # the multi-rank tests run): docs/TESTING.md.
        select=(-LE 'accuracy|lowband')
      fi ;;
    thread)
      dir=${BUILD_DIR_TSAN:-$ROOT/build-tsan}; target=gw_sanitizer_tests; select=(-L tsan) ;;
    fuzzer)
      # -V: each target's few lines (its execution count) show when it passes too. Each target
      # is one single-threaded process that runs FUZZ_SECONDS: two at a time on two cores.
      dir=${BUILD_DIR_FUZZ:-$ROOT/build-fuzz}; target=gw_sanitizer_tests
      select=(-L fuzz -V -j "${TEST_JOBS:-$JOBS}")
      config+=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
               -DGRADWIRE_FUZZ_SECONDS="${FUZZ_SECONDS:-30}") ;;
  esac
  log "sanitize $kind: $dir ($JOBS jobs)"
  local BUILD_DIR=$dir
  phase "build $name" sanitize_build "$dir" "$target" "${config[@]}" || return 1
  [ "$SANITIZE_BUILD_ONLY" = 0 ] || return 0
  mpi_env
  phase "test $name" run_ctest "$dir" "${select[@]}" "$@"
}
sanitize_build() {  # sanitize_build DIR TARGET CONFIG...
  local dir=$1 target=$2
  shift 2
  cmake -S "$ROOT" -B "$dir" "$@" && cmake --build "$dir" -j "$JOBS" ${target:+--target "$target"}
}

# Note "Tests one at a time"
# CTest runs the suites one test at a time (TEST_JOBS, default 1; a later -j on the command line
# wins). Open MPI's ranks poll while they wait, so a multi-rank test takes both cores of a 2-core
# machine by itself, and several tests time their ranks' reactions; the tests that could share the
# machine, the single-process ones, are a small part of each suite (the longest of them keeps two
# OpenMP threads busy), so pairing them would save seconds for a chance of flakes. The fuzz
# targets, single-threaded and of fixed length, run two at a time.
run_ctest() {  # run_ctest DIR CTEST-ARGS...
  local dir=$1
  shift
  (cd "$dir" && ctest --output-on-failure -j "${TEST_JOBS:-1}" "$@")
}

SANITIZE_BUILD_ONLY=0  # build --sanitize: the trees are built, not tested
cmd_sanitize() {  # cmd_sanitize KINDS MPI CTEST-ARGS...
  local kinds=$1 mpi=$2; shift 2
  local failed=() kind start packages=("${SANITIZE_PACKAGES[@]}") done=passed
  if [ "$SANITIZE_BUILD_ONLY" = 1 ]; then
    [ $# -eq 0 ] || die "build --sanitize takes --mpi and nothing else; got: $*"
    done=built
  fi
  for kind in ${kinds//,/ }; do
    case "$kind" in
      address|thread|fuzzer) ;;
      *) die "--sanitize '$kind' is not known; accepted: address, thread, fuzzer (comma-separated)" ;;
    esac
  done
  if [ "$mpi" = mpich ]; then
    # The TSan suppressions and the fuzz targets' runs name Open MPI; ASan's do not need to.
    [ "$kinds" = address ] || die "--mpi mpich combines with --sanitize=address only, not '$kinds'"
    packages+=("${MPICH_PACKAGES[@]}")
  fi
  phase "install sanitizers" cmd_setup "${packages[@]}"
  for kind in ${kinds//,/ }; do
    start=$SECONDS
    if sanitize_tree "$kind" "$mpi" "$@"; then
      log "sanitize $kind: $done ($((SECONDS - start)) s)"
    else
      log "sanitize $kind: FAILED ($((SECONDS - start)) s)"
      failed+=("$kind")
    fi
  done
  [ ${#failed[@]} -eq 0 ] || { log "sanitize: failed: ${failed[*]}"; return 1; }
  log "sanitize: ${kinds//,/, } $done"
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
    [ "$stress" = 0 ] || die "--sanitize and --stress do not combine"
    cmd_sanitize "$sanitize" "$mpi" "${args[@]}"
    return
  fi
  if [ "$mpi" = mpich ]; then
    # A second tree against MPICH, beside the Open MPI one (the CUDA kernels do not depend on the
    # MPI, so this tree leaves them out).
    BUILD_DIR=${BUILD_DIR_MPICH:-$ROOT/build-mpich}
    phase "install mpich" cmd_setup "${MPICH_PACKAGES[@]}"
    phase "build mpich" cmd_build "${MPICH_CONFIG[@]}" -DGRADWIRE_ENABLE_CUDA=OFF
    # Every test but the accuracy runs, unless the command line selects.
    [ "$selected" = 1 ] || args+=(-LE accuracy)
  else
    phase install cmd_setup
    phase "install torch" "$ROOT/tools/install_torch.sh"  # the PyTorch bridge's (python/)
    # The CUDA kernels compile wherever nvcc is (Note "The demo builds what it runs"); where no
    # GPU can run them, the compile is the check: to PTX for one architecture (90-virtual), the
    # whole of nvcc's front end and device code generation, without ptxas's machine code.
    local cuda=(-DGRADWIRE_ENABLE_CUDA=ON)
    gpu_usable || cuda+=(-DCMAKE_CUDA_ARCHITECTURES=90-virtual)
    phase "build $mpi" cmd_build "${cuda[@]}"
    # Every test but the long accuracy runs (Note [Accuracy at two lengths]), unless the command
    # line selects.
    [ "$selected" = 1 ] || args+=(-LE '^accuracy$')
  fi
  mpi_env
  if [ "$stress" = 1 ]; then
    [ "$selected" = 1 ] || args+=(-L 'mpi|engine')
    start_stress
  fi
  log "test: ctest in $BUILD_DIR ($mpi)"
  local rc=0
  phase "test $mpi" run_ctest "$BUILD_DIR" "${args[@]}" || rc=$?
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

# Note "Sanitizer builds beside the suites"
# setup --all installs what --mpi mpich and --sanitize would too; build --sanitize=LIST builds the
# trees test --sanitize would, and tests nothing. .ci/run installs everything first, then builds
# the ASan tree while the Open MPI tree builds and its suite runs, and the TSan and libFuzzer trees
# while the ASan suite runs, at SCHED_IDLE (chrt --idle): their compilers get a core only when
# nothing else wants it, which a suite leaves free whenever its ranks start, wait on a file or
# sleep. A test's process preempts them at once; what the suites still lose is the caches and
# memory bandwidth the compilers share (CI's timing reports give both figures). What is left of
# the ASan build when the Open MPI suite ends builds at normal priority. Their phases are marked
# beside (STAGE_BESIDE) and left out of the table's total; the waits for them are phases of it.
cmd_setup_command() {
  [ "${1:-}" != --torch ] || { phase "install torch" "$ROOT/tools/install_torch.sh"; return; }
  [ "${1:-}" != --all ] || set -- "${MPICH_PACKAGES[@]}" "${SANITIZE_PACKAGES[@]}" "${@:2}"
  phase install cmd_setup "$@"
}
cmd_build_command() {
  case "${1:-}" in
    --sanitize|--sanitize=*) SANITIZE_BUILD_ONLY=1; cmd_test "$@" ;;
    *) cmd_setup; cmd_build "$@" ;;
  esac
}

case "${1:-}" in
  setup) shift; cmd_setup_command "$@" ;;
  gpu-check) shift; exec "$ROOT/tools/gpu_check.sh" "$@" ;;  # its --help; its exit codes
  build) shift; cmd_build_command "$@" ;;
  demo) shift; cmd_demo "$@" ;;
  test) shift; cmd_test "$@" ;;
  bench) shift; cmd_bench "$@" ;;
  readme-table) shift; cmd_readme_table "$@" ;;
  results) shift; cmd_results "$@" ;;
  *)
    awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'
    exit 2 ;;
esac
