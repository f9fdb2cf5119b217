package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"sigs.k8s.io/yaml"
)

func TestParsePlatforms(t *testing.T) {
	cases := []struct {
		in      string
		want    []Platform
		wantErr string
	}{
		{in: "all", want: Platforms},
		{in: "host", want: []Platform{Host()}},
		{in: "linux/arm64, windows/amd64", want: []Platform{{"linux", "arm64"}, {"windows", "amd64"}}},
		{in: "windows/arm64", wantErr: `platform "windows/arm64" is not one a release publishes`},
		{in: "linux", wantErr: `platform "linux" is not one`},
		{in: "linux/amd64,linux/amd64", wantErr: "listed twice"},
	}
	for _, tc := range cases {
		got, err := ParsePlatforms(tc.in)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case !slices.Equal(got, tc.want):
			t.Errorf("%q = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestSnapshotTag(t *testing.T) {
	for in, want := range map[string]string{
		"v0.1.0":             "v0.1.0",
		"v1.2.3-rc.1":        "v1.2.3-rc.1",
		"5ec95a1":            "v0.0.0-snapshot-5ec95a1",
		"5ec95a1-dirty":      "v0.0.0-snapshot-5ec95a1-dirty",
		"v0.1.0-3-g5ec95a1":  "v0.1.0-3-g5ec95a1",
		"v0.1":               "v0.0.0-snapshot-v0-1",
		"dev":                "v0.0.0-snapshot-dev",
		"":                   "v0.0.0-snapshot-dev",
		"0123456":            "v0.0.0-snapshot-0123456",
		"feature/x+y dirty!": "v0.0.0-snapshot-feature-x-y-dirty",
	} {
		got := SnapshotTag(in)
		if got != want {
			t.Errorf("SnapshotTag(%q) = %q, want %q", in, got, want)
		}
		if !krewSemver.MatchString(got) {
			t.Errorf("SnapshotTag(%q) = %q is not a version krew accepts", in, got)
		}
	}
}

func TestArchivesHoldTheFilesWithTheirModes(t *testing.T) {
	files := []File{
		{Name: "kubectl-crdversion", Mode: 0o755, Data: []byte("binary")},
		{Name: "LICENSE", Mode: 0o644, Data: []byte("Apache")},
	}
	mod := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, p := range []Platform{{"linux", "amd64"}, {"windows", "amd64"}} {
		var a, b bytes.Buffer
		if err := WriteArchive(&a, p, files, mod); err != nil {
			t.Fatal(err)
		}
		if err := WriteArchive(&b, p, files, mod); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: two archives of the same files differ", p)
		}
		got := readArchive(t, p, a.Bytes())
		if len(got) != len(files) {
			t.Fatalf("%s: %d entries, want %d", p, len(got), len(files))
		}
		for i, f := range files {
			if got[i].Name != f.Name || got[i].Mode != f.Mode || !bytes.Equal(got[i].Data, f.Data) {
				t.Errorf("%s: entry %d = %s %o %q, want %s %o %q", p, i, got[i].Name, got[i].Mode, got[i].Data, f.Name, f.Mode, f.Data)
			}
		}
	}
}

func readArchive(t *testing.T, p Platform, data []byte) []File {
	t.Helper()
	var out []File
	if p.OS == "windows" {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r)
			out = append(out, File{Name: f.Name, Mode: int64(f.Mode().Perm()), Data: b})
		}
		return out
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out = append(out, File{Name: h.Name, Mode: h.Mode, Data: b})
	}
}

func TestChecksums(t *testing.T) {
	got := string(Checksums(map[string]string{"b.zip": "22", "a.tar.gz": "11"}))
	if want := "11  a.tar.gz\n22  b.zip\n"; got != want {
		t.Errorf("Checksums = %q, want %q", got, want)
	}
	sums := map[string]string{"a.tar.gz": SHA256([]byte("a")), "b.zip": SHA256([]byte("b"))}
	back, err := ParseChecksums(Checksums(sums))
	if err != nil || len(back) != 2 || back["a.tar.gz"] != sums["a.tar.gz"] || back["b.zip"] != sums["b.zip"] {
		t.Errorf("ParseChecksums(Checksums(%v)) = %v, %v", sums, back, err)
	}
	if _, err := ParseChecksums([]byte("abc a.tar.gz\n")); err == nil {
		t.Error("a malformed line was accepted")
	}
	if SHA256([]byte("abc")) != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Error("SHA256 of abc is wrong")
	}
}

// manifest is the part of a krew Plugin the tests read.
type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

func renderPluginYAML(t *testing.T, tag string) []byte {
	t.Helper()
	tmpl, err := os.ReadFile("../../plugin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := RenderManifest(tmpl, tag, func(url string) (string, error) { return SHA256([]byte(path.Base(url))), nil })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The repository's plugin.yaml renders, as krew-release-bot renders it, to a
// manifest with one platform per release platform, each naming its archive
// and binary.
func TestPluginYAMLRendersEveryPlatform(t *testing.T) {
	const tag = "v1.2.3"
	var m manifest
	if err := yaml.UnmarshalStrict(renderPluginYAML(t, tag), &m); err != nil {
		t.Fatal(err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "crdversion" || m.Spec.Version != tag {
		t.Errorf("header: %s %s %s %s", m.APIVersion, m.Kind, m.Metadata.Name, m.Spec.Version)
	}
	if n := len(m.Spec.ShortDescription); n == 0 || n > 50 {
		t.Errorf("shortDescription has %d characters, want 1-50", n)
	}
	if !strings.Contains(m.Spec.Caveats, "customresourcedefinitions") {
		t.Errorf("caveats do not name the RBAC the plugin needs:\n%s", m.Spec.Caveats)
	}
	var got []Platform
	for _, p := range m.Spec.Platforms {
		pl := Platform{p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]}
		got = append(got, pl)
		want := "https://github.com/crdversion/kubectl-crdversion/releases/download/" + tag + "/" + ArchiveName(tag, pl)
		if p.URI != want || p.SHA256 != SHA256([]byte(ArchiveName(tag, pl))) || p.Bin != pl.Exe() {
			t.Errorf("%s: uri %s sha256 %s bin %s; want %s, the archive's sum, %s", pl, p.URI, p.SHA256, p.Bin, want, pl.Exe())
		}
	}
	if !slices.Equal(got, Platforms) {
		t.Errorf("platforms %v, want %v", got, Platforms)
	}
}

func TestKeepPlatforms(t *testing.T) {
	const tag = "v1.2.3"
	keep := ArchiveName(tag, Platform{"darwin", "arm64"})
	out, err := KeepPlatforms(renderPluginYAML(t, tag), func(uri string) bool { return path.Base(uri) == keep })
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.UnmarshalStrict(out, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Spec.Platforms) != 1 || path.Base(m.Spec.Platforms[0].URI) != keep || m.Spec.Platforms[0].Bin != Binary {
		t.Errorf("kept %+v, want only %s", m.Spec.Platforms, keep)
	}
	if m.Spec.Version != tag || !strings.Contains(m.Spec.Description, "\n\n") {
		t.Errorf("the rest of the manifest changed: version %q, description %q", m.Spec.Version, m.Spec.Description)
	}
	if _, err := KeepPlatforms(renderPluginYAML(t, tag), func(string) bool { return false }); err == nil {
		t.Error("a manifest with no platform left was accepted")
	}
}

func TestRenderManifestErrors(t *testing.T) {
	sha := func(string) (string, error) { return "x", nil }
	if _, err := RenderManifest([]byte("version: {{ .Tag }}"), "v1.0.0", sha); err == nil {
		t.Error("an unknown template field was accepted")
	}
	if _, err := RenderManifest([]byte(`{{addURIAndSha "u/{{ .Nope }}" .TagName}}`), "v1.0.0", sha); err == nil {
		t.Error("an unknown field in the URL template was accepted")
	}
	got, err := RenderManifest([]byte(`  {{addURIAndSha "u/{{ .TagName }}/{{ .Version }}" .TagName}}`), "v1.0.0-rc.1", sha)
	if err != nil || string(got) != "  uri: u/v1.0.0-rc.1/1.0.0\n    sha256: x" {
		t.Errorf("got %q, %v", got, err)
	}
}

// goreleaser is the part of .goreleaser.yaml the release depends on.
type goreleaser struct {
	ProjectName string `json:"project_name"`
	Builds      []struct {
		ID      string   `json:"id"`
		Main    string   `json:"main"`
		Binary  string   `json:"binary"`
		Env     []string `json:"env"`
		Flags   []string `json:"flags"`
		Ldflags []string `json:"ldflags"`
		Goos    []string `json:"goos"`
		Goarch  []string `json:"goarch"`
	} `json:"builds"`
	Archives []struct {
		IDs          []string      `json:"ids"`
		NameTemplate string        `json:"name_template"`
		Formats      []string      `json:"formats"`
		Files        []interface{} `json:"files"`
	} `json:"archives"`
	Checksum struct {
		Algorithm string `json:"algorithm"`
	} `json:"checksum"`
}

// .goreleaser.yaml builds the platforms and archive names plugin.yaml and
// krew-snapshot use, with CGO off, -trimpath, the version ldflags, and
// LICENSE in every archive.
func TestGoreleaserMatchesTheManifest(t *testing.T) {
	data, err := os.ReadFile("../../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var g goreleaser
	if err := yaml.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	const tag = "v1.2.3"
	var built []Platform
	names := map[string]string{}
	for _, b := range g.Builds {
		if b.Main != "./cmd/kubectl-crdversion" || b.Binary != Binary || !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") {
			t.Errorf("build %s: main %s binary %s env %v flags %v", b.ID, b.Main, b.Binary, b.Env, b.Flags)
		}
		ld := strings.Join(b.Ldflags, " ")
		for _, v := range []string{"internal/version.version={{ .Tag }}", "internal/version.commit={{ .FullCommit }}"} {
			if !strings.Contains(ld, "-X github.com/crdversion/kubectl-crdversion/"+v) {
				t.Errorf("build %s: ldflags %q lack %s", b.ID, ld, v)
			}
		}
		var archives int
		for _, a := range g.Archives {
			if !slices.Contains(a.IDs, b.ID) {
				continue
			}
			archives++
			if !slices.ContainsFunc(a.Files, func(f interface{}) bool { return f == "LICENSE" }) {
				t.Errorf("archive of build %s lacks LICENSE: %v", b.ID, a.Files)
			}
			for _, osName := range b.Goos {
				for _, arch := range b.Goarch {
					p := Platform{osName, arch}
					built = append(built, p)
					var name strings.Builder
					tmpl := template.Must(template.New("").Parse(a.NameTemplate))
					if err := tmpl.Execute(&name, map[string]string{"ProjectName": g.ProjectName, "Tag": tag, "Os": osName, "Arch": arch}); err != nil {
						t.Fatal(err)
					}
					names[p.String()] = name.String() + "." + a.Formats[0]
				}
			}
		}
		if archives != 1 {
			t.Errorf("build %s is in %d archives, want 1", b.ID, archives)
		}
	}
	slices.SortFunc(built, func(a, b Platform) int { return strings.Compare(a.String(), b.String()) })
	want := slices.Clone(Platforms)
	slices.SortFunc(want, func(a, b Platform) int { return strings.Compare(a.String(), b.String()) })
	if !slices.Equal(built, want) {
		t.Errorf(".goreleaser.yaml builds %v, want %v", built, want)
	}
	for _, p := range Platforms {
		if names[p.String()] != ArchiveName(tag, p) {
			t.Errorf("%s: .goreleaser.yaml names the archive %q, plugin.yaml %q", p, names[p.String()], ArchiveName(tag, p))
		}
	}
	if g.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum algorithm %q, want sha256", g.Checksum.Algorithm)
	}
}
