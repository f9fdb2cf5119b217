package upgrade

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
)

// fakeCluster holds installed CRDs by name and answers every dry run with
// dryRunErr; it records the dry runs.
type fakeCluster struct {
	installed map[string]*apiextensionsv1.CustomResourceDefinition
	getErr    error
	dryRunErr error
	updates   []*apiextensionsv1.CustomResourceDefinition // what each dry-run update sent
	creates   []string
	objects   []string
	listErr   error
}

func (f *fakeCluster) GetCRD(_ context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	if f.getErr != nil {
		return nil, f.getErr
	}
	if c, ok := f.installed[name]; ok {
		return c.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, name)
}

func (f *fakeCluster) DryRunUpdateCRD(_ context.Context, live *apiextensionsv1.CustomResourceDefinition, edit func(*apiextensionsv1.CustomResourceDefinition), _ string) error {
	obj := live.DeepCopy()
	edit(obj)
	f.updates = append(f.updates, obj)
	return f.dryRunErr
}

func (f *fakeCluster) ServerVersion(context.Context) (string, error) { return "v1.37.2", nil }

// EachObjectMeta lists objects ("namespace/name", "name" when
// cluster-scoped; a trailing "+" gives the object a finalizer), or fails
// with listErr.
func (f *fakeCluster) EachObjectMeta(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, _ string, _ int64, each func(metav1.Object) error) error {
	if f.listErr != nil {
		return f.listErr
	}
	for _, o := range f.objects {
		m := &metav1.ObjectMeta{}
		if s, finalized := strings.CutSuffix(o, "+"); finalized {
			o, m.Finalizers = s, []string{"example.com/cleanup"}
		}
		ns, name, found := strings.Cut(o, "/")
		if !found {
			ns, name = "", o
		}
		m.Namespace, m.Name = ns, name
		if err := each(m); err != nil {
			return err
		}
	}
	return nil
}

// ListCRDs lists the installed CRDs in name order.
func (f *fakeCluster) ListCRDs(context.Context) ([]apiextensionsv1.CustomResourceDefinition, error) {
	var out []apiextensionsv1.CustomResourceDefinition
	for _, name := range slices.Sorted(maps.Keys(f.installed)) {
		out = append(out, *f.installed[name].DeepCopy())
	}
	return out, nil
}

func (f *fakeCluster) DryRunCreateCRD(_ context.Context, crd *apiextensionsv1.CustomResourceDefinition, _ string) error {
	f.creates = append(f.creates, crd.Name)
	return f.dryRunErr
}

// TestChecker: an installed CRD is dry-run as an update (the release's
// spec, labels merged), a new one as a create; the API server's answer
// decides the verdict, a refused request skips the dry run, other errors
// stop the check; fix steps carry the connection flags.
func TestChecker(t *testing.T) {
	live := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v1", "v2").CRD()
	live.Labels = map[string]string{"team": "a", "release": "1"}
	next := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD()
	next.Labels = map[string]string{"release": "2"}
	other := crdtest.New("gadgets.example.com").Kind("Gadget").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD()
	docs := []manifest.CRDDoc{{CRD: next, Source: "r.yaml#1"}, {CRD: other, Source: "r.yaml#2"}}
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, live.Name, field.ErrorList{field.Invalid(field.NewPath("status", "storedVersions"), "v1", "missing from spec.versions")})
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, live.Name, errors.New("no"))
	down := errors.New("connection refused")
	for _, tc := range []struct {
		name      string
		dryRun    bool
		dryRunErr error
		want      []string // Apply/ServerDryRun of each plan
		err       error
	}{
		{"no dry run", false, nil, []string{Rejected + "/" + DryRunSkipped, Accepted + "/" + DryRunSkipped}, nil},
		{"accepted", true, nil, []string{Accepted + "/" + DryRunAccepted, Accepted + "/" + DryRunAccepted}, nil},
		{"rejected", true, invalid, []string{Rejected + "/" + DryRunRejected, Rejected + "/" + DryRunRejected}, nil},
		{"forbidden", true, forbidden, []string{Rejected + "/" + DryRunSkipped, Accepted + "/" + DryRunSkipped}, nil},
		{"down", true, down, nil, down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeCluster{installed: map[string]*apiextensionsv1.CustomResourceDefinition{live.Name: live}, dryRunErr: tc.dryRunErr}
			c := &Checker{Cluster: f, ServerDryRun: tc.dryRun, Apply: ApplyCommand([]string{"r.yaml"}, false), Conn: []lifecycle.Flag{{Name: "context", Value: "east"}}}
			plans, err := c.Check(context.Background(), docs)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			var got []string
			for _, p := range plans {
				got = append(got, p.Apply+"/"+p.ServerDryRun)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("verdicts %v, want %v", got, tc.want)
			}
			if !tc.dryRun {
				if len(f.updates)+len(f.creates) != 0 {
					t.Errorf("dry runs sent: %d updates, creates %v", len(f.updates), f.creates)
				}
				return
			}
			if len(f.updates) != 1 || !reflect.DeepEqual(f.updates[0].Spec, next.Spec) || !reflect.DeepEqual(f.updates[0].Labels, map[string]string{"team": "a", "release": "2"}) {
				t.Errorf("dry-run updates %+v", f.updates)
			}
			if tc.err == nil && !reflect.DeepEqual(f.creates, []string{other.Name}) {
				t.Errorf("dry-run creates %v", f.creates)
			}
			if tc.err == nil && (len(plans[0].Fix) == 0 || !strings.HasPrefix(plans[0].Fix[0], "kubectl crdversion --context east migrate ")) {
				t.Errorf("fix %q", plans[0].Fix)
			}
		})
	}
	f := &fakeCluster{getErr: forbidden}
	if _, err := (&Checker{Cluster: f}).Check(context.Background(), docs); !apierrors.IsForbidden(err) {
		t.Errorf("reading the installed CRD forbidden: err %v", err)
	}
}

// TestReadRelease: every file and directory given is read, in order; a CRD
// in two documents and a release without a CRD are refused.
func TestReadRelease(t *testing.T) {
	dir := t.TempDir()
	write := func(name, crdName string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		doc := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: " + crdName + "}\nspec: {group: example.com, scope: Namespaced, names: {plural: x, kind: X}}\n"
		if crdName == "" {
			doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
		}
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, cm := write("a.yaml", "as.example.com"), write("more/b.yaml", "bs.example.com"), write("cm.yaml", "")
	names := func(docs []manifest.CRDDoc) []string {
		var out []string
		for _, d := range docs {
			out = append(out, d.CRD.Name)
		}
		return out
	}
	for _, tc := range []struct {
		files []string
		want  []string
		err   string
	}{
		{files: []string{a, b}, want: []string{"as.example.com", "bs.example.com"}},
		{files: []string{filepath.Join(dir, "more"), a, cm}, want: []string{"bs.example.com", "as.example.com"}},
		{files: []string{a, filepath.Join(dir, "more"), a}, err: a + " is given twice"},
		{files: []string{cm}, err: "no CustomResourceDefinition in " + cm},
		{files: []string{a, filepath.Join(dir, "absent.yaml")}, err: "no such file or directory"},
	} {
		docs, err := ReadRelease(tc.files, false)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: err %v, want %q", tc.files, err, tc.err)
		case tc.err == "" && (err != nil || !reflect.DeepEqual(names(docs), tc.want)):
			t.Errorf("%v: %v %v, want %v", tc.files, names(docs), err, tc.want)
		}
	}
}

// TestCheckerImmutableChange: a release that changes an installed CRD's
// scope counts the objects that deleting the CRD would delete, finds the
// names a Namespaced to Cluster change makes collide, prints the export
// first and never a delete as a command; a refused list leaves the count
// unknown, not zero.
func TestCheckerImmutableChange(t *testing.T) {
	crd := func(scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
		c := crdtest.New("apptemplates.spark.example.com").Kind("AppTemplate").Version("v1alpha1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v1alpha1").CRD()
		c.Spec.Scope = scope
		return c
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "spark.example.com", Resource: "apptemplates"}, "", errors.New("RBAC: list denied"))
	for _, tc := range []struct {
		name       string
		from, to   apiextensionsv1.ResourceScope
		objects    []string
		listErr    error
		says       []string
		collisions []string
	}{
		{"Namespaced to Cluster", apiextensionsv1.NamespaceScoped, apiextensionsv1.ClusterScoped, []string{"a/x", "b/x", "a/y"},
			nil, []string{"3 AppTemplate object(s) exist", "kubectl get apptemplates.spark.example.com -o yaml --all-namespaces > apptemplates.spark.example.com.yaml", "DELETES EVERY OBJECT OF IT (3)", "1 name(s) are used in more than one namespace (x)"}, []string{"x"}},
		{"Cluster to Namespaced", apiextensionsv1.ClusterScoped, apiextensionsv1.NamespaceScoped, []string{"default-template"},
			nil, []string{"1 AppTemplate object(s) exist", "kubectl get apptemplates.spark.example.com -o yaml > apptemplates.spark.example.com.yaml", "each object needs the namespace it goes to"}, nil},
		{"list refused", apiextensionsv1.ClusterScoped, apiextensionsv1.NamespaceScoped, nil,
			forbidden, []string{"how many AppTemplate objects exist is unknown", "list denied", "DELETES EVERY OBJECT OF IT,"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live, next := crd(tc.from), crd(tc.to)
			f := &fakeCluster{installed: map[string]*apiextensionsv1.CustomResourceDefinition{live.Name: live}, objects: tc.objects, listErr: tc.listErr}
			c := &Checker{Cluster: f, Apply: ApplyCommand([]string{"release.yaml"}, false)}
			plans, err := c.Check(context.Background(), []manifest.CRDDoc{{CRD: next, Source: "release.yaml"}})
			if err != nil {
				t.Fatal(err)
			}
			p := plans[0]
			if p.Apply != Rejected || p.Immutable == nil || len(p.Fix) != 0 {
				t.Fatalf("apply %s, immutable %+v, fix %q", p.Apply, p.Immutable, p.Fix)
			}
			if !reflect.DeepEqual(p.Immutable.Collisions, tc.collisions) || p.Immutable.Counted != (tc.listErr == nil) {
				t.Errorf("immutable %+v", p.Immutable)
			}
			said := p.Immutable.Describe(p.Name)
			for _, w := range tc.says {
				if !strings.Contains(said, w) {
					t.Errorf("lacks %q: %s", w, said)
				}
			}
			if strings.Contains(said, "kubectl delete") {
				t.Errorf("a delete printed as a command: %s", said)
			}
		})
	}
	// The same release without a change of scope has no Immutable.
	live := crd(apiextensionsv1.NamespaceScoped)
	plans, err := (&Checker{Cluster: &fakeCluster{installed: map[string]*apiextensionsv1.CustomResourceDefinition{live.Name: live}}}).Check(context.Background(), []manifest.CRDDoc{{CRD: live.DeepCopy()}})
	if err != nil || plans[0].Immutable != nil {
		t.Errorf("unchanged scope: %v, %+v", err, plans[0].Immutable)
	}
}

// TestRejectionReasonsAllCounted: a server refusal at a field that no
// predicted finding is about is an ApplyRejected finding even when the
// rules predicted a rejection for another reason (a scope change and an
// invalid schema in one release); a refusal the findings explain is not
// counted twice.
func TestRejectionReasonsAllCounted(t *testing.T) {
	live := crdtest.New("widgets.ns.example.com").Kind("Widget").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("a")).Stored("v1").CRD()
	next := live.DeepCopy()
	next.Spec.Scope = apiextensionsv1.ClusterScoped
	release := ApplyCommand([]string{"release.yaml"}, false)
	both := Check(live, next, "release.yaml", release)
	both.SetServerDryRun(DryRunRejected, "invalid", "spec.validation.openAPIV3Schema.type", "spec.scope")
	explained := Check(live, next, "release.yaml", release)
	explained.SetServerDryRun(DryRunRejected, "invalid", "spec.scope")
	var atBoth, atExplained []string
	for _, f := range both.Findings {
		if f.Code == CodeApplyRejected {
			atBoth = append(atBoth, f.Path)
		}
	}
	for _, f := range explained.Findings {
		if f.Code == CodeApplyRejected {
			atExplained = append(atExplained, f.Path)
		}
	}
	if !reflect.DeepEqual(atBoth, []string{"spec.validation.openAPIV3Schema.type"}) || atExplained != nil {
		t.Errorf("ApplyRejected at %v (scope and schema refused), %v (scope only); want [spec.validation.openAPIV3Schema.type], none", atBoth, atExplained)
	}
}

// TestGroupChangeAndNames: a release CRD whose name is not plural.group
// is rejected without a server (NameMismatch); a group change is never
// advised as a delete and re-create of the same CRD; in a fleet run each
// context's export has its own file.
func TestGroupChangeAndNames(t *testing.T) {
	live := crdtest.New("widgets.ns.example.com").Kind("Widget").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("a")).Stored("v1").CRD()
	next := live.DeepCopy()
	next.Spec.Group = "other.example.com"
	release := ApplyCommand([]string{"release.yaml"}, false)
	p := Check(live, next, "release.yaml", release)
	var codes []string
	for _, f := range p.Findings {
		if f.Severity == lifecycle.SeverityError {
			codes = append(codes, f.Code)
		}
	}
	if p.Static != Rejected || !slices.Contains(codes, CodeNameMismatch) {
		t.Errorf("group change with the old name: %s, errors %v; want Rejected with %s", p.Static, codes, CodeNameMismatch)
	}
	if created := Check(nil, next, "release.yaml", release); created.Static != Rejected {
		t.Errorf("a new CRD named other than plural.group: %s, want Rejected", created.Static)
	}
	im := immutableOf(p, live, next, []lifecycle.Flag{{Name: "context", Value: "prod east"}})
	im.Counted, im.Objects = true, 2
	said := im.Describe(live.Name)
	for _, w := range []string{"a new CRD beside widgets.ns.example.com, never widgets.ns.example.com re-created", "widgets.ns.example.com.prod_east.yaml", "holds all 2"} {
		if !strings.Contains(said, w) {
			t.Errorf("lacks %q: %s", w, said)
		}
	}
	if strings.Contains(said, "delete and re-create") {
		t.Errorf("a group change advised as a re-create: %s", said)
	}
}

// TestDryRunAdmissionDenied: an admission plugin's denial (403 from a
// ValidatingAdmissionPolicy or a webhook) rejects the apply — the apply
// would meet it too; RBAC's 403 only skips the dry run.
func TestDryRunAdmissionDenied(t *testing.T) {
	live := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD()
	gr := schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"policy", apierrors.NewForbidden(gr, live.Name, errors.New("ValidatingAdmissionPolicy 'guard' with binding 'guard' denied request: no")), DryRunRejected},
		{"webhook", apierrors.NewForbidden(gr, live.Name, errors.New(`admission webhook "v.example.com" denied the request: no`)), DryRunRejected},
		{"rbac", apierrors.NewForbidden(gr, live.Name, errors.New(`User "ci" cannot update resource "customresourcedefinitions"`)), DryRunSkipped},
	} {
		c := &Checker{Cluster: &fakeCluster{dryRunErr: tc.err}}
		if got, _, _, err := c.DryRun(context.Background(), live, live); err != nil || got != tc.want {
			t.Errorf("%s: %s %v, want %s", tc.name, got, err, tc.want)
		}
	}
}
