package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
)

var diffLong = templates.LongDesc(`
	Compare the schemas of two versions of a live CustomResourceDefinition, or
	the CRDs of two manifests (two releases of a project), for compatibility.

	Per property: a field removed (pruned from stored objects), a type changed,
	a field newly required, enum values removed, a default changed, a bound
	(minimum, maximum, minLength, maxLength, minItems, maxItems, minProperties,
	maxProperties, multipleOf, uniqueItems) or pattern tightened, nullable
	changed, list and map semantics (x-kubernetes-list-type, list-map-keys,
	map-type) changed, x-kubernetes-preserve-unknown-fields changed, validation
	rules added. Per CRD (manifests): scope or kind changed, a version of
	status.storedVersions missing from the new manifest (the API server rejects
	the update), the storage version removed or changed, served versions
	removed or unserved, kubectl's default version changed, and served versions
	whose schemas differ under conversion strategy None.

	Each finding has a severity: error (data dropped, objects rejected, or the
	update refused), warning (behaviour changes) or info (loosening). Without
	status in the old manifest, its storage version stands for
	status.storedVersions; check-upgrade compares with the live cluster.

	Exit codes, as kubectl diff: 0 no error-level finding, 1 error-level
	findings, 2 the comparison failed.`)

var diffExample = templates.Examples(`
	# What objects written at v1 meet when read at v2
	kubectl crdversion diff crontabs.stable.example.com v1 v2

	# Compare two releases' CRDs
	kubectl crdversion diff --old release-1.6/crds.yaml --new release-1.7/crds.yaml

	# As a Markdown table for a pull-request comment
	kubectl crdversion diff --old old/ --new new/ -o markdown`)

// DiffOptions are the inputs of diff.
type DiffOptions struct {
	PrintFlags *genericclioptions.PrintFlags
	Old, New   string
	Recursive  bool

	// CRD, From and To are the positional arguments of the live form.
	CRD, From, To string
	markdown      bool
	client        *cluster.Client
	printer       printers.ResourcePrinter
	genericiooptions.IOStreams
}

// NewCmdDiff returns the diff command.
func NewCmdDiff(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &DiffOptions{PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme), IOStreams: streams}
	cmd := &cobra.Command{
		Use:                   "diff (CRD_NAME FROM TO | --old FILE --new FILE) [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Compare two versions of a CRD, or two manifests, for schema compatibility",
		Long:                  diffLong,
		Example:               diffExample,
		ValidArgsFunction:     completeArgs(f, argCRD, argVersion, argVersion),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, cmd, args); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	addReportOutputFlag(cmd, o.PrintFlags)
	cmd.Flags().StringVar(&o.Old, "old", "", "Manifest (file or directory) with the CRDs as they are.")
	cmd.Flags().StringVar(&o.New, "new", "", "Manifest (file or directory) with the CRDs as they will be.")
	cmd.Flags().BoolVarP(&o.Recursive, "recursive", "R", false, "Read the directories of --old and --new recursively.")
	return checkCommand(cmd)
}

// addReportOutputFlag registers -o with markdown beside the printers'
// formats.
func addReportOutputFlag(cmd *cobra.Command, pf *genericclioptions.PrintFlags) {
	pf.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: markdown, or one of the printers' (" + strings.Join(pf.AllowedFormats(), "|") + ")."
}

// reportPrinter returns the printer of -o, nil for the human-readable view,
// and whether -o markdown was asked for.
func reportPrinter(pf *genericclioptions.PrintFlags) (printers.ResourcePrinter, bool, error) {
	switch *pf.OutputFormat {
	case "":
		return nil, false, nil
	case "markdown", "md":
		return nil, true, nil
	case "name":
		return nil, false, fmt.Errorf("-o name is not supported: the output is a report; use -o json, yaml or markdown")
	}
	p, err := pf.ToPrinter()
	return p, false, err
}

// Complete checks the arguments and builds the printer (and, for the live
// form, the client).
func (o *DiffOptions) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	var err error
	if o.printer, o.markdown, err = reportPrinter(o.PrintFlags); err != nil {
		return err
	}
	files := o.Old != "" || o.New != ""
	switch {
	case files && len(args) > 0:
		return usageErrorf(cmd, "give either CRD FROM TO or --old and --new, not both")
	case files && (o.Old == "" || o.New == ""):
		return usageErrorf(cmd, "--old and --new go together")
	case files:
		return nil
	case len(args) != 3:
		return usageErrorf(cmd, "CRD FROM TO (three arguments) or --old FILE --new FILE is required, got %d arguments", len(args))
	}
	o.CRD, o.From, o.To = args[0], args[1], args[2]
	if err := checkVersionNames("", o.From, o.To); err != nil {
		return err
	}
	o.client, err = cluster.New(f)
	return err
}

// Run compares, prints the report and returns *FindingsError when it has
// an error-level finding.
func (o *DiffOptions) Run(ctx context.Context) error {
	var r *report.Diff
	var err error
	if o.client != nil {
		r, err = o.live(ctx)
	} else {
		r, err = o.files()
	}
	if err != nil {
		return err
	}
	return printDiff(o.Out, o.printer, o.markdown, r)
}

func (o *DiffOptions) live(ctx context.Context) (*report.Diff, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	crd, err := o.client.ResolveCRD(ctx, o.CRD)
	if err != nil {
		return nil, err
	}
	fs, err := schemadiff.Versions(crd, o.From, o.To)
	if err != nil {
		return nil, err
	}
	return newDiff(crd.Name+"/"+o.From, crd.Name+"/"+o.To, report.CRDDiff{Name: crd.Name, From: o.From, To: o.To, Findings: fs}), nil
}

func (o *DiffOptions) files() (*report.Diff, error) {
	olds, err := manifest.ReadCRDs(o.Old, o.Recursive)
	if err != nil {
		return nil, err
	}
	news, err := manifest.ReadCRDs(o.New, o.Recursive)
	if err != nil {
		return nil, err
	}
	if len(olds) == 0 && len(news) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition in %s or %s", o.Old, o.New)
	}
	byName := map[string]manifest.CRDDoc{}
	for _, d := range olds {
		byName[d.CRD.Name] = d
	}
	var crds []report.CRDDiff
	for _, n := range news {
		od, ok := byName[n.CRD.Name]
		delete(byName, n.CRD.Name)
		if !ok {
			crds = append(crds, report.CRDDiff{Name: n.CRD.Name, Findings: []schemadiff.Finding{{
				Code: schemadiff.CodeCRDAdded, Severity: lifecycle.SeverityInfo, Path: ".",
				Message: fmt.Sprintf("new CRD (versions %s)", strings.Join(versionList(n.CRD.Spec.Versions), ", "))}}})
			continue
		}
		crds = append(crds, report.CRDDiff{Name: n.CRD.Name, Findings: schemadiff.CRDs(od.CRD, n.CRD)})
	}
	for _, od := range olds {
		if _, gone := byName[od.CRD.Name]; gone {
			crds = append(crds, report.CRDDiff{Name: od.CRD.Name, Findings: []schemadiff.Finding{{
				Code: schemadiff.CodeCRDRemoved, Severity: lifecycle.SeverityWarning, Path: ".",
				Message: "not in the new manifest: applying it leaves the CRD as it is, and deleting the CRD deletes all its objects"}}})
		}
	}
	return newDiff(o.Old, o.New, crds...), nil
}

func versionList(vs []apiextensionsv1.CustomResourceDefinitionVersion) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

func newDiff(old, new string, crds ...report.CRDDiff) *report.Diff {
	r := &report.Diff{Old: old, New: new, CRDs: crds}
	for _, c := range crds {
		for _, f := range c.Findings {
			r.Summary.Add(f.Severity)
		}
	}
	return r
}

func crdSummary(c report.CRDDiff) report.Summary {
	return newDiff("", "", c).Summary
}

// printDiff writes r (as -o asks) and returns *FindingsError when r has
// error-level findings.
func printDiff(out io.Writer, p printers.ResourcePrinter, markdown bool, r *report.Diff) error {
	text := func(w io.Writer) error { return diffText(w, r) }
	if markdown {
		text = func(w io.Writer) error { return diffMarkdown(w, r) }
	}
	return finishReport(out, p, r, text, r.Summary)
}

// finishReport prints r with p, or with text when p is nil, and returns
// *FindingsError when s holds an error.
func finishReport(out io.Writer, p printers.ResourcePrinter, r runtime.Object, text func(io.Writer) error, s report.Summary) error {
	var err error
	if p != nil {
		err = p.PrintObj(r, out)
	} else {
		err = text(out)
	}
	if err != nil {
		return err
	}
	if s.Incompatible {
		return &FindingsError{Summary: summaryText(s)}
	}
	return nil
}

func summaryText(s report.Summary) string {
	return fmt.Sprintf("%s, %s, %s", plural(s.Errors, "error"), plural(s.Warnings, "warning"), plural(s.Infos, "note"))
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func crdHeading(c report.CRDDiff) string {
	if c.From != "" {
		return fmt.Sprintf("%s %s -> %s", c.Name, c.From, c.To)
	}
	return c.Name
}

func diffText(out io.Writer, r *report.Diff) error {
	for i, c := range r.CRDs {
		if i > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "%s: %s\n", crdHeading(c), summaryText(crdSummary(c)))
		if len(c.Findings) == 0 {
			continue
		}
		w := printers.GetNewTabWriter(out)
		fmt.Fprintln(w, "SEVERITY\tVERSION\tPATH\tCODE\tMESSAGE")
		for _, f := range c.Findings {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", f.Severity, dash(f.Version), f.Path, f.Code, f.Message)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if len(r.CRDs) > 1 {
		fmt.Fprintf(out, "\nTotal: %s\n", summaryText(r.Summary))
	}
	return nil
}

var severityMark = map[lifecycle.Severity]string{lifecycle.SeverityError: "🔴 error", lifecycle.SeverityWarning: "🟡 warning", lifecycle.SeverityInfo: "⚪ info"}

func diffMarkdown(out io.Writer, r *report.Diff) error {
	fmt.Fprintf(out, "## CRD compatibility: `%s` → `%s`\n\n%s\n", r.Old, r.New, summaryText(r.Summary))
	for _, c := range r.CRDs {
		fmt.Fprintf(out, "\n### `%s`: %s\n", crdHeading(c), summaryText(crdSummary(c)))
		if len(c.Findings) == 0 {
			continue
		}
		fmt.Fprintln(out, "\n| severity | version | path | code | explanation |\n|---|---|---|---|---|")
		for _, f := range c.Findings {
			fmt.Fprintf(out, "| %s | %s | `%s` | %s | %s |\n", severityMark[f.Severity], dash(f.Version), mdCell(f.Path), f.Code, mdCell(f.Message))
		}
	}
	return nil
}

// mdCell escapes what would break a Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
