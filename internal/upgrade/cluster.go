package upgrade

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
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
	// EachObjectMeta lists crd's objects through version, metadata only,
	// pageSize per request, and calls each with every object's metadata.
	// A refused list is the API server's error, unchanged.
	EachObjectMeta(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, pageSize int64, each func(metav1.Object) error) error
	// ListCRDs lists every installed CRD (read when a Helm release is
	// checked: the CRDs it owns).
	ListCRDs(ctx context.Context) ([]apiextensionsv1.CustomResourceDefinition, error)
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
	// PageSize is the number of objects per list request when objects
	// are counted (Immutable, Deletion); 0 means 500.
	PageSize int64
	// ApplyOf, when set, is the command that applies one CRD of the
	// release (a chart's crds/ file is applied apart from the release);
	// Apply otherwise.
	ApplyOf func(manifest.CRDDoc) lifecycle.Command
	// Helm, when set, is the Helm release the CRDs are checked for: the
	// Helm findings of each CRD (see HelmRelease), and, when its Name is
	// known, a Deleted plan for each installed CRD of the release that
	// the release's templates no longer hold. Documents without a
	// HelmOrigin are the release's rendered templates.
	Helm *HelmRelease
	// Offline marks every plan Predicted: Cluster is an Offline, and no
	// API server was asked.
	Offline bool
	// Rules, when set, adds a rulebook's verdict (OLM v1's, crdify's) on
	// each installed CRD's update to the plan (Plan.JudgeBy).
	Rules *schemadiff.Rulebook
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
	pageSize := c.PageSize
	if pageSize <= 0 {
		pageSize = 500
	}
	owned, err := c.ownedCRDs(ctx)
	if err != nil {
		return nil, err
	}
	rendered := map[string]bool{}
	for _, d := range docs {
		if d.HelmOrigin != manifest.HelmCRDsDir {
			rendered[d.CRD.Name] = true
		}
	}
	for _, d := range docs {
		live, err := c.Cluster.GetCRD(ctx, d.CRD.Name)
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return nil, err
		}
		apply := c.Apply
		if c.ApplyOf != nil {
			apply = c.ApplyOf(d)
		}
		p := Check(live, d.CRD, d.Source, apply)
		p.APIServer, p.Predicted = server, c.Offline
		if c.Offline {
			p.ServerMessage = "offline: no API server was asked"
		}
		p.Render(c.Conn)
		if live != nil && c.Rules != nil {
			p.JudgeBy(c.Rules, live, d.CRD)
		}
		if live != nil {
			if im := immutableOf(p, live, d.CRD, c.Conn); im != nil {
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
		if c.Helm != nil {
			p.Findings = append(p.Findings, helmFindings(live, d)...)
			p.helmAdoption(*c.Helm, live, d, apply)
			if len(p.Run) == 0 && hasCode(p.Findings, CodeHelmCRDNotUpgraded) {
				// helm upgrade leaves it: the apply is the user's.
				p.Run = []lifecycle.Command{apply}
			}
			schemadiff.Sort(p.Findings)
			p.Render(c.Conn)
			if live != nil && owned[live.Name] != nil && !rendered[live.Name] {
				del, err := deletion(ctx, c.Cluster, *c.Helm, live, true, pageSize)
				if err != nil {
					return nil, err
				}
				p.setDeleted(*c.Helm, live, del)
				p.Render(c.Conn)
			}
			delete(owned, d.CRD.Name)
		}
		out = append(out, p)
	}
	// The release's installed CRDs that no document names at all.
	for _, name := range slices.Sorted(maps.Keys(owned)) {
		live := owned[name]
		del, err := deletion(ctx, c.Cluster, *c.Helm, live, false, pageSize)
		if err != nil {
			return nil, err
		}
		p := deletedPlan(*c.Helm, live, del)
		p.APIServer, p.Predicted = server, c.Offline
		p.Render(c.Conn)
		out = append(out, p)
	}
	return out, nil
}

// ownedCRDs are the installed CRDs whose Helm ownership annotations name
// c.Helm, by name; none without a named release.
func (c *Checker) ownedCRDs(ctx context.Context) (map[string]*apiextensionsv1.CustomResourceDefinition, error) {
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	if c.Helm == nil || c.Helm.Name == "" {
		return out, nil
	}
	crds, err := c.Cluster.ListCRDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the CRDs of Helm release %s: %w", c.Helm, err)
	}
	for i := range crds {
		if c.Helm.OwnedBy(&crds[i]) {
			out[crds[i].Name] = &crds[i]
		}
	}
	return out, nil
}

// DryRun asks the API server to validate the release's CRD next as an
// update of live (its spec replaced, labels and annotations merged, as an
// apply by the manager of the previous release does), or as a create when
// live is nil. It returns DryRunAccepted; DryRunRejected with the API
// server's message when it refuses the CRD (Invalid, BadRequest, or an
// admission plugin's denial: a webhook or policy refuses the apply too); or
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
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), admissionDenied(err):
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

// admissionDenied tells whether err is an admission plugin's refusal of
// the update (a validating webhook's or a ValidatingAdmissionPolicy's, as
// 403 Forbidden by default): the apply itself would be refused. RBAC's
// Forbidden ("User … cannot update …") is not: the dry run was not
// allowed, and says nothing about the apply.
func admissionDenied(err error) bool {
	if !apierrors.IsForbidden(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "denied request") || strings.Contains(msg, "denied the request")
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
