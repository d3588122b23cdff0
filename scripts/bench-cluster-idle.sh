#!/usr/bin/env bash
# The idle cost of a multi-node cluster by node count (issue 44): for each N, `continuum cluster
# up --nodes N` (n1..nN, each linked to each without delay; the control plane in n1), a settling
# period, then SECONDS of the cluster doing nothing but run itself: the CPU time of everything
# in the cluster's testbed cgroup (every node's daemons, the store and the control plane) and of
# the supervisor (the fabric, the API forwarder), and their memory (the testbed cgroup's
# memory.usage, which counts page cache too, and the sum of the processes' RSS, which counts
# shared binary pages once per process). Prints a Markdown table. Run as root after
# `make build` and `continuum image build --out images/`; cgroup v1 (this machine's) or v2.
#   scripts/bench-cluster-idle.sh [SECONDS] [N...]      (default: 60 s; 1 2 3 5 nodes)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
shift || true
NODES=("${@:-1 2 3 5}")
read -r -a NODES <<<"${NODES[*]}"
B=${CONTINUUM_BIN:-bin/continuum}
IMAGE=${IMAGE:-images/continuum.tar}
D=${OUT:-/tmp/bench-cluster-idle}
SETTLE=${SETTLE:-20}
rm -rf "$D" && mkdir -p "$D"
st=
trap '[ -n "$st" ] && "$B" cluster down --state-dir "$st" >/dev/null 2>&1' EXIT
cg_cpu_ns() { # cumulative CPU ns of cgroup path $1 (relative to the hierarchy)
  if [ -f "/sys/fs/cgroup/cpuacct/$1/cpuacct.usage" ]; then cat "/sys/fs/cgroup/cpuacct/$1/cpuacct.usage"
  else awk '$1=="usage_usec"{print $2*1000}' "/sys/fs/cgroup/$1/cpu.stat"; fi
}
cg_mem() { # bytes in use by cgroup path $1
  if [ -f "/sys/fs/cgroup/memory/$1/memory.usage_in_bytes" ]; then cat "/sys/fs/cgroup/memory/$1/memory.usage_in_bytes"
  else cat "/sys/fs/cgroup/$1/memory.current"; fi
}
cg_procs() { # pids of cgroup path $1 and below
  find "/sys/fs/cgroup/pids/$1" "/sys/fs/cgroup/$1" -name cgroup.procs 2>/dev/null | xargs cat 2>/dev/null | sort -u
}
pid_cpu_ns() { # utime+stime of pid $1 in ns
  awk -v hz="$(getconf CLK_TCK)" '{print ($14+$15)*1e9/hz}' "/proc/$1/stat"
}
echo "| nodes | CPU, cores (testbed cgroup) | CPU, cores (supervisor) | CPU, cores (total) | cgroup memory MiB | RSS sum MiB | processes |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for n in "${NODES[@]}"; do
  st="$D/n$n"
  "$B" cluster up --state-dir "$st" --image "$IMAGE" --nodes "$n" >"$D/up-$n.log" 2>&1
  tb=$("$B" cluster status --state-dir "$st" --testbed)
  sup=$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' "$st/state.json" | head -1)
  cg="continuum/$tb"
  sleep "$SETTLE"
  c0=$(cg_cpu_ns "$cg"); s0=$(pid_cpu_ns "$sup"); t0=$(date +%s.%N)
  sleep "$SECS"
  c1=$(cg_cpu_ns "$cg"); s1=$(pid_cpu_ns "$sup"); t1=$(date +%s.%N)
  mem=$(cg_mem "$cg")
  pids=$( (cg_procs "$cg"; echo "$sup") | sort -u)
  rss=0; np=0
  for p in $pids; do
    r=$(awk '/^VmRSS:/{print $2}' "/proc/$p/status" 2>/dev/null || true)
    [ -n "$r" ] && rss=$((rss + r)) && np=$((np + 1))
  done
  awk -v n="$n" -v c0="$c0" -v c1="$c1" -v s0="$s0" -v s1="$s1" -v t0="$t0" -v t1="$t1" -v mem="$mem" -v rss="$rss" -v np="$np" 'BEGIN {
    dt = (t1 - t0) * 1e9; cg = (c1 - c0) / dt; sv = (s1 - s0) / dt
    printf "| %d | %.3f | %.3f | %.3f | %.0f | %.0f | %d |\n", n, cg, sv, cg + sv, mem / 1048576, rss / 1024, np }'
  "$B" cluster down --state-dir "$st" >/dev/null
  st=
done
