package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := parseSchema("s.yaml", []byte(tc.data))
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

// TestReadSchemaFile: a missing file is ReadFile's error, unprefixed; a
// file is parsed.
func TestReadSchemaFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadSchemaFile(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "no such file or directory") || strings.Contains(err.Error(), "--schema-file") {
		t.Fatalf("missing file: %v", err)
	}
	p := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(p, []byte("type: object\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := ReadSchemaFile(p); err != nil || v.OpenAPIV3Schema.Type != "object" {
		t.Fatalf("got %+v, %v", v, err)
	}
}
