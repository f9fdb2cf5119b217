package helmchart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

const case38 = "../../testdata/cases/38-helm-release-deletes-crd"

// got is each CRD of c as "name origin source keep-annotation".
func got(c *Chart) []string {
	var out []string
	for _, d := range c.CRDs {
		out = append(out, strings.Join([]string{d.CRD.Name, d.HelmOrigin, d.Source, d.CRD.Annotations["helm.sh/resource-policy"]}, " "))
	}
	return out
}

// TestLoad: a chart's crds/ files and its rendered templates are told
// apart (case 38's two releases), from a directory and from an archive;
// values files decide what the templates render, later files winning.
func TestLoad(t *testing.T) {
	opts := Options{Release: "backup", Namespace: "backup-system"}
	dir06 := filepath.Join(case38, "chart-0.6.0")
	archive := filepath.Join(t.TempDir(), "backup.tgz")
	ch, err := loader.Load(dir06)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := chartutil.Save(ch, filepath.Dir(archive))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(saved, archive); err != nil {
		t.Fatal(err)
	}
	toggle := "testdata/toggle"
	for _, tc := range []struct {
		name, path string
		values     []string
		want       []string
	}{
		{"templated", filepath.Join(case38, "chart-0.5.0"), nil, []string{"snapshots.backup.example.com templates backup/templates/snapshots-crd.yaml "}},
		{"crds/ in a directory", dir06, nil, []string{"snapshots.backup.example.com crds " + filepath.Join(dir06, "crds", "snapshots.yaml") + " "}},
		{"crds/ in an archive", archive, nil, []string{"snapshots.backup.example.com crds " + archive + ":crds/snapshots.yaml "}},
		{"values: default", toggle, nil, []string{"deployments.astro.example.com templates toggle/templates/crd.yaml "}},
		{"values: off", toggle, []string{"testdata/off.yaml"}, nil},
		{"values: keep", toggle, []string{"testdata/keep.yaml"}, []string{"deployments.astro.example.com templates toggle/templates/crd.yaml  Keep "}},
		{"values: later file wins", toggle, []string{"testdata/off.yaml", "testdata/keep.yaml"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			o.ValueFiles = tc.values
			c, err := Load(tc.path, o)
			if err != nil {
				t.Fatal(err)
			}
			if g := got(c); !slices.Equal(g, tc.want) {
				t.Errorf("got  %q\nwant %q", g, tc.want)
			}
			if c.Name == "" || c.Version == "" {
				t.Errorf("chart name %q version %q", c.Name, c.Version)
			}
		})
	}
}

// TestLoadErrors: what is not a chart, a values file that is missing and
// a template that fails are one-line errors naming the input.
func TestLoadErrors(t *testing.T) {
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "Chart.yaml"), []byte("apiVersion: v2\nname: bad\nversion: 1.0.0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(bad, "templates"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "templates", "x.yaml"), []byte("{{ .Values.missing.field }}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := Options{Release: "r", Namespace: "n"}
	for _, tc := range []struct {
		name, path string
		values     []string
		want       string
	}{
		{"no chart", t.TempDir(), nil, "--chart "},
		{"missing values file", "testdata/toggle", []string{"testdata/nope.yaml"}, "--values testdata/nope.yaml"},
		{"template fails", bad, nil, "nil pointer evaluating"},
		{"no release", "testdata/toggle", nil, "release name and namespace are required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			if tc.name == "no release" {
				o = Options{}
			}
			o.ValueFiles = tc.values
			_, err := Load(tc.path, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err %v, want one line containing %q", err, tc.want)
			}
		})
	}
}
