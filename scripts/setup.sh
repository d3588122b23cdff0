#!/usr/bin/env bash
# Installs everything Continuum needs on a fresh Debian 12 machine (run as root). Idempotent: a
# second run only checks. Called by `make setup`, which `make demo` and `make test` run first.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(iproute2 iptables nftables iputils-ping procps psmisc ca-certificates unzip curl python3 python3-venv redis-server mosquitto chromium gcc make libc6-dev openjdk-17-jre-headless maven containerd runc containernetworking-plugins haproxy iperf3)

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "setup: must run as root (installs Debian packages and uses network namespaces/cgroups)" >&2
    exit 1
  fi
}

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  need_root
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Go toolchain: use the one on PATH if it is new enough, otherwise fetch the release named in
# go.mod from the Go module proxy (golang.org/toolchain) into /usr/local/go.
want=$(awk '/^go [0-9]/ {print $2}' go.mod)
have=$(go env GOVERSION 2>/dev/null | sed 's/^go//' || true)
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }
if [ -z "$have" ] || ! version_ge "$have" "$want"; then
  need_root
  tc="1.26.8"
  echo "setup: installing Go $tc (found '${have:-none}', go.mod wants $want)"
  tmp=$(mktemp -d)
  curl -fsSL -o "$tmp/go.zip" "${GOPROXY_URL:-https://proxy.golang.org}/golang.org/toolchain/@v/v0.0.1-go${tc}.linux-amd64.zip"
  unzip -q "$tmp/go.zip" -d "$tmp"
  rm -rf /usr/local/go && mv "$tmp/golang.org/toolchain@v0.0.1-go${tc}.linux-amd64" /usr/local/go
  rm -rf "$tmp"
  ln -sf /usr/local/go/bin/go /usr/local/bin/go
  ln -sf /usr/local/go/bin/gofmt /usr/local/bin/gofmt
fi

go mod download

# Baselines: etcd 3.6 (server, etcdctl, etcd's benchmark tool), built from the Go module proxy with
# the pinned wrapper module in tools/etcd. The binaries are cached outside the clone, keyed by the
# pinned versions and the Go release, so a fresh clone on a machine that built them once only
# links them into .tools/bin (the build takes minutes).
TOOLS=.tools/bin
key="$(sha256sum tools/etcd/go.sum | cut -c1-16)-$(go env GOVERSION)"
CACHE="${CONTINUUM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/continuum}/etcd-$key"
if [ ! -x "$CACHE/etcd" ] || [ ! -x "$CACHE/etcdctl" ] || [ ! -x "$CACHE/etcd-benchmark" ]; then
  echo "setup: building etcd, etcdctl and the etcd benchmark tool into $CACHE"
  tmp="$CACHE.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  (cd tools/etcd &&
    go build -o "$tmp/etcd" go.etcd.io/etcd/server/v3 &&
    go build -o "$tmp/etcdctl" go.etcd.io/etcd/etcdctl/v3 &&
    go build -o "$tmp/etcd-benchmark" go.etcd.io/etcd/v3/tools/benchmark)
  rm -rf "$CACHE" && mv "$tmp" "$CACHE" # whole or not at all: an interrupted build leaves no cache
fi
mkdir -p "$TOOLS"
rm -f "$TOOLS"/.etcd-* # stamps of the in-clone build this replaced
for b in etcd etcdctl etcd-benchmark; do
  ln -sfn "$CACHE/$b" "$TOOLS/$b"
done
# Kubernetes v1.37.2 (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl) and
# helm v4, for the control-plane-on-kv tests, the chart's tests and the one-node cluster
# (docs/kubernetes.md). Built from the Go module proxy with the wrapper modules in tools/kubernetes
# (k8s.io/kubernetes with each staging module replaced by its published release) and tools/helm,
# static (CGO_ENABLED=0), cached like etcd: ~12 min on 2 cores the first time, then only checked.
# The version is stamped with -ldflags -X, as Kubernetes' own build does (otherwise v0.0.0-master).
go_tools() { # go_tools NAME DIR LDFLAGS PKG...: builds each PKG's command into the cached dir NAME-<key>
  local name=$1 dir=$2 ld=$3; shift 3
  local key cache b missing=0
  key="$(cat "$dir/go.mod" "$dir/go.sum" | sha256sum | cut -c1-16)-$(go env GOVERSION)"
  cache="${CONTINUUM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/continuum}/$name-$key"
  for pkg in "$@"; do [ -x "$cache/${pkg##*/}" ] || missing=1; done
  if [ $missing = 1 ]; then
    echo "setup: building $name (${*##*/}) into $cache"
    local tmp="$cache.tmp.$$" start=$SECONDS
    rm -rf "$tmp" && mkdir -p "$tmp"
    for pkg in "$@"; do
      (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ld" -o "$tmp/${pkg##*/}" "$pkg")
    done
    rm -rf "$cache" && mv "$tmp" "$cache"
    echo "setup: $name built in $((SECONDS - start)) s"
  fi
  for pkg in "$@"; do ln -sfn "$cache/${pkg##*/}" "$TOOLS/${pkg##*/}"; done
}
KUBE_VERSION=v1.37.2
kube_ld="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1"
kube_ld+=" -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean"
kube_ld+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
kube_tools() {
  go_tools kubernetes tools/kubernetes "$kube_ld" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl \
    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet \
    k8s.io/kubernetes/cmd/kube-proxy
  go_tools helm tools/helm "-X helm.sh/helm/v4/internal/version.version=v4.3.1" helm.sh/helm/v4/cmd/helm
  go_tools coredns tools/coredns "" github.com/coredns/coredns
}
# On a fresh machine this build is the longest step (~12 min of compiling): it runs in the
# background, beside the downloads below (Kafka's jars, PyTorch, the Firebase SDK), and setup
# waits for it at the end. Its output goes to a log that is shown when it fails.
kube_log=$(mktemp)
kube_tools >"$kube_log" 2>&1 &
kube_pid=$!
# Redis 7.0.15 built from its upstream source (Debian's orig tarball, checked by sha256) with the
# jemalloc it bundles: Debian's redis-server links the system jemalloc, without which Redis
# refuses `activedefrag yes` (seeds/000's δ). Cached like etcd, keyed by version and checksum
# (the build takes ~2.5 min on 2 cores); .tools/bin/redis-server and redis-cli come first in the
# project's binary lookup (internal/baselines).
REDIS_VERSION=7.0.15
REDIS_SHA256=4b1dc4ee6d622a09fff9c6777191209750fb5e5a725ef78ea012d6eef4c22982
RCACHE="${CONTINUUM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/continuum}/redis-$REDIS_VERSION-${REDIS_SHA256:0:16}"
if [ ! -x "$RCACHE/redis-server" ] || [ ! -x "$RCACHE/redis-cli" ]; then
  echo "setup: building Redis $REDIS_VERSION with its bundled jemalloc into $RCACHE"
  tmp="$RCACHE.tmp.$$"
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
for b in redis-server redis-cli; do
  ln -sfn "$RCACHE/$b" "$TOOLS/$b"
done
# Apache Kafka 4.4.0 (the kafka baseline, KRaft mode): the jars of tools/kafka/pom.xml and their
# dependencies, resolved by coordinates with Maven (its local repository under the cache dir),
# cached keyed by the pom's hash like etcd and Redis; .tools/kafka links to it and the broker
# runs as `java -cp '.tools/kafka/libs/*' kafka.Kafka server.properties` (internal/baselines).
KAFKA_VERSION=4.4.0
CROOT="${CONTINUUM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/continuum}"
KCACHE="$CROOT/kafka-$KAFKA_VERSION-$(sha256sum tools/kafka/pom.xml | cut -c1-16)"
if [ ! -f "$KCACHE/libs/kafka_2.13-$KAFKA_VERSION.jar" ]; then
  echo "setup: resolving Apache Kafka $KAFKA_VERSION with Maven into $KCACHE"
  tmp="$KCACHE.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  (cd tools/kafka && mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$CROOT/m2" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp/libs")
  rm -rf "$KCACHE" && mv "$tmp" "$KCACHE"
fi
mkdir -p .tools && ln -sfn "$KCACHE" .tools/kafka
# Python: venvs of Debian's python3 with the pinned packages of a requirements file, cached outside
# the clone, keyed by that file and the interpreter's version, and linked from .tools. The project's
# own packages are not installed in them: they are used from the clone's python/src (pytest's
# pythonpath, the services' PYTHONPATH), so one venv serves every clone. The .complete stamp is
# written last: a half-built venv is rebuilt.
PY=/usr/bin/python3
pyver="$($PY -c 'import sys; print("py%d.%d" % sys.version_info[:2])')"
python_venv() { # python_venv NAME REQUIREMENTS: builds the cached venv and links .tools/NAME to it
  local name=$1 req=$2
  local dir="${CONTINUUM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/continuum}/$name-$(sha256sum "$req" | cut -c1-16)-$pyver"
  if [ ! -f "$dir/.complete" ]; then
    echo "setup: creating the Python venv $name in $dir"
    local start=$SECONDS
    rm -rf "$dir"
    "$PY" -m venv "$dir"
    "$dir/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
    touch "$dir/.complete"
    echo "setup: venv $name built in $((SECONDS - start)) s ($(du -sh "$dir" | cut -f1))"
  fi
  ln -sfn "$dir" ".tools/$name"
}
# The function runtimes and handlers (continuum_functions: pandas, Flask, Waitress).
python_venv venv python/requirements.txt
# The federated-learning services (continuum_fl: PyTorch, Flower, scikit-learn): PyPI's torch is
# the CUDA build, ~5.8 GB installed and minutes to fetch, hence a venv of its own, built once per
# machine and requirements file.
python_venv venv-fl python/requirements-fl.txt
# The Firebase JS SDK (npm firebase, pinned in tools/npm-firebase) for the realtime-db WebSocket
# tests and dashboard, cached like the above; .tools/npm-firebase links to it.
./tools/npm-firebase/install.sh
# Debian enables and starts redis-server on install; the project starts its own instances.
if systemctl is-active --quiet redis-server 2>/dev/null; then systemctl disable --now redis-server >/dev/null 2>&1 || true; fi
if ! wait "$kube_pid"; then
  cat "$kube_log" >&2
  echo "setup: building the Kubernetes tools failed (log above)" >&2
  exit 1
fi
grep -v '^go: downloading' "$kube_log" || true
rm -f "$kube_log"
echo "setup: ok ($(go env GOVERSION), $(uname -r))"
