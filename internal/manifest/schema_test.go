package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// crdManifest is a CRD whose v1 has .status and v2 .spec.
const crdManifest = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  names: {plural: crontabs, kind: CronTab}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          status: {type: object}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object}
`

func TestParseSchema(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		wantErr    string // "" for none
		wantProps  string // the properties of the schema, comma separated
	}{
		{name: "bare", data: "type: object\nproperties:\n  spec: {type: object}\n", wantProps: "spec"},
		{name: "wrapped", data: "openAPIV3Schema:\n  type: object\n  properties:\n    status: {type: object}\n", wantProps: "status"},
		{name: "json", data: `{"type":"object","properties":{"spec":{"type":"object"}}}`, wantProps: "spec"},
		{name: "unknown field", data: "type: object\nnotAField: 1\n", wantErr: "--schema-file s.yaml: "},
		{name: "wrapped unknown field", data: "openAPIV3Schema: {type: object}\nextra: 1\n", wantErr: "--schema-file s.yaml: "},
		{name: "not yaml", data: "type: [object\n", wantErr: "--schema-file s.yaml: "},
		// Friction 10 of the preflight-holes report: an empty file gave two
		// FAILs, a list a Go type name.
		{name: "empty", data: "\n# nothing\n", wantErr: "--schema-file s.yaml is empty: "},
		{name: "a list", data: "- type: object\n", wantErr: "--schema-file s.yaml holds a YAML list, not a schema: "},
		{name: "a CRD manifest: its version v2", data: crdManifest, wantProps: "spec"},
		{name: "a release of two CRDs: the one edited", data: strings.Replace(crdManifest, "crontabs.stable", "other.stable", 1) + "---\n" + crdManifest, wantProps: "spec"},
		{name: "a manifest without the CRD", data: strings.Replace(crdManifest, "crontabs.stable", "other.stable", 1),
			wantErr: "--schema-file s.yaml: no CustomResourceDefinition crontabs.stable.example.com in it (it has other.stable.example.com)"},
		{name: "a CRD manifest without v2", data: strings.Replace(crdManifest, "name: v2", "name: v3", 1),
			wantErr: "--schema-file s.yaml: CustomResourceDefinition crontabs.stable.example.com has no version v2 to take the schema of (its versions: v1, v3)"},
		{name: "a CRD manifest whose v2 has no schema", data: crdManifest[:strings.Index(crdManifest, "    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec")],
			wantErr: "--schema-file s.yaml: version v2 of CustomResourceDefinition crontabs.stable.example.com has no schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := parseSchema("s.yaml", "crontabs.stable.example.com", "v2", []byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error starting %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var props []string
			for p := range v.OpenAPIV3Schema.Properties {
				props = append(props, p)
			}
			if got := strings.Join(props, ","); got != tc.wantProps || v.OpenAPIV3Schema.Type != "object" {
				t.Errorf("type %q, properties %q; want object, %q", v.OpenAPIV3Schema.Type, got, tc.wantProps)
			}
		})
	}
}

// TestReadSchemaFile: a missing file or a directory is ReadFile's error
// after the flag's name, the path once; a file is parsed.
func TestReadSchemaFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadSchemaFile(filepath.Join(dir, "missing.yaml"), "crontabs.stable.example.com", "v2"); err == nil || !strings.HasPrefix(err.Error(), "--schema-file: open ") || !strings.HasSuffix(err.Error(), "missing.yaml: no such file or directory") {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := ReadSchemaFile(dir, "crontabs.stable.example.com", "v2"); err == nil || err.Error() != "--schema-file: read "+dir+": is a directory" {
		t.Fatalf("a directory: %v", err)
	}
	p := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(p, []byte("type: object\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := ReadSchemaFile(p, "crontabs.stable.example.com", "v2"); err != nil || v.OpenAPIV3Schema.Type != "object" {
		t.Fatalf("got %+v, %v", v, err)
	}
}
