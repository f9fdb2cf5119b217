package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// TestGarbageCollectorAndAnUnservedOwnerVersion establishes on the real
// API server and kube-controller-manager's garbage collector (v1.37.2)
// what issue 28 reports from kubernetes/kubernetes#102641: a dependent
// whose ownerReference names its owner through a version that is no
// longer served is not collected when the owner goes, while siblings that
// name a served version are; rewriting the reference's apiVersion to a
// served version before the owner goes (uid, kind and name unchanged) is
// the repair, which kubectl crdversion repair-references makes: that
// dependent is collected with the others. The API server
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
	dependent("names-v1-repaired", "v1")
	dependent("names-v2", "v2")
	// The repair, by the tool: the same reference through the served
	// version (uid, kind and name unchanged).
	if r := mustRun(t, "repair-references", crd.Name, "v1"); !strings.Contains(r.stdout, "configmaps team-a/names-v1-repaired ownerReferences[0] (CronTab crontab-0): rewritten to owners.example.com/v2") {
		t.Fatalf("repair-references:\n%s", r.stdout)
	}
	dependent("names-v1", "v1")
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

// TestReferencesInventory: on the real API server, the inventory finds
// every owner reference that names the old version, on built-in kinds of
// two API groups, and no reference to the storage version; as an identity
// that may list configmaps but not secrets, the secrets are named Unseen
// (forbidden) and the inventory is not Complete: what it could not read is
// unknown, not "no reference".
func TestReferencesInventory(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "refs.example.com", apiextensionsv1.NamespaceScoped, 1, lifecycle.StateS4)
	owner, err := resource(c, crd, "v2", "team-a").Get(context.Background(), "crontab-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refTo := func(version string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "refs.example.com/" + version, Kind: "CronTab", Name: owner.GetName(), UID: owner.GetUID()}}
	}
	ctx := context.Background()
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "refs-v1", OwnerReferences: refTo("v1")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "refs-v2", OwnerReferences: refTo("v2")}},
	} {
		if _, err := c.kube.CoreV1().ConfigMaps("team-b").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "refs-v1", OwnerReferences: refTo("v1")}}
	if _, err := c.kube.CoreV1().Secrets("team-b").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "refs-v1", OwnerReferences: refTo("v1")}, Spec: batchv1.JobSpec{Suspend: ptr.To(true),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := c.kube.BatchV1().Jobs("team-b").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	target := references.Target{APIVersion: "refs.example.com/v1", Kind: "CronTab"}
	find := func(as string) *references.Inventory {
		t.Helper()
		src, err := cluster.NewReferenceSource(clusterClient(t, as), 50)
		if err != nil {
			t.Fatal(err)
		}
		inv, err := references.Find(ctx, src, target, references.Options{Concurrency: 4, Forbidden: cluster.Forbidden})
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	names := func(inv *references.Inventory) string {
		var out []string
		for _, d := range inv.Dependents {
			out = append(out, fmt.Sprintf("%s %s/%s→%v", d.Resource.GroupResource(), d.Namespace, d.Name, d.Owner.UID == owner.GetUID()))
		}
		return strings.Join(out, ", ")
	}
	inv := find("")
	if got, want := names(inv), "configmaps team-b/refs-v1→true, jobs.batch team-b/refs-v1→true, secrets team-b/refs-v1→true"; got != want {
		t.Errorf("as the admin: dependents %q, want %q", got, want)
	}
	// Other tests on this server leave custom resources that cannot be
	// read on purpose (and the inventory rightly names them), so the
	// admin's inventory need not be Complete here; nothing may be
	// forbidden to it, and every kind but the tests' own is read.
	for _, u := range inv.Unseen {
		if u.Forbidden || !strings.HasSuffix(u.Resource.Group, ".example.com") {
			t.Errorf("as the admin, unseen: %+v", u)
		}
	}

	user := "refs-no-secrets"
	bindUser(t, c, user, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}})
	inv = find(user)
	if got, want := names(inv), "configmaps team-b/refs-v1→true"; got != want || inv.Complete() {
		t.Errorf("without secrets and jobs: dependents %q (complete %v), want %q, not complete", got, inv.Complete(), want)
	}
	if !slices.ContainsFunc(inv.Unseen, func(u references.Unseen) bool { return u.Resource.Resource == "secrets" && u.Forbidden }) {
		t.Errorf("secrets are not named as forbidden: %+v", inv.Unseen)
	}
}
