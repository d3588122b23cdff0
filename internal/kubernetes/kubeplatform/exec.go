package kubeplatform

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"

	"github.com/continuum-project/continuum/internal/platform"
)

// execInstance is a command run inside a container pod (platform.Exec: a healthcheck), through
// the API server's exec, as a Kubernetes exec probe runs: its output goes to its logs, its exit
// code is the command's.
type execInstance struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	exit   platform.Exit
}

// startExec runs spec.ExecIn in the current pod of the instance it names.
func (pf *Platform) startExec(ctx context.Context, spec platform.InstanceSpec) (platform.Instance, error) {
	target, err := pf.instance(spec.ExecIn.Instance)
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", spec.Name, err)
	}
	pi, ok := target.(*podInstance)
	if !ok {
		return nil, fmt.Errorf("instance %s: %s is not a container, nothing to run a command inside", spec.Name, spec.ExecIn.Instance)
	}
	pi.mu.Lock()
	pod := pi.pod
	pi.mu.Unlock()
	req := pf.c.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pf.ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: appContainer, Command: spec.ExecIn.Args, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	spdy, err := remotecommand.NewSPDYExecutor(pf.c.rc, http.MethodPost, req.URL())
	if err != nil {
		return nil, err
	}
	// As kubectl does: the WebSocket protocol first, SPDY for API servers without it.
	ws, err := remotecommand.NewWebSocketExecutor(pf.c.rc, http.MethodGet, req.URL().String())
	if err != nil {
		return nil, err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool { return true })
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.LogDir, 0o755); err != nil {
		return nil, err
	}
	stdout, err := os.OpenFile(platform.LogPath(spec.LogDir, spec.Node, spec.Name, "stdout"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	stderr, err := os.OpenFile(platform.LogPath(spec.LogDir, spec.Node, spec.Name, "stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		stdout.Close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(pf.ctx)
	in := &execInstance{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(in.done)
		defer stdout.Close()
		defer stderr.Close()
		err := ex.StreamWithContext(rctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
		exit := platform.Exit{}
		var ce exec.CodeExitError
		switch {
		case err == nil:
		case errors.As(err, &ce):
			exit.Code = ce.Code
		case rctx.Err() != nil:
			exit = platform.Exit{Code: -1, Signal: "killed"}
		default:
			exit = platform.Exit{Code: -1, Signal: "lost"}
			fmt.Fprintf(stderr, "exec in pod %s: %v\n", pod, err)
		}
		in.mu.Lock()
		in.exit = exit
		in.mu.Unlock()
	}()
	return in, nil
}

func (in *execInstance) Done() <-chan struct{} { return in.done }

func (in *execInstance) Exit() platform.Exit {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.exit
}

// Stop ends the exec stream (the command inside may run on: an exec cannot be signalled).
func (in *execInstance) Stop(grace time.Duration) error {
	in.cancel()
	<-in.done
	return nil
}
