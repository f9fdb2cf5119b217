package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// ReferenceSource reads the cluster for references.Find: discovery's
// preferred version of every resource that supports list, and their
// objects' metadata in pages of PageSize. Make it with NewReferenceSource.
type ReferenceSource struct {
	Client   *Client
	PageSize int64
	// quiet is a metadata client that drops the API server's warnings:
	// listing every resource lists the deprecated ones too (v1 Endpoints,
	// ComponentStatus), whose warnings are about the clients that use
	// them, not about this inventory.
	quiet metadata.Interface
	// whole is the dynamic client, warnings dropped, that reads the
	// objects of references.ScaleTargetResources.
	whole dynamic.Interface
	// typedClient is the typed clientset Helm's storage drivers read
	// through, made once.
	typedOnce   sync.Once
	typedClient kubernetes.Interface
	typedErr    error
}

var _ references.Source = (*ReferenceSource)(nil)

// NewReferenceSource returns the source over c, listing pageSize objects
// a page.
func NewReferenceSource(c *Client, pageSize int64) (*ReferenceSource, error) {
	cfg := rest.CopyConfig(c.config)
	cfg.WarningHandler = rest.NoWarnings{}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &ReferenceSource{Client: c, PageSize: pageSize, quiet: md, whole: dyn}, nil
}

// ListableResources asks discovery (not its disk cache) for the preferred
// version of every resource with the verb list; subresources are left
// out. Group versions whose discovery failed are returned with their
// error, the rest still listed (discovery.ErrGroupDiscoveryFailed).
func (s *ReferenceSource) ListableResources(ctx context.Context) ([]schema.GroupVersionResource, map[schema.GroupVersion]error, error) {
	cfg := rest.CopyConfig(s.Client.config)
	cfg.WarningHandler = rest.NoWarnings{}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	lists, err := discovery.ServerPreferredResources(disc)
	var failed map[schema.GroupVersion]error
	var partial *discovery.ErrGroupDiscoveryFailed
	switch {
	case errors.As(err, &partial):
		failed = partial.Groups
	case err != nil:
		return nil, nil, err
	}
	lists = discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list"}}, lists)
	resources, err := discovery.GroupVersionResources(lists)
	if err != nil {
		return nil, nil, fmt.Errorf("discovery: %w", err)
	}
	out := make([]schema.GroupVersionResource, 0, len(resources))
	for r := range resources {
		if strings.Contains(r.Resource, "/") { // a subresource
			continue
		}
		out = append(out, r)
	}
	return out, failed, ctx.Err()
}

// CustomResourceVersion reads the CRD named RESOURCE.GROUP (a get of
// customresourcedefinitions, which every command already needs) and
// returns lifecycle.ListVersion of it (the storage version when served,
// else kubectl's default version; "" when it serves none); defined is
// false when the API server has no such CRD.
func (s *ReferenceSource) CustomResourceVersion(ctx context.Context, resource schema.GroupResource) (string, bool, error) {
	crd, err := s.Client.GetCRD(ctx, resource.String())
	switch {
	case apierrors.IsNotFound(err):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	return lifecycle.ListVersion(crd), true, nil
}

// ServesResource asks GET /apis/GROUP/VERSION (/api/v1 for the core
// group), the group version's own discovery document, whether it lists
// resource; the API server's 404 is false. Unlike the aggregated
// discovery of /apis, this document is served by the handler that serves
// the resource, so it agrees with the resource's lists.
func (s *ReferenceSource) ServesResource(ctx context.Context, resource schema.GroupVersionResource) (bool, error) {
	cfg := rest.CopyConfig(s.Client.config)
	cfg.WarningHandler = rest.NoWarnings{}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	list, err := disc.ServerResourcesForGroupVersion(resource.GroupVersion().String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == resource.Resource }), ctx.Err()
}

// EachObject pages through resource's objects in every namespace,
// metadata only.
func (s *ReferenceSource) EachObject(ctx context.Context, resource schema.GroupVersionResource, fn func(*metav1.PartialObjectMetadata) error) error {
	res := s.quiet.Resource(resource)
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return res.List(ctx, opts)
	})
	p.PageSize = s.PageSize
	return p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			return fn(m)
		}
		return nil
	})
}

// EachScaler pages through resource's whole objects in every namespace
// and calls fn with each one's metadata and spec.scaleTargetRef
// (apiVersion, kind, name; empty strings where the object has none).
func (s *ReferenceSource) EachScaler(ctx context.Context, resource schema.GroupVersionResource, fn func(*metav1.PartialObjectMetadata, metav1.OwnerReference) error) error {
	res := s.whole.Resource(resource)
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return res.List(ctx, opts)
	})
	p.PageSize = s.PageSize
	return p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID(), OwnerReferences: u.GetOwnerReferences()}}
		var target metav1.OwnerReference
		target.APIVersion, _, _ = unstructured.NestedString(u.Object, "spec", "scaleTargetRef", "apiVersion")
		target.Kind, _, _ = unstructured.NestedString(u.Object, "spec", "scaleTargetRef", "kind")
		target.Name, _, _ = unstructured.NestedString(u.Object, "spec", "scaleTargetRef", "name")
		return fn(m, target)
	})
}

// Forbidden reports whether err is the API server's 403, for
// references.Options.Forbidden.
func Forbidden(err error) bool { return apierrors.IsForbidden(err) }

// ReferencePatcher patches objects for references.RepairAll (through the
// metadata client: the patch applies to the whole object, the answer is
// its metadata),
// with the field manager FieldManager.
type ReferencePatcher struct {
	Client       *Client
	FieldManager string
}

var _ references.Patcher = ReferencePatcher{}

// PatchJSON sends a JSON patch through the metadata client. A failed test
// operation (the API server answers 422 with "test failed") is
// references.ErrChanged, a 404 references.ErrGone.
func (p ReferencePatcher) PatchJSON(ctx context.Context, resource schema.GroupVersionResource, namespace, name string, patch []byte, dryRun bool) error {
	opts := metav1.PatchOptions{FieldManager: p.FieldManager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err := p.Client.Metadata.Resource(resource).Namespace(namespace).Patch(ctx, name, types.JSONPatchType, patch, opts)
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %v", references.ErrGone, err)
	case apierrors.IsInvalid(err) && !hasCauses(err):
		// A JSON patch the API server cannot apply — a test operation
		// that failed, a path no longer there — is a 422 without causes
		// and with a generic message (apierrors.NewGenericServerResponse
		// drops the patch library's); a patched object that fails
		// validation is a 422 with a cause per field.
		return fmt.Errorf("%w (a test of the patch failed)", references.ErrChanged)
	}
	return err
}

// hasCauses reports whether err is an API error with causes.
func hasCauses(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Details != nil && len(status.Status().Details.Causes) > 0
}

// NotFound reports whether err is the API server's 404, for
// references.Options.NotFound.
func NotFound(err error) bool { return apierrors.IsNotFound(err) }
