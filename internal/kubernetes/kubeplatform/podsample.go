package kubeplatform

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/continuum-project/continuum/internal/platform"
)

// summary is the part of the kubelet's stats summary (/stats/summary, through the API server's
// node proxy) that samples read: per pod, its containers' cumulative CPU and memory.
type summary struct {
	Pods []struct {
		PodRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"podRef"`
		Containers []struct {
			Name string `json:"name"`
			CPU  *struct {
				UsageCoreNanoSeconds *uint64 `json:"usageCoreNanoSeconds"`
			} `json:"cpu"`
			Memory *struct {
				RSSBytes        *uint64 `json:"rssBytes"`
				WorkingSetBytes *uint64 `json:"workingSetBytes"`
			} `json:"memory"`
		} `json:"containers"`
	} `json:"pods"`
}

// podFigures are a container's figures from its kubelet.
type podFigures struct {
	cpu float64 // seconds
	rss int64
}

// readPodFigures asks the kubelets of the cluster nodes in hosts for their stats summary and
// returns the app container's figures of each pod of the run's namespace. A kubelet that does
// not answer (or a runner without the nodes/proxy permission) gives none: those pods get no
// rows rather than wrong ones.
func (pf *Platform) readPodFigures(ctx context.Context, hosts map[string]bool) map[string]podFigures {
	out := map[string]podFigures{}
	for host := range hosts {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		b, err := pf.c.cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", host, "proxy", "stats", "summary").DoRaw(sctx)
		cancel()
		if err != nil {
			continue
		}
		var s summary
		if json.Unmarshal(b, &s) != nil {
			continue
		}
		for _, p := range s.Pods {
			if p.PodRef.Namespace != pf.ns {
				continue
			}
			for _, c := range p.Containers {
				if c.Name != appContainer {
					continue
				}
				var f podFigures
				if c.CPU != nil && c.CPU.UsageCoreNanoSeconds != nil {
					f.cpu = float64(*c.CPU.UsageCoreNanoSeconds) / 1e9
				}
				if m := c.Memory; m != nil && m.RSSBytes != nil {
					f.rss = int64(*m.RSSBytes)
				} else if m != nil && m.WorkingSetBytes != nil {
					f.rss = int64(*m.WorkingSetBytes)
				}
				out[p.PodRef.Name] = f
			}
		}
	}
	return out
}

// podRows are the samples.csv rows of the run's container pods and of the instance pods its
// components started (PodClient), in instance order.
func (s *sampler) podRows(ctx context.Context, t time.Duration) []platform.Sample {
	type sampled struct{ node, name, pod, host string }
	var pods []sampled
	s.pf.mu.Lock()
	for _, in := range s.pf.insts {
		if pi, ok := in.(*podInstance); ok {
			pi.mu.Lock()
			pods = append(pods, sampled{pi.spec.Node, pi.spec.Name, pi.pod, pi.host})
			pi.mu.Unlock()
		}
	}
	s.pf.mu.Unlock()
	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + s.pf.run + "," + LabelRole + "=" + RoleInstance}
	if list, err := s.pf.c.cs.CoreV1().Pods(s.pf.ns).List(ctx, sel); err == nil {
		for _, p := range list.Items {
			pods = append(pods, sampled{p.Labels[LabelNode], p.Annotations[annotationInstance], p.Name, p.Spec.NodeName})
		}
	}
	if len(pods) == 0 {
		return nil
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].name < pods[j].name })
	hosts := map[string]bool{}
	for _, p := range pods {
		if p.host != "" {
			hosts[p.host] = true
		}
	}
	figs := s.pf.readPodFigures(ctx, hosts)
	var rows []platform.Sample
	for _, p := range pods {
		f, ok := figs[p.pod]
		if !ok {
			continue
		}
		// Keyed by pod: a restart's new pod counts its CPU from its own first reading, on top of
		// what the instance's earlier pods used (cumulative over all its runs, as a process's).
		key := p.node + "/" + p.name
		if last, ok := s.podLast[key]; ok && last.pod != p.pod {
			s.podBase[key] += last.cpu
		}
		cum, util := s.account(p.node+"/"+p.pod, t, reading{cpu: f.cpu})
		s.podLast[key] = podReading{pod: p.pod, cpu: cum.cpu}
		rows = append(rows, platform.Sample{T: t, Node: p.node, Component: p.name, CPUSeconds: s.podBase[key] + cum.cpu,
			CPUUtil: util, RSS: f.rss})
	}
	return rows
}

// podReading is the last reading of an instance's container pods: which pod, its CPU seconds.
type podReading struct {
	pod string
	cpu float64
}
