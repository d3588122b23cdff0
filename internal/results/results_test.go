package results

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParamsAcceptScalarsAsText(t *testing.T) {
	var p Params
	if err := json.Unmarshal([]byte(`{"a": "1ms", "b": 100, "c": 0.5, "d": true, "e": "[{kind: kv}]"}`), &p); err != nil {
		t.Fatal(err)
	}
	want := Params{"a": "1ms", "b": "100", "c": "0.5", "d": "true", "e": "[{kind: kv}]"}
	if len(p) != len(want) {
		t.Fatalf("params %v, want %v", p, want)
	}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("%s = %q, want %q", k, p[k], v)
		}
	}
	err := json.Unmarshal([]byte(`{"a": {"x": 1}}`), &p)
	if err == nil || !strings.Contains(err.Error(), `parameter "a"`) {
		t.Errorf("an object value: err = %v, want one naming the parameter", err)
	}
	var empty Params
	if err := json.Unmarshal([]byte(`null`), &empty); err != nil || len(empty) != 0 {
		t.Errorf("null params: %v, %v", empty, err)
	}
}

func TestLabelPrefersTheShortLabel(t *testing.T) {
	p := Params{"components": "[{name: m1, kind: kv}]", "rate": "100"}
	l := map[string]string{"components": "kv"}
	if got := Label(p, l, "components"); got != "kv" {
		t.Errorf("labelled value shown as %q", got)
	}
	if got := Label(p, l, "rate"); got != "100" {
		t.Errorf("unlabelled value shown as %q", got)
	}
}

func TestAggregated(t *testing.T) {
	a := Aggregated([]float64{1, 2, 3})
	// mean 2, sample sd 1, t(2) = 4.303: half-width 4.303/sqrt(3).
	half := 4.303 / math.Sqrt(3)
	if a.N != 3 || a.Mean != 2 || math.Abs(a.CI95[0]-(2-half)) > 1e-9 || math.Abs(a.CI95[1]-(2+half)) > 1e-9 {
		t.Errorf("Aggregated(1,2,3) = %+v", a)
	}
	if one := Aggregated([]float64{7}); one != One(7) {
		t.Errorf("one value: %+v, want %+v", one, One(7))
	}
	if big := Aggregated(make([]float64, 200)); big.CI95 != [2]float64{0, 0} || big.N != 200 {
		t.Errorf("200 zeros: %+v", big)
	}
}

// stats.json's field names are the documented ones (docs/results-format.md): other tools read
// them, so renaming a Go field must not rename a key.
func TestStatsKeys(t *testing.T) {
	st := Stats{Series: map[string]SeriesStats{"edge": {Latency: LatencyStats{Count: 2, P999: 3}, Sent: 3, OK: 2, Errors: 1,
		ErrorsByType: map[string]int64{"timeout": 1}, QoS: &QoSStats{LatencyMS: 80, Below: []QoSBelow{{LatencyMS: 20, Count: 1}}},
		Instances: map[string]InstanceStats{"s1": {Requests: 3, Share: 1}}}}, Status: "ok"}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"series"`, `"latency_ms"`, `"p999"`, `"sent"`, `"ok"`, `"errors"`, `"throughput_rps"`,
		`"errors_by_type"`, `"qos"`, `"within_pct"`, `"below"`, `"instances"`, `"share"`, `"mean_ms"`, `"status"`, `"measured_s"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("stats.json lacks %s: %s", key, b)
		}
	}
	var back Stats
	if err := json.Unmarshal(b, &back); err != nil || back.Series["edge"].QoS.Below[0].Count != 1 {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

func TestReadJSONNamesFileAndLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, StatsFile)
	if err := os.WriteFile(path, []byte("{\n  \"series\": {\n    \"e\": {\"sent\": \"x\"}\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st Stats
	err := ReadJSON(path, &st)
	if err == nil || !strings.Contains(err.Error(), path+":3:") {
		t.Errorf("err = %v, want %s:3: ...", err, path)
	}
	if err := WriteJSON(path, Stats{Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := ReadJSON(path, &st); err != nil || st.Status != "ok" {
		t.Errorf("written and read back: %+v, %v", st, err)
	}
}

func FuzzParams(f *testing.F) {
	f.Add([]byte(`{"a": "1ms", "b": 100}`))
	f.Add([]byte(`{"a": [1]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Params
		if json.Unmarshal(b, &p) != nil {
			return
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var again Params
		if err := json.Unmarshal(out, &again); err != nil || len(again) != len(p) {
			t.Fatalf("re-read %s: %v, %v", out, again, err)
		}
	})
}

func TestMillis(t *testing.T) {
	if got := Millis(1234567 * time.Nanosecond); got != 1.234 {
		t.Fatalf("Millis(1.234567ms) = %v, want 1.234 (microsecond precision)", got)
	}
}
