// Package gitrev reads manifests as they were at a revision of the git
// repository the command runs in (diff --old git:REF[:PATH]), through the
// git command: the revision's files are written to a temporary directory,
// which the manifest reader then reads like any other.
package gitrev

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Prefix marks a revision argument: git:REF[:PATH].
const Prefix = "git:"

// LatestTag is the REF that names the newest tag reachable from HEAD.
const LatestTag = "latest-tag"

// Is reports whether arg names a revision (git:…).
func Is(arg string) bool { return strings.HasPrefix(arg, Prefix) }

// Tree is a revision's files under a temporary directory.
type Tree struct {
	// Spec is the argument as given ("git:HEAD~1:config/crd").
	Spec string
	// Ref is the revision read (for latest-tag, the tag's name).
	Ref string
	// Paths are the files and directories to read, in Dir, one per path
	// asked for.
	Paths []string
	// Dir is the temporary directory; Remove deletes it.
	Dir string
}

// Remove deletes the tree's temporary directory.
func (t *Tree) Remove() error { return os.RemoveAll(t.Dir) }

// Read writes the files of spec ("git:REF" or "git:REF:PATH") to a
// temporary directory. REF is any revision git names (a commit, a tag,
// HEAD~1) or latest-tag (the newest tag reachable from HEAD: git describe
// --tags --abbrev=0). PATH, a file or a directory, is relative to the
// current directory, as a path on the command line is; without it each
// of paths (those of --new) is read at the revision. The current
// directory must be inside a git work tree. Errors name what git said
// and, for a revision a shallow clone lacks, how to fetch it.
func Read(ctx context.Context, spec string, paths []string) (*Tree, error) {
	rest := strings.TrimPrefix(spec, Prefix)
	ref, path, hasPath := strings.Cut(rest, ":")
	if ref == "" {
		return nil, fmt.Errorf("%s: no revision (git:REF or git:REF:PATH, e.g. git:HEAD~1:config/crd or git:latest-tag)", spec)
	}
	if hasPath {
		if path == "" {
			return nil, fmt.Errorf("%s: empty PATH after the revision", spec)
		}
		paths = []string{path}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no PATH, and no --new path to read at the revision", spec)
	}
	top, err := git(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%s: not inside a git work tree: %w", spec, err)
	}
	top = strings.TrimSpace(top)
	t := &Tree{Spec: spec, Ref: ref}
	if ref == LatestTag {
		tag, err := git(ctx, "describe", "--tags", "--abbrev=0", "HEAD")
		if err != nil {
			return nil, fmt.Errorf("%s: no tag reachable from HEAD (a shallow clone? git fetch --tags --unshallow): %w", spec, err)
		}
		t.Ref = strings.TrimSpace(tag)
	}
	if _, err := git(ctx, "rev-parse", "--verify", "--quiet", t.Ref+"^{commit}"); err != nil {
		return nil, fmt.Errorf("%s: revision %s is not in this clone (in a shallow clone, fetch it first: git fetch --deepen=1, or git fetch origin tag NAME)", spec, t.Ref)
	}
	var rels []string
	for _, p := range paths {
		rel, err := repoPath(top, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
		rels = append(rels, rel)
	}
	if t.Dir, err = os.MkdirTemp("", "crdversion-git-"); err != nil {
		return nil, err
	}
	for _, rel := range rels {
		n, err := extract(ctx, top, t.Ref, rel, t.Dir)
		if err == nil && n == 0 {
			err = fmt.Errorf("%s has no file at %s", t.Ref, rel)
		}
		if err != nil {
			_ = t.Remove()
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
		t.Paths = append(t.Paths, filepath.Join(t.Dir, filepath.FromSlash(rel)))
	}
	return t, nil
}

// repoPath is p (relative to the current directory, or absolute) relative
// to the repository's top directory, in git's slash form.
func repoPath(top, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	// The top directory git gives is resolved; resolve the current one
	// alike, so that a symlinked checkout does not count as outside.
	if realTop, err := filepath.EvalSymlinks(top); err == nil {
		top = realTop
	}
	if wd, err := os.Getwd(); err == nil {
		if realWd, err := filepath.EvalSymlinks(wd); err == nil && !filepath.IsAbs(p) {
			abs = filepath.Join(realWd, p)
		}
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the repository %s", p, top)
	}
	if rel == "." {
		return ".", nil
	}
	return filepath.ToSlash(rel), nil
}

// extract writes the files of ref under rel (a file or a directory,
// relative to the repository's top directory, where git archive runs)
// below dir, and counts them.
func extract(ctx context.Context, top, ref, rel, dir string) (int, error) {
	args := []string{"archive", "--format=tar", ref}
	if rel != "." {
		args = append(args, "--", rel)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = top
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	n, readErr := untar(out, dir)
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		if strings.Contains(stderr.String(), "did not match any files") {
			return 0, nil
		}
		return 0, fmt.Errorf("git archive: %s", firstLine(stderr.String(), err))
	}
	return n, readErr
}

func untar(r io.Reader, dir string) (int, error) {
	tr := tar.NewReader(r)
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := filepath.FromSlash(h.Name)
		if !filepath.IsLocal(name) {
			return n, fmt.Errorf("git archive: path %q leaves the tree", h.Name)
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return n, err
		}
		f, err := os.Create(p)
		if err != nil {
			return n, err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

func git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", errors.New(firstLine(stderr.String(), err))
	}
	return stdout.String(), nil
}

func firstLine(s string, err error) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return err.Error()
	}
	line, _, _ := strings.Cut(s, "\n")
	return line
}
