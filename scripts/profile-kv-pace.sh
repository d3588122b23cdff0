#!/usr/bin/env bash
# Profiles continuum kv under PACE (seeds/000's NPM platform workload) without the testbed: three
# members on loopback with pprof on, 4 producers x 3 consumers of one traffic class, each process
# using "its" member as in scenarios/shareddata/distributed-4x.yaml. After a warm-up it takes a 20 s CPU
# profile and a heap profile of member m1 and prints the members' RSS and CPU.
#   scripts/profile-kv-pace.sh [CLASS] [DURATION]      (default: wave 50s; run `make build` first)
#   go tool pprof -top /tmp/kv-pace-profile/cpu.pprof
set -euo pipefail
cd "$(dirname "$0")/.."
CLASS=${1:-wave}
DUR=${2:-50s}
B=${CONTINUUM_BIN:-bin/continuum}
D=${OUT:-/tmp/kv-pace-profile}
rm -rf "$D" && mkdir -p "$D"
IC="m1=http://127.0.0.1:23801,m2=http://127.0.0.1:23802,m3=http://127.0.0.1:23803"
members=()
for i in 1 2 3; do
  "$B" kv --name "m$i" --data-dir "$D/m$i" \
    --listen-client-urls "http://127.0.0.1:2337$i" --advertise-client-urls "http://127.0.0.1:2337$i" \
    --listen-peer-urls "http://127.0.0.1:2380$i" --initial-advertise-peer-urls "http://127.0.0.1:2380$i" \
    --initial-cluster "$IC" --initial-cluster-token profile \
    --listen-metrics-urls "http://127.0.0.1:2338$i" --enable-pprof >"$D/m$i.log" 2>&1 &
  members+=($!)
done
trap 'kill "${members[@]}" 2>/dev/null || true' EXIT
for i in 1 2 3; do
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:2338$i/health" >/dev/null && break; sleep 0.1; done
done
pace=()
for g in 1 2 3 4; do
  pm=$(( (g - 1) % 3 + 1 ))
  "$B" pace producer --backend kv --endpoints "http://127.0.0.1:2337$pm" --group "g$g" --id "p$g" \
    --class "$CLASS" --duration "$DUR" --out "$D/p$g" >/dev/null 2>&1 &
  pace+=($!)
  for c in 1 2 3; do
    "$B" pace consumer --backend kv --endpoints "http://127.0.0.1:2337$c" --group "g$g" --id "c$g$c" \
      --class "$CLASS" --consistency both --duration "$DUR" --out "$D/c$g$c" >/dev/null 2>&1 &
    pace+=($!)
  done
done
sleep 15
curl -sf -o "$D/cpu.pprof" "http://127.0.0.1:23381/debug/pprof/profile?seconds=20"
curl -sf -o "$D/heap.pprof" "http://127.0.0.1:23381/debug/pprof/heap"
ps -o pid=,rss=,pcpu= -p "$(IFS=,; echo "${members[*]}")" | awk '{printf "member pid %s: RSS %.0f MiB, CPU %s%% (since start)\n", $1, $2/1024, $3}'
wait "${pace[@]}" || true
echo "profiles and PACE results in $D"
