package spec

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

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

// The unit types parse and print the same strings in YAML, JSON and CLI flags, so a value copied
// from a resolved scenario or a results file can be pasted back into any of them unchanged.

// ParseDuration parses a Go duration ("10ms", "1.5s", "2m"). Bare numbers are rejected because a
// unit-less "10" is ambiguous (seconds? milliseconds?); "0" is accepted since it needs no unit.
func ParseDuration(s string) (Duration, error) {
	t := strings.TrimSpace(s)
	if t == "0" {
		return Duration{}, nil
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		return Duration{}, fmt.Errorf("invalid duration %q: a unit is required: want a number with unit ns, us, ms, s, m, h (e.g. 10ms, 1.5s)", s)
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return Duration{}, fmt.Errorf("invalid duration %q: want a number with unit ns, us, ms, s, m, h (e.g. 10ms, 1.5s)", s)
	}
	return Duration{d}, nil
}

// String prints the duration in Go syntax ("10ms", "1.5s", "1m0s"), which ParseDuration accepts.
func (d Duration) String() string { return d.Duration.String() }

// byteUnits are the accepted size suffixes; the order is the one used in error messages.
var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"", 1}, {"B", 1},
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
}

// ParseBytes parses a size: a number of bytes, optionally with a binary (Ki, Mi, Gi, Ti) or decimal
// (k, M, G, T, KB, MB, GB, TB) suffix. Fractions are allowed if the result is whole bytes ("1.5Gi").
func ParseBytes(s string) (Bytes, error) {
	const allowed = "want a number of bytes with optional unit Ki, Mi, Gi, Ti (1024-based) or k, M, G, T, KB, MB, GB, TB (1000-based), e.g. 512Mi"
	num, unit := splitNumber(strings.TrimSpace(s))
	for _, u := range byteUnits {
		if u.suffix != unit {
			continue
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || num == "" || math.IsNaN(v) || math.IsInf(v, 0) {
			break
		}
		if v < 0 {
			return 0, fmt.Errorf("invalid size %q: must not be negative", s)
		}
		b := v * float64(u.mult)
		if b > math.MaxInt64/2 {
			return 0, fmt.Errorf("invalid size %q: too large", s)
		}
		if b != math.Trunc(b) {
			return 0, fmt.Errorf("invalid size %q: not a whole number of bytes", s)
		}
		return Bytes(b), nil
	}
	return 0, fmt.Errorf("invalid size %q: %s", s, allowed)
}

// String prints the size with the largest binary unit that divides it exactly, else the largest
// decimal one, else in bytes: 536870912 -> "512Mi", 64000 -> "64k".
func (b Bytes) String() string {
	for _, u := range []struct {
		s string
		m int64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}, {"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"k", 1e3}} {
		if b != 0 && int64(b)%u.m == 0 {
			return strconv.FormatInt(int64(b)/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(int64(b), 10)
}

// bandwidthUnits follow tc: "bit" units are bits/s, "bps" units bytes/s; prefixes are decimal.
var bandwidthUnits = []struct {
	suffix string
	mult   int64 // bits/s per unit
}{
	{"bit", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9},
	{"bps", 8}, {"kbps", 8e3}, {"mbps", 8e6}, {"gbps", 8e9},
}

// ParseBandwidth parses a rate in tc's notation ("100Mbit", "10Mbps" = 80Mbit/s). Units are matched
// case-insensitively ("100mbit" works as in tc); a bare "0" means unlimited.
func ParseBandwidth(s string) (Bandwidth, error) {
	t := strings.TrimSpace(s)
	if t == "0" {
		return 0, nil
	}
	num, unit := splitNumber(t)
	for _, u := range bandwidthUnits {
		if u.suffix != strings.ToLower(unit) {
			continue
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || num == "" || math.IsNaN(v) || math.IsInf(v, 0) {
			break
		}
		if v < 0 {
			return 0, fmt.Errorf("invalid bandwidth %q: must not be negative", s)
		}
		r := v * float64(u.mult)
		if r > math.MaxInt64/2 {
			return 0, fmt.Errorf("invalid bandwidth %q: too large", s)
		}
		return Bandwidth(math.Round(r)), nil
	}
	return 0, fmt.Errorf("invalid bandwidth %q: want a number with unit bit, kbit, Mbit, Gbit, bps, kbps, Mbps, Gbps", s)
}

// String prints the rate in the largest bit unit that divides it exactly ("100Mbit", "1500bit").
func (b Bandwidth) String() string {
	if b == 0 {
		return "0"
	}
	for _, u := range []struct {
		s string
		m int64
	}{{"Gbit", 1e9}, {"Mbit", 1e6}, {"kbit", 1e3}} {
		if int64(b)%u.m == 0 {
			return strconv.FormatInt(int64(b)/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(int64(b), 10) + "bit"
}

// ParsePercent parses "10%" or "0.5%" into a fraction (0.1, 0.005). The % sign is required so that
// "0.5" cannot be misread as 50% or 0.5%.
func ParsePercent(s string) (Percent, error) {
	t := strings.TrimSpace(s)
	num, ok := strings.CutSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("invalid percentage %q: want a number from 0 to 100 followed by %%, e.g. 0.5%%", s)
	}
	if v < 0 || v > 100 {
		return 0, fmt.Errorf("invalid percentage %q: must be between 0%% and 100%%", s)
	}
	return Percent(v / 100), nil
}

// String prints the fraction as a percentage ("0.5%"), rounded to 9 significant decimals so that
// float noise from the /100 does not show.
func (p Percent) String() string {
	v := math.Round(float64(p)*100*1e9) / 1e9
	return strconv.FormatFloat(v, 'f', -1, 64) + "%"
}

// splitNumber splits "1.5Gi" into "1.5" and "Gi".
func splitNumber(s string) (num, unit string) {
	i := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r == '.' || r == '-' || r == '+')
	})
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// scalar returns the text of a scalar node, or an error positioned at n saying what was expected.
func scalar(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", &Error{Line: n.Line, Col: n.Column, Msg: fmt.Sprintf("want %s, got %s", what, describeNode(n))}
	}
	return n.Value, nil
}

// unmarshalScalar is the shared body of the UnmarshalYAML methods: errors carry the node's
// position (Decode adds the file name).
func unmarshalScalar[T any](n *yaml.Node, what string, parse func(string) (T, error), out *T) error {
	s, err := scalar(n, what)
	if err != nil {
		return err
	}
	v, err := parse(s)
	if err != nil {
		return &Error{Line: n.Line, Col: n.Column, Msg: err.Error()}
	}
	*out = v
	return nil
}

// unmarshalJSON accepts the string form, or a bare JSON number (passed to parse as written, so
// that the same "unit required" rules apply).
func unmarshalJSON[T any](data []byte, parse func(string) (T, error), out *T) error {
	s := string(data)
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
	}
	v, err := parse(s)
	if err != nil {
		return err
	}
	*out = v
	return nil
}

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	return unmarshalScalar(n, "a duration like 10ms", ParseDuration, d)
}
func (b *Bytes) UnmarshalYAML(n *yaml.Node) error {
	return unmarshalScalar(n, "a size like 512Mi", ParseBytes, b)
}
func (b *Bandwidth) UnmarshalYAML(n *yaml.Node) error {
	return unmarshalScalar(n, "a bandwidth like 100Mbit", ParseBandwidth, b)
}
func (p *Percent) UnmarshalYAML(n *yaml.Node) error {
	return unmarshalScalar(n, "a percentage like 10%", ParsePercent, p)
}

func (d Duration) MarshalYAML() (any, error)  { return d.String(), nil }
func (b Bytes) MarshalYAML() (any, error)     { return b.String(), nil }
func (b Bandwidth) MarshalYAML() (any, error) { return b.String(), nil }
func (p Percent) MarshalYAML() (any, error)   { return p.String(), nil }

func (d Duration) MarshalJSON() ([]byte, error)  { return json.Marshal(d.String()) }
func (b Bytes) MarshalJSON() ([]byte, error)     { return json.Marshal(b.String()) }
func (b Bandwidth) MarshalJSON() ([]byte, error) { return json.Marshal(b.String()) }
func (p Percent) MarshalJSON() ([]byte, error)   { return json.Marshal(p.String()) }

func (d *Duration) UnmarshalJSON(b []byte) error  { return unmarshalJSON(b, ParseDuration, d) }
func (b *Bytes) UnmarshalJSON(data []byte) error  { return unmarshalJSON(data, ParseBytes, b) }
func (b *Bandwidth) UnmarshalJSON(d []byte) error { return unmarshalJSON(d, ParseBandwidth, b) }
func (p *Percent) UnmarshalJSON(b []byte) error   { return unmarshalJSON(b, ParsePercent, p) }
