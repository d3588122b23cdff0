package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/testenv"
)

// sleepy answers after the number of milliseconds in its body (default 0).
const sleepy = `import time

def handle(event, context):
    ms = int(event.body or b"0")
    time.sleep(ms / 1000)
    return {"body": "slept %d" % ms}
`

func handlerDir(t *testing.T, src string) string {
	t.Helper()
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "handler.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// start runs a gateway with real instances (LocalProvider: watchdogs and Python processes),
// deciding every 100 ms.
func start(t *testing.T, fns ...*gateway.Function) (*gateway.Gateway, string) {
	t.Helper()
	return startTick(t, 100*time.Millisecond, fns...)
}

// startTick is start with the autoscalers deciding every tick.
func startTick(t *testing.T, tick time.Duration, fns ...*gateway.Function) (*gateway.Gateway, string) {
	t.Helper()
	py, err := faas.FindPython()
	if err != nil {
		t.Fatalf("%v (make setup builds the venv)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Config{Functions: fns, Provider: &gateway.LocalProvider{Python: py}, Tick: tick})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	return g, srv.URL
}

type answer struct {
	code     int
	body     string
	instance string
}

func call(t *testing.T, url, body string) answer {
	resp, err := http.Post(url, "text/plain", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header.Get(gateway.InstanceHeader)}
}

func status(t *testing.T, g *gateway.Gateway, name string) gateway.FunctionStatus {
	for _, s := range g.Status() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no function %s", name)
	return gateway.FunctionStatus{}
}

func TestRoutesToTheLeastBusyInstance(t *testing.T) {
	g, url := start(t, &gateway.Function{Name: "sleepy", Handler: handlerDir(t, sleepy), Mode: faas.ModeHTTP, Replicas: 2})
	// Two slow requests at once go to different instances (each serves one at a time).
	var wg sync.WaitGroup
	answers := make([]answer, 2)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = call(t, url+"/function/sleepy/anything?x=1", "300")
		}()
	}
	wg.Wait()
	if answers[0].code != 200 || answers[1].code != 200 || answers[0].instance == answers[1].instance || answers[0].instance == "" {
		t.Errorf("answers %+v: want two 200s from two instances", answers)
	}
	if a := call(t, url+"/function/nope", ""); a.code != 404 || !strings.Contains(a.body, `no function "nope"`) {
		t.Errorf("unknown function: %+v", a)
	}
	resp, err := http.Get(url + "/system/functions")
	if err != nil {
		t.Fatal(err)
	}
	var list []gateway.FunctionStatus
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list) != 1 || list[0].AvailableReplicas != 2 || list[0].InvocationCount != 2 {
		t.Errorf("functions %+v (%v)", list, err)
	}
	resp.Body.Close()
	resp, _ = http.Get(url + "/metrics")
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), `gateway_function_invocation_total{code="200",function_name="sleepy"} 2`) ||
		!strings.Contains(string(m), `gateway_service_count{function_name="sleepy"} 2`) {
		t.Errorf("metrics lack the invocations or the instance count:\n%s", m)
	}
	_ = g
}

// TestScalingDropsNothing: requests keep coming while the function is scaled up and down
// through the API; every one is answered 200.
func TestScalingDropsNothing(t *testing.T) {
	g, url := start(t, &gateway.Function{Name: "sleepy", Handler: handlerDir(t, sleepy), Mode: faas.ModeHTTP, Replicas: 1, MaxReplicas: 4})
	var sent, bad atomic.Int64
	instances := sync.Map{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				a := call(t, url+"/function/sleepy", "20")
				sent.Add(1)
				if a.code != 200 {
					bad.Add(1)
					t.Errorf("answer %+v while scaling", a)
				}
				instances.Store(a.instance, true)
			}
		}()
	}
	scale := func(n int) {
		if err := g.Scale("sleepy", n, "test"); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 60*time.Second, fmt.Sprintf("%d instances ready and no other", n), func() bool {
			s := status(t, g, "sleepy")
			return s.AvailableReplicas == n && s.Draining == 0 && s.Starting == 0
		})
	}
	for _, n := range []int{3, 1, 4, 2} {
		scale(n)
	}
	close(stop)
	wg.Wait()
	count := 0
	instances.Range(func(any, any) bool { count++; return true })
	// How many instances got a request depends on timing; that none failed does not.
	if bad.Load() != 0 || sent.Load() < 10 || count < 2 {
		t.Errorf("%d of %d requests failed; %d instances served: want none failed, more than one instance", bad.Load(), sent.Load(), count)
	}
}

// TestScaleToZeroAndBack: idle, the function goes to zero instances; the next request waits
// for a new one (a cold start) and is answered.
func TestScaleToZeroAndBack(t *testing.T) {
	for _, zygote := range []bool{false, true} {
		t.Run(fmt.Sprintf("zygote=%v", zygote), func(t *testing.T) { scaleToZeroAndBack(t, zygote) })
	}
}

func scaleToZeroAndBack(t *testing.T, zygote bool) {
	g, url := start(t, &gateway.Function{Name: "hello", Handler: handlerDir(t, sleepy), Mode: faas.ModeHTTP,
		IdleTimeout: 500 * time.Millisecond, Zygote: zygote})
	if s := status(t, g, "hello"); s.AvailableReplicas != 0 || s.Replicas != 0 {
		t.Fatalf("with an idle timeout the function starts at zero: %+v", s)
	}
	for round := 0; round < 2; round++ {
		begin := time.Now()
		if a := call(t, url+"/function/hello", ""); a.code != 200 || a.body != "slept 0" {
			t.Fatalf("round %d: request to a function at zero: %+v", round, a)
		}
		t.Logf("cold start %d: %v", round, time.Since(begin))
		testenv.Eventually(t, 30*time.Second, "the idle function scaled to zero", func() bool {
			s := status(t, g, "hello")
			return s.AvailableReplicas == 0 && s.Draining == 0
		})
	}
	if s := status(t, g, "hello"); s.ColdStarts != 2 || s.InvocationCount != 2 {
		t.Errorf("status %+v: want 2 cold starts, 2 invocations", s)
	}
}

// TestRPSAutoscaler: above 5 requests/s for a window, instances go up a step (20% of max)
// per window; once the load stops they come back down to the minimum.
func TestRPSAutoscaler(t *testing.T) {
	g, url := start(t, &gateway.Function{Name: "hello", Handler: handlerDir(t, sleepy), Mode: faas.ModeHTTP,
		Scaler: gateway.ScalerRPS, MinReplicas: 1, MaxReplicas: 5, RPSWindow: time.Second})
	stop := make(chan struct{})
	var calls sync.WaitGroup
	calls.Add(1)
	go func() {
		defer calls.Done()
		tick := time.NewTicker(25 * time.Millisecond) // 40 requests/s
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				calls.Add(1)
				go func() {
					defer calls.Done()
					if a := call(t, url+"/function/hello", ""); a.code != 200 {
						t.Errorf("answer %+v while scaling", a)
					}
				}()
			}
		}
	}()
	testenv.Eventually(t, 60*time.Second, "scaled out to 3 or more", func() bool { return status(t, g, "hello").AvailableReplicas >= 3 })
	close(stop)
	calls.Wait()
	testenv.Eventually(t, 60*time.Second, "back to the minimum after the load", func() bool {
		s := status(t, g, "hello")
		return s.Replicas == 1 && s.AvailableReplicas == 1 && s.Draining == 0
	})
}

func TestFunctionErrors(t *testing.T) {
	for _, c := range []struct {
		f    gateway.Function
		want string
	}{
		{gateway.Function{Name: "Bad_Name", Handler: "x", Mode: "http"}, "want lower-case letters"},
		{gateway.Function{Name: "f", Handler: "x", Mode: "micro"}, `mode "micro"`},
		{gateway.Function{Name: "f", Handler: "x", Mode: "http", Scaler: "cpu2"}, `scaler "cpu2"`},
		{gateway.Function{Name: "f", Handler: "x", Mode: "http", MinReplicas: 3, MaxReplicas: 2}, "want 0 <= min <= max"},
		{gateway.Function{Name: "f", Handler: "x", Mode: "http", MinReplicas: 1, IdleTimeout: time.Second}, "needs min replicas 0"},
		{gateway.Function{Name: "f", Handler: "x", Mode: "http", Scaler: "rps", RPSWindow: 2 * time.Minute}, "rps_window 2m0s: at most 1m3s"},
	} {
		if err := c.f.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.f, err, c.want)
		}
	}
}

// TestSpecRoundTrip: the --function form a kind renders parses back to the same function.
func TestSpecRoundTrip(t *testing.T) {
	dir := handlerDir(t, sleepy)
	f, err := gateway.ParseFunction("name=f,handler=" + dir + ",mode=classic,scaler=concurrency,max=7,target_concurrency=2,stable_window=30s,zygote=false")
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.ParseFunction(f.Format())
	if err != nil {
		t.Fatal(err)
	}
	if *f != *g || f.PanicWindow != 3*time.Second || f.TargetConcurrency != 2 || f.MaxReplicas != 7 {
		t.Errorf("parsed %+v\nround trip %+v", f, g)
	}
	for _, bad := range []string{"name=f", "name=f,handler=" + dir + ",colour=red", "name=f,handler=" + dir + ",max=x"} {
		if _, err := gateway.ParseFunction(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// load keeps clients requests under way to url until the returned stop is called (or the
// test ends, failed or not); every answer must be a 200.
func load(t *testing.T, url string, clients int, body string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if a := call(t, url, body); a.code != 200 {
					t.Errorf("answer %+v while scaling", a)
				}
			}
		}()
	}
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// TestCPUAutoscaler: instances busy above the threshold for a window get a step more; idle,
// they come back down.
func TestCPUAutoscaler(t *testing.T) {
	burn := handlerDir(t, "import time\n\ndef handle(event, context):\n"+
		"    end = time.process_time() + 0.05\n    while time.process_time() < end:\n        pass\n    return {'body': 'ok'}\n")
	// What a busy instance gets is its share of a shared 2-core machine: at a load average of
	// 30, about 2/30 of a core. So the instances' limit is 0.05 cores and the threshold 20% of
	// it: busy is above 1% of a core, idle below 0.5% (an idle Python process uses ~0). The
	// scaler reads CPU time, counted in 10 ms steps, once a tick: with 100 ms ticks most
	// readings of a process that gets 6 ms per 100 ms are 0, each one restarting the window.
	// Ticks of a second see 60 ms in every reading; the window of one second is two ticks.
	g, url := startTick(t, time.Second, &gateway.Function{Name: "burn", Handler: burn, Mode: faas.ModeHTTP, Scaler: gateway.ScalerCPU,
		MinReplicas: 1, MaxReplicas: 3, CPULimit: 0.05, CPUThreshold: 0.2, CPUWindow: time.Second, CPUStep: 1})
	stop := load(t, url+"/function/burn", 3, "")
	testenv.Eventually(t, 60*time.Second, "a second instance for the busy one", func() bool { return status(t, g, "burn").AvailableReplicas >= 2 })
	stop()
	testenv.Eventually(t, 60*time.Second, "back to one instance when idle", func() bool {
		s := status(t, g, "burn")
		return s.Replicas == 1 && s.AvailableReplicas == 1 && s.Draining == 0
	})
}

// TestConcurrencyAutoscaler: six requests always under way against a target of one per
// instance send the KPA into panic mode, straight to the maximum; without load it scales back
// to one.
func TestConcurrencyAutoscaler(t *testing.T) {
	g, url := start(t, &gateway.Function{Name: "sleepy", Handler: handlerDir(t, sleepy), Mode: faas.ModeHTTP,
		Scaler: gateway.ScalerConcurrency, MinReplicas: 1, MaxReplicas: 4, StableWindow: 2 * time.Second, PanicWindow: 500 * time.Millisecond})
	stop := load(t, url+"/function/sleepy", 6, "100")
	testenv.Eventually(t, 60*time.Second, "4 instances", func() bool { return status(t, g, "sleepy").AvailableReplicas == 4 })
	stop()
	testenv.Eventually(t, 60*time.Second, "back to one instance", func() bool {
		s := status(t, g, "sleepy")
		return s.Replicas == 1 && s.AvailableReplicas == 1 && s.Draining == 0
	})
	if s := status(t, g, "sleepy"); s.ScaleEvents < 2 {
		t.Errorf("status %+v: want a scale-up and a scale-down", s)
	}
}
