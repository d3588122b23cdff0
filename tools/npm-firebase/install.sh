#!/usr/bin/env bash
# Installs the official Firebase JS SDK (npm `firebase`, pinned exactly in package.json and, with
# every dependency, in package-lock.json) for the realtime-db WebSocket tests (Node) and the
# dashboard (the browser modules the server serves). Called by scripts/setup.sh. Cached outside
# the clone like etcd, Redis and Kafka, keyed by the SDK's version and the lock file's hash, so a
# second run, or a fresh clone on the same machine, only checks and links .tools/npm-firebase.
# `npm ci` installs exactly the lock file, without running packages' install scripts (none is
# needed by the database SDK).
set -euo pipefail
cd "$(dirname "$0")/../.."

need_node() {
  echo "setup: the Firebase SDK tests need Node.js >= 20 with npm ($1); install them (e.g. Debian's nodejs and npm packages from a release that ships Node 20)" >&2
  exit 1
}
command -v node >/dev/null || need_node "node not found"
command -v npm >/dev/null || need_node "npm not found"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || need_node "found Node $(node --version)"

dir=tools/npm-firebase
version=$(node -p "require('./$dir/package.json').dependencies.firebase")
CROOT="${CONTINUUM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/continuum}"
NCACHE="$CROOT/npm-firebase-$version-$(sha256sum "$dir/package-lock.json" | cut -c1-16)"
if [ ! -f "$NCACHE/.complete" ]; then
  echo "setup: installing npm firebase $version into $NCACHE"
  tmp="$NCACHE.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  cp "$dir/package.json" "$dir/package-lock.json" "$tmp/"
  (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  touch "$tmp/.complete" # written last: a half-done install is redone
  rm -rf "$NCACHE" && mv "$tmp" "$NCACHE"
fi
mkdir -p .tools && ln -sfn "$NCACHE" .tools/npm-firebase
