// Package release builds what a release of kubectl crdversion publishes, for
// a local snapshot: one archive per platform (the binary, LICENSE and the
// kubectl_complete-crdversion script), checksums.txt, and the krew manifest
// rendered from plugin.yaml the way krew-release-bot renders it at release.
//
// The names match .goreleaser.yaml, so the manifest rendered here is the one
// the release bot would submit for the same tag (apart from the sha256
// values, which depend on the bytes built).
package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"
)

// Binary is the name of the plugin executable (on Windows with ".exe").
const Binary = "kubectl-crdversion"

// Platform is a GOOS/GOARCH pair krew selects by its os and arch labels.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Platforms are the platforms a release publishes, as in .goreleaser.yaml
// and plugin.yaml.
var Platforms = []Platform{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"},
}

// Host is the platform of the running program.
func Host() Platform { return Platform{runtime.GOOS, runtime.GOARCH} }

// ParsePlatforms reads a platform list: "all" (every release platform),
// "host", or a comma-separated list of OS/ARCH pairs among Platforms.
// It fails on an unknown or repeated platform.
func ParsePlatforms(s string) ([]Platform, error) {
	switch s {
	case "all":
		return slices.Clone(Platforms), nil
	case "host":
		s = Host().String()
	}
	var out []Platform
	for _, f := range strings.Split(s, ",") {
		osName, arch, _ := strings.Cut(strings.TrimSpace(f), "/")
		p := Platform{osName, arch}
		if !slices.Contains(Platforms, p) {
			return nil, fmt.Errorf("platform %q is not one a release publishes (%s)", f, platformList())
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("platform %s is listed twice", p)
		}
		out = append(out, p)
	}
	return out, nil
}

func platformList() string {
	var s []string
	for _, p := range Platforms {
		s = append(s, p.String())
	}
	return strings.Join(s, ", ")
}

// Exe is the file name of the plugin binary on p.
func (p Platform) Exe() string {
	if p.OS == "windows" {
		return Binary + ".exe"
	}
	return Binary
}

// ArchiveName is the release asset of p for tag:
// kubectl-crdversion_<tag>_<os>_<arch>.tar.gz, .zip on Windows (the
// archives.name_template of .goreleaser.yaml).
func ArchiveName(tag string, p Platform) string {
	ext := ".tar.gz"
	if p.OS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("%s_%s_%s_%s%s", Binary, tag, p.OS, p.Arch, ext)
}

// krewSemver is the version form krew accepts in spec.version: v, then
// MAJOR.MINOR.PATCH with an optional pre-release and build metadata.
var krewSemver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// SnapshotTag turns a `git describe` version into a tag krew accepts: a
// release tag (v1.2.3) stays as it is; anything else (a commit, a
// "-dirty" tree) becomes v0.0.0-snapshot-<version>, with characters a
// semantic version cannot hold replaced by '-'.
func SnapshotTag(version string) string {
	if krewSemver.MatchString(version) {
		return version
	}
	clean := regexp.MustCompile(`[^0-9A-Za-z-]+`).ReplaceAllString(version, "-")
	if clean = strings.Trim(clean, "-"); clean == "" {
		clean = "dev"
	}
	return "v0.0.0-snapshot-" + clean
}

// File is one entry of an archive.
type File struct {
	Name string
	Mode int64 // permission bits, 0o755 for executables
	Data []byte
}

// WriteArchive writes files as p's archive format: zip for Windows, a
// gzipped tar otherwise. Entries carry modTime so a rebuild of the same
// bytes gives the same archive.
func WriteArchive(w io.Writer, p Platform, files []File, modTime time.Time) error {
	if p.OS == "windows" {
		return writeZip(w, files, modTime)
	}
	return writeTarGz(w, files, modTime)
}

func writeTarGz(w io.Writer, files []File, modTime time.Time) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Mode: f.Mode, Size: int64(len(f.Data)), ModTime: modTime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func writeZip(w io.Writer, files []File, modTime time.Time) error {
	zw := zip.NewWriter(w)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.Name, Method: zip.Deflate, Modified: modTime}
		h.SetMode(fs.FileMode(f.Mode))
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := fw.Write(f.Data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// SHA256 is the hex sha256 of data, as krew's spec.platforms[].sha256 and
// checksums.txt spell it.
func SHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Checksums formats checksums.txt as goreleaser writes it: "<sha256>  <name>"
// per line, sorted by name.
func Checksums(sums map[string]string) []byte {
	var names []string
	for n := range sums {
		names = append(names, n)
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	return b.Bytes()
}

// ParseChecksums reads checksums.txt ("<sha256>  <name>" lines, as
// Checksums and goreleaser write it) into sums by name.
func ParseChecksums(data []byte) (map[string]string, error) {
	sums := map[string]string{}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 || name == "" {
			return nil, fmt.Errorf("checksums.txt line %d: %q is not \"<sha256>  <name>\"", i+1, line)
		}
		sums[name] = sum
	}
	return sums, nil
}

// RenderManifest renders a krew manifest template the way krew-release-bot
// does: the template sees .TagName (and .Version, the tag's numeric part),
// and {{ addURIAndSha URL TAG }} expands URL, itself a template over the
// same values, into "uri: URL" and, on the next line indented by four
// spaces, "sha256: SUM". sha returns the sha256 of the asset at a URL (the
// bot downloads it; a snapshot reads the local archive of the same name).
func RenderManifest(tmpl []byte, tag string, sha func(url string) (string, error)) ([]byte, error) {
	values := struct{ TagName, Version string }{tag, versionOfTag(tag)}
	funcs := template.FuncMap{
		"addURIAndSha": func(urlTemplate, tag string) (string, error) {
			u, err := template.New("url").Parse(urlTemplate)
			if err != nil {
				return "", err
			}
			var url strings.Builder
			if err := u.Execute(&url, struct{ TagName, Version string }{tag, versionOfTag(tag)}); err != nil {
				return "", err
			}
			sum, err := sha(url.String())
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("uri: %s\n    sha256: %s", url.String(), sum), nil
		},
		"indent": func(spaces int, v string) string {
			pad := strings.Repeat(" ", spaces)
			return strings.TrimSpace(pad + strings.ReplaceAll(v, "\n", "\n"+pad))
		},
	}
	t, err := template.New("plugin.yaml").Funcs(funcs).Option("missingkey=error").Parse(string(tmpl))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := t.Execute(&out, values); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// versionOfTag is the numeric part of a tag (1.2.3 of v1.2.3-rc.1), or the
// tag itself when it has none; the release bot's .Version.
func versionOfTag(tag string) string {
	if v := regexp.MustCompile(`\d+(\.\d+)+`).FindString(tag); v != "" {
		return v
	}
	return tag
}

// KeepPlatforms removes from a rendered manifest the spec.platforms entries
// whose uri keep rejects, for a snapshot that built only some platforms. It
// fails when no platform is left (krew needs at least one).
func KeepPlatforms(manifest []byte, keep func(uri string) bool) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(manifest, &doc); err != nil {
		return nil, err
	}
	platforms := lookup(lookup(doc.Content[0], "spec"), "platforms")
	if platforms == nil || platforms.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("the manifest has no spec.platforms list")
	}
	var kept []*yaml.Node
	for _, p := range platforms.Content {
		if uri := lookup(p, "uri"); uri != nil && keep(uri.Value) {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("no platform of the manifest was built")
	}
	platforms.Content = kept
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return out.Bytes(), enc.Close()
}

// lookup returns the value of key in mapping node m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
