package references

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// AdmissionRule is one rule of an admission webhook or policy: the object
// that holds it (Kind, Name, and Webhook within a webhook configuration),
// the rule's index, its matchPolicy (Exact or Equivalent) and what it
// matches.
type AdmissionRule struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Webhook string `json:"webhook,omitempty"`
	// Rule is the rule's index in the webhook's rules, or in the
	// policy's matchConstraints.resourceRules.
	Rule        int      `json:"rule"`
	MatchPolicy string   `json:"matchPolicy"`
	APIGroups   []string `json:"apiGroups"`
	APIVersions []string `json:"apiVersions"`
	Resources   []string `json:"resources"`
	// Operations are the rule's operations (CREATE, UPDATE, DELETE,
	// CONNECT, or "*").
	Operations []string `json:"operations,omitempty"`
}

// ActOn returns the rules among rules that see operation (CREATE,
// UPDATE…) on the resource group/plural through some version: the rule
// names the group and resource (or a wildcard), and the operation or "*".
// Its apiVersions and matchPolicy are not looked at, nor the
// namespaceSelector, objectSelector or matchConditions that may narrow it
// further: a rule returned may act on the request; one not returned does
// not.
func ActOn(rules []AdmissionRule, group, plural, operation string) []AdmissionRule {
	var out []AdmissionRule
	for _, r := range rules {
		if matches(r, group, plural) && (slices.Contains(r.Operations, operation) || slices.Contains(r.Operations, "*")) {
			out = append(out, r)
		}
	}
	return out
}

// String is "KIND NAME[/WEBHOOK] (matchPolicy P, apiVersions [V…])".
func (r AdmissionRule) String() string {
	name := r.Name
	if r.Webhook != "" {
		name += "/" + r.Webhook
	}
	return fmt.Sprintf("%s %s (matchPolicy %s, apiVersions [%s])", r.Kind, name, r.MatchPolicy, strings.Join(r.APIVersions, ", "))
}

// Exact is the matchPolicy under which a rule sees only requests made
// through a version it lists; under Equivalent (the default of webhooks
// and policies in admissionregistration.k8s.io/v1) it also sees requests
// through any other version of the resource, converted to the one it
// lists, while that version is in the CRD's spec.versions.
const Exact = "Exact"

// Versions are the versions of a CRD a rule can still be matched through:
// InSpec those in spec.versions, Served those served.
type Versions struct {
	InSpec, Served []string
}

// Blind returns the rules among rules that match the resource
// group/plural but see no request of it with the CRD's versions v,
// as kube-apiserver v1.37.2 matches them (TestAdmissionRulesOfAnOldVersion,
// with a recording webhook and a policy): an Exact rule sees requests
// only through the versions it lists, so it is blind when it lists no
// served version; an Equivalent rule sees requests through any version
// converted to one it lists that is in spec.versions — served or not — so
// it is blind when it lists none in spec.versions. A rule whose
// apiVersions hold "*" is never blind.
func Blind(rules []AdmissionRule, group, plural string, v Versions) []AdmissionRule {
	var out []AdmissionRule
	for _, r := range rules {
		if !matches(r, group, plural) || slices.Contains(r.APIVersions, "*") {
			continue
		}
		through := v.InSpec
		if r.MatchPolicy == Exact {
			through = v.Served
		}
		if !slices.ContainsFunc(r.APIVersions, func(x string) bool { return slices.Contains(through, x) }) {
			out = append(out, r)
		}
	}
	return out
}

// BecomeBlind returns the rules that see requests of group/plural with
// the versions before and none with those after: what a step that
// changes the versions from before to after (an unserve, a removal)
// leaves blind.
func BecomeBlind(rules []AdmissionRule, group, plural string, before, after Versions) []AdmissionRule {
	blind := Blind(rules, group, plural, before)
	var out []AdmissionRule
	for _, r := range Blind(rules, group, plural, after) {
		if !slices.ContainsFunc(blind, func(b AdmissionRule) bool {
			return b.Kind == r.Kind && b.Name == r.Name && b.Webhook == r.Webhook && b.Rule == r.Rule
		}) {
			out = append(out, r)
		}
	}
	return out
}

// matches reports whether r names group (or "*") and plural (or "*",
// "*/*", "plural/*").
func matches(r AdmissionRule, group, plural string) bool {
	if !slices.Contains(r.APIGroups, group) && !slices.Contains(r.APIGroups, "*") {
		return false
	}
	return slices.ContainsFunc(r.Resources, func(x string) bool {
		return x == plural || x == "*" || x == "*/*" || x == plural+"/*"
	})
}

// CheckAdmissionRules is the name of the check that a step leaves no
// admission rule of the CRD's resource blind.
const CheckAdmissionRules = "AdmissionRules"

// VersionsOf are crd's versions that admission rules can be matched
// through (Versions).
func VersionsOf(crd *apiextensionsv1.CustomResourceDefinition) Versions {
	var v Versions
	for _, x := range crd.Spec.Versions {
		v.InSpec = append(v.InSpec, x.Name)
		if x.Served {
			v.Served = append(v.Served, x.Name)
		}
	}
	return v
}

// AdmissionRulesCheck is the check that the step that turns before into
// after (an unserve; retire's unserve and removal of version) leaves no
// webhook or policy rule of the CRD's resource blind
// (references.BecomeBlind): such a rule sees no request afterwards, and
// the policy silently stops enforcing. Fail naming the rules, with the
// way out (list a version that stays, or "*", in their apiVersions —
// where they come from: the configuration's owner would undo an edit in
// the cluster); fail as unknown when the rules could not be listed (err).
func AdmissionRulesCheck(before, after *apiextensionsv1.CustomResourceDefinition, version string, rules []AdmissionRule, err error) edit.Check {
	gv := lifecycle.GroupVersion(before, version)
	resource := before.Spec.Names.Plural + "." + before.Spec.Group
	c := edit.Check{Name: CheckAdmissionRules}
	if err != nil {
		c.Outcome = edit.Fail
		c.Message = fmt.Sprintf("admission rules of %s unknown: %v; grant list on validatingwebhookconfigurations, mutatingwebhookconfigurations, validatingadmissionpolicies and mutatingadmissionpolicies, and run again — or go on without knowing with --skip-reference-check", resource, err)
		return c
	}
	blind := BecomeBlind(rules, before.Spec.Group, before.Spec.Names.Plural, VersionsOf(before), VersionsOf(after))
	if len(blind) == 0 {
		c.Outcome = edit.Pass
		c.Message = fmt.Sprintf("no admission rule of %s is left without a version to match (%d webhook and policy rules read)", resource, len(rules))
		return c
	}
	for _, r := range blind {
		c.Details = append(c.Details, r.String())
	}
	stays := lifecycle.StorageVersion(after)
	c.Outcome = edit.Fail
	sees := "they see"
	if len(blind) == 1 {
		sees = "it sees"
	}
	c.Message = fmt.Sprintf("%s of %s list %s and no version that stays: afterwards %s no request of %s (an Exact rule sees only requests through a version it lists, and %s is no longer served; an Equivalent one sees requests through any version converted to one it lists that is in spec.versions), so the webhook or policy silently stops enforcing; add %s (or \"*\") to their apiVersions where they come from (the chart or operator that installs them) and run again",
		countOf(len(blind), "admission rule"), resource, gv, sees, resource, version, stays)
	return c
}

// AdmissionRulesSkipped is the check when --skip-reference-check was
// given.
func AdmissionRulesSkipped(resource string) edit.Check {
	return edit.Check{Name: CheckAdmissionRules, Outcome: edit.Warn, Message: "admission rules of " + resource + " were NOT checked (--skip-reference-check)"}
}
