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
		"git:HEAD~2:crd":    "revision HEAD~2 is not in this clone (in a shallow clone, fetch it first",
		"git:HEAD:nothing":  "HEAD has no file at config/nothing",
		"git:HEAD:/etc":     "/etc is outside the repository",
		"git:HEAD:":         "empty PATH",
		"git:":              "no revision",
		"git:HEAD":          "no PATH, and no --new path",
		"git:no-such-ref:x": "revision no-such-ref is not in this clone",
	} {
		if _, err := Read(ctx, spec, nil); err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), spec+": ") {
			t.Errorf("%s: error %v, want %q", spec, err, want)
		}
	}

	t.Chdir(t.TempDir())
	if _, err := Read(ctx, "git:HEAD:x", nil); err == nil || !strings.Contains(err.Error(), "not inside a git work tree") {
		t.Errorf("outside a repository: %v", err)
	}
}
