package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
)

// fakeAPI is an HTTP stand-in for the API server, for the engine's control
// flow only: one namespaced CRD crontabs.fake.example.com stored at v1,
// n objects listed in one page, PATCHes that take delay each (plus
// perInflight for each write in flight, as on a server whose work queues)
// and answer a
// new resourceVersion — the first tooMany with 429 and Retry-After: 1 —
// and APF headers naming the exempt priority level on every answer.
type fakeAPI struct {
	n           int
	delay       time.Duration
	perInflight time.Duration
	tooMany     int64
	inflight    atomic.Int64
	maxIn       atomic.Int64
	patches     atomic.Int64
}

func (f *fakeAPI) serve(t *testing.T) *rest.Config {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, "fs-exempt")
		w.Header().Set(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, "pl-exempt")
		switch {
		case r.URL.Path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.fake.example.com":
			fmt.Fprint(w, `{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1","metadata":{"name":"crontabs.fake.example.com","uid":"crd-uid","generation":1},
				"spec":{"group":"fake.example.com","scope":"Namespaced","names":{"plural":"crontabs","kind":"CronTab"},"versions":[{"name":"v1","served":true,"storage":true}]},
				"status":{"storedVersions":["v1"]}}`)
		case r.URL.Path == "/apis/fake.example.com/v1/crontabs" && r.Method == http.MethodGet:
			var items []string
			for i := 0; i < f.n; i++ {
				items = append(items, fmt.Sprintf(`{"metadata":{"name":"o%d","namespace":"ns","uid":"u%d","resourceVersion":"1"}}`, i, i))
			}
			fmt.Fprintf(w, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[%s]}`, strings.Join(items, ","))
		case strings.HasPrefix(r.URL.Path, "/apis/fake.example.com/v1/namespaces/ns/crontabs/") && r.Method == http.MethodPatch:
			in := f.inflight.Add(1)
			defer f.inflight.Add(-1)
			for {
				m := f.maxIn.Load()
				if in <= m || f.maxIn.CompareAndSwap(m, in) {
					break
				}
			}
			if f.patches.Add(1) <= f.tooMany {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`)
				return
			}
			// The server's work for one write.
			<-time.After(f.delay + time.Duration(in)*f.perInflight)
			name := strings.TrimPrefix(r.URL.Path, "/apis/fake.example.com/v1/namespaces/ns/crontabs/")
			fmt.Fprintf(w, `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":%q,"namespace":"ns","resourceVersion":"2"}}`, name)
		case r.URL.Path == "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas":
			fmt.Fprint(w, `{"kind":"FlowSchemaList","apiVersion":"flowcontrol.apiserver.k8s.io/v1","items":[{"metadata":{"name":"exempt","uid":"fs-exempt"}}]}`)
		case r.URL.Path == "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations":
			fmt.Fprint(w, `{"kind":"PriorityLevelConfigurationList","apiVersion":"flowcontrol.apiserver.k8s.io/v1","items":[{"metadata":{"name":"exempt","uid":"pl-exempt"},"spec":{"type":"Exempt"}}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return &rest.Config{Host: s.URL, QPS: -1}
}

func (f *fakeAPI) run(t *testing.T, opts Options) *Result {
	t.Helper()
	cfg := f.serve(t)
	flow := cluster.NewFlowControl()
	cluster.WithFlowControl(flow)(cfg)
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{CRDs: crds.CustomResourceDefinitions(), Metadata: md, FlowControl: flow}
	opts.NoTrim = true
	res, err := e.Run(context.Background(), "crontabs.fake.example.com", opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rewritten != int64(f.n) || res.Failed != 0 {
		t.Fatalf("counts %+v, failures %v", res.Counts, res.Failures)
	}
	return res
}

// TestFixedConcurrency: --max-speed (MaxLatency 0) keeps Concurrency
// writes in flight, and the report says so.
func TestFixedConcurrency(t *testing.T) {
	f := &fakeAPI{n: 200, delay: 5 * time.Millisecond}
	opts := DefaultOptions()
	opts.Concurrency, opts.MaxLatency = 8, 0
	res := f.run(t, opts)
	if got := f.maxIn.Load(); got != 8 {
		t.Errorf("%d writes in flight at most, want 8", got)
	}
	if c := res.Concurrency; c == nil || c.Mode != "fixed" || c.Max != 8 || c.FinalLimit != 8 || c.MeanLimit != 8 || c.WriteLatencyP50Seconds <= 0 {
		t.Errorf("concurrency report %+v", res.Concurrency)
	}
}

// TestAdaptiveLimitWithinTheBudget: on a server whose latency grows with
// the writes in flight (4 ms each), a budget of 5 ms holds the run near
// its start — the budget becomes twice the lowest latency seen, that of
// about 4 writes in flight, so about 8 in flight — far below --concurrency
// (64, which --max-speed would keep in flight at 256 ms each); with a
// budget far above the writes' latency it raises the limit above its
// start.
func TestAdaptiveLimitWithinTheBudget(t *testing.T) {
	loaded := &fakeAPI{n: 600, perInflight: 4 * time.Millisecond}
	opts := DefaultOptions()
	opts.Concurrency, opts.MaxLatency = 64, 5*time.Millisecond
	res := loaded.run(t, opts)
	if c := res.Concurrency; c == nil || c.Mode != "adaptive" || c.FinalLimit > 16 || c.MeanLimit > 16 || c.MaxLatencySeconds != 0.005 {
		t.Errorf("concurrency report %+v, want adaptive with the limit at most 16", res.Concurrency)
	}
	if got := loaded.maxIn.Load(); got > 20 {
		t.Errorf("%d writes in flight at most over the budget, want at most 20", got)
	}

	fast := &fakeAPI{n: 3000, delay: 2 * time.Millisecond}
	opts.MaxLatency = time.Minute
	res = fast.run(t, opts)
	if got := fast.maxIn.Load(); got <= adaptiveInitialLimit {
		t.Errorf("%d writes in flight at most within a generous budget, want more than the start, %d (limit report %+v)", got, adaptiveInitialLimit, res.Concurrency)
	}
}

// TestSlowByNatureNotHeldToOne: writes that take 20 ms each whatever the
// load (a conversion webhook) under a budget of 1 ms are not held to one
// in flight: the budget is at least twice the lowest latency the run saw.
// (Without that floor the limit fell to 1 and stayed there, and a run
// behind a 250 ms webhook took minutes instead of seconds.)
func TestSlowByNatureNotHeldToOne(t *testing.T) {
	slow := &fakeAPI{n: 1500, delay: 20 * time.Millisecond}
	opts := DefaultOptions()
	opts.Concurrency, opts.MaxLatency = 64, time.Millisecond
	res := slow.run(t, opts)
	if got := slow.maxIn.Load(); got <= adaptiveInitialLimit {
		t.Errorf("%d writes in flight at most, want more than the start, %d (limit report %+v)", got, adaptiveInitialLimit, res.Concurrency)
	}
}

// TestTooManyRequestsCountedNotFailed: 429 answers are retried (by
// client-go after Retry-After) and counted; no object fails. The run
// lands in the exempt priority level, so it warns.
func TestTooManyRequestsCountedNotFailed(t *testing.T) {
	f := &fakeAPI{n: 20, delay: time.Millisecond, tooMany: 3}
	opts := DefaultOptions()
	opts.Concurrency = 4
	var mu sync.Mutex
	var last Progress
	opts.Progress = func(p Progress) {
		mu.Lock()
		last = p
		mu.Unlock()
	}
	res := f.run(t, opts)
	if res.TooManyRequests != 3 {
		t.Errorf("TooManyRequests = %d, want 3", res.TooManyRequests)
	}
	want := &PriorityAndFairness{FlowSchema: "exempt", FlowSchemaUID: "fs-exempt", PriorityLevel: "exempt", PriorityLevelUID: "pl-exempt", Exempt: true}
	if got, _ := json.Marshal(res.PriorityAndFairness); string(got) != string(must(json.Marshal(want))) {
		t.Errorf("PriorityAndFairness = %s", got)
	}
	if len(res.Warnings) != 1 || res.Warnings[0] != ExemptWarning {
		t.Errorf("warnings %q", res.Warnings)
	}
	mu.Lock()
	defer mu.Unlock()
	if last.Done != 20 || last.PriorityLevel != "exempt" || !last.Exempt || last.TooManyRequests != 3 || last.Limit < 1 {
		t.Errorf("last progress %+v", last)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
