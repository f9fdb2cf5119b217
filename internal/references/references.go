// Package references finds the objects of a cluster that still name a
// custom resource's API version outside the custom resources themselves
// (issue 28). Storage migration rewrites the custom resources; it never
// rewrites their dependents, and once the version is unserved kube-
// controller-manager's garbage collector cannot resolve an owner reference
// that names it, so the dependent is never collected
// (kubernetes/kubernetes#102641; established on v1.37.2 by the e2e test
// TestGarbageCollectorAndAnUnservedOwnerVersion).
//
// The inventory reads every listable resource's metadata, paged: an owner
// reference can sit on an object of any kind. A resource that cannot be
// listed (forbidden, a failed discovery group, an error) is named in
// Inventory.Unseen: what the inventory could not read is unknown, never
// "no reference".
package references

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
}

// Target is the owner apiVersion and kind that references are looked for:
// APIVersion "GROUP/VERSION", Kind the CRD's kind.
type Target struct {
	APIVersion, Kind string
}

// Dependent is one owner reference that names Target: the object that
// holds it (Resource, Namespace, Name, UID) and the reference's index in
// its metadata.ownerReferences, with the reference itself.
type Dependent struct {
	Resource  schema.GroupVersionResource `json:"resource"`
	Namespace string                      `json:"namespace,omitempty"`
	Name      string                      `json:"name"`
	UID       types.UID                   `json:"uid"`
	Index     int                         `json:"index"`
	Owner     metav1.OwnerReference       `json:"owner"`
}

// Unseen is a resource, or a discovery group, that the inventory could not
// read, and why.
type Unseen struct {
	// Resource is the resource whose list failed; for a group version
	// whose discovery failed, only its Group and Version are set.
	Resource schema.GroupVersionResource `json:"resource"`
	Reason   string                      `json:"reason"`
	// Forbidden is set when the API server refused the list (403).
	Forbidden bool `json:"forbidden,omitempty"`
}

// Inventory is what Find saw: every owner reference to the target, the
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
	// Progress, when set, is called after each resource with the resources
	// done and the total.
	Progress func(done, total int)
}

// Find reads the metadata of every object of every listable resource and
// returns each owner reference to target, sorted by resource, namespace,
// name and index. A resource that fails to list is recorded as Unseen and
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
		inv.Unseen = append(inv.Unseen, Unseen{Resource: gv.WithResource(""), Reason: "its discovery failed: " + err.Error()})
	}
	forbidden := opts.Forbidden
	if forbidden == nil {
		forbidden = func(error) bool { return false }
	}
	var (
		mu      sync.Mutex
		objects atomic.Int64
		done    atomic.Int64
		next    atomic.Int64
		wg      sync.WaitGroup
	)
	for range max(1, opts.Concurrency) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(resources) || ctx.Err() != nil {
					return
				}
				res := resources[i]
				var found []Dependent
				err := src.EachObject(ctx, res, func(m *metav1.PartialObjectMetadata) error {
					objects.Add(1)
					for j, ref := range m.OwnerReferences {
						if ref.APIVersion == target.APIVersion && ref.Kind == target.Kind {
							found = append(found, Dependent{Resource: res, Namespace: m.Namespace, Name: m.Name, UID: m.UID, Index: j, Owner: ref})
						}
					}
					return nil
				})
				mu.Lock()
				switch {
				case err != nil && ctx.Err() != nil:
				case err != nil:
					inv.Unseen = append(inv.Unseen, Unseen{Resource: res, Reason: err.Error(), Forbidden: forbidden(err)})
				default:
					inv.Dependents = append(inv.Dependents, found...)
				}
				mu.Unlock()
				if opts.Progress != nil {
					opts.Progress(int(done.Add(1)), len(resources))
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	inv.Objects = objects.Load()
	slices.SortFunc(inv.Dependents, func(a, b Dependent) int {
		return cmp.Or(cmp.Compare(a.Resource.GroupResource().String(), b.Resource.GroupResource().String()), cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.Index, b.Index))
	})
	slices.SortFunc(inv.Unseen, func(a, b Unseen) int {
		return cmp.Compare(a.Resource.GroupResource().String(), b.Resource.GroupResource().String())
	})
	return inv, nil
}
