package kubeplatform

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A run's node pods run as a ServiceAccount of the run (instancesAccount) through which the
// components in them start their own instances as pods (PodClient) and discover the run's
// services (the proxy's kubernetes source): a Role on the run's namespace for pods and their
// logs and to read EndpointSlices, and a ClusterRole to read Nodes (their labels, whether
// their kubelet is lost). Nothing else in the cluster is theirs: a component cannot read
// Secrets, touch other namespaces or change Nodes, and the run's own namespace enforces the
// baseline Pod Security Standard, so the pods it creates cannot be privileged or mount the
// host. Only a run's own namespace gets them: in a namespace the user gives, which holds
// others' pods and Secrets and may enforce no Pod Security Standard, a right to create pods
// would be a right to read those Secrets and to run as any ServiceAccount there, so the node
// pods get no token. A runner that may not grant these (a user with a namespace's edit role) runs without
// them: node pods then get no token, and a component that starts instances is refused by the
// API server, which the component's error names.

// instancesAccount is the ServiceAccount (and the Role and RoleBinding) of run's node pods.
func instancesAccount(run string) string { return objectName("continuum-"+run, 63) }

// nodesReader is the ClusterRole (and ClusterRoleBinding) of run in namespace ns that reads
// Nodes: cluster-wide, so named for both.
func nodesReader(ns, run string) string { return objectName("continuum-nodes-"+ns+"-"+run, 63) }

// accessObjects are the objects of the node pods' ServiceAccount and what it may do.
type accessObjects struct {
	account     *corev1.ServiceAccount
	role        *rbacv1.Role
	binding     *rbacv1.RoleBinding
	nodes       *rbacv1.ClusterRole
	nodeBinding *rbacv1.ClusterRoleBinding
}

func (s podSpec) access() accessObjects {
	name := instancesAccount(s.Run)
	meta := metav1.ObjectMeta{Name: name, Namespace: s.Namespace, Labels: runLabels(s.Run)}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: s.Namespace}}
	cluster := metav1.ObjectMeta{Name: nodesReader(s.Namespace, s.Run), Labels: runLabels(s.Run)}
	no := false
	return accessObjects{
		account: &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta,
			AutomountServiceAccountToken: &no},
		role: &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: meta,
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "delete", "get", "list", "watch"}},
				{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
				// The proxy's kubernetes discovery source: the run's declared services.
				{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
			}},
		binding: &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: meta,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: subject},
		nodes: &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}, ObjectMeta: cluster,
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}}}},
		nodeBinding: &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"}, ObjectMeta: cluster,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cluster.Name}, Subjects: subject},
	}
}

// list is the objects in the order they are created (render shows them so).
func (a accessObjects) list() []any {
	return []any{a.account, a.role, a.binding, a.nodes, a.nodeBinding}
}

// create creates them (dry, for Check). It returns whether the node pods get the account: false
// when the runner may not grant it (Forbidden), which is not an error.
func (a accessObjects) create(ctx context.Context, cs kubernetes.Interface, opts metav1.CreateOptions) (bool, error) {
	ns := a.account.Namespace
	steps := []func() error{
		func() error { _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, a.account, opts); return err },
		func() error { _, err := cs.RbacV1().Roles(ns).Create(ctx, a.role, opts); return err },
		func() error { _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, a.binding, opts); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			if apierrors.IsForbidden(err) {
				return false, nil
			}
			return false, fmt.Errorf("platform kubernetes: the node pods' ServiceAccount %s/%s: %w", ns, a.account.Name, err)
		}
	}
	// Reading Nodes is a cluster-wide grant; without it a component sees its nodes' pods only.
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, a.nodes, opts); err != nil {
		if apierrors.IsForbidden(err) {
			return true, nil
		}
		return false, fmt.Errorf("platform kubernetes: ClusterRole %s: %w", a.nodes.Name, err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, a.nodeBinding, opts); err != nil && !apierrors.IsForbidden(err) {
		return false, fmt.Errorf("platform kubernetes: ClusterRoleBinding %s: %w", a.nodeBinding.Name, err)
	}
	return true, nil
}

// deleteAccess deletes run's grants in namespace ns by their names (nodesReader(ns, run) is the
// run's in that namespace alone: another namespace's run of the same name keeps its own), the
// namespaced ones only unless the namespace goes with the run (ownNS). It returns what it
// deleted; objects already gone, or that this runner may not delete, are not an error.
func deleteAccess(ctx context.Context, cs kubernetes.Interface, ns, run string, ownNS bool) ([]string, error) {
	var errs []error
	var deleted []string
	del := func(what string, err error) {
		switch {
		case err == nil:
			deleted = append(deleted, what)
		case !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
			errs = append(errs, err)
		}
	}
	cluster, name := nodesReader(ns, run), instancesAccount(run)
	rb := cs.RbacV1()
	del("clusterrolebinding/"+cluster, rb.ClusterRoleBindings().Delete(ctx, cluster, metav1.DeleteOptions{}))
	del("clusterrole/"+cluster, rb.ClusterRoles().Delete(ctx, cluster, metav1.DeleteOptions{}))
	if !ownNS {
		del("rolebinding/"+name, rb.RoleBindings(ns).Delete(ctx, name, metav1.DeleteOptions{}))
		del("role/"+name, rb.Roles(ns).Delete(ctx, name, metav1.DeleteOptions{}))
		del("serviceaccount/"+name, cs.CoreV1().ServiceAccounts(ns).Delete(ctx, name, metav1.DeleteOptions{}))
	}
	return deleted, errors.Join(errs...)
}
