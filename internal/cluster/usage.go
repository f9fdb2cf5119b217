package cluster

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// MetricsError is returned by ClientUsage when the API server's metrics
// cannot be read or are not an API server's (forbidden, absent, garbled).
type MetricsError struct{ Err error }

func (e *MetricsError) Error() string {
	return "the API server's metrics cannot be read: " + e.Err.Error()
}

func (e *MetricsError) Unwrap() error { return e.Err }

// ClientUsage measures how clients use gvr from the API server's /metrics:
// two samples window apart (one when window is 0), compared by
// usage.Compare, and the number of API server instances (endpoints of the
// default/kubernetes Service; 0 when they cannot be read). It sends no
// request to gvr itself. Reading /metrics needs `get` on the non-resource
// URL /metrics; an error reading or parsing it is a *MetricsError.
func (c *Client) ClientUsage(ctx context.Context, gvr schema.GroupVersionResource, window time.Duration) (usage.Report, error) {
	first, second, err := c.MetricsSamples(ctx, window)
	if err != nil {
		return usage.Report{}, err
	}
	r := usage.CompareMetrics(gvr, first, second)
	r.APIServers = c.APIServerCount(ctx)
	return r, nil
}

// MetricsSamples reads the API server's /metrics once, or twice window
// apart (second is nil when window is 0). Errors reading or parsing it are
// *MetricsError.
func (c *Client) MetricsSamples(ctx context.Context, window time.Duration) (first, second *usage.Metrics, err error) {
	if first, err = c.metrics(ctx); err != nil {
		return nil, nil, err
	}
	if window > 0 {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(window):
		}
		if second, err = c.metrics(ctx); err != nil {
			return nil, nil, err
		}
	}
	return first, second, nil
}

func (c *Client) metrics(ctx context.Context) (*usage.Metrics, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(c.config)
	if err != nil {
		return nil, err
	}
	start := time.Now() // the window runs from the start of one read to the start of the next
	body, err := dc.RESTClient().Get().AbsPath("/metrics").Stream(ctx)
	if err != nil {
		return nil, &MetricsError{Err: err}
	}
	defer body.Close()
	m, err := usage.ParseMetrics(body, start)
	if err != nil {
		return nil, &MetricsError{Err: err}
	}
	if !m.HasRequestMetric() {
		return nil, &MetricsError{Err: fmt.Errorf("/metrics has no apiserver_request_total")}
	}
	return m, nil
}

// APIServerCount is the number of API server instances: the unexpired
// identity leases kube-apiservers hold in kube-system (one per instance),
// else the ready endpoints of the default/kubernetes Service; 0 when
// neither can be read.
func (c *Client) APIServerCount(ctx context.Context) int {
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return 0
	}
	if leases, err := cs.CoordinationV1().Leases(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "apiserver.kubernetes.io/identity=kube-apiserver"}); err == nil {
		n := 0
		for _, l := range leases.Items {
			if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil ||
				time.Since(l.Spec.RenewTime.Time) < time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second {
				n++
			}
		}
		if n > 0 {
			return n
		}
	}
	slices, err := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kubernetes"})
	if err != nil {
		return 0
	}
	n := 0
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				n += len(e.Addresses)
			}
		}
	}
	return n
}
