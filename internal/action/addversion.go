package action

import (
	"context"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
)

// AddVersionCluster is what add-version reads from the cluster: the
// conversion webhook's Service and a stored object to convert, and whether
// objects are stored at the version added.
type AddVersionCluster interface {
	preflight.ServiceReader
	// FirstObject returns one object read at version, nil when none.
	FirstObject(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string) (*unstructured.Unstructured, error)
	// CountObjects counts the objects read at version (a paged,
	// metadata-only list).
	CountObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, pageSize int64) (int, error)
}

// AddVersionOptions are the inputs of add-version.
type AddVersionOptions struct {
	Spec edit.AddVersionSpec
	// WebhookTimeout bounds the wait for the conversion webhook's answer.
	WebhookTimeout time.Duration
}

// AddVersion is the preflight of adding o.Spec to the target: the rules of
// edit.AddVersion and, with Webhook conversion, a ConversionReview of a
// stored object (else a minimal one) to the new version — through the
// Service's endpoints for a Service webhook, which is also checked (see
// preflight.Webhooks). c may be nil (manifest mode without a cluster).
func AddVersion(ctx context.Context, c AddVersionCluster, t *Target, o AddVersionOptions) *edit.Result {
	spec, stored := o.Spec, ""
	if c != nil && t.live() {
		stored = storedAt(ctx, c, t.CRD, spec.Name)
		spec.StoredAt = stored != ""
	}
	r := edit.AddVersion(t.CRD, spec)
	if r.NoOp || len(r.Checks.Failed()) > 0 {
		return r
	}
	if stored != "" {
		r.RecordStoredVersions(spec.Name, stored)
	}
	wh := lifecycle.ConversionWebhook(r.Edited)
	if wh == nil {
		return r
	}
	crd := t.CRD
	from := lifecycle.ListVersion(crd)
	probe := &preflight.Probe{Sample: preflight.SampleObject(crd, from, "crdversion-preflight-sample"), Desired: lifecycle.GroupVersion(crd, o.Spec.Name)}
	minimal := ""
	if from != "" && c != nil && t.live() {
		obj, err := c.FirstObject(ctx, crd, from)
		switch {
		case err == nil && obj != nil:
			probe.Sample = obj
		case apierrors.IsForbidden(err):
			minimal = fmt.Sprintf(" (a minimal one: list %s is forbidden, so no stored object was tried)", cluster.GVR(crd, from).GroupResource())
		}
	}
	skipped := ""
	if !t.live() {
		skipped = t.LiveSkip
	}
	var services preflight.ServiceReader
	if c != nil {
		services = c
	}
	cs := preflight.NewWebhooks(services, o.WebhookTimeout).Check(ctx, wh, probe, skipped)
	for i := range cs {
		if cs[i].Name == preflight.CheckWebhookConverts && cs[i].Outcome == edit.Pass && wh.ClientConfig.Service == nil {
			cs[i].Message += minimal
		}
	}
	r.Checks = append(r.Checks, cs...)
	return r
}

// storedAt asks the API server whether objects of crd are stored at
// version, which is not in spec.versions and which status.storedVersions
// does not list: a list of the objects is then answered "invalid
// group/version" for version, and storedAt returns that answer ("" when
// not). The add then restores version, and records it in
// status.storedVersions again when it is written (see
// edit.Result.RecordStoredVersions) — otherwise the CRD would say that no
// object is stored there, and a later removal of the version would make
// them unreadable again. A list this user may not make, or that fails for
// another reason, says nothing about it.
func storedAt(ctx context.Context, c AddVersionCluster, crd *apiextensionsv1.CustomResourceDefinition, version string) string {
	from := lifecycle.ListVersion(crd)
	if from == "" || slices.Contains(crd.Status.StoredVersions, version) || lifecycle.FindVersion(crd, version) != nil {
		return ""
	}
	if _, err := c.CountObjects(ctx, crd, from, cluster.ChunkSize); err != nil && lifecycle.StoredAt(crd.Spec.Group, version, err.Error()) {
		return err.Error()
	}
	return ""
}
