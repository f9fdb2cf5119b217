package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	chartcommon "helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// helmClient is Helm's SDK (helm.sh/helm/v4) against the test server in
// namespace, with the Secrets storage driver (Helm's default) and a
// discovery cache of its own, made anew for each action as each helm
// command is: its RESTMapper sees discovery as it is now.
func helmClient(t *testing.T, namespace string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = ptr.To(srv.Kubeconfig)
	flags.Namespace = ptr.To(namespace)
	flags.CacheDir = ptr.To(t.TempDir())
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, namespace, "secret"); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// widgetChart is a chart whose one template is a Widget at apiVersion.
func widgetChart(apiVersion, version, size string) *chartv2.Chart {
	return &chartv2.Chart{
		Metadata: &chartv2.Metadata{APIVersion: chartv2.APIVersionV2, Name: "widgets", Version: version},
		Templates: []*chartcommon.File{{Name: "templates/widget.yaml", Data: []byte("apiVersion: " + apiVersion +
			"\nkind: Widget\nmetadata:\n  name: main\n  namespace: {{ .Release.Namespace }}\nspec:\n  size: " + size + "\n")}},
	}
}

// helmUpgrade runs helm upgrade of release app to chart.
func helmUpgrade(t *testing.T, ns string, chart *chartv2.Chart) error {
	t.Helper()
	up := action.NewUpgrade(helmClient(t, ns))
	up.Namespace = ns
	up.WaitStrategy = kube.HookOnlyStrategy
	_, err := up.RunWithContext(context.Background(), "app", chart, nil)
	return err
}

// helmHistory is release app's records by revision: status and manifest.
func helmHistory(t *testing.T, ns string) []*rspb.Release {
	t.Helper()
	h, err := action.NewHistory(helmClient(t, ns)).Run("app")
	if err != nil {
		t.Fatal(err)
	}
	var out []*rspb.Release
	for _, r := range h {
		out = append(out, r.(*rspb.Release))
	}
	return out
}

// widgetCRD creates widgets.GROUP with v1 and v2 served, v2 the storage
// version.
func widgetCRD(t *testing.T, c clients, group string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}},
	}}}
	return createCRD(t, c, &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Schema: schema},
				{Name: "v2", Served: true, Storage: true, Schema: schema},
			},
		},
	})
}

// helmInstall installs release app of chart in ns.
func helmInstall(t *testing.T, ns string, chart *chartv2.Chart) {
	t.Helper()
	install := action.NewInstall(helmClient(t, ns))
	install.Namespace, install.ReleaseName, install.WaitStrategy = ns, "app", kube.HookOnlyStrategy
	if _, err := install.RunWithContext(context.Background(), chart, nil); err != nil {
		t.Fatalf("helm install: %v", err)
	}
}

// TestHelmReleaseRecordOfARemovedVersion (issue 28): a Helm release whose
// current record's manifest holds a Widget at v1. unserve v1 refuses,
// changing nothing, naming the release and the repair. Unserved anyway
// (--skip-reference-check), the next real helm upgrade fails before it
// changes anything — "unable to build kubernetes objects from current
// release manifest" — and doctor reports the record. repair-references
// (a server-side dry run first, which writes nothing) stores a new
// revision whose manifest names v2 and marks the old one superseded (kept
// as the backup); then the same helm upgrade succeeds and the Widget
// keeps its name and uid.
func TestHelmReleaseRecordOfARemovedVersion(t *testing.T) {
	checkReferences(t)
	c := newClients(t)
	ctx := context.Background()
	const group, ns = "helmrecords.example.com", "team-helm"
	ensureNamespace(t, c, ns)
	crd := widgetCRD(t, c, group)
	helmInstall(t, ns, widgetChart(group+"/v1", "0.1.0", "1"))
	widget, err := resource(c, crd, "v2", ns).Get(ctx, "main", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	refused(t, c, crd.Name, []string{"1 object in Helm release records names " + group + "/v1 Widget",
		"the next helm upgrade or rollback of the release fails before it changes anything",
		"Helm release records in secrets: 1 in " + ns + " (" + ns + "/app revision 1)",
		"kubectl crdversion repair-references " + crd.Name + " v1"},
		"unserve", crd.Name, "v1", "--skip-usage-check")

	// The consequence, with the real Helm SDK: unserved anyway, the next
	// upgrade fails before it changes anything.
	mustRun(t, "unserve", crd.Name, "v1", "--skip-usage-check", "--skip-reference-check")
	waitListFails(t, c, crd, "v1", "the server could not find the requested resource")
	err = helmUpgrade(t, ns, widgetChart(group+"/v2", "0.2.0", "2"))
	if err == nil || !strings.Contains(err.Error(), "unable to build kubernetes objects from current release manifest") ||
		!strings.Contains(err.Error(), "Widget") {
		t.Fatalf("helm upgrade after the unserve: %v, want the failure to build the current release manifest", err)
	}
	// It stored no record: revision 1 is still the release's only one.
	if h := helmHistory(t, ns); len(h) != 1 || h[0].Info.Status != rcommon.StatusDeployed {
		t.Fatalf("history after the failed upgrade: %d records", len(h))
	}

	// doctor reports the record of the unserved version.
	if f := brokenReferences(t, crd.Name); f.Version != "v1" || !strings.Contains(f.Message, "1 object in Helm release records names "+group+"/v1 Widget, which is not served") ||
		!strings.Contains(f.Message, ns+"/app revision 1") || f.Fix != "kubectl crdversion repair-references "+crd.Name+" v1" {
		t.Errorf("doctor's finding: %+v", f)
	}

	r := mustRun(t, "repair-references", crd.Name, "v1", "--dry-run=client")
	if want := "secrets " + ns + "/sh.helm.release.v1.app.v1 manifest of Helm release " + ns + "/app revision 1 (Widget main): would be rewritten to " + group + "/v2 (dry run)"; !strings.Contains(r.stdout, want) {
		t.Errorf("repair-references --dry-run=client:\n%s\nwant a line %q", r.stdout, want)
	}
	// A server-side dry run of the repair writes nothing.
	r = mustRun(t, "repair-references", crd.Name, "v1", "--dry-run=server", "-o", "json")
	var rep report.ReferenceRepair
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(rep.Repairs) != 1 || rep.Repairs[0].Outcome != references.Rewritten || rep.Repairs[0].Release == nil {
		t.Fatalf("dry-run repair report %+v", rep)
	}
	if h := helmHistory(t, ns); len(h) != 1 || h[0].Info.Status != rcommon.StatusDeployed {
		t.Fatalf("the server-side dry run wrote a record: %d records", len(h))
	}

	r = mustRun(t, "repair-references", crd.Name, "v1", "-o", "json")
	rep = report.ReferenceRepair{}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(rep.Repairs) != 1 || rep.Repairs[0].Field != references.HelmManifest || rep.Repairs[0].Outcome != references.Rewritten || rep.Repairs[0].Revision != 2 {
		t.Fatalf("repair report %+v", rep)
	}
	h := helmHistory(t, ns)
	if len(h) != 2 {
		t.Fatalf("%d records after the repair, want 2", len(h))
	}
	old, repaired := h[0], h[1]
	if old.Info.Status != rcommon.StatusSuperseded || !strings.Contains(old.Manifest, "apiVersion: "+group+"/v1\n") {
		t.Errorf("revision 1 %s, want superseded and kept as the backup with v1 in its manifest", old.Info.Status)
	}
	if want := strings.Replace(old.Manifest, "apiVersion: "+group+"/v1\n", "apiVersion: "+group+"/v2\n", 1); repaired.Info.Status != rcommon.StatusDeployed ||
		repaired.Manifest != want || repaired.Chart.Metadata.Version != "0.1.0" || !strings.Contains(repaired.Info.Description, "kubectl crdversion") {
		t.Errorf("revision 2: %s %q, manifest\n%s\nwant\n%s", repaired.Info.Status, repaired.Info.Description, repaired.Manifest, want)
	}

	// The same upgrade now succeeds, on the same object.
	if err := helmUpgrade(t, ns, widgetChart(group+"/v2", "0.2.0", "2")); err != nil {
		t.Fatalf("helm upgrade after the repair: %v", err)
	}
	got, err := resource(c, crd, "v2", ns).Get(ctx, "main", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 2 || got.GetUID() != widget.GetUID() {
		t.Errorf("after the upgrade: size %d uid %s (was %s)", size, got.GetUID(), widget.GetUID())
	}
	r = mustRun(t, "repair-references", crd.Name, "v1")
	if !strings.Contains(r.stdout, "names "+group+"/v1") {
		t.Errorf("a second repair:\n%s", r.stdout)
	}
}

// TestRetireRepairsHelmReleaseRecords (issue 28): retire stops at step 2
// while a Helm release's current record names OLD, and its run: line
// (with --repair-references) stores the rewritten revision, unserves and
// removes OLD; the next real helm upgrade succeeds.
func TestRetireRepairsHelmReleaseRecords(t *testing.T) {
	checkReferences(t)
	c := newClients(t)
	const group, ns = "helmretire.example.com", "team-helm-retire"
	ensureNamespace(t, c, ns)
	crd := widgetCRD(t, c, group)
	helmInstall(t, ns, widgetChart(group+"/v1", "0.1.0", "1"))

	r := refused(t, c, crd.Name, []string{"stopped at step 2", "1 object in Helm release records names " + group + "/v1 Widget",
		"Helm release records in secrets: 1 in " + ns + " (" + ns + "/app revision 1)"},
		"retire", crd.Name, "v1", "--skip-usage-check", "--migrate", "--clean-managed-fields")
	args := runLine(t, r.stdout+r.stderr)
	if !strings.Contains(strings.Join(args, " "), "--repair-references") {
		t.Fatalf("the run: line does not repair: %v", args)
	}
	r = mustRun(t, args...)
	if !strings.Contains(r.stdout, "rewrote 1 reference(s) to "+group+"/v2") {
		t.Errorf("retire --repair-references:\n%s", r.stdout)
	}
	if got := getCRD(t, c, crd.Name); lifecycle.FindVersion(got, "v1") != nil {
		t.Fatalf("v1 is still in spec.versions after retire:\n%s", r.stdout)
	}
	h := helmHistory(t, ns)
	if len(h) != 2 || h[0].Info.Status != rcommon.StatusSuperseded || h[1].Info.Status != rcommon.StatusDeployed ||
		!strings.Contains(h[1].Manifest, "apiVersion: "+group+"/v2\n") {
		t.Fatalf("history after retire: %d records", len(h))
	}
	if err := helmUpgrade(t, ns, widgetChart(group+"/v2", "0.2.0", "3")); err != nil {
		t.Fatalf("helm upgrade after retire: %v", err)
	}
}

// brokenReferences runs doctor on the CRD name (the binary, JSON) and
// returns its ReferencesBroken finding, failing the test when there is
// none.
func brokenReferences(t *testing.T, name string) lifecycle.Finding {
	t.Helper()
	var doc report.Doctor
	dr := crdversion(t, "doctor", name, "--skip-usage-check", "-o", "json")
	if err := json.Unmarshal([]byte(dr.stdout), &doc); err != nil || len(doc.CRDs) != 1 {
		t.Fatalf("doctor: %v\n%s%s", err, dr.stdout, dr.stderr)
	}
	for _, f := range doc.CRDs[0].Findings {
		if f.Code == lifecycle.CodeReferencesBroken {
			return f
		}
	}
	t.Fatalf("doctor reports no %s: %+v", lifecycle.CodeReferencesBroken, doc.CRDs[0].Findings)
	return lifecycle.Finding{}
}
