package cluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// fakeAPF answers GET /api/v1/namespaces/default with the APF headers of
// a landing, the first tooMany times with 429 and Retry-After: 1, and the
// lists of flowschemas and prioritylevelconfigurations (or 403 when
// forbidden).
func fakeAPF(t *testing.T, tooMany int64, forbidden bool) *httptest.Server {
	var answered atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, "fs-uid")
		w.Header().Set(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, "pl-uid")
		switch {
		case strings.HasPrefix(r.URL.Path, "/apis/flowcontrol.apiserver.k8s.io/v1/") && forbidden:
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"forbidden"}`))
		case r.URL.Path == "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas":
			_, _ = w.Write([]byte(`{"kind":"FlowSchemaList","apiVersion":"flowcontrol.apiserver.k8s.io/v1","items":[
				{"metadata":{"name":"other","uid":"other-uid"}},{"metadata":{"name":"global-default","uid":"fs-uid"}}]}`))
		case r.URL.Path == "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations":
			_, _ = w.Write([]byte(`{"kind":"PriorityLevelConfigurationList","apiVersion":"flowcontrol.apiserver.k8s.io/v1","items":[
				{"metadata":{"name":"exempt","uid":"exempt-uid"},"spec":{"type":"Exempt"}},{"metadata":{"name":"global-default","uid":"pl-uid"},"spec":{"type":"Limited"}}]}`))
		case r.URL.Path == "/api/v1/namespaces/default":
			if answered.Add(1) <= tooMany {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429,"message":"too many requests"}`))
				return
			}
			_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// TestFlowControlCountsRetried429s: client-go retries a 429 after its
// Retry-After and returns only the final answer; the transport wrapper
// sees and counts each 429, and records the landing from the headers.
func TestFlowControlCountsRetried429s(t *testing.T) {
	s := fakeAPF(t, 2, false)
	f := NewFlowControl()
	cfg := &rest.Config{Host: s.URL}
	WithFlowControl(f)(cfg)
	client := kubernetes.NewForConfigOrDie(cfg)
	if _, err := client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("the GET after two 429s: %v", err)
	}
	if got := f.TooManyRequests(); got != 2 {
		t.Errorf("TooManyRequests = %d, want 2", got)
	}
	l, ok := f.Latest()
	if !ok || l != (Landing{FlowSchemaUID: "fs-uid", PriorityLevelUID: "pl-uid"}) {
		t.Errorf("Latest = %+v, %v", l, ok)
	}
	if n := f.Landings()[l]; n != 3 {
		t.Errorf("%d responses counted at %+v, want 3", n, l)
	}
	named := f.Resolve(context.Background(), l)
	if named.FlowSchema != "global-default" || named.PriorityLevel != "global-default" || named.Exempt || named.Unresolved != "" {
		t.Errorf("Resolve = %+v", named)
	}
	if ex := f.Resolve(context.Background(), Landing{FlowSchemaUID: "other-uid", PriorityLevelUID: "exempt-uid"}); !ex.Exempt || ex.PriorityLevel != "exempt" {
		t.Errorf("Resolve(exempt) = %+v", ex)
	}
}

// TestFlowControlUnresolved: without permission to list the objects the
// UIDs stay and Unresolved says why; responses without the headers (APF
// off) record no landing.
func TestFlowControlUnresolved(t *testing.T) {
	s := fakeAPF(t, 0, true)
	f := NewFlowControl()
	cfg := &rest.Config{Host: s.URL}
	WithFlowControl(f)(cfg)
	named := f.Resolve(context.Background(), Landing{FlowSchemaUID: "fs-uid", PriorityLevelUID: "pl-uid"})
	if named.FlowSchema != "" || named.PriorityLevel != "" || !strings.Contains(named.Unresolved, "not allowed to list flowschemas.flowcontrol.apiserver.k8s.io") ||
		!strings.Contains(named.Unresolved, "prioritylevelconfigurations") {
		t.Errorf("Resolve without permission = %+v", named)
	}
	g := NewFlowControl()
	g.Observe(&http.Response{StatusCode: http.StatusOK, Header: http.Header{}})
	if _, ok := g.Latest(); ok || g.TooManyRequests() != 0 {
		t.Error("a response without APF headers recorded a landing")
	}
}
