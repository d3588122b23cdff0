package proxybench

import (
	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/procstat"
)

// Variant is a proxy binary measured for memory only.
type Variant struct {
	Name string `json:"name"`
	Bin  string `json:"bin"`
}

// VariantResult is a build's memory and CPU.
type VariantResult struct {
	Name string `json:"name"`
	Bin  string `json:"bin"`
	// Size is the executable's size on disk.
	Size int64           `json:"size_bytes"`
	Idle procstat.Memory `json:"idle"`
	// Loaded is the highest memory sampled during a MemoryRate run; CPU the cores used.
	Loaded procstat.Memory `json:"loaded"`
	CPU    float64         `json:"cpu_cores"`
	P99    float64         `json:"p99_ms"`
	Error  string          `json:"error,omitempty"`
}

// Latency is one run's client-side statistics in milliseconds.
type Latency struct {
	P50           float64          `json:"p50_ms"`
	P90           float64          `json:"p90_ms"`
	P99           float64          `json:"p99_ms"`
	P999          float64          `json:"p999_ms"`
	Max           float64          `json:"max_ms"`
	ThroughputRPS float64          `json:"throughput_rps"`
	Errors        int64            `json:"errors"`
	ErrorsByType  map[string]int64 `json:"errors_by_type,omitempty"`
}

// Pair is one repeat at one rate: the direct run and the proxied run, back to back.
type Pair struct {
	Rate    float64 `json:"rate"`
	Repeat  int     `json:"repeat"`
	Direct  Latency `json:"direct"`
	Proxied Latency `json:"proxied"`
	// ProxyCPU is the proxy process's CPU use during the proxied run, in cores.
	ProxyCPU float64 `json:"proxy_cpu_cores"`
	// ProxyMem is the highest resident memory sampled during the proxied run.
	ProxyMem procstat.Memory `json:"proxy_memory"`
	// HAProxy is the same run through HAProxy, with its CPU and memory (nil: not measured).
	HAProxy    *Latency        `json:"haproxy,omitempty"`
	HAProxyCPU float64         `json:"haproxy_cpu_cores,omitempty"`
	HAProxyMem procstat.Memory `json:"haproxy_memory,omitzero"`
}

// Summary is one rate's medians over the repeats.
type Summary struct {
	Rate       float64 `json:"rate"`
	DirectP50  float64 `json:"direct_p50_ms"`
	DirectP99  float64 `json:"direct_p99_ms"`
	ProxiedP50 float64 `json:"proxied_p50_ms"`
	ProxiedP99 float64 `json:"proxied_p99_ms"`
	AddedP50   float64 `json:"added_p50_ms"` // median over repeats of proxied - direct
	AddedP99   float64 `json:"added_p99_ms"`
	// AddedP50Spread and AddedP99Spread are the per-repeat differences' spread.
	AddedP50Spread benchkit.Spread `json:"added_p50_spread_ms"`
	AddedP99Spread benchkit.Spread `json:"added_p99_spread_ms"`
	// MedianDiffP50/P99 are the differences of the medians (proxied - direct): with few
	// repeats on a busy machine the two estimates of the added latency can disagree, and the
	// goal is judged on the larger.
	MedianDiffP50 float64         `json:"median_diff_p50_ms"`
	MedianDiffP99 float64         `json:"median_diff_p99_ms"`
	RatioP50      float64         `json:"ratio_p50"` // median proxied / median direct
	RatioP99      float64         `json:"ratio_p99"`
	CPUPer1000RPS float64         `json:"proxy_cpu_cores_per_1000_rps"`
	ProxyMem      procstat.Memory `json:"proxy_memory_median"`
	Errors        int64           `json:"errors"`
	// Achieved throughputs (medians, req/s): below the rate when the machine could not
	// drive it (Short).
	DirectRPS  float64 `json:"direct_rps"`
	ProxiedRPS float64 `json:"proxied_rps"`
	HAProxyRPS float64 `json:"haproxy_rps,omitempty"`
	// Short says which runs fell more than 5% below the rate.
	Short string `json:"short,omitempty"`
	// HAProxy's figures, measured the same way (zero when not measured).
	HAProxy              bool            `json:"haproxy_measured"`
	HAProxyP50           float64         `json:"haproxy_p50_ms,omitempty"`
	HAProxyP99           float64         `json:"haproxy_p99_ms,omitempty"`
	HAProxyAddedP50      float64         `json:"haproxy_added_p50_ms,omitempty"`
	HAProxyAddedP99      float64         `json:"haproxy_added_p99_ms,omitempty"`
	HAProxyCPUPer1000RPS float64         `json:"haproxy_cpu_cores_per_1000_rps,omitempty"`
	HAProxyMem           procstat.Memory `json:"haproxy_memory_median,omitzero"`
	// CPURatio is the proxy's CPU per request over HAProxy's (<= 1: no more than HAProxy).
	CPURatio float64 `json:"cpu_ratio_vs_haproxy,omitempty"`
	// CPUFrom says which repeats the CPU figures come from when not all.
	CPUFrom string `json:"cpu_from,omitempty"`
}

// OneCore is one closed-loop run for the throughput on one core: the proxy under test alone on
// one CPU, as many requests as OneCoreClients clients get through.
type OneCore struct {
	Repeat int `json:"repeat"`
	// Mode is direct, continuum-proxy or haproxy.
	Mode string  `json:"mode"`
	Lat  Latency `json:"latency"`
	// CPU is the proxy process's CPU use in cores (0 for direct).
	CPU float64 `json:"cpu_cores"`
}

// OneCoreSummary is a mode's medians over the repeats.
type OneCoreSummary struct {
	Mode string  `json:"mode"`
	RPS  float64 `json:"rps"`
	CPU  float64 `json:"cpu_cores"`
	// RPSPerCore is RPS / CPU: requests per second of one core's time, comparable even when the
	// load generator, not the proxy, was the limit.
	RPSPerCore float64 `json:"rps_per_core,omitempty"`
	P99        float64 `json:"p99_ms"`
	Errors     int64   `json:"errors"`
	// Saturated says the proxy used at least 90% of its core: the rate is its limit, not the
	// load generator's.
	Saturated bool `json:"saturated"`
}

// Result is a whole benchmark.
type Result struct {
	// Header says what produced the result, where and when, and how busy the host was.
	benchkit.Header
	Config  Config `json:"config"`
	Version string `json:"proxy_version"`
	// IdleMem is the proxy's memory after start-up and one request, before any load.
	IdleMem procstat.Memory `json:"proxy_idle_memory"`
	Pairs   []Pair          `json:"pairs"`
	Summary []Summary       `json:"summary"`
	// HAProxyVersion is `haproxy -v`'s first line.
	HAProxyVersion string `json:"haproxy_version,omitempty"`
	// ProxyCPU and BenchCPUs say where the processes ran (ProxyCPU -1: not pinned).
	ProxyCPU  int   `json:"proxy_cpu"`
	BenchCPUs []int `json:"bench_cpus,omitempty"`
	// OneCore are the closed-loop runs, OneCoreSummary their medians per mode.
	OneCore        []OneCore        `json:"one_core,omitempty"`
	OneCoreSummary []OneCoreSummary `json:"one_core_summary,omitempty"`
	// Builds holds ProxyBin's figures at MemoryRate (first) and each variant's, each measured
	// on a fresh process.
	Builds []VariantResult `json:"builds"`
	// Goals are the verdicts against the proxy's goals (docs/proxy.md).
	Goals []benchkit.Goal `json:"goals"`
}
