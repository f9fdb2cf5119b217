package doctor

import (
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
)

// TestConnect checks the wiring, without a server (Connect sends nothing):
// the configuration reaches the Doctor, it counts its own requests, checks
// webhooks, and has a usage check unless it is skipped; a usage source
// that cannot be built is an error.
func TestConnect(t *testing.T) {
	getter := func() *genericclioptions.ConfigFlags {
		f := genericclioptions.NewConfigFlags(false)
		server := "https://127.0.0.1:1"
		f.APIServer = &server
		return f
	}
	conn := []lifecycle.Flag{{Name: "context", Value: "prod"}}
	for _, tc := range []struct {
		name      string
		usage     preflight.UsageConfig
		wantUsage bool
		wantErr   bool
	}{
		{name: "usage skipped", usage: preflight.UsageConfig{Skip: true}},
		{name: "usage measured", usage: preflight.UsageConfig{Window: time.Minute}, wantUsage: true},
		{name: "bad Prometheus URL", usage: preflight.UsageConfig{Window: time.Minute, PrometheusURL: "::not a url"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Connect(getter(), Config{ChunkSize: 7, WebhookTimeout: time.Second, Usage: tc.usage, Conn: conn})
			if tc.wantErr {
				if err == nil {
					t.Fatal("got no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Reader == nil || d.Webhooks == nil || d.Requests == nil || d.ChunkSize != 7 || len(d.Conn) != 1 || d.Progress != nil {
				t.Fatalf("got %+v", d)
			}
			if n := d.Requests(); n != 0 {
				t.Errorf("%d requests counted before any was sent", n)
			}
			if (d.Usage != nil) != tc.wantUsage {
				t.Errorf("usage check %v, want %v", d.Usage != nil, tc.wantUsage)
			}
		})
	}
}
