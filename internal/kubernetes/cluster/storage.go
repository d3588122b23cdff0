package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StorageClass is the default StorageClass of a cluster: host directories under the state
// directory (a node's own, in a multi-node cluster), made ahead as PersistentVolumes (there is
// no provisioner to make them on demand), so that StatefulSets' claims bind as on a cluster
// with local storage.
const StorageClass = "continuum-local"

// volumeCount and volumeSize: enough claims for the chart's StatefulSets at their largest
// sensible replica counts; the size is nominal (a host directory has no quota).
const (
	volumeCount = 16
	volumeSize  = "100Gi"
)

// setupStorage creates the default StorageClass and the volumes: volumeCount per node, each
// bound to its node. Binding waits for the first pod that uses a claim, so a claim binds to a
// volume on the node the pod runs on.
func (c *Cluster) setupStorage(ctx context.Context) error {
	bind := storagev1.VolumeBindingWaitForFirstConsumer
	reclaim := corev1.PersistentVolumeReclaimRetain
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: StorageClass,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &bind,
		ReclaimPolicy:     &reclaim,
	}
	if _, err := c.client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create StorageClass %s: %w", sc.Name, err)
	}
	return c.forNodes(func(n nodeConfig) error {
		for i := range volumeCount {
			// The one-node cluster's volumes keep the names and places they had before nodes.
			name := fmt.Sprintf("%s-%02d", StorageClass, i)
			dir := filepath.Join(c.p.join("volumes"), name)
			if c.tb != nil {
				name = fmt.Sprintf("%s-%s-%02d", StorageClass, n.Name, i)
				dir = n.paths().join("volumes", name)
			}
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return err
			}
			pv := &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: corev1.PersistentVolumeSpec{
					StorageClassName:              StorageClass,
					Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(volumeSize)},
					AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					PersistentVolumeReclaimPolicy: reclaim,
					PersistentVolumeSource: corev1.PersistentVolumeSource{
						Local: &corev1.LocalVolumeSource{Path: dir},
					},
					NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
						NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
							Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{n.Name},
						}}}},
					}},
				},
			}
			if _, err := c.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create PersistentVolume %s: %w", name, err)
			}
		}
		return nil
	})
}
