package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/pager"

	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// ReferenceSource reads the cluster for references.Find: discovery's
// preferred version of every resource that supports list, and their
// objects' metadata in pages of PageSize.
type ReferenceSource struct {
	Client   *Client
	PageSize int64
}

var _ references.Source = ReferenceSource{}

// ListableResources asks discovery (not its disk cache) for the preferred
// version of every resource with the verb list; subresources are left
// out. Group versions whose discovery failed are returned with their
// error, the rest still listed (discovery.ErrGroupDiscoveryFailed).
func (s ReferenceSource) ListableResources(ctx context.Context) ([]schema.GroupVersionResource, map[schema.GroupVersion]error, error) {
	disc, err := discovery.NewDiscoveryClientForConfig(s.Client.config)
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

// EachObject pages through resource's objects in every namespace,
// metadata only.
func (s ReferenceSource) EachObject(ctx context.Context, resource schema.GroupVersionResource, fn func(*metav1.PartialObjectMetadata) error) error {
	res := s.Client.Metadata.Resource(resource)
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

// Forbidden reports whether err is the API server's 403, for
// references.Options.Forbidden.
func Forbidden(err error) bool { return apierrors.IsForbidden(err) }
