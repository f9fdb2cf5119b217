package action

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
)

// PromoteCluster is what promote-storage reads from the cluster.
type PromoteCluster interface {
	preflight.ServiceReader
	// CheckObjectsAt reads every object at version and validates up to
	// sample of them there (see cluster.Client.CheckObjectsAt).
	CheckObjectsAt(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, sample int, pageSize int64) (*cluster.ObjectsCheck, error)
}

// PromoteOptions are the inputs of promote-storage.
type PromoteOptions struct {
	// Version becomes the storage version.
	Version string
	// AllowPruning accepts conversion strategy None between schemas that
	// prune fields.
	AllowPruning bool
	// Sample limits the objects validated at Version (0: all); every
	// object is still read at it.
	Sample int
	// ChunkSize is the page size when reading the objects.
	ChunkSize int64
	// WebhookTimeout bounds the wait for a Service webhook's answer.
	WebhookTimeout time.Duration
}

// PromoteStorage is the preflight of making o.Version the storage version
// of the target: the rules of edit.PromoteStorage; then, when the cluster
// can be read, a conversion webhook behind a Service is checked first (the
// API server cannot convert without it); then every object is read at the
// new version and validated there. c may be nil (manifest mode without a
// cluster).
func PromoteStorage(ctx context.Context, c PromoteCluster, t *Target, o PromoteOptions) (*edit.Result, error) {
	r := edit.PromoteStorage(t.CRD, o.Version, o.AllowPruning)
	if r.NoOp || len(r.Checks.Failed()) > 0 || c == nil || !t.live() {
		return r, nil
	}
	if wh := lifecycle.ConversionWebhook(r.Edited); wh != nil && wh.ClientConfig.Service != nil {
		probe := &preflight.Probe{Desired: lifecycle.GroupVersion(t.CRD, o.Version), Sample: preflight.SampleObject(t.CRD, lifecycle.StorageVersion(t.CRD), "crdversion-preflight-sample")}
		r.Checks = append(r.Checks, preflight.NewWebhooks(c, o.WebhookTimeout).Service(ctx, wh, probe)...)
	}
	switch v := lifecycle.FindVersion(t.Live, o.Version); {
	case len(r.Checks.Failed()) > 0:
		// The API server cannot call the webhook: reading the objects at
		// the new version would only repeat that.
	case v == nil || !v.Served:
		r.Checks = append(r.Checks, edit.Check{Name: "ObjectsValid", Outcome: edit.Skip,
			Message: fmt.Sprintf("objects not checked at %s: the cluster does not serve it yet", o.Version)})
	default:
		found, err := c.CheckObjectsAt(ctx, t.Live, o.Version, o.Sample, o.ChunkSize)
		if err != nil {
			return nil, err
		}
		r.Checks = append(r.Checks, preflight.Objects(found, o.Version)...)
	}
	return r, nil
}
