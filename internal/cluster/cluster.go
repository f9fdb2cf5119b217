// Package cluster is the one layer of kubectl crdversion that talks to the
// API server: it resolves a CRD from what the user typed, reads it, and counts
// its objects. Commands use it; the lifecycle package never does.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// Client reads CRDs and their objects. Build it with New.
type Client struct {
	CRDs     apiextensionsclient.CustomResourceDefinitionInterface
	Metadata metadata.Interface
	Dynamic  dynamic.Interface
	// FlowControl, when the client was built WithFlowControl, is that
	// FlowControl (set it here too).
	FlowControl *FlowControl
	getter      genericclioptions.RESTClientGetter
	config      *rest.Config
}

// Client-side rate limit of every command unless a command's flags say
// otherwise.
const (
	DefaultQPS   = 500
	DefaultBurst = 1000
)

// Option changes the client configuration New builds from.
type Option func(*rest.Config)

// WithRateLimit sets the client-side rate limit: qps requests per second
// with bursts of burst. A qps of 0 or less disables client-side limiting
// (the API server's priority and fairness still applies, and its 429
// answers are retried after their Retry-After).
func WithRateLimit(qps float32, burst int) Option {
	return func(c *rest.Config) {
		c.QPS, c.Burst = qps, burst
		if qps <= 0 {
			c.QPS = -1
		}
	}
}

// New builds a Client from kubectl-style connection flags. It does not
// contact the server.
func New(getter genericclioptions.RESTClientGetter, opts ...Option) (*Client, error) {
	cfg, err := getter.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		// client-go's default (5/s, burst 10) would take minutes over the
		// per-object checks of promote-storage; stay well above it and let
		// the API server's priority and fairness decide.
		cfg.QPS, cfg.Burst = DefaultQPS, DefaultBurst
	}
	for _, o := range opts {
		o(cfg)
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{CRDs: ext.CustomResourceDefinitions(), Metadata: md, Dynamic: dyn, getter: getter, config: cfg}, nil
}

// NotACRDError is returned by ResolveCRD when arg names nothing, or names a
// resource that is not defined by a CustomResourceDefinition (a built-in or
// aggregated API).
type NotACRDError struct {
	Arg string
	// Resource is the resource arg resolved to, when it resolved at all.
	Resource *schema.GroupResource
}

func (e *NotACRDError) Error() string {
	if e.Resource == nil {
		return fmt.Sprintf("no CustomResourceDefinition matches %q (tried a CRD name, a resource, a short name and a kind)", e.Arg)
	}
	group := e.Resource.Group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%q is the resource %s in API group %q, which is not defined by a CustomResourceDefinition", e.Arg, e.Resource.Resource, group)
}

// AmbiguousError is returned by ResolveCRD when arg names several CRDs.
type AmbiguousError struct {
	Arg     string
	Matches []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%q matches %d CustomResourceDefinitions (%s); name one of them in full", e.Arg, len(e.Matches), strings.Join(e.Matches, ", "))
}

// ResolveCRD finds the CRD that arg names, the way kubectl resolves a
// resource argument: a CRD name (crontabs.stable.example.com), or a resource,
// short name, singular or kind, optionally qualified by group or version and
// group (crontabs, ct, CronTab, crontab.stable.example.com,
// crontabs.v1.stable.example.com). CRDs are matched from the list of CRDs
// first, so that one the API server does not serve (not established, no
// served version) is found too; an argument that matches several CRDs is
// an *AmbiguousError rather than a silent pick. When CRDs may not be
// listed, discovery resolves the name. Errors from the server are returned
// unwrapped so that kubectl's error formatting applies; an argument that
// names no CRD gives *NotACRDError.
func (c *Client) ResolveCRD(ctx context.Context, arg string) (*apiextensionsv1.CustomResourceDefinition, error) {
	if strings.TrimSpace(arg) == "" {
		return nil, fmt.Errorf("a CustomResourceDefinition name is required")
	}
	arg, err := lifecycle.CRDArg(arg)
	if err != nil {
		return nil, err
	}
	if strings.Contains(arg, ".") {
		crd, err := c.CRDs.Get(ctx, arg, metav1.GetOptions{})
		if err == nil {
			return crd, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	list, err := c.CRDs.List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		matches := lifecycle.MatchCRDs(list.Items, arg)
		if len(matches) == 1 {
			return matches[0], nil
		}
		if len(matches) > 1 {
			var names []string
			for _, m := range matches {
				names = append(names, m.Name)
			}
			return nil, &AmbiguousError{Arg: arg, Matches: names}
		}
	case apierrors.IsForbidden(err):
		// Fall back to discovery, which every user may read.
	default:
		return nil, err
	}
	gr, err := c.resourceFor(arg)
	if err != nil {
		return nil, err
	}
	if gr == nil {
		return nil, &NotACRDError{Arg: arg}
	}
	crd, err := c.CRDs.Get(ctx, gr.Resource+"."+gr.Group, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && gr.Group == "") {
		return nil, &NotACRDError{Arg: arg, Resource: gr}
	}
	return crd, err
}

// resourceFor maps arg to a group/resource through discovery (with short
// names), first as a resource and then as a kind. It returns nil when
// nothing matches.
func (c *Client) resourceFor(arg string) (*schema.GroupResource, error) {
	mapper, err := c.getter.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	gvr, gr := schema.ParseResourceArg(strings.ToLower(arg))
	if gvr != nil {
		if found, err := mapper.ResourceFor(*gvr); err == nil {
			g := found.GroupResource()
			return &g, nil
		}
	}
	found, err := mapper.ResourceFor(gr.WithVersion(""))
	if err == nil {
		g := found.GroupResource()
		return &g, nil
	}
	if !meta.IsNoMatchError(err) && isConnectionOrServerError(err) {
		return nil, err
	}
	gvk, gk := schema.ParseKindArg(arg)
	if gvk != nil {
		if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			g := m.Resource.GroupResource()
			return &g, nil
		}
	}
	if m, err := mapper.RESTMapping(gk); err == nil {
		g := m.Resource.GroupResource()
		return &g, nil
	}
	return nil, nil
}

// isConnectionOrServerError tells errors of the server or the connection
// (which the user must see) from the mapper's complaints about an
// argument that names nothing (".crontabs", "a//b").
func isConnectionOrServerError(err error) bool {
	if _, ok := err.(apierrors.APIStatus); ok {
		return true
	}
	var urlErr *url.Error
	var netErr net.Error
	return errors.As(err, &urlErr) || errors.As(err, &netErr) || discovery.IsGroupDiscoveryFailedError(err)
}

// GVR is the resource of crd at version.
func GVR(crd *apiextensionsv1.CustomResourceDefinition, version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
}

// ChunkSize is the number of objects per list request (the limit of a
// paged list) when the user gives none (--chunk-size): the one default of
// every command that lists a CRD's objects, the same as kubectl get's
// --chunk-size default.
const ChunkSize = 500

// CountObjects counts the objects of crd in all namespaces through version,
// listing metadata only, pageSize objects per request (see EachObject).
func (c *Client) CountObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, pageSize int64) (int, error) {
	n := 0
	err := c.EachObject(ctx, crd, version, pageSize, func(string, string) error {
		n++
		return nil
	})
	return n, err
}

// ServerVersion is the API server's build version (GET /version, readable
// by every user), for example "v1.37.2": the version whose rules a dry run
// answered for.
func (c *Client) ServerVersion(ctx context.Context) (string, error) {
	disc, err := discovery.NewDiscoveryClientForConfig(c.config)
	if err != nil {
		return "", err
	}
	v, err := disc.ServerVersionWithContext(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the API server's version: %w", err)
	}
	// An unstamped build (an in-process or source-built API server)
	// says "v0.0.0-master+$Format:%H$"; its major and minor are right.
	if sv, err := utilversion.ParseSemantic(v.GitVersion); err == nil && sv.Major() > 0 {
		return v.GitVersion, nil
	}
	return fmt.Sprintf("v%s.%s", strings.TrimSuffix(v.Major, "+"), strings.TrimSuffix(v.Minor, "+")), nil
}
