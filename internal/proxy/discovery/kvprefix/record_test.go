package kvprefix

import (
	"reflect"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
)

func TestParseRecord(t *testing.T) {
	tests := []struct {
		key, value string
		want       record
		wantErr    string
	}{
		{key: "dps/s1", value: `{"url": "http://10.0.0.1:8080"}`,
			want: record{inst: discovery.Instance{ID: "s1", Service: "dps", URL: "http://10.0.0.1:8080", Ready: true}}},
		{key: "dps/s1", value: `{"id": "s1", "service": "dps", "url": "http://h:1", "node": "n", "ready": false, "attributes": {"a": 1.50, "b": "x", "c": false}}`,
			want: record{inst: discovery.Instance{ID: "s1", Service: "dps", URL: "http://h:1", Node: "n",
				Attributes: map[string]string{"a": "1.50", "b": "x", "c": "false"}}}},
		{key: "web/default/pod-1", value: `{"url": "http://h:1"}`,
			want: record{inst: discovery.Instance{ID: "default/pod-1", Service: "web", URL: "http://h:1", Ready: true}}},
		{key: "_nodes/worker1", value: `{"cpu": 0.5}`, want: record{node: "worker1", load: discovery.NodeLoad{CPU: 0.5}}},
		{key: "_nodes/worker1", value: `{"cpu": 0.5, "memory": 1.25}`, want: record{node: "worker1", load: discovery.NodeLoad{CPU: 0.5, Memory: 1.25}}},

		{key: "dps", value: `{"url": "http://h:1"}`, wantErr: "want a key /p/<service>/<instance-id>"},
		{key: "dps/", value: `{"url": "http://h:1"}`, wantErr: "want a key"},
		{key: "-x/s1", value: `{"url": "http://h:1"}`, wantErr: `service "-x" in the key`},
		{key: "dps/s1", value: ``, wantErr: "empty value"},
		{key: "dps/s1", value: `{"url": `, wantErr: "invalid JSON"},
		{key: "dps/s1", value: `[1]`, wantErr: "want a JSON object"},
		{key: "dps/s1", value: `{"url": "http://h:1"} {}`, wantErr: "trailing data"},
		{key: "dps/s1", value: `{"url": "http://h:1", "adress": "x"}`, wantErr: `unknown field "adress"; allowed: id, service`},
		{key: "dps/s1", value: `{"url": 5}`, wantErr: "url: want a string, got number"},
		{key: "dps/s1", value: `{"url": "http://h:1", "ready": "yes"}`, wantErr: "ready: want true or false"},
		{key: "dps/s1", value: `{}`, wantErr: "url: required"},
		{key: "dps/s1", value: `null`, wantErr: "url: required"},
		{key: "dps/s1", value: `{"url": "http://h:1/path"}`, wantErr: "url: "},
		{key: "dps/s1", value: `{"url": "http://h:1", "service": "web"}`, wantErr: `service "web" in the value differs from "dps"`},
		{key: "dps/s1", value: `{"url": "http://h:1", "id": "s2"}`, wantErr: `id "s2" in the value differs from "s1"`},
		{key: "dps/s1", value: `{"url": "http://h:1", "attributes": {"a": [1]}}`, wantErr: "attributes.a: want a string, number or boolean"},
		{key: "dps/s1", value: `{"url": "http://h:1", "attributes": {"a": null}}`, wantErr: "attributes.a"},
		{key: "dps/s1", value: `{"url": "http://h:1", "attributes": {"": "x"}}`, wantErr: "empty attribute name"},
		{key: "_nodes/", value: `{"cpu": 0.5}`, wantErr: "node name"},
		{key: "_nodes/a/b", value: `{"cpu": 0.5}`, wantErr: "node name"},
		{key: "_nodes/w", value: `{"cpu": -0.1}`, wantErr: "cpu -0.1: want a fraction >= 0"},
		{key: "_nodes/w", value: `{"memory": "high"}`, wantErr: "memory: want a number"},
		{key: "_nodes/w", value: `{"cpu": 0.5, "disk": 0.1}`, wantErr: `unknown field "disk"; allowed: cpu, memory`},
	}
	for _, tc := range tests {
		t.Run(tc.key+" "+tc.value, func(t *testing.T) {
			got, err := parseRecord("/p/", []byte("/p/"+tc.key), []byte(tc.value))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// FuzzParseRecord: records are written by any service with access to the prefix, so the
// parser must never panic, and whatever it accepts must satisfy the snapshot's invariants.
func FuzzParseRecord(f *testing.F) {
	f.Add("dps/s1", `{"url": "http://10.0.0.1:8080", "attributes": {"a": 0.97}}`)
	f.Add("_nodes/w1", `{"cpu": 0.5, "memory": 0.2}`)
	f.Add("dps/s1", `{"url": "http://h:1", "ready": false, "id": "s1", "service": "dps"}`)
	f.Add("x", `[`)
	f.Fuzz(func(t *testing.T, key, value string) {
		r, err := parseRecord("/p/", []byte("/p/"+key), []byte(value))
		if err != nil {
			return
		}
		if r.node != "" {
			if r.load.CPU < 0 || r.load.Memory < 0 {
				t.Fatalf("negative load accepted: %+v", r)
			}
			return
		}
		if r.inst.ID == "" || !discovery.ValidServiceName(r.inst.Service) || discovery.CheckInstanceURL(r.inst.URL) != nil {
			t.Fatalf("invalid instance accepted: %+v", r.inst)
		}
		if r.inst.Service+"/"+r.inst.ID != key {
			t.Fatalf("instance %+v does not match key %q", r.inst, key)
		}
	})
}
