#!/usr/bin/env bash
# gpu_check_without_gpu.sh ROOT: ./gradwire.sh gpu-check where no GPU can be used.
#   - the GPU hidden from CUDA (CUDA_VISIBLE_DEVICES=-1, so this holds on a GPU machine too), and
#     as the machine is, where it has no GPU: exit 3, "no usable CUDA GPU on this machine (why);
#     nothing was tested", and no build tree, unpacked prefix or report made
#   - an nvidia-smi that lists a GPU no CUDA program can use, and one that fails: still exit 3,
#     the message quoting it (a GPU is usable when the CUDA driver says so, not nvidia-smi)
#   - command-line mistakes: exit 2, naming the mistake and the accepted options, on any machine;
#     --help: exit 0 and the usage
set -u
root=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run_check NAME EXPECTED_RC REGEX... -- gpu-check's arguments (env: the caller's)
run_check() {
  local name=$1 want=$2 out rc regex
  shift 2
  local regexes=()
  while [ "$1" != -- ]; do regexes+=("$1"); shift; done
  shift
  out=$(BUILD_DIR_GPU="$scratch/build-gpu" GPU_DEPS_DIR="$scratch/deps" JOBS=1 \
        timeout --kill-after=5 120 "$root/gradwire.sh" gpu-check "$@" 2>&1)
  rc=$?
  echo "---- $name: exit $rc"
  printf '%s\n' "$out" | tail -n 5
  [ "$rc" = "$want" ] || fail "$name: exit $rc, expected $want"
  for regex in "${regexes[@]}"; do
    printf '%s\n' "$out" | grep -Eq -- "$regex" || fail "$name: the output does not match: $regex"
  done
  for made in build-gpu deps report.json report.md; do
    [ ! -e "$scratch/$made" ] || fail "$name: gpu-check made $made; it must make nothing"
  done
}

none='gpu-check: no usable CUDA GPU on this machine \(.+\); nothing was tested'
CUDA_VISIBLE_DEVICES=-1 run_check "GPU hidden from CUDA" 3 "$none" "CUDA_VISIBLE_DEVICES='-1'" -- \
  --report "$scratch/report.json"

if python3 "$root/tools/gpu_probe.py" >/dev/null 2>&1; then
  echo "---- as the machine is: skipped, this machine has a usable GPU (gpu-check would test it)"
else
  run_check "as the machine is" 3 "$none" -- --report "$scratch/report.json"
fi

# nvidia-smi's answer does not decide: one that lists a GPU, and one that fails.
mkdir -p "$scratch/lists" "$scratch/fails"
printf '#!/bin/sh\necho "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-test)"\n' \
  > "$scratch/lists/nvidia-smi"
printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver."\nexit 9\n' \
  > "$scratch/fails/nvidia-smi"
chmod +x "$scratch/lists/nvidia-smi" "$scratch/fails/nvidia-smi"
PATH=$scratch/lists:$PATH CUDA_VISIBLE_DEVICES=-1 run_check "nvidia-smi lists a GPU" 3 "$none" \
  "nvidia-smi -L lists 1 GPU" --
PATH=$scratch/fails:$PATH CUDA_VISIBLE_DEVICES=-1 run_check "nvidia-smi fails" 3 "$none" \
  "nvidia-smi -L failed, exit 9: NVIDIA-SMI has failed" --

# Command-line mistakes: exit 2 before anything else, on any machine.
accepted='accepted: --kit DIR, --prefix DIR, --report PATH, --help'
run_check "unknown option" 2 "gpu-check: unknown option '--bogus'; $accepted" -- --bogus
run_check "option without its value" 2 "gpu-check: --kit needs a value; $accepted" -- --kit
run_check "option with an empty value" 2 "gpu-check: --report needs a value; $accepted" -- \
  --report=
run_check "--kit and --prefix" 2 "--kit and --prefix exclude each other" -- \
  --kit "$scratch" --prefix "$scratch"
run_check "--kit not a folder" 2 "--kit '$scratch/none' is not a folder" -- --kit "$scratch/none"
run_check "--kit not a staged kit" 2 "is not a staged kit: it lacks debs/\\*.deb" -- \
  --kit "$scratch/lists"
run_check "--prefix not unpacked" 2 "--prefix '$scratch/lists' holds no env.sh and cmake-args" -- \
  --prefix "$scratch/lists"
run_check "--report a folder" 2 "--report '$scratch' is a folder" -- --report "$scratch"

run_check "--help" 0 "gpu-check \\[--kit DIR \\| --prefix DIR\\] \\[--report PATH\\]" \
  "Without a usable GPU: exit 3" -- --help

if [ "$failures" != 0 ]; then
  echo "FAIL: $failures check(s) failed"
  exit 1
fi
echo "ok: gpu-check refuses to pass without a usable GPU, and its command-line errors are exit 2"
