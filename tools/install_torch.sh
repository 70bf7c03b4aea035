#!/usr/bin/env bash
# Installs PyPI's torch into the python3 on PATH where that Python cannot import it yet: what the
# PyTorch bridge (python/, gradwire.torch) builds against in ./build and its tests (tests/python)
# run with. PyPI's torch is its CUDA build, about 3 GB over some 30 wheels: it is installed with
# uv (itself from PyPI), which fetches and unpacks the wheels in parallel, several times sooner
# than pip; pip where uv cannot be had. Either compiles the bytecode at install (uv only when
# asked): where Python may not write it at import (PYTHONDONTWRITEBYTECODE, as on CI's image),
# every later `import torch` would compile torch's modules again.
# GRADWIRE_NO_TORCH=1 skips it (the bridge is then not built and its tests report skipped).
set -euo pipefail
say() { printf '\033[1m[gradwire]\033[0m torch: %s\n' "$*"; }
if [ "${GRADWIRE_NO_TORCH:-0}" = 1 ]; then
  say "not installed (GRADWIRE_NO_TORCH=1)"
elif version=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null); then
  say "$version present"
else
  py=$(python3 -c "import sys; print(sys.executable)")
  pip=(python3 -m pip install --quiet --no-input --disable-pip-version-check)
  if "${pip[@]}" uv && python3 -m uv --version > /dev/null; then
    say "uv pip install torch (PyPI) into $py"
    python3 -m uv pip install --quiet --no-cache --compile-bytecode --python "$py" 'torch>=2.4' numpy
  else
    say "pip install torch (PyPI) into $py"
    "${pip[@]}" 'torch>=2.4' numpy
  fi
fi
