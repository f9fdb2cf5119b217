package doctor

import (
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
	"github.com/crdversion/kubectl-crdversion/internal/svm"
)

// Config is how a doctor run checks one cluster.
type Config struct {
	// ChunkSize is the number of objects per list request (> 0).
	ChunkSize int64
	// WebhookTimeout bounds the wait for a conversion webhook's answer.
	WebhookTimeout time.Duration
	// Usage configures the check of deprecated served versions; with
	// Usage.Skip it is left out.
	Usage preflight.UsageConfig
	// Conn are the connection flags that the printed commands repeat.
	Conn []lifecycle.Flag
	// Progress, when set, receives the lists' progress (see Doctor).
	Progress func(Event)
	// SkipReferences leaves out the owner-reference inventory;
	// ReferenceProgress, when set, receives its progress (resources
	// listed of their total).
	SkipReferences    bool
	ReferenceProgress func(done, total int)
}

// Connect returns a Doctor for the cluster getter connects to, with its own
// client, API request counter (Doctor.Requests) and cache of webhook
// endpoints, unless c.SkipReferences the owner-reference inventory, and,
// unless c.Usage.Skip, the client-usage check with the objects'
// managedFields as one of its sources. Errors are those of
// building the client or the usage sources; nothing is sent yet.
func Connect(getter genericclioptions.RESTClientGetter, c Config) (*Doctor, error) {
	var requests cluster.RequestCounter
	cl, err := cluster.New(getter, requests.Option())
	if err != nil {
		return nil, err
	}
	d := &Doctor{Reader: cl, Webhooks: preflight.NewWebhooks(cl, c.WebhookTimeout), Requests: requests.Count,
		ChunkSize: c.ChunkSize, Conn: c.Conn, Progress: c.Progress, Migrations: &svm.Runner{Client: cl}}
	if !c.SkipReferences {
		d.References = preflight.References{Client: cl, Progress: c.ReferenceProgress}
		d.Admission = cl
	}
	if !c.Usage.Skip {
		u, err := preflight.NewUsage(cl, c.Usage, cl.ManagedFieldsSource(c.ChunkSize, nil))
		if err != nil {
			return nil, err
		}
		d.Usage = ClientUsage(u)
	}
	return d, nil
}
