#!/usr/bin/env bash
# The quickstart (scenarios/quickstart.yaml: device -10 ms- edge -50 ms- cloud, cloud cut off
# from 10 s to 20 s) on the testbed and on a three-node Kubernetes cluster of the same topology
# on the testbed's fabric (continuum cluster up --topology), REPEATS runs of each, alternating
# (testbed, cluster, testbed, ...) so that both see the machine's load alike. Prints a Markdown
# table of each run's p50, p99 and errors per target, then the medians and the cluster/testbed
# ratios. Run as root after `make build` and `continuum image build --out images/`:
#   scripts/bench-kubernetes-fabric.sh [REPEATS]      (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${1:-5}
B=${CONTINUUM_BIN:-bin/continuum}
IMAGE=${IMAGE:-images/continuum.tar}
D=${OUT:-/tmp/bench-kubernetes-fabric}
STATE="$D/cluster"
rm -rf "$D" && mkdir -p "$D/testbed" "$D/kubernetes"
"$B" cluster up --state-dir "$STATE" --image "$IMAGE" --topology scenarios/topologies/three-tier.yaml >"$D/cluster-up.log"
trap '"$B" cluster down --state-dir "$STATE" >/dev/null' EXIT
KC=$("$B" cluster status --state-dir "$STATE" --kubeconfig)
for i in $(seq "$REPEATS"); do
  "$B" run scenarios/quickstart.yaml --out "$D/testbed/$i" >"$D/testbed-$i.log" 2>&1
  "$B" run --platform kubernetes --kubeconfig "$KC" --pull-policy Never scenarios/quickstart.yaml --out "$D/kubernetes/$i" >"$D/kubernetes-$i.log" 2>&1
done
python3 - "$D" "$REPEATS" <<'EOF'
import glob, json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
rows = {}
for plat in ("testbed", "kubernetes"):
    for i in range(1, n + 1):
        (path,) = glob.glob(f"{d}/{plat}/{i}/quickstart-*/summary.json")
        m = json.load(open(path))["runs"][0]["metrics"]
        for t in ("edge", "cloud"):
            lat = m[f"load/{t}/latency_ms"]
            rows.setdefault((plat, t), []).append((lat["p50"], lat["p99"], m[f"load/{t}/errors"]["value"]))
print("| platform | target | run | p50 ms | p99 ms | errors |\n|---|---|---:|---:|---:|---:|")
for (plat, t), rs in rows.items():
    for i, (p50, p99, e) in enumerate(rs, 1):
        print(f"| {plat} | {t} | {i} | {p50:.2f} | {p99:.2f} | {e:.0f} |")
print("\n| target | median p50 testbed | median p50 cluster | ratio | median p99 testbed | median p99 cluster | ratio |\n|---|---:|---:|---:|---:|---:|---:|")
for t in ("edge", "cloud"):
    med = {p: [statistics.median(x[k] for x in rows[(p, t)]) for k in (0, 1)] for p in ("testbed", "kubernetes")}
    tb, k8s = med["testbed"], med["kubernetes"]
    print(f"| {t} | {tb[0]:.2f} | {k8s[0]:.2f} | {k8s[0]/tb[0]:.3f} | {tb[1]:.2f} | {k8s[1]:.2f} | {k8s[1]/tb[1]:.3f} |")
EOF
