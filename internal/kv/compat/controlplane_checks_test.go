package compat

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
	"github.com/continuum-project/continuum/internal/testenv"
)

// cpChecks run in order on one control plane per store; later checks use what earlier ones
// created (the cp-objects namespace and its 25 ConfigMaps).
var cpChecks = []cpCheck{
	{"create_get", checkCreateGet},
	{"paginated_list", checkPaginatedList},
	{"update_conflict", checkUpdateConflict},
	{"delete", checkDelete},
	{"watch_from_resource_version", checkWatchFromRV},
	{"watch_bookmarks", checkWatchBookmarks},
	{"crd", checkCRD},
	{"deployment_scheduled", checkDeployment},
	{"store_crash", checkStoreCrash},
	{"store_compacted", checkCompacted},
}

const cpNS = "cp-objects"

func createNamespace(t *testing.T, e *cpEnv, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := e.c.CoreV1().Namespaces().Create(e.ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func configMap(name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": value}}
}

func checkCreateGet(t *testing.T, e *cpEnv) string {
	createNamespace(t, e, cpNS)
	cms := e.c.CoreV1().ConfigMaps(cpNS)
	for i := range 25 {
		if _, err := cms.Create(e.ctx, configMap(fmt.Sprintf("cm-%02d", i), fmt.Sprint(i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := cms.Create(e.ctx, configMap("cm-00", "again"), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating cm-00 twice: %v, want AlreadyExists", err)
	}
	got, err := cms.Get(e.ctx, "cm-07", metav1.GetOptions{})
	if err != nil || got.Data["v"] != "7" || got.ResourceVersion == "" {
		t.Fatalf("get cm-07: %v %v", got, err)
	}
	return summary(map[string]any{"created": 25, "duplicate": "AlreadyExists", "cm-07": got.Data["v"]})
}

// checkPaginatedList lists in pages of 10 with continue tokens, while a write lands between
// pages: every page is served at the first page's revision, so the new object is not listed.
func checkPaginatedList(t *testing.T, e *cpEnv) string {
	cms := e.c.CoreV1().ConfigMaps(cpNS)
	var names []string
	var pages []int
	opts := metav1.ListOptions{Limit: 10}
	for {
		l, err := cms.List(e.ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, len(l.Items))
		for _, cm := range l.Items {
			names = append(names, cm.Name)
		}
		if len(pages) == 1 {
			if _, err := cms.Create(e.ctx, configMap("cm-99", "between pages"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
	}
	if len(names) != 25 || names[0] != "cm-00" || names[24] != "cm-24" {
		t.Fatalf("paged list: %d names %v", len(names), names)
	}
	all, err := cms.List(e.ctx, metav1.ListOptions{})
	if err != nil || len(all.Items) != 26 {
		t.Fatalf("full list after the write: %d items, %v", len(all.Items), err)
	}
	return summary(map[string]any{"pages": pages, "paged": len(names), "after": len(all.Items)})
}

func checkUpdateConflict(t *testing.T, e *cpEnv) string {
	cms := e.c.CoreV1().ConfigMaps(cpNS)
	cur, err := cms.Get(e.ctx, "cm-03", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := cur.DeepCopy()
	cur.Data["v"] = "updated"
	upd, err := cms.Update(e.ctx, cur, metav1.UpdateOptions{})
	if err != nil || upd.ResourceVersion == cur.ResourceVersion {
		t.Fatalf("update at the current resourceVersion: %v %v", upd, err)
	}
	stale.Data["v"] = "stale"
	_, err = cms.Update(e.ctx, stale, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("update at a stale resourceVersion: %v, want Conflict", err)
	}
	got, err := cms.Get(e.ctx, "cm-03", metav1.GetOptions{})
	if err != nil || got.Data["v"] != "updated" {
		t.Fatalf("after the conflict: %v %v", got.Data, err)
	}
	return summary(map[string]any{"current": "ok", "stale": "Conflict", "value": got.Data["v"]})
}

func checkDelete(t *testing.T, e *cpEnv) string {
	cms := e.c.CoreV1().ConfigMaps(cpNS)
	cur, err := cms.Get(e.ctx, "cm-04", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Data["v"] = "changed"
	if _, err := cms.Update(e.ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A precondition on the old resourceVersion fails; the object stays.
	staleRV := cur.ResourceVersion
	err = cms.Delete(e.ctx, "cm-04", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &staleRV}})
	if !apierrors.IsConflict(err) {
		t.Fatalf("delete with a stale precondition: %v, want Conflict", err)
	}
	if err := cms.Delete(e.ctx, "cm-04", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = cms.Get(e.ctx, "cm-04", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v, want NotFound", err)
	}
	err = cms.Delete(e.ctx, "cm-04", metav1.DeleteOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("second delete: %v, want NotFound", err)
	}
	return summary(map[string]any{"stale_precondition": "Conflict", "get": "NotFound", "again": "NotFound"})
}

// checkWatchFromRV: a watch from the resourceVersion a write returned sees exactly the later
// changes, in order.
func checkWatchFromRV(t *testing.T, e *cpEnv) string {
	cms := e.c.CoreV1().ConfigMaps(cpNS)
	created, err := cms.Create(e.ctx, configMap("w-1", "a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Data["v"] = "b"
	if _, err := cms.Update(e.ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(e.ctx, "w-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(e.ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion, FieldSelector: "metadata.name=w-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var seen []string
	for len(seen) < 2 {
		ev := nextEvent(t, w, 30*time.Second)
		cm := ev.Object.(*corev1.ConfigMap)
		seen = append(seen, fmt.Sprintf("%s:%s", ev.Type, cm.Data["v"]))
	}
	if strings.Join(seen, ",") != "MODIFIED:b,DELETED:b" {
		t.Fatalf("watch from the create's resourceVersion: %v, want MODIFIED then DELETED", seen)
	}
	return strings.Join(seen, ",")
}

// checkWatchBookmarks: with allowWatchBookmarks the apiserver sends a BOOKMARK (at the latest
// 2 s before the watch's timeout) at a resourceVersion no older than the events already sent;
// and a watch-list
// (sendInitialEvents) ends its initial events with the initial-events-end bookmark, which the
// watch cache sends only once it has seen the store's current revision (RequestProgress).
func checkWatchBookmarks(t *testing.T, e *cpEnv) string {
	cms := e.c.CoreV1().ConfigMaps(cpNS)
	timeout := int64(4)
	w, err := cms.Watch(e.ctx, metav1.ListOptions{AllowWatchBookmarks: true, TimeoutSeconds: &timeout, ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	added, bookmark, newest := 0, "", int64(0)
	for bookmark == "" {
		ev := nextEvent(t, w, 30*time.Second)
		switch ev.Type {
		case watch.Added:
			added++
			newest = max(newest, rv(t, ev.Object.(*corev1.ConfigMap).ResourceVersion))
		case watch.Bookmark:
			bookmark = ev.Object.(*corev1.ConfigMap).ResourceVersion
			if rv(t, bookmark) < newest {
				t.Fatalf("bookmark at %s, older than an event already sent (%d)", bookmark, newest)
			}
		default:
			t.Fatalf("unexpected %s event", ev.Type)
		}
	}
	if added != 25 || bookmark == "" {
		t.Fatalf("watch from 0: %d ADDED then bookmark at %q, want the 25 ConfigMaps then a bookmark", added, bookmark)
	}

	send := true
	wl, err := cms.Watch(e.ctx, metav1.ListOptions{
		AllowWatchBookmarks: true, SendInitialEvents: &send,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer wl.Stop()
	initial := 0
	for {
		ev := nextEvent(t, wl, 30*time.Second)
		if ev.Type == watch.Added {
			initial++
			continue
		}
		cm := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Bookmark || cm.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
			t.Fatalf("watch-list: %s event %v, want ADDED or the initial-events-end bookmark", ev.Type, cm.Annotations)
		}
		break
	}
	if initial != 25 {
		t.Fatalf("watch-list: %d initial events, want 25", initial)
	}
	return summary(map[string]any{"added_before_bookmark": added, "watch_list_initial": initial, "initial_events_end": true})
}

// rv parses a resourceVersion: only comparing them is meaningful, and only for one resource
// (Kubernetes' API conventions forbid it to clients; this test checks the store's revisions).
func rv(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return n
}

func nextEvent(t *testing.T, w watch.Interface, d time.Duration) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		if ev.Type == watch.Error {
			t.Fatalf("watch error: %v", apierrors.FromObject(ev.Object))
		}
		return ev
	case <-time.After(d):
		t.Fatalf("no watch event within %v", d)
	}
	return watch.Event{}
}

var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVR = schema.GroupVersionResource{Group: "compat.continuum.io", Version: "v1", Resource: "widgets"}
)

// checkCRD creates a CustomResourceDefinition (through the dynamic client: the typed
// apiextensions client would be a module of its own), waits until it is Established, then
// creates and lists custom objects.
func checkCRD(t *testing.T, e *cpEnv) string {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.compat.continuum.io"},
		"spec": map[string]any{
			"group": "compat.continuum.io", "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{"spec": map[string]any{
						"type": "object", "properties": map[string]any{"size": map[string]any{"type": "integer"}},
					}},
				}},
			}},
		},
	}}
	if _, err := e.dyn.Resource(crdGVR).Create(e.ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyNoError(t, 30*time.Second, "CRD Established", func() error {
		got, err := e.dyn.Resource(crdGVR).Get(e.ctx, "widgets.compat.continuum.io", metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", conds)
	})
	widgets := e.dyn.Resource(widgetGVR).Namespace(cpNS)
	for i := range 3 {
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "compat.continuum.io/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("widget-%d", i)},
			"spec":     map[string]any{"size": int64(i)},
		}}
		// The new resource's handler may take a moment to be served after Established.
		testenv.EventuallyNoError(t, 30*time.Second, "create widget", func() error {
			_, err := widgets.Create(e.ctx, w, metav1.CreateOptions{})
			return err
		})
	}
	l, err := widgets.List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range l.Items {
		size, _, _ := unstructured.NestedInt64(it.Object, "spec", "size")
		names = append(names, fmt.Sprintf("%s=%d", it.GetName(), size))
	}
	if strings.Join(names, ",") != "widget-0=0,widget-1=1,widget-2=2" {
		t.Fatalf("listed widgets %v", names)
	}
	return strings.Join(names, ",")
}

// checkDeployment: the controller-manager turns a Deployment into a ReplicaSet and its Pods,
// and the scheduler binds the Pods to the one Node (registered through the API; no kubelet).
func checkDeployment(t *testing.T, e *cpEnv) string {
	const ns = "cp-deploy"
	createNamespace(t, e, ns)
	if _, err := controlplane.RegisterNode(e.ctx, e.c, "node-1"); err != nil {
		t.Fatal(err)
	}
	// Pods are refused until the serviceaccount controller has created the namespace's
	// default account; waiting here keeps the ReplicaSet controller out of its backoff.
	testenv.EventuallyNoError(t, 60*time.Second, "default service account", func() error {
		_, err := e.c.CoreV1().ServiceAccounts(ns).Get(e.ctx, "default", metav1.GetOptions{})
		return err
	})
	replicas := int32(2)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.invalid/web:1"}}},
			},
		},
	}
	if _, err := e.c.AppsV1().Deployments(ns).Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var out string
	testenv.EventuallyNoError(t, 60*time.Second, "ReplicaSet and 2 bound Pods", func() error {
		rss, err := e.c.AppsV1().ReplicaSets(ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(rss.Items) != 1 || len(rss.Items[0].OwnerReferences) != 1 || rss.Items[0].OwnerReferences[0].Name != "web" {
			return fmt.Errorf("%d ReplicaSets, want 1 owned by the Deployment", len(rss.Items))
		}
		rs := rss.Items[0]
		pods, err := e.c.CoreV1().Pods(ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var bound []string
		for _, p := range pods.Items {
			if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != rs.UID {
				return fmt.Errorf("pod %s not owned by ReplicaSet %s", p.Name, rs.Name)
			}
			if p.Spec.NodeName != "" {
				bound = append(bound, p.Spec.NodeName)
			}
		}
		if len(pods.Items) != 2 || len(bound) != 2 {
			return fmt.Errorf("%d pods, %d bound (%v), want 2 bound to node-1", len(pods.Items), len(bound), bound)
		}
		out = summary(map[string]any{"replicasets": 1, "pods": len(pods.Items), "nodes": strings.Join(bound, ",")})
		return nil
	})
	return out
}

// checkCompacted: the apiserver's compactor (every cpCompactionInterval here) elects itself
// through compact_rev_key's version and compacts the store, so a read at the first revision
// fails as compacted while current reads go on.
func checkCompacted(t *testing.T, e *cpEnv) string {
	c := e.store.client(t)
	testenv.EventuallyNoError(t, 30*time.Second, "a compaction by the apiserver", func() error {
		r, err := c.Get(e.ctx, "compact_rev_key")
		if err != nil {
			return err
		}
		if len(r.Kvs) == 0 || r.Kvs[0].Version < 2 {
			return fmt.Errorf("compact_rev_key %v: want version >= 2 (two compaction rounds)", r.Kvs)
		}
		_, err = c.Get(e.ctx, "health", clientv3.WithRev(1))
		if !errors.Is(err, rpctypes.ErrCompacted) {
			return fmt.Errorf("read at revision 1: %v, want compacted", err)
		}
		return nil
	})
	if _, err := e.c.CoreV1().ConfigMaps(cpNS).List(e.ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list after compaction: %v", err)
	}
	return summary(map[string]any{"compact_rev_key": "version>=2", "rev1": "compacted", "list": "ok"})
}
