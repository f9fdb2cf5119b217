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
	"path"
	"path/filepath"
	"regexp"
	"strconv"
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
		if t.Ref, err = latestTag(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
	}
	if _, err := git(ctx, "rev-parse", "--verify", "--quiet", t.Ref+"^{commit}"); err != nil {
		return nil, fmt.Errorf("%s: %s", spec, missingRevision(ctx, t.Ref))
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

// latestTag is the newest tag reachable from HEAD, the release before
// it: when HEAD itself is tagged (a pipeline of a tag's push), the newest
// tag before that one, so that a release is never compared with itself.
func latestTag(ctx context.Context) (string, error) {
	tag, err := git(ctx, "describe", "--tags", "--abbrev=0", "HEAD")
	if err != nil {
		return "", fmt.Errorf("no tag reachable from HEAD (a shallow clone? git fetch --tags --unshallow): %w", err)
	}
	tag = strings.TrimSpace(tag)
	head, err1 := git(ctx, "rev-parse", "HEAD^{commit}")
	tagged, err2 := git(ctx, "rev-parse", tag+"^{commit}")
	if err1 != nil || err2 != nil || head != tagged {
		return tag, nil
	}
	prev, err := git(ctx, "describe", "--tags", "--abbrev=0", tag+"^")
	if err != nil {
		return "", fmt.Errorf("HEAD is the tag %s and no tag before it is reachable (a first release, or a shallow clone: git fetch --tags --unshallow); give the baseline as git:REF", tag)
	}
	return strings.TrimSpace(prev), nil
}

// missingRevision says that ref is not in the clone, and how to fetch it
// with its own name: deepen by the count of HEAD~N, or fetch the tag or
// branch (a shallow clone has neither until asked).
func missingRevision(ctx context.Context, ref string) string {
	msg := fmt.Sprintf("revision %s is not in this clone", ref)
	shallow, _ := git(ctx, "rev-parse", "--is-shallow-repository")
	if strings.TrimSpace(shallow) != "true" {
		return msg
	}
	if m := headRelative.FindStringSubmatch(ref); m != nil {
		n := 1
		if m[1] != "" {
			n, _ = strconv.Atoi(m[1])
		}
		return fmt.Sprintf("%s, a shallow clone: fetch more history first (git fetch --deepen=%d)", msg, n)
	}
	name := strings.TrimPrefix(ref, "origin/")
	return fmt.Sprintf("%s, a shallow clone: fetch it first — a tag: git fetch --depth=1 origin tag %s; a branch: git fetch --depth=1 origin %s:refs/remotes/origin/%s, then --old git:origin/%s", msg, name, name, name, name)
}

// headRelative matches HEAD~N, HEAD^ and HEAD~ (N in the group).
var headRelative = regexp.MustCompile(`^HEAD(?:~(\d*)|\^)$`)

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
	n, links, readErr := untar(out, dir)
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		if strings.Contains(stderr.String(), "did not match any files") {
			return 0, nil
		}
		return 0, fmt.Errorf("git archive: %s", firstLine(stderr.String(), err))
	}
	if readErr != nil {
		return n, readErr
	}
	// A symlinked manifest (a chart's crds/ linking the CRD files) is
	// read as the file it names at the same revision.
	for name, target := range links {
		data, err := followLink(ctx, top, ref, name, target)
		if err != nil {
			return n, err
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return n, err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// followLink reads, at ref, the file that the symlink name (target its
// link text) names, following links up to a depth of 8. A link out of
// the repository, or to a directory, is an error that says so.
func followLink(ctx context.Context, top, ref, name, target string) ([]byte, error) {
	at := name
	for range 8 {
		if path.IsAbs(target) {
			return nil, fmt.Errorf("%s is a symlink to %s, outside the repository", name, target)
		}
		at = path.Join(path.Dir(at), target)
		if at == ".." || strings.HasPrefix(at, "../") {
			return nil, fmt.Errorf("%s is a symlink that leaves the repository (%s)", name, at)
		}
		cmd := exec.CommandContext(ctx, "git", "ls-tree", ref, "--", at)
		cmd.Dir = top
		entry, err := cmd.Output()
		if err != nil || len(entry) == 0 {
			return nil, fmt.Errorf("%s is a symlink to %s, which %s does not have", name, at, ref)
		}
		mode, _, _ := strings.Cut(string(entry), " ")
		blob := exec.CommandContext(ctx, "git", "cat-file", "-p", ref+":"+at)
		blob.Dir = top
		switch mode {
		case "120000":
			link, err := blob.Output()
			if err != nil {
				return nil, fmt.Errorf("reading the symlink %s at %s: %w", at, ref, err)
			}
			target = string(link)
		case "100644", "100755":
			data, err := blob.Output()
			if err != nil {
				return nil, fmt.Errorf("reading %s at %s: %w", at, ref, err)
			}
			return data, nil
		default:
			return nil, fmt.Errorf("%s is a symlink to the directory %s, which is not followed: give it as the PATH (git:%s:%s)", name, at, ref, at)
		}
	}
	return nil, fmt.Errorf("%s: too many levels of symlinks", name)
}

// untar writes the regular files of a git archive below dir, counts
// them, and returns its symlinks (archive path to link text).
func untar(r io.Reader, dir string) (int, map[string]string, error) {
	tr := tar.NewReader(r)
	n := 0
	links := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return n, links, nil
		}
		if err != nil {
			return n, links, err
		}
		if h.Typeflag == tar.TypeSymlink {
			links[h.Name] = h.Linkname
			continue
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := filepath.FromSlash(h.Name)
		if !filepath.IsLocal(name) {
			return n, links, fmt.Errorf("git archive: path %q leaves the tree", h.Name)
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return n, links, err
		}
		f, err := os.Create(p)
		if err != nil {
			return n, links, err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return n, links, err
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
