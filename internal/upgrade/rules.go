package upgrade

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
)

// JudgeBy adds a rulebook's verdict on the update from live to next
// (schemadiff.Rulebook.Judge: OLM v1's or crdify's rules) to the plan's
// own, the stricter of the two counting: a finding of both (same code,
// version and path) takes the rulebook's severity when that is stricter
// and says so; a finding of the rulebook alone is added. The plan's own
// verdicts (Apply, DataLoss, the fix steps) are the cluster's and do not
// change: the rulebook adds what a bundle installer such as OLM v1
// refuses besides.
func (p *Plan) JudgeBy(r *schemadiff.Rulebook, live, next *apiextensionsv1.CustomResourceDefinition) {
	rank := map[lifecycle.Severity]int{lifecycle.SeverityError: 0, lifecycle.SeverityWarning: 1, lifecycle.SeverityInfo: 2}
	for _, j := range r.Judge(live, next) {
		own := -1
		for i, f := range p.Findings {
			if f.Code == j.Code && f.Version == j.Version && f.Path == j.Path {
				own = i
				break
			}
		}
		if own < 0 {
			j.Message = fmt.Sprintf("%s (rule %s of %s)", j.Message, j.Rule, r.Name)
			p.Findings = append(p.Findings, j)
			continue
		}
		f := &p.Findings[own]
		f.Rule = j.Rule
		if rank[j.Severity] < rank[f.Severity] {
			f.Message = fmt.Sprintf("%s (rule %s of %s makes it %s; crdversion's verdict: %s)", f.Message, j.Rule, r.Name, article(j.Severity), f.Severity)
			f.Severity = j.Severity
		}
	}
	schemadiff.Sort(p.Findings)
}

func article(s lifecycle.Severity) string {
	if s == lifecycle.SeverityError || s == lifecycle.SeverityInfo {
		return "an " + string(s)
	}
	return "a " + string(s)
}
