#!/usr/bin/env bash
# Builds a data folder whose training images file is cut short, lacks its gzip trailer or holds
# garbage (or a labels file is missing), and checks that
# a 2-rank run stops with a clear data error, a non-zero exit and no hang.
set -u
bin=$1; mpiexec=$2; mode=$3; src=/usr/share/datasets/fashion-mnist
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
if [ ! -d "$src" ]; then echo "SKIP: $src missing (install dataset-fashion-mnist)"; exit 77; fi
cp "$src"/* "$work"/
case "$mode" in
  truncated)
    gzip -dc "$src/train-images-idx3-ubyte.gz" | head -c 100000 > "$work/train-images-idx3-ubyte"
    rm "$work/train-images-idx3-ubyte.gz"; expect='truncated' ;;
  magic)
    printf '\x00\x00\x08\x01garbage-after-wrong-magic' | gzip > "$work/train-images-idx3-ubyte.gz"
    expect='wrong magic' ;;
  trailer)  # the gzip trailer (CRC-32 and length) cut off: the data itself is all there
    truncate -s -8 "$work/train-images-idx3-ubyte.gz"; expect='' ;;
  missing)
    rm "$work/train-labels-idx1-ubyte.gz"; expect='' ;;
esac
exec "$(dirname "$0")/expect_failure.sh" 60 "data error: .*(train-(images|labels).*$expect|not found.*train-labels)" -- \
  "$mpiexec" -n 2 "$bin/gradwire_train" --data-dir "$work" \
  --max-steps 2 --no-progress
