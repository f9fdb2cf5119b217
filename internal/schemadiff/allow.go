package schemadiff

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// Rules are the names of crdify's rules (sigs.k8s.io/crdify), those RuleOf
// gives and its two that no code here is the subject of: description
// (descriptions are not compared) and unhandled (its catch-all).
var Rules = append([]string{"scope", "storedVersionRemoval", "existingFieldRemoval", "enum", "default", "required", "type", "pattern", "nullable", "description", "unhandled"}, crdifyBounds...)

// Allow is one acknowledgement of a deliberate change (--allow): the
// findings whose rule (or, for a finding no rule covers, whose code) is
// Rule, of the CRD named CRD when set, at Path or under it when set.
type Allow struct {
	Rule, CRD, Path string
	// Text is the acknowledgement as given.
	Text string
	// Matched counts the findings it acknowledged.
	Matched int
	// Refused names the findings it matched and could not acknowledge:
	// the API server rejects the update they describe (RejectsUpdate),
	// so no acknowledgement makes it apply.
	Refused []string
}

// RejectsUpdate reports whether a finding of code means that the API
// server rejects the CRD's update (an immutable field changed, a version
// of status.storedVersions removed, the server's own refusal, which
// upgrade names "ApplyRejected"): acknowledging it would pass a release
// that cannot be applied.
func RejectsUpdate(code string) bool {
	switch code {
	case CodeScopeChanged, CodeGroupChanged, CodeKindChanged, CodeStoredVersionRemoved, "ApplyRejected":
		return true
	}
	return false
}

var codeShape = regexp.MustCompile(`^[A-Z][A-Za-z]+$`)

// ParseAllow reads RULE, RULE=CRD or RULE=CRD:PATH. RULE is a crdify rule
// name (Rules) or a finding code ("NoneConversionPrunesFields"); PATH is a
// property path (".spec.mode") or a CRD field ("spec.scope"). An unknown
// rule name is an error.
func ParseAllow(s string) (*Allow, error) {
	a := &Allow{Text: s}
	rule, where, scoped := strings.Cut(s, "=")
	a.Rule = rule
	if scoped {
		a.CRD, a.Path, _ = strings.Cut(where, ":")
		if a.CRD == "" {
			return nil, fmt.Errorf("--allow %q: RULE=CRD or RULE=CRD:PATH names the CRD after the =", s)
		}
	}
	if !slices.Contains(Rules, rule) && !codeShape.MatchString(rule) {
		return nil, fmt.Errorf("--allow %q: %q is neither a crdify rule (%s) nor a finding code", s, rule, strings.Join(Rules, ", "))
	}
	return a, nil
}

// Acknowledge marks each finding of the CRD crd that one of allows
// matches as Acknowledged, counting the matches in the Allow; a finding
// whose update the API server rejects (RejectsUpdate) is not marked, and
// the Allow's Refused names it.
func Acknowledge(crd string, fs []Finding, allows []*Allow) {
	for i := range fs {
		for _, a := range allows {
			switch {
			case !a.matches(crd, fs[i]):
			case RejectsUpdate(fs[i].Code):
				a.Refused = append(a.Refused, fmt.Sprintf("%s at %s of %s", fs[i].Code, fs[i].Path, crd))
			default:
				fs[i].Acknowledged = true
				a.Matched++
			}
		}
	}
}

func (a *Allow) matches(crd string, f Finding) bool {
	if a.Rule != f.Rule && a.Rule != f.Code {
		return false
	}
	if a.CRD != "" && a.CRD != crd {
		return false
	}
	return a.Path == "" || a.Path == f.Path || schema.Under([]string{a.Path}, f.Path)
}
