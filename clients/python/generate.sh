#!/usr/bin/env bash
# Regenerates the Python stubs in lookahead/v1/ from api/proto with the
# grpcio-tools pinned in requirements.txt; commit the result.
#   clients/python/generate.sh          regenerate in place
#   clients/python/generate.sh --check  exit 1 when the committed stubs are stale
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
proto="$(cd "$here/../../api/proto" && pwd)"
python="${PYTHON:-$here/.venv/bin/python}"
if [ ! -x "$python" ]; then
  python3.11 -m venv "$here/.venv"
  "$here/.venv/bin/pip" install -q -r "$here/requirements.txt"
  python="$here/.venv/bin/python"
fi

gen() { # gen OUTDIR: writes OUTDIR/lookahead/v1/*_pb2*.py{,i}
  # -I is the proto root, so the modules import each other as
  # lookahead.v1.*_pb2, matching the package layout here.
  "$python" -m grpc_tools.protoc -I "$proto" \
    --python_out="$1" --pyi_out="$1" --grpc_python_out="$1" \
    "$proto"/lookahead/v1/*.proto
}

out="$here/lookahead/v1"
if [ "${1:-}" = "--check" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  gen "$tmp"
  if ! diff -r -x __init__.py -x __pycache__ -x py.typed "$tmp/lookahead/v1" "$out" >/dev/null; then
    echo "clients/python: generated stubs are stale; run clients/python/generate.sh and commit" >&2
    diff -r -q -x __init__.py -x __pycache__ -x py.typed "$tmp/lookahead/v1" "$out" >&2 || true
    exit 1
  fi
  exit 0
fi
rm -f "$out"/*_pb2.py "$out"/*_pb2.pyi "$out"/*_pb2_grpc.py
gen "$here"
