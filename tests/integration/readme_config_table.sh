#!/usr/bin/env bash
# docs/CONFIGURATION.md's table of GRADWIRE_* variables is generated from the registry; it must match.
set -eu
bin=$1; readme=$2
expected=$("$bin/gradwire_train" --print-config markdown)
actual=$(sed -n '/<!-- config-table:begin -->/,/<!-- config-table:end -->/p' "$readme" | sed '1d;$d')
if [ "$expected" != "$actual" ]; then
  echo "docs/CONFIGURATION.md's GRADWIRE_* table is out of date; regenerate it with:"
  echo "  ./gradwire.sh readme-table"
  diff <(printf '%s\n' "$expected") <(printf '%s\n' "$actual") || true
  exit 1
fi
echo "ok: docs/CONFIGURATION.md table matches the registry ($(printf '%s\n' "$expected" | wc -l) lines)"
