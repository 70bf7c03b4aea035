#!/usr/bin/env bash
# Installs gradwire into a temporary prefix, builds examples/wrap_optimizer against the installed
# package (find_package(gradwire)) and runs it on 2 ranks.
set -eu
build=$1; src=$2; mpiexec=$3; work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
cmake -S "$src/examples/wrap_optimizer" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
cmake --build "$work/build" -j2 > "$work/build.log"
# In the ASan tree the example links the instrumented library but, built outside the tree, not
# what keeps Open MPI's components loaded: ASan's slow unwinder names their leaks instead.
# See Note "Open MPI's components stay loaded" (cmake/GradwireSanitizers.cmake).
if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"; fi
"$mpiexec" -n 2 "$work/build/wrap_optimizer"
