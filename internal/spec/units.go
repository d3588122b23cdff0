package spec

import "time"

// Duration is a time.Duration written as "10ms", "1.5s", "2m" (Go syntax) in YAML.
// A bare integer is rejected (ambiguous unit).
type Duration struct{ time.Duration }

// Bytes is a size written as "512Mi", "1Gi", "64k", "1000" (bytes) in YAML.
// Binary suffixes Ki/Mi/Gi/Ti and decimal k/M/G/T (also KB/MB/GB) are accepted.
type Bytes int64

// Bandwidth is a rate in bits per second written as "100Mbit", "1Gbit", "500kbit", "10Mbps"
// (tc's conventions: "bit" = bits/s, "bps" = bytes/s).
type Bandwidth int64

// Percent is a probability written as "10%" or "0.5%" in YAML, stored as a fraction in [0, 1].
type Percent float64
