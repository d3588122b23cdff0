#!/usr/bin/env bash
# Sets a fresh Debian 12 machine up for Continuum (run as root). Idempotent: a second run only checks.
#
#   scripts/setup.sh                 the core: the Debian packages the testbed and the report need, Go
#                                    (if missing or too old) and the module downloads. `make demo` runs
#                                    only this, then builds the binary: the quickstart needs nothing else.
#   scripts/setup.sh --dry-run       says what the core step would install and changes nothing.
#   scripts/setup.sh --stack NAME    builds or fetches one system's stack into the cache (below). Not
#                                    run by hand: `continuum setup NAME` runs it, after installing the
#                                    stack's Debian packages, and shows its progress; `make setup` runs
#                                    `continuum setup --yes all`. The stacks, their Debian packages and
#                                    what needs each are internal/setup/stacks.go's catalog.
#
# Everything heavy is cached outside the clone, keyed by the pinned versions (and the Go or Python
# release), under $CONTINUUM_CACHE (default ~/.cache/continuum), built into "<dir>.tmp.<pid>" and
# renamed when whole: an interrupted step leaves no half-built cache entry. A clone links what it
# uses into .tools. Lines starting "progress: " are for `continuum setup`'s progress line (one per Go
# package compiled, "progress: pkg NAME").
set -euo pipefail
cd "$(dirname "$0")/.."

# The core's Debian packages: network namespaces, nftables/iptables for the testbed's rules, ping
# and iperf3 for the tour and `bench testbed`'s loopback baseline, psmisc/procps for cleanup, curl
# and unzip to fetch Go. Keep in step with internal/setup's Core (a test compares them).
CORE_APT=(iproute2 iptables nftables iputils-ping procps psmisc ca-certificates unzip curl iperf3)
CROOT="${CONTINUUM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/continuum}"
TOOLS=.tools/bin

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "setup: must run as root (installs Debian packages and uses network namespaces/cgroups)" >&2
    exit 1
  fi
}

version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

core() { # core [--dry-run]
  local dry=${1:-} missing=() p
  for p in "${CORE_APT[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # Go toolchain: the one on PATH if it is new enough, otherwise the release named below from the
  # Go module proxy (golang.org/toolchain) into /usr/local/go.
  local want have tc=1.26.8
  want=$(awk '/^go [0-9]/ {print $2}' go.mod)
  have=$(go env GOVERSION 2>/dev/null | sed 's/^go//' || true)
  local needgo=0
  if [ -z "$have" ] || ! version_ge "$have" "$want"; then needgo=1; fi
  if [ "$dry" = --dry-run ]; then
    echo "setup (dry run): core Debian packages to install: ${missing[*]:-none}"
    if [ $needgo = 1 ]; then echo "setup (dry run): Go $tc to install (found '${have:-none}', go.mod wants $want)"; else echo "setup (dry run): Go ok ($have)"; fi
    echo "setup (dry run): system stacks: none (each installs on first use: continuum setup --status)"
    return
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    need_root
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  if [ $needgo = 1 ]; then
    need_root
    echo "setup: installing Go $tc (found '${have:-none}', go.mod wants $want)"
    local tmp
    tmp=$(mktemp -d)
    curl -fsSL -o "$tmp/go.zip" "${GOPROXY_URL:-https://proxy.golang.org}/golang.org/toolchain/@v/v0.0.1-go${tc}.linux-amd64.zip"
    unzip -q "$tmp/go.zip" -d "$tmp"
    rm -rf /usr/local/go && mv "$tmp/golang.org/toolchain@v0.0.1-go${tc}.linux-amd64" /usr/local/go
    rm -rf "$tmp"
    ln -sf /usr/local/go/bin/go /usr/local/bin/go
    ln -sf /usr/local/go/bin/gofmt /usr/local/bin/gofmt
  fi
  go mod download
  mkdir -p "$TOOLS"
  echo "setup: core ok ($(go env GOVERSION), $(uname -r)); system stacks install on first use: bin/continuum setup --status"
}

# go_tools NAME DIR LDFLAGS PKG...: builds each PKG's command, static, into the cached dir
# NAME-<hash of DIR's go.mod and go.sum>-<Go release> (one `go build` for all of them, so the
# linker runs in parallel) and links them into .tools/bin. Each compiled package is a progress line.
go_tools() {
  local name=$1 dir=$2 ld=$3; shift 3
  local key cache pkg missing=0
  key="$(cat "$dir/go.mod" "$dir/go.sum" | sha256sum | cut -c1-16)-$(go env GOVERSION)"
  cache="$CROOT/$name-$key"
  for pkg in "$@"; do [ -x "$cache/${pkg##*/}" ] || missing=1; done
  if [ $missing = 1 ]; then
    echo "setup: building $name (${*##*/}) into $cache"
    local tmp="$cache.tmp.$$" start=$SECONDS
    rm -rf "$tmp" && mkdir -p "$tmp"
    (cd "$dir" && CGO_ENABLED=0 go build -v -trimpath -ldflags "-s -w $ld" -o "$tmp/" "$@" 2>&1) |
      sed -u -e '/^go: downloading /d' -e 's/^/progress: pkg /'
    for pkg in "$@"; do [ -x "$tmp/${pkg##*/}" ] || { echo "setup: building $name: ${pkg##*/} missing" >&2; exit 1; }; done
    rm -rf "$cache" && mv "$tmp" "$cache"
    echo "setup: $name built in $((SECONDS - start)) s"
  fi
  mkdir -p "$TOOLS"
  for pkg in "$@"; do ln -sfn "$cache/${pkg##*/}" "$TOOLS/${pkg##*/}"; done
}

# etcd 3.6 (server, etcdctl, etcd's benchmark tool), built from the Go module proxy with the pinned
# wrapper module in tools/etcd, into etcd-<hash of its go.sum>-<Go release>. One build per binary:
# their package paths end in /v3, which would name all of them "v3".
etcd_tools() {
  local key cache b
  key="$(sha256sum tools/etcd/go.sum | cut -c1-16)-$(go env GOVERSION)"
  cache="$CROOT/etcd-$key"
  if [ ! -x "$cache/etcd" ] || [ ! -x "$cache/etcdctl" ] || [ ! -x "$cache/etcd-benchmark" ]; then
    echo "setup: building etcd, etcdctl and the etcd benchmark tool into $cache"
    local tmp="$cache.tmp.$$"
    rm -rf "$tmp" && mkdir -p "$tmp"
    (cd tools/etcd &&
      go build -v -o "$tmp/etcd" go.etcd.io/etcd/server/v3 2>&1 &&
      go build -v -o "$tmp/etcdctl" go.etcd.io/etcd/etcdctl/v3 2>&1 &&
      go build -v -o "$tmp/etcd-benchmark" go.etcd.io/etcd/v3/tools/benchmark 2>&1) |
      sed -u -e '/^go: downloading /d' -e 's/^/progress: pkg /'
    for b in etcd etcdctl etcd-benchmark; do [ -x "$tmp/$b" ] || { echo "setup: building etcd: $b missing" >&2; exit 1; }; done
    rm -rf "$cache" && mv "$tmp" "$cache" # whole or not at all
  fi
  mkdir -p "$TOOLS"
  for b in etcd etcdctl etcd-benchmark; do ln -sfn "$cache/$b" "$TOOLS/$b"; done
}

stack_baselines() {
  etcd_tools
  # Redis 7.0.15 built from its upstream source (Debian's orig tarball, checked by sha256) with the
  # jemalloc it bundles: Debian's redis-server links the system jemalloc, without which Redis
  # refuses `activedefrag yes` (seeds/000's δ). .tools/bin/redis-server and redis-cli come first in
  # the project's binary lookup (internal/baselines).
  local REDIS_VERSION=7.0.15
  local REDIS_SHA256=4b1dc4ee6d622a09fff9c6777191209750fb5e5a725ef78ea012d6eef4c22982
  local RCACHE="$CROOT/redis-$REDIS_VERSION-${REDIS_SHA256:0:16}"
  if [ ! -x "$RCACHE/redis-server" ] || [ ! -x "$RCACHE/redis-cli" ]; then
    echo "setup: building Redis $REDIS_VERSION with its bundled jemalloc into $RCACHE"
    local tmp="$RCACHE.tmp.$$"
    rm -rf "$tmp" && mkdir -p "$tmp/src"
    curl -fsSL -o "$tmp/redis.tar.gz" "http://deb.debian.org/debian/pool/main/r/redis/redis_$REDIS_VERSION.orig.tar.gz"
    echo "$REDIS_SHA256  $tmp/redis.tar.gz" | sha256sum -c --quiet -
    tar xzf "$tmp/redis.tar.gz" -C "$tmp/src" --strip-components=1
    make -C "$tmp/src" -j"$(nproc)" MALLOC=jemalloc BUILD_TLS=no >"$tmp/build.log" 2>&1 ||
      { tail -20 "$tmp/build.log" >&2; exit 1; }
    mv "$tmp/src/src/redis-server" "$tmp/src/src/redis-cli" "$tmp/"
    rm -rf "$tmp/src" "$tmp/redis.tar.gz"
    rm -rf "$RCACHE" && mv "$tmp" "$RCACHE"
  fi
  for b in redis-server redis-cli; do ln -sfn "$RCACHE/$b" "$TOOLS/$b"; done
  # Debian enables and starts redis-server and mosquitto on install; the project starts its own.
  local s
  for s in redis-server mosquitto; do
    if systemctl is-active --quiet "$s" 2>/dev/null; then systemctl disable --now "$s" >/dev/null 2>&1 || true; fi
  done
}

stack_stream() {
  # Apache Kafka 4.4.0 (KRaft mode): the jars of tools/kafka/pom.xml and their dependencies, resolved
  # by coordinates with Maven (its local repository under the cache dir); .tools/kafka links to it
  # and the broker runs as `java -cp '.tools/kafka/libs/*' kafka.Kafka server.properties`.
  local KAFKA_VERSION=4.4.0
  local KCACHE="$CROOT/kafka-$KAFKA_VERSION-$(sha256sum tools/kafka/pom.xml | cut -c1-16)"
  if [ ! -f "$KCACHE/libs/kafka_2.13-$KAFKA_VERSION.jar" ]; then
    echo "setup: resolving Apache Kafka $KAFKA_VERSION with Maven into $KCACHE"
    local tmp="$KCACHE.tmp.$$"
    rm -rf "$tmp" && mkdir -p "$tmp"
    (cd tools/kafka && mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$CROOT/m2" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp/libs")
    rm -rf "$KCACHE" && mv "$tmp" "$KCACHE"
  fi
  mkdir -p .tools && ln -sfn "$KCACHE" .tools/kafka
  # The Firebase JS SDK (npm firebase, pinned in tools/npm-firebase) for the realtime database's
  # WebSocket tests and dashboard; .tools/npm-firebase links to it.
  ./tools/npm-firebase/install.sh
}

stack_kubernetes() {
  # Kubernetes v1.37.2 (what `cluster up` runs: kube-apiserver, kube-controller-manager,
  # kube-scheduler, kubelet, kube-proxy; and kubectl), helm v4 and CoreDNS, built from the Go module
  # proxy with the wrapper modules in tools/kubernetes (k8s.io/kubernetes with each staging module
  # replaced by its published release), tools/helm and tools/coredns. The version is stamped with
  # -ldflags -X, as Kubernetes' own build does (otherwise v0.0.0-master). etcd too: the control
  # plane's comparisons (bench kube-store) run kube-apiserver on it.
  local KUBE_VERSION=v1.37.2
  local kube_ld="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1"
  kube_ld+=" -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean"
  kube_ld+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
  go_tools kubernetes tools/kubernetes "$kube_ld" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl \
    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet \
    k8s.io/kubernetes/cmd/kube-proxy
  go_tools helm tools/helm "-X helm.sh/helm/v4/internal/version.version=v4.3.1" helm.sh/helm/v4/cmd/helm
  go_tools coredns tools/coredns "" github.com/coredns/coredns
  etcd_tools
}

# Python: venvs of Debian's python3 with the pinned packages of a requirements file, cached keyed by
# that file and the interpreter's version, linked from .tools. The project's own packages are not
# installed in them: they are used from the clone's python/src (pytest's pythonpath, the services'
# PYTHONPATH), so one venv serves every clone. The .complete stamp is written last: a half-built venv
# is rebuilt.
# python_venv NAME REQUIREMENTS [--system-site-packages]: with --system-site-packages the venv also
# imports Debian's python3-* packages (the FL venv: Debian's PyTorch), and pip still installs every
# requirement into the venv (--ignore-installed), so only what the requirements leave out is Debian's.
python_venv() {
  local name=$1 req=$2 site=${3:-} PY=/usr/bin/python3 pyver
  pyver="$($PY -c 'import sys; print("py%d.%d" % sys.version_info[:2])')"
  local dir="$CROOT/$name-$(sha256sum "$req" | cut -c1-16)-$pyver"
  if [ ! -f "$dir/.complete" ]; then
    echo "setup: creating the Python venv $name in $dir"
    local start=$SECONDS
    rm -rf "$dir"
    "$PY" -m venv $site "$dir"
    "$dir/bin/python" -m pip install -q --disable-pip-version-check ${site:+--ignore-installed} -r "$req"
    touch "$dir/.complete"
    echo "setup: venv $name built in $((SECONDS - start)) s ($(du -sh "$dir" | cut -f1))"
  fi
  mkdir -p .tools && ln -sfn "$dir" ".tools/$name"
}

# The function runtimes and handlers (continuum_functions: pandas, Flask, Waitress); also the venv
# of the Python tests and linters (pytest, ruff).
stack_functions() { python_venv venv python/requirements.txt; }

# The federated-learning services (continuum_fl: PyTorch, Flower, scikit-learn), a venv of their
# own so that a function never loads PyTorch. PyTorch is Debian's CPU build (python3-torch with
# OpenBLAS, the stack's Debian packages; PyPI's is the 6 GB CUDA build: docs/fl.md, "The FL
# stack's size"), the rest comes from python/requirements-fl.txt. 1.3 GB in all.
stack_fl() { python_venv venv-fl python/requirements-fl.txt --system-site-packages; }

# What only the test suite needs beside the stacks: Chromium (Debian's), installed by `continuum
# setup` as the stack's Debian package; and the linters of `make lint`, pinned in tools/lint:
# staticcheck and govulncheck, built from the Go module proxy, and the Go vulnerability database.
# vuln.go.dev is not reachable from every machine, so the database comes from the module proxy too
# (golang.org/x/vulndb at the pinned pseudo-version; its data/osv holds every report) and is indexed
# by the repository's own indexdb into vulndb-<that version>, which govulncheck reads with
# -db file://. Updating the database is bumping that pin.
stack_test() {
  go_tools lint tools/lint "" honnef.co/go/tools/cmd/staticcheck golang.org/x/vuln/cmd/govulncheck \
    golang.org/x/vulndb/cmd/indexdb
  local ver osv cache
  ver="$(go -C tools/lint list -m -f '{{.Version}}' golang.org/x/vulndb)"
  cache="$CROOT/vulndb-$ver"
  if [ ! -f "$cache/index/db.json" ]; then
    echo "setup: indexing the Go vulnerability database $ver into $cache"
    (cd tools/lint && go mod download golang.org/x/vulndb)
    osv="$(go -C tools/lint list -m -f '{{.Dir}}' golang.org/x/vulndb)/data/osv"
    rm -rf "$cache.tmp.$$"
    "$TOOLS/indexdb" -vulns "$osv" -out "$cache.tmp.$$"
    rm -rf "$cache" && mv "$cache.tmp.$$" "$cache"
  fi
  ln -sfn "$cache" .tools/vulndb
}

case "${1:-}" in
"") core ;;
--dry-run) core --dry-run ;;
--stack)
  [ $# -eq 2 ] || { echo "usage: scripts/setup.sh --stack NAME (run by continuum setup NAME)" >&2; exit 2; }
  if ! declare -F "stack_$2" >/dev/null; then
    echo "setup: no stack $2 (continuum setup --status lists them)" >&2
    exit 2
  fi
  mkdir -p "$CROOT" "$TOOLS"
  "stack_$2"
  ;;
*)
  echo "usage: scripts/setup.sh [--dry-run | --stack NAME]" >&2
  exit 2
  ;;
esac
