package action

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// Writer writes CRDs.
type Writer interface {
	// Missing asks the API server (SelfSubjectAccessReview) which of needs
	// the user lacks.
	Missing(ctx context.Context, needs []access.Need) (missing []access.Need, checked bool)
	// UpdateCRD writes crd pinned to its resourceVersion.
	UpdateCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, opts cluster.WriteOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	// WaitServed waits until the CRD's served versions are in discovery,
	// and its versions that are not served are out of it.
	WaitServed(ctx context.Context, name string, timeout time.Duration) error
	// AddStoredVersions adds versions to the CRD's status.storedVersions
	// (a status write) unless it lists them already.
	AddStoredVersions(ctx context.Context, name string, versions []string, fieldManager string) (*apiextensionsv1.CustomResourceDefinition, error)
}

// WriteOptions are how Write writes.
type WriteOptions struct {
	// DryRun is how the step writes: for real, not at all (client), or
	// as a server-side dry run.
	DryRun lifecycle.DryRun
	// FieldManager names the writer.
	FieldManager string
	// Operation names the step in a permission refusal ("add-version").
	Operation string
}

// ServedWait bounds the wait for discovery after a write.
const ServedWait = 30 * time.Second

// Written is the outcome of Write.
type Written struct {
	// CRD is the CRD as written (as it would be, in a dry run).
	CRD *apiextensionsv1.CustomResourceDefinition
	// NotServed, when set, says that a served version did not appear in
	// discovery within ServedWait: a warning, the write happened.
	NotServed error
	// NewlyServed are the versions the write began to serve, in discovery
	// now (a real write only).
	NewlyServed []string
	// NoLongerServed are the versions the write stopped serving, out of
	// discovery now (a real write only).
	NoLongerServed []string
	// RecordedStored are the versions of r.RecordStored that the write
	// added to status.storedVersions (a real write only).
	RecordedStored []string
}

// Write writes r.Edited, which must have passed its preflight (see
// edit.Result.Refused), pinned to the resourceVersion that was read: after
// checking that the user may update CRDs (unless a client dry run), as a
// real or server-side dry-run update, then — for a real write — waiting
// until clients can use the versions it serves, and adding the versions
// of r.RecordStored to status.storedVersions (a second write, to the
// status subresource: the API server takes storedVersions from no other).
// A no-op result is not written.
func Write(ctx context.Context, w Writer, r *edit.Result, o WriteOptions) (*Written, error) {
	out := &Written{CRD: r.Edited}
	if r.NoOp || o.DryRun == lifecycle.DryRunClient {
		return out, nil
	}
	needs := access.EditCRD()
	if len(r.RecordStored) > 0 {
		needs = append(needs, access.RecordStoredVersions()...)
	}
	if missing, _ := w.Missing(ctx, needs); len(missing) > 0 {
		return nil, &access.MissingError{Operation: o.Operation, CRD: r.Edited.Name, Missing: missing}
	}
	written, err := w.UpdateCRD(ctx, r.Edited, cluster.WriteOptions{DryRun: o.DryRun, FieldManager: o.FieldManager})
	if err != nil {
		return nil, err
	}
	out.CRD = written
	if len(r.RecordStored) > 0 && o.DryRun == lifecycle.DryRunNone {
		recorded, err := w.AddStoredVersions(ctx, written.Name, r.RecordStored, o.FieldManager)
		if err != nil {
			return nil, fmt.Errorf("%s was written, but adding %s to status.storedVersions failed: %w; objects are still stored there, so run kubectl crdversion migrate %s before any step removes it",
				written.Name, strings.Join(r.RecordStored, ", "), err, written.Name)
		}
		out.CRD, out.RecordedStored = recorded, r.RecordStored
	}
	if o.DryRun == lifecycle.DryRunNone {
		if out.NotServed = w.WaitServed(ctx, written.Name, ServedWait); out.NotServed == nil {
			out.NewlyServed, out.NoLongerServed = r.NewlyServed, r.NoLongerServed
		}
	}
	return out, nil
}
