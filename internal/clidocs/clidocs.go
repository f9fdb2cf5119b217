// Package clidocs writes the command reference of kubectl crdversion
// (docs/commands/) from the cobra command tree with cobra's own Markdown
// generator, and checks that the committed reference is the one the tree
// generates: a flag, usage line, help text or command added without
// `make docs` is reported as a difference.
package clidocs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
	"k8s.io/client-go/util/homedir"

	"github.com/crdversion/kubectl-crdversion/internal/cli"
)

// header starts every generated file.
const header = "<!-- Generated from the command tree by `make docs`; do not edit. -->\n\n"

// Generate returns the reference of the tree under root: one Markdown file
// per available command (help and hidden commands excepted), keyed by file
// name (kubectl_crdversion_status.md). Flag defaults under the home folder of
// whoever runs it (kubectl's --cache-dir) read $HOME, so the output does not
// depend on the machine. It sets DisableAutoGenTag on the tree so no date is
// written, and gives each command its whole description
// (cli.DetailsAnnotation), of which --help shows the first paragraph.
func Generate(root *cobra.Command) (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "crdversion-docs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	home := homedir.HomeDir()
	visit(root, func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		// The reference holds the whole description; --help its first
		// paragraph (cli.DetailsAnnotation).
		if full := c.Annotations[cli.DetailsAnnotation]; full != "" {
			c.Long = full
		}
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if home != "" && strings.HasPrefix(f.DefValue, home+string(filepath.Separator)) {
					f.DefValue = "$HOME" + strings.TrimPrefix(f.DefValue, home)
				}
			})
		}
	})
	prepend := func(string) string { return header }
	link := func(name string) string { return name }
	if err := doc.GenMarkdownTreeCustom(root, dir, prepend, link); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = data
	}
	return out, nil
}

func visit(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, child := range c.Commands() {
		visit(child, f)
	}
}

// Write replaces the Markdown files in dir with the reference of root.
func Write(root *cobra.Command, dir string) error {
	files, err := Generate(root)
	if err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Check compares the Markdown files in dir with the reference of root. Its
// error lists each file that differs, is missing or is left over, and says
// to run `make docs`.
func Check(root *cobra.Command, dir string) error {
	files, err := Generate(root)
	if err != nil {
		return err
	}
	var problems []string
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case os.IsNotExist(err):
			problems = append(problems, name+" is missing")
		case err != nil:
			return err
		case !bytes.Equal(got, want):
			problems = append(problems, name+" differs from the command tree"+firstDifference(got, want))
		}
	}
	existing, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return err
	}
	for _, f := range existing {
		if _, ok := files[filepath.Base(f)]; !ok {
			problems = append(problems, filepath.Base(f)+" documents no command")
		}
	}
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	return fmt.Errorf("the command reference in %s is out of date (run make docs):\n  %s", dir, strings.Join(problems, "\n  "))
}

// firstDifference quotes the first line where got and want differ.
func firstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf(" at line %d: has %q, the tree gives %q", i+1, gl, wl)
		}
	}
	return ""
}
