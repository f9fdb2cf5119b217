package report

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
	"github.com/crdversion/kubectl-crdversion/internal/upgrade"
)

// Diff (kind SchemaDiff) is the output of `kubectl crdversion diff`: the
// compatibility findings between two versions of a live CRD, or between
// the CRDs of two manifests.
type Diff struct {
	metav1.TypeMeta `json:",inline"`
	// Old and New say what was compared: "<crd>/<version>" or a path.
	Old  string    `json:"old"`
	New  string    `json:"new"`
	CRDs []CRDDiff `json:"crds"`
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

// DeepCopyObject implements runtime.Object.
func (d *Diff) DeepCopyObject() runtime.Object {
	out := *d
	out.CRDs = make([]CRDDiff, len(d.CRDs))
	for i, c := range d.CRDs {
		c.Findings = append([]schemadiff.Finding(nil), c.Findings...)
		out.CRDs[i] = c
	}
	return &out
}

// UpgradeCheck (kind UpgradeCheck) is the output of `kubectl crdversion
// check-upgrade`: for each CRD of a release's manifests, what applying it
// over the live cluster does, and the commands that make it safe.
type UpgradeCheck struct {
	metav1.TypeMeta `json:",inline"`
	// Source is the manifest file or directory.
	Source string         `json:"source"`
	CRDs   []upgrade.Plan `json:"crds"`
	// Summary counts the findings of all CRDs; Incompatible is also true
	// when a CRD would be rejected.
	Summary Summary `json:"summary"`
}

// DeepCopyObject implements runtime.Object.
func (u *UpgradeCheck) DeepCopyObject() runtime.Object {
	out := *u
	out.CRDs = make([]upgrade.Plan, len(u.CRDs))
	for i, p := range u.CRDs {
		p.StoredVersions = append([]string(nil), p.StoredVersions...)
		p.RemovedServedVersions = append([]string(nil), p.RemovedServedVersions...)
		p.Reasons = append([]string(nil), p.Reasons...)
		p.Findings = append([]schemadiff.Finding(nil), p.Findings...)
		p.Fix = append([]string(nil), p.Fix...)
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
}

// DeepCopyObject implements runtime.Object.
func (d *Doctor) DeepCopyObject() runtime.Object {
	out := *d
	out.CRDs = make([]DoctorCRD, len(d.CRDs))
	for i, c := range d.CRDs {
		c.StoredVersions = append([]string(nil), c.StoredVersions...)
		c.Findings = append([]lifecycle.Finding(nil), c.Findings...)
		if c.Objects != nil {
			n := *c.Objects
			c.Objects = &n
		}
		out.CRDs[i] = c
	}
	return &out
}
