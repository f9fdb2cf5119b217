package manifest

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// ReadSchemaFile reads a version's openAPIV3Schema from a YAML or JSON
// file, bare or wrapped as {openAPIV3Schema: …} (the shape of a version's
// schema field), as ReadFile reads it (at most MaxFileBytes). A field the
// schema type does not have is an error, named "--schema-file PATH: …"
// like any other content the file cannot be read as.
func ReadSchemaFile(path string) (*apiextensionsv1.CustomResourceValidation, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseSchema(path, data)
}

// parseSchema is ReadSchemaFile on data, read from path.
func parseSchema(path string, data []byte) (*apiextensionsv1.CustomResourceValidation, error) {
	var probe map[string]any
	if err := yaml.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("--schema-file %s: %v", path, err)
	}
	v := &apiextensionsv1.CustomResourceValidation{}
	var err error
	if _, wrapped := probe["openAPIV3Schema"]; wrapped {
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
