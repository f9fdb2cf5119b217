package manifest

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// ReadSchemaFile reads the openAPIV3Schema of version of the CRD crdName
// from a YAML or JSON file, as ReadFile reads it (at most MaxFileBytes):
// the schema bare, wrapped as {openAPIV3Schema: …} (the shape of a
// version's schema field), or a manifest holding the CustomResourceDefinition
// crdName (multi-document, as ParseCRDs reads it, such as a release's),
// whose spec.versions entry named version gives it. A field the schema type
// does not have, a manifest without that CRD or a CRD without that version
// is an error, named "--schema-file PATH: …" like any other content the
// file cannot be read as.
func ReadSchemaFile(path, crdName, version string) (*apiextensionsv1.CustomResourceValidation, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--schema-file: %w", err)
	}
	return parseSchema(path, crdName, version, data)
}

// parseSchema is ReadSchemaFile on data, read from path.
func parseSchema(path, crdName, version string, data []byte) (*apiextensionsv1.CustomResourceValidation, error) {
	docs, crdsErr := ParseCRDs(data)
	if crdsErr == nil && len(docs) > 0 {
		return crdSchema(path, crdName, version, docs)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		if crdsErr != nil {
			err = crdsErr
		}
		return nil, fmt.Errorf("--schema-file %s: %v", path, err)
	}
	probe, ok := doc.(map[string]any)
	switch {
	case doc == nil:
		return nil, fmt.Errorf("--schema-file %s is empty: it must hold an openAPIV3Schema (type: object, properties: …), {openAPIV3Schema: …}, or a CRD manifest", path)
	case !ok:
		return nil, fmt.Errorf("--schema-file %s holds a YAML %s, not a schema: it must hold an openAPIV3Schema (type: object, properties: …), {openAPIV3Schema: …}, or a CRD manifest", path, yamlKind(doc))
	case crdsErr != nil:
		return nil, fmt.Errorf("--schema-file %s: %w", path, crdsErr)
	}
	bare, wrapped := probe["openAPIV3Schema"]
	if !wrapped {
		bare = probe
	}
	if d := schema.DecodedDepth(bare); d > schema.MaxDepth {
		return nil, fmt.Errorf("--schema-file %s: %w", path, &schema.DepthError{CRD: crdName, Version: version, Depth: d})
	}
	v := &apiextensionsv1.CustomResourceValidation{}
	var err error
	if wrapped {
		err = yaml.UnmarshalStrict(data, v)
	} else {
		v.OpenAPIV3Schema = &apiextensionsv1.JSONSchemaProps{}
		err = yaml.UnmarshalStrict(data, v.OpenAPIV3Schema)
	}
	if err != nil {
		return nil, fmt.Errorf("--schema-file %s: %v", path, err)
	}
	return v, nil
}

// crdSchema is the schema of version of the CRD crdName among docs.
func crdSchema(path, crdName, version string, docs []CRDDoc) (*apiextensionsv1.CustomResourceValidation, error) {
	var crds []string
	for _, d := range docs {
		if d.CRD.Name != crdName {
			crds = append(crds, d.CRD.Name)
			continue
		}
		var names []string
		for _, v := range d.CRD.Spec.Versions {
			if v.Name != version {
				names = append(names, v.Name)
				continue
			}
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				return nil, fmt.Errorf("--schema-file %s: version %s of CustomResourceDefinition %s has no schema", path, version, crdName)
			}
			return v.Schema.DeepCopy(), nil
		}
		return nil, fmt.Errorf("--schema-file %s: CustomResourceDefinition %s has no version %s to take the schema of (its versions: %s)", path, crdName, version, strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("--schema-file %s: no CustomResourceDefinition %s in it (it has %s)", path, crdName, strings.Join(crds, ", "))
}

// yamlKind names the kind of a decoded YAML value for a message.
func yamlKind(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	}
	return "number"
}
