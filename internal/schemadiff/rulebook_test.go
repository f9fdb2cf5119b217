package schemadiff

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
)

// judged renders findings as "rule severity path" (with " @version").
func judged(fs []Finding) []string {
	return renderBy(fs, func(f Finding) string { return f.Rule })
}

func oneVersion(t *testing.T, s string) *apiextensionsv1.CustomResourceDefinition {
	c := crdtest.New("widgets.example.com").Kind("Widget").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("x")).Stored("v1").CRD()
	return setSchema(t, c, "v1", spec(s))
}

func book(t *testing.T, name string) *Rulebook {
	t.Helper()
	r, err := NewRulebook(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRulebookPropertyRules: one schema change per crdify rule and
// option, each with the verdict crdify's documentation gives
// (crdify's validations documentation: every rule Error by default; enum additions
// Disallow unless configured; pattern and nullable policies Disallow),
// and OLM v1's (description None, enum additions allowed).
func TestRulebookPropertyRules(t *testing.T) {
	const str = "type: object\nproperties:\n  f: {type: string}"
	cases := []struct {
		name, old, new string
		crdify, olm    []string
	}{
		{"nothing changed", str, str, nil, nil},
		{"field added", str, "type: object\nproperties:\n  f: {type: string}\n  g: {type: string}", nil, nil},
		{"default added", str, "type: object\nproperties:\n  f: {type: string, default: a}",
			[]string{"default error .spec.f"}, []string{"default error .spec.f"}},
		{"default removed", "type: object\nproperties:\n  f: {type: string, default: a}", str,
			[]string{"default error .spec.f"}, []string{"default error .spec.f"}},
		{"default changed", "type: object\nproperties:\n  f: {type: string, default: a}", "type: object\nproperties:\n  f: {type: string, default: b}",
			[]string{"default error .spec.f"}, []string{"default error .spec.f"}},
		{"enum constraint added", str, "type: object\nproperties:\n  f: {type: string, enum: [a]}",
			[]string{"enum error .spec.f"}, []string{"enum error .spec.f"}},
		{"enum value removed", "type: object\nproperties:\n  f: {type: string, enum: [a, b]}", "type: object\nproperties:\n  f: {type: string, enum: [a]}",
			[]string{"enum error .spec.f"}, []string{"enum error .spec.f"}},
		{"enum value added", "type: object\nproperties:\n  f: {type: string, enum: [a]}", "type: object\nproperties:\n  f: {type: string, enum: [a, b]}",
			[]string{"enum error .spec.f"}, nil},
		{"enum constraint removed", "type: object\nproperties:\n  f: {type: string, enum: [a]}", str,
			[]string{"enum error .spec.f"}, []string{"enum error .spec.f"}},
		{"maxLength added", str, "type: object\nproperties:\n  f: {type: string, maxLength: 5}",
			[]string{"maxLength error .spec.f"}, []string{"maxLength error .spec.f"}},
		{"maxLength decreased", "type: object\nproperties:\n  f: {type: string, maxLength: 5}", "type: object\nproperties:\n  f: {type: string, maxLength: 4}",
			[]string{"maxLength error .spec.f"}, []string{"maxLength error .spec.f"}},
		{"maxLength increased", "type: object\nproperties:\n  f: {type: string, maxLength: 5}", "type: object\nproperties:\n  f: {type: string, maxLength: 6}", nil, nil},
		{"maxLength removed", "type: object\nproperties:\n  f: {type: string, maxLength: 5}", str, nil, nil},
		{"minLength increased", "type: object\nproperties:\n  f: {type: string, minLength: 1}", "type: object\nproperties:\n  f: {type: string, minLength: 2}",
			[]string{"minLength error .spec.f"}, []string{"minLength error .spec.f"}},
		{"minLength decreased", "type: object\nproperties:\n  f: {type: string, minLength: 2}", "type: object\nproperties:\n  f: {type: string, minLength: 1}", nil, nil},
		{"maximum added", "type: object\nproperties:\n  num: {type: integer}", "type: object\nproperties:\n  num: {type: integer, maximum: 3}",
			[]string{"maximum error .spec.num"}, []string{"maximum error .spec.num"}},
		{"minimum added", "type: object\nproperties:\n  num: {type: integer}", "type: object\nproperties:\n  num: {type: integer, minimum: 3}",
			[]string{"minimum error .spec.num"}, []string{"minimum error .spec.num"}},
		{"maxItems decreased", "type: object\nproperties:\n  l: {type: array, maxItems: 3, items: {type: string}}", "type: object\nproperties:\n  l: {type: array, maxItems: 2, items: {type: string}}",
			[]string{"maxItems error .spec.l"}, []string{"maxItems error .spec.l"}},
		{"minItems added", "type: object\nproperties:\n  l: {type: array, items: {type: string}}", "type: object\nproperties:\n  l: {type: array, minItems: 1, items: {type: string}}",
			[]string{"minItems error .spec.l"}, []string{"minItems error .spec.l"}},
		{"maxProperties added", "type: object\nproperties:\n  m: {type: object, additionalProperties: {type: string}}", "type: object\nproperties:\n  m: {type: object, maxProperties: 4, additionalProperties: {type: string}}",
			[]string{"maxProperties error .spec.m"}, []string{"maxProperties error .spec.m"}},
		{"minProperties increased", "type: object\nproperties:\n  m: {type: object, minProperties: 1, additionalProperties: {type: string}}", "type: object\nproperties:\n  m: {type: object, minProperties: 2, additionalProperties: {type: string}}",
			[]string{"minProperties error .spec.m"}, []string{"minProperties error .spec.m"}},
		{"required added", str, "type: object\nrequired: [f, g]\nproperties:\n  f: {type: string}\n  g: {type: string}",
			[]string{"required error .spec.f", "required error .spec.g"}, []string{"required error .spec.f", "required error .spec.g"}},
		{"required removed", "type: object\nrequired: [f]\nproperties:\n  f: {type: string}", str, nil, nil},
		{"type changed", str, "type: object\nproperties:\n  f: {type: integer}",
			[]string{"type error .spec.f"}, []string{"type error .spec.f"}},
		{"description changed", "type: object\nproperties:\n  f: {type: string, description: old}", "type: object\nproperties:\n  f: {type: string, description: new}",
			[]string{"description error .spec.f"}, nil},
		{"pattern added", str, "type: object\nproperties:\n  f: {type: string, pattern: '^a'}",
			[]string{"pattern error .spec.f"}, []string{"pattern error .spec.f"}},
		{"pattern removed", "type: object\nproperties:\n  f: {type: string, pattern: '^a'}", str,
			[]string{"pattern error .spec.f"}, []string{"pattern error .spec.f"}},
		{"pattern changed", "type: object\nproperties:\n  f: {type: string, pattern: '^a'}", "type: object\nproperties:\n  f: {type: string, pattern: '^b'}",
			[]string{"pattern error .spec.f"}, []string{"pattern error .spec.f"}},
		{"nullable added", str, "type: object\nproperties:\n  f: {type: string, nullable: true}",
			[]string{"nullable error .spec.f"}, []string{"nullable error .spec.f"}},
		{"nullable removed", "type: object\nproperties:\n  f: {type: string, nullable: true}", str,
			[]string{"nullable error .spec.f"}, []string{"nullable error .spec.f"}},
		{"format changed is unhandled", str, "type: object\nproperties:\n  f: {type: string, format: date-time}",
			[]string{"unhandled error .spec.f"}, []string{"unhandled error .spec.f"}},
		{"CEL rule added is unhandled", str, "type: object\nproperties:\n  f: {type: string, x-kubernetes-validations: [{rule: 'self != \"\"'}]}",
			[]string{"unhandled error .spec.f"}, []string{"unhandled error .spec.f"}},
		{"map value schema changed: unhandled at the map and judged at its entries", "type: object\nproperties:\n  m: {type: object, additionalProperties: {type: string}}", "type: object\nproperties:\n  m: {type: object, additionalProperties: {type: string, maxLength: 3}}",
			[]string{"maxLength error .spec.m.*", "unhandled error .spec.m"}, []string{"maxLength error .spec.m.*", "unhandled error .spec.m"}},
		// A removed field is compared with an empty schema too: its type
		// "changes" to none, as crdify reports it.
		{"field removed", "type: object\nproperties:\n  f: {type: string}\n  g: {type: string}", str,
			[]string{"existingFieldRemoval error .spec.g @v1", "type error .spec.g"}, []string{"existingFieldRemoval error .spec.g @v1", "type error .spec.g"}},
		{"items changed", "type: object\nproperties:\n  l: {type: array, items: {type: string}}", "type: object\nproperties:\n  l: {type: array, items: {type: string, enum: [a]}}",
			[]string{"enum error .spec.l[*]"}, []string{"enum error .spec.l[*]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old, new := oneVersion(t, c.old), oneVersion(t, c.new)
			for _, b := range []struct {
				rules string
				want  []string
			}{{RulesCrdify, c.crdify}, {RulesOLM, c.olm}} {
				got := judged(book(t, b.rules).Judge(old, new))
				var want []string
				for _, w := range b.want {
					if !strings.Contains(w, " @") {
						w += " @v1"
					}
					want = append(want, w)
				}
				sort.Strings(want)
				if want == nil {
					want = []string{}
				}
				if !slices.Equal(got, want) {
					t.Errorf("--rules %s: got %q, want %q", b.rules, got, want)
				}
			}
		})
	}
}

// TestRulebookCRDRules: scope, storedVersionRemoval (status.storedVersions
// only, as crdify reads it) and the served-version pairs with their
// ratchet and conversion policy.
func TestRulebookCRDRules(t *testing.T) {
	two := func(v2 string, strategy apiextensionsv1.ConversionStrategyType) *apiextensionsv1.CustomResourceDefinition {
		c := crdtest.New("widgets.example.com").Kind("Widget").
			Version("v1", crdtest.Served, crdtest.Fields("x")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("x")).Stored("v1", "v2").CRD()
		setSchema(t, c, "v1", spec("type: object\nproperties:\n  f: {type: string, default: a}"))
		setSchema(t, c, "v2", spec(v2))
		c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: strategy}
		return c
	}
	same := "type: object\nproperties:\n  f: {type: string, default: a}"
	other := "type: object\nproperties:\n  f: {type: string, default: b}"
	cases := []struct {
		name           string
		old, new       *apiextensionsv1.CustomResourceDefinition
		crdify, olm    []string
		olmErrorsCount int
	}{
		{"served versions start to differ under None", two(same, apiextensionsv1.NoneConverter), two(other, apiextensionsv1.NoneConverter),
			[]string{"default error .spec.f @v1->v2", "default error .spec.f @v2"}, []string{"default error .spec.f @v1->v2", "default error .spec.f @v2"}, 2},
		{"served versions start to differ under a webhook: OLM ignores the pairs", two(same, apiextensionsv1.WebhookConverter), two(other, apiextensionsv1.WebhookConverter),
			[]string{"default error .spec.f @v1->v2", "default error .spec.f @v2"}, []string{"default error .spec.f @v2"}, 1},
		{"a difference the old pairs already had is ratcheted", two(other, apiextensionsv1.NoneConverter), two(other, apiextensionsv1.NoneConverter), []string{}, []string{}, 0},
	}
	scoped := two(same, apiextensionsv1.NoneConverter)
	scoped.Spec.Scope = apiextensionsv1.ClusterScoped
	cases = append(cases, struct {
		name           string
		old, new       *apiextensionsv1.CustomResourceDefinition
		crdify, olm    []string
		olmErrorsCount int
	}{"scope changed", two(same, apiextensionsv1.NoneConverter), scoped, []string{"scope error spec.scope"}, []string{"scope error spec.scope"}, 1})
	dropped := two(same, apiextensionsv1.NoneConverter)
	dropped.Spec.Versions = dropped.Spec.Versions[1:]
	cases = append(cases, struct {
		name           string
		old, new       *apiextensionsv1.CustomResourceDefinition
		crdify, olm    []string
		olmErrorsCount int
	}{"stored version removed", two(same, apiextensionsv1.NoneConverter), dropped, []string{"storedVersionRemoval error status.storedVersions @v1"}, []string{"storedVersionRemoval error status.storedVersions @v1"}, 1})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, b := range []struct {
				rules string
				want  []string
			}{{RulesCrdify, c.crdify}, {RulesOLM, c.olm}} {
				if got := judged(book(t, b.rules).Judge(c.old, c.new)); !slices.Equal(got, sorted(b.want...)) {
					t.Errorf("--rules %s: got %q, want %q", b.rules, got, b.want)
				}
			}
			if n := Count(book(t, RulesOLM).Compare(c.old, c.new), lifecycle.SeverityError); n != c.olmErrorsCount {
				t.Errorf("Compare under olm: %d errors, want %d", n, c.olmErrorsCount)
			}
		})
	}
}

// issueRelease is the release of issue 32: a default changed, an enum
// value added, a description edited, and a served version that was never
// stored dropped.
func issueRelease(t *testing.T) (old, new *apiextensionsv1.CustomResourceDefinition) {
	old = crdtest.New("widgets.example.com").Kind("Widget").
		Version("v1alpha1", crdtest.Served, crdtest.Fields("x")).Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("x")).CRD()
	s := "type: object\nproperties:\n  mode: {type: string, default: fast, description: How fast.}\n  size: {type: string, enum: [small, large]}"
	setSchema(t, old, "v1alpha1", spec(s))
	setSchema(t, old, "v1", spec(s))
	new = crdtest.New("widgets.example.com").Kind("Widget").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("x")).CRD()
	setSchema(t, new, "v1", spec("type: object\nproperties:\n  mode: {type: string, default: slow, description: How fast it runs.}\n  size: {type: string, enum: [small, medium, large]}"))
	return old, new
}

// TestIssueRelease: crdversion's rules warn; OLM v1 refuses the changed
// default alone; crdify's defaults also the enum addition and the
// description; a configuration that makes default Warn passes OLM's.
func TestIssueRelease(t *testing.T) {
	old, new := issueRelease(t)
	errorRules := func(fs []Finding) []string {
		var out []string
		for _, f := range fs {
			if f.Severity == lifecycle.SeverityError {
				out = append(out, f.Rule)
			}
		}
		sort.Strings(out)
		return out
	}
	var crdversion *Rulebook
	if got := errorRules(crdversion.Compare(old, new)); len(got) != 0 {
		t.Errorf("crdversion: errors %q, want none (today's verdict)", got)
	}
	if got := errorRules(book(t, RulesOLM).Compare(old, new)); !slices.Equal(got, []string{"default"}) {
		t.Errorf("olm: errors %q, want [default]", got)
	}
	if got := errorRules(book(t, RulesCrdify).Compare(old, new)); !slices.Equal(got, []string{"default", "description", "enum"}) {
		t.Errorf("crdify: errors %q, want [default description enum]", got)
	}
	olm := book(t, RulesOLM)
	if err := olm.Configure([]byte("validations:\n- name: default\n  enforcement: Warn\n"), "crdify.yaml"); err != nil {
		t.Fatal(err)
	}
	fs := olm.Compare(old, new)
	if got := errorRules(fs); len(got) != 0 {
		t.Errorf("olm + default: Warn: errors %q, want none", got)
	}
	if !slices.ContainsFunc(fs, func(f Finding) bool { return f.Rule == "default" && f.Severity == lifecycle.SeverityWarning }) {
		t.Errorf("olm + default: Warn: no default warning in %q", judged(fs))
	}
	if olm.Name != "olm + crdify.yaml" {
		t.Errorf("name %q", olm.Name)
	}
}

// TestRulebookConfigure: crdify's configuration format, its options, and
// a clear error for everything it does not know.
func TestRulebookConfigure(t *testing.T) {
	old, new := oneVersion(t, "type: object\nproperties:\n  f: {type: string, pattern: '^a', enum: [a], nullable: true}\n  g: {type: string, format: date}"),
		oneVersion(t, "type: object\nproperties:\n  f: {type: string, enum: [a, b]}\n  g: {type: string, format: date-time}")
	cases := []struct{ config, want, err string }{
		{"", "enum error .spec.f @v1|nullable error .spec.f @v1|pattern error .spec.f @v1|unhandled error .spec.g @v1", ""},
		{"validations:\n- {name: enum, enforcement: Error, configuration: {additionPolicy: Allow}}\n- {name: pattern, enforcement: Warn, configuration: {removalPolicy: Allow}}\n- {name: nullable, enforcement: Error, configuration: {removalPolicy: Allow}}\nunhandledEnforcement: Warn\n",
			"unhandled warning .spec.g @v1", ""},
		{"validations:\n- {name: enum, enforcement: None}\nunhandledEnforcement: None\n", "nullable error .spec.f @v1|pattern error .spec.f @v1", ""},
		{"conversion: Ignore\n", "enum error .spec.f @v1|nullable error .spec.f @v1|pattern error .spec.f @v1|unhandled error .spec.g @v1", ""},
		{"validations:\n- {name: format, enforcement: None}\n", "", `unknown rule "format"`},
		{"validations:\n- {name: enum, enforcement: Strict}\n", "", `enforcement "Strict" is not Error, Warn or None`},
		{"validations:\n- {name: enum}\n", "", `enforcement "" is not Error, Warn or None`},
		{"validations:\n- {name: enum, enforcement: Error, configuration: {additonPolicy: Allow}}\n", "", `unknown field "additonPolicy"`},
		{"validations:\n- {name: enum, enforcement: Error, configuration: {additionPolicy: Maybe}}\n", "", `"Maybe" is not a policy`},
		{"validations:\n- {name: default, enforcement: Error, configuration: {additionPolicy: Allow}}\n", "", "the rule has no options"},
		{"validations:\n- {name: pattern, enforcement: Error, configuration: {additionPolicy: Allow}}\n", "", "the rule's options are removalPolicy"},
		{"unhandled: Warn\n", "", `unknown field "unhandled"`},
		{"conversion: Webhook\n", "", `conversion "Webhook" is not None or Ignore`},
		{"validations:\n- {name: default, enforcement: None}\n- {name: default, enforcement: Error}\n", "", `rule "default" is configured twice`},
	}
	for _, c := range cases {
		r := book(t, RulesCrdify)
		err := r.Configure([]byte(c.config), "f.yaml")
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "f.yaml: ") {
				t.Errorf("%q: error %v, want one with %q", c.config, err, c.err)
			}
			continue
		case err != nil:
			t.Errorf("%q: %v", c.config, err)
			continue
		}
		if got := strings.Join(judged(r.Judge(old, new)), "|"); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.config, got, c.want)
		}
	}
	if _, err := NewRulebook("strict"); err == nil || !strings.Contains(err.Error(), "crdversion, olm, crdify") {
		t.Errorf("--rules strict: %v", err)
	}
}

// TestRulebookRealReleases: over the shared corpus, every CRD judged
// against itself is clean under both rulebooks (the served pairs ratchet
// against themselves), and in each release pair that removes versions,
// storedVersionRemoval names exactly the removed versions that
// status.storedVersions holds, and nothing when it holds the storage
// version alone; every finding carries one of the judged rules or
// unhandled.
func TestRulebookRealReleases(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpusDir(), "*", "*", "*", "*.yaml"))
	if len(files) < 20 {
		t.Skipf("shared corpus not found at %s (%d files)", corpusDir(), len(files))
	}
	crds := 0
	for _, f := range files {
		docs, err := manifest.ReadCRDs(f, false)
		if err != nil {
			continue
		}
		for _, d := range docs {
			crds++
			for _, rules := range []string{RulesCrdify, RulesOLM} {
				if got := book(t, rules).Judge(d.CRD, d.CRD); len(got) != 0 {
					t.Errorf("%s %s against itself under %s: %q", f, d.CRD.Name, rules, judged(got))
				}
			}
		}
	}
	if crds < 50 {
		t.Fatalf("only %d CRDs in the corpus", crds)
	}
	pairs := shape4Pairs(t)
	for _, p := range pairs {
		old, new := p.old.DeepCopy(), p.new
		var removed []string
		for _, v := range old.Spec.Versions {
			if lifecycle.FindVersion(new, v.Name) == nil {
				removed = append(removed, v.Name)
			}
		}
		old.Status.StoredVersions = append(append([]string{}, removed...), lifecycle.StorageVersion(old))
		fs := book(t, RulesOLM).Judge(old, new)
		var named []string
		for _, f := range fs {
			if f.Rule == "storedVersionRemoval" {
				named = append(named, f.Version)
			}
			if !slices.Contains(judgedRules, f.Rule) && f.Rule != "unhandled" {
				t.Errorf("%s: finding without a judged rule: %+v", p.name, f)
			}
		}
		if want := strings.Join(removed, ","); len(named) != 1 || named[0] != want {
			t.Errorf("%s: storedVersionRemoval %q, want %q", p.name, named, want)
		}
		old.Status.StoredVersions = []string{lifecycle.StorageVersion(old)}
		if slices.ContainsFunc(book(t, RulesOLM).Judge(old, new), func(f Finding) bool { return f.Rule == "storedVersionRemoval" }) {
			t.Errorf("%s: storedVersionRemoval with only the storage version stored", p.name)
		}
	}
	if len(pairs) < 5 {
		t.Errorf("only %d release pairs", len(pairs))
	}
}

type releasePair struct {
	name     string
	old, new *apiextensionsv1.CustomResourceDefinition
}

// shape4Pairs are the corpus's release pairs that remove a version
// (pairchecks.json: "OLD -> NEW", one CRD per file).
func shape4Pairs(t *testing.T) []releasePair {
	data, err := os.ReadFile(filepath.Join(corpusDir(), "pairchecks.json"))
	if err != nil {
		t.Skipf("no shared corpus: %v", err)
	}
	var checks map[string]json.RawMessage
	if err := json.Unmarshal(data, &checks); err != nil {
		t.Fatal(err)
	}
	var out []releasePair
	for _, name := range slices.Sorted(maps.Keys(checks)) {
		o, n, ok := strings.Cut(name, " -> ")
		if !ok {
			t.Fatalf("pair %q", name)
		}
		od, err := manifest.ReadCRDs(filepath.Join(corpusDir(), o), false)
		if err != nil || len(od) != 1 {
			t.Fatalf("%s: %v (%d CRDs)", o, err, len(od))
		}
		nd, err := manifest.ReadCRDs(filepath.Join(corpusDir(), n), false)
		if err != nil || len(nd) != 1 {
			t.Fatalf("%s: %v (%d CRDs)", n, err, len(nd))
		}
		out = append(out, releasePair{name, od[0].CRD, nd[0].CRD})
	}
	return out
}
