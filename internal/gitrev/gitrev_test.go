package gitrev

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitIn runs git in dir and fails the test when it fails.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main", "-c", "tag.gpgSign=false", "-c", "commit.gpgSign=false"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// shallowClone makes a repository with three commits (the first tagged
// v0.1.0), each writing its number to config/crd/a.yaml and b.yaml, and
// returns a clone of it with the last two commits fetched.
func shallowClone(t *testing.T) string {
	t.Helper()
	src, clone := t.TempDir(), filepath.Join(t.TempDir(), "clone")
	gitIn(t, src, "init", "-q")
	for i, n := range []string{"one", "two", "three"} {
		write(t, filepath.Join(src, "config", "crd", "a.yaml"), "a: "+n+"\n")
		write(t, filepath.Join(src, "config", "crd", "sub", "b.yaml"), "b: "+n+"\n")
		gitIn(t, src, "add", ".")
		gitIn(t, src, "commit", "-qm", n)
		if i == 1 {
			gitIn(t, src, "tag", "v0.2.0")
		}
	}
	gitIn(t, filepath.Dir(clone), "clone", "-q", "--depth", "2", "file://"+src, clone)
	return clone
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRead: a revision's directory or file, from the top directory and
// from below it, latest-tag, and the errors of a revision the shallow
// clone lacks, a path it lacks, and a path outside the repository.
func TestRead(t *testing.T) {
	clone := shallowClone(t)
	t.Chdir(clone)
	ctx := context.Background()

	tree, err := Read(ctx, "git:HEAD~1:config/crd", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Paths) != 1 || read(t, filepath.Join(tree.Paths[0], "a.yaml")) != "a: two\n" || read(t, filepath.Join(tree.Paths[0], "sub", "b.yaml")) != "b: two\n" {
		t.Errorf("HEAD~1:config/crd: %+v", tree)
	}
	if err := tree.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tree.Dir); !os.IsNotExist(err) {
		t.Errorf("Remove left %s: %v", tree.Dir, err)
	}

	// Without PATH, the paths given (--new's), relative to the current
	// directory.
	t.Chdir(filepath.Join(clone, "config"))
	tree, err = Read(ctx, "git:latest-tag", []string{"crd/a.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tree.Remove() }()
	if tree.Ref != "v0.2.0" || len(tree.Paths) != 1 || read(t, tree.Paths[0]) != "a: two\n" {
		t.Errorf("latest-tag crd/a.yaml: %+v", tree)
	}

	for spec, want := range map[string]string{
		"git:HEAD~2:crd":    "revision HEAD~2 is not in this clone, a shallow clone: fetch more history first (git fetch --deepen=2)",
		"git:HEAD:nothing":  "HEAD has no file at config/nothing",
		"git:HEAD:/etc":     "/etc is outside the repository",
		"git:HEAD:":         "empty PATH",
		"git:":              "no revision",
		"git:HEAD":          "no PATH, and no --new path",
		"git:no-such-ref:x": "a tag: git fetch --depth=1 origin tag no-such-ref; a branch: git fetch --depth=1 origin no-such-ref:refs/remotes/origin/no-such-ref",
	} {
		if _, err := Read(ctx, spec, nil); err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), spec+": ") {
			t.Errorf("%s: error %v, want %q", spec, err, want)
		}
	}

	// The advice works: after the deepen it names, the revision is read.
	gitIn(t, clone, "fetch", "-q", "--deepen=2")
	if tree, err := Read(ctx, "git:HEAD~2:crd", nil); err != nil || read(t, filepath.Join(tree.Paths[0], "a.yaml")) != "a: one\n" {
		t.Errorf("after git fetch --deepen=2: %v", err)
	} else {
		_ = tree.Remove()
	}

	// HEAD tagged (a tag's pipeline): latest-tag is the tag before it,
	// never the release itself.
	gitIn(t, clone, "tag", "v0.3.0")
	if tree, err := Read(ctx, "git:latest-tag", []string{"crd/a.yaml"}); err != nil || tree.Ref != "v0.2.0" {
		t.Errorf("latest-tag on a tagged HEAD: %+v, %v", tree, err)
	} else {
		_ = tree.Remove()
	}

	t.Chdir(t.TempDir())
	if _, err := Read(ctx, "git:HEAD:x", nil); err == nil || !strings.Contains(err.Error(), "not inside a git work tree") {
		t.Errorf("outside a repository: %v", err)
	}
}

// TestReadSymlinks: a symlinked manifest (a chart's crds/ linking the
// CRD file elsewhere in the repository) is read as the file it names at
// the revision, in a directory and as PATH itself; a link out of the
// repository or to a directory is an error that says so.
func TestReadSymlinks(t *testing.T) {
	src := t.TempDir()
	gitIn(t, src, "init", "-q")
	write(t, filepath.Join(src, "config", "crd", "a.yaml"), "a: at the revision\n")
	write(t, filepath.Join(src, "chart", "crds", "own.yaml"), "own: yes\n")
	for link, target := range map[string]string{"chart/crds/a.yaml": "../../config/crd/a.yaml", "chart/crds/chain.yaml": "a.yaml",
		"bad/out.yaml": "../../outside.yaml", "bad/dir": "../config/crd"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(src, link)); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, src, "add", ".")
	gitIn(t, src, "commit", "-qm", "one")
	write(t, filepath.Join(src, "config", "crd", "a.yaml"), "a: changed since\n")
	t.Chdir(src)
	ctx := context.Background()

	tree, err := Read(ctx, "git:HEAD:chart/crds", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tree.Remove() }()
	for name, want := range map[string]string{"a.yaml": "a: at the revision\n", "chain.yaml": "a: at the revision\n", "own.yaml": "own: yes\n"} {
		if got := read(t, filepath.Join(tree.Paths[0], name)); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	link, err := Read(ctx, "git:HEAD:chart/crds/a.yaml", nil)
	if err != nil || read(t, link.Paths[0]) != "a: at the revision\n" {
		t.Errorf("PATH a symlink: %v", err)
	}
	if link != nil {
		_ = link.Remove()
	}
	for spec, want := range map[string]string{"git:HEAD:bad/out.yaml": "leaves the repository", "git:HEAD:bad/dir": "is a symlink to the directory config/crd"} {
		if _, err := Read(ctx, spec, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
}
