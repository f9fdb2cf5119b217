// Command krew-snapshot builds a local snapshot of a release: for each
// platform, the plugin binary (CGO off, -trimpath, stripped, with the
// version ldflags it is given), an archive holding it with LICENSE and the
// completion script, checksums.txt, and the krew manifest rendered from
// plugin.yaml into DIST/krew/crdversion.yaml. `make krew-manifest` runs it
// from the repository root.
//
// When only some platforms are built (-platforms host), the manifest lists
// only those: each entry carries the sha256 of an archive that exists.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/crdversion/kubectl-crdversion/internal/release"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "krew-snapshot:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		version   = flag.String("version", "dev", "version of the build, as `git describe --tags` gives it; the archives and the manifest use it as the tag when it is a semantic version (v1.2.3), else v0.0.0-snapshot-VERSION")
		ldflags   = flag.String("ldflags", "", "linker flags setting the version (the Makefile's LDFLAGS); -s -w are added")
		platforms = flag.String("platforms", "host", `platforms to build: "all", "host", or a comma-separated list such as linux/amd64,darwin/arm64`)
		dist      = flag.String("dist", "dist", "output folder; emptied first")
		tmplPath  = flag.String("template", "plugin.yaml", "krew manifest template in krew-release-bot's form")
		render    = flag.Bool("render-only", false, "build nothing: render the manifest for the archives DIST/checksums.txt lists (as `goreleaser release --snapshot` leaves them); -version is then the release tag")
	)
	flag.Parse()
	if *render {
		data, err := os.ReadFile(filepath.Join(*dist, "checksums.txt"))
		if err != nil {
			return err
		}
		sums, err := release.ParseChecksums(data)
		if err != nil {
			return err
		}
		return writeManifest(*tmplPath, *dist, release.SnapshotTag(*version), sums)
	}
	ps, err := release.ParsePlatforms(*platforms)
	if err != nil {
		return err
	}
	license, err := os.ReadFile("LICENSE")
	if err != nil {
		return err
	}
	tag := release.SnapshotTag(*version)
	if err := os.RemoveAll(*dist); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(*dist, "krew"), 0o755); err != nil {
		return err
	}
	// The commit time keeps rebuilt archives byte-identical.
	modTime := commitTime()
	sums := map[string]string{}
	for _, p := range ps {
		start := time.Now()
		bin, err := build(p, *ldflags, filepath.Join(*dist, "build", p.OS+"_"+p.Arch))
		if err != nil {
			return err
		}
		completion, err := completionScript(p)
		if err != nil {
			return err
		}
		files := []release.File{
			{Name: p.Exe(), Mode: 0o755, Data: bin},
			{Name: "LICENSE", Mode: 0o644, Data: license},
			completion,
		}
		name := release.ArchiveName(tag, p)
		f, err := os.Create(filepath.Join(*dist, name))
		if err != nil {
			return err
		}
		if err := release.WriteArchive(f, p, files, modTime); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		data, err := os.ReadFile(f.Name())
		if err != nil {
			return err
		}
		sums[name] = release.SHA256(data)
		fmt.Fprintf(os.Stderr, "built %s (%.1f MB) in %s\n", f.Name(), float64(len(data))/1e6, time.Since(start).Round(time.Second))
	}
	if err := os.WriteFile(filepath.Join(*dist, "checksums.txt"), release.Checksums(sums), 0o644); err != nil {
		return err
	}
	return writeManifest(*tmplPath, *dist, tag, sums)
}

// writeManifest renders the template for tag into DIST/krew/crdversion.yaml,
// with the platforms whose archives sums lists.
func writeManifest(tmplPath, dist, tag string, sums map[string]string) error {
	tmpl, err := os.ReadFile(tmplPath)
	if err != nil {
		return err
	}
	listed := map[string]bool{}
	manifest, err := release.RenderManifest(tmpl, tag, func(url string) (string, error) {
		name := path.Base(url)
		listed[name] = true
		if sum, ok := sums[name]; ok {
			return sum, nil
		}
		// Not built in this snapshot: dropped below.
		return strings.Repeat("0", 64), nil
	})
	if err != nil {
		return fmt.Errorf("rendering %s: %w", tmplPath, err)
	}
	for name := range sums {
		if !listed[name] {
			return fmt.Errorf("%s lists no platform with the archive %s", tmplPath, name)
		}
	}
	if len(listed) != len(sums) {
		manifest, err = release.KeepPlatforms(manifest, func(uri string) bool { _, ok := sums[path.Base(uri)]; return ok })
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "the manifest lists only the %d platform(s) built; PLATFORMS=all builds every one\n", len(sums))
	}
	if err := os.MkdirAll(filepath.Join(dist, "krew"), 0o755); err != nil {
		return err
	}
	out := filepath.Join(dist, "krew", "crdversion.yaml")
	if err := os.WriteFile(out, manifest, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s for %s\n", out, tag)
	return nil
}

// build compiles the plugin for p into dir and returns the binary.
func build(p release.Platform, ldflags, dir string) ([]byte, error) {
	out := filepath.Join(dir, p.Exe())
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", strings.TrimSpace("-s -w "+ldflags), "-o", out, "./cmd/kubectl-crdversion")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building for %s: %w", p, err)
	}
	return os.ReadFile(out)
}

// completionScript is the kubectl_complete-crdversion script for p: the
// shell script, or its .cmd twin on Windows.
func completionScript(p release.Platform) (release.File, error) {
	name := "kubectl_complete-crdversion"
	if p.OS == "windows" {
		name += ".cmd"
	}
	data, err := os.ReadFile(filepath.Join("cmd", "kubectl-crdversion", name))
	return release.File{Name: name, Mode: 0o755, Data: data}, err
}

// commitTime is the time of HEAD, or the Unix epoch outside a git checkout.
func commitTime() time.Time {
	out, err := exec.Command("git", "log", "-1", "--format=%ct").Output()
	if err == nil {
		var sec int64
		if _, err := fmt.Sscan(strings.TrimSpace(string(out)), &sec); err == nil {
			return time.Unix(sec, 0).UTC()
		}
	}
	return time.Unix(0, 0).UTC()
}
