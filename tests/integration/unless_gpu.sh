#!/usr/bin/env bash
# unless_gpu.sh REPO_ROOT COMMAND...: runs COMMAND (and exits with its code) unless a CUDA GPU is
# usable here (tools/gpu_probe.py), in which case the check it makes does not apply: exit 77,
# which CTest shows as skipped (SKIP_RETURN_CODE).
set -u
root=$1; shift
if python3 "$root/tools/gpu_probe.py" >/dev/null 2>&1; then
  echo "SKIPPED: a CUDA GPU is usable here, so a check for the machine without one does not apply"
  exit 77
fi
exec "$@"
