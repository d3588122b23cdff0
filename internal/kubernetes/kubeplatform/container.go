package kubeplatform

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/continuum-project/continuum/internal/kubernetes/kubeplatform/agent"
	"github.com/continuum-project/continuum/internal/platform"
)

// podInstance is an instance with an image, run as a pod of its own (containerPod) beside its
// node pod. Its declared ports are reached at the node's address through a forward the node's
// agent runs (`kubernetes-agent --forward`), and from the node's loopback through Dial's
// redirect. Its output (stdout and stderr as one stream: the API server's log endpoint merges
// them) goes into the run's stdout log as it is written.
type podInstance struct {
	pf   *Platform
	np   *nodePod
	spec platform.InstanceSpec
	ref  string
	pull corev1.PullPolicy

	mu     sync.Mutex
	run    int
	pod    string // the current run's pod
	host   string // the cluster node it runs on (samples come from its kubelet)
	done   chan struct{}
	exit   platform.Exit
	killed bool // kill deleted the pod: its disappearance is a SIGKILL
}

// forwardName is the agent instance that forwards a container's ports in its node pod.
func forwardName(instance string) string { return instance + ".ports" }

// startPod starts an instance with an image: its image reachable by the cluster (a local one
// imported), its volumes fresh, its pod running, its ports forwarded from the node pod.
func (pf *Platform) startPod(ctx context.Context, np *nodePod, spec platform.InstanceSpec) (*podInstance, error) {
	for _, v := range spec.Image.Volumes {
		// A volume is an emptyDir of the pod: a directory of this host cannot be bound into it.
		if ents, err := os.ReadDir(v.Source); err == nil && len(ents) > 0 {
			return nil, fmt.Errorf("platform kubernetes cannot bind %s (which holds files) into instance %s's container at %s: a container pod's volumes start empty there",
				v.Source, spec.Name, v.Destination)
		}
	}
	ref, pull, err := pf.imageRef(ctx, spec.Image)
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", spec.Name, err)
	}
	if spec.Service != nil {
		if err := spec.Service.Validate(); err != nil {
			return nil, fmt.Errorf("instance %s: %w", spec.Name, err)
		}
		if err := pf.declareService(ctx, spec.Node, spec.Service); err != nil {
			return nil, fmt.Errorf("instance %s: %w", spec.Name, err)
		}
	}
	in := &podInstance{pf: pf, np: np, spec: spec, ref: ref, pull: pull}
	if err := in.start(ctx); err != nil {
		return nil, err
	}
	return in, nil
}

// start creates the pod of a new run, waits for it to run, forwards its ports and follows it.
func (in *podInstance) start(ctx context.Context) error {
	pf, spec := in.pf, in.spec
	n, _ := pf.cfg.Topology.Node(spec.Node)
	in.mu.Lock()
	in.run++
	run := in.run
	in.mu.Unlock()
	s := pf.spec
	s.NodeSelector = pf.place[spec.Node]
	pod := s.containerPod(spec, *n, in.ref, in.pull, run)
	if _, err := pf.c.cs.CoreV1().Pods(pf.ns).Create(ctx, pod, metav1.CreateOptions{FieldManager: "continuum"}); err != nil {
		return fmt.Errorf("instance %s: its pod: %w", spec.Name, err)
	}
	if err := os.MkdirAll(spec.LogDir, 0o755); err != nil {
		return err
	}
	stdout, err := os.OpenFile(platform.LogPath(spec.LogDir, spec.Node, spec.Name, "stdout"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	// stderr's file exists as for any instance; the pod's one stream goes to stdout's.
	if f, err := os.OpenFile(platform.LogPath(spec.LogDir, spec.Node, spec.Name, "stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		f.Close()
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute) // an image pull
	ip, host, err := pf.waitPodStarted(wctx, pod.Name)
	cancel()
	if err != nil {
		stdout.Close()
		_ = pf.c.cs.CoreV1().Pods(pf.ns).Delete(context.WithoutCancel(ctx), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		return fmt.Errorf("instance %s: %w", spec.Name, err)
	}
	done := make(chan struct{})
	in.mu.Lock()
	in.pod, in.host, in.done, in.exit, in.killed = pod.Name, host, done, platform.Exit{}, false
	in.mu.Unlock()
	pf.log.Info("container pod started", "name", spec.Name, "node", spec.Node, "pod", pod.Name, "ip", ip)
	go in.follow(pod.Name, done, stdout)
	if ip != "" && len(spec.Image.Ports) > 0 {
		if err := in.forward(ctx, ip); err != nil {
			_ = in.Stop(time.Second)
			return fmt.Errorf("instance %s: %w", spec.Name, err)
		}
	}
	return nil
}

// forward has the node's agent relay the container's ports from the node pod's addresses to the
// pod's, waits until it listens, and points Dial's loopback redirect at the pod.
func (in *podInstance) forward(ctx context.Context, ip string) error {
	pf, spec, a := in.pf, in.spec, in.np.agent
	args := []string{pf.cfg.Binary, "kubernetes-agent"}
	for _, p := range spec.Image.Ports {
		args = append(args, "--forward", fmt.Sprintf("%d=%s", p, net.JoinHostPort(ip, strconv.Itoa(p))))
	}
	name := forwardName(spec.Name)
	pf.mu.Lock()
	pf.helpers[name] = true
	pf.mu.Unlock()
	if _, err := a.Start(ctx, agent.StartRequest{Name: name, Args: args, Binary: pf.cfg.Binary}); err != nil {
		return fmt.Errorf("forwarding its ports from node %s: %w", spec.Node, err)
	}
	for _, p := range spec.Image.Ports {
		addr := "127.0.0.1:" + strconv.Itoa(p)
		for {
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			c, err := a.Dial(dctx, "tcp", addr)
			cancel()
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("forwarding port %d from node %s: %w", p, spec.Node, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	pf.mu.Lock()
	if pf.redirects[spec.Node] == nil {
		pf.redirects[spec.Node] = map[int]string{}
	}
	for _, p := range spec.Image.Ports {
		pf.redirects[spec.Node][p] = net.JoinHostPort(ip, strconv.Itoa(p))
	}
	pf.mu.Unlock()
	return nil
}

// waitPodStarted waits until a container pod runs (its IP known) or has already ended, and fails
// at once when it cannot start (an image that cannot be pulled, a bad command). It returns the
// pod's IP and its cluster node.
func (pf *Platform) waitPodStarted(ctx context.Context, name string) (ip, host string, _ error) {
	return waitPodStarted(ctx, pf.c.cs, pf.ns, name)
}

func waitPodStarted(ctx context.Context, cs kubernetes.Interface, ns, name string) (ip, host string, _ error) {
	for {
		pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", "", fmt.Errorf("pod %s/%s: %w", ns, name, err)
		}
		switch {
		case pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "":
			return pod.Status.PodIP, pod.Spec.NodeName, nil
		case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			return pod.Status.PodIP, pod.Spec.NodeName, nil // it ran and ended: follow reports how
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				switch w.Reason {
				case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
					return "", "", fmt.Errorf("pod %s/%s cannot run: %s: %s", ns, name, w.Reason, w.Message)
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", "", fmt.Errorf("pod %s/%s not running in time (%s)", ns, name, pod.Status.Phase)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// follow copies the pod's log into the run's stdout log (and spec.Stdout) as it is written,
// waits for its container to end (or the pod to go), and only then closes done.
func (in *podInstance) follow(pod string, done chan struct{}, stdout *os.File) {
	pf, spec := in.pf, in.spec
	ctx := pf.ctx
	var out io.Writer = stdout
	if spec.Stdout != nil {
		out = io.MultiWriter(stdout, spec.Stdout)
	}
	var copied int64
	var logErr error
	logDone := make(chan struct{})
	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	go func() {
		defer close(logDone)
		rc, err := pf.c.cs.CoreV1().Pods(pf.ns).GetLogs(pod, &corev1.PodLogOptions{Container: appContainer, Follow: true}).Stream(lctx)
		if err != nil {
			logErr = err
			return
		}
		defer rc.Close()
		copied, logErr = io.Copy(out, rc)
	}()
	exit := in.waitEnd(ctx, pod)
	select {
	case <-logDone:
	case <-time.After(10 * time.Second): // the stream ends with the container, or is cut here
		lcancel()
		<-logDone
	}
	if logErr != nil && ctx.Err() == nil {
		// The stream broke (or never opened): what it missed, from the pod's whole log if it is
		// still there.
		if b, err := pf.c.cs.CoreV1().Pods(pf.ns).GetLogs(pod, &corev1.PodLogOptions{Container: appContainer}).DoRaw(context.Background()); err == nil && int64(len(b)) > copied {
			_, _ = out.Write(b[copied:])
		}
	}
	stdout.Close()
	pf.log.Info("container pod ended", "name", spec.Name, "pod", pod, "code", exit.Code, "signal", exit.Signal)
	in.mu.Lock()
	in.exit = exit
	in.mu.Unlock()
	close(done)
}

// waitEnd polls the pod until its container has terminated or the pod is gone.
func (in *podInstance) waitEnd(ctx context.Context, pod string) platform.Exit {
	for {
		p, err := in.pf.c.cs.CoreV1().Pods(in.pf.ns).Get(ctx, pod, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			in.mu.Lock()
			killed := in.killed
			in.mu.Unlock()
			if killed {
				return platform.Exit{Code: -1, Signal: "killed"}
			}
			return platform.Exit{Code: -1, Signal: "lost"}
		}
		if err == nil {
			for _, cs := range p.Status.ContainerStatuses {
				if t := cs.State.Terminated; t != nil && cs.Name == appContainer {
					return platform.Exit{Code: int(t.ExitCode)}
				}
			}
			if p.Status.Phase == corev1.PodFailed && len(p.Status.ContainerStatuses) == 0 {
				return platform.Exit{Code: -1, Signal: "lost"} // evicted before it started
			}
		}
		select {
		case <-ctx.Done():
			return platform.Exit{Code: -1, Signal: "lost"}
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Done is closed when the current run's container has ended and its output is in the logs.
func (in *podInstance) Done() <-chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.done
}

// Exit says how the current run's container ended: its exit code (137 after SIGKILL, as
// Docker and container-run report it), or -1 when the pod was deleted under it.
func (in *podInstance) Exit() platform.Exit {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.exit
}

// Stop deletes the pod with grace as its termination grace: the kubelet runs the preStop hook
// (the stop signal, if not SIGTERM), sends SIGTERM (or the image's STOPSIGNAL), and SIGKILL once
// the grace is over. It returns once the container has ended and its output is in, and stops
// the node's forward of its ports.
func (in *podInstance) Stop(grace time.Duration) error {
	in.mu.Lock()
	pod, done := in.pod, in.done
	in.mu.Unlock()
	defer in.unforward()
	select {
	case <-done:
		return nil
	default:
	}
	secs := graceSeconds(grace)
	ctx, cancel := context.WithTimeout(context.Background(), grace+30*time.Second)
	defer cancel()
	if err := in.pf.c.cs.CoreV1().Pods(in.pf.ns).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &secs}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("instance %s: deleting pod %s: %w", in.spec.Name, pod, err)
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("instance %s's pod %s did not end within %v", in.spec.Name, pod, grace+30*time.Second)
	}
}

// unforward stops the node's forward of the container's ports and the loopback redirect.
func (in *podInstance) unforward() {
	pf, spec := in.pf, in.spec
	if len(spec.Image.Ports) == 0 {
		return
	}
	pf.mu.Lock()
	for _, p := range spec.Image.Ports {
		delete(pf.redirects[spec.Node], p)
	}
	pf.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = in.np.agent.Stop(ctx, forwardName(spec.Name), 0)
}

// kill deletes the pod at once: the container gets SIGKILL, and the run ends "killed".
func (in *podInstance) kill(ctx context.Context) error {
	in.mu.Lock()
	pod := in.pod
	in.killed = true
	in.mu.Unlock()
	zero := int64(0)
	err := in.pf.c.cs.CoreV1().Pods(in.pf.ns).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// restart stops the container gracefully and starts a new pod of the same image.
func (in *podInstance) restart(ctx context.Context, grace time.Duration) error {
	if err := in.Stop(grace); err != nil {
		return err
	}
	return in.start(ctx)
}

// podInstances are the container pods of node.
func (pf *Platform) podInstances(node string) []*podInstance {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	var out []*podInstance
	for _, in := range pf.insts {
		if pi, ok := in.(*podInstance); ok && pi.spec.Node == node {
			out = append(out, pi)
		}
	}
	return out
}

// redirect sends a TCP dial of the node's loopback at a container pod's port to the pod itself.
func (pf *Platform) redirect(node, network, addr string) string {
	if network != "tcp" && network != "tcp4" {
		return addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || (host != "127.0.0.1" && host != "localhost") {
		return addr
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return addr
	}
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if to, ok := pf.redirects[node][p]; ok {
		return to
	}
	return addr
}
