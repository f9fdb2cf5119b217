package usage

import (
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var gvr = schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}

// metrics is shaped like a kube-apiserver v1.37 /metrics excerpt.
func metrics(listV1, getV1, listV2 int, watchesV1 int, deprecated bool, start string) string {
	var b strings.Builder
	b.WriteString(`# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
`)
	line := func(verb, version, code string, n int) {
		if n > 0 {
			b.WriteString(`apiserver_request_total{code="` + code + `",component="apiserver",dry_run="",group="stable.example.com",resource="crontabs",scope="namespace",subresource="",verb="` + verb + `",version="` + version + `"} ` + strconv.Itoa(n) + "\n")
		}
	}
	line("LIST", "v1", "200", listV1)
	line("GET", "v1", "200", getV1-getV1/2)
	line("GET", "v1", "404", getV1/2)
	line("LIST", "v2", "200", listV2)
	b.WriteString(`apiserver_request_total{code="200",component="apiserver",dry_run="",group="other.example.com",resource="crontabs",scope="namespace",subresource="",verb="LIST",version="v1"} 99
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 7
# HELP apiserver_longrunning_requests [ALPHA] Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.
# TYPE apiserver_longrunning_requests gauge
apiserver_longrunning_requests{component="apiserver",group="stable.example.com",resource="crontabs",scope="cluster",subresource="",verb="WATCH",version="v1"} ` + strconv.Itoa(watchesV1) + `
apiserver_longrunning_requests{component="apiserver",group="stable.example.com",resource="crontabs",scope="cluster",subresource="",verb="WATCH",version="v2"} 3
`)
	if deprecated {
		b.WriteString(`# HELP apiserver_requested_deprecated_apis [STABLE] Gauge of deprecated APIs that have been requested, broken out by API group, version, resource, subresource, and removed_release.
# TYPE apiserver_requested_deprecated_apis gauge
apiserver_requested_deprecated_apis{group="stable.example.com",removed_release="",resource="crontabs",subresource="",version="v1"} 1
`)
	}
	if start != "" {
		b.WriteString("# HELP process_start_time_seconds [ALPHA] Start time of the process since unix epoch in seconds.\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds " + start + "\n")
	}
	return b.String()
}

func parse(t *testing.T, text string, at time.Time) *Snapshot {
	t.Helper()
	s, err := Parse(strings.NewReader(text), gvr, at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParse(t *testing.T) {
	s := parse(t, metrics(4, 6, 100, 2, true, "1.7e+09"), time.Unix(0, 0))
	if want := map[string]int64{"LIST": 4, "GET": 6}; !maps.Equal(s.Requests, want) {
		t.Errorf("Requests = %v, want %v (codes summed, other groups and versions left out)", s.Requests, want)
	}
	if want := map[string]int64{"WATCH": 2}; !maps.Equal(s.Open, want) {
		t.Errorf("Open = %v, want %v", s.Open, want)
	}
	if !s.DeprecatedRequested || !s.HasRequestMetric {
		t.Errorf("DeprecatedRequested %v HasRequestMetric %v, want both true", s.DeprecatedRequested, s.HasRequestMetric)
	}
	if got := s.ServerStart.Unix(); got != 1700000000 {
		t.Errorf("ServerStart = %d, want 1700000000", got)
	}

	empty := parse(t, "# nothing here\n", time.Unix(0, 0))
	if empty.HasRequestMetric || len(empty.Requests) != 0 || !empty.ServerStart.IsZero() {
		t.Errorf("empty text: %+v", empty)
	}
	if _, err := Parse(strings.NewReader("apiserver_request_total{verb=\"GET\" 1\n"), gvr, time.Now()); err == nil {
		t.Error("a malformed text parsed without error")
	}
}

func TestCompare(t *testing.T) {
	t0 := time.Unix(1000, 0)
	t1 := t0.Add(10 * time.Second)
	for _, tc := range []struct {
		name          string
		first, second string
		single        bool
		verdict       Verdict
		window        map[string]int64
		evidence      string
	}{
		{name: "history only", first: metrics(4, 6, 0, 0, false, "1.7e+09"), second: metrics(4, 6, 50, 0, false, "1.7e+09"),
			verdict: NotInUse, evidence: "no request to stable.example.com/v1 crontabs in the last 10s"},
		{name: "live lists", first: metrics(4, 6, 0, 0, false, "1.7e+09"), second: metrics(9, 6, 0, 0, false, "1.7e+09"),
			verdict: InUse, window: map[string]int64{"LIST": 5}, evidence: "requests to stable.example.com/v1 crontabs in the last 10s: LIST 5"},
		{name: "open watch, no finished request", first: metrics(4, 6, 0, 1, false, "1.7e+09"), second: metrics(4, 6, 0, 1, false, "1.7e+09"),
			verdict: InUse, evidence: "open now: WATCH 1"},
		{name: "restart between samples", first: metrics(4, 6, 0, 0, false, "1.7e+09"), second: metrics(1, 0, 0, 0, false, "1.8e+09"),
			verdict: Unknown, evidence: "started at different times"},
		{name: "counter went down without a start time", first: metrics(4, 6, 0, 0, false, ""), second: metrics(1, 6, 0, 0, false, ""),
			verdict: Unknown, evidence: "counter went down"},
		{name: "single sample, history only", first: metrics(4, 6, 0, 0, true, "1.7e+09"), single: true,
			verdict: NotInUse, evidence: "lifetime since the API server started at 2023-11-14T22:13:20Z: GET 6, LIST 4"},
		{name: "single sample, a watch", first: metrics(0, 0, 0, 2, false, "1.7e+09"), single: true,
			verdict: InUse, evidence: "no request at all since"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var second *Snapshot
			if !tc.single {
				second = parse(t, tc.second, t1)
			}
			r := Compare(gvr, parse(t, tc.first, t0), second)
			if r.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s (%+v)", r.Verdict, tc.verdict, r)
			}
			if tc.window != nil && !maps.Equal(r.Window, tc.window) {
				t.Errorf("window %v, want %v", r.Window, tc.window)
			}
			ev := strings.Join(r.Evidence(), "\n")
			if !strings.Contains(ev, tc.evidence) {
				t.Errorf("evidence lacks %q:\n%s", tc.evidence, ev)
			}
			if !strings.Contains(ev, "number of API server instances is unknown") {
				t.Errorf("evidence does not say that counters are per instance:\n%s", ev)
			}
		})
	}
}

func TestEvidenceManyAPIServers(t *testing.T) {
	r := Compare(gvr, parse(t, metrics(1, 0, 0, 0, false, "1"), time.Unix(0, 0)), nil)
	r.APIServers = 3
	if ev := strings.Join(r.Evidence(), "\n"); !strings.Contains(ev, "3 API server instances") {
		t.Errorf("evidence:\n%s", ev)
	}
}
