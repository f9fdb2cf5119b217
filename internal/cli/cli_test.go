package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// checkHelp: a short help without a trailing period; a long description;
// examples in blocks that each start with a # comment line and run this
// command as `kubectl crdversion …`.
func checkHelp(c *cobra.Command) []error {
	var errs []error
	path := c.CommandPath()
	if c.Short == "" || strings.HasSuffix(c.Short, ".") {
		errs = append(errs, fmt.Errorf("%s: short help %q is empty or ends with a period", path, c.Short))
	}
	if c.Long == "" || c.Example == "" {
		return append(errs, fmt.Errorf("%s: no long description or no examples", path))
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
	out, _, err := run(t, "version", "-o", "json")
	if err != nil {
		t.Fatal(err)
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

// Errors found before any request: the server in the kubeconfig is never
// contacted (it does not exist).
func TestStatusValidationNeedsNoServer(t *testing.T) {
	noServer := []string{"--server", "https://127.0.0.1:1", "--request-timeout", "1s"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "exactly one CRD is required, got 0 arguments"},
		{[]string{"status", "a", "b"}, "exactly one CRD is required, got 2 arguments"},
		{[]string{"status", "x.example.com", "-o", "wide"}, `unable to match a printer suitable for the output format "wide"`},
		{[]string{"status", "x.example.com", "--chunk-size", "-1"}, "--chunk-size must be positive"},
	}
	for _, tc := range cases {
		_, _, err := run(t, append(tc.args, noServer...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
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
