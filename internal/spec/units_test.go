package spec

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestParseUnits(t *testing.T) {
	tests := []struct {
		in      string
		parse   func(string) (any, error)
		want    any
		wantErr string
	}{
		{"10ms", pd, Duration{10 * time.Millisecond}, ""},
		{"1.5s", pd, Duration{1500 * time.Millisecond}, ""},
		{"0", pd, Duration{}, ""},
		{"10", pd, nil, "a unit is required"},
		{"1.5", pd, nil, "unit ns, us, ms, s, m, h"},
		{"ten", pd, nil, `invalid duration "ten"`},
		{"512Mi", pb, Bytes(512 << 20), ""},
		{"1Gi", pb, Bytes(1 << 30), ""},
		{"64k", pb, Bytes(64000), ""},
		{"1000", pb, Bytes(1000), ""},
		{"1.5Gi", pb, Bytes(3 << 29), ""},
		{"2MB", pb, Bytes(2e6), ""},
		{"0.5", pb, nil, "whole number of bytes"},
		{"-1Mi", pb, nil, "negative"},
		{"12X", pb, nil, "Ki, Mi, Gi, Ti"},
		{"100Mbit", pbw, Bandwidth(100e6), ""},
		{"1Gbit", pbw, Bandwidth(1e9), ""},
		{"500kbit", pbw, Bandwidth(500e3), ""},
		{"10Mbps", pbw, Bandwidth(80e6), ""},
		{"1000bit", pbw, Bandwidth(1000), ""},
		{"100mbit", pbw, Bandwidth(100e6), ""},
		{"0", pbw, Bandwidth(0), ""},
		{"100mb", pbw, nil, `invalid bandwidth "100mb": want a number with unit bit, kbit, Mbit, Gbit, bps, kbps, Mbps, Gbps`},
		{"1000", pbw, nil, "want a number with unit"},
		{"10%", pp, Percent(0.1), ""},
		{"0.5%", pp, Percent(0.005), ""},
		{"0%", pp, Percent(0), ""},
		{"100%", pp, Percent(1), ""},
		{"0.5", pp, nil, "followed by %"},
		{"101%", pp, nil, "between 0% and 100%"},
		{"-1%", pp, nil, "between 0% and 100%"},
	}
	for _, tt := range tests {
		got, err := tt.parse(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parse %q: error %v, want containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parse %q = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func pd(s string) (any, error)  { return ParseDuration(s) }
func pb(s string) (any, error)  { return ParseBytes(s) }
func pbw(s string) (any, error) { return ParseBandwidth(s) }
func pp(s string) (any, error)  { return ParsePercent(s) }

type unitDoc struct {
	D  Duration  `yaml:"d" json:"d"`
	B  Bytes     `yaml:"b" json:"b"`
	BW Bandwidth `yaml:"bw" json:"bw"`
	P  Percent   `yaml:"p" json:"p"`
}

func TestUnitsRoundTrip(t *testing.T) {
	in := unitDoc{Duration{1500 * time.Millisecond}, Bytes(3 << 29), Bandwidth(80e6), Percent(0.005)}
	y, err := yaml.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := "d: 1.5s\nb: 1536Mi\nbw: 80Mbit\np: 0.5%\n"; string(y) != want {
		t.Errorf("yaml = %q, want %q", y, want)
	}
	var back unitDoc
	if err := yaml.Unmarshal(y, &back); err != nil || back != in {
		t.Errorf("yaml round trip = %+v, %v", back, err)
	}
	j, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"d":"1.5s","b":"1536Mi","bw":"80Mbit","p":"0.5%"}`; string(j) != want {
		t.Errorf("json = %s, want %s", j, want)
	}
	back = unitDoc{}
	if err := json.Unmarshal(j, &back); err != nil || back != in {
		t.Errorf("json round trip = %+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"b": 1000}`), &back); err != nil || back.B != 1000 {
		t.Errorf("json bare bytes: %v %v", back.B, err)
	}
	if err := json.Unmarshal([]byte(`{"d": 10}`), &back); err == nil {
		t.Error("json bare duration accepted")
	}
}

func TestStringForms(t *testing.T) {
	for _, tt := range []struct {
		v    interface{ String() string }
		want string
	}{
		{Bytes(0), "0"}, {Bytes(1000), "1k"}, {Bytes(1023), "1023"}, {Bytes(4 << 20), "4Mi"},
		{Bandwidth(0), "0"}, {Bandwidth(1500), "1500bit"}, {Bandwidth(1e9), "1Gbit"},
		{Percent(0), "0%"}, {Percent(0.1), "10%"}, {Percent(1), "100%"},
		{Duration{10 * time.Millisecond}, "10ms"},
	} {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.v, got, tt.want)
		}
	}
}
