// Package report defines the machine-readable output of kubectl crdversion
// (-o json|yaml). Each report is a Kubernetes-style object of API group
// crdversion.kubectl.io, version v1alpha1, so cli-runtime's printers
// (json, yaml, jsonpath, go-template) work on it. The fields are documented in
// docs/output.md; new fields may be added, existing ones keep their meaning.
package report

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/fleet"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
	"github.com/crdversion/kubectl-crdversion/internal/reach"
	"github.com/crdversion/kubectl-crdversion/internal/retire"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
	"github.com/crdversion/kubectl-crdversion/internal/version"
)

// SchemeGroupVersion is the API group and version of every report.
var SchemeGroupVersion = schema.GroupVersion{Group: "crdversion.kubectl.io", Version: "v1alpha1"}

// Scheme knows the report kinds, for printers.NewTypeSetter.
var Scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(SchemeGroupVersion.WithKind("CRDStatus"), &Status{})
	s.AddKnownTypeWithName(SchemeGroupVersion.WithKind("PluginVersion"), &Version{})
	s.AddKnownTypeWithName(SchemeGroupVersion.WithKind("MigrationReport"), &Migration{})
	s.AddKnownTypeWithName(SchemeGroupVersion.WithKind("RetirePlan"), &Retire{})
	s.AddKnownTypeWithName(SchemeGroupVersion.WithKind("FleetStatus"), &FleetStatus{})
	s.AddKnownTypeWithName(SchemeGroupVersion.WithKind("FleetRetire"), &FleetRetire{})
	s.AddKnownTypeWithName(SchemeGroupVersion.WithKind("FleetUpgradeCheck"), &FleetUpgradeCheck{})
	s.AddKnownTypeWithName(SchemeGroupVersion.WithKind("FleetDoctor"), &FleetDoctor{})
	s.AddKnownTypeWithName(SchemeGroupVersion.WithKind("SchemaDiff"), &Diff{})
	s.AddKnownTypeWithName(SchemeGroupVersion.WithKind("UpgradeCheck"), &UpgradeCheck{})
	s.AddKnownTypeWithName(SchemeGroupVersion.WithKind("DoctorReport"), &Doctor{})
	s.AddKnownTypeWithName(SchemeGroupVersion.WithKind("ReferenceRepair"), &ReferenceRepair{})
	return s
}

// Status (kind CRDStatus) is the output of `kubectl crdversion status`: the lifecycle
// analysis of one CRD plus its object count.
type Status struct {
	metav1.TypeMeta    `json:",inline"`
	lifecycle.Analysis `json:",inline"`
	// Objects is nil when counting was skipped (--count=false).
	Objects *ObjectCount `json:"objects,omitempty"`
	// References is set with --references: the owner references and
	// scale targets that name each version other than the storage version.
	References *StatusReferences `json:"references,omitempty"`
}

// StatusReferences is what status --references found (references.Find
// over every listable resource).
type StatusReferences struct {
	// Versions has one entry per version that references name, in the
	// order of spec.versions, then versions the CRD no longer has.
	Versions []VersionReferences `json:"versions"`
	// Resources and Objects are what the inventory read; Unseen names
	// the resources it could not read: the counts are then a floor.
	Resources int      `json:"resources"`
	Objects   int64    `json:"objects"`
	Unseen    []string `json:"unseen,omitempty"`
}

// VersionReferences counts the references that name one version: how
// many, on how many objects, of how many resources.
type VersionReferences struct {
	Version    string `json:"version"`
	References int    `json:"references"`
	Objects    int    `json:"objects"`
	Resources  int    `json:"resources"`
}

// Summary counts the findings of the analysis; Incompatible is true when
// one is an error, and status then exits with code 1.
func (s *Status) Summary() Summary {
	var sum Summary
	for _, f := range s.Findings {
		sum.Add(f.Severity)
	}
	return sum
}

// ObjectCount is the number of objects of a CRD in all namespaces.
type ObjectCount struct {
	// Count is the number of objects listed; meaningful only when Error is empty.
	Count int `json:"count"`
	// Version is the version through which the objects were listed.
	Version string `json:"version,omitempty"`
	// Error is the API server's message when the list failed (for example
	// objects stored at a version missing from spec.versions).
	Error string `json:"error,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (s *Status) DeepCopyObject() runtime.Object {
	out := *s
	out.StoredVersions = slices.Clone(s.StoredVersions)
	out.Versions = slices.Clone(s.Versions)
	out.Findings = slices.Clone(s.Findings)
	if s.Conversion.Webhook != nil {
		w := *s.Conversion.Webhook
		w.ConversionReviewVersions = slices.Clone(w.ConversionReviewVersions)
		out.Conversion.Webhook = &w
	}
	if s.Next != nil {
		n := *s.Next
		out.Next = &n
	}
	if s.Objects != nil {
		o := *s.Objects
		out.Objects = &o
	}
	return &out
}

// Version (kind PluginVersion) is the output of `kubectl crdversion version -o json|yaml`.
type Version struct {
	metav1.TypeMeta `json:",inline"`
	version.Info    `json:",inline"`
}

// DeepCopyObject implements runtime.Object.
func (v *Version) DeepCopyObject() runtime.Object {
	out := *v
	return &out
}

// Migration (kind MigrationReport) is the output of `kubectl crdversion
// migrate -o json|yaml`.
type Migration struct {
	metav1.TypeMeta `json:",inline"`
	result.Result   `json:",inline"`
}

// DeepCopyObject implements runtime.Object.
func (m *Migration) DeepCopyObject() runtime.Object {
	out := *m
	out.Failures = slices.Clone(m.Failures)
	out.Trim.Before = slices.Clone(m.Trim.Before)
	out.Trim.After = slices.Clone(m.Trim.After)
	return &out
}

// Retire (kind RetirePlan) is the output of `kubectl crdversion retire -o
// json|yaml`: the steps as evaluated last, what the run did, and the
// evidence it used.
type Retire struct {
	metav1.TypeMeta `json:",inline"`
	CRD             string `json:"crd"`
	Version         string `json:"version"`
	// DryRun is true when only the plan was made.
	DryRun bool `json:"dryRun,omitempty"`
	// Outcome is Complete (the version is retired), Blocked (a step is
	// blocked; see Steps), Planned (a dry run with no blocked step) or
	// Interrupted (a step failed while running).
	Outcome string        `json:"outcome"`
	Steps   []retire.Step `json:"steps"`
	// Taken lists the steps this run took, in order.
	Taken []string `json:"taken,omitempty"`
	// Usage is the client-usage assessment of step 1, with the evidence
	// of every source, when measured.
	Usage *usage.Assessment `json:"usage,omitempty"`
	// Migration is the migrate report, when this run migrated.
	Migration *result.Result `json:"migration,omitempty"`
	// ManagedFields is the managedFields clean-up, when this run did one.
	ManagedFields *retire.ManagedFieldsCleanup `json:"managedFields,omitempty"`
}

// NewRetire is the report of the retire run of version of the CRD named crd
// that ended with res (a dry run when dryRun): its outcome, steps, usage
// and managedFields clean-up, the IDs of the steps taken, and the migrate
// report when the run migrated with the client engine.
func NewRetire(crd, version string, dryRun bool, res *retire.Result) *Retire {
	r := &Retire{CRD: crd, Version: version, DryRun: dryRun,
		Outcome: string(res.Outcome), Steps: res.Steps, Usage: res.Usage, ManagedFields: res.ManagedFields}
	for _, id := range res.Taken {
		r.Taken = append(r.Taken, string(id))
	}
	if res.Migration != nil {
		r.Migration, _ = res.Migration.Report.(*result.Result)
	}
	return r
}

// DeepCopyObject implements runtime.Object.
func (r *Retire) DeepCopyObject() runtime.Object {
	out := *r
	out.Steps = slices.Clone(r.Steps)
	out.Taken = slices.Clone(r.Taken)
	return &out
}

// FleetStatus (kind FleetStatus) is the output of `kubectl crdversion status
// CRD --contexts …|--all-contexts -o json|yaml`.
type FleetStatus struct {
	metav1.TypeMeta `json:",inline"`
	CRD             string          `json:"crd"`
	Clusters        []fleet.Cluster `json:"clusters"`
	Verdicts        []fleet.Verdict `json:"verdicts"`
	// Seconds is the time the whole run took; each cluster's is in Clusters.
	Seconds float64 `json:"seconds"`
}

// DeepCopyObject implements runtime.Object.
func (r *FleetStatus) DeepCopyObject() runtime.Object {
	out := *r
	out.Clusters = slices.Clone(r.Clusters)
	out.Verdicts = slices.Clone(r.Verdicts)
	return &out
}

// FleetRetire (kind FleetRetire) is the output of `kubectl crdversion retire
// CRD OLD --contexts …|--all-contexts -o json|yaml`.
type FleetRetire struct {
	metav1.TypeMeta `json:",inline"`
	CRD             string               `json:"crd"`
	Version         string               `json:"version"`
	DryRun          bool                 `json:"dryRun,omitempty"`
	Clusters        []FleetRetireCluster `json:"clusters"`
	Seconds         float64              `json:"seconds"`
}

// FleetRetireCluster is the outcome of retire in one cluster.
type FleetRetireCluster struct {
	Context string      `json:"context"`
	Server  string      `json:"server,omitempty"`
	Reach   reach.Reach `json:"reach"`
	// Outcome is the RetirePlan outcome, or Unreachable, Forbidden,
	// NotInstalled or Failed when retire could not run there.
	Outcome string  `json:"outcome"`
	Error   string  `json:"error,omitempty"`
	Report  *Retire `json:"report,omitempty"`
	// Log is what retire printed for this cluster.
	Log     string  `json:"log,omitempty"`
	Seconds float64 `json:"seconds"`
}

// DeepCopyObject implements runtime.Object.
func (r *FleetRetire) DeepCopyObject() runtime.Object {
	out := *r
	out.Clusters = slices.Clone(r.Clusters)
	return &out
}

// FleetUpgradeCheck (kind FleetUpgradeCheck) is the output of `kubectl
// crdversion check-upgrade -f FILE --contexts …|--all-contexts -o json|yaml`.
type FleetUpgradeCheck struct {
	metav1.TypeMeta `json:",inline"`
	Source          string                `json:"source"`
	Clusters        []FleetUpgradeCluster `json:"clusters"`
	// Answer to "can the release be applied in every cluster?": yes, no (a
	// cluster would reject it or has error-level findings), unknown (a
	// cluster could not be checked).
	Answer  fleet.Answer `json:"answer"`
	Summary Summary      `json:"summary"`
	Seconds float64      `json:"seconds"`
}

// FleetUpgradeCluster is the check of one cluster.
type FleetUpgradeCluster struct {
	Context string        `json:"context"`
	Server  string        `json:"server,omitempty"`
	Reach   reach.Reach   `json:"reach"`
	Error   string        `json:"error,omitempty"`
	Check   *UpgradeCheck `json:"check,omitempty"`
	Seconds float64       `json:"seconds"`
}

// DeepCopyObject implements runtime.Object.
func (r *FleetUpgradeCheck) DeepCopyObject() runtime.Object {
	out := *r
	out.Clusters = slices.Clone(r.Clusters)
	return &out
}

// FleetDoctor (kind FleetDoctor) is the output of `kubectl crdversion
// doctor … --contexts …|--all-contexts -o json|yaml`.
type FleetDoctor struct {
	metav1.TypeMeta `json:",inline"`
	Clusters        []FleetDoctorCluster `json:"clusters"`
	// Summary adds up the clusters' findings; Incompatible is also true when
	// a cluster could not be checked.
	Summary Summary `json:"summary"`
	Seconds float64 `json:"seconds"`
}

// FleetDoctorCluster is doctor in one cluster.
type FleetDoctorCluster struct {
	Context string      `json:"context"`
	Server  string      `json:"server,omitempty"`
	Reach   reach.Reach `json:"reach"`
	Error   string      `json:"error,omitempty"`
	Doctor  *Doctor     `json:"doctor,omitempty"`
	Seconds float64     `json:"seconds"`
}

// DeepCopyObject implements runtime.Object.
func (r *FleetDoctor) DeepCopyObject() runtime.Object {
	out := *r
	out.Clusters = slices.Clone(r.Clusters)
	return &out
}
