package report

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
	"github.com/crdversion/kubectl-crdversion/internal/upgrade"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// Diff (kind SchemaDiff) is the output of `kubectl crdversion diff`: the
// compatibility findings between two versions of a live CRD, or between
// the CRDs of two manifests.
type Diff struct {
	metav1.TypeMeta `json:",inline"`
	// Old and New say what was compared: "<crd>/<version>" or a path.
	Old string `json:"old"`
	New string `json:"new"`
	// Rules names the rulebook that judged the findings ("olm", "crdify",
	// with " + FILE" for a configuration file); empty for crdversion's
	// own rules.
	Rules string    `json:"rules,omitempty"`
	CRDs  []CRDDiff `json:"crds"`
	// Summary counts the findings of all CRDs.
	Summary Summary `json:"summary"`
}

// CRDDiff is the findings for one CRD.
type CRDDiff struct {
	Name string `json:"name"`
	// From and To are the versions compared (diff CRD FROM TO only).
	From     string               `json:"from,omitempty"`
	To       string               `json:"to,omitempty"`
	Findings []schemadiff.Finding `json:"findings"`
}

// Summary counts findings by severity. Incompatible is true when there is
// an error-level finding (the exit code is then 1).
type Summary struct {
	Errors       int  `json:"errors"`
	Warnings     int  `json:"warnings"`
	Infos        int  `json:"infos"`
	Incompatible bool `json:"incompatible"`
	// Acknowledged counts the findings an --allow acknowledged: they are
	// not in the other counts and do not make the report Incompatible.
	Acknowledged int `json:"acknowledged,omitempty"`
}

// AddFinding counts f: by its severity, or as Acknowledged.
func (s *Summary) AddFinding(f schemadiff.Finding) {
	if f.Acknowledged {
		s.Acknowledged++
		return
	}
	s.Add(f.Severity)
}

// Add counts one finding of severity s.
func (s *Summary) Add(sev lifecycle.Severity) {
	switch sev {
	case lifecycle.SeverityError:
		s.Errors++
		s.Incompatible = true
	case lifecycle.SeverityWarning:
		s.Warnings++
	default:
		s.Infos++
	}
}

// Merge adds the counts of o to s; s is Incompatible when either is (a
// fleet's summary is the merge of its clusters').
func (s *Summary) Merge(o Summary) {
	s.Errors += o.Errors
	s.Warnings += o.Warnings
	s.Infos += o.Infos
	s.Acknowledged += o.Acknowledged
	s.Incompatible = s.Incompatible || o.Incompatible
}

// DeepCopyObject implements runtime.Object.
func (d *Diff) DeepCopyObject() runtime.Object {
	out := *d
	out.CRDs = make([]CRDDiff, len(d.CRDs))
	for i, c := range d.CRDs {
		c.Findings = slices.Clone(c.Findings)
		out.CRDs[i] = c
	}
	return &out
}

// UpgradeCheck (kind UpgradeCheck) is the output of `kubectl crdversion
// check-upgrade`: for each CRD of a release's manifests, what applying it
// over the live cluster does, and the commands that make it safe.
type UpgradeCheck struct {
	metav1.TypeMeta `json:",inline"`
	// Source is the manifest file or directory, or the chart.
	Source string `json:"source"`
	// Helm is the Helm release checked (--chart, --release); nil for
	// plain manifests.
	Helm *HelmSource `json:"helm,omitempty"`
	// Rules names the rulebook whose verdict was added to crdversion's
	// ("olm", "crdify", with " + FILE" for a configuration file); empty
	// without one.
	Rules string         `json:"rules,omitempty"`
	CRDs  []upgrade.Plan `json:"crds"`
	// Summary counts the findings of all CRDs; Incompatible is also true
	// when a CRD would be rejected.
	Summary Summary `json:"summary"`
}

// HelmSource is the Helm release a check-upgrade is for.
type HelmSource struct {
	// Chart is the chart directory or archive; empty for rendered
	// manifests (-f with --release).
	Chart     string `json:"chart,omitempty"`
	Release   string `json:"release,omitempty"`
	Namespace string `json:"namespace"`
	// DeletionsChecked is true when the release is named: the installed
	// CRDs it owns and no longer renders were looked for. False, which
	// CRDs helm upgrade deletes is not known.
	DeletionsChecked bool `json:"deletionsChecked"`
}

// Add appends the plan of one CRD and counts its findings; a CRD that
// would be rejected makes the check Incompatible.
func (u *UpgradeCheck) Add(p upgrade.Plan) {
	for _, f := range p.Findings {
		u.Summary.AddFinding(f)
	}
	if p.Apply == upgrade.Rejected {
		u.Summary.Incompatible = true
	}
	u.CRDs = append(u.CRDs, p)
}

// Acknowledge marks the findings that allows acknowledge
// (schemadiff.Acknowledge) and counts the check again; a CRD the API
// server would reject keeps it Incompatible.
func (u *UpgradeCheck) Acknowledge(allows []*schemadiff.Allow) {
	plans := u.CRDs
	u.CRDs, u.Summary = nil, Summary{}
	for _, p := range plans {
		schemadiff.Acknowledge(p.Name, p.Findings, allows)
		u.Add(p)
	}
}

// DeepCopyObject implements runtime.Object.
func (u *UpgradeCheck) DeepCopyObject() runtime.Object {
	out := *u
	if u.Helm != nil {
		h := *u.Helm
		out.Helm = &h
	}
	out.CRDs = make([]upgrade.Plan, len(u.CRDs))
	for i, p := range u.CRDs {
		p.StoredVersions = slices.Clone(p.StoredVersions)
		p.RemovedServedVersions = slices.Clone(p.RemovedServedVersions)
		p.Reasons = slices.Clone(p.Reasons)
		p.Findings = slices.Clone(p.Findings)
		p.Fix = slices.Clone(p.Fix)
		if p.Deletion != nil {
			d := *p.Deletion
			p.Deletion = &d
		}
		if p.Immutable != nil {
			im := *p.Immutable
			im.Fields, im.Collisions = slices.Clone(im.Fields), slices.Clone(im.Collisions)
			p.Immutable = &im
		}
		out.CRDs[i] = p
	}
	return &out
}

// Doctor (kind DoctorReport) is the output of `kubectl crdversion doctor`.
type Doctor struct {
	metav1.TypeMeta `json:",inline"`
	CRDs            []DoctorCRD `json:"crds"`
	// Requests is the number of API requests doctor made (the CRD list
	// included; webhook probes are not API requests).
	Requests int64 `json:"requests"`
	// Summary counts the findings; Incompatible is true when one is an
	// error (the exit code is then 1).
	Summary Summary `json:"summary"`
}

// DoctorCRD is one CRD's health.
type DoctorCRD struct {
	Name           string          `json:"name"`
	State          lifecycle.State `json:"state"`
	StorageVersion string          `json:"storageVersion"`
	StoredVersions []string        `json:"storedVersions"`
	Conversion     string          `json:"conversion"`
	// Objects is nil when they could not be counted.
	Objects  *int                `json:"objects,omitempty"`
	Findings []lifecycle.Finding `json:"findings"`
	// Lists are the lists of the objects that doctor made, one per served
	// version it listed at (the list version first).
	Lists []ObjectList `json:"lists,omitempty"`
	// Usage are the client-usage assessments of its deprecated served
	// versions, with the evidence of every source.
	Usage []usage.Assessment `json:"usage,omitempty"`
}

// ObjectList is the outcome of listing a CRD's objects at one served
// version: the API server converts each object to the version it is
// listed at, so an object it cannot convert fails the whole list.
type ObjectList struct {
	Version string `json:"version"`
	// Objects is the number of objects listed; nil when the list failed.
	Objects *int `json:"objects,omitempty"`
	// Error is the API server's answer when the list failed.
	Error string `json:"error,omitempty"`
	// Unreadable are the objects ("namespace/name", or "name" for a
	// cluster-scoped CRD) that the API server could not read at Version.
	Unreadable []string `json:"unreadable,omitempty"`
	// MoreUnreadable is true when more objects than Unreadable names may
	// be unreadable at Version (the API server names at most 100 per list;
	// objects are read one by one only up to a bound, or could not be
	// listed at any version).
	MoreUnreadable bool `json:"moreUnreadable,omitempty"`
}

// Add appends one CRD's health and counts its findings.
func (d *Doctor) Add(c DoctorCRD) {
	for _, f := range c.Findings {
		d.Summary.Add(f.Severity)
	}
	d.CRDs = append(d.CRDs, c)
}

// DeepCopyObject implements runtime.Object.
func (d *Doctor) DeepCopyObject() runtime.Object {
	out := *d
	out.CRDs = make([]DoctorCRD, len(d.CRDs))
	for i, c := range d.CRDs {
		c.StoredVersions = slices.Clone(c.StoredVersions)
		c.Findings = slices.Clone(c.Findings)
		c.Usage = slices.Clone(c.Usage)
		if c.Lists != nil {
			c.Lists = make([]ObjectList, len(c.Lists))
			for j, l := range d.CRDs[i].Lists {
				l.Unreadable = slices.Clone(l.Unreadable)
				if l.Objects != nil {
					n := *l.Objects
					l.Objects = &n
				}
				c.Lists[j] = l
			}
		}
		if c.Objects != nil {
			n := *c.Objects
			c.Objects = &n
		}
		out.CRDs[i] = c
	}
	return &out
}

// NewDiff is the report of a comparison of old and new (each "<crd>/<version>"
// or the paths read) with the findings of crds, counted in its Summary.
func NewDiff(old, new string, crds ...CRDDiff) *Diff {
	r := &Diff{Old: old, New: new, CRDs: crds}
	for _, c := range crds {
		r.Summary.Merge(c.Summary())
	}
	return r
}

// Acknowledge marks the findings that allows acknowledge
// (schemadiff.Acknowledge) and counts the report again.
func (d *Diff) Acknowledge(allows []*schemadiff.Allow) {
	d.Summary = Summary{}
	for _, c := range d.CRDs {
		schemadiff.Acknowledge(c.Name, c.Findings, allows)
		d.Summary.Merge(c.Summary())
	}
}

// Summary counts the CRD's findings.
func (c CRDDiff) Summary() Summary {
	var s Summary
	for _, f := range c.Findings {
		s.AddFinding(f)
	}
	return s
}
