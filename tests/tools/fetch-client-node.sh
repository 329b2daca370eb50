#!/usr/bin/env bash
# Install @kubernetes/client-node, pinned by tests/clients/node/package-lock.json, into DIR/node_modules
# for tests/clients/test_client_node.py. Needs Node.js (20 or later) and npm.
# Usage: fetch-client-node.sh DIR
set -euo pipefail
dir=$(mkdir -p "$1" && cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../clients/node" && pwd)
cp "$src/package.json" "$src/package-lock.json" "$dir/"
npm ci --prefix "$dir" --ignore-scripts --no-audit --no-fund --loglevel=error
node -e "console.log('@kubernetes/client-node', require('$dir/node_modules/@kubernetes/client-node/package.json').version)"
