package kvtarget

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/loadgen/ycsb"
)

// YCSBFlags are `continuum load ycsb`'s flags. The ycsb kind renders its command line from the
// same struct (cli.Args), so a flag's name and default are declared once, here. A flag left at
// its default means what an absent flag means: the workload properties (proportions, request
// distribution, scan length) at 0 or "" take the preset's.
type YCSBFlags struct {
	Config YCSBConfig
	// Target is KIND=ENDPOINT[,...]; Workload the preset (a-f).
	Target, Workload string
	// Duration is the run phase's length; 0 means 30 s, or until --operationcount operations
	// are done when that is given.
	Duration time.Duration
}

// DefaultYCSBDuration is the run phase's length when neither --duration nor --operationcount
// bounds it.
const DefaultYCSBDuration = 30 * time.Second

// DefaultYCSBFlags are `continuum load ycsb`'s defaults: workload a, both phases, 1000 records.
func DefaultYCSBFlags() YCSBFlags {
	def := ycsb.DefaultConfig()
	cfg := YCSBConfig{YCSB: def}
	w := &cfg.YCSB.Workload
	// The properties a preset sets start at "not given".
	w.OperationCount, w.ReadProportion, w.UpdateProportion, w.InsertProportion = 0, 0, 0, 0
	w.ScanProportion, w.RMWProportion, w.RequestDistribution, w.MaxScanLength = 0, 0, "", 0
	cfg.YCSB.Run.Duration = 0
	return YCSBFlags{Config: cfg, Workload: "a"}
}

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *YCSBFlags) Bind(fs *pflag.FlagSet) {
	cfg := &f.Config
	w := &cfg.YCSB.Workload
	fs.StringVar(&f.Target, "target", f.Target, "etcd=http://HOST:PORT[,...], kv=http://HOST:PORT or redis=HOST:PORT (required)")
	fs.StringVar(&f.Workload, "workload", f.Workload, "YCSB core workload preset: a, b, c, d, e or f")
	fs.StringVar(&cfg.YCSB.Phase, "phase", cfg.YCSB.Phase, "load, run or both")
	fs.Int64Var(&w.RecordCount, "recordcount", w.RecordCount, "records the load phase inserts (and the run phase's key space)")
	fs.Int64Var(&w.OperationCount, "operationcount", w.OperationCount, "run-phase operations (default: until --duration ends)")
	fs.Float64Var(&w.ReadProportion, "readproportion", w.ReadProportion, "override the preset's read proportion")
	fs.Float64Var(&w.UpdateProportion, "updateproportion", w.UpdateProportion, "override the preset's update proportion")
	fs.Float64Var(&w.InsertProportion, "insertproportion", w.InsertProportion, "override the preset's insert proportion")
	fs.Float64Var(&w.ScanProportion, "scanproportion", w.ScanProportion, "override the preset's scan proportion")
	fs.Float64Var(&w.RMWProportion, "rmwproportion", w.RMWProportion, "override the preset's read-modify-write proportion")
	fs.StringVar(&w.RequestDistribution, "requestdistribution", w.RequestDistribution, "override the preset's distribution: uniform, zipfian or latest")
	fs.IntVar(&w.FieldCount, "fieldcount", w.FieldCount, "fields per record (the record is one value of fieldcount*fieldlength bytes)")
	fs.IntVar(&w.FieldLength, "fieldlength", w.FieldLength, "bytes per field")
	fs.IntVar(&w.MaxScanLength, "maxscanlength", w.MaxScanLength, "override the preset's longest scan")
	fs.StringVar(&w.InsertOrder, "insertorder", w.InsertOrder, "hashed or ordered key names")
	fs.Float64Var(&cfg.YCSB.Run.Rate, "rate", cfg.YCSB.Run.Rate, "open loop: operations/s")
	fs.IntVar(&cfg.YCSB.Run.Clients, "clients", cfg.YCSB.Run.Clients, "closed loop: clients (instead of --rate)")
	fs.DurationVar(&f.Duration, "duration", f.Duration, "run-phase duration, warm-up included (default 30s; with --operationcount alone: until the operations are done)")
	fs.DurationVar(&cfg.YCSB.Run.Warmup, "warmup", cfg.YCSB.Run.Warmup, "leading part of the run phase excluded from stats.json")
	fs.DurationVar(&cfg.YCSB.Run.Timeout, "timeout", cfg.YCSB.Run.Timeout, "per-request timeout, from the intended send time")
	fs.IntVar(&cfg.YCSB.Run.MaxInflight, "max-inflight", cfg.YCSB.Run.MaxInflight, "open loop: cap on outstanding requests")
	fs.IntVar(&cfg.YCSB.LoadClients, "load-clients", cfg.YCSB.LoadClients, "closed-loop clients of the load phase")
	fs.IntVar(&cfg.Conns, "conns", cfg.Conns, "client connections (default: 8 gRPC connections for etcd/kv, max(64, clients) for Redis)")
	fs.StringVar(&cfg.YCSB.Run.OutDir, "out", cfg.YCSB.Run.OutDir, "directory for the results files (none written if empty)")
	fs.Int64Var(&cfg.YCSB.Seed, "seed", cfg.YCSB.Seed, "seed of the operation, key and value sequence")
}

// Resolve is the configuration the flags describe: the target parsed, the preset with every
// workload property that was given (changed reports which flags were) on top of it, the closed
// loop when --clients came without --rate, and the run phase's length.
func (f *YCSBFlags) Resolve(changed func(flag string) bool) (YCSBConfig, error) {
	cfg := f.Config
	t, err := ParseTarget(f.Target)
	if err != nil {
		return cfg, err
	}
	cfg.Target = t
	preset, err := ycsb.Preset(f.Workload)
	if err != nil {
		return cfg, err
	}
	given, w := cfg.YCSB.Workload, &cfg.YCSB.Workload
	*w = preset
	for name, apply := range map[string]func(){
		"recordcount":         func() { w.RecordCount = given.RecordCount },
		"operationcount":      func() { w.OperationCount = given.OperationCount },
		"readproportion":      func() { w.ReadProportion = given.ReadProportion },
		"updateproportion":    func() { w.UpdateProportion = given.UpdateProportion },
		"insertproportion":    func() { w.InsertProportion = given.InsertProportion },
		"scanproportion":      func() { w.ScanProportion = given.ScanProportion },
		"rmwproportion":       func() { w.RMWProportion = given.RMWProportion },
		"requestdistribution": func() { w.RequestDistribution = given.RequestDistribution },
		"fieldcount":          func() { w.FieldCount = given.FieldCount },
		"fieldlength":         func() { w.FieldLength = given.FieldLength },
		"maxscanlength":       func() { w.MaxScanLength = given.MaxScanLength },
		"insertorder":         func() { w.InsertOrder = given.InsertOrder },
	} {
		if changed(name) {
			apply()
		}
	}
	if !changed("operationcount") {
		w.OperationCount = 0
	}
	if changed("clients") && !changed("rate") {
		cfg.YCSB.Run.Rate = 0 // --clients alone selects the closed loop
	}
	switch {
	case f.Duration > 0:
		cfg.YCSB.Run.Duration = f.Duration
	case w.OperationCount > 0:
		cfg.YCSB.Run.Duration = 0 // until the operations are done
	default:
		cfg.YCSB.Run.Duration = DefaultYCSBDuration
	}
	return cfg, nil
}
