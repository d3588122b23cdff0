package experiment

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/platform"
)

// ActionStart is the event action that starts a component declared `deferred: true`: the
// instance joins the run at that moment (a service instance scaled out, a late node agent).
const ActionStart = "start"

// ServiceDecl declares a component an instance of a named service: the platform records it
// (platform.InstanceSpec.Service) and discovery sources such as `continuum proxy`'s testbed
// source route requests for the service to it.
//
//	components:
//	  - name: s1
//	    kind: http-echo
//	    node: worker1
//	    service: {name: dps, attributes: {accuracy: "0.97"}}
type ServiceDecl struct {
	Name string `yaml:"name"`
	// Port the instance serves the service on; default: the first endpoint its kind declares.
	Port       int               `yaml:"port,omitempty"`
	Attributes map[string]string `yaml:"attributes,omitempty"`
}

// checkService validates a component's service declaration.
func (c *checker) checkService(list string, i int, inst *Instance, role kind.Role) {
	if inst.Service == nil {
		return
	}
	where := fmt.Sprintf("%s[%d].service", list, i)
	n := c.at(list, i, "service")
	if role != kind.RoleComponent {
		c.errorf(n, "%s: only components can be instances of a service", where)
		return
	}
	svc := inst.service()
	if svc.Port == 0 {
		c.errorf(n, "%s: port is required: kind %s does not say which port it serves on", where, inst.Kind)
		return
	}
	if err := svc.Validate(); err != nil {
		c.errorf(n, "%s: %v", where, err)
	}
}

// service is the platform's form of the instance's service declaration (nil without one), the
// port defaulting to the component's own. It is computed when needed, not stored, so that a
// sweep or --set of the component's port moves the service with it.
func (inst *Instance) service() *platform.Service {
	s := inst.Service
	if s == nil {
		return nil
	}
	port := s.Port
	if port == 0 {
		k, _ := kind.Lookup(inst.Kind)
		if eps := k.EndpointsOf(inst.DecodedConfig); len(eps) > 0 {
			port = eps[0].Port
		}
	}
	return &platform.Service{Name: s.Name, Port: port, Attributes: s.Attributes}
}

// checkStart validates a start event: it takes only a component, one declared deferred.
func (c *checker) checkStart(where string, i int, ev *Event) {
	rest := ev.Fault
	rest.Action, rest.Component = "", ""
	if !reflect.DeepEqual(rest, platform.Fault{}) || ev.Config.Kind != 0 {
		c.errorf(c.at("events", i), "%s: action start takes only component", where)
		return
	}
	var deferred []string
	for _, inst := range c.s.Components {
		if inst.Deferred {
			deferred = append(deferred, inst.Name)
		}
	}
	sort.Strings(deferred)
	inst := c.instances[ev.Component]
	switch {
	case ev.Component == "":
		c.errorf(c.at("events", i), "%s: action start needs component; deferred components: %s", where, orNoneList(deferred))
	case inst == nil || c.instanceRoleByName[ev.Component] != kind.RoleComponent:
		c.errorf(c.at("events", i, "component"), "%s: unknown component %q; deferred components: %s", where, ev.Component, orNoneList(deferred))
	case !inst.Deferred:
		c.errorf(c.at("events", i, "component"), "%s: component %q starts with the run; declare it `deferred: true` to start it with this event", where, ev.Component)
	}
}

// checkDeferredStarts reports deferred components no event starts (they would never run) and
// components started twice.
func (c *checker) checkDeferredStarts() {
	starts := map[string]int{}
	for _, ev := range c.s.Events {
		if ev.Action == ActionStart {
			starts[ev.Component]++
		}
	}
	for i, inst := range c.s.Components {
		switch {
		case inst.Deferred && starts[inst.Name] == 0:
			c.errorf(c.at("components", i, "deferred"), "components[%d]: %s is deferred but no event starts it (add an event with action: start, component: %s)", i, inst.Name, inst.Name)
		case starts[inst.Name] > 1:
			c.errorf(c.at("components", i, "deferred"), "components[%d]: %s is started by %d events; a component starts once (use restart to start it again)", i, inst.Name, starts[inst.Name])
		}
	}
	for i, inst := range c.s.Workloads {
		if inst.Deferred {
			c.errorf(c.at("workloads", i, "deferred"), "workloads[%d]: deferred applies to components only", i)
		}
	}
	for i, inst := range c.s.Components {
		if inst.ExpectFailures {
			c.errorf(c.at("components", i, "expect_failures"), "components[%d]: expect_failures applies to workloads only", i)
		}
	}
}

// portsOf lists the ports a component listens on, as its kind declares them.
func portsOf(inst *Instance) []int {
	k, _ := kind.Lookup(inst.Kind)
	var ports []int
	for _, ep := range k.EndpointsOf(inst.DecodedConfig) {
		ports = append(ports, ep.Port)
	}
	return ports
}

// checkPorts reports two components of one node listening on the same port: the second would
// fail to start, or worse, a readiness check would see the first and the run would measure the
// wrong server.
func (c *checker) checkPorts() {
	type key struct {
		node string
		port int
	}
	owner := map[key]string{}
	for i, inst := range c.s.Components {
		for _, p := range portsOf(&c.s.Components[i]) {
			k := key{inst.Node, p}
			if prev, ok := owner[k]; ok && prev != inst.Name {
				c.errorf(c.at("components", i), "components[%d]: %s listens on port %d of node %s, like %s; give one of them another port", i, inst.Name, p, inst.Node, prev)
				continue
			}
			owner[k] = inst.Name
		}
	}
}

// eventActions lists every action a scenario event may take, for messages.
func eventActions() string {
	return strings.Join(append(append([]string{}, platform.FaultActions...), ActionSet, ActionStart), ", ")
}
