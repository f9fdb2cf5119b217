package references

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// fakeSource serves objects by resource; a resource in errs fails its list.
type fakeSource struct {
	objects map[schema.GroupVersionResource][]metav1.PartialObjectMetadata
	errs    map[schema.GroupVersionResource]error
	failed  map[schema.GroupVersion]error
	// targets are the scale targets of objects, by name.
	targets map[string]metav1.OwnerReference
	// wholeReads are the resources read with EachScaler.
	wholeReads []schema.GroupVersionResource
	// releases are the current Helm release records by store; a store in
	// releaseErrs fails.
	releases    map[Resource][]Release
	releaseErrs map[Resource]error
	// crds are the versions the CRDs serve, by resource (a resource
	// absent has no CRD); crdErr fails every CRD read.
	crds   map[schema.GroupResource]string
	crdErr error
	// serves are the answers of the group version's own discovery.
	serves []bool
}

func (f *fakeSource) CustomResourceVersion(_ context.Context, r schema.GroupResource) (string, bool, error) {
	v, ok := f.crds[r]
	return v, ok, f.crdErr
}

// ServesResource answers from serves, one answer a call (the last one
// from then on); true when serves is empty.
func (f *fakeSource) ServesResource(context.Context, schema.GroupVersionResource) (bool, error) {
	if len(f.serves) == 0 {
		return true, nil
	}
	answer := f.serves[0]
	if len(f.serves) > 1 {
		f.serves = f.serves[1:]
	}
	return answer, nil
}

func (f *fakeSource) CurrentReleases(_ context.Context, r Resource) ([]Release, error) {
	return f.releases[r], f.releaseErrs[r]
}

func (f *fakeSource) EachScaler(ctx context.Context, r schema.GroupVersionResource, fn func(*metav1.PartialObjectMetadata, metav1.OwnerReference) error) error {
	f.wholeReads = append(f.wholeReads, r)
	return f.EachObject(ctx, r, func(m *metav1.PartialObjectMetadata) error { return fn(m, f.targets[m.Name]) })
}

func (f *fakeSource) ListableResources(context.Context) ([]schema.GroupVersionResource, map[schema.GroupVersion]error, error) {
	var out []schema.GroupVersionResource
	for r := range f.objects {
		out = append(out, r)
	}
	for r := range f.errs {
		out = append(out, r)
	}
	return out, f.failed, nil
}

func (f *fakeSource) EachObject(_ context.Context, r schema.GroupVersionResource, fn func(*metav1.PartialObjectMetadata) error) error {
	if err := f.errs[r]; err != nil {
		return err
	}
	for i := range f.objects[r] {
		if err := fn(&f.objects[r][i]); err != nil {
			return err
		}
	}
	return nil
}

var errForbidden = errors.New("forbidden")

func obj(ns, name string, refs ...metav1.OwnerReference) metav1.PartialObjectMetadata {
	return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name), OwnerReferences: refs}}
}

func ref(apiVersion, kind, name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("owner-" + name)}
}

// TestFind: every owner reference to the target's apiVersion and kind is
// found, on any resource and at any index, and nothing else (another
// version, another kind of the same group); a list that fails and a group
// whose discovery failed are Unseen, so the inventory is not Complete.
func TestFind(t *testing.T) {
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	jobs := schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	target := Target{APIVersion: "stable.example.com/v1", Kind: "CronTab"}
	src := &fakeSource{
		objects: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{
			cms: {obj("b", "two", ref("stable.example.com/v1", "CronTab", "x")), obj("a", "one", ref("apps/v1", "Deployment", "d"), ref("stable.example.com/v1", "CronTab", "y")),
				obj("a", "other-version", ref("stable.example.com/v2", "CronTab", "y")), obj("a", "other-kind", ref("stable.example.com/v1", "Widget", "y"))},
			jobs: {obj("a", "job", ref("stable.example.com/v1", "CronTab", "y"))},
		},
	}
	inv, err := Find(context.Background(), src, target, Options{Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, d := range inv.Dependents {
		got += fmt.Sprintf("%s %s/%s[%d]→%s; ", d.Resource.Resource, d.Namespace, d.Name, d.Index, d.Owner.Name)
	}
	if want := "configmaps a/one[1]→y; configmaps b/two[0]→x; jobs a/job[0]→y; "; got != want {
		t.Errorf("dependents %q, want %q", got, want)
	}
	if !inv.Complete() || inv.Resources != 2 || inv.Objects != 5 {
		t.Errorf("complete %v, resources %d, objects %d; want complete, 2, 5", inv.Complete(), inv.Resources, inv.Objects)
	}

	src.errs = map[schema.GroupVersionResource]error{secrets: errForbidden}
	src.failed = map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("the server is currently unable to handle the request")}
	inv, err = Find(context.Background(), src, target, Options{Forbidden: func(err error) bool { return errors.Is(err, errForbidden) }})
	if err != nil {
		t.Fatal(err)
	}
	if inv.Complete() || len(inv.Unseen) != 2 || len(inv.Dependents) != 3 {
		t.Fatalf("with secrets forbidden and a group not discovered: %+v", inv)
	}
	if u := inv.Unseen[0]; u.Resource.Group != "metrics.k8s.io" || u.Forbidden {
		t.Errorf("the failed group %+v", u)
	}
	if u := inv.Unseen[1]; u.Resource.GVR() != secrets || !u.Forbidden || u.Reason != "forbidden" {
		t.Errorf("the forbidden list %+v", u)
	}
}

// TestFindInterrupted: the end of the context is an error, not an
// inventory that read less than it says.
func TestFindInterrupted(t *testing.T) {
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src := &fakeSource{objects: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{cms: {obj("a", "one")}}}
	if inv, err := Find(ctx, src, Target{APIVersion: "stable.example.com/v1", Kind: "CronTab"}, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %+v, %v; want context.Canceled", inv, err)
	}
}

var errNotFound = errors.New("the server could not find the requested resource")

// movingSource answers 404 for the resources in moved; the first
// discovery lists the fakeSource's resources, the Nth after it later[N-1]
// (the last one from then on).
type movingSource struct {
	*fakeSource
	moved       map[schema.GroupVersionResource]bool
	later       [][]schema.GroupVersionResource
	discoveries int
}

func (m *movingSource) ListableResources(ctx context.Context) ([]schema.GroupVersionResource, map[schema.GroupVersion]error, error) {
	m.discoveries++
	if m.discoveries == 1 {
		return m.fakeSource.ListableResources(ctx)
	}
	return m.later[min(m.discoveries-2, len(m.later)-1)], nil, nil
}

func (m *movingSource) EachObject(ctx context.Context, r schema.GroupVersionResource, fn func(*metav1.PartialObjectMetadata) error) error {
	if m.moved[r] {
		return errNotFound
	}
	return m.fakeSource.EachObject(ctx, r, fn)
}

// TestFindAfterDiscoveryMoved: a resource whose list answers 404 left
// discovery while Find ran, and discovery has caught up. Deleted (no
// longer discovered), it holds nothing; served at another version now,
// it is listed there.
func TestFindAfterDiscoveryMoved(t *testing.T) {
	v1 := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}
	v2 := v1.GroupResource().WithVersion("v2")
	gone := schema.GroupVersionResource{Group: "gone.example.com", Version: "v1", Resource: "widgets"}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	target := Target{APIVersion: "owners.example.com/v1", Kind: "Owner"}
	owned := obj("a", "owned", ref("owners.example.com/v1", "Owner", "o"))
	notFound := Options{NotFound: func(err error) bool { return errors.Is(err, errNotFound) }}

	src := &movingSource{fakeSource: &fakeSource{objects: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{
		v1: {owned}, gone: {owned}, cms: {obj("a", "cm")}}},
		moved: map[schema.GroupVersionResource]bool{v1: true, gone: true}, later: [][]schema.GroupVersionResource{{v2, cms}}}
	inv, err := Find(context.Background(), &withLater{src, v2, owned}, target, notFound)
	if err != nil {
		t.Fatal(err)
	}
	if !inv.Complete() || len(inv.Dependents) != 1 || inv.Dependents[0].Resource.GVR() != v2 {
		t.Errorf("moved to v2, gone deleted: %+v", inv)
	}
}

// TestFindSettlesByTheCRD: a resource whose list answers 404 while
// discovery, asked again, still has it at the same version (discovery
// keeps a deleted CRD's group version; CI saw this) is settled by its CRD:
// listed at the version the CRD serves now; gone when no CRD defines it
// and the group version's own discovery document drops it (later);
// Unseen, with the reason, when that document keeps it, the CRD serves no
// version or cannot be read.
func TestFindSettlesByTheCRD(t *testing.T) {
	v1 := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}
	v2 := v1.GroupResource().WithVersion("v2")
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	target := Target{APIVersion: "owners.example.com/v1", Kind: "Owner"}
	owned := obj("a", "owned", ref("owners.example.com/v1", "Owner", "o"))
	opts := Options{NotFound: func(err error) bool { return errors.Is(err, errNotFound) }, SettleTimeout: 600 * time.Millisecond}
	stale := []schema.GroupVersionResource{v1, cms}

	for _, tc := range []struct {
		name   string
		crds   map[schema.GroupResource]string
		crdErr error
		serves []bool
		later  [][]schema.GroupVersionResource
		// found is the resource the dependent is found on; unseen the
		// start of the Unseen reason ("": complete).
		found  schema.GroupVersionResource
		unseen string
	}{
		{name: "the CRD serves v2 now", crds: map[schema.GroupResource]string{v1.GroupResource(): "v2"}, later: [][]schema.GroupVersionResource{stale}, found: v2},
		{name: "the CRD is deleted, its group version is not served", later: [][]schema.GroupVersionResource{stale}, serves: []bool{false}},
		{name: "the CRD is deleted, its group version's document drops it later", later: [][]schema.GroupVersionResource{stale}, serves: []bool{true, true, false}},
		{name: "no CRD, the group version's document keeps it", later: [][]schema.GroupVersionResource{stale}, serves: []bool{true},
			unseen: "its list answered 404 for 600ms, though discovery lists it and no CustomResourceDefinition defines it"},
		{name: "the CRD serves none", crds: map[schema.GroupResource]string{v1.GroupResource(): ""}, later: [][]schema.GroupVersionResource{stale},
			unseen: "its CustomResourceDefinition serves no version"},
		{name: "the CRD cannot be read", crdErr: errForbidden, later: [][]schema.GroupVersionResource{stale},
			unseen: "its list answered 404 and its CustomResourceDefinition could not be read: forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &movingSource{fakeSource: &fakeSource{objects: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{v1: {owned}, cms: {obj("a", "cm")}},
				crds: tc.crds, crdErr: tc.crdErr, serves: tc.serves}, moved: map[schema.GroupVersionResource]bool{v1: true}, later: tc.later}
			inv, err := Find(context.Background(), &withLater{src, v2, owned}, target, opts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.unseen != "" {
				if inv.Complete() || len(inv.Unseen) != 1 || inv.Unseen[0].Resource.GVR() != v1 || !strings.HasPrefix(inv.Unseen[0].Reason, tc.unseen) {
					t.Errorf("want v1 unseen %q: %+v", tc.unseen, inv)
				}
				return
			}
			if !inv.Complete() {
				t.Fatalf("not complete: %+v", inv.Unseen)
			}
			if tc.found.Empty() != (len(inv.Dependents) == 0) || len(inv.Dependents) > 1 || len(inv.Dependents) == 1 && inv.Dependents[0].Resource.GVR() != tc.found {
				t.Errorf("want the dependent on %v: %+v", tc.found, inv.Dependents)
			}
		})
	}
}

// withLater serves resource's objects, which the first discovery does not
// list.
type withLater struct {
	*movingSource
	resource schema.GroupVersionResource
	object   metav1.PartialObjectMetadata
}

func (w *withLater) EachObject(ctx context.Context, r schema.GroupVersionResource, fn func(*metav1.PartialObjectMetadata) error) error {
	if r == w.resource {
		return fn(&w.object)
	}
	return w.movingSource.EachObject(ctx, r, fn)
}

// TestFindScaleTargets: the scale target of a HorizontalPodAutoscaler (at
// any of its versions) and of a KEDA ScaledObject that names the target
// is found, read from the whole object, beside the object's own owner
// references; a scale target of another version or kind is not, and no
// other resource is read whole.
func TestFindScaleTargets(t *testing.T) {
	hpas := schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	scaled := schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	target := Target{APIVersion: "stable.example.com/v1", Kind: "CronTab"}
	scale := func(apiVersion, kind, name string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name}
	}
	src := &fakeSource{
		objects: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{
			hpas:   {obj("a", "hpa", ref("stable.example.com/v1", "CronTab", "owner")), obj("a", "other-version"), obj("a", "deployment"), obj("a", "none")},
			scaled: {obj("b", "keda")},
			cms:    {obj("a", "cm")},
		},
		targets: map[string]metav1.OwnerReference{
			"hpa": scale("stable.example.com/v1", "CronTab", "x"), "other-version": scale("stable.example.com/v2", "CronTab", "x"),
			"deployment": scale("apps/v1", "Deployment", "d"), "keda": scale("stable.example.com/v1", "CronTab", "y"),
		},
	}
	inv, err := Find(context.Background(), src, target, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range inv.Dependents {
		got = append(got, fmt.Sprintf("%s %s %s→%s", d.Resource.Resource, d.Object(), d.Where(), d.Owner.Name))
	}
	want := "horizontalpodautoscalers a/hpa ownerReferences[0]→owner; horizontalpodautoscalers a/hpa scaleTargetRef→x; scaledobjects b/keda scaleTargetRef→y"
	if g := strings.Join(got, "; "); g != want {
		t.Errorf("dependents\n%s\nwant\n%s", g, want)
	}
	if inv.Objects != 6 {
		t.Errorf("objects read %d, want 6", inv.Objects)
	}
	slices.SortFunc(src.wholeReads, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.Resource, b.Resource) })
	if want := []schema.GroupVersionResource{hpas, scaled}; !slices.Equal(src.wholeReads, want) {
		t.Errorf("read whole %v, want %v", src.wholeReads, want)
	}
}
