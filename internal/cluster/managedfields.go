package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/retry"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/managedfields"
)

// StaleManagedFields lists (paged, metadata only, through the storage
// version) the objects of crd whose managedFields still have an entry
// naming version: ScanManagedFields for that one version. It sends no
// request to version itself.
func (c *Client) StaleManagedFields(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, pageSize int64) ([]managedfields.ObjectRef, error) {
	scan, err := c.ScanManagedFields(ctx, crd, []string{version}, pageSize)
	if err != nil {
		return nil, err
	}
	return scan.Stale[version], nil
}

// ManagedFieldsScan is one paged, metadata-only list of a CRD's objects:
// the writers through every version, and the objects whose managedFields
// name the versions asked for (retire's managedFields step).
type ManagedFieldsScan struct {
	Writers managedfields.Writers
	// Stale lists, per version asked for, the objects with an entry
	// naming it.
	Stale map[string][]managedfields.ObjectRef
}

// ScanManagedFields lists the objects of crd once (paged, metadata only,
// through the storage version, pageSize a page) and groups their
// managedFields entries; staleOf are the versions whose objects are also
// listed by name. Memory is the page plus one group per (apiVersion,
// manager, operation) and the stale objects' names. It sends no request
// to any other version.
func (c *Client) ScanManagedFields(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, staleOf []string, pageSize int64) (*ManagedFieldsScan, error) {
	res := c.Metadata.Resource(GVR(crd, lifecycle.StorageVersion(crd)))
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return res.List(ctx, opts)
	})
	p.PageSize = pageSize
	scan := &ManagedFieldsScan{Stale: map[string][]managedfields.ObjectRef{}}
	apiVersions := map[string]string{}
	for _, v := range staleOf {
		apiVersions[lifecycle.GroupVersion(crd, v)] = v
		scan.Stale[v] = nil
	}
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return nil
		}
		scan.Writers.Add(m.ManagedFields)
		for av, v := range apiVersions {
			if managedfields.Stale(m.ManagedFields, av) {
				scan.Stale[v] = append(scan.Stale[v], managedfields.ObjectRef{Namespace: m.Namespace, Name: m.Name})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return scan, nil
}

// CleanManagedFields rewrites the managedFields of each object in objs so
// that no entry names version (managedfields.Relabel to the storage
// version), with at most concurrency writes in flight. Each write is a
// merge patch of metadata.managedFields pinned to the object's uid and
// resourceVersion, sent through the storage version, so it can neither
// create an object nor overwrite another writer; on a conflict the object
// is read again and the relabel redone.
func (c *Client) CleanManagedFields(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, objs []managedfields.ObjectRef, concurrency int, fieldManager string) (*managedfields.Cleanup, error) {
	storage := lifecycle.StorageVersion(crd)
	from, to := lifecycle.GroupVersion(crd, version), lifecycle.GroupVersion(crd, storage)
	res := c.Metadata.Resource(GVR(crd, storage))
	out := &managedfields.Cleanup{}
	var mu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(concurrency, 1))
	for _, ref := range objs {
		g.Go(func() error {
			var relabeled, merged int
			current := false
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				m, err := res.Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if !managedfields.Stale(m.ManagedFields, from) {
					current = true
					return nil
				}
				entries, r, mg, err := managedfields.Relabel(m.ManagedFields, from, to)
				if err != nil {
					return err
				}
				relabeled, merged = r, mg
				patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
					"uid": m.UID, "resourceVersion": m.ResourceVersion, "managedFields": entries}})
				if err != nil {
					return err
				}
				_, err = res.Namespace(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case apierrors.IsNotFound(err):
				out.Deleted++
			case err != nil && ctx.Err() != nil:
				return ctx.Err()
			case err != nil:
				out.Failed = append(out.Failed, managedfields.ObjectFailure{Object: ref.String(), Message: err.Error()})
			case current:
				out.Current++
			default:
				out.Rewritten++
				out.Relabeled += relabeled
				out.Merged += merged
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return out, err
	}
	if len(out.Failed) > 0 {
		return out, fmt.Errorf("the managedFields of %d object(s) could not be rewritten; first: %s: %s", len(out.Failed), out.Failed[0].Object, out.Failed[0].Message)
	}
	return out, nil
}
