package clidocs

import (
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// repoRoot is the work tree's root, seen from this package's directory.
const repoRoot = "../.."

// TestMarkdownLinksResolve fails on a relative link in README.md or
// docs/**/*.md whose target file does not exist. Links with a scheme
// (https:, mailto:) and links to a fragment of the same page are not
// checked.
func TestMarkdownLinksResolve(t *testing.T) {
	pages := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(repoRoot, p)
			if err != nil {
				return err
			}
			pages = append(pages, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("found %d Markdown pages; is the test running in internal/clidocs?", len(pages))
	}
	for _, page := range pages {
		src, err := os.ReadFile(filepath.Join(repoRoot, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range brokenLinks(page, src, exists) {
			t.Error(bad)
		}
	}
}

// TestDocPathsInGoResolve fails when a comment or string literal in a Go
// file of the work tree names a docs/….md file that does not exist.
func TestDocPathsInGoResolve(t *testing.T) {
	n := 0
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != repoRoot && (strings.HasPrefix(name, ".") || name == "bin" || name == "dist" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, err := filepath.Rel(repoRoot, p)
		if err != nil {
			return err
		}
		if filepath.ToSlash(rel) == "internal/clidocs/links_test.go" {
			return nil // its fixtures name missing pages on purpose
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		for _, bad := range missingDocPaths(filepath.ToSlash(rel), src, exists) {
			t.Error(bad)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("found %d Go files; is the test running in internal/clidocs?", n)
	}
}

// The checks report a missing target and nothing else, so they cannot pass by
// not looking.
func TestLinkChecksReportMissingTargets(t *testing.T) {
	have := func(p string) bool {
		return p == "docs/output.md" || p == "README.md" || p == "docs/commands/kubectl_crdversion.md"
	}
	md := "See [output](output.md), [gone](gone.md#x), [up](../README.md), [ref][r], " +
		"[web](https://example.com/x.md), [here](#codes), ![img](img/a.png) and `[code](code.md)`.\n\n" +
		"```\n[fenced](fenced.md)\n```\n\n[r]: commands/kubectl_crdversion.md\n"
	got := brokenLinks("docs/page.md", []byte(md), have)
	want := []string{"docs/page.md: link gone.md#x: docs/gone.md does not exist", "docs/page.md: link img/a.png: docs/img/a.png does not exist"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("brokenLinks:\n got: %q\nwant: %q", got, want)
	}

	src := "package x\n\n// See docs/output.md and docs/status-output.md.\nvar s = \"docs/gone.md\"\n\n// https://example.com/docs/x.md is not ours.\nvar docs = 1\n"
	got = missingDocPaths("x/x.go", []byte(src), have)
	want = []string{"x/x.go:3: names docs/status-output.md, which does not exist", "x/x.go:4: names docs/gone.md, which does not exist"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("missingDocPaths:\n got: %q\nwant: %q", got, want)
	}
}

// exists says whether the slash-separated path, relative to the work tree's
// root, names a file or directory.
func exists(p string) bool {
	_, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(p)))
	return err == nil
}

// brokenLinks returns one line per link or image in the Markdown page (a
// path relative to the work tree's root) whose relative target does not
// exist. Code spans and code blocks hold no links, as in any Markdown
// renderer.
func brokenLinks(page string, src []byte, exists func(string) bool) []string {
	var out []string
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		var dest string
		switch n := n.(type) {
		case *ast.Link:
			dest = string(n.Destination)
		case *ast.Image:
			dest = string(n.Destination)
		default:
			return ast.WalkContinue, nil
		}
		u, err := url.Parse(dest)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: link %s: %v", page, dest, err))
			return ast.WalkContinue, nil
		}
		if u.Scheme != "" || u.Host != "" || u.Path == "" {
			return ast.WalkContinue, nil
		}
		target := path.Join(path.Dir(page), u.Path)
		if !exists(target) {
			out = append(out, fmt.Sprintf("%s: link %s: %s does not exist", page, dest, target))
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		out = append(out, fmt.Sprintf("%s: %v", page, err))
	}
	return out
}

// docPath finds docs/….md paths that are not the tail of a longer path or
// URL.
var docPath = regexp.MustCompile(`(?:^|[^\w./-])(docs/[\w./-]*\.md)`)

// missingDocPaths returns one line per docs/….md path, named in a comment
// or string literal of the Go file, that does not exist.
func missingDocPaths(file string, src []byte, exists func(string) bool) []string {
	var out []string
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile(file, -1, len(src)), src, nil, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.COMMENT && tok != token.STRING {
			continue
		}
		for _, m := range docPath.FindAllStringSubmatchIndex(lit, -1) {
			p := lit[m[2]:m[3]]
			if !exists(p) {
				line := fset.Position(pos).Line + strings.Count(lit[:m[2]], "\n")
				out = append(out, fmt.Sprintf("%s:%d: names %s, which does not exist", file, line, p))
			}
		}
	}
	return out
}
