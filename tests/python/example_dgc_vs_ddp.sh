#!/usr/bin/env bash
# example_dgc_vs_ddp.sh PYTHON EXAMPLE: the PyTorch example at 4 ranks (torchrun, Gloo) for one
# epoch with gradwire's dgc and with DDP's own allreduce: dgc within 0.5 points of DDP's test
# accuracy, at >= 300x fewer gradient bytes per step after warm-up. 77 without torch or gradwire.
set -eu
python=$1; example=$2
"$python" -c 'import gradwire.torch' 2>/dev/null || { echo "SKIPPED: no gradwire.torch"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
for c in dgc ddp; do
  echo "---- $c"
  timeout 500 "$python" -m torch.distributed.run --standalone --nproc-per-node 4 "$example" \
    --compressor "$c" --epochs 1 --report "$work/$c.json"
done
"$python" - "$work/dgc.json" "$work/ddp.json" <<'PY'
import json, sys
dgc, ddp = (json.load(open(f)) for f in sys.argv[1:])
drop = 100 * (ddp["final_test_accuracy"] - dgc["final_test_accuracy"])
ratio = ddp["gradient_bytes_per_step_after_warmup"] / dgc["gradient_bytes_per_step_after_warmup"]
print("dgc %.4f vs DDP %.4f (drop %.2f points); %.0f vs %.0f gradient B/step: %.0fx fewer"
      % (dgc["final_test_accuracy"], ddp["final_test_accuracy"], drop,
         dgc["gradient_bytes_per_step_after_warmup"], ddp["gradient_bytes_per_step_after_warmup"],
         ratio))
if drop > 0.5 or ratio < 300:
    sys.exit("FAIL: dgc must stay within 0.5 points of DDP at >= 300x fewer bytes")
PY
