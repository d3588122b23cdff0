package ycsb

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Request distributions (YCSB's requestdistribution).
const (
	DistUniform = "uniform"
	DistZipfian = "zipfian"
	DistLatest  = "latest"
)

// Insert orders (YCSB's insertorder).
const (
	OrderHashed  = "hashed"
	OrderOrdered = "ordered"
)

// Operation names; they are the series names of the results (stats.json, timeseries.csv ...).
const (
	OpRead   = "read"
	OpUpdate = "update"
	OpInsert = "insert"
	OpScan   = "scan"
	OpRMW    = "rmw"
)

// Operation indices, in YCSB's order.
const (
	opRead = iota
	opUpdate
	opInsert
	opScan
	opRMW
	numOps
)

var opNames = [numOps]string{OpRead, OpUpdate, OpInsert, OpScan, OpRMW}

// Workload is a YCSB core workload; the fields are the properties of YCSB's workload files
// (names in the comments).
type Workload struct {
	// RecordCount is how many records the load phase inserts (recordcount).
	RecordCount int64 `json:"recordcount"`
	// OperationCount bounds the run phase (operationcount); 0 runs until the duration ends.
	OperationCount int64 `json:"operationcount"`
	// Proportions of the run phase's operations (readproportion, updateproportion,
	// insertproportion, scanproportion, readmodifywriteproportion); they need not sum to 1.
	ReadProportion   float64 `json:"readproportion"`
	UpdateProportion float64 `json:"updateproportion"`
	InsertProportion float64 `json:"insertproportion"`
	ScanProportion   float64 `json:"scanproportion"`
	RMWProportion    float64 `json:"readmodifywriteproportion"`
	// RequestDistribution picks keys: uniform, zipfian or latest (requestdistribution).
	RequestDistribution string `json:"requestdistribution"`
	// FieldCount and FieldLength size a record: FieldCount*FieldLength bytes of value.
	FieldCount  int `json:"fieldcount"`
	FieldLength int `json:"fieldlength"`
	// Scan lengths are drawn from [MinScanLength, MaxScanLength] uniformly or zipfian
	// (minscanlength, maxscanlength, scanlengthdistribution).
	MinScanLength          int    `json:"minscanlength"`
	MaxScanLength          int    `json:"maxscanlength"`
	ScanLengthDistribution string `json:"scanlengthdistribution"`
	// InsertOrder is hashed (keys spread over the key space) or ordered (insertorder).
	InsertOrder string `json:"insertorder"`
}

// DefaultWorkload is YCSB CoreWorkload's defaults: read only, uniform, 10 fields of 100 bytes.
func DefaultWorkload() Workload {
	return Workload{
		RecordCount: 1000, OperationCount: 1000, ReadProportion: 1,
		RequestDistribution: DistUniform, FieldCount: 10, FieldLength: 100,
		MinScanLength: 1, MaxScanLength: 1000, ScanLengthDistribution: DistUniform,
		InsertOrder: OrderHashed,
	}
}

// Preset returns YCSB's workloads/workload{a..f} (name "a" to "f", any case): A update heavy
// (50/50 read/update, zipfian), B read mostly (95/5), C read only, D read latest (95% read, 5%
// insert, latest), E short ranges (95% scan up to 100 records, 5% insert), F read-modify-write
// (50% read, 50% RMW).
func Preset(name string) (Workload, error) {
	w := DefaultWorkload()
	w.RequestDistribution = DistZipfian
	w.ReadProportion = 0
	switch strings.ToLower(strings.TrimPrefix(strings.ToLower(name), "workload")) {
	case "a":
		w.ReadProportion, w.UpdateProportion = 0.5, 0.5
	case "b":
		w.ReadProportion, w.UpdateProportion = 0.95, 0.05
	case "c":
		w.ReadProportion = 1
	case "d":
		w.ReadProportion, w.InsertProportion = 0.95, 0.05
		w.RequestDistribution = DistLatest
	case "e":
		w.ScanProportion, w.InsertProportion = 0.95, 0.05
		w.MaxScanLength = 100
	case "f":
		w.ReadProportion, w.RMWProportion = 0.5, 0.5
	default:
		return Workload{}, fmt.Errorf("workload %q: want one of a, b, c, d, e, f", name)
	}
	return w, nil
}

// maxValueBytes bounds a record (etcd's default request limit is 1.5 MiB).
const maxValueBytes = 1 << 20

// Validate checks the workload; errors name the YCSB property.
func (w Workload) Validate() error {
	props := []struct {
		name string
		v    float64
	}{{"readproportion", w.ReadProportion}, {"updateproportion", w.UpdateProportion},
		{"insertproportion", w.InsertProportion}, {"scanproportion", w.ScanProportion},
		{"readmodifywriteproportion", w.RMWProportion}}
	sum := 0.0
	for _, p := range props {
		if p.v < 0 || math.IsNaN(p.v) || math.IsInf(p.v, 0) {
			return fmt.Errorf("%s %v: must be >= 0", p.name, p.v)
		}
		sum += p.v
	}
	switch {
	case sum == 0:
		return errors.New("proportions: at least one of read, update, insert, scan and readmodifywrite must be > 0")
	case w.RecordCount < 1 || w.RecordCount > 1<<40:
		return fmt.Errorf("recordcount %d: must be between 1 and 2^40", w.RecordCount)
	case w.OperationCount < 0:
		return fmt.Errorf("operationcount %d: must be >= 0 (0: until the duration ends)", w.OperationCount)
	case w.RequestDistribution != DistUniform && w.RequestDistribution != DistZipfian && w.RequestDistribution != DistLatest:
		return fmt.Errorf("requestdistribution %q: want uniform, zipfian or latest", w.RequestDistribution)
	case w.FieldCount < 1 || w.FieldLength < 1 || w.FieldCount*w.FieldLength > maxValueBytes:
		return fmt.Errorf("fieldcount %d x fieldlength %d: each must be >= 1 and the record at most 1 MiB", w.FieldCount, w.FieldLength)
	case w.MinScanLength < 1 || w.MaxScanLength < w.MinScanLength:
		return fmt.Errorf("scan length [%d, %d]: want 1 <= minscanlength <= maxscanlength", w.MinScanLength, w.MaxScanLength)
	case w.ScanLengthDistribution != DistUniform && w.ScanLengthDistribution != DistZipfian:
		return fmt.Errorf("scanlengthdistribution %q: want uniform or zipfian", w.ScanLengthDistribution)
	case w.InsertOrder != OrderHashed && w.InsertOrder != OrderOrdered:
		return fmt.Errorf("insertorder %q: want hashed or ordered", w.InsertOrder)
	}
	return nil
}

// Ops lists the run phase's operation names with a non-zero proportion, in YCSB's order.
func (w Workload) Ops() []string {
	var ops []string
	for i, p := range w.proportions() {
		if p > 0 {
			ops = append(ops, opNames[i])
		}
	}
	return ops
}

func (w Workload) proportions() [numOps]float64 {
	return [numOps]float64{w.ReadProportion, w.UpdateProportion, w.InsertProportion, w.ScanProportion, w.RMWProportion}
}

// KeyName is YCSB's buildKeyName: "user" followed by the key number, hashed unless the insert
// order is ordered.
func (w Workload) KeyName(keynum int64) string {
	if w.InsertOrder != OrderOrdered {
		keynum = fnvHash64(keynum)
	}
	return "user" + strconv.FormatInt(keynum, 10)
}

// ValueSize is the bytes of one record.
func (w Workload) ValueSize() int { return w.FieldCount * w.FieldLength }
