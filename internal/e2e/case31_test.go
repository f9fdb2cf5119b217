package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// TestCase31OwnerReferencesPinRemovedVersion: a CertRequest and a
// ConfigMap created while v1alpha2 was served keep owner references naming
// pki.example.com/v1alpha2 after it is unserved (the API server accepts and
// keeps them, and one naming v1alpha9, a version the CRD never had).
// doctor finds both kinds; retire refuses at step 2, changing nothing,
// naming the two that name v1alpha2; its run: line rewrites them to v1
// before anything else and retires v1alpha2; doctor's fix rewrites the
// last; then kube-controller-manager's garbage collector collects all
// three when their Cert is deleted.
func TestCase31OwnerReferencesPinRemovedVersion(t *testing.T) {
	checkReferences(t)
	c := newClients(t)
	ctx := context.Background()
	fx := loadCase(t, "31-ownerreferences-pin-removed-version")
	crds := fx.build(t, c)
	certs, reqs := crds["certs.pki.example.com"], crds["certrequests.pki.example.com"]
	cert, err := resource(c, certs, "v1", "default").Get(ctx, "test1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := map[string]any{"apiVersion": "pki.example.com/v1alpha2", "kind": "Cert", "name": "test1", "uid": string(cert.GetUID()), "controller": true, "blockOwnerDeletion": true}
	req := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "pki.example.com/v1", "kind": "CertRequest",
		"metadata": map[string]any{"name": "test1-abcde", "namespace": "default", "ownerReferences": []any{ref}}, "spec": map[string]any{}}}
	if _, err := resource(c, reqs, "v1", "default").Create(ctx, req, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ownedBy(t, c, "default", "test1-cm", "pki.example.com/v1alpha2", "Cert", cert, false)
	ownedBy(t, c, "default", "test1-cm-never", "pki.example.com/v1alpha9", "Cert", cert, false)
	for name, want := range map[string]string{"test1-cm": "pki.example.com/v1alpha2", "test1-cm-never": "pki.example.com/v1alpha9"} {
		if v, _ := ownerAPIVersion(t, c, "default", name); v != want {
			t.Fatalf("the API server did not keep the reference to %s: %s", want, v)
		}
	}
	// doctor finds both broken references: to the unserved version and to
	// one the CRD never had.
	broken := func() map[string]lifecycle.Finding {
		t.Helper()
		var rep report.Doctor
		r := crdversion(t, "doctor", certs.Name, "--skip-usage-check", "-o", "json")
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.CRDs) != 1 {
			t.Fatalf("doctor: %v\n%s%s", err, r.stdout, r.stderr)
		}
		out := map[string]lifecycle.Finding{}
		for _, f := range rep.CRDs[0].Findings {
			if f.Code == lifecycle.CodeReferencesBroken || f.Code == lifecycle.CodeReferencesUnknown {
				out[f.Version] = f
			}
		}
		return out
	}
	fs := broken()
	if f := fs["v1alpha2"]; len(fs) != 2 || !strings.Contains(f.Message, "2 owner references name pki.example.com/v1alpha2 Cert, which is not served") ||
		f.Fix != "kubectl crdversion repair-references "+certs.Name+" v1alpha2" || !strings.Contains(fs["v1alpha9"].Message, "1 owner reference names pki.example.com/v1alpha9 Cert, which is not in spec.versions") {
		t.Errorf("doctor's owner-reference findings: %+v", fs)
	}

	r := refuses(t, c, []string{certs.Name, reqs.Name}, []string{"stopped at step 2", "2 owner references name pki.example.com/v1alpha2 Cert",
		"certrequests.pki.example.com: 1 in default (default/test1-abcde)", "configmaps: 1 in default (default/test1-cm)"},
		"retire", certs.Name, "v1alpha2", "--skip-usage-check", "--migrate")
	args := runLine(t, r.stdout+r.stderr)
	if got := strings.Join(args, " "); got != "retire "+certs.Name+" v1alpha2 --migrate --repair-references --skip-usage-check" {
		t.Fatalf("run: line %q", got)
	}
	succeeds(t, args...)
	if got := getCRD(t, c, certs.Name); lifecycle.FindVersion(got, "v1alpha2") != nil {
		t.Fatalf("v1alpha2 not retired: %v", lifecycle.VersionNames(got))
	}
	got, err := resource(c, reqs, "v1", "default").Get(ctx, "test1-abcde", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if refs := got.GetOwnerReferences(); len(refs) != 1 || refs[0].APIVersion != "pki.example.com/v1" || refs[0].UID != cert.GetUID() || !ptr.Deref(refs[0].Controller, false) {
		t.Errorf("the CertRequest's reference after retire: %+v", refs)
	}

	// The reference to a version the CRD never had is doctor's to find
	// and repair-references' to rewrite: its fix, pasted.
	fs = broken()
	if len(fs) != 1 || fs["v1alpha9"].Fix == "" {
		t.Fatalf("after retire, doctor finds %+v, want the reference to v1alpha9 only", fs)
	}
	succeeds(t, strings.Fields(strings.TrimPrefix(fs["v1alpha9"].Fix, "kubectl crdversion "))...)
	if fs = broken(); len(fs) != 0 {
		t.Errorf("after the repair, doctor finds %+v", fs)
	}

	runControllers(t, 2, func(context.Context, controllerParts) []func(context.Context) { return nil })
	if err := resource(c, certs, "v1", "default").Delete(ctx, "test1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the collector to delete the CertRequest", func() (bool, error) {
		_, err := resource(c, reqs, "v1", "default").Get(ctx, "test1-abcde", metav1.GetOptions{})
		return apierrors.IsNotFound(err), unlessNotFound(err)
	})
	for _, name := range []string{"test1-cm", "test1-cm-never"} {
		waitFor(t, "the collector to delete ConfigMap "+name, func() (bool, error) {
			_, err := c.kube.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), unlessNotFound(err)
		})
	}
}

// unlessNotFound is err unless it is a 404, for a wait on a deletion.
func unlessNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
