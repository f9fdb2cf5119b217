package schemadiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// Enforcement is how a rule's finding counts, in crdify's terms: Error
// (an error-level finding, exit 1), Warn (a warning) or None (not
// reported).
type Enforcement string

// The enforcement policies of crdify's configuration.
const (
	EnforceError Enforcement = "Error"
	EnforceWarn  Enforcement = "Warn"
	EnforceNone  Enforcement = "None"
)

// The rulebooks --rules names.
const (
	RulesCrdversion = "crdversion"
	RulesOLM        = "olm"
	RulesCrdify     = "crdify"
)

// RulebookNames are the values of --rules.
var RulebookNames = []string{RulesCrdversion, RulesOLM, RulesCrdify}

// Codes only a rulebook's judgement gives.
const (
	// CodeDescriptionChanged is a property's description changed (crdify's
	// description rule; crdversion does not judge prose).
	CodeDescriptionChanged = "DescriptionChanged"
	// CodeUnhandledChange is a difference of a schema node that none of
	// crdify's named rules judges (its fail-closed "unhandled").
	CodeUnhandledChange = "UnhandledChange"
)

// judgedRules are the rules a Rulebook judges with, in crdify's
// (sigs.k8s.io/crdify at 54162f2) registry: the CRD rules, then the
// property rules. A configuration naming any other rule is refused.
var judgedRules = append([]string{"scope", "storedVersionRemoval", "existingFieldRemoval", "default", "enum", "required", "type", "description", "pattern", "nullable"}, crdifyBounds...)

// Rulebook judges a release's CRD against the one before it the way
// crdify does, and so the way OLM v1's CRD upgrade safety preflight does
// before it installs or upgrades a bundle: the CRD rules (scope,
// storedVersionRemoval, existingFieldRemoval), the property rules for each
// version in both CRDs, and the property rules between every pair of
// served versions of the new CRD that the old CRD's own pairs did not
// already break (crdify's ratchet). A difference of a schema node that no
// rule judges is "unhandled". Each rule's findings count as its
// Enforcement says. A nil Rulebook is crdversion's own rules (CRDs).
type Rulebook struct {
	// Name is the rulebook's name: "olm" or "crdify", with " + FILE" when
	// a configuration file changed it.
	Name        string
	enforcement map[string]Enforcement
	unhandled   Enforcement
	// ignoreConversion skips the served-version pairs of a CRD whose
	// conversion strategy is Webhook (crdify's conversion: Ignore).
	ignoreConversion bool
	// The rules' options, true for the policy Allow.
	enumAddition, patternRemoval, nullableAddition, nullableRemoval bool
}

// NewRulebook returns the rulebook --rules names: nil for "crdversion"
// (crdversion's own severities), crdify's defaults for "crdify" (every
// rule Error, unhandled Error, conversion None), OLM v1's for "olm"
// (crdify's, with description None, enum additions allowed and
// conversion Ignore, as operator-controller's crdupgradesafety preflight
// configures it). Any other name is an error.
func NewRulebook(name string) (*Rulebook, error) {
	switch name {
	case RulesCrdversion:
		return nil, nil
	case RulesCrdify:
		return &Rulebook{Name: name, enforcement: map[string]Enforcement{}, unhandled: EnforceError}, nil
	case RulesOLM:
		return &Rulebook{Name: name, enforcement: map[string]Enforcement{"description": EnforceNone}, unhandled: EnforceError,
			ignoreConversion: true, enumAddition: true}, nil
	}
	return nil, fmt.Errorf("--rules %q: one of %s", name, strings.Join(RulebookNames, ", "))
}

// ruleConfig is one entry of a crdify configuration file's validations.
type ruleConfig struct {
	Name          string          `json:"name"`
	Enforcement   Enforcement     `json:"enforcement"`
	Configuration json.RawMessage `json:"configuration,omitempty"`
}

// crdifyConfig is crdify's configuration file.
type crdifyConfig struct {
	Validations          []ruleConfig `json:"validations"`
	UnhandledEnforcement Enforcement  `json:"unhandledEnforcement"`
	Conversion           string       `json:"conversion"`
}

// policy is an option of the enum, pattern and nullable rules.
type policy string

// allow reports whether p is Allow; unset is Disallow, crdify's default
// for every option.
func (p policy) allow(name string) (bool, error) {
	switch p {
	case "Allow":
		return true, nil
	case "", "Disallow":
		return false, nil
	}
	return false, fmt.Errorf("%s: %q is not a policy (Allow or Disallow)", name, string(p))
}

// Configure applies a crdify configuration file (YAML or JSON, named
// source in errors) over the rulebook: validations: [{name, enforcement:
// Error|Warn|None, configuration}], unhandledEnforcement, conversion:
// None|Ignore. What the file does not set keeps the rulebook's value, as
// crdify keeps its defaults. Unknown fields, rule names, enforcements and
// options are errors, so a misspelt rule never passes silently.
func (r *Rulebook) Configure(data []byte, source string) error {
	var c crdifyConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	enforcement := func(what string, e Enforcement) error {
		switch e {
		case EnforceError, EnforceWarn, EnforceNone:
			return nil
		}
		return fmt.Errorf("%s: %s: enforcement %q is not Error, Warn or None", source, what, string(e))
	}
	seen := map[string]bool{}
	for _, v := range c.Validations {
		if seen[v.Name] {
			return fmt.Errorf("%s: rule %q is configured twice", source, v.Name)
		}
		seen[v.Name] = true
		if !slices.Contains(judgedRules, v.Name) {
			return fmt.Errorf("%s: unknown rule %q (the rules are %s)", source, v.Name, strings.Join(judgedRules, ", "))
		}
		if err := enforcement("rule "+v.Name, v.Enforcement); err != nil {
			return err
		}
		r.enforcement[v.Name] = v.Enforcement
		if err := r.configureRule(v); err != nil {
			return fmt.Errorf("%s: rule %s: %w", source, v.Name, err)
		}
	}
	if c.UnhandledEnforcement != "" {
		if err := enforcement("unhandledEnforcement", c.UnhandledEnforcement); err != nil {
			return err
		}
		r.unhandled = c.UnhandledEnforcement
	}
	switch c.Conversion {
	case "":
	case "None":
		r.ignoreConversion = false
	case "Ignore":
		r.ignoreConversion = true
	default:
		return fmt.Errorf("%s: conversion %q is not None or Ignore", source, c.Conversion)
	}
	r.Name += " + " + source
	return nil
}

func (r *Rulebook) configureRule(v ruleConfig) error {
	var opts struct {
		AdditionPolicy policy `json:"additionPolicy"`
		RemovalPolicy  policy `json:"removalPolicy"`
	}
	if len(v.Configuration) > 0 && string(v.Configuration) != "null" {
		d := json.NewDecoder(bytes.NewReader(v.Configuration))
		d.DisallowUnknownFields()
		if err := d.Decode(&opts); err != nil {
			return fmt.Errorf("configuration: %w", err)
		}
	}
	has := map[string][]string{"enum": {"additionPolicy"}, "pattern": {"removalPolicy"}, "nullable": {"additionPolicy", "removalPolicy"}}[v.Name]
	if opts.AdditionPolicy != "" && !slices.Contains(has, "additionPolicy") || opts.RemovalPolicy != "" && !slices.Contains(has, "removalPolicy") {
		if len(has) == 0 {
			return fmt.Errorf("configuration: the rule has no options")
		}
		return fmt.Errorf("configuration: the rule's options are %s", strings.Join(has, ", "))
	}
	var err error
	switch v.Name {
	case "enum":
		// A configured enum without the option is Disallow, as in
		// crdify, whatever the rulebook's was.
		r.enumAddition, err = opts.AdditionPolicy.allow("additionPolicy")
	case "pattern":
		r.patternRemoval, err = opts.RemovalPolicy.allow("removalPolicy")
	case "nullable":
		if r.nullableAddition, err = opts.AdditionPolicy.allow("additionPolicy"); err == nil {
			r.nullableRemoval, err = opts.RemovalPolicy.allow("removalPolicy")
		}
	}
	return err
}

// severity is the finding severity of a rule's enforcement; ok is false
// for None.
func (r *Rulebook) severity(rule string) (lifecycle.Severity, bool) {
	e, set := r.enforcement[rule]
	if rule == "unhandled" {
		e, set = r.unhandled, true
	}
	switch {
	case !set, e == EnforceError:
		return lifecycle.SeverityError, true
	case e == EnforceWarn:
		return lifecycle.SeverityWarning, true
	}
	return "", false
}

// Judge compares the CRD as it is (old; status.storedVersions as given)
// with the release's (new) under the rulebook. Its findings carry the
// rule that gave them; findings whose rule is None are left out. A
// served-version pair's findings have Version "LOWER->HIGHER".
func (r *Rulebook) Judge(old, new *apiextensionsv1.CustomResourceDefinition) []Finding {
	var out []Finding
	add := func(rule, code, version, path, msg string) {
		if sev, ok := r.severity(rule); ok {
			out = append(out, Finding{Code: code, Severity: sev, Version: version, Path: path, Message: msg, Rule: rule})
		}
	}
	if old.Spec.Scope != new.Spec.Scope {
		add("scope", CodeScopeChanged, "", "spec.scope", fmt.Sprintf("scope changed from %s to %s", old.Spec.Scope, new.Spec.Scope))
	}
	var removed []string
	for _, s := range old.Status.StoredVersions {
		if lifecycle.FindVersion(new, s) == nil {
			removed = append(removed, s)
		}
	}
	if len(removed) > 0 {
		add("storedVersionRemoval", CodeStoredVersionRemoved, strings.Join(removed, ","), "status.storedVersions",
			fmt.Sprintf("stored versions removed: %s", strings.Join(removed, ", ")))
	}
	for i := range new.Spec.Versions {
		nv := &new.Spec.Versions[i]
		ov := lifecycle.FindVersion(old, nv.Name)
		if ov == nil {
			continue
		}
		newNodes := flatten(nv)
		for _, p := range slices.Sorted(maps.Keys(flatten(ov))) {
			if _, ok := newNodes[p]; !ok {
				add("existingFieldRemoval", CodeFieldRemoved, nv.Name, p, "field removed")
			}
		}
	}
	for i := range old.Spec.Versions {
		ov := &old.Spec.Versions[i]
		if nv := lifecycle.FindVersion(new, ov.Name); nv != nil {
			for _, f := range r.compareVersions(ov, nv) {
				f.Version = ov.Name
				out = append(out, f)
			}
		}
	}
	if !(r.ignoreConversion && isWebhook(new)) {
		before := map[string]bool{}
		for _, f := range r.servedPairs(old) {
			before[f.Version+"\x00"+f.Path+"\x00"+f.Rule+"\x00"+f.Message] = true
		}
		for _, f := range r.servedPairs(new) {
			if !before[f.Version+"\x00"+f.Path+"\x00"+f.Rule+"\x00"+f.Message] {
				out = append(out, f)
			}
		}
	}
	Sort(out)
	return out
}

// Compare is the rulebook's findings for a CRD's update (Judge), and
// crdversion's own (CRDs) for a nil rulebook. Whatever the rulebook, the
// findings of an update the API server rejects (RejectsUpdate: a changed
// scope, group or kind, a version of status.storedVersions, or of the
// storage version that stands for it in a manifest without status,
// removed) stay errors: no configuration makes the API server accept it.
func (r *Rulebook) Compare(old, new *apiextensionsv1.CustomResourceDefinition) []Finding {
	own := CRDs(old, new)
	if r == nil {
		return own
	}
	out := r.Judge(old, new)
	for _, f := range own {
		if RejectsUpdate(f.Code) && !slices.ContainsFunc(out, func(g Finding) bool {
			return g.Code == f.Code && g.Severity == lifecycle.SeverityError
		}) {
			out = append(out, f)
		}
	}
	Sort(out)
	return out
}

// servedPairs compares every pair of served versions of crd, the lower
// version (Kubernetes' version priority) as the old one.
func (r *Rulebook) servedPairs(crd *apiextensionsv1.CustomResourceDefinition) []Finding {
	var served []*apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Served {
			served = append(served, &crd.Spec.Versions[i])
		}
	}
	sort.SliceStable(served, func(i, j int) bool {
		return version.CompareKubeAwareVersionStrings(served[i].Name, served[j].Name) < 0
	})
	var out []Finding
	for i := range served {
		for _, b := range served[i+1:] {
			for _, f := range r.compareVersions(served[i], b) {
				f.Version = served[i].Name + "->" + b.Name
				out = append(out, f)
			}
		}
	}
	return out
}

// compareVersions runs the property rules on every node of a that
// differs in b (its children left out), a node b lacks compared with an
// empty one, and reports what no rule handled as unhandled.
func (r *Rulebook) compareVersions(a, b *apiextensionsv1.CustomResourceDefinitionVersion) []Finding {
	an, bn := flatten(a), flatten(b)
	var out []Finding
	for _, p := range slices.Sorted(maps.Keys(an)) {
		o := withoutChildren(an[p])
		n := &apiextensionsv1.JSONSchemaProps{}
		if s, ok := bn[p]; ok {
			n = withoutChildren(s)
		}
		if equality.Semantic.DeepEqual(o, n) {
			continue
		}
		addAt := func(at, rule, code, format string, args ...any) {
			if sev, ok := r.severity(rule); ok {
				out = append(out, Finding{Code: code, Severity: sev, Path: at, Message: fmt.Sprintf(format, args...), Rule: rule})
			}
		}
		add := func(rule, code, format string, args ...any) { addAt(p, rule, code, format, args...) }
		r.judgeNode(p, o, n, add, addAt)
		if !equality.Semantic.DeepEqual(o, n) {
			add("unhandled", CodeUnhandledChange, "changed where no rule judges: %s", strings.Join(keywordsDiffering(o, n), ", "))
		}
	}
	return out
}

type ruleAdd func(rule, code, format string, args ...any)

// ruleAddAt is a ruleAdd at another path than the node's.
type ruleAddAt func(path, rule, code, format string, args ...any)

// judgeNode runs each property rule on a node pair at path and clears
// what the rule judged from both, so that what is left differs only where
// no rule looked.
func (r *Rulebook) judgeNode(path string, o, n *apiextensionsv1.JSONSchemaProps, add ruleAdd, addAt ruleAddAt) {
	switch od, nd := o.Default, n.Default; {
	case od == nil && nd != nil:
		add("default", CodeDefaultAdded, "default %s added", nd.Raw)
	case od != nil && nd == nil:
		add("default", CodeDefaultChanged, "default %s removed", od.Raw)
	case od != nil && !bytes.Equal(od.Raw, nd.Raw):
		add("default", CodeDefaultChanged, "default changed from %s to %s", od.Raw, nd.Raw)
	}
	o.Default, n.Default = nil, nil

	oe, ne := rawSet(o.Enum), rawSet(n.Enum)
	switch removed, added := sets.List(oe.Difference(ne)), sets.List(ne.Difference(oe)); {
	case oe.Len() == 0 && ne.Len() > 0:
		add("enum", CodeEnumValuesRemoved, "enum constraint added: %s", strings.Join(added, ", "))
	case len(removed) > 0:
		add("enum", CodeEnumValuesRemoved, "enum values removed: %s", strings.Join(removed, ", "))
	case len(added) > 0 && !r.enumAddition:
		add("enum", CodeEnumValuesAdded, "enum values added: %s", strings.Join(added, ", "))
	}
	o.Enum, n.Enum = nil, nil

	// crdify reports the node's new required fields together; one
	// finding per field, at the field, lets --allow name each.
	for _, f := range sets.List(sets.New(n.Required...).Difference(sets.New(o.Required...))) {
		addAt(childPath(strings.TrimSuffix(path, "."), f), "required", CodeRequiredAdded, "newly required")
	}
	o.Required, n.Required = nil, nil

	if o.Type != n.Type {
		add("type", CodeTypeChanged, "type changed from %q to %q", o.Type, n.Type)
	}
	o.Type, n.Type = "", ""

	if o.Description != n.Description {
		add("description", CodeDescriptionChanged, "description changed")
	}
	o.Description, n.Description = "", ""

	switch {
	case o.Pattern == n.Pattern:
	case o.Pattern == "":
		add("pattern", Tightened("pattern"), "pattern %q added", n.Pattern)
	case n.Pattern == "":
		if !r.patternRemoval {
			add("pattern", Loosened("pattern"), "pattern %q removed", o.Pattern)
		}
	default:
		add("pattern", CodePatternChanged, "pattern changed from %q to %q", o.Pattern, n.Pattern)
	}
	o.Pattern, n.Pattern = "", ""

	switch {
	case !o.Nullable && n.Nullable && !r.nullableAddition:
		add("nullable", CodeNullableAdded, "nullable added")
	case o.Nullable && !n.Nullable && !r.nullableRemoval:
		add("nullable", CodeNullableRemoved, "nullable removed")
	}
	o.Nullable, n.Nullable = false, false

	maxRule := func(rule string, older, newer *float64) {
		switch {
		case older == nil && newer != nil:
			add(rule, Tightened(rule), "%s %s added", rule, num(newer))
		case older != nil && newer != nil && *newer < *older:
			add(rule, Tightened(rule), "%s decreased from %s to %s", rule, num(older), num(newer))
		}
	}
	minRule := func(rule string, older, newer *float64) {
		switch {
		case older == nil && newer != nil:
			add(rule, Tightened(rule), "%s %s added", rule, num(newer))
		case older != nil && newer != nil && *newer > *older:
			add(rule, Tightened(rule), "%s increased from %s to %s", rule, num(older), num(newer))
		}
	}
	maxRule("maximum", o.Maximum, n.Maximum)
	maxRule("maxItems", f64(o.MaxItems), f64(n.MaxItems))
	maxRule("maxLength", f64(o.MaxLength), f64(n.MaxLength))
	maxRule("maxProperties", f64(o.MaxProperties), f64(n.MaxProperties))
	minRule("minimum", o.Minimum, n.Minimum)
	minRule("minItems", f64(o.MinItems), f64(n.MinItems))
	minRule("minLength", f64(o.MinLength), f64(n.MinLength))
	minRule("minProperties", f64(o.MinProperties), f64(n.MinProperties))
	o.Maximum, n.Maximum, o.Minimum, n.Minimum = nil, nil, nil, nil
	o.MaxItems, n.MaxItems, o.MaxLength, n.MaxLength, o.MaxProperties, n.MaxProperties = nil, nil, nil, nil, nil, nil
	o.MinItems, n.MinItems, o.MinLength, n.MinLength, o.MinProperties, n.MinProperties = nil, nil, nil, nil, nil, nil
}

func rawSet(vals []apiextensionsv1.JSON) sets.Set[string] {
	s := sets.New[string]()
	for _, v := range vals {
		s.Insert(string(v.Raw))
	}
	return s
}

// withoutChildren is a shallow copy of s without its properties and
// items, which are nodes of their own.
func withoutChildren(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	c := *s
	c.Properties, c.Items = nil, nil
	return &c
}

// keywordsDiffering names the JSON keywords whose values differ between
// two nodes.
func keywordsDiffering(a, b *apiextensionsv1.JSONSchemaProps) []string {
	if out := keysDiffering(a, b); len(out) > 0 {
		return out
	}
	return []string{"an empty value set or unset"}
}

// flatten lists every schema node of a version by path: the root ("."),
// properties (".spec.size"), items ("[*]"), additionalProperties (".*")
// and the branches of allOf, anyOf, oneOf (".allOf[0]") and not (".not").
func flatten(v *apiextensionsv1.CustomResourceDefinitionVersion) map[string]*apiextensionsv1.JSONSchemaProps {
	out := map[string]*apiextensionsv1.JSONSchemaProps{}
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return out
	}
	var walk func(s *apiextensionsv1.JSONSchemaProps, path string)
	walk = func(s *apiextensionsv1.JSONSchemaProps, path string) {
		out[rootPath(path)] = s
		if s.Items != nil && s.Items.Schema != nil {
			walk(s.Items.Schema, path+"[*]")
		}
		for k, branches := range map[string][]apiextensionsv1.JSONSchemaProps{"allOf": s.AllOf, "anyOf": s.AnyOf, "oneOf": s.OneOf} {
			for i := range branches {
				walk(&branches[i], path+"."+k+"["+strconv.Itoa(i)+"]")
			}
		}
		if s.Not != nil {
			walk(s.Not, path+".not")
		}
		for name, p := range s.Properties {
			walk(&p, childPath(path, name))
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			walk(s.AdditionalProperties.Schema, path+".*")
		}
	}
	walk(v.Schema.OpenAPIV3Schema, "")
	return out
}
