package doctor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// fakeMetrics answers MetricsSamples with text parsed as /metrics, or err.
type fakeMetrics struct {
	text  string
	err   error
	reads int
}

func (f *fakeMetrics) MetricsSamples(context.Context, time.Duration) (*usage.Metrics, *usage.Metrics, error) {
	f.reads++
	if f.err != nil {
		return nil, nil, f.err
	}
	m, err := usage.ParseMetrics(strings.NewReader(f.text), time.Unix(1700000100, 0))
	return m, nil, err
}

// metricsText: an informer watches example.com/v1 widgets; v3 was listed
// once since the API server started.
const metricsText = `# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="example.com",resource="widgets",scope="namespace",subresource="",verb="LIST",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="example.com",resource="widgets",scope="namespace",subresource="",verb="LIST",version="v3"} 1
# TYPE apiserver_longrunning_requests gauge
apiserver_longrunning_requests{component="apiserver",group="example.com",resource="widgets",scope="cluster",subresource="",verb="WATCH",version="v1"} 1
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.7e+09
`

func deprecate(crd *apiextensionsv1.CustomResourceDefinition, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	for i := range crd.Spec.Versions {
		for _, v := range versions {
			if crd.Spec.Versions[i].Name == v {
				crd.Spec.Versions[i].Deprecated = true
			}
		}
	}
	return crd
}

// TestMetricsUsage: per deprecated served version, a warning when a client
// uses it now, a note when it was used since the API server started, none
// when never; the metrics are read once, and only for a CRD with a
// deprecated served version.
func TestMetricsUsage(t *testing.T) {
	m := &fakeMetrics{text: metricsText}
	u := MetricsUsage(m, 0)
	ctx := context.Background()
	if fs, err := u.Findings(ctx, widgets(false, "v2", "v1")); err != nil || len(fs) != 0 || m.reads != 0 {
		t.Fatalf("no deprecated version: %v %+v, %d reads", err, fs, m.reads)
	}
	crd := deprecate(widgets(false, "v2", "v1", "v3", "v4"), "v1", "v3", "v4")
	fs, err := u.Findings(ctx, crd)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 || fs[0].Version != "v1" || fs[0].Severity != lifecycle.SeverityWarning || fs[1].Version != "v3" || fs[1].Severity != lifecycle.SeverityInfo {
		t.Fatalf("findings %+v", fs)
	}
	if !strings.Contains(fs[0].Message, "open now: WATCH 1") || !strings.Contains(fs[0].Message, "move those clients to v2") ||
		fs[0].Fix != "kubectl crdversion retire widgets.example.com v1 --dry-run" {
		t.Errorf("warning %+v", fs[0])
	}
	if _, err := u.Findings(ctx, crd); err != nil || m.reads != 1 {
		t.Errorf("%v, %d reads of /metrics, want 1", err, m.reads)
	}
}

// TestMetricsUnreadable: metrics that cannot be read make the usage of each
// deprecated served version unknown; any other error stops the run.
func TestMetricsUnreadable(t *testing.T) {
	crd := deprecate(widgets(false, "v2", "v1"), "v1")
	fs, err := MetricsUsage(&fakeMetrics{err: &cluster.MetricsError{Err: errors.New("forbidden")}}, 0).Findings(context.Background(), crd)
	if err != nil || len(fs) != 1 || fs[0].Severity != lifecycle.SeverityInfo || !strings.Contains(fs[0].Message, "whether clients still use deprecated version v1 is not known: the API server's metrics cannot be read: forbidden") {
		t.Errorf("%v %+v", err, fs)
	}
	canceled := context.Canceled
	if _, err := MetricsUsage(&fakeMetrics{err: canceled}, 0).Findings(context.Background(), crd); !errors.Is(err, canceled) {
		t.Errorf("err %v, want %v", err, canceled)
	}
}
