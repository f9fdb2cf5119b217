package references

import (
	"strings"
	"testing"
)

// TestBlind: an Exact rule is blind without a served version it lists,
// an Equivalent one without a listed version in spec.versions; "*" never
// is; rules of another group or resource are not the CRD's; BecomeBlind
// is what a step leaves blind, not what was blind before.
func TestBlind(t *testing.T) {
	rule := func(name, policy string, groups, versions, resources []string) AdmissionRule {
		return AdmissionRule{Kind: "ValidatingWebhookConfiguration", Name: name, MatchPolicy: policy, APIGroups: groups, APIVersions: versions, Resources: resources}
	}
	g, crontabs := []string{"stable.example.com"}, []string{"crontabs"}
	rules := []AdmissionRule{
		rule("exact-old", Exact, g, []string{"v1alpha1"}, crontabs),
		rule("equivalent-old", "Equivalent", g, []string{"v1alpha1"}, crontabs),
		rule("exact-both", Exact, g, []string{"v1alpha1", "v1"}, crontabs),
		rule("any-version", Exact, g, []string{"*"}, crontabs),
		rule("any-group-any-resource", "Equivalent", []string{"*"}, []string{"v1alpha1"}, []string{"*"}),
		rule("other-resource", Exact, g, []string{"v1alpha1"}, []string{"widgets"}),
		rule("other-group", Exact, []string{"other.example.com"}, []string{"v1alpha1"}, crontabs),
		rule("subresources", Exact, g, []string{"v1alpha1"}, []string{"crontabs/*"}),
		rule("never", Exact, g, []string{"v9"}, crontabs),
	}
	names := func(rs []AdmissionRule) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return strings.Join(out, " ")
	}
	both := Versions{InSpec: []string{"v1alpha1", "v1"}, Served: []string{"v1alpha1", "v1"}}
	unserved := Versions{InSpec: []string{"v1alpha1", "v1"}, Served: []string{"v1"}}
	removed := Versions{InSpec: []string{"v1"}, Served: []string{"v1"}}
	for _, tc := range []struct {
		name string
		got  []AdmissionRule
		want string
	}{
		{"both served", Blind(rules, "stable.example.com", "crontabs", both), "never"},
		{"v1alpha1 unserved", Blind(rules, "stable.example.com", "crontabs", unserved), "exact-old subresources never"},
		{"v1alpha1 removed", Blind(rules, "stable.example.com", "crontabs", removed), "exact-old equivalent-old any-group-any-resource subresources never"},
		{"the unserve", BecomeBlind(rules, "stable.example.com", "crontabs", both, unserved), "exact-old subresources"},
		{"the removal", BecomeBlind(rules, "stable.example.com", "crontabs", unserved, removed), "equivalent-old any-group-any-resource"},
	} {
		if got := names(tc.got); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if s := rules[0].String(); s != "ValidatingWebhookConfiguration exact-old (matchPolicy Exact, apiVersions [v1alpha1])" {
		t.Errorf("String %q", s)
	}
}

// TestActOn: a rule acts on UPDATE of a resource when it names its group
// (or "*"), the resource (or a wildcard) and UPDATE (or "*"), whatever its
// versions and match policy; a rule of a subresource only, of another
// group or resource, or of other operations does not.
func TestActOn(t *testing.T) {
	rule := func(name string, groups, resources, ops []string) AdmissionRule {
		return AdmissionRule{Kind: "MutatingWebhookConfiguration", Name: name, MatchPolicy: Exact, APIGroups: groups,
			APIVersions: []string{"v9"}, Resources: resources, Operations: ops}
	}
	g, crontabs := []string{"stable.example.com"}, []string{"crontabs"}
	rules := []AdmissionRule{
		rule("update", g, crontabs, []string{"CREATE", "UPDATE"}),
		rule("everything", []string{"*"}, []string{"*"}, []string{"*"}),
		rule("all-subresources", g, []string{"*/*"}, []string{"UPDATE"}),
		rule("create-only", g, crontabs, []string{"CREATE"}),
		rule("status-only", g, []string{"crontabs/status"}, []string{"UPDATE"}),
		rule("other-group", []string{"other.example.com"}, crontabs, []string{"UPDATE"}),
		rule("other-resource", g, []string{"widgets"}, []string{"*"}),
	}
	var got []string
	for _, r := range ActOn(rules, "stable.example.com", "crontabs", "UPDATE") {
		got = append(got, r.Name)
	}
	if want := "update everything all-subresources"; strings.Join(got, " ") != want {
		t.Errorf("ActOn = %q, want %q", strings.Join(got, " "), want)
	}
}
