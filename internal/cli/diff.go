package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/crdversion/kubectl-crdversion/internal/action"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
	"github.com/crdversion/kubectl-crdversion/internal/view"
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
	rules added (transition rules, which read oldSelf, named as such: the API
	server evaluates them on every update). Per version: the status and scale
	subresources and the printer columns. Per CRD (manifests): scope or kind changed, a version of
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

	# A release in two files on each side, read as kubectl apply -f reads them
	kubectl crdversion diff --old old/crds.yaml --old old/extra.yaml --new new/crds.yaml --new new/extra.yaml

	# As a Markdown table for a pull-request comment
	kubectl crdversion diff --old old/ --new new/ -o markdown`)

// DiffFlags are diff's flags, bound to the command.
type DiffFlags struct {
	PrintFlags *genericclioptions.PrintFlags
	Old, New   []string
	Recursive  bool
	Allow      []string
	RulesFlags
	genericiooptions.IOStreams
}

// DiffOptions are diff's inputs, resolved once from the flags; Run does
// not change them.
type DiffOptions struct {
	// Old and New are the manifests' files and directories (the manifest
	// form), in the order given.
	Old, New  []string
	Recursive bool
	// CRD, From and To are the positional arguments of the live form.
	CRD, From, To string
	// Allows acknowledge deliberate changes (--allow).
	Allows []*schemadiff.Allow
	// Rules judges a release (--rules, --config); nil is crdversion's
	// own rules.
	Rules *schemadiff.Rulebook

	reader action.Reader
	print  printers.ResourcePrinterFunc
	genericiooptions.IOStreams
}

// NewCmdDiff returns the diff command.
func NewCmdDiff(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	fl := &DiffFlags{PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme), IOStreams: streams}
	cmd := &cobra.Command{
		Use:                   "diff (CRD_NAME FROM TO | --old FILE --new FILE) [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Compare two versions of a CRD, or two manifests, for schema compatibility",
		Long:                  diffLong,
		Example:               diffExample,
		ValidArgsFunction:     completeArgs(f, argCRD, argVersion, argVersion),
		RunE: runE(func(cmd *cobra.Command, args []string) (*DiffOptions, error) {
			return fl.ToOptions(f, cmd, args)
		}),
	}
	fl.PrintFlags.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: markdown, or one of the printers' (" + strings.Join(fl.PrintFlags.AllowedFormats(), "|") + ")."
	cmd.Flags().StringSliceVar(&fl.Old, "old", nil, "Manifest files or directories with the CRDs as they are; repeat --old to read several, as kubectl apply -f does. git:REF[:PATH] reads them at a revision of the current git repository (without PATH, the --new paths; git:latest-tag is the newest tag reachable from HEAD).")
	cmd.Flags().StringSliceVar(&fl.New, "new", nil, "Manifest files or directories with the CRDs as they will be; repeat --new to read several.")
	cmd.Flags().BoolVarP(&fl.Recursive, "recursive", "R", false, "Read the directories of --old and --new recursively.")
	addAllowFlag(cmd.Flags(), &fl.Allow)
	fl.RulesFlags.AddFlags(cmd.Flags())
	return checkCommand(cmd)
}

// ToOptions checks the arguments and resolves -o (markdown beside the
// printers' formats) and, for the live form, the client.
func (fl *DiffFlags) ToOptions(f cmdutil.Factory, cmd *cobra.Command, args []string) (*DiffOptions, error) {
	o := &DiffOptions{Old: nonEmpty(fl.Old), New: nonEmpty(fl.New), Recursive: fl.Recursive, IOStreams: fl.IOStreams}
	var err error
	if o.Allows, err = parseAllows(fl.Allow); err != nil {
		return nil, err
	}
	switch *fl.PrintFlags.OutputFormat {
	case "markdown", "md":
		o.print = humanPrinter(view.DiffMarkdown)
	default:
		if o.print, err = printerFunc(fl.PrintFlags, "diff", humanPrinter(view.Diff)); err != nil {
			return nil, err
		}
	}
	files := len(o.Old) > 0 || len(o.New) > 0
	switch {
	case files && len(args) > 0:
		return nil, usageErrorf(cmd, "give either CRD FROM TO or --old and --new, not both")
	case files && (len(o.Old) == 0 || len(o.New) == 0):
		return nil, usageErrorf(cmd, "--old and --new go together")
	case files:
		o.Rules, err = fl.rulebook(cmd)
		return o, err
	case cmd.Flags().Changed("rules") || fl.Config != "":
		return nil, usageErrorf(cmd, "--rules and --config judge a release: they apply to --old/--new, not to two versions of a live CRD")
	case len(args) != 3:
		return nil, usageErrorf(cmd, "CRD FROM TO (three arguments) or --old FILE --new FILE is required, got %d arguments", len(args))
	}
	o.CRD, o.From, o.To = args[0], args[1], args[2]
	if o.reader, err = cluster.New(f); err != nil {
		return nil, err
	}
	return o, nil
}

// Validate checks the version names of the live form.
func (o *DiffOptions) Validate() error {
	if o.CRD == "" {
		return nil
	}
	return checkVersionNames("", o.From, o.To)
}

// Run compares, prints the report and returns *FindingsError when it has
// an error-level finding.
func (o *DiffOptions) Run(ctx context.Context) error {
	var r *report.Diff
	var err error
	if o.CRD != "" {
		r, err = action.DiffVersions(ctx, o.reader, o.CRD, o.From, o.To)
	} else {
		r, err = action.DiffManifests(ctx, action.ManifestDiff{Old: o.Old, New: o.New, Recursive: o.Recursive, Rules: o.Rules})
	}
	if err != nil {
		return err
	}
	if len(o.Allows) > 0 {
		r.Acknowledge(o.Allows)
		warnUnmatched(o.ErrOut, o.Allows)
	}
	return printFindings(o.Out, o.print, r, r.Summary)
}

// nonEmpty drops the empty names a repeated flag can hold (--old "").
func nonEmpty(names []string) []string {
	var out []string
	for _, n := range names {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}
