// Package references finds the objects of a cluster that still name a
// custom resource's API version outside the custom resources themselves
// (issue 28): owner references (metadata.ownerReferences) and scale
// targets (spec.scaleTargetRef of HorizontalPodAutoscalers and of KEDA's
// ScaledObjects), and the objects of Helm release records' current
// manifests (HelmManifest). Storage migration rewrites the custom resources; it
// never rewrites these, and once the version is unserved kube-
// controller-manager's garbage collector cannot resolve an owner reference
// that names it, so the dependent is never collected
// (kubernetes/kubernetes#102641; established on v1.37.2 by the e2e test
// TestGarbageCollectorAndAnUnservedOwnerVersion).
//
// The inventory reads every listable resource's metadata, paged: an owner
// reference can sit on an object of any kind. A resource that cannot be
// listed (forbidden, a failed discovery group, an error) is named in
// Inventory.Unseen: what the inventory could not read is unknown, never
// "no reference". Helm's release records are read through Helm's own
// storage drivers (helm.sh/helm/v4) by the cluster layer, the current
// record of each release only (the one helm upgrade builds).
package references

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Source reads the cluster for Find.
type Source interface {
	// ListableResources are the resources discovery lists with the verb
	// list, one version each (the preferred), and the group versions whose
	// discovery failed (their resources are not in the list).
	ListableResources(ctx context.Context) ([]schema.GroupVersionResource, map[schema.GroupVersion]error, error)
	// EachObject calls fn with the metadata of every object of resource,
	// in every namespace, paged. An error of fn stops it and is returned.
	EachObject(ctx context.Context, resource schema.GroupVersionResource, fn func(*metav1.PartialObjectMetadata) error) error
	// EachScaler is EachObject for a resource of ScaleTargetResources: it
	// reads whole objects and calls fn with each one's metadata and its
	// spec.scaleTargetRef (apiVersion, kind and name; zero when the object
	// has none).
	EachScaler(ctx context.Context, resource schema.GroupVersionResource, fn func(*metav1.PartialObjectMetadata, metav1.OwnerReference) error) error
	// CurrentReleases reads the Helm release records kept in resource (one
	// of HelmRecordResources) in every namespace and returns the current
	// record of each release (see Release) with its manifest.
	CurrentReleases(ctx context.Context, resource Resource) ([]Release, error)
	// CustomResourceVersion reads the CustomResourceDefinition named
	// RESOURCE.GROUP and returns the version its objects are listed at:
	// its storage version when served, else kubectl's default version;
	// "" when it serves none. defined is false when no CRD of that name
	// exists (deleted, or resource is not a custom resource).
	CustomResourceVersion(ctx context.Context, resource schema.GroupResource) (version string, defined bool, err error)
	// ServesResource asks the group version's own discovery document
	// (GET /apis/GROUP/VERSION, not the aggregated discovery of /apis)
	// whether it lists resource; a 404 is false.
	ServesResource(ctx context.Context, resource schema.GroupVersionResource) (bool, error)
}

// ScaleTargetResources are the resources whose objects name a scale
// target by apiVersion in spec.scaleTargetRef: the HorizontalPodAutoscaler
// (autoscaling/v1 and v2) and KEDA's ScaledObject (keda.sh), when
// discovery has them.
var ScaleTargetResources = []schema.GroupResource{
	{Group: "autoscaling", Resource: "horizontalpodautoscalers"},
	{Group: "keda.sh", Resource: "scaledobjects"},
}

// Field is where an object names the target's version.
type Field string

const (
	// OwnerReference is an entry of metadata.ownerReferences.
	OwnerReference Field = "metadata.ownerReferences"
	// ScaleTarget is spec.scaleTargetRef.
	ScaleTarget Field = "spec.scaleTargetRef"
)

// Target is the owner apiVersion and kind that references are looked for:
// APIVersion "GROUP/VERSION", Kind the CRD's kind.
type Target struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// Resource is a resource of the API server (a schema.GroupVersionResource
// with the field names of the JSON reports).
type Resource struct {
	Group    string `json:"group,omitempty"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
}

// GVR is r as a schema.GroupVersionResource.
func (r Resource) GVR() schema.GroupVersionResource { return schema.GroupVersionResource(r) }

// GroupResource is r without its version.
func (r Resource) GroupResource() schema.GroupResource { return r.GVR().GroupResource() }

// GroupVersion is r's group and version.
func (r Resource) GroupVersion() schema.GroupVersion { return r.GVR().GroupVersion() }

// Dependent is one reference that names Target: the object that holds it
// (Resource, Namespace, Name, UID), the Field that holds it, the
// reference's index in metadata.ownerReferences (0 for a scale target;
// the document's index in a Helm release record's manifest), and the
// reference itself in Owner (for a scale target and an object of a Helm
// manifest: its apiVersion, kind and name; no uid). Release is set for an
// object of a Helm release record (Field HelmManifest): the record's
// Secret or ConfigMap is Resource/Namespace/Name, UID is empty.
type Dependent struct {
	Resource  Resource              `json:"resource"`
	Namespace string                `json:"namespace,omitempty"`
	Name      string                `json:"name"`
	UID       types.UID             `json:"uid,omitempty"`
	Field     Field                 `json:"field"`
	Index     int                   `json:"index"`
	Owner     metav1.OwnerReference `json:"owner"`
	Release   *Release              `json:"release,omitempty"`
}

// Object is the dependent's NAMESPACE/NAME, or NAME for a cluster-scoped
// object.
func (d Dependent) Object() string {
	if d.Namespace == "" {
		return d.Name
	}
	return d.Namespace + "/" + d.Name
}

// Where is the field that names the version: "ownerReferences[INDEX]",
// "scaleTargetRef", or for a Helm release record "manifest of release
// NAMESPACE/NAME revision N".
func (d Dependent) Where() string {
	switch {
	case d.Release != nil:
		return "manifest of Helm release " + d.Release.String()
	case d.Field == ScaleTarget:
		return "scaleTargetRef"
	}
	return fmt.Sprintf("ownerReferences[%d]", d.Index)
}

// Unseen is a resource, or a discovery group, that the inventory could not
// read, and why.
type Unseen struct {
	// Resource is the resource whose list failed; for a group version
	// whose discovery failed, only its Group and Version are set.
	Resource Resource `json:"resource"`
	Reason   string   `json:"reason"`
	// Forbidden is set when the API server refused the list (403).
	Forbidden bool `json:"forbidden,omitempty"`
}

// Name is the resource's GROUP_RESOURCE, or "GROUP/VERSION (discovery)"
// for a group version whose discovery failed.
func (u Unseen) Name() string {
	if u.Resource.Resource == "" {
		return u.Resource.GroupVersion().String() + " (discovery)"
	}
	return u.Resource.GroupResource().String()
}

// Inventory is what Find saw: every reference to the target, the
// resources it listed and the objects it read, and what it could not read.
type Inventory struct {
	Target     Target      `json:"target"`
	Dependents []Dependent `json:"dependents"`
	// Resources is the number of resources listed, Objects the number of
	// objects read.
	Resources int      `json:"resources"`
	Objects   int64    `json:"objects"`
	Unseen    []Unseen `json:"unseen,omitempty"`
}

// Complete reports whether every listable resource was read: only then
// does an empty Dependents mean that nothing names the target.
func (i *Inventory) Complete() bool { return len(i.Unseen) == 0 }

// Options of Find.
type Options struct {
	// Concurrency is the number of resources listed at once (1 when 0).
	Concurrency int
	// Forbidden tells whether a list error is the API server's refusal
	// (apierrors.IsForbidden in the cluster layer); nil: none is.
	Forbidden func(error) bool
	// NotFound tells whether a list error is the API server's 404: the
	// resource left discovery after Find asked for it (a CRD deleted, a
	// version unserved). Find then asks discovery again and lists the
	// resource at its version of now; a resource that discovery no longer
	// has is gone with its objects. Aggregated discovery can keep a
	// deleted CRD's group version long after its APIService is gone
	// (seen on kube-apiserver v1.37.2 for 25 s and more, in about a third
	// of deletions), so a resource that answers 404 again is settled by
	// its CRD (Source.CustomResourceVersion): listed at the version the
	// CRD serves now, or, when no CRD defines it, gone once its group
	// version's own discovery document no longer lists it
	// (Source.ServesResource). nil: no error is a 404.
	NotFound func(error) bool
	// SettleTimeout bounds how long Find waits, per resource, for a 404
	// to settle that way (15 s when 0); past it the resource is Unseen.
	SettleTimeout time.Duration
	// Progress, when set, is called after each resource with the resources
	// done and the total.
	Progress func(done, total int)
	// Match, when set, chooses the references to find instead of the
	// target's apiVersion and kind (doctor looks for references to any
	// version a CRD does not serve); a scale target is passed as an
	// OwnerReference with its apiVersion, kind and name.
	Match func(metav1.OwnerReference) bool
}

// Find reads the metadata of every object of every listable resource (the
// whole objects of ScaleTargetResources) and returns each owner reference
// and scale target that names target, sorted by resource, namespace,
// name, field and index. A resource that fails to list is recorded as Unseen and
// the inventory goes on; only the end of ctx, or a failure of discovery as
// a whole, is an error. Memory is one page per worker and the references
// found.
func Find(ctx context.Context, src Source, target Target, opts Options) (*Inventory, error) {
	resources, failed, err := src.ListableResources(ctx)
	if err != nil {
		return nil, fmt.Errorf("discovering the listable resources: %w", err)
	}
	inv := &Inventory{Target: target, Dependents: []Dependent{}, Resources: len(resources)}
	for gv, err := range failed {
		inv.Unseen = append(inv.Unseen, Unseen{Resource: Resource(gv.WithResource("")), Reason: "its discovery failed: " + err.Error()})
	}
	f := finder{src: src, opts: opts, inv: inv}
	if f.opts.Forbidden == nil {
		f.opts.Forbidden = func(error) bool { return false }
	}
	if f.opts.NotFound == nil {
		f.opts.NotFound = func(error) bool { return false }
	}
	if f.opts.Match == nil {
		f.opts.Match = func(ref metav1.OwnerReference) bool {
			return ref.APIVersion == target.APIVersion && ref.Kind == target.Kind
		}
	}
	gone := f.list(ctx, resources, true)
	f.releases(ctx)
	if len(gone) > 0 && ctx.Err() == nil {
		again, _, err := src.ListableResources(ctx)
		if err != nil {
			return nil, fmt.Errorf("discovering the listable resources again: %w", err)
		}
		var moved []schema.GroupVersionResource
		for _, r := range again {
			if slices.ContainsFunc(gone, func(g schema.GroupVersionResource) bool { return g.GroupResource() == r.GroupResource() }) {
				moved = append(moved, r)
			}
		}
		for _, r := range f.list(ctx, moved, false) {
			f.settle(ctx, r)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	inv.Objects = f.objects.Load()
	slices.SortFunc(inv.Dependents, func(a, b Dependent) int {
		return cmp.Or(cmp.Compare(a.Resource.GroupResource().String(), b.Resource.GroupResource().String()), compareBool(a.Release != nil, b.Release != nil), cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.Field, b.Field), cmp.Compare(a.Index, b.Index))
	})
	slices.SortFunc(inv.Unseen, func(a, b Unseen) int {
		return cmp.Compare(a.Resource.GroupResource().String(), b.Resource.GroupResource().String())
	})
	return inv, nil
}

// finder lists resources for Find, opts.Concurrency at a time.
type finder struct {
	src     Source
	opts    Options
	mu      sync.Mutex
	inv     *Inventory
	objects atomic.Int64
}

// settle lists resource, whose list answered 404 twice though discovery
// has it, once the API server agrees on where its objects are: at the
// version its CRD serves now (Source.CustomResourceVersion; the CRD can
// be read before the API server's handlers catch up, so a 404 there is
// asked again), or nowhere, when no CRD defines it and its group
// version's own discovery document does not list it
// (Source.ServesResource). It asks every quarter second until
// opts.SettleTimeout; what does not settle by then, or whose CRD serves
// no version or cannot be read, is Unseen.
func (f *finder) settle(ctx context.Context, resource schema.GroupVersionResource) {
	timeout := cmp.Or(f.opts.SettleTimeout, 15*time.Second)
	unseen := func(reason string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.inv.Unseen = append(f.inv.Unseen, Unseen{Resource: Resource(resource), Reason: reason})
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		version, defined, err := f.src.CustomResourceVersion(ctx, resource.GroupResource())
		switch {
		case err != nil:
			return false, fmt.Errorf("its list answered 404 and its CustomResourceDefinition could not be read: %w", err)
		case defined && version == "":
			return false, errors.New("its CustomResourceDefinition serves no version: its objects cannot be read")
		case defined:
			return len(f.list(ctx, []schema.GroupVersionResource{resource.GroupResource().WithVersion(version)}, false)) == 0, nil
		}
		served, err := f.src.ServesResource(ctx, resource)
		if err != nil {
			return false, fmt.Errorf("its list answered 404 and the discovery of %s failed: %w", resource.GroupVersion(), err)
		}
		return !served, nil
	})
	switch {
	case err == nil, ctx.Err() != nil:
	case wait.Interrupted(err):
		unseen(fmt.Sprintf("its list answered 404 for %s, though discovery lists it and no CustomResourceDefinition defines it", timeout))
	default:
		unseen(err.Error())
	}
}

// list reads every object of resources into f.inv and returns the
// resources whose list answered 404; with progress, it reports each
// resource done to opts.Progress.
func (f *finder) list(ctx context.Context, resources []schema.GroupVersionResource, progress bool) []schema.GroupVersionResource {
	var (
		notFound []schema.GroupVersionResource
		done     atomic.Int64
		next     atomic.Int64
		wg       sync.WaitGroup
	)
	for range max(1, f.opts.Concurrency) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(resources) || ctx.Err() != nil {
					return
				}
				res := resources[i]
				var found []Dependent
				var read int64
				owners := func(m *metav1.PartialObjectMetadata) {
					read++
					for j, ref := range m.OwnerReferences {
						if f.opts.Match(ref) {
							found = append(found, Dependent{Resource: Resource(res), Namespace: m.Namespace, Name: m.Name, UID: m.UID, Field: OwnerReference, Index: j, Owner: ref})
						}
					}
				}
				var err error
				if slices.Contains(ScaleTargetResources, res.GroupResource()) {
					err = f.src.EachScaler(ctx, res, func(m *metav1.PartialObjectMetadata, target metav1.OwnerReference) error {
						if target.APIVersion != "" && f.opts.Match(target) {
							found = append(found, Dependent{Resource: Resource(res), Namespace: m.Namespace, Name: m.Name, UID: m.UID, Field: ScaleTarget, Owner: target})
						}
						owners(m)
						return nil
					})
				} else {
					err = f.src.EachObject(ctx, res, func(m *metav1.PartialObjectMetadata) error { owners(m); return nil })
				}
				f.mu.Lock()
				switch {
				case err != nil && ctx.Err() != nil:
				case err != nil && f.opts.NotFound(err):
					notFound = append(notFound, res)
				case err != nil:
					f.inv.Unseen = append(f.inv.Unseen, Unseen{Resource: Resource(res), Reason: err.Error(), Forbidden: f.opts.Forbidden(err)})
				default:
					f.inv.Dependents = append(f.inv.Dependents, found...)
					f.objects.Add(read)
				}
				f.mu.Unlock()
				if progress && f.opts.Progress != nil {
					f.opts.Progress(int(done.Add(1)), len(resources))
				}
			}
		})
	}
	wg.Wait()
	return notFound
}

// releases reads the current Helm release record of every release, from
// each of HelmRecordResources, and keeps each object of its manifest that
// matches. A store that cannot be read is Unseen.
func (f *finder) releases(ctx context.Context) {
	for _, res := range HelmRecordResources {
		if ctx.Err() != nil {
			return
		}
		rels, err := f.src.CurrentReleases(ctx, res)
		if err != nil {
			if ctx.Err() == nil {
				f.inv.Unseen = append(f.inv.Unseen, Unseen{Resource: res, Reason: "reading its Helm release records: " + err.Error(), Forbidden: f.opts.Forbidden(err)})
			}
			continue
		}
		for i := range rels {
			rel := rels[i]
			rel.Manifest = ""
			for _, o := range ManifestObjects(rels[i].Manifest, f.opts.Match) {
				f.inv.Dependents = append(f.inv.Dependents, Dependent{Resource: rel.Resource, Namespace: rel.Namespace, Name: rel.Record,
					Field: HelmManifest, Index: o.Index, Owner: o.Ref, Release: &rel})
			}
		}
	}
}

// ByResource groups the dependents of the inventory by resource, in the
// order of Dependents: per resource the number of references, the
// namespaces (sorted, "" for cluster-scoped objects) and the first few
// objects as NAMESPACE/NAME (or NAME), at most examples of them.
func (i *Inventory) ByResource(examples int) []ResourceCount {
	var out []ResourceCount
	for _, d := range i.Dependents {
		if len(out) == 0 || out[len(out)-1].Resource != d.Resource || out[len(out)-1].Helm != (d.Release != nil) {
			out = append(out, ResourceCount{Resource: d.Resource, Helm: d.Release != nil})
		}
		rc := &out[len(out)-1]
		rc.References++
		if !slices.Contains(rc.Namespaces, d.Namespace) {
			rc.Namespaces = append(rc.Namespaces, d.Namespace)
		}
		name := d.Object()
		if d.Release != nil {
			name = d.Release.String()
		}
		if name != rc.last {
			rc.objects++
			rc.last = name
		}
		if len(rc.Examples) < examples && !slices.Contains(rc.Examples, name) {
			rc.Examples = append(rc.Examples, name)
		}
	}
	return out
}

// ResourceCount is the references found on the objects of one resource
// (Helm: in the Helm release records it keeps; an example is then
// "NAMESPACE/RELEASE revision N").
type ResourceCount struct {
	Resource   Resource
	Helm       bool
	References int
	Namespaces []string
	Examples   []string
	// objects is the number of objects (records) that hold the
	// references, last the latest seen.
	objects int
	last    string
}

// String is "RESOURCE: N in NAMESPACES (EXAMPLES, …)".
func (rc ResourceCount) String() string {
	where := ""
	if len(rc.Namespaces) > 0 && rc.Namespaces[0] != "" {
		where = " in " + strings.Join(rc.Namespaces, ", ")
	}
	more := ""
	if rc.objects > len(rc.Examples) || (rc.objects == 0 && rc.References > len(rc.Examples)) {
		more = ", …"
	}
	what := rc.Resource.GroupResource().String()
	if rc.Helm {
		what = "Helm release records in " + what
	}
	return fmt.Sprintf("%s: %d%s (%s%s)", what, rc.References, where, strings.Join(rc.Examples, ", "), more)
}

// Count is "N owner reference(s)", "N scale target(s)", "N object(s) of
// Helm release records", or those joined by commas and "and", for deps.
func Count(deps []Dependent) string {
	var owners, targets, helm int
	for _, d := range deps {
		switch {
		case d.Release != nil:
			helm++
		case d.Field == ScaleTarget:
			targets++
		default:
			owners++
		}
	}
	var parts []string
	if owners > 0 || targets+helm == 0 {
		parts = append(parts, countOf(owners, "owner reference"))
	}
	if targets > 0 {
		parts = append(parts, countOf(targets, "scale target"))
	}
	if helm > 0 {
		parts = append(parts, countOf(helm, "object")+" in Helm release records")
	}
	if len(parts) > 2 {
		return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	return strings.Join(parts, " and ")
}

// Verb is "names" for one dependent, "name" for more: the verb after
// Count(deps).
func Verb(deps []Dependent) string {
	if len(deps) == 1 {
		return "names"
	}
	return "name"
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Consequence is what breaks while the version that deps name is not
// served, for the fields of deps: an owner reference the garbage collector cannot resolve
// (the dependent is never collected; kubernetes/kubernetes#102641,
// TestGarbageCollectorAndAnUnservedOwnerVersion), a scale target that an
// autoscaler resolving the version cannot map (KEDA's ScaledObject
// controller asks the RESTMapper for group, kind and version; the
// HorizontalPodAutoscaler controller of kube-controller-manager v1.37
// asks for group and kind only and keeps scaling: TestScaleTargetOfAnUnservedVersion),
// a Helm release record whose current manifest names it (helm upgrade
// fails: TestHelmReleaseRecordOfARemovedVersion).
func Consequence(deps []Dependent) string {
	var owners, targets, helm bool
	for _, d := range deps {
		owners = owners || (d.Field != ScaleTarget && d.Release == nil)
		targets = targets || d.Field == ScaleTarget
		helm = helm || d.Release != nil
	}
	var out []string
	if owners || !(targets || helm) {
		out = append(out, "the garbage collector cannot resolve such an owner and never deletes its dependents")
	}
	if targets {
		out = append(out, "an autoscaler that maps its scale target by version (KEDA's ScaledObject) cannot find it (kube-controller-manager's HPA controller maps group and kind only)")
	}
	if helm {
		out = append(out, "the next helm upgrade or rollback of the release fails before it changes anything (Helm cannot map the kind at the version its current release record names)")
	}
	return strings.Join(out, "; ")
}

func countOf(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
