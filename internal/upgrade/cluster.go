package upgrade

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
)

// Cluster is what checking a release against a cluster reads and asks
// (cluster.Client implements it). Errors are the API server's, unchanged.
type Cluster interface {
	// GetCRD reads the installed CRD named name; the API server's NotFound
	// when there is none.
	GetCRD(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error)
	// DryRunUpdateCRD asks the API server to admit and validate edit
	// applied to live without persisting it.
	DryRunUpdateCRD(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition, edit func(*apiextensionsv1.CustomResourceDefinition), fieldManager string) error
	// DryRunCreateCRD asks the API server to admit and validate crd as a
	// new CRD without persisting it.
	DryRunCreateCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, fieldManager string) error
	// ServerVersion is the API server's version ("v1.37.2"), whose rules
	// the dry runs answer for.
	ServerVersion(ctx context.Context) (string, error)
	// EachObject lists crd's objects through version, metadata only,
	// pageSize per request, and calls each with every object's namespace
	// and name. A refused list is the API server's error, unchanged.
	EachObject(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, pageSize int64, each func(namespace, name string) error) error
}

// Checker checks the CRDs of a release against one cluster. Build one per
// cluster; its fields are not changed by Check.
type Checker struct {
	Cluster Cluster
	// ServerDryRun confirms each prediction with a server-side dry run of
	// the apply (one request per CRD).
	ServerDryRun bool
	// FieldManager is the field manager of the dry runs.
	FieldManager string
	// Apply is the command that applies the release (ApplyCommand), the
	// last of the fix steps.
	Apply lifecycle.Command
	// Conn are the connection flags the rendered fix steps repeat.
	Conn []lifecycle.Flag
	// PageSize is the number of objects per list request when a release
	// changes what cannot change (Immutable); 0 means 500.
	PageSize int64
}

// Check returns the plan of each CRD of docs, in order: Check's prediction
// from the installed CRD (read by name), its fix steps rendered with
// c.Conn, and, with ServerDryRun, the API server's answer to a dry run of
// the apply (see DryRun), each with the API server's version; a release
// that changes an installed CRD's scope, kind or group gets its Immutable,
// the objects counted. An error reading the cluster stops the check.
func (c *Checker) Check(ctx context.Context, docs []manifest.CRDDoc) ([]Plan, error) {
	var out []Plan
	// Every verdict names the API server it holds for; a server that
	// refuses to tell (its answer, an API status) leaves it empty, shown
	// as unknown. A server that cannot be reached stops the check here.
	server, err := c.Cluster.ServerVersion(ctx)
	if err != nil && !isAPIStatus(err) {
		return nil, err
	}
	for _, d := range docs {
		live, err := c.Cluster.GetCRD(ctx, d.CRD.Name)
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return nil, err
		}
		p := Check(live, d.CRD, d.Source, c.Apply)
		p.APIServer = server
		p.Render(c.Conn)
		if live != nil {
			if im := immutableOf(p, live, d.CRD, c.Conn); im != nil {
				pageSize := c.PageSize
				if pageSize <= 0 {
					pageSize = 500
				}
				if err := im.count(ctx, c.Cluster, live, pageSize); err != nil {
					return nil, err
				}
				p.Immutable = im
			}
		}
		if c.ServerDryRun {
			outcome, msg, fields, err := c.DryRun(ctx, live, d.CRD)
			if err != nil {
				return nil, err
			}
			p.SetServerDryRun(outcome, msg, fields...)
		}
		out = append(out, p)
	}
	return out, nil
}

// DryRun asks the API server to validate the release's CRD next as an
// update of live (its spec replaced, labels and annotations merged, as an
// apply by the manager of the previous release does), or as a create when
// live is nil. It returns DryRunAccepted; DryRunRejected with the API
// server's message when it refuses the CRD (Invalid, BadRequest); or
// DryRunSkipped with the message when the request itself was refused
// (Forbidden, Unauthorized: RBAC; Conflict: the CRD changed in what was
// judged). fields are the fields the API server's refusal names
// (spec.conversion.webhookClientConfig.caBundle, spec.scope, …), in its
// order; none when it names none. Other failures are returned.
func (c *Checker) DryRun(ctx context.Context, live, next *apiextensionsv1.CustomResourceDefinition) (outcome, message string, fields []string, err error) {
	if live == nil {
		err = c.Cluster.DryRunCreateCRD(ctx, next, c.FieldManager)
	} else {
		err = c.Cluster.DryRunUpdateCRD(ctx, live, func(obj *apiextensionsv1.CustomResourceDefinition) {
			obj.Spec = *next.Spec.DeepCopy()
			obj.Labels = merged(obj.Labels, next.Labels)
			obj.Annotations = merged(obj.Annotations, next.Annotations)
		}, c.FieldManager)
	}
	switch {
	case err == nil:
		return DryRunAccepted, "", nil, nil
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		var status apierrors.APIStatus
		if errors.As(err, &status) && status.Status().Details != nil {
			for _, cause := range status.Status().Details.Causes {
				if cause.Field != "" {
					fields = append(fields, cause.Field)
				}
			}
		}
		return DryRunRejected, err.Error(), fields, nil
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), apierrors.IsConflict(err):
		return DryRunSkipped, err.Error(), nil, nil
	}
	return "", "", nil, err
}

// merged is a copy of a with every key of b set to b's value.
func merged(a, b map[string]string) map[string]string {
	if len(b) == 0 {
		return a
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

// ReadRelease reads the CRDs of a release from files (manifest files or
// directories of them, recursive as kubectl apply -R), every one of them
// as kubectl apply -f A -f B applies every one, in the order given. Other
// kinds are left out. A CRD named in two documents is an error (applied,
// the last would win), as is a release without any CRD.
func ReadRelease(files []string, recursive bool) ([]manifest.CRDDoc, error) {
	out, err := manifest.ReadCRDsOf(files, recursive)
	if err != nil {
		return nil, fmt.Errorf("-f: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition in %s", strings.Join(files, ", "))
	}
	return out, nil
}
