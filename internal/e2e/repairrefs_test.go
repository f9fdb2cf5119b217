package e2e

import (
	"context"
	"errors"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// ownedBy makes a ConfigMap (or, with job, a suspended Job) in namespace
// whose owner reference names owner through apiVersion.
func ownedBy(t *testing.T, c clients, namespace, name, apiVersion, kind string, owner metav1.Object, job bool) {
	t.Helper()
	refs := []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner.GetName(), UID: owner.GetUID()}}
	var err error
	if job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs}, Spec: batchv1.JobSpec{Suspend: ptr.To(true),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
		_, err = c.kube.BatchV1().Jobs(namespace).Create(context.Background(), j, metav1.CreateOptions{})
	} else {
		_, err = c.kube.CoreV1().ConfigMaps(namespace).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// ownerAPIVersion is the apiVersion of the first owner reference of the
// ConfigMap namespace/name, and its resourceVersion.
func ownerAPIVersion(t *testing.T, c clients, namespace, name string) (string, string) {
	t.Helper()
	cm, err := c.kube.CoreV1().ConfigMaps(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.OwnerReferences[0].APIVersion, cm.ResourceVersion
}

// TestRepairReferencesNeverOverwritesAnotherWriter: on the real API server
// the repair's JSON patch changes nothing when the object, or its owner
// reference, is no longer what the inventory read — another writer pointed
// the reference at another owner, or the object was deleted and made
// again, or the reference removed — and says so (references.ErrChanged);
// a deleted object is
// references.ErrGone.
func TestRepairReferencesNeverOverwritesAnotherWriter(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	owner := metav1.ObjectMeta{Name: "owner", UID: types.UID("7b1f3c5e-0000-4000-8000-000000000001")}
	ensureNamespace(t, c, "team-a")
	ownedBy(t, c, "team-a", "repair-race", "race.example.com/v1", "Widget", &owner, false)
	cm, err := c.kube.CoreV1().ConfigMaps("team-a").Get(ctx, "repair-race", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := cluster.ReferencePatcher{Client: clusterClient(t, ""), FieldManager: "kubectl-crdversion"}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	read := references.Dependent{Resource: references.Resource(cms), Namespace: "team-a", Name: "repair-race", UID: cm.UID, Owner: cm.OwnerReferences[0]}

	otherOwner := read
	otherOwner.Owner.UID = "7b1f3c5e-0000-4000-8000-000000000002"
	recreated := read
	recreated.UID = "7b1f3c5e-0000-4000-8000-000000000003"
	removed := read
	removed.Index = 1 // the reference is no longer there
	for name, d := range map[string]references.Dependent{"another owner": otherOwner, "made again": recreated, "reference removed": removed} {
		if err := p.PatchJSON(ctx, cms, d.Namespace, d.Name, references.Patch(d, "race.example.com/v2"), false); !errors.Is(err, references.ErrChanged) {
			t.Errorf("%s: %v, want ErrChanged", name, err)
		}
	}
	if v, rv := ownerAPIVersion(t, c, "team-a", "repair-race"); v != "race.example.com/v1" || rv != cm.ResourceVersion {
		t.Fatalf("a refused patch wrote: %s at %s", v, rv)
	}
	if err := p.PatchJSON(ctx, cms, read.Namespace, read.Name, references.Patch(read, "race.example.com/v2"), false); err != nil {
		t.Fatalf("the patch of what was read: %v", err)
	}
	if err := c.kube.CoreV1().ConfigMaps("team-a").Delete(ctx, "repair-race", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.PatchJSON(ctx, cms, read.Namespace, read.Name, references.Patch(read, "race.example.com/v2"), false); !errors.Is(err, references.ErrGone) {
		t.Errorf("deleted: %v, want ErrGone", err)
	}
}
