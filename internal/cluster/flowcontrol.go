package cluster

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/client-go/rest"
)

// FlowControl watches the responses to one client's requests for what API
// Priority and Fairness (APF) did with them: the flow schema and priority
// level each request was classified into (the response headers
// X-Kubernetes-PF-FlowSchema-UID and X-Kubernetes-PF-PriorityLevel-UID,
// which kube-apiserver sets on every request it classifies) and how many
// answers were 429 Too Many Requests (APF rejects a request whose queue is
// full or whose wait ran out; client-go retries such answers itself after
// their Retry-After, so they are counted here, at the transport, where no
// retry hides them). Give it to New with WithFlowControl. Safe for
// concurrent use.
type FlowControl struct {
	tooMany atomic.Int64

	mu      sync.Mutex
	latest  Landing
	landed  map[Landing]int64
	flowcfg *rest.Config // set by New, for Resolve
}

// Landing is where APF put a request: the UIDs of a FlowSchema and a
// PriorityLevelConfiguration (flowcontrol.apiserver.k8s.io/v1). Both are
// empty for a response without the headers (an API server with APF off,
// or a request answered before classification, such as a health check).
type Landing struct {
	FlowSchemaUID    string
	PriorityLevelUID string
}

// NewFlowControl returns a FlowControl that has seen nothing yet.
func NewFlowControl() *FlowControl {
	return &FlowControl{landed: map[Landing]int64{}}
}

// WithFlowControl makes every request of the client go through f's
// transport wrapper and lets f resolve UIDs with the client's config.
func WithFlowControl(f *FlowControl) Option {
	return func(c *rest.Config) {
		c.Wrap(f.WrapTransport)
		f.mu.Lock()
		f.flowcfg = c
		f.mu.Unlock()
	}
}

// WrapTransport returns rt, observing every response (for
// rest.Config.Wrap).
func (f *FlowControl) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return &flowTransport{next: rt, f: f}
}

type flowTransport struct {
	next http.RoundTripper
	f    *FlowControl
}

func (t *flowTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if resp != nil {
		t.f.Observe(resp)
	}
	return resp, err
}

// Observe records one response: its APF headers, and whether it is a 429.
func (f *FlowControl) Observe(resp *http.Response) {
	if resp.StatusCode == http.StatusTooManyRequests {
		f.tooMany.Add(1)
	}
	l := Landing{
		FlowSchemaUID:    resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID),
		PriorityLevelUID: resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID),
	}
	if l == (Landing{}) {
		return
	}
	f.mu.Lock()
	f.latest = l
	f.landed[l]++
	f.mu.Unlock()
}

// TooManyRequests is the number of 429 answers seen.
func (f *FlowControl) TooManyRequests() int64 { return f.tooMany.Load() }

// Latest is where the latest classified response landed, false before any.
func (f *FlowControl) Latest() (Landing, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.latest, f.latest != Landing{}
}

// Landings counts the responses per landing seen so far.
func (f *FlowControl) Landings() map[Landing]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[Landing]int64, len(f.landed))
	for l, n := range f.landed {
		out[l] = n
	}
	return out
}

// Named is a Landing with the names of its objects, as far as they could
// be read.
type Named struct {
	Landing
	// FlowSchema and PriorityLevel are the objects' names; empty when they
	// could not be read (Unresolved says why).
	FlowSchema    string
	PriorityLevel string
	// Exempt is true when the priority level is of type Exempt: the
	// requests bypass APF's queues and limits. Known only when
	// PriorityLevel is.
	Exempt bool
	// Unresolved says what could not be read and why, or is empty.
	Unresolved string
}

// Resolve names the objects of l by listing flowschemas and
// prioritylevelconfigurations (flowcontrol.apiserver.k8s.io/v1), which
// needs list on both; what may not be read, or is not found (an object
// deleted since), stays unnamed and Unresolved says why.
func (f *FlowControl) Resolve(ctx context.Context, l Landing) Named {
	out := Named{Landing: l}
	f.mu.Lock()
	cfg := f.flowcfg
	f.mu.Unlock()
	if cfg == nil {
		out.Unresolved = "no client to read flowschemas and prioritylevelconfigurations"
		return out
	}
	client, err := flowcontrolclient.NewForConfig(cfg)
	if err != nil {
		out.Unresolved = err.Error()
		return out
	}
	var why []string
	if l.FlowSchemaUID != "" {
		list, err := client.FlowSchemas().List(ctx, metav1.ListOptions{})
		switch {
		case err != nil:
			why = append(why, "flow schema "+l.FlowSchemaUID+": "+unresolvedReason(err, "flowschemas"))
		default:
			for _, fs := range list.Items {
				if string(fs.UID) == l.FlowSchemaUID {
					out.FlowSchema = fs.Name
				}
			}
			if out.FlowSchema == "" {
				why = append(why, "flow schema "+l.FlowSchemaUID+": no FlowSchema has that uid (deleted since?)")
			}
		}
	}
	if l.PriorityLevelUID != "" {
		list, err := client.PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
		switch {
		case err != nil:
			why = append(why, "priority level "+l.PriorityLevelUID+": "+unresolvedReason(err, "prioritylevelconfigurations"))
		default:
			for _, pl := range list.Items {
				if string(pl.UID) == l.PriorityLevelUID {
					out.PriorityLevel = pl.Name
					out.Exempt = pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt
				}
			}
			if out.PriorityLevel == "" {
				why = append(why, "priority level "+l.PriorityLevelUID+": no PriorityLevelConfiguration has that uid (deleted since?)")
			}
		}
	}
	for i, w := range why {
		if i > 0 {
			out.Unresolved += "; "
		}
		out.Unresolved += w
	}
	return out
}

func unresolvedReason(err error, resource string) string {
	if apierrors.IsForbidden(err) {
		return fmt.Sprintf("not allowed to list %s.flowcontrol.apiserver.k8s.io (kubectl get %s -o custom-columns=NAME:.metadata.name,UID:.metadata.uid names it, for someone who may)", resource, resource)
	}
	return fmt.Sprintf("listing %s.flowcontrol.apiserver.k8s.io failed: %v", resource, err)
}
