package preflight

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// TestClientUsage: the check from an assessment — a client seen fails,
// unknown fails (naming what was not seen and the ways out), no client
// passes; the message names the sources and the details carry every
// source's evidence.
func TestClientUsage(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1beta1", Resource: "crontabs"}
	metrics := func(unseen ...string) usage.SourceReport {
		return usage.SourceReport{Source: usage.SourceMetrics, Name: "/metrics of 2 API server instance(s)", Unseen: unseen,
			Seen: []string{"apiserver-a at 10.0.0.2:6443: no request in the last 15s"}}
	}
	mf := usage.SourceReport{Source: usage.SourceManagedFields, Name: "managedFields of crontabs",
		Clients: []usage.Client{{Manager: "my-operator", Operation: "Update", Count: 37, Last: time.Now(), InWindow: true}},
		Seen:    []string{"manager my-operator (Update) wrote 37 object(s) through stable.example.com/v1beta1"}}
	for _, tc := range []struct {
		name    string
		a       usage.Assessment
		outcome edit.Outcome
		message []string
		details []string
	}{
		{"a writer inside the window", usage.Combine(gvr, 15*time.Second, metrics(), mf), edit.Fail,
			[]string{"clients still use stable.example.com/v1beta1 crontabs (seen by: managedFields of crontabs)"},
			[]string{"/metrics of 2 API server instance(s) [NotInUse]: apiserver-a at 10.0.0.2:6443", "managedFields of crontabs [InUse]: manager my-operator"}},
		{"an instance not read", usage.Combine(gvr, 15*time.Second, metrics("apiserver-b at 10.0.0.3:6443: its /metrics cannot be read: x509")), edit.Fail,
			[]string{"is unknown: /metrics of 2 API server instance(s): apiserver-b at 10.0.0.3:6443: its /metrics cannot be read"},
			[]string{"NOT SEEN: apiserver-b at 10.0.0.3:6443", "way out: once you know by other means that no client uses stable.example.com/v1beta1: --skip-usage-check"}},
		{"no client", usage.Combine(gvr, 15*time.Second, metrics()), edit.Pass,
			[]string{"no client of stable.example.com/v1beta1 crontabs seen in the last 15s (/metrics of 2 API server instance(s))"}, nil},
		{"no counting source", usage.Combine(gvr, 15*time.Second), edit.Fail,
			[]string{"is unknown: no source that counts every request"}, []string{"way out: read the API servers' request counters from Prometheus"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ClientUsage(tc.a)
			if c.Name != CheckClientUsage || c.Outcome != tc.outcome {
				t.Errorf("%s %s, want %s", c.Name, c.Outcome, tc.outcome)
			}
			for _, m := range tc.message {
				if !strings.Contains(c.Message, m) {
					t.Errorf("message %q lacks %q", c.Message, m)
				}
			}
			details := strings.Join(c.Details, "\n")
			for _, d := range tc.details {
				if !strings.Contains(details, d) {
					t.Errorf("details lack %q:\n%s", d, details)
				}
			}
		})
	}
}

// TestUsageConfigValidate: each bad flag value is a one-line error.
func TestUsageConfigValidate(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(log, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  UsageConfig
		want string
	}{
		{UsageConfig{Window: time.Second, PrometheusURL: "http://prometheus:9090", AuditLogs: []string{log}}, ""},
		{UsageConfig{PrometheusService: "monitoring/https:prometheus-k8s:9091"}, ""},
		{UsageConfig{Window: -time.Second}, "--usage-window must not be negative, got -1s"},
		// Without Prometheus a window is waited out: a week would hang the
		// command for a week (found by trying --usage-window 7d).
		{UsageConfig{Window: 7 * 24 * time.Hour}, "--usage-window 168h0m0s would wait that long between two reads of each API server's /metrics; over 30m0s, give --prometheus-url or --prometheus-service"},
		{UsageConfig{Window: MaxMetricsWindow}, ""},
		{UsageConfig{Window: 7 * 24 * time.Hour, Skip: true}, ""},
		{UsageConfig{Window: 7 * 24 * time.Hour, PrometheusURL: "http://prometheus:9090"}, ""},
		{UsageConfig{PrometheusURL: "prometheus:9090"}, `--prometheus-url "prometheus:9090" is not an http(s) URL`},
		{UsageConfig{PrometheusService: "prometheus"}, `--prometheus-service "prometheus" is not NAMESPACE/NAME:PORT`},
		{UsageConfig{PrometheusURL: "http://p:9090", PrometheusService: "m/p:9090"}, "give --prometheus-url or --prometheus-service, not both"},
		{UsageConfig{AuditLogs: []string{filepath.Join(dir, "absent.log")}}, "absent.log: no such file or directory"},
		{UsageConfig{AuditLogs: []string{dir}}, "is a directory, not an audit log file"},
	} {
		err := tc.cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%+v: %v, want one line with %q", tc.cfg, err, tc.want)
		}
	}
}

// instancesStub is an InstanceReader that is never called: Needs only
// looks at which sources are set.
type instancesStub struct{ usage.InstanceReader }

type managedFieldsStub struct{ usage.ManagedFieldsReader }

type promStub struct{ usage.PromQuerier }

// TestUsageNeeds (issue 33): a user missing several of the check's
// permissions learned them one refusal at a time (get /metrics, then the
// leases, the EndpointSlices, the list of the objects). Needs names every
// one its sources use, in the namespaces they are read in.
func TestUsageNeeds(t *testing.T) {
	crd := crdtest.New("crontabs.stable.example.com").Version("v1", crdtest.Served, crdtest.Storage).CRD()
	for _, tc := range []struct {
		name string
		src  usage.Sources
		want []string
	}{
		{"every instance's /metrics and managedFields", usage.Sources{Cluster: instancesStub{}, ManagedFields: managedFieldsStub{}}, []string{
			"get /metrics", "list leases.coordination.k8s.io in kube-system", "list endpointslices.discovery.k8s.io in default", "list crontabs.stable.example.com"}},
		{"Prometheus instead of /metrics: the instances are still found", usage.Sources{Cluster: instancesStub{}, Prometheus: promStub{}, ManagedFields: managedFieldsStub{}}, []string{
			"list leases.coordination.k8s.io in kube-system", "list endpointslices.discovery.k8s.io in default", "list crontabs.stable.example.com"}},
		{"audit logs only", usage.Sources{AuditLogs: []string{"audit.log"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &Usage{Sources: tc.src}
			var got []string
			for _, n := range u.Needs(crd) {
				verb, _, _ := strings.Cut(n.String(), " (")
				got = append(got, verb)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("needs %q, want %q", got, tc.want)
			}
		})
	}
}
