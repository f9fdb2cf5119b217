package auditlog

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// micro is the API server's timestamp format (metav1.MicroTime).
const micro = "2006-01-02T15:04:05.000000Z07:00"

var gvr = schema.GroupVersionResource{Group: "stable.example.com", Version: "v1beta1", Resource: "crontabs"}

// event is one audit line shaped like kube-apiserver v1.37's JSON output.
func event(id, stage, verb, user, agent, group, version, resource, ns, name string, at time.Time) string {
	ref := ""
	if resource != "" {
		ref = fmt.Sprintf(`,"objectRef":{"resource":%q,"namespace":%q,"name":%q,"apiGroup":%q,"apiVersion":%q}`, resource, ns, name, group, version)
	}
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":%q,"stage":%q,"requestURI":"/x","verb":%q,"user":{"username":%q,"groups":["system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":%q%s,"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`,
		id, stage, verb, user, agent, ref, at.Format(micro), at.Format(micro))
}

func TestRead(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	lines := []string{
		event("1", "ResponseComplete", "list", "alice", "backup/1.0", "stable.example.com", "v1beta1", "crontabs", "default", "", t0),
		event("2", "ResponseComplete", "list", "alice", "backup/1.0", "stable.example.com", "v1beta1", "crontabs", "default", "", t0.Add(time.Minute)),
		event("3", "ResponseComplete", "get", "bob", "kubectl/v1.37", "stable.example.com", "v1beta1", "crontabs", "default", "a", t0.Add(2*time.Minute)),
		event("4", "ResponseComplete", "list", "alice", "backup/1.0", "stable.example.com", "v1", "crontabs", "default", "", t0.Add(3*time.Minute)),
		event("5", "ResponseComplete", "list", "me", "kubectl-crdversion/v0.3.0 (linux/amd64) kubernetes/abc", "stable.example.com", "v1beta1", "crontabs", "", "", t0.Add(4*time.Minute)),
		event("6", "ResponseStarted", "watch", "ctrl", "controller/2", "stable.example.com", "v1beta1", "crontabs", "", "", t0.Add(5*time.Minute)),
		event("7", "ResponseStarted", "watch", "ctrl", "controller/2", "stable.example.com", "v1beta1", "crontabs", "", "", t0.Add(5*time.Minute)),
		event("7", "ResponseComplete", "watch", "ctrl", "controller/2", "stable.example.com", "v1beta1", "crontabs", "", "", t0.Add(6*time.Minute)),
		event("8", "ResponseComplete", "update", "system:apiserver", "kube-apiserver/v1.37.2", "coordination.k8s.io", "v1", "leases", "kube-system", "apiserver-abc", t0.Add(7*time.Minute)),
		event("9", "ResponseComplete", "get", "x", "y", "", "", "", "", "", t0.Add(-time.Hour)), // a non-resource request: the span only
		"",
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"10","stage":"Respo`, // truncated
	}
	text := strings.Join(lines, "\n")
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", compress), func(t *testing.T) {
			var in bytes.Buffer
			if compress {
				zw := gzip.NewWriter(&in)
				_, _ = zw.Write([]byte(text))
				_ = zw.Close()
			} else {
				in.WriteString(text)
			}
			s, err := Read(&in, "audit.log", []schema.GroupVersionResource{gvr}, func(ua string) bool { return strings.HasPrefix(ua, "kubectl-crdversion/") })
			if err != nil {
				t.Fatal(err)
			}
			if s.Events != 10 || s.Malformed != 1 || s.FirstMalformed != 12 {
				t.Errorf("events %d malformed %d (first at line %d), want 10, 1, line 12", s.Events, s.Malformed, s.FirstMalformed)
			}
			if !s.First.Equal(t0.Add(-time.Hour)) || !s.Last.Equal(t0.Add(7*time.Minute)) {
				t.Errorf("span %s to %s", s.First, s.Last)
			}
			if len(s.Identities) != 1 || s.Identities[0] != "apiserver-abc" {
				t.Errorf("identities %v", s.Identities)
			}
			u := s.Use[gvr]
			got := map[string]string{}
			for _, c := range u.Clients {
				got[c.User+" "+c.UserAgent+" "+c.Verb] = fmt.Sprintf("%d %s", c.Requests, c.Last.Format(time.TimeOnly))
			}
			want := map[string]string{
				"alice backup/1.0 LIST":   "2 10:01:00",
				"bob kubectl/v1.37 GET":   "1 10:02:00",
				"ctrl controller/2 WATCH": "1 10:06:00",
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("clients\n got %v\nwant %v", got, want)
			}
			if u.Self != 1 {
				t.Errorf("self %d, want 1", u.Self)
			}
			if len(u.OpenWatches) != 1 || u.OpenWatches[0].User != "ctrl" {
				t.Errorf("open watches %+v, want ctrl's (auditID 6 never completed)", u.OpenWatches)
			}
		})
	}
}

func TestReadNotAnAuditLog(t *testing.T) {
	for name, text := range map[string]string{
		"text":                 "hello\nworld\n",
		"JSON of another kind": `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x"}}` + "\n",
		"binary":               "\x00\x01\x02\x03",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Read(strings.NewReader(text), "f.log", []schema.GroupVersionResource{gvr}, nil)
			var nal *NotAuditLogError
			if !errors.As(err, &nal) || strings.Contains(err.Error(), "\n") || nal.Line != 1 {
				t.Errorf("err %v, want a one-line *NotAuditLogError at line 1", err)
			}
		})
	}
	s, err := Read(strings.NewReader(""), "empty.log", nil, nil)
	if err != nil || s.Events != 0 {
		t.Errorf("an empty file: %+v, %v", s, err)
	}
	if _, err := Read(strings.NewReader("\x1f\x8bnot gzip"), "bad.gz", nil, nil); err == nil {
		t.Error("a broken gzip stream read without error")
	}
}

// TestReadPolicyWithoutFinalStages: a policy that records only the
// RequestReceived stage still counts requests.
func TestReadPolicyWithoutFinalStages(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	text := event("1", "RequestReceived", "list", "alice", "a", gvr.Group, gvr.Version, gvr.Resource, "", "", t0) + "\n" +
		event("2", "RequestReceived", "list", "alice", "a", gvr.Group, gvr.Version, gvr.Resource, "", "", t0) + "\n"
	s, err := Read(strings.NewReader(text), "f.log", []schema.GroupVersionResource{gvr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Use[gvr].Clients; len(c) != 1 || c[0].Requests != 2 {
		t.Errorf("clients %+v, want alice with 2 requests", c)
	}
}

// TestReadLongLine: a line longer than the read buffer (a RequestResponse
// event with a large object) is read whole.
func TestReadLongLine(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	e := event("1", "ResponseComplete", "create", "alice", "a", gvr.Group, gvr.Version, gvr.Resource, "", "", t0)
	long := strings.Replace(e, `"level":"Metadata"`, `"level":"Request","requestObject":{"data":"`+strings.Repeat("x", 3<<20)+`"}`, 1)
	s, err := Read(strings.NewReader(long+"\n"+e+"\n"), "f.log", []schema.GroupVersionResource{gvr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Events != 2 || s.Malformed != 0 || s.Use[gvr].Clients[0].Requests != 2 {
		t.Errorf("events %d malformed %d clients %+v", s.Events, s.Malformed, s.Use[gvr].Clients)
	}
}
