package upgrade

import (
	"context"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
)

// TestOffline: two releases without a cluster. The previous one stands
// for the installed CRDs with storedVersions its storage version alone;
// every plan is predicted, no dry run is sent; a CRD the Helm release
// drops is deleted with an unknown count (not zero), kept when the
// previous template had the keep policy; a scope change's count is
// unknown too.
func TestOffline(t *testing.T) {
	oldW := crdtest.New("widgets.example.com").Kind("Widget").Version("v1", crdtest.Served, crdtest.Storage).CRD()
	newW := crdtest.New("widgets.example.com").Kind("Widget").Version("v2", crdtest.Served, crdtest.Storage).CRD()
	dropped := crdtest.New("gadgets.example.com").Kind("Gadget").Version("v1", crdtest.Served, crdtest.Storage).CRD()
	kept := crdtest.New("gizmos.example.com").Kind("Gizmo").Version("v1", crdtest.Served, crdtest.Storage).CRD()
	kept.Annotations = map[string]string{ResourcePolicyAnnotation: " KEEP"}
	oldScope := crdtest.New("things.example.com").Kind("Thing").Version("v1", crdtest.Served, crdtest.Storage).CRD()
	newScope := oldScope.DeepCopy()
	newScope.Spec.Scope = "Cluster"
	tpl := func(c *apiextensionsv1.CustomResourceDefinition) manifest.CRDDoc {
		return manifest.CRDDoc{CRD: c, Source: "chart/templates/" + c.Name, HelmOrigin: manifest.HelmTemplates}
	}
	old := []manifest.CRDDoc{tpl(oldW), tpl(dropped), tpl(kept), tpl(oldScope)}
	next := []manifest.CRDDoc{tpl(newW), tpl(newScope)}
	for _, d := range next {
		d.CRD.Annotations = map[string]string{ResourcePolicyAnnotation: KeepPolicy}
	}
	release := &HelmRelease{Name: "r", Namespace: "ns"}
	c := &Checker{Cluster: NewOffline(old, release), Offline: true, Helm: release, ServerDryRun: false}
	plans, err := c.Check(context.Background(), next)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"widgets.example.com Rejected", "things.example.com Rejected", "gadgets.example.com Deleted", "gizmos.example.com Accepted"}
	var got []string
	for _, p := range plans {
		got = append(got, p.Name+" "+p.Apply)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("plans %q, want %q\n%q", got, want, summary(plans))
	}
	for _, p := range plans {
		if !p.Predicted || p.ServerDryRun != DryRunSkipped || p.APIServer != "" {
			t.Errorf("%s: predicted %v, dry run %s, server %q", p.Name, p.Predicted, p.ServerDryRun, p.APIServer)
		}
		switch p.Name {
		case "widgets.example.com":
			if !slices.Equal(p.StoredVersions, []string{"v1"}) {
				t.Errorf("storedVersions %v, want [v1]: the previous release's storage version", p.StoredVersions)
			}
		case "gadgets.example.com":
			if d := p.Deletion; d == nil || d.Counted || d.CountError != ErrNoCluster.Error() || !strings.Contains(p.Findings[0].Message, "is unknown") {
				t.Errorf("deletion %+v, want an unknown count", d)
			}
		case "things.example.com":
			if im := p.Immutable; im == nil || im.Counted || !strings.Contains(im.Describe(p.Name), "holds every object") {
				t.Errorf("immutable %+v", im)
			}
		}
	}
}

// TestOfflineStoredVersionsFromTheManifest: a previous manifest with a
// status (a CRD dumped from a cluster) keeps its storedVersions, so a
// release that drops a stored version is rejected offline as on the
// cluster (a trial found it accepted).
func TestOfflineStoredVersionsFromTheManifest(t *testing.T) {
	oldW := crdtest.New("widgets.example.com").Kind("Widget").Version("v1alpha1", crdtest.Served).Version("v1", crdtest.Served, crdtest.Storage).Stored("v1alpha1", "v1").CRD()
	newW := crdtest.New("widgets.example.com").Kind("Widget").Version("v1", crdtest.Served, crdtest.Storage).CRD()
	c := &Checker{Cluster: NewOffline([]manifest.CRDDoc{{CRD: oldW, Source: "old.yaml"}}, nil), Offline: true}
	plans, err := c.Check(context.Background(), []manifest.CRDDoc{{CRD: newW, Source: "new.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	if p := plans[0]; p.Apply != Rejected || !slices.Equal(p.StoredVersions, []string{"v1alpha1", "v1"}) {
		t.Errorf("apply %s, storedVersions %v; want Rejected, [v1alpha1 v1]", p.Apply, p.StoredVersions)
	}
}
