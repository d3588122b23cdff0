package kubernetes

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/spec"
)

func TestNewFromYAML(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a Pod, whatever runs the test
	kc := writeKubeconfig(t, "https://127.0.0.1:1")
	tests := []struct {
		name    string
		yaml    string
		wantErr []string // substrings; none: must succeed
		check   func(*testing.T, *Source)
	}{{
		name: "kubeconfig, namespace, selector and interval",
		yaml: "kubeconfig: " + kc + "\nnamespace: edge\nlabel_selector: continuum.io/route=true\nmetrics_interval: 30s\n",
		check: func(t *testing.T, s *Source) {
			if s.cfg.Namespace != "edge" || s.cfg.LabelSelector != "continuum.io/route=true" || s.cfg.MetricsInterval.Duration != 30*time.Second {
				t.Fatalf("config %+v", s.cfg)
			}
			if s.Name() != "kubernetes:edge,continuum.io/route=true" {
				t.Fatalf("name %q", s.Name())
			}
		},
	}, {
		name: "defaults: all namespaces, 15 s metrics",
		yaml: "kubeconfig: " + kc + "\n",
		check: func(t *testing.T, s *Source) {
			if s.cfg.MetricsInterval.Duration != DefaultMetricsInterval || s.Name() != "kubernetes:all-namespaces" {
				t.Fatalf("config %+v name %q", s.cfg, s.Name())
			}
		},
	}, {
		name:    "unknown key is named with a suggestion",
		yaml:    "kubeconfig: " + kc + "\nnamespce: edge\n",
		wantErr: []string{"2:1", `unknown field "namespce"`, `did you mean "namespace"`},
	}, {
		name:    "bad label selector",
		yaml:    "kubeconfig: " + kc + "\nlabel_selector: 'a b c'\n",
		wantErr: []string{"label_selector", "a b c"},
	}, {
		name:    "bad namespace",
		yaml:    "kubeconfig: " + kc + "\nnamespace: Not_A_Namespace\n",
		wantErr: []string{"namespace", "Not_A_Namespace"},
	}, {
		name:    "duration without unit",
		yaml:    "kubeconfig: " + kc + "\nmetrics_interval: 15\n",
		wantErr: []string{"metrics_interval", "unit"},
	}, {
		name:    "missing kubeconfig file",
		yaml:    "kubeconfig: /nonexistent/kubeconfig\n",
		wantErr: []string{"kubeconfig", "/nonexistent/kubeconfig"},
	}, {
		name:    "no kubeconfig outside a cluster",
		yaml:    "namespace: edge\n",
		wantErr: []string{"in-cluster config", "set kubeconfig"},
	}, {
		name:    "no value (`- kubernetes:`): defaults, so in-cluster config",
		yaml:    "~",
		wantErr: []string{"in-cluster config"},
	}, {
		name:    "not a mapping",
		yaml:    "edge\n",
		wantErr: []string{"want a mapping"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tc.yaml), &doc); err != nil {
				t.Fatal(err)
			}
			src, err := NewFromYAML(doc.Content[0])
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error; want %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, src.(*Source))
		})
	}
}

func TestRegistered(t *testing.T) {
	c, ok := discovery.LookupSource(YAMLKey)
	if !ok || c == nil {
		t.Fatalf("%q not registered; keys %v", YAMLKey, discovery.SourceKeys())
	}
	// The kubernetes platform's source: a scenario's proxy on `run --platform kubernetes`.
	if err := discovery.CheckPlatform("kubernetes:continuum-run1/run1"); err != nil {
		t.Errorf("the kubernetes platform has no source: %v", err)
	}
}

func TestPlatformConfig(t *testing.T) {
	cfg, err := PlatformConfig("continuum-q1/q1-001")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Namespace != "continuum-q1" || cfg.Kubeconfig != "" ||
		cfg.LabelSelector != "app.kubernetes.io/managed-by=continuum,continuum.io/run=q1-001,continuum.io/role=service" {
		t.Errorf("config %+v: want the run's declared services in its namespace, in-cluster", cfg)
	}
	for _, bad := range []string{"q1", "/q1", "Bad_NS/q1", "ns/", "ns/run with spaces"} {
		if _, err := PlatformConfig(bad); err == nil || !strings.Contains(err.Error(), "<namespace>/<run>") {
			t.Errorf("PlatformConfig(%q) = %v, want a refusal naming the form", bad, err)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{}, ""},
		{Config{Namespace: "edge-1", LabelSelector: "app in (a,b),!canary"}, ""},
		{Config{MetricsInterval: spec.Duration{Duration: -time.Second}}, "metrics_interval"},
		{Config{Namespace: "-x", LabelSelector: "=="}, "namespace"},
	}
	for _, tc := range tests {
		err := tc.cfg.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
