#!/usr/bin/env bash
# Trains the same short runs with two builds of gradwire_train and compares them byte for byte:
# the saved parameters of every strategy (and topology), and the reports with their clock fields
# (and configuration keys only one build knows) left out. For a change that must not change a
# bit of training (a reshaping, a faster kernel with the same arithmetic).
#
#   tools/compare_builds.sh OLD_BIN NEW_BIN [OUT_DIR]   each BIN a build's bin/ (gradwire_train,
#                                                       gw_mpiexec); exit 1 if any run differs
set -u
old=${1:?usage: tools/compare_builds.sh OLD_BIN NEW_BIN [OUT_DIR]}
new=${2:?usage: tools/compare_builds.sh OLD_BIN NEW_BIN [OUT_DIR]}
out=${3:-$(mktemp -d)}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
short=(--no-progress --train-subset 4096 --test-subset 500 --max-steps 120)
differ=0

run() {  # run NAME RANKS [VAR=VALUE...]
  local name=$1 np=$2 side bin
  shift 2
  for side in old new; do
    bin=$old
    [ "$side" = new ] && bin=$new
    if ! env "$@" timeout 300 "$bin/gw_mpiexec" -n "$np" "$bin/gradwire_train" "${short[@]}" \
        --save-params "$out/$name.$side.params" --report "$out/$name.$side.json" \
        > "$out/$name.$side.log" 2>&1; then
      echo "$name: the $side build failed ($out/$name.$side.log)"
      differ=1
      return
    fi
  done
  if ! cmp -s "$out/$name.old.params" "$out/$name.new.params"; then
    echo "$name: parameters differ"
    differ=1
  elif ! python3 - "$out/$name.old.json" "$out/$name.new.json" <<'PY'; then
import json, re, sys
clock = re.compile(r"second|time|_ms|date|wall|per_s|samples|host|pid|elapsed|commit|command", re.I)
def strip(x, keys):
    if isinstance(x, dict):
        return {k: strip(v, keys) for k, v in x.items() if not clock.search(k) and k in keys}
    return [strip(v, keys) for v in x] if isinstance(x, list) else x
def keys(x):
    if isinstance(x, dict):
        return set(x) | set().union(*(keys(v) for v in x.values()))
    return set().union(*(keys(v) for v in x)) if isinstance(x, list) else set()
a, b = (json.load(open(p)) for p in sys.argv[1:])
common = keys(a) & keys(b)
sys.exit(0 if strip(a, common) == strip(b, common) else 1)
PY
    echo "$name: reports differ"
    differ=1
  else
    echo "$name: identical"
  fi
}

run dense 4
run dense_hier 4 GRADWIRE_HIERARCHICAL=1 GRADWIRE_HIERARCHY_LOCAL_SIZE=2
run fp16 4 GRADWIRE_COMPRESSOR=fp16
run topk 4 GRADWIRE_COMPRESSOR=topk
run topk_pairs 4 GRADWIRE_COMPRESSOR=topk GRADWIRE_SPARSE_WIRE=pairs
run dgc_2ranks 2 GRADWIRE_COMPRESSOR=dgc
run dgc_3ranks 3 GRADWIRE_COMPRESSOR=dgc
run dgc 4 GRADWIRE_COMPRESSOR=dgc
run dgc_allgather 4 GRADWIRE_COMPRESSOR=dgc GRADWIRE_SPARSE_ALGO=allgather
run dgc_hier 4 GRADWIRE_COMPRESSOR=dgc GRADWIRE_HIERARCHICAL=1 GRADWIRE_HIERARCHY_LOCAL_SIZE=2
run dgc_hier_2x3 6 GRADWIRE_COMPRESSOR=dgc GRADWIRE_HIERARCHICAL=1 GRADWIRE_HIERARCHY_LOCAL_SIZE=3
run dgc_warmup 4 GRADWIRE_COMPRESSOR=dgc GRADWIRE_DGC_SPARSITY=0.75,0.9375,0.984375,0.996,0.999 \
  GRADWIRE_DGC_RAMPUP_STEPS=100
run powersgd 4 GRADWIRE_COMPRESSOR=powersgd
run powersgd_r4 4 GRADWIRE_COMPRESSOR=powersgd GRADWIRE_POWERSGD_RANK=4
run local_sgd 4 GRADWIRE_SYNC=local_sgd GRADWIRE_LOCAL_SGD_K=8
run post_local_sgd 4 GRADWIRE_SYNC=post_local_sgd GRADWIRE_LOCAL_SGD_BEGIN_STEP=40 \
  GRADWIRE_LOCAL_SGD_K=8
run adaptive_local_sgd 4 GRADWIRE_SYNC=adaptive_local_sgd GRADWIRE_ADAPTIVE_INIT_K=16
run amp 4 GRADWIRE_AMP=1
run dgc_amp 4 GRADWIRE_COMPRESSOR=dgc GRADWIRE_AMP=1
echo "runs in $out"
exit "$differ"
