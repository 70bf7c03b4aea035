#!/usr/bin/env bash
# A lower layer never includes a higher one; CUB and Thrust only in kernels/ (and there only from
# .cu files and the templates of kernels/thrust/); nccl.h only in plugin/comm/nccl/; cuBLAS and
# cuDNN only in reference_trainer/gpu/; CLI11 only in cli/; the pure strategy layers never include
# MPI or NCCL.
set -u
root=$1; cd "$root" || exit 2
fail=0
check() {  # check <folder> <regex of forbidden includes> <why>
  [ -d "$1" ] || return 0
  local hits
  hits=$(grep -rnE "#include [<\"]($2)" "$1" --include='*.h' --include='*.cc' --include='*.cu' || true)
  if [ -n "$hits" ]; then echo "FAIL: $3:"; echo "$hits"; fail=1; fi
}
check cli "kernels/|plugin/|fusion/|compressors/|sync_policies/|amp/|reference_trainer/" "cli/ includes a layer"
check common "kernels/|plugin/|fusion/|compressors/|sync_policies/|amp/|reference_trainer/" "common/ includes a layer"
check kernels "plugin/|fusion/|compressors/|sync_policies/|amp/|reference_trainer/" "kernels/ includes a higher layer"
for pure in fusion compressors sync_policies amp; do
  check "$pure" "plugin/|reference_trainer/|mpi.h|nccl.h" "$pure/ must stay pure"
done
check plugin "reference_trainer/" "plugin/ includes the trainer"
# DistributedOptimizer is the step's state machine; its collaborators (the parameter set, local
# SGD's averaging, the AMP step, the step timeline, the optimizer-state stream) are driven by it
# and never reach back into it or into the engine that runs its jobs.
for part in parameter_set local_sgd_averaging amp_step step_timeline optimizer_state_stream; do
  for f in plugin/$part.h plugin/$part.cc; do
    [ -f "$f" ] || { echo "FAIL: $f is missing (a collaborator of DistributedOptimizer)"; fail=1; continue; }
    hits=$(grep -nE '#include "plugin/(distributed_optimizer|engine)\.h"' "$f" || true)
    if [ -n "$hits" ]; then echo "FAIL: $f includes the state machine or its engine:"; echo "$hits"; fail=1; fi
  done
done
# The Thrust templates of kernels/thrust/ are the exception: written once, instantiated by .cu
# files and by a host-compiled OpenMP test (Note [One algorithm source]).
cub=$(grep -rlnE "#include [<\"](cub/|thrust/)" --include='*.h' --include='*.cc' kernels plugin reference_trainer 2>/dev/null | grep -v '^kernels/thrust/' || true)
if [ -n "$cub" ]; then echo "FAIL: CUB/Thrust included outside .cu files and kernels/thrust/: $cub"; fail=1; fi
# Outside their home folder: every source folder of the repository (tests, benchmarks and examples
# included), every C++ and CUDA file kind.
# The one exception: the OpenMP test of the Thrust templates (kernels_thrust_omp_test, each of its
# sources) names Thrust's OpenMP policy.
except='tests/kernels/(nn_|sparse_wire_|low_rank_)?thrust_omp_test\.cc'
only_under() {  # only_under <home folder> <regex of includes> <what>
  local hits
  hits=$(grep -rnE "#include [<\"]($2)" . --include='*.h' --include='*.cc' --include='*.cu' \
    --include='*.cuh' --include='*.hpp' --include='*.cpp' --exclude-dir=.git --exclude-dir='build*' |
    grep -vE "^\./$1/" | grep -vE "^\./($except):" || true)
  if [ -n "$hits" ]; then echo "FAIL: $3 included outside $1/:"; echo "$hits"; fail=1; fi
}
only_under kernels "cub/|thrust/" "CUB/Thrust"
only_under plugin/comm/nccl "nccl\.h" "nccl.h"
only_under reference_trainer/gpu "cublas|cudnn" "cuBLAS/cuDNN"
# Note [One translation unit includes CLI11] (cli/cli.h).
only_under cli "CLI/" "CLI11"
# The ASan tree's leak suppressions name the C library's asprintf, for Open MPI's calls of it
# (tests/sanitizers/lsan.supp): gradwire code must not call it, or its leaks would go unreported.
hits=$(grep -rnwE "v?asprintf" . --include='*.h' --include='*.cc' --include='*.cu' --include='*.c' \
  --exclude-dir=.git --exclude-dir='build*' || true)
if [ -n "$hits" ]; then echo "FAIL: asprintf is called (lsan.supp suppresses its leaks):"; echo "$hits"; fail=1; fi
[ $fail -eq 0 ] && echo "ok: layering holds"
exit $fail
