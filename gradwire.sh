#!/usr/bin/env bash
# gradwire's one entry point: ./gradwire.sh setup|build|demo|test|bench|readme-table
#
#   setup         apt-get install what is missing (Debian 12; as root or with sudo)
#   build         configure and build into ./build (Release); CUDA kernels too when nvcc is found
#   demo          setup, build, then train the reference MLP on Fashion-MNIST across 4 MPI ranks
#   test          setup, build, then run every test (CTest)
#   bench         setup, build, then run the benchmarks (reports in ./build/bench/)
#   bench lowband [OPTIONS]  setup, build, then train across a virtual cluster of shaped links
#                 (root; benchmarks/lowband/gradwire_lowband.py --help; report in ./build/lowband/)
#   readme-table  regenerate the README's table of GRADWIRE_* variables from the registry
#
# Environment: BUILD_DIR (default ./build), JOBS (default: number of cores), NP (demo ranks, 4).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
JOBS=${JOBS:-$(nproc)}
NP=${NP:-4}

PACKAGES=(build-essential cmake pkg-config openmpi-bin libopenmpi-dev libopenblas-dev zlib1g-dev
          libcli11-dev nlohmann-json3-dev googletest libgtest-dev libgmock-dev libbenchmark-dev
          dataset-fashion-mnist iproute2 python3 gnuplot-nox)

log() { printf '\033[1m[gradwire]\033[0m %s\n' "$*"; }

mpi_env() {
  # OpenMPI refuses to run as root unless told twice; several ranks per core need one BLAS thread.
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
}

cmd_setup() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
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
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

cmd_demo() {
  cmd_setup
  cmd_build
  mpi_env
  mkdir -p "$BUILD_DIR/demo"
  log "demo: gradwire_train, MLP on Fashion-MNIST, $NP ranks (report: $BUILD_DIR/demo/report.json)"
  mpirun -np "$NP" --oversubscribe --bind-to none "$BUILD_DIR/bin/gradwire_train" \
    --model mlp --epochs 3 --batch-size 32 --lr 0.05 --momentum 0.9 \
    --report "$BUILD_DIR/demo/report.json" "$@"
}

cmd_test() {
  cmd_setup
  cmd_build
  mpi_env
  log "test: ctest in $BUILD_DIR"
  # Multi-rank tests oversubscribe the cores on their own: run one test at a time.
  (cd "$BUILD_DIR" && ctest --output-on-failure -j 1 "$@")
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
  mpirun -np "$NP" --oversubscribe --bind-to none "$BUILD_DIR/bin/gradwire_bench_allreduce" \
    --report "$BUILD_DIR/bench/allreduce.json" "$@"
  log "bench: gradwire_bench_compress, one thread (DGC top-k encode of 25M floats)"
  "$BUILD_DIR/bin/gradwire_bench_compress" --report "$BUILD_DIR/bench/compress.json"
  log "bench: gradwire_bench_fusion, $NP ranks (fused vs per-tensor and single allreduce)"
  mpirun -np "$NP" --oversubscribe --bind-to none "$BUILD_DIR/bin/gradwire_bench_fusion" \
    --report "$BUILD_DIR/bench/fusion.json"
  log "bench: gradwire_bench_overlap, $NP ranks (ResNet-50 backward stand-in vs exchange)"
  mpirun -np "$NP" --oversubscribe --bind-to none "$BUILD_DIR/bin/gradwire_bench_overlap" \
    --report "$BUILD_DIR/bench/overlap.json"
}

cmd_readme_table() {
  local table tmp
  table=$("$BUILD_DIR/bin/gradwire_train" --print-config markdown)
  tmp=$(mktemp)
  awk -v table="$table" '
    /<!-- config-table:begin -->/ { print; print table; skip = 1; next }
    /<!-- config-table:end -->/ { skip = 0 }
    !skip { print }' "$ROOT/README.md" > "$tmp"
  mv "$tmp" "$ROOT/README.md"
  log "README.md table regenerated"
}

case "${1:-}" in
  setup) shift; cmd_setup "$@" ;;
  build) shift; cmd_setup; cmd_build "$@" ;;
  demo) shift; cmd_demo "$@" ;;
  test) shift; cmd_test "$@" ;;
  bench) shift; cmd_bench "$@" ;;
  readme-table) shift; cmd_readme_table "$@" ;;
  *)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 2 ;;
esac
