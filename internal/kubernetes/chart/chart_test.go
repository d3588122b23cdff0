package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/continuum-project/continuum/internal/version"
)

const allOn = "testdata/all-on.yaml"

// find returns the rendered object of type T named name.
func find[T interface {
	GetName() string
}](t *testing.T, docs []rendered, name string) T {
	t.Helper()
	var have []string
	for _, d := range docs {
		if o, ok := d.obj.(T); ok {
			if o.GetName() == name {
				return o
			}
			have = append(have, o.GetName())
		}
	}
	var zero T
	t.Fatalf("no %T named %s among %v", zero, name, have)
	return zero
}

// kinds lists "Kind/name" of every document, sorted.
func kinds(docs []rendered) []string {
	var out []string
	for _, d := range docs {
		gvk := d.obj.GetObjectKind().GroupVersionKind()
		m, _ := d.obj.(interface{ GetName() string })
		out = append(out, gvk.Kind+"/"+m.GetName())
	}
	sort.Strings(out)
	return out
}

func TestLint(t *testing.T) {
	for _, args := range [][]string{nil, {"-f", allOn}} {
		if out, err := helm(t, append([]string{"lint", "--strict", chartDir(t)}, args...)...); err != nil {
			t.Errorf("helm lint %v: %v\n%s", args, err, out)
		}
	}
}

func TestDefaultValuesRenderKVAndProxy(t *testing.T) {
	got := kinds(render(t))
	want := []string{
		"ClusterRole/ct-continuum-proxy-edge", "ClusterRoleBinding/ct-continuum-proxy-edge",
		"ConfigMap/ct-continuum-proxy", "DaemonSet/ct-continuum-proxy",
		"PodDisruptionBudget/ct-continuum-kv", "Secret/ct-continuum-proxy-admin-token",
		"Service/ct-continuum-kv", "Service/ct-continuum-kv-metrics", "Service/ct-continuum-kv-peer",
		"ServiceAccount/ct-continuum-kv", "ServiceAccount/ct-continuum-proxy",
		"StatefulSet/ct-continuum-kv",
	}
	if !slices.Equal(got, want) {
		t.Errorf("default values render\n%v\nwant\n%v", got, want)
	}
}

func TestEveryComponentOn(t *testing.T) {
	docs := render(t, "-f", allOn)
	for _, name := range []string{"ct-continuum-faas-gateway", "ct-continuum-realtime-db", "ct-continuum-stream-bridge", "ct-continuum-stream-aggregator", "ct-continuum-fl-orchestrator"} {
		d := find[*appsv1.Deployment](t, docs, name)
		checkPod(t, name, d.Spec.Template.Spec)
	}
	checkPod(t, "kv", find[*appsv1.StatefulSet](t, docs, "ct-continuum-kv").Spec.Template.Spec)
	checkPod(t, "proxy", find[*appsv1.DaemonSet](t, docs, "ct-continuum-proxy").Spec.Template.Spec)

	gw := find[*appsv1.Deployment](t, docs, "ct-continuum-faas-gateway").Spec.Template.Spec.Containers[0]
	for _, want := range []string{
		"--function=name=hello,handler=/opt/continuum/python/functions/hello,mode=http,max=5,min=1,scaler=rps",
		"--function=name=inline,handler=/etc/continuum/functions/inline,mode=classic,idle_timeout=30s,min=0",
	} {
		if !slices.Contains(gw.Args, want) {
			t.Errorf("gateway args %q lack %q", gw.Args, want)
		}
	}
	// /system/ needs basic auth from the Secret the chart makes (docs/security.md); the
	// readiness probe is /healthz, which needs none.
	if !slices.Contains(gw.Args, "--secret-mount-path=/var/openfaas/secrets") || gw.ReadinessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("gateway args %q, readiness %s: want the basic auth secrets mounted and /healthz probed", gw.Args, gw.ReadinessProbe.HTTPGet.Path)
	}
	auth := find[*corev1.Secret](t, docs, "ct-continuum-faas-gateway-basic-auth")
	if auth.StringData["basic-auth-user"] != "admin" || len(auth.StringData["basic-auth-password"]) < 32 {
		t.Errorf("basic auth Secret %v: want user admin and a long random password", auth.StringData)
	}
	px := find[*appsv1.DaemonSet](t, docs, "ct-continuum-proxy").Spec.Template.Spec.Containers[0]
	if !slices.Contains(px.Args, "--admin-token-file=/var/run/continuum/admin-token/token") {
		t.Errorf("proxy args %q: the admin port is reachable in the pod network, want --admin-token-file", px.Args)
	}
	if tok := find[*corev1.Secret](t, docs, "ct-continuum-proxy-admin-token"); len(tok.StringData["token"]) < 32 {
		t.Errorf("proxy admin token Secret %v: want a long random token", tok.StringData)
	}
	br := find[*appsv1.Deployment](t, docs, "ct-continuum-stream-bridge").Spec.Template.Spec.Containers[0]
	if !slices.Contains(br.Args, "--token-file=/etc/continuum/bridge/token") || br.ReadinessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("stream-bridge args %q: its Service is reachable in the pod network, want --token-file and /healthz probed", br.Args)
	}
	if tok := find[*corev1.Secret](t, docs, "ct-continuum-stream-bridge-token"); len(tok.StringData["token"]) < 32 {
		t.Errorf("stream-bridge token Secret %v: want a long random token", tok.StringData)
	}
	if !strings.Contains(gw.Image, "continuum-python:") {
		t.Errorf("gateway image %s: want the Python runtime image", gw.Image)
	}
	rtdb := find[*appsv1.Deployment](t, docs, "ct-continuum-realtime-db").Spec.Template.Spec.Containers[0]
	if !slices.Contains(rtdb.Args, "--endpoints=http://ct-continuum-kv.edge.svc.cluster.local:2379") {
		t.Errorf("realtime-db args %q: want the chart's kv client Service as --endpoints", rtdb.Args)
	}
	agg := find[*appsv1.Deployment](t, docs, "ct-continuum-stream-aggregator").Spec.Template.Spec.Containers[0]
	for _, want := range []string{"--brokers=kafka-0.kafka:9092,kafka-1.kafka:9092", "--topics=readings", "--rtdb=http://ct-continuum-realtime-db.edge.svc.cluster.local:9000"} {
		if !slices.Contains(agg.Args, want) {
			t.Errorf("aggregator args %q lack %q", agg.Args, want)
		}
	}
	fl := find[*appsv1.Deployment](t, docs, "ct-continuum-fl-orchestrator")
	if c := fl.Spec.Template.Spec.Containers[0]; !slices.Contains(c.Args, "--local") || !strings.Contains(c.Image, "continuum-fl:") {
		t.Errorf("fl orchestrator: args %q image %s, want --local on the FL image", c.Args, c.Image)
	}
	if c := fl.Spec.Template.Spec.Containers[0]; !slices.Contains(c.Args, "--token-file=/var/run/continuum/fl-api-token/token") {
		t.Errorf("fl orchestrator args %q: its API is reachable in the pod network, want --token-file", c.Args)
	}
	if tok := find[*corev1.Secret](t, docs, "ct-continuum-fl-orchestrator-api-token"); len(tok.StringData["token"]) < 32 {
		t.Errorf("fl orchestrator API token %q: want a random one of 32+ characters", tok.StringData["token"])
	}
	if fl.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("fl orchestrator strategy %q: want Recreate (one owner of the model repository)", fl.Spec.Strategy.Type)
	}
	role := find[*rbacv1.Role](t, docs, "ct-continuum-fl-orchestrator")
	if !grants(role.Rules, "", "pods", "create") {
		t.Errorf("fl orchestrator Role %v: want pods create", role.Rules)
	}
}

// checkPod holds for every component: non-root, no privilege escalation, resources, images of
// this chart's version.
func checkPod(t *testing.T, name string, spec corev1.PodSpec) {
	t.Helper()
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("%s: pod securityContext %+v: want runAsNonRoot with user 65532 (the images' user)", name, sc)
	}
	checkSecretsReadable(t, name, spec)
	for _, c := range spec.Containers {
		if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s/%s: allowPrivilegeEscalation not false", name, c.Name)
		}
		if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s/%s: want memory requests and limits, got %v", name, c.Name, c.Resources)
		}
		if !strings.HasSuffix(c.Image, ":"+version.Version) {
			t.Errorf("%s/%s: image %s, want the tag %s (the chart's appVersion)", name, c.Name, c.Image, version.Version)
		}
	}
}

// checkSecretsReadable: a non-root container can read the files of every Secret and ConfigMap
// volume it mounts. The kubelet writes those files owned by root with the volume's mode
// (0644 unless defaultMode or an item's mode says otherwise); with a pod fsGroup it gives them
// that group and adds group read (pkg/volume SetVolumeOwnership), and the container's process
// has the fsGroup among its groups. So a file is readable when its mode lets others read or
// the pod has an fsGroup. (A proxy whose token Secret was 0400 without an fsGroup crash-looped
// with "permission denied": issue 42.)
func checkSecretsReadable(t *testing.T, name string, spec corev1.PodSpec) {
	t.Helper()
	hasFSGroup := spec.SecurityContext != nil && spec.SecurityContext.FSGroup != nil
	readable := func(mode *int32, items []corev1.KeyToPath) bool {
		modes := []int32{0o644}
		if mode != nil {
			modes[0] = *mode
		}
		for _, it := range items {
			if it.Mode != nil {
				modes = append(modes, *it.Mode)
			}
		}
		for _, m := range modes {
			if m&0o004 == 0 && !hasFSGroup {
				return false
			}
		}
		return true
	}
	for _, v := range spec.Volumes {
		switch {
		case v.Secret != nil && !readable(v.Secret.DefaultMode, v.Secret.Items):
			t.Errorf("%s: Secret volume %q (mode %o) is unreadable by the non-root user: give the pod an fsGroup", name, v.Name, *v.Secret.DefaultMode)
		case v.ConfigMap != nil && !readable(v.ConfigMap.DefaultMode, v.ConfigMap.Items):
			t.Errorf("%s: ConfigMap volume %q is unreadable by the non-root user: give the pod an fsGroup", name, v.Name)
		}
	}
}

func TestAppVersionIsTheProjectVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir(t), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		APIVersion string `json:"apiVersion"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.APIVersion != "v2" || c.AppVersion != version.Version {
		t.Errorf("Chart.yaml apiVersion %q appVersion %q, want v2 and %q (internal/version.Version)", c.APIVersion, c.AppVersion, version.Version)
	}
}

func TestKVMembersAndWriter(t *testing.T) {
	docs := render(t, "-f", allOn) // 3 members, writerOrdinal 1
	sts := find[*appsv1.StatefulSet](t, docs, "ct-continuum-kv")
	peer := find[*corev1.Service](t, docs, "ct-continuum-kv-peer")
	if sts.Spec.ServiceName != peer.Name || peer.Spec.ClusterIP != corev1.ClusterIPNone || !peer.Spec.PublishNotReadyAddresses {
		t.Errorf("kv: serviceName %q, peer Service clusterIP %q publishNotReadyAddresses %v: want the headless Service publishing members before they are ready",
			sts.Spec.ServiceName, peer.Spec.ClusterIP, peer.Spec.PublishNotReadyAddresses)
	}
	args := sts.Spec.Template.Spec.Containers[0].Args
	var members []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--initial-cluster="); ok {
			members = strings.Split(v, ",")
		}
	}
	var want []string
	for i := range 3 {
		want = append(want, fmt.Sprintf("ct-continuum-kv-%d=http://ct-continuum-kv-%d.ct-continuum-kv-peer.edge.svc.cluster.local:2380", i, i))
	}
	if !slices.Equal(members, want) {
		t.Errorf("--initial-cluster %v, want every ordinal:\n%v", members, want)
	}
	for _, a := range []string{"--name=$(POD_NAME)", "--initial-advertise-peer-urls=http://$(POD_NAME).ct-continuum-kv-peer.edge.svc.cluster.local:2380", "--peer-compression=gzip"} {
		if !slices.Contains(args, a) {
			t.Errorf("kv args %q lack %q", args, a)
		}
	}
	if n := len(sts.Spec.VolumeClaimTemplates); n != 1 || *sts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName != "local-path" {
		t.Errorf("kv: want one volume claim template of class local-path, got %+v", sts.Spec.VolumeClaimTemplates)
	}
	c := sts.Spec.Template.Spec.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/health" {
		t.Errorf("kv readiness probe %+v: want /health", c.ReadinessProbe)
	}
	client := find[*corev1.Service](t, docs, "ct-continuum-kv")
	if got := client.Spec.Selector["statefulset.kubernetes.io/pod-name"]; got != "ct-continuum-kv-1" {
		t.Errorf("kv client Service selects pod %q, want the designated writer ct-continuum-kv-1", got)
	}
	// With target all, every member serves the client Service.
	client = find[*corev1.Service](t, render(t, "-f", allOn, "--set", "kv.clientService.target=all"), "ct-continuum-kv")
	if got, ok := client.Spec.Selector["statefulset.kubernetes.io/pod-name"]; ok {
		t.Errorf("target all: the client Service still selects one pod (%s)", got)
	}
}

func TestProxyRBACAndConfig(t *testing.T) {
	docs := render(t)
	role := find[*rbacv1.ClusterRole](t, docs, "ct-continuum-proxy-edge")
	for _, want := range [][2]string{{"discovery.k8s.io", "endpointslices"}, {"", "pods"}, {"", "nodes"}, {"metrics.k8s.io", "nodes"}} {
		for _, verb := range []string{"get", "list", "watch"} {
			if !grants(role.Rules, want[0], want[1], verb) {
				t.Errorf("proxy ClusterRole does not grant %s on %s/%s", verb, want[0], want[1])
			}
		}
	}
	for _, r := range role.Rules {
		for _, v := range r.Verbs {
			if !slices.Contains([]string{"get", "list", "watch"}, v) {
				t.Errorf("proxy ClusterRole grants %q on %v: it only reads", v, r.Resources)
			}
		}
	}
	binding := find[*rbacv1.ClusterRoleBinding](t, docs, "ct-continuum-proxy-edge")
	ds := find[*appsv1.DaemonSet](t, docs, "ct-continuum-proxy")
	if s := binding.Subjects; len(s) != 1 || s[0].Name != ds.Spec.Template.Spec.ServiceAccountName || s[0].Namespace != "edge" || binding.RoleRef.Name != role.Name {
		t.Errorf("binding %+v to %s: want the DaemonSet's ServiceAccount %s in edge", s, binding.RoleRef.Name, ds.Spec.Template.Spec.ServiceAccountName)
	}
	c := ds.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--node=$(NODE_NAME)") || c.Ports[0].HostPort != 8080 {
		t.Errorf("proxy: args %q ports %+v: want --node from the downward API and hostPort 8080", c.Args, c.Ports)
	}
	// A changed configuration changes the pods' checksum, so helm upgrade rolls the proxies.
	sum := ds.Spec.Template.Annotations["checksum/config"]
	other := find[*appsv1.DaemonSet](t, render(t, "--set", "proxy.config.defaults.timeout=9s"), "ct-continuum-proxy")
	if sum == "" || other.Spec.Template.Annotations["checksum/config"] == sum {
		t.Errorf("checksum/config %q did not change with the configuration", sum)
	}
	cm := find[*corev1.ConfigMap](t, docs, "ct-continuum-proxy")
	var cfg map[string]any
	if err := yaml.UnmarshalStrict([]byte(cm.Data["proxy.yaml"]), &cfg); err != nil || cfg["discovery"] == nil {
		t.Errorf("proxy.yaml %q: %v (want a discovery section)", cm.Data["proxy.yaml"], err)
	}
}

func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

func TestBadValuesRejected(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"kv.replicaCount=0", "/kv/replicaCount': minimum: got 0, want 1"},
		{"kv.clientService.target=any", "/kv/clientService/target': value must be one of 'writer', 'all'"},
		{"kv.clientService.writerOrdinal=2", "kv.clientService.writerOrdinal 2: must name a member, 0 to kv.replicaCount-1 (0)"},
		{"kv.fsync=sometimes", "/kv/fsync': value must be one of 'batch', 'always', 'never'"},
		{"kv.persistence.size=lots", "/kv/persistence/size'"},
		{"stream.bridge.enabled=true", "stream.kafka.brokers: the bridge and the aggregator need Kafka's bootstrap servers"},
		{"stream.kafka.brokers={kafka},stream.bridge.enabled=true", "/stream/kafka/brokers/0'"},
		{"stream.aggregator.enabled=true,stream.kafka.brokers={k:9092},stream.realtimeDB.enabled=true", "stream.aggregator.topics: name at least one topic"},
		{"faas.enabled=true,faas.functions[0].name=Bad_Name", "/faas/functions/0/name': 'Bad_Name' does not match pattern"},
		{"faas.enabled=true,faas.functions[0].name=x,faas.functions[0].options.maxx=1", "invalid propertyName 'maxx'"},
		{"faas.enabled=true,faas.functions[0].name=x,faas.functions[0].handler=/h,faas.functions[0].source=y", "faas.functions[0] (x): give exactly one of handler, source or options.url"},
		{"fl.enabled=true", "fl.topology: the FL nodes' CSV"},
		{"images.continuum.pullPolicy=Sometimes", "/images/continuum/pullPolicy': value must be one of 'Always', 'IfNotPresent', 'Never'"},
		{"kvv.replicaCount=1", "additional properties 'kvv' not allowed"},
	} {
		out, err := helm(t, "template", "ct", chartDir(t), "--set", tc.set)
		if err == nil {
			t.Errorf("--set %s: rendered without error:\n%.300s", tc.set, out)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %s: error %q, want it to say %q", tc.set, err, tc.want)
		}
	}
}

// TestStrictDecodingCatchesUnknownFields checks the check: a misspelt field that values pass
// through to a manifest is an error, as the API server's strict field validation makes it.
func TestStrictDecodingCatchesUnknownFields(t *testing.T) {
	out, err := helm(t, "template", "ct", chartDir(t), "--set-json", `kv.extraEnv=[{"name":"A","valu":"b"}]`)
	if err != nil {
		t.Fatal(err)
	}
	_, errs := decodeAll(t, out)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `unknown field "spec.template.spec.containers[0].env[1].valu"`) {
		t.Errorf("decoding a manifest with env[].valu: errors %v, want one naming the unknown field", errs)
	}
}

// TestVariantsRender renders the branches the two main value sets leave out, each decoded
// strictly.
func TestVariantsRender(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	docs := render(t, "--set", "kv.persistence.enabled=false,kv.pdb.enabled=false,kv.metrics.enabled=false,proxy.hostPort=0,proxy.rbac.create=false,proxy.serviceAccount.create=false,proxy.serviceAccount.name=existing",
		"--set", "global.imageRegistry=registry.lan:5000,images.proxy.digest="+digest+",kv.clientService.type=NodePort,kv.clientService.nodePort=32379",
		"--set", "faas.enabled=true,fl.enabled=true,fl.topology=n1\\,global\\,\"\"\\,\"\",fl.rbac.create=false")
	sts := find[*appsv1.StatefulSet](t, docs, "ct-continuum-kv")
	if len(sts.Spec.VolumeClaimTemplates) != 0 || sts.Spec.Template.Spec.Volumes[0].EmptyDir == nil {
		t.Errorf("kv without persistence: want an emptyDir and no claim templates, got %+v", sts.Spec.Template.Spec.Volumes)
	}
	if img := sts.Spec.Template.Spec.Containers[0].Image; img != "registry.lan:5000/continuum-project/continuum:"+version.Version {
		t.Errorf("kv image %s: want the global registry in front", img)
	}
	ds := find[*appsv1.DaemonSet](t, docs, "ct-continuum-proxy")
	if c := ds.Spec.Template.Spec.Containers[0]; c.Ports[0].HostPort != 0 || c.Image != "registry.lan:5000/continuum-project/continuum-proxy@"+digest {
		t.Errorf("proxy: hostPort %d image %s: want none and the pinned digest", c.Ports[0].HostPort, c.Image)
	}
	if sa := ds.Spec.Template.Spec.ServiceAccountName; sa != "existing" {
		t.Errorf("proxy ServiceAccount %q, want the existing one named in values", sa)
	}
	if svc := find[*corev1.Service](t, docs, "ct-continuum-kv"); svc.Spec.Ports[0].NodePort != 32379 {
		t.Errorf("kv client Service node port %d, want 32379", svc.Spec.Ports[0].NodePort)
	}
	for _, k := range kinds(docs) {
		if strings.HasPrefix(k, "ClusterRole") || strings.HasPrefix(k, "Role") || k == "PodDisruptionBudget/ct-continuum-kv" || k == "ServiceAccount/ct-continuum-proxy" {
			t.Errorf("%s rendered although switched off", k)
		}
	}
}
