// Package internal_test checks the layering of the packages below internal/
// from their source: it parses every non-test .go file with go/parser (no
// build, no type checking) and fails on the arrows that must never exist.
//
//   - The pure core (the table pure below) imports no client-go, no
//     internal/cluster, no internal/cli, no cobra or pflag, and no internal
//     package that is not pure itself, so it is tested without a server.
//   - Below the command layer (internal/cli, internal/clidocs and the test
//     harness internal/e2e) nothing imports cobra, pflag or the standard flag
//     package, reads os.Args, calls os.Exit, references os.Stdout or
//     os.Stderr, or prints (fmt.Print*, log.Print*/Fatal*/Panic*, print,
//     println): domain packages return values and errors, commands print.
//   - Only cmd/... and internal/clidocs import internal/cli.
//   - internal/cluster, the layer that talks to the API server, imports no
//     executor built on it (forbiddenArrows).
//   - internal/view, which prints, imports from internal/ only the
//     packages whose values it prints (onlyImports).
package internal_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/crdversion/kubectl-crdversion"

// pure is the pure core, as paths below internal/. A pure package imports
// nothing in forbiddenInPure and no internal package outside this table.
// Packages that talk to the API server through client-go interfaces
// (cluster, doctor, preflight, …) are not pure: leave them out, and the
// other rules still hold for them.
var pure = []string{
	"access",
	"completion",
	"edit",
	"fairness",
	"fleet",
	"lifecycle",
	"managedfields",
	"manifest",
	"migrate/result",
	"reach",
	"references",
	"report",
	"retire",
	"schema",
	"schemadiff",
	"upgrade",
	"usage",
	"usage/auditlog",
	"version",
}

// forbiddenInPure are import paths (and, with a trailing slash, path
// prefixes) that no pure package imports.
var forbiddenInPure = []string{
	"k8s.io/client-go/",
	"k8s.io/cli-runtime/",
	"k8s.io/kubectl/",
	"github.com/spf13/cobra",
	"github.com/spf13/cobra/",
	"github.com/spf13/pflag",
	module + "/internal/cluster",
	module + "/internal/cli",
}

// allowedInPure are arrows from a pure package that break the rule and are
// tolerated while the code moves; none are today. Each line is temporary:
// the test fails on a line that no longer matches an import, so a stale
// allowance cannot stay behind.
var allowedInPure = []struct{ from, to, why string }{}

// forbiddenArrows are imports between internal packages that must not
// exist: from (a directory below internal/, with everything under it) to
// each of to (exact paths below internal/).
var forbiddenArrows = []struct {
	from string
	to   []string
	why  string
}{
	{"cluster", []string{"action", "doctor", "fleet", "migrate", "preflight", "retire", "svm"},
		"cluster is the one layer that talks to the API server; the executors build on it, and the values both need live on a floor below (managedfields, reach, lifecycle)"},
	{"loss", []string{"action", "cli", "view", "doctor", "migrate", "preflight", "retire", "svm"},
		"loss measures what a rewrite loses for the commands that run one (migrate, promote-storage, retire); it answers them over a narrow interface and does not import them, the command layer or the printers (the values it shares with migrate live in migrate/result)"},
}

// onlyImports are, per directory below internal/, the only internal
// packages its files may import; imports from outside internal/ (printers,
// progress bars) are not restricted.
var onlyImports = map[string]struct {
	may []string
	why string
}{
	"view": {
		// report, edit and lifecycle, and the pure packages whose values
		// it prints: a run's result, a cluster's reach, retire's steps and
		// events, check-upgrade's verdicts.
		[]string{"edit", "lifecycle", "migrate/result", "reach", "references", "report", "retire", "upgrade"},
		"view prints values it is given; it does not import an executor (doctor, migrate, svm, action, …) to build or name them",
	},
}

// commandLayer are the directories below internal/ (with everything under
// them) that may print, exit, read flags and import cobra or pflag.
var commandLayer = []string{"cli", "clidocs", "e2e"}

// cliImporters are the directories below internal/ that may import
// internal/cli, besides cmd/... outside internal/.
var cliImporters = []string{"clidocs"}

// source is one parsed file: its path relative to internal/ (slash
// separated) and its syntax tree.
type source struct {
	name string
	file *ast.File
}

// dir is the directory of the file relative to internal/, "" for internal/
// itself.
func (s source) dir() string {
	d := path.Dir(s.name)
	if d == "." {
		return ""
	}
	return d
}

func TestLayering(t *testing.T) {
	fset := token.NewFileSet()
	var files []source
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "vendor" || (p != "." && strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, source{filepath.ToSlash(p), f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("found %d Go files below internal/; is the test running in internal/?", len(files))
	}
	for _, v := range checkLayering(fset, files) {
		t.Error(v)
	}
}

// TestLayeringCatchesStrayArrows feeds the checker one file per rule that
// breaks it, and one that breaks none, so that a checker that stopped
// looking would fail here.
func TestLayeringCatchesStrayArrows(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // substrings of the violations, in order; none for a clean file
	}{
		{"lifecycle/x.go", `package lifecycle
import "k8s.io/client-go/rest"
var _ rest.Config`, []string{"lifecycle/x.go:2: pure package internal/lifecycle imports k8s.io/client-go/rest"}},
		{"edit/x.go", `package edit
import "github.com/crdversion/kubectl-crdversion/internal/cluster"
var _ = cluster.X`, []string{"edit/x.go:2: pure package internal/edit imports " + module + "/internal/cluster"}},
		{"schema/x.go", `package schema
import "github.com/crdversion/kubectl-crdversion/internal/webhook"
var _ = webhook.X`, []string{"schema/x.go:2: pure package internal/schema imports internal/webhook, which is not in the pure table"}},
		{"migrate/x.go", fixture(t, "migrate_x.go.txt"), []string{
			"migrate/x.go:6: imports github.com/spf13/pflag",
			"migrate/x.go:9: calls fmt.Println",
			"migrate/x.go:10: calls os.Exit",
			"migrate/x.go:11: references os.Stderr",
			"migrate/x.go:12: calls log.Fatalf",
			"migrate/x.go:13: calls println",
		}},
		{"svm/x.go", `package svm
import "flag"
var _ = flag.Parse`, []string{"svm/x.go:2: imports flag"}},
		{"svm/y.go", `package svm
import "github.com/crdversion/kubectl-crdversion/internal/cli"
var _ = cli.X`, []string{"svm/y.go:2: imports internal/cli"}},
		{"cluster/x.go", `package cluster
import "github.com/crdversion/kubectl-crdversion/internal/retire"
var _ = retire.X`, []string{"cluster/x.go:2: internal/cluster imports internal/retire (rule: cluster is the one layer"}},
		{"cluster/y.go", `package cluster
import "github.com/crdversion/kubectl-crdversion/internal/managedfields"
var _ = managedfields.X`, nil},
		{"view/x.go", `package view
import ("github.com/crdversion/kubectl-crdversion/internal/report"; "github.com/crdversion/kubectl-crdversion/internal/svm")
var _, _ = report.X, svm.X`, []string{"view/x.go:2: internal/view imports internal/svm, which is not among edit, lifecycle"}},
		{"cli/x.go", fixture(t, "cli_x.go.txt"), nil},
		{"report/x.go", `package report
import ("fmt"; "github.com/crdversion/kubectl-crdversion/internal/lifecycle")
var _ = fmt.Sprintf("%v", lifecycle.X)`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, c.name, c.src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			got := checkRules(fset, []source{{c.name, f}})
			if len(got) != len(c.want) {
				t.Fatalf("got %d violations, want %d:\n%s", len(got), len(c.want), strings.Join(got, "\n"))
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("violation %d:\n got: %s\nwant: …%s…", i, got[i], w)
				}
			}
		})
	}
}

// checkLayering returns one line per violation of the three rules, and
// one per allowance in allowedInPure that no longer matches an import.
func checkLayering(fset *token.FileSet, files []source) []string {
	out := checkRules(fset, files)
	for _, a := range allowedInPure {
		used := false
		for _, s := range files {
			if s.dir() != a.from {
				continue
			}
			for _, imp := range s.file.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == module+"/internal/"+a.to {
					used = true
				}
			}
		}
		if !used {
			out = append(out, fmt.Sprintf("allowedInPure lists internal/%s -> internal/%s (%s), which no file imports any more: remove the line", a.from, a.to, a.why))
		}
	}
	return out
}

// checkRules applies the rules to files, without the allowance check.
func checkRules(fset *token.FileSet, files []source) []string {
	var out []string
	for _, s := range files {
		dir := s.dir()
		at := func(n ast.Node) string {
			p := fset.Position(n.Pos())
			return fmt.Sprintf("internal/%s:%d", s.name, p.Line)
		}
		isPure := slices.Contains(pure, dir)
		belowCLI := !under(dir, commandLayer)
		local := map[string]string{} // local name -> import path, for fmt, os and log
		for _, imp := range s.file.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				continue
			}
			name := path.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			if p == "fmt" || p == "os" || p == "log" {
				local[name] = p
			}
			if isPure {
				if forbidden(p) && !allowed(dir, p) {
					out = append(out, fmt.Sprintf("%s: pure package internal/%s imports %s (rule: the pure core imports no client-go, cluster, cli, cobra or pflag)", at(imp), dir, p))
				} else if rel, ok := strings.CutPrefix(p, module+"/internal/"); ok && !forbidden(p) && !slices.Contains(pure, rel) && !allowed(dir, p) {
					out = append(out, fmt.Sprintf("%s: pure package internal/%s imports internal/%s, which is not in the pure table (rule: a pure package imports only pure internal packages; add it to pure in internal/layering_test.go if it is pure)", at(imp), dir, rel))
				}
			}
			if belowCLI && (p == "flag" || p == "github.com/spf13/cobra" || strings.HasPrefix(p, "github.com/spf13/cobra/") || p == "github.com/spf13/pflag") {
				out = append(out, fmt.Sprintf("%s: imports %s below the command layer (rule: only internal/cli, internal/clidocs and internal/e2e use cobra, pflag or flag)", at(imp), p))
			}
			if p == module+"/internal/cli" && dir != "cli" && !under(dir, cliImporters) {
				out = append(out, fmt.Sprintf("%s: imports internal/cli (rule: only cmd/... and internal/clidocs import internal/cli)", at(imp)))
			}
			if rel, ok := strings.CutPrefix(p, module+"/internal/"); ok {
				for _, a := range forbiddenArrows {
					if under(dir, []string{a.from}) && slices.Contains(a.to, rel) {
						out = append(out, fmt.Sprintf("%s: internal/%s imports internal/%s (rule: %s)", at(imp), dir, rel, a.why))
					}
				}
				if only, ok := onlyImports[dir]; ok && !slices.Contains(only.may, rel) {
					out = append(out, fmt.Sprintf("%s: internal/%s imports internal/%s, which is not among %s (rule: %s)", at(imp), dir, rel, strings.Join(only.may, ", "), only.why))
				}
			}
		}
		if !belowCLI {
			continue
		}
		ast.Inspect(s.file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "print" || id.Name == "println") {
					out = append(out, fmt.Sprintf("%s: calls %s below the command layer (rule: only internal/cli prints)", at(n), id.Name))
				}
			case *ast.SelectorExpr:
				id, ok := n.X.(*ast.Ident)
				if !ok {
					return true
				}
				switch what := local[id.Name] + "." + n.Sel.Name; what {
				case "os.Exit", "fmt.Print", "fmt.Printf", "fmt.Println",
					"log.Print", "log.Printf", "log.Println", "log.Fatal", "log.Fatalf", "log.Fatalln",
					"log.Panic", "log.Panicf", "log.Panicln":
					out = append(out, fmt.Sprintf("%s: calls %s below the command layer (rule: only internal/cli prints or exits; return an error or a value)", at(n), what))
				case "os.Stdout", "os.Stderr", "os.Args":
					out = append(out, fmt.Sprintf("%s: references %s below the command layer (rule: only internal/cli writes to the terminal or reads the command line; take an io.Writer or a value)", at(n), what))
				}
			}
			return true
		})
	}
	return out
}

// forbidden says whether a pure package must not import p.
func forbidden(p string) bool {
	for _, f := range forbiddenInPure {
		if p == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(p, f)) {
			return true
		}
	}
	return false
}

// allowed says whether the arrow from internal/<from> to p is a temporary
// allowance.
func allowed(from, p string) bool {
	for _, a := range allowedInPure {
		if a.from == from && p == module+"/internal/"+a.to {
			return true
		}
	}
	return false
}

// under says whether dir is one of dirs or below one of them.
func under(dir string, dirs []string) bool {
	for _, d := range dirs {
		if dir == d || strings.HasPrefix(dir, d+"/") {
			return true
		}
	}
	return false
}

// fixture is a source file of the layering test's own cases under
// testdata/layering: code the rules must catch (or allow), kept out of the
// module's Go files so that it is not itself code that exits or prints.
func fixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "layering", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
