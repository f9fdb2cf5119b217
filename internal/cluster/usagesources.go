package cluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/crdversion/kubectl-crdversion/internal/managedfields"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// IdentityLeaseSelector selects the identity leases kube-apiservers hold
// in kube-system, one per instance.
const IdentityLeaseSelector = "apiserver.kubernetes.io/identity=kube-apiserver"

// metricsTimeout bounds one read of an instance's /metrics, and
// metricsDialTimeout the connection to it: an endpoint address that drops
// packets must not hold the check for minutes.
const (
	metricsTimeout     = 30 * time.Second
	metricsDialTimeout = 5 * time.Second
)

// Instances finds the API server instances: the identity leases in
// kube-system (label apiserver.kubernetes.io/identity=kube-apiserver; one
// per kube-apiserver, renewed every 10 s) and the ready addresses of the
// default/kubernetes Service's EndpointSlices (each instance's advertise
// address and secure port), matched by usage.MatchInstances. When the
// cluster has one instance, it is read through the kubeconfig's server
// (Via), since its endpoint address (a node's internal address) is often
// not reachable from where kubectl runs. Needs list on leases in
// kube-system and on endpointslices in default; what cannot be read is in
// the set's Unseen.
func (c *Client) Instances(ctx context.Context) usage.InstanceSet {
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return usage.InstanceSet{Unseen: []string{err.Error()}}
	}
	var leases []usage.IdentityLease
	ll, leasesErr := cs.CoordinationV1().Leases(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: IdentityLeaseSelector})
	if leasesErr == nil {
		for _, l := range ll.Items {
			il := usage.IdentityLease{Name: l.Name, Hostname: l.Labels["kubernetes.io/hostname"], PeerAddress: l.Annotations["kubernetes.io/peer-advertise-address"]}
			if l.Spec.HolderIdentity != nil {
				il.HolderIdentity = *l.Spec.HolderIdentity
			}
			if l.Spec.RenewTime != nil {
				il.RenewTime = l.Spec.RenewTime.Time
			}
			leases = append(leases, il)
		}
	}
	var endpoints []usage.Endpoint
	sl, endpointsErr := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kubernetes"})
	if endpointsErr == nil {
		for _, s := range sl.Items {
			port := int32(443)
			for _, p := range s.Ports {
				if p.Port != nil && (p.Name == nil || *p.Name == "https" || len(s.Ports) == 1) {
					port = *p.Port
				}
			}
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && !*e.Conditions.Ready {
					continue
				}
				for _, a := range e.Addresses {
					ep := usage.Endpoint{Address: net.JoinHostPort(a, strconv.Itoa(int(port)))}
					if e.Hostname != nil {
						ep.Hostname = *e.Hostname
					}
					if e.NodeName != nil {
						ep.NodeName = *e.NodeName
					}
					endpoints = append(endpoints, ep)
				}
			}
		}
	}
	set := usage.MatchInstances(leases, leasesErr, endpoints, endpointsErr, time.Now())
	if len(set.Instances) == 1 && len(set.Unseen) == 0 {
		set.Instances[0].Via = "the kubeconfig's server " + c.config.Host
	}
	return set
}

// ReadMetrics reads one API server instance's /metrics: at its own address
// with the kubeconfig's credentials, CA and TLS server name (the
// kubeconfig's tls-server-name, else its server's host name), or through
// the kubeconfig's server when in.Via is set. Needs get on the
// non-resource URL /metrics. Errors are *usage.ReadError.
func (c *Client) ReadMetrics(ctx context.Context, in usage.Instance) (*usage.Metrics, error) {
	cfg := rest.CopyConfig(c.config)
	if in.Via == "" {
		if cfg.ServerName == "" {
			u, err := url.Parse(cfg.Host)
			if err != nil {
				return nil, &usage.ReadError{Err: err}
			}
			cfg.ServerName = u.Hostname()
		}
		cfg.Host = "https://" + in.Address
		cfg.APIPath = ""
		dialer := &net.Dialer{Timeout: metricsDialTimeout}
		cfg.Dial = dialer.DialContext
	}
	cfg.Timeout = metricsTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, &usage.ReadError{Err: err}
	}
	start := time.Now()
	body, err := dc.RESTClient().Get().AbsPath("/metrics").Stream(ctx)
	if err != nil {
		return nil, &usage.ReadError{Err: err, Forbidden: apierrors.IsForbidden(err)}
	}
	defer body.Close()
	m, err := usage.ParseMetrics(body, start)
	if err != nil {
		return nil, &usage.ReadError{Err: err}
	}
	return m, nil
}

// Prometheus is a Prometheus HTTP API client (the official Go client,
// github.com/prometheus/client_golang/api) as a usage.PromQuerier.
type Prometheus struct {
	// Name names the server for people: "Prometheus URL" or "Prometheus
	// service NAMESPACE/NAME:PORT".
	Name string
	api  promv1.API
}

// Query evaluates an instant query at ts; a query the server rejects, or
// an unreachable server, is an error.
func (p *Prometheus) Query(ctx context.Context, query string, ts time.Time) (model.Value, error) {
	v, _, err := p.api.Query(ctx, query, ts)
	return v, err
}

// NewPrometheus is a client of the Prometheus server at rawURL (http or
// https, with any path prefix). It fails on a URL that is not absolute
// http(s). It does not contact the server.
func NewPrometheus(rawURL string) (*Prometheus, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--prometheus-url %q is not an http(s) URL, such as http://prometheus.monitoring:9090", rawURL)
	}
	client, err := api.NewClient(api.Config{Address: rawURL})
	if err != nil {
		return nil, err
	}
	return &Prometheus{Name: "Prometheus " + rawURL, api: promv1.NewAPI(client)}, nil
}

// ParseServiceRef parses NAMESPACE/[SCHEME:]NAME[:PORT], the way the API
// server's service proxy names a service port
// (/api/v1/namespaces/NAMESPACE/services/[SCHEME:]NAME[:PORT]/proxy/).
func ParseServiceRef(ref string) (namespace, service string, err error) {
	ns, svc, ok := strings.Cut(ref, "/")
	bad := func() error {
		return fmt.Errorf("--prometheus-service %q is not NAMESPACE/NAME:PORT (for example monitoring/prometheus-k8s:9090, or monitoring/https:prometheus:9091 for TLS)", ref)
	}
	if !ok || ns == "" || svc == "" || strings.Contains(svc, "/") {
		return "", "", bad()
	}
	parts := strings.Split(svc, ":")
	if len(parts) > 3 || slicesContainsEmpty(parts) {
		return "", "", bad()
	}
	return ns, svc, nil
}

func slicesContainsEmpty(ss []string) bool {
	for _, s := range ss {
		if s == "" {
			return true
		}
	}
	return false
}

// PrometheusThroughService is a client of the Prometheus server behind the
// Service ref (NAMESPACE/[SCHEME:]NAME[:PORT]) through the API server's
// service proxy, with the kubeconfig's credentials: for clusters whose
// Prometheus is not reachable from where kubectl runs. Needs get on
// services/proxy in that namespace. It does not contact the server.
func (c *Client) PrometheusThroughService(ref string) (*Prometheus, error) {
	ns, svc, err := ParseServiceRef(ref)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(c.config)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(c.config.Host, "/")
	if !strings.Contains(base, "://") {
		base = "https://" + base
	}
	address := fmt.Sprintf("%s/api/v1/namespaces/%s/services/%s/proxy", base, url.PathEscape(ns), url.PathEscape(svc))
	client, err := api.NewClient(api.Config{Address: address, RoundTripper: rt})
	if err != nil {
		return nil, err
	}
	return &Prometheus{Name: "Prometheus service " + ref, api: promv1.NewAPI(client)}, nil
}

// ManagedFieldsSource is the managedFields source of usage.Measure: it
// scans each CRD once and keeps the scan, so that a later step of the same
// run (retire's managedFields step) reads the same list (Scanned) instead
// of listing again.
type ManagedFieldsSource struct {
	c        *Client
	pageSize int64
	staleOf  map[string][]string

	mu    sync.Mutex
	scans map[string]*ManagedFieldsScan
}

// ManagedFieldsSource returns a source listing pageSize objects a page;
// staleOf maps a CRD name to the versions whose objects each scan also
// lists by name (see ScanManagedFields).
func (c *Client) ManagedFieldsSource(pageSize int64, staleOf map[string][]string) *ManagedFieldsSource {
	return &ManagedFieldsSource{c: c, pageSize: pageSize, staleOf: staleOf, scans: map[string]*ManagedFieldsScan{}}
}

// Writers implements usage.ManagedFieldsReader: the CRD of gvr (named
// RESOURCE.GROUP) is read and its objects scanned once per source.
func (s *ManagedFieldsSource) Writers(ctx context.Context, gvr schema.GroupVersionResource) ([]managedfields.Writer, int, error) {
	name := gvr.Resource + "." + gvr.Group
	s.mu.Lock()
	defer s.mu.Unlock()
	scan := s.scans[name]
	if scan == nil {
		crd, err := s.c.CRDs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, 0, err
		}
		if scan, err = s.c.ScanManagedFields(ctx, crd, s.staleOf[name], s.pageSize); err != nil {
			return nil, 0, err
		}
		s.scans[name] = scan
	}
	return scan.Writers.Of(gvr.GroupVersion().String()), scan.Writers.Objects, nil
}

// Scanned is the scan of the CRD named crdName made by Writers, nil when
// none was made.
func (s *ManagedFieldsSource) Scanned(crdName string) *ManagedFieldsScan {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scans[crdName]
}
