package upgrade

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
)

// HelmRelease is the Helm release a check is for: how helm upgrade
// applies the release's CRDs and which installed CRDs it deletes.
//
// Helm's rules (helm.sh/helm/v4, pkg/action and pkg/kube): the CRDs of a
// chart's crds/ directory are created by helm install when absent and
// never updated or deleted; helm upgrade applies the rendered templates
// and deletes every resource of the previous release's manifest that the
// new one no longer renders, unless the live resource carries the
// annotation helm.sh/resource-policy: keep (exactly "keep"). Deleting a
// CRD deletes every object of it (the API server's
// customresourcecleanup finalizer), and an object with finalizers stays
// Terminating until something removes them.
type HelmRelease struct {
	// Name and Namespace are the release's. An empty Name means the
	// release is not known: which installed CRDs it deletes is not
	// checked (Plan.Helm says so).
	Name, Namespace string
}

// Annotations Helm reads and writes on the resources of a release.
const (
	// ResourcePolicyAnnotation with the value KeepPolicy makes helm
	// upgrade and helm uninstall leave a resource in place.
	ResourcePolicyAnnotation = "helm.sh/resource-policy"
	KeepPolicy               = "keep"
	// ReleaseNameAnnotation and ReleaseNamespaceAnnotation name the
	// release that owns a resource (Helm 3.2 and later set them on every
	// resource it installs).
	ReleaseNameAnnotation      = "meta.helm.sh/release-name"
	ReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// Codes of the Helm findings.
const (
	// CodeHelmDeletesCRD (error): helm upgrade deletes an installed CRD
	// of the release, and every object of it, because the new release no
	// longer renders it among its templates (dropped, or moved to crds/).
	CodeHelmDeletesCRD = "HelmDeletesCRD"
	// CodeHelmKeepsCRD (info): the release drops an installed CRD that
	// carries the keep policy: helm upgrade leaves it, no longer managed.
	CodeHelmKeepsCRD = "HelmKeepsCRD"
	// CodeHelmCRDNotUpgraded (warning): the chart's crds/ copy of an
	// installed CRD differs from it, and helm upgrade never applies crds/.
	CodeHelmCRDNotUpgraded = "HelmCRDNotUpgraded"
	// CodeHelmCRDInstallOnly (info): a crds/ CRD that is not installed
	// is created by helm install only, not by helm upgrade.
	CodeHelmCRDInstallOnly = "HelmCRDInstallOnly"
	// CodeHelmNoKeepPolicy (warning): a templated CRD without the keep
	// policy: helm uninstall, or a later release that stops rendering it,
	// deletes it with every object.
	CodeHelmNoKeepPolicy = "HelmNoKeepPolicy"
	// CodeHelmCannotAdopt (error): the release renders a CRD that exists
	// without Helm's ownership metadata for it (installed from crds/, by
	// hand, or by another release): helm upgrade refuses ("exists and
	// cannot be imported into the current release").
	CodeHelmCannotAdopt = "HelmCannotAdopt"
)

// ManagedByLabel is the label Helm requires, with the value "Helm", on a
// resource it adopts into a release.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// Keeps tells whether a manifest's CRD carries the keep policy in the
// form helm uninstall honours (trimmed, any case).
func Keeps(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return strings.EqualFold(strings.TrimSpace(crd.Annotations[ResourcePolicyAnnotation]), KeepPolicy)
}

// LiveKeeps tells whether an installed CRD carries the keep policy in
// the form helm upgrade honours when it deletes what a release dropped:
// exactly "keep".
func LiveKeeps(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return crd.Annotations[ResourcePolicyAnnotation] == KeepPolicy
}

// Adoptable tells whether helm upgrade of release r takes the installed
// CRD into the release when the release starts rendering it: Helm's
// checkOwnership requires the label app.kubernetes.io/managed-by=Helm and
// both ownership annotations naming r.
func (r HelmRelease) Adoptable(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return r.OwnedBy(crd) && crd.Labels[ManagedByLabel] == "Helm"
}

// OwnedBy tells whether Helm's ownership annotations of an installed CRD
// name release r.
func (r HelmRelease) OwnedBy(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return r.Name != "" && crd.Annotations[ReleaseNameAnnotation] == r.Name && crd.Annotations[ReleaseNamespaceAnnotation] == r.Namespace
}

// String is "NAMESPACE/NAME".
func (r HelmRelease) String() string { return r.Namespace + "/" + r.Name }

// Deletion is what helm upgrade deletes when the release drops an
// installed CRD of it.
type Deletion struct {
	// Release is the Helm release ("NAMESPACE/NAME").
	Release string `json:"release"`
	// Kind is the CRD's kind.
	Kind string `json:"kind"`
	// MovedToCRDsDir is true when the new chart holds the CRD in crds/
	// (which helm upgrade neither applies nor re-creates).
	MovedToCRDsDir bool `json:"movedToCRDsDir,omitempty"`
	// Kept is true when the live CRD carries the keep policy: helm
	// upgrade leaves it, and nothing is deleted.
	Kept bool `json:"kept"`
	// Objects is the number of objects of the CRD, Finalizers how many of
	// them have finalizers (they stay Terminating until something removes
	// them), listed through Version; meaningful when Counted.
	Objects    int    `json:"objects"`
	Finalizers int    `json:"withFinalizers"`
	Version    string `json:"version,omitempty"`
	Counted    bool   `json:"counted"`
	// CountError says why the objects could not be counted (unknown, not
	// zero).
	CountError string `json:"countError,omitempty"`
}

// Deleted is the verdict of a plan whose CRD the release deletes.
const Deleted = "Deleted"

// helmFindings are the findings of Helm's rules for the manifest CRD d
// over live (nil when not installed).
func helmFindings(live *apiextensionsv1.CustomResourceDefinition, d manifest.CRDDoc) []schemadiff.Finding {
	switch d.HelmOrigin {
	case manifest.HelmCRDsDir:
		if live == nil {
			return []schemadiff.Finding{{Code: CodeHelmCRDInstallOnly, Severity: lifecycle.SeverityInfo, Path: "crds/",
				Message: "in the chart's crds/ directory: helm install creates it, helm upgrade does not (on an installed release, apply it yourself)"}}
		}
		if !sameSpec(live, d.CRD) {
			return []schemadiff.Finding{{Code: CodeHelmCRDNotUpgraded, Severity: lifecycle.SeverityWarning, Path: "crds/",
				Message: "in the chart's crds/ directory, and it differs from the installed CRD: helm upgrade never applies crds/, so the cluster keeps the old definition (apply it yourself before the upgrade; the findings here are for that apply)"}}
		}
	case manifest.HelmTemplates:
		if !Keeps(d.CRD) {
			return []schemadiff.Finding{{Code: CodeHelmNoKeepPolicy, Severity: lifecycle.SeverityWarning, Path: "metadata.annotations[" + ResourcePolicyAnnotation + "]",
				Message: "a templated CRD without " + ResourcePolicyAnnotation + ": " + KeepPolicy + ": helm uninstall, or a later release that stops rendering it (or moves it to crds/), deletes it and every object of it"}}
		}
	}
	return nil
}

// sameSpec tells whether the manifest CRD next would leave live's spec as
// it is: next with the API server's defaults set equals live's spec.
func sameSpec(live, next *apiextensionsv1.CustomResourceDefinition) bool {
	n := next.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(n)
	return equality.Semantic.DeepEqual(live.Spec, n.Spec)
}

// setDeleted makes p the plan of an installed CRD that release deletes:
// the verdict Deleted and an error finding with the objects at stake, or,
// when the live CRD keeps the policy, an info finding. The fix step
// annotates the live CRD with the keep policy (helm upgrade then leaves
// it); nothing is printed that deletes.
func (p *Plan) setDeleted(release HelmRelease, live *apiextensionsv1.CustomResourceDefinition, d *Deletion) {
	p.Deletion = d
	if d.Kept {
		p.Findings = append(p.Findings, schemadiff.Finding{Code: CodeHelmKeepsCRD, Severity: lifecycle.SeverityInfo, Path: "metadata.annotations[" + ResourcePolicyAnnotation + "]",
			Message: fmt.Sprintf("Helm release %s no longer renders this CRD; it carries %s: %s, so helm upgrade leaves it (no longer managed by the release: apply later changes yourself)", release, ResourcePolicyAnnotation, KeepPolicy)})
		return
	}
	p.Apply = Deleted
	p.Run, p.StopsBefore, p.then = []lifecycle.Command{KeepCommand(live.Name)}, "", nil
	p.Findings = append(p.Findings, schemadiff.Finding{Code: CodeHelmDeletesCRD, Severity: lifecycle.SeverityError, Path: "metadata.annotations[" + ResourcePolicyAnnotation + "]",
		Message: d.describe(release)})
	schemadiff.Sort(p.Findings)
	p.DataLoss = true
}

// KeepCommand is the command that gives the installed CRD name Helm's
// keep policy: kubectl annotate crd NAME helm.sh/resource-policy=keep.
// It changes no spec and no object; helm upgrade then leaves the CRD.
func KeepCommand(name string) lifecycle.Command {
	return lifecycle.Kubectl("annotate", "crd", name, ResourcePolicyAnnotation+"="+KeepPolicy)
}

// describe says what the deletion destroys.
func (d *Deletion) describe(release HelmRelease) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Helm release %s no longer renders this CRD among its templates", release)
	if d.MovedToCRDsDir {
		b.WriteString(" (the chart moved it to crds/, which helm upgrade neither applies nor re-creates)")
	}
	b.WriteString(", and it lacks " + ResourcePolicyAnnotation + ": " + KeepPolicy + ": helm upgrade DELETES THE CRD AND EVERY OBJECT OF IT")
	switch {
	case d.Counted:
		fmt.Fprintf(&b, " (%d %s object(s), listed at %s", d.Objects, d.Kind, d.Version)
		if d.Finalizers > 0 {
			fmt.Fprintf(&b, "; %d with finalizers stay Terminating until they are removed, and the CRD with them", d.Finalizers)
		}
		b.WriteString(")")
	default:
		fmt.Fprintf(&b, " (how many %s objects exist is unknown: %s)", d.Kind, d.CountError)
	}
	b.WriteString("; annotate the installed CRD with the keep policy before the upgrade")
	return b.String()
}

// deletion counts what deleting live destroys, listing its objects'
// metadata through the version it serves them at. A list the API server
// refuses leaves the count unknown with its message; other errors are
// returned.
func deletion(ctx context.Context, c Cluster, release HelmRelease, live *apiextensionsv1.CustomResourceDefinition, movedToCRDsDir bool, pageSize int64) (*Deletion, error) {
	d := &Deletion{Release: release.String(), Kind: live.Spec.Names.Kind, MovedToCRDsDir: movedToCRDsDir, Kept: LiveKeeps(live)}
	if d.Kept {
		return d, nil
	}
	d.Version = lifecycle.ListVersion(live)
	if d.Version == "" {
		d.CountError = "no version is served: the objects cannot be listed"
		return d, nil
	}
	err := c.EachObjectMeta(ctx, live, d.Version, pageSize, func(o metav1.Object) error {
		d.Objects++
		if len(o.GetFinalizers()) > 0 {
			d.Finalizers++
		}
		return nil
	})
	if err != nil {
		if !isAPIStatus(err) {
			return nil, err
		}
		d.Objects, d.Finalizers, d.CountError = 0, 0, err.Error()
		return d, nil
	}
	d.Counted = true
	return d, nil
}

// InstalledSource begins the Source of a plan whose CRD no document of
// the release holds: an installed CRD of the release that it deletes.
const InstalledSource = "installed, owned by Helm release "

// deletedPlan is the plan of an installed CRD of the release that the
// release's manifests do not hold at all.
func deletedPlan(release HelmRelease, live *apiextensionsv1.CustomResourceDefinition, d *Deletion) Plan {
	p := Plan{Name: live.Name, Source: InstalledSource + release.String(), Installed: true,
		LiveStorageVersion: lifecycle.StorageVersion(live), LiveDefaultVersion: lifecycle.DefaultVersion(live),
		StoredVersions: append([]string{}, live.Status.StoredVersions...),
		Apply:          Accepted, Static: Accepted, ServerDryRun: DryRunSkipped, ServerMessage: "the release does not apply this CRD",
		Findings: []schemadiff.Finding{}}
	p.setDeleted(release, live, d)
	return p
}

// helmAdoption adds CodeHelmCannotAdopt when the release renders d, a
// template, over an installed CRD it cannot adopt: helm upgrade refuses
// before it changes anything. The fix adopts it (label and annotations,
// without --overwrite: a CRD another release owns makes the command fail
// rather than move it), then applies.
func (p *Plan) helmAdoption(release HelmRelease, live *apiextensionsv1.CustomResourceDefinition, d manifest.CRDDoc, apply lifecycle.Command) {
	if live == nil || release.Name == "" || d.HelmOrigin == manifest.HelmCRDsDir || release.Adoptable(live) || p.Deletion != nil {
		return
	}
	owner := "it carries no Helm ownership (installed from a chart's crds/ directory, or by hand)"
	if other := live.Annotations[ReleaseNameAnnotation]; other != "" && !release.OwnedBy(live) {
		owner = fmt.Sprintf("Helm release %s/%s owns it", live.Annotations[ReleaseNamespaceAnnotation], other)
	}
	msg := fmt.Sprintf("Helm release %s now renders this installed CRD, but %s: helm upgrade refuses (\"exists and cannot be imported into the current release: invalid ownership metadata\") unless it is adopted first (label %s=Helm, annotations %s=%s and %s=%s) or helm upgrade runs with --take-ownership",
		release, owner, ManagedByLabel, ReleaseNameAnnotation, release.Name, ReleaseNamespaceAnnotation, release.Namespace)
	p.Findings = append(p.Findings, schemadiff.Finding{Code: CodeHelmCannotAdopt, Severity: lifecycle.SeverityError, Path: "metadata.annotations[" + ReleaseNameAnnotation + "]", Message: msg})
	p.Apply = Rejected
	p.Reasons = append(p.Reasons, msg)
	adopt := []lifecycle.Command{
		lifecycle.Kubectl("label", "crd", live.Name, ManagedByLabel+"=Helm"),
		lifecycle.Kubectl("annotate", "crd", live.Name, ReleaseNameAnnotation+"="+release.Name, ReleaseNamespaceAnnotation+"="+release.Namespace),
	}
	if len(p.Run) == 0 {
		p.Run = append(adopt, apply)
		return
	}
	p.Run = append(adopt, p.Run...)
}

// hasCode tells whether findings hold one of code.
func hasCode(findings []schemadiff.Finding, code string) bool {
	for _, f := range findings {
		if f.Code == code {
			return true
		}
	}
	return false
}
