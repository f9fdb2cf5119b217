package upgrade

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
)

// TestJudgeBy: OLM v1's verdict is added to the plan's own, the stricter
// counting: a changed default (crdversion: a warning) becomes an error
// that says why, a change only the rulebook judges (a description under
// crdify) is added with its rule, and the plan's own verdicts stay.
func TestJudgeBy(t *testing.T) {
	live := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v1").CRD()
	image := func(crd *apiextensionsv1.CustomResourceDefinition, def, desc string) {
		spec := lifecycle.FindVersion(crd, "v1").Schema.OpenAPIV3Schema.Properties["spec"]
		spec.Properties["image"] = apiextensionsv1.JSONSchemaProps{Type: "string", Description: desc, Default: &apiextensionsv1.JSON{Raw: []byte(`"` + def + `"`)}}
		lifecycle.FindVersion(crd, "v1").Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	image(live, "a", "old")
	next := live.DeepCopy()
	image(next, "b", "new")

	for _, c := range []struct {
		rules string
		want  []string
	}{
		{schemadiff.RulesOLM, []string{"DefaultChanged error default"}},
		{schemadiff.RulesCrdify, []string{"DefaultChanged error default", "DescriptionChanged error description"}},
	} {
		p := Check(live, next, "r.yaml", ApplyCommand([]string{"r.yaml"}, false))
		apply, loss := p.Apply, p.DataLoss
		r, err := schemadiff.NewRulebook(c.rules)
		if err != nil {
			t.Fatal(err)
		}
		p.JudgeBy(r, live, next)
		var got []string
		for _, f := range p.Findings {
			got = append(got, strings.Join([]string{f.Code, string(f.Severity), f.Rule}, " "))
			if f.Code == schemadiff.CodeDefaultChanged && !strings.Contains(f.Message, "rule default of "+c.rules+" makes it an error; crdversion's verdict: warning") {
				t.Errorf("%s: the raised finding does not say why: %s", c.rules, f.Message)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.rules, got, c.want)
		}
		if p.Apply != apply || p.DataLoss != loss {
			t.Errorf("%s: the plan's own verdicts changed", c.rules)
		}
	}
}
