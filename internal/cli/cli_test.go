package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/cmd/util/sanity"
	"k8s.io/kubectl/pkg/util/templates"
)

func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// TestKubectlConventions runs kubectl's own sanity checks of a command tree
// (normalized long descriptions and examples, kubectl-style flag names, no
// flag registered on the global flag set) and this plugin's own on every
// command: help, usage line, flag shorthands and completion.
func TestKubectlConventions(t *testing.T) {
	cmd := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	checked := map[string]bool{}
	visited := func(c *cobra.Command) []error { checked[c.CommandPath()] = true; return nil }
	checks := append(slices.Clone(sanity.AllCmdChecks), visited, checkHelp, checkUsage, checkShorthands)
	errs := sanity.RunCmdChecks(cmd, checks, []string{"kubectl crdversion completion"})
	errs = append(errs, sanity.RunGlobalChecks(sanity.AllGlobalChecks)...)
	for _, err := range errs {
		t.Error(err)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !checked[c.CommandPath()] {
			t.Errorf("%s was not checked", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cmd)
	if len(checked) < 9 {
		t.Errorf("only %d commands checked: %v", len(checked), checked)
	}
}

// maxLong is the longest long description, about 25 lines as written:
// what the command does, its guarantees and the docs/ page that says the
// rest, as kubectl's longest help texts do.
const maxLong = 1600

// checkHelp: a short help without a trailing period; a long description of
// at most maxLong characters; examples in blocks that each start with a #
// comment line and run this command as `kubectl crdversion …`.
func checkHelp(c *cobra.Command) []error {
	var errs []error
	path := c.CommandPath()
	if c.Short == "" || strings.HasSuffix(c.Short, ".") {
		errs = append(errs, fmt.Errorf("%s: short help %q is empty or ends with a period", path, c.Short))
	}
	if c.Long == "" || c.Example == "" {
		return append(errs, fmt.Errorf("%s: no long description or no examples", path))
	}
	if len(c.Long) > maxLong {
		errs = append(errs, fmt.Errorf("%s: long description of %d characters (at most %d): keep a paragraph and move the rest to docs/", path, len(c.Long), maxLong))
	}
	for _, block := range strings.Split(c.Example, "\n"+templates.Indentation+"\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if !strings.HasPrefix(lines[0], "# ") {
			errs = append(errs, fmt.Errorf("%s: example %q does not start with a # comment", path, block))
		}
		for _, l := range lines[1:] {
			l = strings.TrimSpace(l)
			if !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, path+" ") && l != path && !strings.HasPrefix(l, "--") {
				errs = append(errs, fmt.Errorf("%s: example line %q does not run %s", path, l, path))
			}
		}
	}
	return errs
}

// checkUsage: positional placeholders in the usage line are upper case, a
// CRD is CRD_NAME, and a command that takes arguments completes them.
func checkUsage(c *cobra.Command) []error {
	if !c.HasParent() {
		return nil
	}
	var errs []error
	// kubectl's usage grammar: (A | B) alternatives, [optional], NAME...
	// repeated, and flags with their values (-f FILENAME, --old FILE).
	words := strings.Fields(strings.NewReplacer("(", " ", ")", " ", "|", " ").Replace(c.Use))[1:]
	var positional []string
	optional := false
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case strings.HasPrefix(w, "["):
			optional = !strings.HasSuffix(w, "]")
			continue
		case optional:
			optional = !strings.HasSuffix(w, "]")
			continue
		case strings.HasPrefix(w, "-"):
			if i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") && !strings.Contains(w, "=") {
				i++ // the flag's value
			}
			continue
		}
		w = strings.TrimSuffix(w, "...")
		positional = append(positional, w)
		if !regexp.MustCompile(`^[A-Z][A-Z_]*$`).MatchString(w) {
			errs = append(errs, fmt.Errorf("%s: usage placeholder %q is not upper case", c.CommandPath(), w))
		}
		if w == "CRD" {
			errs = append(errs, fmt.Errorf("%s: the CRD placeholder is spelled CRD_NAME", c.CommandPath()))
		}
	}
	if len(positional) > 0 && c.ValidArgsFunction == nil {
		errs = append(errs, fmt.Errorf("%s: takes %v but completes none of them (ValidArgsFunction: completeArgs(…))", c.CommandPath(), positional))
	}
	return errs
}

// kubectlShorthands are flags kubectl gives a shorthand; a flag of the same
// name here has the same shorthand, and the shorthand means the same flag.
var kubectlShorthands = map[string]string{
	"output": "o", "filename": "f", "namespace": "n", "interactive": "i",
	"selector": "l", "all-namespaces": "A", "recursive": "R", "server": "s", "v": "v",
}

func checkShorthands(c *cobra.Command) []error {
	var errs []error
	for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.InheritedFlags()} {
		fs.VisitAll(func(f *pflag.Flag) {
			for name, short := range kubectlShorthands {
				if (f.Name == name) != (f.Shorthand == short) && (f.Name == name || f.Shorthand == short) {
					errs = append(errs, fmt.Errorf("%s: flag --%s has shorthand %q; kubectl spells -%s as --%s", c.CommandPath(), f.Name, f.Shorthand, short, name))
				}
			}
		})
	}
	return errs
}

func TestUsageShowsKubectlCrdversion(t *testing.T) {
	out, _, err := run(t, "status", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "kubectl crdversion status CRD_NAME [flags]") {
		t.Errorf("usage does not read as a kubectl plugin:\n%s", out)
	}
	if strings.Contains(out, "--log-dir") || strings.Contains(out, "--alsologtostderr") {
		t.Errorf("klog flags other than -v are exposed:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	out, errOut, err := run(t, "version", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if errOut != "" {
		t.Errorf("version -o json wrote to stderr: %q", errOut)
	}
	var v map[string]string
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v["kind"] != "PluginVersion" || v["apiVersion"] != "crdversion.kubectl.io/v1alpha1" || v["version"] == "" || v["goVersion"] == "" {
		t.Errorf("version -o json = %v", v)
	}
	out, _, err = run(t, "version")
	if err != nil || !strings.HasPrefix(out, "kubectl-crdversion ") {
		t.Errorf("version = %q, %v", out, err)
	}
}

// TestOptionsValidate: the flag rules of every command are checked before
// any request, from the flags alone (ToOptions and Validate): the server in
// the connection flags does not exist, so a rule that is not checked shows
// as a connection error instead of its message. Each bad input is one line.
func TestOptionsValidate(t *testing.T) {
	noServer := []string{"--server", "https://127.0.0.1:1", "--request-timeout", "1s"}
	manifest := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "exactly one CRD is required, got 0 arguments"},
		{[]string{"status", "a", "b"}, "exactly one CRD is required, got 2 arguments"},
		{[]string{"status", "x.example.com", "-o", "wide"}, `unable to match a printer suitable for the output format "wide"`},
		{[]string{"status", "x.example.com", "-o", "name"}, "-o name is not supported by status"},
		{[]string{"status", "x.example.com", "--chunk-size", "-1"}, "--chunk-size must be positive"},
		{[]string{"status", "x.example.com", "--version", "V1"}, `--version "V1" is not a valid version name`},

		{[]string{"add-version", "x.example.com"}, "a CRD and a version are required, got 1 arguments"},
		{[]string{"add-version", "x.example.com", "V2"}, `"V2" is not a valid version name`},
		{[]string{"add-version", "x.example.com", "v2", "--from", "V1"}, `--from "V1" is not a valid version name`},
		{[]string{"add-version", "x.example.com", "v2", "--in-place"}, "--in-place needs -f FILE"},
		{[]string{"add-version", "x.example.com", "v2", "-f", manifest, "-o", "yaml"}, "-o cannot be used with -f"},
		{[]string{"add-version", "x.example.com", "v2", "-f", "-", "--in-place"}, "--in-place cannot write back to standard input"},
		{[]string{"add-version", "x.example.com", "v2", "-i", "--dry-run=server"}, "--interactive cannot be used with --dry-run"},
		{[]string{"add-version", "x.example.com", "v2", "--field-manager", ""}, "--field-manager must not be empty"},
		{[]string{"add-version", "x.example.com", "v2", "--webhook-timeout", "0s"}, "--webhook-timeout must be positive"},
		{[]string{"add-version", "x.example.com", "v2", "--conversion", "Magic"}, `--conversion must be None or Webhook, got "Magic"`},
		{[]string{"add-version", "x.example.com", "v2", "--webhook-url", "https://x"}, "webhook flags need --conversion Webhook"},
		{[]string{"add-version", "x.example.com", "v2", "--conversion", "None", "--webhook-url", "https://x"}, "webhook flags cannot be used with --conversion None"},
		{[]string{"add-version", "x.example.com", "v2", "--conversion", "Webhook", "--webhook-url", "http://x"}, "--webhook-url must be an https:// URL"},
		{[]string{"add-version", "x.example.com", "v2", "--conversion", "Webhook", "--webhook-url", "https://x", "--webhook-service", "a/b"}, "--webhook-url and --webhook-service cannot be combined"},
		{[]string{"add-version", "x.example.com", "v2", "--conversion", "Webhook", "--webhook-service", "b"}, "--webhook-service must be NAMESPACE/NAME[:PORT][/PATH]"},
		{[]string{"add-version", "x.example.com", "v2", "--dry-run=maybe"}, "Invalid dry-run value (maybe)"},

		{[]string{"promote-storage", "x.example.com", "v2", "--sample", "-1"}, "--sample must be 0 (all) or positive"},
		{[]string{"promote-storage", "x.example.com", "v2", "--chunk-size", "0"}, "--chunk-size must be positive"},

		{[]string{"deprecate", "x.example.com", "v1", "--warning", "w", "--undo"}, "--warning and --undo cannot be combined"},
		{[]string{"unserve", "x.example.com", "v1", "--usage-window", "-1s"}, "--usage-window must not be negative"},
		{[]string{"retire", "x.example.com", "v1", "--usage-min-window", "-1s"}, "--usage-min-window must not be negative"},
		{[]string{"unserve", "x.example.com", "v1", "--usage-history", "-1h"}, "--usage-history must not be negative"},
		{[]string{"serve", "x.example.com", "v1", "-o", "name", "-f", manifest}, "-o cannot be used with -f"},

		{[]string{"diff", "x.example.com", "v1"}, "CRD FROM TO (three arguments) or --old FILE --new FILE is required, got 2 arguments"},
		{[]string{"diff", "x.example.com", "v1", "V2"}, `"V2" is not a valid version name`},
		{[]string{"diff", "--old", manifest}, "--old and --new go together"},
		{[]string{"diff", "--old", manifest, "--new", manifest, "x.example.com"}, "give either CRD FROM TO or --old and --new, not both"},
		{[]string{"diff", "--old", manifest, "--new", manifest, "-o", "name"}, "-o name is not supported by diff"},
		{[]string{"diff", "--old", manifest, "--new", manifest, "-o", "wide"}, `unable to match a printer suitable for the output format "wide"`},

		{[]string{"migrate"}, "exactly one CRD is required, got 0 arguments"},
		{[]string{"migrate", "x.example.com", "-o", "name"}, "-o name is not supported by migrate"},
		{[]string{"migrate", "x.example.com", "--engine", "magic"}, `--engine must be client or server, got "magic"`},
		{[]string{"migrate", "x.example.com", "--engine", "server", "--concurrency", "3"}, "--concurrency applies to --engine=client only"},
		{[]string{"migrate", "x.example.com", "--chunk-size", "0"}, "--chunk-size must be positive"},
		{[]string{"retire", "x.example.com", "v1", "--allow-pruning"}, "--allow-pruning applies to --migrate only"},
		{[]string{"retire", "x.example.com", "v1", "--own-priority-level"}, "--own-priority-level applies to --migrate only"},
		{[]string{"retire", "x.example.com", "v1", "--migrate", "--own-priority-level=0"}, "--own-priority-level must be positive"},
		{[]string{"migrate", "x.example.com", "--concurrency", "0"}, "--concurrency must be positive"},
		{[]string{"migrate", "x.example.com", "--allow-pruning=spec.hostPort"}, `"spec.hostPort" is not a JSON path from the object's root`},
		{[]string{"migrate", "x.example.com", "--allow-pruning=.spec.x,.spec.*"}, `".spec.*" is not a JSON path from the object's root`},
		{[]string{"migrate", "x.example.com", "--concurrency", "10000000"}, "--concurrency 10000000 is more than 1000 writes in flight"},
		{[]string{"migrate", "x.example.com", "--retries", "-1"}, "--retries must not be negative"},
		{[]string{"migrate", "x.example.com", "--own-priority-level=-1"}, "--own-priority-level must be positive"},
		{[]string{"migrate", "x.example.com", "--own-priority-level=0"}, "--own-priority-level must be positive"},
		{[]string{"migrate", "x.example.com", "--unreachable-timeout", "-1s"}, "--unreachable-timeout must not be negative"},
		{[]string{"migrate", "x.example.com", "--qps", "-1"}, "--qps must not be negative"},
		{[]string{"migrate", "x.example.com", "--burst", "-1"}, "--burst must not be negative"},
		{[]string{"migrate", "x.example.com", "--timeout", "-1s"}, "--timeout must not be negative"},
		{[]string{"migrate", "x.example.com", "--field-manager", ""}, "--field-manager must not be empty"},
		{[]string{"migrate", "x.example.com", "--max-speed", "--max-latency", "100ms"}, "--max-speed and --max-latency=100ms contradict each other"},
		{[]string{"migrate", "x.example.com", "--max-latency", "-1s"}, "--max-latency must not be negative"},
		{[]string{"migrate", "x.example.com", "--engine", "server", "--max-speed"}, "--max-speed applies to --engine=client only"},
	}
	for _, tc := range cases {
		_, stderr, err := run(t, append(tc.args, noServer...)...)
		switch {
		case err == nil || !strings.Contains(err.Error(), tc.want):
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		case strings.Contains(err.Error(), "\n"):
			t.Errorf("%v: a multi-line error: %q", tc.args, err)
		case stderr != "":
			t.Errorf("%v: wrote to stderr: %q", tc.args, stderr)
		}
	}
}

// The plugin's own convention checks catch what they are for.
func TestConventionChecksFail(t *testing.T) {
	good := func() *cobra.Command {
		root := &cobra.Command{Use: "kubectl-crdversion", Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl crdversion"}}
		c := &cobra.Command{
			Use: "retire CRD_NAME VERSION [flags]", Short: "Remove a version",
			Long:              templates.LongDesc(`Remove a version.`),
			Example:           templates.Examples("# Remove v1\nkubectl crdversion retire crontabs.stable.example.com v1"),
			ValidArgsFunction: completeArgs(nil, argCRD, argVersion),
			Run:               func(*cobra.Command, []string) {},
		}
		root.AddCommand(c)
		return c
	}
	if errs := slices.Concat(checkHelp(good()), checkUsage(good()), checkShorthands(good())); len(errs) > 0 {
		t.Fatalf("a conforming command fails: %v", errs)
	}
	cases := []struct {
		name   string
		change func(c *cobra.Command)
		check  sanity.CmdCheck
		want   string
	}{
		{"trailing period", func(c *cobra.Command) { c.Short = "Remove a version." }, checkHelp, "ends with a period"},
		{"no examples", func(c *cobra.Command) { c.Example = "" }, checkHelp, "no long description or no examples"},
		{"long help", func(c *cobra.Command) { c.Long = strings.Repeat("Remove a version. ", 100) }, checkHelp, "move the rest to docs/"},
		{"example without comment", func(c *cobra.Command) {
			c.Example = templates.Examples("kubectl crdversion retire a v1")
		}, checkHelp, "does not start with a # comment"},
		{"example of another command", func(c *cobra.Command) {
			c.Example = templates.Examples("# Status\nkubectl crdversion status a")
		}, checkHelp, "does not run kubectl crdversion retire"},
		{"CRD placeholder", func(c *cobra.Command) { c.Use = "retire CRD VERSION" }, checkUsage, "spelled CRD_NAME"},
		{"lower-case placeholder", func(c *cobra.Command) { c.Use = "retire crd-name VERSION" }, checkUsage, "not upper case"},
		{"CRD in alternatives", func(c *cobra.Command) { c.Use = "retire (CRD... | --all) [flags]" }, checkUsage, "spelled CRD_NAME"},
		{"lower case after a flag's value", func(c *cobra.Command) { c.Use = "retire -f FILE name" }, checkUsage, `"name" is not upper case`},
		{"no completion", func(c *cobra.Command) { c.ValidArgsFunction = nil }, checkUsage, "completes none of them"},
		{"other shorthand", func(c *cobra.Command) { c.Flags().StringP("output", "O", "", "") }, checkShorthands, "kubectl spells -o as --output"},
		{"shorthand taken", func(c *cobra.Command) { c.Flags().BoolP("force", "f", false, "") }, checkShorthands, "kubectl spells -f as --filename"},
	}
	for _, tc := range cases {
		c := good()
		tc.change(c)
		errs := tc.check(c)
		if len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, errs, tc.want)
		}
	}
}

// TestColorAllowed: colour only on a terminal, never with TERM=dumb or a
// non-empty NO_COLOR (an empty NO_COLOR is unset, as no-color.org says).
func TestColorAllowed(t *testing.T) {
	for _, tc := range []struct {
		terminal bool
		env      map[string]string
		goos     string
		want     bool
	}{
		{true, nil, "linux", true},
		{false, nil, "linux", false},
		{true, map[string]string{"TERM": "dumb"}, "linux", false},
		{true, map[string]string{"TERM": "xterm-256color"}, "linux", true},
		{true, map[string]string{"NO_COLOR": "1"}, "linux", false},
		{true, map[string]string{"NO_COLOR": ""}, "linux", true},
		{true, nil, "windows", false},
		{true, map[string]string{"WT_SESSION": "x"}, "windows", true},
	} {
		lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		if got := colorAllowed(tc.terminal, lookup, tc.goos); got != tc.want {
			t.Errorf("terminal %v, env %v, %s: %v, want %v", tc.terminal, tc.env, tc.goos, got, tc.want)
		}
	}
}

// TestWarningsShownOnce: a warning the API server repeats on every request
// (a deprecated version's) is shown once; another warning is shown too.
func TestWarningsShownOnce(t *testing.T) {
	var b bytes.Buffer
	w := newWarningWriter(&b, false)
	for range 3 {
		w.HandleWarningHeader(299, "-", "example.com/v1 Widget is deprecated; use example.com/v2 Widget")
	}
	w.HandleWarningHeader(299, "-", "another warning")
	if got := b.String(); got != "Warning: example.com/v1 Widget is deprecated; use example.com/v2 Widget\nWarning: another warning\n" {
		t.Errorf("printed %q", got)
	}
}

// TestInterrupted (friction 3 of the preflight-holes report): Ctrl-C during
// a preflight printed "Unable to connect to the server: context canceled".
func TestInterrupted(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	urlErr := &url.Error{Op: "Get", URL: "https://example", Err: context.Canceled}
	if got := Interrupted(canceled, urlErr); got == nil || !strings.HasPrefix(got.Error(), "interrupted: ") || len("error: "+got.Error()) > 200 {
		t.Errorf("cancelled: %v", got)
	}
	if got := Interrupted(context.Background(), urlErr); got != urlErr {
		t.Errorf("not cancelled: %v, want the error as it is", got)
	}
	taken := fmt.Errorf("the migration stopped: %w; this run took step 2 (v1 unserved)", context.Canceled)
	if got := Interrupted(canceled, taken); got == nil || got.Error() != "interrupted: "+taken.Error() {
		t.Errorf("an error that says more: %v", got)
	}
	other := errors.New("refusing")
	if got := Interrupted(canceled, other); got != other {
		t.Errorf("another error: %v", got)
	}
	if Interrupted(canceled, nil) != nil {
		t.Error("no error became one")
	}
}

// TestHelpIsShort: every command's --help description is at most
// MaxLongHelp bytes; a longer one keeps its first paragraph, names its
// reference page, and is kept whole for the reference.
func TestHelpIsShort(t *testing.T) {
	root := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	shortened := 0
	for _, c := range append(root.Commands(), root) {
		if len(c.Long) > MaxLongHelp {
			t.Errorf("%s: a description of %d bytes in --help (at most %d)", c.Name(), len(c.Long), MaxLongHelp)
		}
		full, ok := c.Annotations[DetailsAnnotation]
		if !ok {
			continue
		}
		shortened++
		first, _, _ := strings.Cut(full, "\n\n")
		if !strings.HasPrefix(c.Long, first+"\n\n") || !strings.HasSuffix(c.Long, "docs/commands/kubectl_crdversion_"+c.Name()+".md.") {
			t.Errorf("%s: --help's description is not the first paragraph and the reference page:\n%s", c.Name(), c.Long)
		}
	}
	// migrate's description is longer than a screen: the rule applies.
	if shortened == 0 {
		t.Error("no description was shortened")
	}
}

// TestAllowPruningFlag: --allow-pruning alone accepts every loss (and skips
// the measurement), with paths only those paths.
func TestAllowPruningFlag(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		all   bool
		paths string
	}{
		{nil, false, ""},
		{[]string{"--allow-pruning"}, true, ""},
		{[]string{"--allow-pruning=false"}, false, ""},
		{[]string{"--allow-pruning=.spec.hostPort"}, false, ".spec.hostPort"},
		{[]string{"--allow-pruning=.spec.a,.metadata.labels.b", "--allow-pruning=.spec.c[0]"}, false, ".spec.a,.metadata.labels.b,.spec.c[0]"},
	} {
		fs := pflag.NewFlagSet("migrate", pflag.ContinueOnError)
		var p pruningFlag
		addPruningFlag(fs, &p, "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if p.all != tc.all || strings.Join(p.paths, ",") != tc.paths {
			t.Errorf("%v: all %v paths %q, want %v %q", tc.args, p.all, p.paths, tc.all, tc.paths)
		}
	}
}
