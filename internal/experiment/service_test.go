package experiment

import (
	"strings"
	"testing"
)

// A service declaration takes the component's port unless it gives one; deferred components
// are started by exactly one start event.
func TestServiceAndDeferred(t *testing.T) {
	doc := strings.Replace(badBase, "    kind: test-server\n    node: edge1\n",
		"    kind: test-server\n    node: edge1\n    config: {port: 8123}\n    service: {name: dps, attributes: {tier: edge}}\n    deferred: true\n", 1)
	doc = strings.Replace(doc, "    kind: test-plain\n    node: edge1\n", "    kind: test-plain\n    node: edge1\n    service: {name: other, port: 81}\n", 1)
	doc = strings.Replace(doc, "  - at: 10s\n    action: pause\n    node: edge1\n", "  - after_requests: 10\n    action: start\n    component: echo\n", 1)
	s, err := ParseScenario("svc.yaml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	echo, plain := s.Components[0].service(), s.Components[1].service()
	if echo == nil || echo.Name != "dps" || echo.Port != 8123 || echo.Attributes["tier"] != "edge" || !s.Components[0].Deferred {
		t.Errorf("echo: service %+v deferred %v", echo, s.Components[0].Deferred)
	}
	if plain == nil || plain.Port != 81 {
		t.Errorf("plain: service %+v", plain)
	}
	// A --set of the component's port moves the service with it.
	s, err = ParseScenario("svc.yaml", []byte(doc), []string{"components.echo.config.port=9000"})
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Components[0].service().Port; p != 9000 {
		t.Errorf("service port %d after --set of the component's port, want 9000", p)
	}
	if s.Workloads[0].service() != nil {
		t.Error("a workload without service has one")
	}
}

func TestServiceAndDeferredInvalid(t *testing.T) {
	start := "  - after_requests: 10\n    action: start\n    component: echo\n"
	tests := []struct {
		name  string
		edits []string // old, new pairs applied to badBase
		want  string
	}{
		{"service on a workload", []string{"    config: {target: echo, rate: 5}\n", "    config: {target: echo, rate: 5}\n    service: {name: dps, port: 80}\n"},
			"workloads[0].service: only components can be instances of a service"},
		{"no port known", []string{"    kind: test-plain\n    node: edge1\n", "    kind: test-plain\n    node: edge1\n    service: {name: dps}\n"},
			"components[1].service: port is required: kind test-plain does not say which port it serves on"},
		{"bad service name", []string{"    kind: test-server\n    node: edge1\n", "    kind: test-server\n    node: edge1\n    service: {name: DPS}\n"},
			`service name "DPS": want a DNS label`},
		{"unknown service field", []string{"    kind: test-server\n    node: edge1\n", "    kind: test-server\n    node: edge1\n    service: {name: dps, prot: 1}\n"},
			`unknown field "prot"`},
		{"start of a running component", []string{"  - at: 10s\n    action: pause\n    node: edge1\n", start},
			`component "echo" starts with the run; declare it ` + "`deferred: true`"},
		{"start without component", []string{"  - at: 10s\n    action: pause\n    node: edge1\n", "  - at: 1s\n    action: start\n"},
			"action start needs component; deferred components: (none)"},
		{"start with other fields", []string{"  - at: 10s\n    action: pause\n    node: edge1\n", "  - at: 1s\n    action: start\n    component: echo\n    node: edge1\n"},
			"action start takes only component"},
		{"deferred never started", []string{"    kind: test-server\n    node: edge1\n", "    kind: test-server\n    node: edge1\n    deferred: true\n"},
			"echo is deferred but no event starts it"},
		{"deferred started twice", []string{"    kind: test-server\n    node: edge1\n", "    kind: test-server\n    node: edge1\n    deferred: true\n",
			"  - at: 10s\n    action: pause\n    node: edge1\n", start + start}, "echo is started by 2 events"},
		{"deferred workload", []string{"    config: {target: echo, rate: 5}\n", "    config: {target: echo, rate: 5}\n    deferred: true\n"},
			"workloads[0]: deferred applies to components only"},
		{"expect_failures on a component", []string{"    kind: test-server\n    node: edge1\n", "    kind: test-server\n    node: edge1\n    expect_failures: true\n"},
			"components[0]: expect_failures applies to workloads only"},
		{"unknown action lists start", []string{"action: pause", "action: explode"}, "restart, set, start"},
		{"port clash", []string{"    kind: test-plain\n    node: edge1\n", "    kind: test-server\n    node: edge1\n"},
			"plain listens on port 8000 of node edge1, like echo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := badBase
			for i := 0; i < len(tt.edits); i += 2 {
				next := strings.Replace(doc, tt.edits[i], tt.edits[i+1], 1)
				if next == doc {
					t.Fatalf("edit %q not found", tt.edits[i])
				}
				doc = next
			}
			_, err := ParseScenario("bad.yaml", []byte(doc), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// ServicePort makes the test server a kind that serves on one port, like http-echo.
