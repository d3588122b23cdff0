package kinds

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/spec"
)

// gatewayChange is a faas-gateway's `set` event: functions to scale by hand, as an operator
// would with `continuum faas scale` (OpenFaaS' scale API), e.g.
//
//	{at: 30s, action: set, component: gw, config: {functions: [{name: analytics, replicas: 4}]}}
type gatewayChange struct {
	Functions []struct {
		Name     string `yaml:"name"`
		Replicas *int   `yaml:"replicas"`
	} `yaml:"functions"`
}

// gatewaySet scales the named functions through the gateway's /system/scale-function, with the
// basic auth credentials the run's gateway generated into its output directory: the scale goes
// through the same door, and the same check, as an operator's.
func gatewaySet(ctx context.Context, env kind.Env, c *GatewayConfig, change *yaml.Node) error {
	var ch gatewayChange
	if err := spec.DecodeAt("", "config", change, &ch); err != nil {
		return fmt.Errorf("faas-gateway %s: set takes functions: [{name, replicas}]: %w", env.Instance, err)
	}
	if len(ch.Functions) == 0 {
		return fmt.Errorf("faas-gateway %s: set needs functions: [{name: NAME, replicas: N}]", env.Instance)
	}
	known := map[string]bool{}
	for _, f := range c.Functions {
		known[f.Name] = true
	}
	for i, f := range ch.Functions {
		switch {
		case !known[f.Name]:
			return fmt.Errorf("faas-gateway %s: set functions[%d]: no function %q on this gateway", env.Instance, i, f.Name)
		case f.Replicas == nil || *f.Replicas < 0:
			return fmt.Errorf("faas-gateway %s: set functions[%d] (%s): want replicas: N, 0 or more", env.Instance, i, f.Name)
		}
	}
	if env.Dial == nil {
		return nil // run --check
	}
	// Read, never generate: the gateway wrote them on its start.
	dir := gateway.SecretDir(env.OutDir)
	cred, _, err := gateway.AuthFiles{UserFile: filepath.Join(dir, gateway.UserFileName),
		PasswordFile: filepath.Join(dir, gateway.PasswordFileName)}.Load()
	if err != nil {
		return fmt.Errorf("faas-gateway %s: the run's gateway credentials: %w", env.Instance, err)
	}
	addr, ok := env.Nodes[env.Node]
	if !ok {
		return fmt.Errorf("faas-gateway %s: node %q has no address", env.Instance, env.Node)
	}
	cl := gateway.NewClient("http://"+net.JoinHostPort(addr, strconv.Itoa(c.Port)), &cred, false)
	cl.HTTP = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: env.Dial, DisableKeepAlives: true}}
	var errs []error
	for _, f := range ch.Functions {
		if err := cl.Scale(ctx, f.Name, *f.Replicas); err != nil {
			errs = append(errs, fmt.Errorf("faas-gateway %s: scale %s: %w", env.Instance, f.Name, err))
		}
	}
	return errors.Join(errs...)
}
