package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/cli"
	"github.com/crdversion/kubectl-crdversion/internal/e2e/fixture"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// caseFixture is one failure report of ../shared/cases, reduced to a
// before-state under testdata/cases/<dir>: crd.yaml (the CRDs as the case
// shows them, status.storedVersions included), objects.yaml, before.yaml
// (the source and how the state was reached) and the manifests the case's
// operation applies.
type caseFixture struct {
	dir     string
	crds    []*apiextensionsv1.CustomResourceDefinition
	objects []*unstructured.Unstructured
	note    caseNote
}

// caseNote is before.yaml.
type caseNote struct {
	// Source is the primary public report.
	Source string `json:"source"`
	// ObjectsWrittenAt is the storage version while objects.yaml is
	// written; by default status.storedVersions[0], the version the CRD
	// was born with.
	ObjectsWrittenAt string `json:"objectsWrittenAt"`
}

func loadCase(t *testing.T, dir string) *caseFixture {
	t.Helper()
	fx := &caseFixture{dir: filepath.Join(repoRoot, "testdata", "cases", dir)}
	data, err := os.ReadFile(fx.path("before.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &fx.note); err != nil {
		t.Fatalf("%s: %v", fx.path("before.yaml"), err)
	}
	if fx.note.Source == "" {
		t.Fatalf("%s names no source", fx.path("before.yaml"))
	}
	for _, u := range fx.read(t, "crd.yaml") {
		crd, err := fixture.CRD(u)
		if err != nil {
			t.Fatal(err)
		}
		fx.crds = append(fx.crds, crd)
	}
	if _, err := os.Stat(fx.path("objects.yaml")); err == nil {
		fx.objects = fx.read(t, "objects.yaml")
	}
	return fx
}

func (fx *caseFixture) path(name string) string { return filepath.Join(fx.dir, name) }

func (fx *caseFixture) read(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := fixture.Read(fx.path(name))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// build reaches the before-state on the API server the way clusters got
// there: each CRD is created with its first stored version as the storage
// version (served, conversion None, preserveUnknownFields false), its
// objects are written, then its spec becomes the case's (the API server
// adds the new storage version to storedVersions itself). storedVersions
// that differ from what the server then has are written through /status;
// preserveUnknownFields: true, which the v1 API refuses, is written in
// etcd. It returns the CRDs as the API server has them, by name.
func (fx *caseFixture) build(t *testing.T, c clients) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, want := range fx.crds {
		born := lifecycle.StorageVersion(want)
		if len(want.Status.StoredVersions) > 0 {
			born = want.Status.StoredVersions[0]
		}
		writtenAt := born
		if v := fx.note.ObjectsWrittenAt; v != "" && lifecycle.FindVersion(want, v) != nil {
			writtenAt = v
		}
		create := want.DeepCopy()
		create.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
		create.Spec.PreserveUnknownFields = false
		create.Spec.Conversion = nil
		for i := range create.Spec.Versions {
			v := &create.Spec.Versions[i]
			v.Storage = v.Name == born
			v.Served = v.Served || v.Name == born || v.Name == writtenAt
		}
		createCRD(t, c, create)
		if writtenAt != born {
			setStorage(t, c, want.Name, writtenAt)
		}
		if objs := fx.objectsOf(want); len(objs) > 0 {
			if _, err := fixture.Apply(context.Background(), srv.Config, objs); err != nil {
				t.Fatalf("writing the objects of %s: %v", want.Name, err)
			}
		}
		updateCRD(t, c, want.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec = *want.Spec.DeepCopy()
			crd.Spec.PreserveUnknownFields = false
		})
		got := getCRD(t, c, want.Name)
		if len(want.Status.StoredVersions) > 0 && !slices.Equal(got.Status.StoredVersions, want.Status.StoredVersions) {
			setStoredVersions(t, c, want.Name, want.Status.StoredVersions...)
		}
		if want.Spec.PreserveUnknownFields {
			editStoredCRD(t, want.Name, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.PreserveUnknownFields = true })
			waitFor(t, "the API server to see preserveUnknownFields: true", func() (bool, error) {
				return getCRD(t, c, want.Name).Spec.PreserveUnknownFields, nil
			})
		}
		got = getCRD(t, c, want.Name)
		if len(want.Status.StoredVersions) > 0 && !slices.Equal(got.Status.StoredVersions, want.Status.StoredVersions) {
			t.Fatalf("%s: storedVersions %v, the case has %v", want.Name, got.Status.StoredVersions, want.Status.StoredVersions)
		}
		out[want.Name] = got
	}
	return out
}

// buildCase builds the case in testdata/cases/dir and returns it, the CRD
// name as built, and the contents its objects must keep (those of
// objects.yaml).
func buildCase(t *testing.T, c clients, dir, name string) (*caseFixture, *apiextensionsv1.CustomResourceDefinition, map[string]map[string]any) {
	t.Helper()
	fx := loadCase(t, dir)
	crd, found := fx.build(t, c)[name]
	if !found {
		t.Fatalf("%s has no CRD %s", dir, name)
	}
	return fx, crd, fx.contentsOf(crd)
}

// contentsOf is what contents must read back for crd's objects: those of
// objects.yaml, keyed and stripped the same way.
func (fx *caseFixture) contentsOf(crd *apiextensionsv1.CustomResourceDefinition) map[string]map[string]any {
	out := map[string]map[string]any{}
	addContents(out, crd, fx.objectsOf(crd))
	return out
}

// addContents adds objs, objects of crd, to a contents map.
func addContents(to map[string]map[string]any, crd *apiextensionsv1.CustomResourceDefinition, objs []*unstructured.Unstructured) {
	for _, u := range objs {
		ns := u.GetNamespace()
		if ns == "" && crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
			ns = "default"
		}
		obj := u.DeepCopy().Object
		delete(obj, "apiVersion")
		delete(obj, "metadata")
		to[ns+"/"+u.GetName()] = obj
	}
}

// wantStoredAt fails the test unless n objects of crd are encoded at
// groupVersion in etcd.
func wantStoredAt(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, groupVersion string, n int) {
	t.Helper()
	if got := storedAt(t, crd); got[groupVersion] != n {
		t.Fatalf("%s: objects by encoding in etcd %v, want %d at %s", crd.Name, got, n, groupVersion)
	}
}

// objectsOf are the fixture's objects of crd's group and kind.
func (fx *caseFixture) objectsOf(crd *apiextensionsv1.CustomResourceDefinition) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range fx.objects {
		if gvk := u.GroupVersionKind(); gvk.Group == crd.Spec.Group && gvk.Kind == crd.Spec.Names.Kind {
			out = append(out, u.DeepCopy())
		}
	}
	return out
}

// applyRelease applies the CRDs of the manifest file the way
// kubectl apply and Helm do for fields they set: a merge patch of each
// CRD's spec (lists replaced, fields the manifest omits left as they are).
// It returns the API server's error per CRD name (nil when accepted).
func applyReleaseFile(t *testing.T, c clients, file string) map[string]error {
	t.Helper()
	objs, err := fixture.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]error{}
	for _, u := range objs {
		if !fixture.IsCRD(u) {
			continue
		}
		patch, err := json.Marshal(map[string]any{"spec": u.Object["spec"]})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ext.ApiextensionsV1().CustomResourceDefinitions().Patch(context.Background(), u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
		out[u.GetName()] = err
		if err == nil {
			if err := fixture.WaitEstablished(context.Background(), c.ext, u.GetName()); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// releaseApplies applies the CRD name of the manifest file and fails the
// test unless the API server accepts it.
func releaseApplies(t *testing.T, c clients, file, name string) {
	t.Helper()
	if err, found := applyReleaseFile(t, c, file)[name]; !found || err != nil {
		t.Fatalf("applying %s (%s): %v", filepath.Base(file), name, err)
	}
}

// wantAPIError checks that the API server refused with a message holding
// every want.
func wantAPIError(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: accepted, want the API server to refuse it", what)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: the API server said %q, want it to contain %q", what, err, w)
		}
	}
	t.Logf("%s: the API server said: %v", what, err)
}

// crdversion runs the plugin binary against the test server.
func crdversion(t *testing.T, args ...string) result {
	t.Helper()
	return crdversionAt(t, srv.Kubeconfig, args...)
}

// crdversionAt runs the plugin binary against the API server of kubeconfig
// (given as $KUBECONFIG, so that the commands it prints carry no
// --kubeconfig), outside GitHub Actions even when the tests run there
// (no annotations on stderr).
func crdversionAt(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	return binary(t, []string{"KUBECONFIG=" + kubeconfig, "GITHUB_ACTIONS="}, append(args, "--cache-dir", t.TempDir())...)
}

// succeeds runs the plugin binary and fails the test unless it exits 0.
func succeeds(t *testing.T, args ...string) result {
	t.Helper()
	return succeedsAt(t, srv.Kubeconfig, args...)
}

// succeedsAt is succeeds against the API server of kubeconfig.
func succeedsAt(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	r := crdversionAt(t, kubeconfig, args...)
	if r.code != 0 {
		t.Fatalf("kubectl crdversion %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// refuses runs the plugin binary, expects exit code 1 with every want in
// its output, and checks that none of the named CRDs was written.
func refuses(t *testing.T, c clients, names []string, want []string, args ...string) result {
	t.Helper()
	return refusesAt(t, c, srv.Kubeconfig, names, want, args...)
}

// refusesInEveryDryRun is refuses for args run as they are, as a server dry
// run and as a client dry run: a dry run must refuse what the run refuses,
// or it certifies a step that will not go through.
func refusesInEveryDryRun(t *testing.T, c clients, names []string, want []string, args ...string) {
	t.Helper()
	for _, dry := range []string{"", "--dry-run=server", "--dry-run=client"} {
		a := slices.Clone(args)
		if dry != "" {
			a = append(a, dry)
		}
		refuses(t, c, names, want, a...)
	}
}

// refusesAt is refuses against the API server of kubeconfig (c's).
func refusesAt(t *testing.T, c clients, kubeconfig string, names []string, want []string, args ...string) result {
	t.Helper()
	before := resourceVersions(t, c, names)
	r := crdversionAt(t, kubeconfig, args...)
	out := r.stdout + r.stderr
	if r.code != 1 {
		t.Errorf("kubectl crdversion %s: exit %d, want 1 (a refusal)\n%s", strings.Join(args, " "), r.code, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("kubectl crdversion %s: output does not contain %q:\n%s", strings.Join(args, " "), w, out)
		}
	}
	if after := resourceVersions(t, c, names); !reflect.DeepEqual(before, after) {
		t.Errorf("kubectl crdversion %s refused but wrote a CRD: %v -> %v", strings.Join(args, " "), before, after)
	}
	return r
}

// resourceVersions fingerprints what a command could write on each CRD:
// its generation (spec), annotations, status.storedVersions and the
// managedFields entries of this plugin's field manager. The API server's
// own controllers also update the CRD's status conditions shortly after it
// is created, which changes its resourceVersion but none of these.
func resourceVersions(t *testing.T, c clients, names []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		crd := getCRD(t, c, n)
		var ours []string
		for _, m := range crd.ManagedFields {
			if m.Manager == cli.FieldManager {
				ours = append(ours, fmt.Sprintf("%s/%s@%v", m.Operation, m.Subresource, m.Time))
			}
		}
		out[n] = fmt.Sprintf("generation %d, annotations %v, storedVersions %v, %s entries %v", crd.Generation, crd.Annotations, crd.Status.StoredVersions, cli.FieldManager, ours)
	}
	return out
}

// fingerprint is resourceVersions of one CRD: equal before and after a
// command that wrote nothing, whatever the API server's controllers did to
// the CRD's status conditions in between.
func fingerprint(t *testing.T, c clients, name string) string {
	t.Helper()
	return resourceVersions(t, c, []string{name})[name]
}

// contents are the objects of crd read at version: "namespace/name" to the
// object without apiVersion and metadata, but with its labels and
// annotations when it has any. Right after a change of the CRD, the list is retried while
// the API server swaps the resource's storage.
func contents(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, version string) map[string]map[string]any {
	t.Helper()
	var list *unstructured.UnstructuredList
	waitFor(t, "a list of "+crd.Name+" at "+version, func() (bool, error) {
		var err error
		list, err = c.dyn.Resource(gvr(crd, version)).List(context.Background(), metav1.ListOptions{})
		return err == nil, nil
	})
	out := map[string]map[string]any{}
	for _, u := range list.Items {
		obj := u.DeepCopy().Object
		delete(obj, "apiVersion")
		delete(obj, "metadata")
		if l := u.GetLabels(); l != nil {
			obj["labels"] = l
		}
		if a := u.GetAnnotations(); a != nil {
			obj["annotations"] = a
		}
		out[u.GetNamespace()+"/"+u.GetName()] = obj
	}
	return out
}

// assertHealthy checks the end of a repair: status reports no error or
// warning, storedVersions is the storage version alone, and at every served
// version the objects read back with the contents they had before.
func assertHealthy(t *testing.T, c clients, name string, before map[string]map[string]any) {
	t.Helper()
	s := statusJSON(t, name)
	for _, f := range s.Findings {
		if f.Severity == lifecycle.SeverityError || f.Severity == lifecycle.SeverityWarning {
			t.Errorf("%s: status still reports %s %s: %s", name, f.Severity, f.Code, f.Message)
		}
	}
	crd := getCRD(t, c, name)
	if storage := lifecycle.StorageVersion(crd); !slices.Equal(crd.Status.StoredVersions, []string{storage}) {
		t.Errorf("%s: storedVersions %v, want [%s]", name, crd.Status.StoredVersions, storage)
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		// Compared as JSON: YAML and the API server type numbers differently.
		got, _ := json.Marshal(contents(t, c, crd, v.Name))
		want, _ := json.Marshal(before)
		if string(got) != string(want) {
			t.Errorf("%s at %s: objects differ from before the repair\n got %s\nwant %s", name, v.Name, got, want)
		}
	}
}

// storedVersionsOf reads status.storedVersions.
func storedVersionsOf(t *testing.T, c clients, name string) []string {
	t.Helper()
	return getCRD(t, c, name).Status.StoredVersions
}
