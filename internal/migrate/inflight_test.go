package migrate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// landingServer stands for an API server that applies each PATCH and
// then, its answer lost, never replies (as when the client is
// interrupted after the write was stored): the object's resourceVersion
// becomes "2". GET answers with the object as stored; an object named
// "unreadable" answers 503.
type landingServer struct {
	mu      sync.Mutex
	patched map[string]bool
	got     chan string   // the name of each PATCH, once applied
	release chan struct{} // closed when the test ends
}

func (s *landingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	switch r.Method {
	case http.MethodPatch:
		s.mu.Lock()
		s.patched[name] = true
		s.mu.Unlock()
		s.got <- name
		select { // until the client goes away; the write stays
		case <-r.Context().Done():
		case <-s.release:
		}
	case http.MethodGet:
		if name == "unreadable" {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		s.mu.Lock()
		rv := "1"
		if s.patched[name] {
			rv = "2"
		}
		s.mu.Unlock()
		m := metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv}}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m)
	}
}

// TestInterruptedWritesAreSettled: a run interrupted while its writes were
// in flight reported fewer objects rewritten than it had rewritten (41 of
// 43, issue 33): the API server applied two writes after the client
// stopped waiting, and the run counted neither. settle reads each such
// object back: a changed resourceVersion is counted as rewritten, an
// unchanged one is not counted, and one that cannot be read is counted
// as unknown with a warning that it may have landed.
func TestInterruptedWritesAreSettled(t *testing.T) {
	srv := &landingServer{patched: map[string]bool{}, got: make(chan string, 4), release: make(chan struct{})}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer close(srv.release)
	md, err := metadata.NewForConfig(&rest.Config{Host: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{engine: &Engine{Metadata: md}, res: &Result{}, namespaced: true, limiter: fixedLimiter(4),
		gvr:  schema.GroupVersionResource{Group: "stable.example.com", Version: "v2", Resource: "crontabs"},
		opts: Options{Concurrency: 4, Retries: 2, RetryDelay: time.Millisecond, Unreachable: time.Minute}}
	ctx, cancel := context.WithCancel(context.Background())
	items := []item{{namespace: "a", name: "landed", uid: "uid-landed", resourceVersion: "1"},
		{namespace: "a", name: "unreadable", uid: "uid-unreadable", resourceVersion: "1"}}
	var wg sync.WaitGroup
	for _, it := range items {
		wg.Go(func() {
			if o, msg := r.migrate(ctx, it); o != "" || msg != "" {
				t.Errorf("%s: outcome %q %q, want none before settle", it.name, o, msg)
			}
		})
	}
	for range items { // both writes applied, their answers not yet sent
		<-srv.got
	}
	cancel()
	wg.Wait()
	// A write never sent is not in flight: the run was already over.
	if o, _ := r.migrate(ctx, item{namespace: "a", name: "never-sent", uid: "uid-never-sent", resourceVersion: "1"}); o != "" {
		t.Errorf("an object after the interrupt: outcome %q", o)
	}
	if len(r.inFlight) != 2 {
		t.Fatalf("in flight: %+v, want the two objects whose writes were sent", r.inFlight)
	}
	r.settle(ctx)
	if r.counts.Rewritten != 1 || r.counts.Total != 1 || r.res.InFlightUnknown != 1 {
		t.Errorf("counts %+v, in flight unknown %d; want 1 rewritten of 1, 1 unknown", r.counts, r.res.InFlightUnknown)
	}
	if len(r.res.Warnings) != 1 || !strings.Contains(r.res.Warnings[0], "1 write(s) were in flight when the run was interrupted") {
		t.Errorf("warnings %q", r.res.Warnings)
	}
}
