// Package crdtest builds CustomResourceDefinitions for unit tests, fluently:
//
//	crdtest.New("widgets.example.com").
//		Version("v1", crdtest.Served, crdtest.Storage).
//		Version("v2", crdtest.Served, crdtest.Fields("size", "colour")).
//		Stored("v1").CRD()
//
// One builder for every package's tests (krew's testutil.NewPlugin is the
// model), instead of a struct literal or a helper of its own in each.
package crdtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Builder builds one CRD.
type Builder struct {
	crd *apiextensionsv1.CustomResourceDefinition
	// each are the options of every version added (EachVersion).
	each []VersionOption
}

// New starts a namespaced CRD named name ("<plural>.<group>"), with the
// singular and kind derived from the plural (widgets: widget, Widget) and
// resourceVersion "1".
func New(name string) *Builder {
	plural, group, _ := strings.Cut(name, ".")
	singular := strings.TrimSuffix(plural, "s")
	kind := strings.ToUpper(singular[:1]) + singular[1:]
	return &Builder{crd: &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: singular, Kind: kind, ListKind: kind + "List"},
		},
	}}
}

// VersionOption sets something on a version.
type VersionOption func(*apiextensionsv1.CustomResourceDefinitionVersion)

var (
	// Served sets served: true.
	Served VersionOption = func(v *apiextensionsv1.CustomResourceDefinitionVersion) { v.Served = true }
	// Storage sets storage: true.
	Storage VersionOption = func(v *apiextensionsv1.CustomResourceDefinitionVersion) { v.Storage = true }
	// Deprecated sets deprecated: true.
	Deprecated VersionOption = func(v *apiextensionsv1.CustomResourceDefinitionVersion) { v.Deprecated = true }
	// StatusSubresource adds the status subresource.
	StatusSubresource VersionOption = func(v *apiextensionsv1.CustomResourceDefinitionVersion) {
		if v.Subresources == nil {
			v.Subresources = &apiextensionsv1.CustomResourceSubresources{}
		}
		v.Subresources.Status = &apiextensionsv1.CustomResourceSubresourceStatus{}
	}
)

// PrinterColumn adds an additionalPrinterColumn.
func PrinterColumn(name, typ, jsonPath string) VersionOption {
	return func(v *apiextensionsv1.CustomResourceDefinitionVersion) {
		v.AdditionalPrinterColumns = append(v.AdditionalPrinterColumns, apiextensionsv1.CustomResourceColumnDefinition{Name: name, Type: typ, JSONPath: jsonPath})
	}
}

// DeprecationWarning sets the version's deprecationWarning (and deprecated).
func DeprecationWarning(text string) VersionOption {
	return func(v *apiextensionsv1.CustomResourceDefinitionVersion) {
		v.Deprecated, v.DeprecationWarning = true, &text
	}
}

// Fields gives the version the schema {spec: {<field>: string, …}}.
func Fields(fields ...string) VersionOption {
	return func(v *apiextensionsv1.CustomResourceDefinitionVersion) { v.Schema = SpecSchema(fields...) }
}

// Schema gives the version the schema s.
func Schema(s *apiextensionsv1.JSONSchemaProps) VersionOption {
	return func(v *apiextensionsv1.CustomResourceDefinitionVersion) {
		v.Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: s}
	}
}

// SpecSchema is the schema {spec: {<field>: string, …}} of an object.
func SpecSchema(fields ...string) *apiextensionsv1.CustomResourceValidation {
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	for _, f := range fields {
		spec.Properties[f] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
	}}
}

// EachVersion gives every version added after it opts, before its own.
func (b *Builder) EachVersion(opts ...VersionOption) *Builder {
	b.each = append(b.each, opts...)
	return b
}

// Version appends a version; without Fields or Schema its schema is
// {spec: {size: string}}.
func (b *Builder) Version(name string, opts ...VersionOption) *Builder {
	v := apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Schema: SpecSchema("size")}
	for _, o := range append(slices.Clone(b.each), opts...) {
		o(&v)
	}
	b.crd.Spec.Versions = append(b.crd.Spec.Versions, v)
	return b
}

// Deprecate marks the versions named, already added, deprecated.
func (b *Builder) Deprecate(names ...string) *Builder {
	for i, v := range b.crd.Spec.Versions {
		if slices.Contains(names, v.Name) {
			b.crd.Spec.Versions[i].Deprecated = true
		}
	}
	return b
}

// Stored sets status.storedVersions.
func (b *Builder) Stored(versions ...string) *Builder {
	b.crd.Status.StoredVersions = versions
	return b
}

// Kind sets the kind (and list kind) when the one New derives from the
// plural is not it (crontabs: CronTab, not Crontab).
func (b *Builder) Kind(kind string) *Builder {
	b.crd.Spec.Names.Kind, b.crd.Spec.Names.ListKind = kind, kind+"List"
	return b
}

// ShortNames sets the short names (kubectl get wd).
func (b *Builder) ShortNames(names ...string) *Builder {
	b.crd.Spec.Names.ShortNames = names
	return b
}

// Condition sets the status condition of type typ to status, adding it
// when the CRD has none of that type (Established, NamesAccepted, …).
func (b *Builder) Condition(typ apiextensionsv1.CustomResourceDefinitionConditionType, status apiextensionsv1.ConditionStatus) *Builder {
	for i, c := range b.crd.Status.Conditions {
		if c.Type == typ {
			b.crd.Status.Conditions[i].Status = status
			return b
		}
	}
	b.crd.Status.Conditions = append(b.crd.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{Type: typ, Status: status})
	return b
}

// ClusterScoped makes the CRD cluster-scoped.
func (b *Builder) ClusterScoped() *Builder {
	b.crd.Spec.Scope = apiextensionsv1.ClusterScoped
	return b
}

// Annotate sets an annotation.
func (b *Builder) Annotate(key, value string) *Builder {
	if b.crd.Annotations == nil {
		b.crd.Annotations = map[string]string{}
	}
	b.crd.Annotations[key] = value
	return b
}

// NoneConversion sets conversion strategy None explicitly (a CRD without
// spec.conversion means the same).
func (b *Builder) NoneConversion() *Builder {
	b.crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	return b
}

// Webhook sets Webhook conversion with conv.
func (b *Builder) Webhook(conv *apiextensionsv1.WebhookConversion) *Builder {
	b.crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: conv}
	return b
}

// WebhookURL sets Webhook conversion to url with caBundle and
// conversionReviewVersions [v1].
func (b *Builder) WebhookURL(url string, caBundle []byte) *Builder {
	return b.Webhook(&apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caBundle}, ConversionReviewVersions: []string{"v1"}})
}

// WebhookService sets Webhook conversion to the Service namespace/name
// (port 443) with caBundle and conversionReviewVersions [v1].
func (b *Builder) WebhookService(namespace, name string, caBundle []byte) *Builder {
	return b.Webhook(&apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{
		Service: &apiextensionsv1.ServiceReference{Namespace: namespace, Name: name}, CABundle: caBundle}, ConversionReviewVersions: []string{"v1"}})
}

// Edit applies f to the CRD being built, for what the builder has no method for.
func (b *Builder) Edit(f func(*apiextensionsv1.CustomResourceDefinition)) *Builder {
	f(b.crd)
	return b
}

// CRD returns the CRD built (a copy each time).
func (b *Builder) CRD() *apiextensionsv1.CustomResourceDefinition { return b.crd.DeepCopy() }

// Nesting is how a level of a Nested schema holds the next.
type Nesting int

// The nestings of Nested.
const (
	// ThroughProperties: an object whose property "a" is the next level.
	ThroughProperties Nesting = iota
	// ThroughItems: a list whose items are the next level.
	ThroughItems
	// ThroughAdditionalProperties: a map whose values are the next level.
	ThroughAdditionalProperties
)

// Nested returns a schema depth levels deep (the root is level 1): each
// level but the last holds the next through the nestings in turn (the
// root through the first; ThroughProperties when none is given), and the
// last is leaf. each, when not nil, is applied to every level but the
// last. It builds the levels bottom-up, in time linear in depth.
func Nested(depth int, leaf apiextensionsv1.JSONSchemaProps, each func(*apiextensionsv1.JSONSchemaProps), nestings ...Nesting) *apiextensionsv1.JSONSchemaProps {
	if len(nestings) == 0 {
		nestings = []Nesting{ThroughProperties}
	}
	s := leaf
	for level := depth - 1; level >= 1; level-- {
		next := s
		switch nestings[(level-1)%len(nestings)] {
		case ThroughProperties:
			s = apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"a": next}}
		case ThroughItems:
			s = apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &next}}
		case ThroughAdditionalProperties:
			s = apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &next}}
		}
		if each != nil {
			each(&s)
		}
	}
	return &s
}

// NestedJSON is the JSON of Nested(depth, leaf, nil, nestings...), written
// level by level: json.Marshal of the typed schema takes time quadratic in
// the depth of items and additionalProperties (encoding/json re-reads what
// the MarshalJSON of each level returns).
func NestedJSON(depth int, leaf apiextensionsv1.JSONSchemaProps, nestings ...Nesting) []byte {
	if len(nestings) == 0 {
		nestings = []Nesting{ThroughProperties}
	}
	leafJSON, err := json.Marshal(leaf)
	if err != nil {
		panic(err) // a schema without subschemas always marshals
	}
	opening := []string{
		ThroughProperties:           `{"type":"object","properties":{"a":`,
		ThroughItems:                `{"type":"array","items":`,
		ThroughAdditionalProperties: `{"type":"object","additionalProperties":`,
	}
	closing := []string{ThroughProperties: "}}", ThroughItems: "}", ThroughAdditionalProperties: "}"}
	var b bytes.Buffer
	for level := 1; level < depth; level++ {
		b.WriteString(opening[nestings[(level-1)%len(nestings)]])
	}
	b.Write(leafJSON)
	for level := depth - 1; level >= 1; level-- {
		b.WriteString(closing[nestings[(level-1)%len(nestings)]])
	}
	return b.Bytes()
}

// WithSchemaJSON returns the JSON of crd with the openAPIV3Schema of
// version replaced by schema (the JSON of one, such as NestedJSON's).
func WithSchemaJSON(crd *apiextensionsv1.CustomResourceDefinition, version string, schema []byte) ([]byte, error) {
	raw, err := json.Marshal(crd)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	spec, _ := doc["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	found := false
	for _, v := range versions {
		if m, _ := v.(map[string]any); m["name"] == version {
			m["schema"] = map[string]any{"openAPIV3Schema": json.RawMessage(schema)}
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("%s has no version %s", crd.Name, version)
	}
	return json.Marshal(doc)
}
