// Package schemadiff compares CustomResourceDefinition schemas and versions
// for compatibility: what happens to objects written under an old schema
// (or an old release of a CRD) when the API server reads, prunes, defaults
// and validates them under a new one.
//
// Each difference is a Finding with a severity:
//
//   - error: stored data is dropped or changed, or objects that were valid
//     are rejected on their next write (a field pruned, a type changed, a
//     newly required field, fewer enum values, a tighter bound or pattern,
//     unknown fields no longer preserved), or the API server refuses the new
//     CRD (a status.storedVersions entry missing from spec.versions, a
//     changed scope);
//   - warning: behaviour changes that break some clients or some objects
//     (a default changed, list or map merge semantics changed, a served
//     version removed, a pattern replaced by another);
//   - info: loosening and additions, which existing objects and clients
//     survive.
//
// Paths of property findings are in kubectl's JSONPath style without braces,
// relative to the object (".spec.replicas", ".spec.rules[*].name",
// ".spec.labels.*"); paths of CRD findings name the CRD field
// ("spec.scope", "status.storedVersions"). Everything here is pure.
package schemadiff

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// Finding is one compatibility difference.
type Finding struct {
	// Code is a stable identifier, one of the Code constants (bound codes
	// are <Keyword>Tightened / <Keyword>Loosened, e.g. MaxLengthTightened).
	Code     string             `json:"code"`
	Severity lifecycle.Severity `json:"severity"`
	// Version is the CRD version the finding is about; empty for the CRD as
	// a whole.
	Version string `json:"version,omitempty"`
	// Path is the property (".spec.size") or CRD field ("spec.scope").
	Path string `json:"path"`
	// Message says what changed and what it does to objects or clients.
	Message string `json:"message"`
	// Rule is the name of the crdify rule (sigs.k8s.io/crdify, whose
	// rules OLM v1 runs before it installs or upgrades a CRD) whose
	// subject the finding is ("default", "enum", "maxLength", …; RuleOf),
	// or empty when no named rule covers it.
	Rule string `json:"rule,omitempty"`
	// Acknowledged is set when an --allow names the finding as a
	// deliberate change (Acknowledge): it is still reported, and does not
	// count toward the exit code.
	Acknowledged bool `json:"acknowledged,omitempty"`
}

// crdifyBounds are the numeric keywords crdify checks with a rule of the
// keyword's own name.
var crdifyBounds = []string{"maximum", "minimum", "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties"}

// RuleOf is the crdify rule whose subject a finding of code is: scope,
// storedVersionRemoval, existingFieldRemoval, enum, default, required,
// type, pattern, nullable, or a bound keyword (maximum, minLength, …);
// "" for a code no named rule covers (crdify judges such differences
// under its catch-all rule "unhandled", or not at all).
func RuleOf(code string) string {
	switch code {
	case CodeScopeChanged:
		return "scope"
	case CodeStoredVersionRemoved:
		return "storedVersionRemoval"
	case CodeFieldRemoved:
		return "existingFieldRemoval"
	case CodeEnumValuesRemoved, CodeEnumValuesAdded:
		return "enum"
	case CodeDefaultChanged, CodeDefaultAdded:
		return "default"
	case CodeRequiredAdded, CodeRequiredRemoved:
		return "required"
	case CodeTypeChanged:
		return "type"
	case CodePatternChanged, Tightened("pattern"), Loosened("pattern"):
		return "pattern"
	case CodeNullableAdded, CodeNullableRemoved:
		return "nullable"
	}
	for _, k := range crdifyBounds {
		if code == Tightened(k) || code == Loosened(k) {
			return k
		}
	}
	return ""
}

// nameRules sets the Rule of each of fs from its code.
func nameRules(fs []Finding) []Finding {
	for i := range fs {
		fs[i].Rule = RuleOf(fs[i].Code)
	}
	return fs
}

// Codes of property findings.
const (
	CodeFieldRemoved                 = "FieldRemoved"
	CodeFieldAdded                   = "FieldAdded"
	CodeTypeChanged                  = "TypeChanged"
	CodeRequiredAdded                = "RequiredAdded"
	CodeRequiredRemoved              = "RequiredRemoved"
	CodeEnumValuesRemoved            = "EnumValuesRemoved"
	CodeEnumValuesAdded              = "EnumValuesAdded"
	CodeDefaultChanged               = "DefaultChanged"
	CodeDefaultAdded                 = "DefaultAdded"
	CodePatternChanged               = "PatternChanged"
	CodeFormatChanged                = "FormatChanged"
	CodeNullableRemoved              = "NullableRemoved"
	CodeNullableAdded                = "NullableAdded"
	CodeListTypeChanged              = "ListTypeChanged"
	CodeListMapKeysChanged           = "ListMapKeysChanged"
	CodeMapTypeChanged               = "MapTypeChanged"
	CodePreserveUnknownFieldsRemoved = "PreserveUnknownFieldsRemoved"
	CodePreserveUnknownFieldsAdded   = "PreserveUnknownFieldsAdded"
	CodeValidationRulesAdded         = "ValidationRulesAdded"
	CodeValidationRulesRemoved       = "ValidationRulesRemoved"
	CodeValidationRuleChanged        = "ValidationRuleChanged"
	CodeValidationMessageChanged     = "ValidationMessageChanged"
	CodeCompositionChanged           = "CompositionChanged"
	CodeSchemaChanged                = "SchemaChanged"
)

// Codes of CRD findings.
const (
	CodeScopeChanged          = "ScopeChanged"
	CodeGroupChanged          = "GroupChanged"
	CodeKindChanged           = "KindChanged"
	CodeStoredVersionRemoved  = "StoredVersionRemoved"
	CodeStorageVersionRemoved = "StorageVersionRemoved"
	CodeStorageVersionChanged = "StorageVersionChanged"
	CodeStorageVersionCount   = "StorageVersionCount"
	CodeVersionRemoved        = "VersionRemoved"
	CodeVersionAdded          = "VersionAdded"
	CodeVersionUnserved       = "VersionUnserved"
	CodeVersionServed         = "VersionServed"
	CodeDefaultVersionChanged = "DefaultVersionChanged"
	CodeConversionChanged     = "ConversionStrategyChanged"
	CodeNoneConversionPrunes  = "NoneConversionPrunesFields"
	CodeNoneConversionSchemas = "NoneConversionSchemasDiffer"
	CodeCRDAdded              = "CRDAdded"
	CodeCRDRemoved            = "CRDRemoved"
)

// Tightened and Loosened name the bound codes of a JSON Schema keyword:
// Tightened("maxLength") is "MaxLengthTightened".
func Tightened(keyword string) string { return upperFirst(keyword) + "Tightened" }

// Loosened is the code of a bound keyword that accepts more values now.
func Loosened(keyword string) string { return upperFirst(keyword) + "Loosened" }

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Schemas compares the schema objects were written under (old) with the
// schema they are read, pruned, defaulted and validated under (new). Both
// may be nil (no schema: anything is kept). Errors under .status are
// reported as warnings: the CRD's controller owns status and rewrites it.
// The findings are sorted most severe first, then by path.
func Schemas(old, new *apiextensionsv1.JSONSchemaProps) []Finding {
	var out []Finding
	switch {
	case old == nil && new == nil:
	case old == nil:
		out = append(out, Finding{Code: CodeSchemaChanged, Severity: lifecycle.SeverityError, Path: ".",
			Message: "the new version has a schema and the old one had none: fields the schema does not declare are pruned"})
	case new == nil:
		out = append(out, Finding{Code: CodeSchemaChanged, Severity: lifecycle.SeverityInfo, Path: ".",
			Message: "the new version has no schema: nothing is pruned or validated"})
	default:
		compare(old, new, "", true, &out)
		out = withPruned(out, old, new)
	}
	for i, f := range out {
		// A controller owns status and rewrites it whole: what it wrote
		// under the old schema is replaced, not left to fail.
		if f.Severity == lifecycle.SeverityError && (f.Path == ".status" || strings.HasPrefix(f.Path, ".status.") || strings.HasPrefix(f.Path, ".status[")) {
			out[i].Severity = lifecycle.SeverityWarning
			out[i].Message += " (under .status, which the CRD's controller rewrites)"
		}
	}
	Sort(out)
	return nameRules(out)
}

// withPruned adds to the findings of compare one error for each path of
// schema.Prune(old, new): what the API server drops is decided by one rule,
// the same for diff and check-upgrade as for the preflights of add-version,
// promote-storage, migrate and status. A NullableRemoved warning of compare
// gives way to the error at the same path.
func withPruned(out []Finding, old, new *apiextensionsv1.JSONSchemaProps) []Finding {
	pruned := schema.Prune(old, new)
	nulls := map[string]bool{}
	for _, p := range pruned {
		if p.Reason == schema.ReasonNull {
			nulls[p.Path] = true
		}
	}
	kept := out[:0]
	for _, f := range out {
		if !(f.Code == CodeNullableRemoved && nulls[f.Path]) {
			kept = append(kept, f)
		}
	}
	out = kept
	for _, p := range pruned {
		f := Finding{Code: CodeFieldRemoved, Severity: lifecycle.SeverityError, Path: p.Path}
		switch p.Reason {
		case schema.ReasonUndeclared:
			f.Message = "field removed: stored values are pruned when objects are read or written through this schema"
		case schema.ReasonMapEntries:
			f.Message = "additionalProperties removed: stored map entries (other than declared properties) are pruned"
		case schema.ReasonEmbeddedResource:
			f.Message = "x-kubernetes-embedded-resource changed: the embedded resource's apiVersion, kind or metadata stored here is pruned (or coerced to ObjectMeta); where a stored apiVersion or kind is not a string, or metadata not an ObjectMeta, the API server cannot read the object at all"
		case schema.ReasonNull:
			f.Code = CodeNullableRemoved
			f.Message = "stored null values are pruned (the field is not nullable and has no default)"
		case schema.ReasonUntyped:
			f.Code = CodePreserveUnknownFieldsRemoved
			f.Message = "values stored without a schema (kept by x-kubernetes-preserve-unknown-fields) are pruned where they do not fit the new declaration of the field"
		default: // schema.ReasonUnknown, at path.*
			f.Code = CodePreserveUnknownFieldsRemoved
			f.Path = rootPath(strings.TrimSuffix(p.Path, ".*"))
			f.Message = "x-kubernetes-preserve-unknown-fields removed: stored fields the schema does not declare are pruned"
		}
		out = append(out, f)
	}
	return out
}

// Sort orders findings most severe first, then by version and path.
func Sort(fs []Finding) {
	rank := map[lifecycle.Severity]int{lifecycle.SeverityError: 0, lifecycle.SeverityWarning: 1, lifecycle.SeverityInfo: 2}
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if rank[a.Severity] != rank[b.Severity] {
			return rank[a.Severity] < rank[b.Severity]
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Path < b.Path
	})
}

// Count returns the number of findings of severity s.
func Count(fs []Finding, s lifecycle.Severity) int {
	n := 0
	for _, f := range fs {
		if f.Severity == s {
			n++
		}
	}
	return n
}

func rootPath(p string) string {
	if p == "" {
		return "."
	}
	return p
}

func childPath(path, name string) string {
	if strings.ContainsAny(name, ".[]* '") {
		return path + "['" + name + "']"
	}
	return path + "." + name
}

// compare appends the findings for one schema node and recurses into
// properties, additionalProperties and items.
func compare(old, new *apiextensionsv1.JSONSchemaProps, path string, root bool, out *[]Finding) {
	p := rootPath(path)
	add := func(code string, sev lifecycle.Severity, format string, args ...any) {
		*out = append(*out, Finding{Code: code, Severity: sev, Path: p, Message: fmt.Sprintf(format, args...)})
	}
	if changed := typeChange(old, new); changed != "" {
		sev := lifecycle.SeverityError
		msg := fmt.Sprintf("type changed from %s to %s: stored values of the old type fail validation on their next write", typeName(old), typeName(new))
		if new.XIntOrString && (old.Type == "integer" || old.Type == "string") {
			sev = lifecycle.SeverityInfo
			msg = fmt.Sprintf("type widened from %s to int-or-string: every stored value stays valid", old.Type)
		}
		add(CodeTypeChanged, sev, "%s", msg)
		return // the rest of the node is not comparable
	}

	// nullable: null values where nullable is false are pruned before defaulting.
	switch {
	case old.Nullable && !new.Nullable:
		add(CodeNullableRemoved, lifecycle.SeverityWarning, "nullable removed: stored null values are dropped (pruned before defaulting) and null is rejected on write")
	case !old.Nullable && new.Nullable:
		add(CodeNullableAdded, lifecycle.SeverityInfo, "nullable added: null is accepted now")
	}

	compareEnum(old, new, add)
	compareDefault(old, new, add)
	compareBounds(old, new, add)

	switch {
	case old.Pattern == new.Pattern:
	case old.Pattern == "":
		add(Tightened("pattern"), lifecycle.SeverityWarning, "pattern %q added: stored values that do not match fail validation on the next write that changes them (the API server ratchets unchanged values)", new.Pattern)
	case new.Pattern == "":
		add(Loosened("pattern"), lifecycle.SeverityInfo, "pattern %q removed: any string is accepted now", old.Pattern)
	default:
		add(CodePatternChanged, lifecycle.SeverityWarning, "pattern changed from %q to %q: stored values that do not match the new pattern fail validation on the next write that changes them (the API server ratchets unchanged values)", old.Pattern, new.Pattern)
	}
	switch {
	case old.Format == new.Format:
	case new.Format == "":
		add(CodeFormatChanged, lifecycle.SeverityInfo, "format %q removed", old.Format)
	default:
		add(CodeFormatChanged, lifecycle.SeverityWarning, "format changed from %q to %q: stored values in another format fail validation on the next write that changes them (the API server ratchets unchanged values)", dashIfEmpty(old.Format), new.Format)
	}

	compareListMap(old, new, add)

	// What is pruned (x-kubernetes-preserve-unknown-fields removed among
	// others) is pruneFindings', from schema.Prune.
	if !preserves(old) && preserves(new) {
		add(CodePreserveUnknownFieldsAdded, lifecycle.SeverityInfo, "x-kubernetes-preserve-unknown-fields added: fields the schema does not declare are kept now")
	}

	compareRules(old, new, add)

	for _, k := range []struct {
		name     string
		old, new []apiextensionsv1.JSONSchemaProps
	}{{"allOf", old.AllOf, new.AllOf}, {"anyOf", old.AnyOf, new.AnyOf}, {"oneOf", old.OneOf, new.OneOf}} {
		if !schema.Equal(&apiextensionsv1.JSONSchemaProps{AllOf: k.old}, &apiextensionsv1.JSONSchemaProps{AllOf: k.new}) {
			add(CodeCompositionChanged, lifecycle.SeverityWarning, "%s changed: stored objects may no longer validate", k.name)
		}
	}
	if !schema.Equal(old.Not, new.Not) {
		add(CodeCompositionChanged, lifecycle.SeverityWarning, "not changed: stored objects may no longer validate")
	}
	if !schema.Equal(rest(old), rest(new)) {
		add(CodeSchemaChanged, lifecycle.SeverityWarning, "other schema keywords changed (%s)", strings.Join(restDiff(old, new), ", "))
	}

	compareRequired(old, new, path, out)
	compareProperties(old, new, path, root, out)
	compareAdditional(old, new, path, out)
	if old.Items != nil && new.Items != nil && old.Items.Schema != nil && new.Items.Schema != nil {
		compare(old.Items.Schema, new.Items.Schema, path+"[*]", false, out)
	}
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// typeChange is non-empty when the node's type changed in a way that makes
// old values invalid or valid ones differently typed. An empty type (any)
// on either side, with int-or-string or preserve-unknown-fields, is
// compared through XIntOrString.
func typeChange(old, new *apiextensionsv1.JSONSchemaProps) string {
	if typeName(old) == typeName(new) {
		return ""
	}
	if old.Type == "" && !old.XIntOrString && new.Type == "" && !new.XIntOrString {
		return ""
	}
	return typeName(old) + "->" + typeName(new)
}

func typeName(s *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "int-or-string"
	case s.Type == "":
		return "any"
	}
	return s.Type
}

func preserves(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

func jsonValue(v *apiextensionsv1.JSON) string {
	if v == nil {
		return ""
	}
	// Re-marshal through a generic value so key order does not count.
	var x any
	if err := json.Unmarshal(v.Raw, &x); err != nil {
		return string(v.Raw)
	}
	b, _ := json.Marshal(x)
	return string(b)
}

type addFunc func(code string, sev lifecycle.Severity, format string, args ...any)

func compareEnum(old, new *apiextensionsv1.JSONSchemaProps, add addFunc) {
	oldVals, newVals := enumSet(old.Enum), enumSet(new.Enum)
	switch {
	case len(old.Enum) == 0 && len(new.Enum) == 0:
	case len(old.Enum) == 0:
		add(CodeEnumValuesRemoved, lifecycle.SeverityWarning, "enum added: only %s are accepted now; stored values outside it fail validation on the next write that changes them (the API server ratchets unchanged values)", strings.Join(newVals, ", "))
	case len(new.Enum) == 0:
		add(CodeEnumValuesAdded, lifecycle.SeverityInfo, "enum removed: any value is accepted now")
	default:
		removed, added := setDiff(oldVals, newVals)
		if len(removed) > 0 {
			add(CodeEnumValuesRemoved, lifecycle.SeverityWarning, "enum values %s removed: stored objects with them fail validation on the next write that changes them (the API server ratchets unchanged values)", strings.Join(removed, ", "))
		}
		if len(added) > 0 {
			add(CodeEnumValuesAdded, lifecycle.SeverityInfo, "enum values %s added", strings.Join(added, ", "))
		}
	}
}

// setDiff returns the elements of old missing from new, and of new missing
// from old.
func setDiff(old, new []string) (removed, added []string) {
	for _, v := range old {
		if !slices.Contains(new, v) {
			removed = append(removed, v)
		}
	}
	for _, v := range new {
		if !slices.Contains(old, v) {
			added = append(added, v)
		}
	}
	return removed, added
}

func enumSet(vals []apiextensionsv1.JSON) []string {
	out := make([]string, 0, len(vals))
	for i := range vals {
		out = append(out, jsonValue(&vals[i]))
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func compareDefault(old, new *apiextensionsv1.JSONSchemaProps, add addFunc) {
	o, n := jsonValue(old.Default), jsonValue(new.Default)
	switch {
	case o == n:
	case o == "":
		add(CodeDefaultAdded, lifecycle.SeverityInfo, "default %s added: objects without the field get it when read and when next written", n)
	case n == "":
		add(CodeDefaultChanged, lifecycle.SeverityWarning, "default %s removed: objects created without the field no longer get it (stored objects keep the value they were defaulted to)", o)
	default:
		add(CodeDefaultChanged, lifecycle.SeverityWarning, "default changed from %s to %s: objects without the field read %s now (stored objects that were defaulted keep %s)", o, n, n, o)
	}
}

// bound is one numeric keyword: its values and whether a larger value
// accepts fewer objects (a minimum) or more (a maximum).
type bound struct {
	keyword      string
	old, new     *float64
	largerIsLess bool
}

func f64(p *int64) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}

func compareBounds(old, new *apiextensionsv1.JSONSchemaProps, add addFunc) {
	bounds := []bound{
		{"minimum", old.Minimum, new.Minimum, true},
		{"maximum", old.Maximum, new.Maximum, false},
		{"minLength", f64(old.MinLength), f64(new.MinLength), true},
		{"maxLength", f64(old.MaxLength), f64(new.MaxLength), false},
		{"minItems", f64(old.MinItems), f64(new.MinItems), true},
		{"maxItems", f64(old.MaxItems), f64(new.MaxItems), false},
		{"minProperties", f64(old.MinProperties), f64(new.MinProperties), true},
		{"maxProperties", f64(old.MaxProperties), f64(new.MaxProperties), false},
	}
	for _, b := range bounds {
		tighter, looser := false, false
		switch {
		case b.old == nil && b.new == nil:
		case b.old == nil:
			tighter = true
		case b.new == nil:
			looser = true
		case *b.new > *b.old:
			tighter, looser = b.largerIsLess, !b.largerIsLess
		case *b.new < *b.old:
			tighter, looser = !b.largerIsLess, b.largerIsLess
		}
		switch {
		case tighter:
			add(Tightened(b.keyword), lifecycle.SeverityWarning, "%s tightened from %s to %s: stored values outside it fail validation on the next write that changes them (the API server ratchets unchanged values)", b.keyword, num(b.old), num(b.new))
		case looser:
			add(Loosened(b.keyword), lifecycle.SeverityInfo, "%s loosened from %s to %s", b.keyword, num(b.old), num(b.new))
		}
	}
	for _, e := range []struct {
		keyword  string
		old, new bool
	}{{"exclusiveMinimum", old.ExclusiveMinimum, new.ExclusiveMinimum}, {"exclusiveMaximum", old.ExclusiveMaximum, new.ExclusiveMaximum}, {"uniqueItems", old.UniqueItems, new.UniqueItems}} {
		switch {
		case !e.old && e.new:
			add(Tightened(e.keyword), lifecycle.SeverityWarning, "%s set: stored values that were valid may fail validation on the next write that changes them (the API server ratchets unchanged values)", e.keyword)
		case e.old && !e.new:
			add(Loosened(e.keyword), lifecycle.SeverityInfo, "%s unset", e.keyword)
		}
	}
	switch o, n := old.MultipleOf, new.MultipleOf; {
	case o == nil && n == nil:
	case n == nil || (o != nil && *n != 0 && isMultiple(*o, *n)):
		if o == nil || n == nil || *o != *n {
			add(Loosened("multipleOf"), lifecycle.SeverityInfo, "multipleOf loosened from %s to %s", num(o), num(n))
		}
	default:
		add(Tightened("multipleOf"), lifecycle.SeverityWarning, "multipleOf tightened from %s to %s: stored values that are not multiples fail validation on the next write that changes them (the API server ratchets unchanged values)", num(o), num(n))
	}
}

// isMultiple reports whether every multiple of a is a multiple of b.
func isMultiple(a, b float64) bool {
	q := a / b
	return q == float64(int64(q))
}

func num(p *float64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

func listType(s *apiextensionsv1.JSONSchemaProps) string {
	if s.XListType == nil || *s.XListType == "" {
		return "atomic"
	}
	return *s.XListType
}

func mapType(s *apiextensionsv1.JSONSchemaProps) string {
	if s.XMapType == nil || *s.XMapType == "" {
		return "granular"
	}
	return *s.XMapType
}

func compareListMap(old, new *apiextensionsv1.JSONSchemaProps, add addFunc) {
	if old.Type == "array" || new.Type == "array" {
		o, n := listType(old), listType(new)
		switch {
		case o == n:
		case n == "set" || n == "map":
			add(CodeListTypeChanged, lifecycle.SeverityWarning, "x-kubernetes-list-type changed from %s to %s: new objects with duplicate %s are rejected, and so are writes that add duplicates to a stored list that has none; a stored object that already holds duplicates is not checked on update (the API server checks list types on update only when the stored object passes them); server-side apply merges entries instead of replacing the list", o, n, map[string]string{"set": "items", "map": "keys"}[n])
		default:
			add(CodeListTypeChanged, lifecycle.SeverityWarning, "x-kubernetes-list-type changed from %s to %s: server-side apply replaces the whole list now, so field managers lose ownership of single entries", o, n)
		}
		if o == "map" && n == "map" && !slices.Equal(old.XListMapKeys, new.XListMapKeys) {
			var removed []string
			for _, k := range old.XListMapKeys {
				if !slices.Contains(new.XListMapKeys, k) {
					removed = append(removed, k)
				}
			}
			sev, why := lifecycle.SeverityWarning, "server-side apply identifies entries differently"
			if len(removed) > 0 {
				sev, why = lifecycle.SeverityWarning, fmt.Sprintf("without %s, entries that differ only there are duplicates: new objects with them are rejected, while a stored object that already holds them is not checked on update (the API server checks list types on update only when the stored object passes them)", strings.Join(removed, ", "))
			}
			add(CodeListMapKeysChanged, sev, "x-kubernetes-list-map-keys changed from [%s] to [%s]: %s", strings.Join(old.XListMapKeys, ", "), strings.Join(new.XListMapKeys, ", "), why)
		}
	}
	if old.Type == "object" || new.Type == "object" {
		o, n := mapType(old), mapType(new)
		switch {
		case o == n:
		case n == "atomic":
			add(CodeMapTypeChanged, lifecycle.SeverityWarning, "x-kubernetes-map-type changed from %s to %s: server-side apply replaces the whole map now, so field managers lose ownership of single keys", o, n)
		default:
			add(CodeMapTypeChanged, lifecycle.SeverityInfo, "x-kubernetes-map-type changed from %s to %s: server-side apply merges single keys now", o, n)
		}
	}
}

// compareRules classifies the x-kubernetes-validations rules of a node
// that exists in both schemas: a rule added, removed, its expression
// changed (a rule whose expression is gone paired with one added at the
// same position), or only its message, messageExpression, reason or
// fieldPath changed. The API server ratchets a rule that does not read
// oldSelf (an unchanged value that breaks it is not re-checked); it
// evaluates a transition rule, which reads oldSelf, on every update.
func compareRules(old, new *apiextensionsv1.JSONSchemaProps, add addFunc) {
	exprs := func(rs apiextensionsv1.ValidationRules) map[string]apiextensionsv1.ValidationRule {
		m := map[string]apiextensionsv1.ValidationRule{}
		for _, r := range rs {
			m[r.Rule] = r
		}
		return m
	}
	oldRules, newRules := exprs(old.XValidations), exprs(new.XValidations)
	changedFrom := map[string]string{} // new expression -> old
	for i, o := range old.XValidations {
		if _, kept := newRules[o.Rule]; kept || i >= len(new.XValidations) {
			continue
		}
		if n := new.XValidations[i]; oldRules[n.Rule].Rule == "" {
			changedFrom[n.Rule] = o.Rule
		}
	}
	var plain, transition, removed []string
	for _, n := range new.XValidations {
		o, kept := oldRules[n.Rule]
		from, changed := changedFrom[n.Rule]
		switch {
		case kept && optional(o.OptionalOldSelf) != optional(n.OptionalOldSelf):
			add(CodeValidationRuleChanged, lifecycle.SeverityWarning, "optionalOldSelf of x-kubernetes-validations rule %s changed from %v to %v: with it, the rule is evaluated on creates and on updates that add the field too (oldSelf empty)", quoteAll([]string{n.Rule}), optional(o.OptionalOldSelf), optional(n.OptionalOldSelf))
		case kept && (o.Message != n.Message || o.MessageExpression != n.MessageExpression || ptrText(o.Reason) != ptrText(n.Reason) || o.FieldPath != n.FieldPath):
			add(CodeValidationMessageChanged, lifecycle.SeverityInfo, "x-kubernetes-validations rule %s keeps its expression; only its message, messageExpression, reason or fieldPath changed: objects are validated as before, clients see another error", quoteAll([]string{n.Rule}))
		case kept:
		case changed && strings.Contains(n.Rule, "oldSelf"):
			add(CodeValidationRuleChanged, lifecycle.SeverityWarning, "x-kubernetes-validations rule %s changed to the transition rule %s: the API server evaluates it on every update, a no-op rewrite by migrate included (oldSelf equal to self), and is not lenient with unchanged values", quoteAll([]string{from}), quoteAll([]string{n.Rule}))
		case changed:
			add(CodeValidationRuleChanged, lifecycle.SeverityWarning, "x-kubernetes-validations rule %s changed to %s: stored objects that break the new rule fail their next write that changes the field (the API server ratchets unchanged values)", quoteAll([]string{from}), quoteAll([]string{n.Rule}))
		case strings.Contains(n.Rule, "oldSelf"):
			transition = append(transition, n.Rule)
		default:
			plain = append(plain, n.Rule)
		}
	}
	paired := map[string]bool{}
	for _, from := range changedFrom {
		paired[from] = true
	}
	for _, o := range old.XValidations {
		if _, kept := newRules[o.Rule]; !kept && !paired[o.Rule] {
			removed = append(removed, o.Rule)
		}
	}
	if len(plain) > 0 {
		add(CodeValidationRulesAdded, lifecycle.SeverityWarning, "x-kubernetes-validations rules added (%s): stored objects that break them fail their next write that changes the field (the API server ratchets unchanged values)", quoteAll(plain))
	}
	if len(transition) > 0 {
		// Transition rules are not ratcheted: the API server evaluates them
		// on every update, with oldSelf the stored value.
		add(CodeValidationRulesAdded, lifecycle.SeverityWarning, "x-kubernetes-validations transition rules added (%s): the API server evaluates them on every update, a no-op rewrite by migrate included (oldSelf equal to self), and is not lenient with unchanged values; one that rejects an unchanged value blocks the migration of every object that has the field", quoteAll(transition))
	}
	if len(removed) > 0 {
		add(CodeValidationRulesRemoved, lifecycle.SeverityInfo, "x-kubernetes-validations rules removed (%s)", quoteAll(removed))
	}
}

func optional(b *bool) string {
	if b == nil {
		return "unset"
	}
	return fmt.Sprint(*b)
}

func ptrText[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		if len(s) > 80 {
			s = s[:77] + "..."
		}
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func compareRequired(old, new *apiextensionsv1.JSONSchemaProps, path string, out *[]Finding) {
	for _, r := range new.Required {
		if !slices.Contains(old.Required, r) {
			*out = append(*out, Finding{Code: CodeRequiredAdded, Severity: lifecycle.SeverityError, Path: childPath(path, r),
				Message: "newly required: stored objects without it fail validation on their next write, and creates without it are rejected"})
		}
	}
	for _, r := range old.Required {
		if !slices.Contains(new.Required, r) {
			*out = append(*out, Finding{Code: CodeRequiredRemoved, Severity: lifecycle.SeverityInfo, Path: childPath(path, r),
				Message: "no longer required"})
		}
	}
}

func compareProperties(old, new *apiextensionsv1.JSONSchemaProps, path string, root bool, out *[]Finding) {
	for _, name := range sortedKeys(old.Properties) {
		if root && (name == "apiVersion" || name == "kind" || name == "metadata") {
			continue
		}
		o := old.Properties[name]
		cp := childPath(path, name)
		if n, ok := new.Properties[name]; ok {
			compare(&o, &n, cp, false, out)
			continue
		}
		switch {
		case new.AdditionalProperties != nil && new.AdditionalProperties.Schema != nil:
			compare(&o, new.AdditionalProperties.Schema, cp, false, out)
		case new.AdditionalProperties != nil && new.AdditionalProperties.Allows, preserves(new):
			*out = append(*out, Finding{Code: CodeFieldRemoved, Severity: lifecycle.SeverityInfo, Path: cp,
				Message: "no longer declared, but kept (additionalProperties or x-kubernetes-preserve-unknown-fields): no validation or defaulting applies to it"})
		}
		// A field that is not kept is pruneFindings'.
	}
	for _, name := range sortedKeys(new.Properties) {
		if _, ok := old.Properties[name]; ok || (root && (name == "apiVersion" || name == "kind" || name == "metadata")) {
			continue
		}
		*out = append(*out, Finding{Code: CodeFieldAdded, Severity: lifecycle.SeverityInfo, Path: childPath(path, name), Message: "field added"})
	}
}

func compareAdditional(old, new *apiextensionsv1.JSONSchemaProps, path string, out *[]Finding) {
	mapPath := path + ".*"
	oldSchema, newSchema := additionalSchema(old), additionalSchema(new)
	oldEntries, newEntries := oldSchema != nil || anyEntries(old), newSchema != nil || anyEntries(new)
	switch {
	case oldSchema != nil && newSchema != nil:
		compare(oldSchema, newSchema, mapPath, false, out)
	case oldEntries && !newEntries:
		// Map entries that are pruned are pruneFindings'.
	case !oldEntries && newEntries && !preserves(old):
		*out = append(*out, Finding{Code: CodeFieldAdded, Severity: lifecycle.SeverityInfo, Path: mapPath, Message: "map entries (additionalProperties) accepted now"})
	}
}

func additionalSchema(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if s.AdditionalProperties == nil {
		return nil
	}
	return s.AdditionalProperties.Schema
}

// anyEntries is additionalProperties: true.
func anyEntries(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.AdditionalProperties != nil && s.AdditionalProperties.Allows && s.AdditionalProperties.Schema == nil
}

// rest is the node without what compare looks at itself, so that any other
// keyword's change (x-kubernetes-embedded-resource, additionalItems, …) is
// still reported. It is a shallow copy, which shares the rest with s and
// is only read: a deep copy copied the whole subtree at every node that
// compare visits, quadratic in the depth of the schema (B25).
func rest(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	c := *s
	c.Type, c.XIntOrString, c.Nullable, c.Enum, c.Default = "", false, false, nil, nil
	c.Minimum, c.Maximum, c.ExclusiveMinimum, c.ExclusiveMaximum, c.MultipleOf = nil, nil, false, false, nil
	c.MinLength, c.MaxLength, c.MinItems, c.MaxItems, c.MinProperties, c.MaxProperties = nil, nil, nil, nil, nil, nil
	c.UniqueItems, c.Pattern, c.Format = false, "", ""
	c.XListType, c.XListMapKeys, c.XMapType, c.XPreserveUnknownFields, c.XValidations = nil, nil, nil, nil, nil
	c.AllOf, c.AnyOf, c.OneOf, c.Not = nil, nil, nil, nil
	c.Required, c.Properties, c.AdditionalProperties, c.Items = nil, nil, nil, nil
	return &c
}

// restDiff names the top-level JSON keys in which rest(old) and rest(new) differ.
func restDiff(old, new *apiextensionsv1.JSONSchemaProps) []string {
	prose := []string{"description", "title", "example", "externalDocs"}
	return slices.DeleteFunc(keysDiffering(rest(old), rest(new)), func(k string) bool { return slices.Contains(prose, k) })
}

// keysDiffering names, sorted, the JSON keywords whose values differ
// between two schema nodes (set on one side only included).
func keysDiffering(old, new *apiextensionsv1.JSONSchemaProps) []string {
	toMap := func(s *apiextensionsv1.JSONSchemaProps) map[string]any {
		b, _ := json.Marshal(s)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	o, n := toMap(old), toMap(new)
	var keys []string
	for k := range o {
		if !reflect.DeepEqual(o[k], n[k]) {
			keys = append(keys, k)
		}
	}
	for k := range n {
		if _, ok := o[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return slices.Compact(keys)
}

func sortedKeys(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	return slices.Sorted(maps.Keys(m))
}
