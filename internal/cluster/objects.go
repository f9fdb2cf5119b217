package cluster

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/retry"
)

// ListCRDs lists every CustomResourceDefinition of the cluster (one
// request).
func (c *Client) ListCRDs(ctx context.Context) ([]apiextensionsv1.CustomResourceDefinition, error) {
	list, err := c.CRDs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// GetCRD reads the CustomResourceDefinition named name (its full name, as
// in a manifest: no short names or kinds, see ResolveCRD for those). A CRD
// that does not exist is the API server's NotFound error.
func (c *Client) GetCRD(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	return c.CRDs.Get(ctx, name, metav1.GetOptions{})
}

// CRDAt reads the CustomResourceDefinition named name as it was at etcd
// revision rv (a list of that one name with resourceVersionMatch=Exact):
// its schemas when an object whose resourceVersion is rv was last
// written. nil, nil when it did not exist then. The API server answers
// 410 Gone (apierrors.IsResourceExpired) once etcd has compacted rv —
// kube-apiserver compacts every 5 minutes (--etcd-compaction-interval) —
// and Forbidden without list on customresourcedefinitions.
func (c *Client) CRDAt(ctx context.Context, name, rv string) (*apiextensionsv1.CustomResourceDefinition, error) {
	list, err := c.CRDs.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name,
		ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil || len(list.Items) == 0 {
		return nil, err
	}
	return &list.Items[0], nil
}

// DryRunCreateCRD asks the API server to admit and validate crd as a new
// CRD without persisting it (dryRun=All), as fieldManager; crd's
// resourceVersion and status are left out, as a create by kubectl apply
// sends them. The API server's refusal is returned unchanged.
func (c *Client) DryRunCreateCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, fieldManager string) error {
	obj := crd.DeepCopy()
	obj.ResourceVersion, obj.Status = "", apiextensionsv1.CustomResourceDefinitionStatus{}
	_, err := c.CRDs.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: fieldManager})
	return err
}

// EachObject lists the objects of crd in all namespaces through version,
// metadata only, pageSize objects per request (continue tokens; the
// client-go pager falls back to a full list if a continue token expires),
// and calls each with every object's namespace ("" for a cluster-scoped
// CRD) and name; an error from each stops the list and is returned. The API server converts every object to version to answer
// a list, so an object it cannot convert fails the list: the error is the
// API server's, unchanged (a StatusError whose causes name the storage
// keys of the objects it could not read, on API servers that aggregate
// them).
func (c *Client) EachObject(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, pageSize int64, each func(namespace, name string) error) error {
	return c.EachObjectMeta(ctx, crd, version, pageSize, func(m metav1.Object) error { return each(m.GetNamespace(), m.GetName()) })
}

// EachObjectMeta lists crd's objects as EachObject does and calls each
// with every object's metadata (finalizers, labels, annotations, owner
// references).
func (c *Client) EachObjectMeta(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, pageSize int64, each func(metav1.Object) error) error {
	res := c.Metadata.Resource(GVR(crd, version))
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return res.List(ctx, opts)
	})
	p.PageSize = pageSize
	delivered := false
	list := func() error {
		return p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
			m, ok := o.(metav1.Object)
			if !ok {
				return fmt.Errorf("listing %s at %s: the API server answered an item of type %T", crd.Name, version, o)
			}
			delivered = true
			return each(m)
		})
	}
	// Right after an edit of the CRD the API server may still serve its
	// earlier state (see WhenServedBy): while nothing was handed to each,
	// the list is sent again, bounded, until it serves the CRD that was
	// read. The first attempt is the list itself: no extra request.
	return retry.OnError(NotYetServed, func(err error) bool {
		return !delivered && ctx.Err() == nil && NotServedYet(crd, err)
	}, list)
}

// ReadObject reads one object of crd through version, metadata only: the
// API server converts it to version as it does for a list. The error is
// the API server's, unchanged.
func (c *Client) ReadObject(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version, namespace, name string) error {
	res := c.Metadata.Resource(GVR(crd, version))
	var err error
	if namespace != "" {
		_, err = res.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	} else {
		_, err = res.Get(ctx, name, metav1.GetOptions{})
	}
	return err
}

// RequestCounter counts the HTTP requests of every client built with its
// Option (API requests; a conversion webhook called from the client is not
// one). The zero value is ready to use and safe for concurrent use.
type RequestCounter struct{ n atomic.Int64 }

// Option makes New's clients count their requests in c.
func (c *RequestCounter) Option() Option {
	return func(cfg *rest.Config) { cfg.Wrap(c.wrap) }
}

// Count is the number of requests sent so far.
func (c *RequestCounter) Count() int64 { return c.n.Load() }

func (c *RequestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return countingTransport{n: &c.n, rt: rt}
}

type countingTransport struct {
	n  *atomic.Int64
	rt http.RoundTripper
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.rt.RoundTrip(r)
}
