package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// TestGarbageCollectorAndAnUnservedOwnerVersion establishes on the real
// API server and kube-controller-manager's garbage collector (v1.37.2)
// what issue 28 reports from kubernetes/kubernetes#102641: a dependent
// whose ownerReference names its owner through a version that is no
// longer served is not collected when the owner goes, while siblings that
// name a served version are; rewriting the reference's apiVersion to a
// served version before the owner goes (uid, kind and name unchanged) is
// the repair: that dependent is collected with the others. The API server
// itself accepts and keeps references to the unserved version. (Repaired
// after the owner went, a dependent waits for the collector's next retry,
// which backs off exponentially to 1000 s: repair at unserve, not later.)
func TestGarbageCollectorAndAnUnservedOwnerVersion(t *testing.T) {
	c := newClients(t)
	crd := advance(t, c, "owners.example.com", apiextensionsv1.NamespaceScoped, 1, lifecycle.StateS4)
	owner, err := resource(c, crd, "v2", "team-a").Get(context.Background(), "crontab-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cms := c.kube.CoreV1().ConfigMaps("team-a")
	dependent := func(name, version string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "owners.example.com/" + version, Kind: "CronTab", Name: owner.GetName(), UID: owner.GetUID()}}}}
		if _, err := cms.Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gone := func(name string) func() (bool, error) {
		return func() (bool, error) {
			_, err := cms.Get(context.Background(), name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}
	}
	// v1 unserved (S5), then the dependents: the API server keeps a
	// reference to a version it no longer serves.
	updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Versions[0].Served = false })
	dependent("names-v1", "v1")
	dependent("names-v1-repaired", "v1")
	dependent("names-v2", "v2")
	// The repair: the same reference through the served version.
	patch := `[{"op":"replace","path":"/metadata/ownerReferences/0/apiVersion","value":"owners.example.com/v2"}]`
	if _, err := cms.Patch(context.Background(), "names-v1-repaired", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	runControllers(t, 2, func(context.Context, controllerParts) []func(context.Context) { return nil })

	if err := resource(c, crd, "v2", "team-a").Delete(context.Background(), owner.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the collector to delete the dependent that names v2", gone("names-v2"))
	waitFor(t, "the collector to delete the repaired dependent", gone("names-v1-repaired"))
	// A later dependent of the same deleted owner, through v2: once it is
	// collected too, the collector has had the owner's deletion in its
	// graph for a whole round of attempts.
	dependent("names-v2-later", "v2")
	waitFor(t, "the collector to delete the later dependent that names v2", gone("names-v2-later"))
	if ok, err := gone("names-v1")(); err != nil || ok {
		t.Fatalf("the dependent naming the unserved v1 was collected (%v): the collector resolves unserved versions after all", err)
	}
}
