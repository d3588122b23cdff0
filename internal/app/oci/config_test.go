package oci

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestParsePorts(t *testing.T) {
	got, err := ParsePorts(map[string]struct{}{"8080/tcp": {}, "53/udp": {}, "53/tcp": {}, "9000": {}, "7000-7002/TCP": {}})
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, p := range got {
		s = append(s, p.Protocol+"-"+strconv.Itoa(p.Number))
	}
	want := "tcp-53 udp-53 tcp-7000 tcp-7001 tcp-7002 tcp-8080 tcp-9000"
	if strings.Join(s, " ") != want {
		t.Errorf("ports %v, want %s (sorted by number, then protocol; ranges expanded)", s, want)
	}
	for k, msg := range map[string]string{"http/tcp": "not a port", "0/tcp": "not a port", "70000": "not a port",
		"9-1/tcp": "not a port", "80/icmp": "not tcp, udp or sctp", "1-2000/udp": "more than 1024"} {
		if _, err := ParsePorts(map[string]struct{}{k: {}}); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want %q", k, err, msg)
		}
	}
}

// TestReadConfig: the image config's ports, health check (StartInterval too, which
// go-containerregistry's struct lacks), stop signal and shell.
func TestReadConfig(t *testing.T) {
	img := image(t, v1.Config{ExposedPorts: map[string]struct{}{"80/tcp": {}}, StopSignal: "SIGQUIT", Shell: []string{"/bin/ash", "-c"},
		Healthcheck: &v1.HealthConfig{Test: []string{"CMD", "true"}, Interval: time.Second, Retries: 2}})
	c, err := ReadConfig(img)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Ports) != 1 || c.Ports[0] != (Port{80, "tcp"}) || c.StopSignal != "SIGQUIT" || c.Shell[0] != "/bin/ash" ||
		c.Health == nil || c.Health.Interval != time.Second || c.Health.Retries != 2 || c.Health.Test[1] != "true" {
		t.Errorf("config %+v health %+v", c, c.Health)
	}
	raw := []byte(`{"config":{"Healthcheck":{"Test":["CMD-SHELL","x"],"StartInterval":2000000000}}}`)
	var rc rawConfig
	if err := json.Unmarshal(raw, &rc); err != nil || rc.Config.Healthcheck.StartInterval != int64(2*time.Second) {
		t.Errorf("StartInterval: %+v %v", rc.Config.Healthcheck, err)
	}
	if c, err := ReadConfig(image(t, v1.Config{})); err != nil || c.Health != nil || len(c.Ports) != 0 {
		t.Errorf("an empty config: %+v %v", c, err)
	}
}

func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"8080/tcp", "53/udp", "7000-7002/tcp", "9000", "1-65535/sctp", "-/", "0x50/tcp"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		ports, err := ParsePorts(map[string]struct{}{k: {}})
		if err != nil {
			return
		}
		if len(ports) == 0 || len(ports) > maxExposed {
			t.Fatalf("%q: %d ports", k, len(ports))
		}
		for _, p := range ports {
			if p.Number < 1 || p.Number > 65535 || (p.Protocol != "tcp" && p.Protocol != "udp" && p.Protocol != "sctp") {
				t.Fatalf("%q: port %+v", k, p)
			}
		}
	})
}
