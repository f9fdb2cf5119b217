package upgrade

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// Codes of the verdict on a served version the release removes.
const (
	// CodeRemovedVersionInUse: clients use a served version the release
	// removes or unserves; they get 404 once it is applied.
	CodeRemovedVersionInUse = "RemovedVersionInUse"
	// CodeRemovedVersionUsageUnknown: whether clients use it could not
	// be seen (unknown is not "none").
	CodeRemovedVersionUsageUnknown = "RemovedVersionUsageUnknown"
	// CodeReleaseOlder: the release lacks a version the cluster serves
	// and has none newer: an older release (a downgrade) or another
	// chart's copy of a shared CRD.
	CodeReleaseOlder = "ReleaseOlderThanCluster"
)

// UsageTargets are the served versions that applying the release would
// take from clients: RemovedServedVersions, when the apply is not
// rejected (a rejected apply removes nothing). Their client usage decides
// the verdict (JudgeRemovals).
func (p *Plan) UsageTargets() []string {
	if p.Apply == Rejected || p.Deletion != nil {
		return nil
	}
	return p.RemovedServedVersions
}

// JudgeRemovals records the client usage of each of UsageTargets from
// as (by version; a target missing from it is unknown): clients seen is
// an error (RemovedVersionInUse), usage that could not be seen an error
// too (RemovedVersionUsageUnknown), each with the evidence and the ways
// out; no client seen is said on the removal's own warning, with the
// window.
func (p *Plan) JudgeRemovals(as map[string]usage.Assessment) {
	for _, v := range p.UsageTargets() {
		a, ok := as[v]
		switch {
		case !ok:
			p.addRemovalFinding(CodeRemovedVersionUsageUnknown, v, fmt.Sprintf("served version %s is removed by the release, and its client usage was not measured", v))
		case a.Verdict == usage.InUse:
			p.addRemovalFinding(CodeRemovedVersionInUse, v, fmt.Sprintf("served version %s is removed by the release while %s: they get 404 once it is applied; ways out: %s; or keep %s in the release until they have moved", v, a.Message(), strings.Join(a.InUseWaysOut(), "; "), v))
		case a.Verdict == usage.Unknown:
			p.addRemovalFinding(CodeRemovedVersionUsageUnknown, v, fmt.Sprintf("served version %s is removed by the release, and %s; ways out: %s", v, a.Message(), strings.Join(a.WaysOut(), "; ")))
		default:
			p.noteRemoval(v, a.Message())
		}
	}
	schemadiff.Sort(p.Findings)
}

// RemovalsUnmeasured records for each of UsageTargets that its client
// usage could not be measured (why: missing permissions, a source that
// failed): RemovedVersionUsageUnknown, an error, with the ways on.
func (p *Plan) RemovalsUnmeasured(why string) {
	for _, v := range p.UsageTargets() {
		p.addRemovalFinding(CodeRemovedVersionUsageUnknown, v, fmt.Sprintf("served version %s is removed by the release, and its client usage could not be measured: %s; ways out: remove that cause and re-run; once you know by other means that no client uses %s: --skip-usage-check", v, why, v))
	}
	schemadiff.Sort(p.Findings)
}

// RemovalsNotChecked says on each removal's warning that its client
// usage was not checked, and why (--skip-usage-check).
func (p *Plan) RemovalsNotChecked(why string) {
	for _, v := range p.UsageTargets() {
		p.noteRemoval(v, "client usage NOT checked ("+why+")")
	}
}

func (p *Plan) addRemovalFinding(code, version, msg string) {
	p.Findings = append(p.Findings, schemadiff.Finding{Code: code, Severity: lifecycle.SeverityError, Version: version, Path: "spec.versions", Message: msg})
}

// noteRemoval appends note to the finding that says version is removed
// or unserved.
func (p *Plan) noteRemoval(version, note string) {
	for i, f := range p.Findings {
		if f.Version == version && (f.Code == schemadiff.CodeVersionRemoved || f.Code == schemadiff.CodeVersionUnserved) {
			p.Findings[i].Message += "; " + note
			return
		}
	}
}

// olderReleases are the findings for each served version of live that
// next lacks while it has no newer version: the release is older than
// the installed CRD, or another chart's copy of a CRD they share.
func olderReleases(live, next *apiextensionsv1.CustomResourceDefinition) []schemadiff.Finding {
	var out []schemadiff.Finding
	for _, v := range live.Spec.Versions {
		if !v.Served {
			continue
		}
		if lifecycle.FindVersion(next, v.Name) != nil {
			// Kept (an unserved version is a deliberate step).
			continue
		}
		newer := false
		for _, n := range next.Spec.Versions {
			newer = newer || version.CompareKubeAwareVersionStrings(n.Name, v.Name) > 0
		}
		if !newer {
			out = append(out, schemadiff.Finding{Code: CodeReleaseOlder, Severity: lifecycle.SeverityWarning, Version: v.Name, Path: "spec.versions",
				Message: fmt.Sprintf("the release lacks %s, which the cluster serves, and has no newer version (it has %s): an older release of the CRD than the installed one (a downgrade), or another chart's copy of a CRD it shares; applying it takes %s from every client of the cluster", v.Name, strings.Join(lifecycle.VersionNames(next), ", "), v.Name)})
		}
	}
	return out
}
