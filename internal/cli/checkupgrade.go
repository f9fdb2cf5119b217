package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"k8s.io/kubectl/pkg/util/term"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/cireport"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/helmchart"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
	"github.com/crdversion/kubectl-crdversion/internal/upgrade"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
	"github.com/crdversion/kubectl-crdversion/internal/version"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

var checkUpgradeLong = templates.LongDesc(`
	Check a new release's CustomResourceDefinitions against the live cluster
	before applying them.

	For each CRD in the manifests (multi-document YAML, or a directory of
	them; -f repeated, as for kubectl apply, reads every file given): would the API server reject the update (a version of the live
	status.storedVersions missing from the new spec.versions, a changed scope
	or kind, not exactly one storage version), would stored data be lost or
	stored objects be rejected on their next write (the schema findings of
	diff), how kubectl's default version changes, and which served versions
	disappear (clients that still use them break). The prediction from these
	rules is checked with a server-side dry-run update of each CRD (one
	request per CRD; --server-dry-run=false skips it).

	When the release removes versions that status.storedVersions still lists,
	the output gives the kubectl crdversion commands that make the apply
	succeed, in order: the release's storage version added or served if
	needed, made the storage version, every object rewritten at it and
	status.storedVersions trimmed (migrate), then the apply.

	A served version that an accepted apply would remove or unserve is judged
	by who still calls it, from unserve's sources (every API server
	instance's /metrics read --usage-window apart, or Prometheus; the
	objects' managedFields; --audit-log files): clients seen, or usage that
	cannot be seen, is an error naming the evidence and the ways out; no
	client seen leaves the removal a warning that names the window
	(--skip-usage-check: a warning that says it was not checked).

	A Helm chart (--chart DIR|TGZ, rendered with Helm's SDK as helm template
	renders it, with --values files) is checked the way helm upgrade applies
	it: the CRDs of its crds/ directory are created on install only and
	never upgraded (a changed one is a finding: apply it yourself first), a
	templated CRD without helm.sh/resource-policy: keep is a finding, and,
	with --release NAME (the release's namespace from -n), every installed
	CRD that the release owns and no longer renders is one that helm upgrade
	deletes with all its objects: an error, its objects counted, and the
	keep annotation as the fix. --release works with -f too, for a rendered
	stream (helm template, kustomize build).

	Offline, for a pull request's pipeline, --from OLD --to NEW (each a
	manifest file or directory, or a chart) checks NEW against OLD without a
	cluster: OLD stands for the installed CRDs (status.storedVersions is
	OLD's own when its manifest has a status, else its storage version
	alone), every verdict is marked predicted, no
	dry run is sent, and object counts are unknown. With -o sarif or -o
	junit the findings go to code scanning or test reports; on GitHub
	Actions they also annotate the files.

	Exit codes, as kubectl diff: 0 every CRD can be applied without
	error-level findings, 1 a CRD would be rejected, deleted or has
	error-level findings, 2 the check failed.`)

var checkUpgradeExample = templates.Examples(`
	# Check cert-manager's next release before applying it
	kubectl crdversion check-upgrade -f cert-manager.crds.yaml

	# A directory of CRD manifests, as JSON
	kubectl crdversion check-upgrade -f gateway-api/standard/ -o json

	# A release in two files, checked together as kubectl apply applies them
	kubectl crdversion check-upgrade -f crds/ -f extra-crd.yaml

	# Every cluster of the kubeconfig: where would the release be rejected?
	kubectl crdversion check-upgrade -f cert-manager.crds.yaml --all-contexts

	# A chart's next version, as helm upgrade of release backup applies it
	kubectl crdversion check-upgrade --chart ./backup-0.6.0.tgz --values prod.yaml --release backup -n backup-system

	# In a pull request: the chart's next version against the last release,
	# without a cluster, as SARIF for code scanning
	kubectl crdversion check-upgrade --from release-0.5.0/chart --to chart --release backup -o sarif

	# A rendered release (helm template, kustomize build): which installed
	# CRDs of release backup does it drop?
	kubectl crdversion check-upgrade -f release.yaml --release backup -n backup-system`)

// CheckUpgradeFlags are check-upgrade's flags, bound to the command.
type CheckUpgradeFlags struct {
	PrintFlags   *genericclioptions.PrintFlags
	Filenames    []string
	Recursive    bool
	ServerDryRun bool
	// Chart is a Helm chart directory or archive, ValueFiles its values
	// files, Release the Helm release name.
	Chart      string
	ValueFiles []string
	Release    string
	// From and To are two releases (manifests or charts) compared
	// without a cluster; FromValueFiles the values OLD was installed
	// with (--values are NEW's).
	From, To       string
	FromValueFiles []string
	// Fleet checks the release against several contexts at once.
	Fleet *FleetFlags
	Allow []string
	// Usage is the client-usage check of the served versions the release
	// removes.
	Usage UsageFlags
	RulesFlags
	genericiooptions.IOStreams
}

// NewCheckUpgradeFlags returns check-upgrade's flags with their defaults;
// conn are the connection flags each context of a fleet run copies.
func NewCheckUpgradeFlags(conn *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *CheckUpgradeFlags {
	return &CheckUpgradeFlags{PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme), ServerDryRun: true,
		Fleet: newFleetFlags(conn, time.Minute), IOStreams: streams}
}

// AddFlags binds the flags to cmd.
func (fl *CheckUpgradeFlags) AddFlags(cmd *cobra.Command) {
	fl.PrintFlags.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: sarif (SARIF 2.1.0, for code scanning), junit (JUnit XML), or one of the printers' (" + strings.Join(fl.PrintFlags.AllowedFormats(), "|") + ")."
	cmd.Flags().StringSliceVarP(&fl.Filenames, "filename", "f", nil, "Manifest files or directories with the release's CRDs (other kinds are ignored); repeat -f, as for kubectl apply, to check several.")
	cmd.Flags().BoolVarP(&fl.Recursive, "recursive", "R", false, "Read the directories of -f recursively.")
	cmd.Flags().BoolVar(&fl.ServerDryRun, "server-dry-run", fl.ServerDryRun, "Confirm each prediction with a server-side dry-run update of the CRD.")
	cmd.Flags().StringVar(&fl.Chart, "chart", "", "A Helm chart directory or .tgz archive to check as helm upgrade applies it (instead of -f).")
	cmd.Flags().StringSliceVar(&fl.ValueFiles, "values", nil, "Values files for --chart (or a --to chart), later ones overriding earlier ones (helm -f); repeatable.")
	cmd.Flags().StringSliceVar(&fl.FromValueFiles, "from-values", nil, "Values files the --from chart was installed with; repeatable.")
	cmd.Flags().StringVar(&fl.From, "from", "", "Offline: the previous release (a manifest file or directory, or a chart) standing for the cluster; with --to.")
	cmd.Flags().StringVar(&fl.To, "to", "", "Offline: the new release (a manifest file or directory, or a chart) checked against --from, without a cluster.")
	addAllowFlag(cmd.Flags(), &fl.Allow)
	cmd.Flags().StringVar(&fl.Release, "release", "", "The Helm release the CRDs are for (its namespace from -n): also check which installed CRDs of it the release deletes.")
	fl.Fleet.addFlags(cmd)
	fl.Usage.addFlags(cmd, 15*time.Second)
	fl.RulesFlags.AddFlags(cmd.Flags())
}

// CheckUpgradeOptions are check-upgrade's inputs, resolved once from the
// flags; Run does not change them.
type CheckUpgradeOptions struct {
	// Filenames are the release's manifest files and directories, in the
	// order given.
	Filenames    []string
	Recursive    bool
	ServerDryRun bool
	// Chart is the Helm chart (directory or archive) checked instead of
	// Filenames; ValueFiles its values files.
	Chart      string
	ValueFiles []string
	// Helm is the Helm release, set with --chart or --release: its Name
	// is empty when --release was not given.
	Helm *upgrade.HelmRelease
	// Allows acknowledge deliberate changes (--allow).
	Allows []*schemadiff.Allow
	// From and To are the two releases of an offline check; To is also
	// Chart when it is a chart. FromValueFiles are From's values files.
	From, To       string
	FromValueFiles []string
	// Contexts are the kubeconfig contexts of a fleet run; empty for one
	// cluster.
	Contexts []string
	// Usage checks the clients of each served version the release would
	// remove (against a cluster).
	Usage UsageFlags
	// Rules adds a rulebook's verdict (--rules olm|crdify, --config) to
	// each installed CRD's plan; nil for crdversion's own alone.
	Rules *schemadiff.Rulebook

	fleet  *FleetFlags
	getter genericclioptions.RESTClientGetter
	// conn are the connection flags typed, repeated in printed commands.
	conn  []lifecycle.Flag
	print printers.ResourcePrinterFunc
	// annotate writes GitHub Actions annotations to stderr as well.
	annotate bool
	genericiooptions.IOStreams
}

// NewCmdCheckUpgrade returns the check-upgrade command.
func NewCmdCheckUpgrade(f cmdutil.Factory, streams genericiooptions.IOStreams, conn *genericclioptions.ConfigFlags) *cobra.Command {
	fl := NewCheckUpgradeFlags(conn, streams)
	cmd := &cobra.Command{
		Use:                   "check-upgrade (-f FILENAME | --chart CHART) [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Predict what applying a release's CRDs does, and how to make it safe",
		Long:                  checkUpgradeLong,
		Example:               checkUpgradeExample,
		RunE: runE(func(cmd *cobra.Command, args []string) (*CheckUpgradeOptions, error) {
			return fl.ToOptions(f, cmd, args)
		}),
	}
	cmd.Annotations = map[string]string{namespaceAnnotation: "the Helm release's namespace, with --chart or --release"}
	fl.AddFlags(cmd)
	return checkCommand(cmd)
}

// ToOptions resolves the flags and arguments: the release's files, the -o
// printer, the connection flags to repeat and, in a fleet run, the
// contexts (read from the kubeconfig). It builds no client: each cluster's
// check builds its own.
func (fl *CheckUpgradeFlags) ToOptions(f cmdutil.Factory, cmd *cobra.Command, args []string) (*CheckUpgradeOptions, error) {
	if len(args) > 0 {
		return nil, usageErrorf(cmd, "unexpected arguments %v; the release's CRDs are given with -f", args)
	}
	files := nonEmpty(fl.Filenames)
	offline := fl.From != "" || fl.To != ""
	switch {
	case offline && (fl.From == "" || fl.To == ""):
		return nil, usageErrorf(cmd, "--from and --to go together")
	case offline && (len(files) > 0 || fl.Chart != ""):
		return nil, usageErrorf(cmd, "--from/--to check two releases without a cluster: -f and --chart do not apply")
	case offline && fl.Fleet.enabled():
		return nil, usageErrorf(cmd, "--from/--to need no cluster: --contexts and --all-contexts do not apply")
	case offline && fl.Recursive:
		return nil, usageErrorf(cmd, "-R applies to -f directories, not to --from/--to")
	case offline && len(fl.ValueFiles) > 0 && !isChart(fl.To):
		return nil, usageErrorf(cmd, "--values are the --to chart's: --to %s is no chart", fl.To)
	case len(fl.FromValueFiles) > 0 && (!offline || !isChart(fl.From)):
		return nil, usageErrorf(cmd, "--from-values needs a chart in --from")
	case offline && len(changedFlags(cmd.Flags(), append(usageFlagNames, "skip-usage-check"))) > 0:
		return nil, usageErrorf(cmd, "the client-usage flags (--usage-window, --skip-usage-check, …) measure a cluster: --from/--to check without one")
	case offline:
	case len(files) == 0 && fl.Chart == "":
		return nil, usageErrorf(cmd, "-f FILENAME, --chart CHART, or --from OLD --to NEW is required")
	case len(files) > 0 && fl.Chart != "":
		return nil, usageErrorf(cmd, "-f and --chart cannot be combined: check a chart or manifests")
	case len(fl.ValueFiles) > 0 && fl.Chart == "":
		return nil, usageErrorf(cmd, "--values needs --chart")
	case fl.Recursive && fl.Chart != "":
		return nil, usageErrorf(cmd, "-R applies to -f directories, not to --chart")
	case cmd.Flags().Changed("namespace") && fl.Chart == "" && fl.Release == "" && !offline:
		return nil, usageErrorf(cmd, "-n/--namespace is the Helm release's namespace and needs --chart or --release: a CRD is cluster-scoped")
	}
	o := &CheckUpgradeOptions{Filenames: files, Recursive: fl.Recursive, ServerDryRun: fl.ServerDryRun, Chart: fl.Chart, ValueFiles: nonEmpty(fl.ValueFiles),
		From: fl.From, To: fl.To, FromValueFiles: nonEmpty(fl.FromValueFiles), Usage: fl.Usage,
		fleet: fl.Fleet, getter: f, conn: connectionFlags(cmd.Flags(), fl.Fleet.enabled()), IOStreams: fl.IOStreams}
	var err error
	if o.Allows, err = parseAllows(fl.Allow); err != nil {
		return nil, err
	}
	if o.Rules, err = fl.rulebook(cmd); err != nil {
		return nil, err
	}
	if offline && isChart(fl.To) {
		o.Chart = fl.To
	}
	if o.Chart != "" || fl.Release != "" || offline && isChart(fl.From) {
		ns, err := releaseNamespace(f, cmd, offline)
		if err != nil {
			return nil, err
		}
		o.Helm = &upgrade.HelmRelease{Name: fl.Release, Namespace: ns}
		if offline && o.Helm.Name == "" && isChart(fl.From) {
			// Offline the release's name only names it: the previous
			// chart's templated CRDs are the release's whatever it is.
			o.Helm.Name = helmTemplateName
		}
	}
	// On GitHub Actions the findings also annotate the release's files.
	o.annotate = os.Getenv("GITHUB_ACTIONS") == "true"
	if ci := *fl.PrintFlags.OutputFormat; ci == "sarif" || ci == "junit" {
		if fl.Fleet.enabled() {
			return nil, usageErrorf(cmd, "-o %s is for one cluster, not for --contexts or --all-contexts", ci)
		}
		o.print = o.ciPrinter(ci)
		return o, nil
	}
	if fl.Fleet.enabled() {
		if o.print, err = printerFunc(fl.PrintFlags, "check-upgrade", humanPrinter(view.FleetUpgrade)); err != nil {
			return nil, err
		}
		o.Contexts, err = fl.Fleet.resolve()
		return o, err
	}
	o.print, err = printerFunc(fl.PrintFlags, "check-upgrade", humanPrinter(view.UpgradeCheck))
	return o, err
}

// Validate checks the client-usage flags; ToOptions has checked every
// other flag rule check-upgrade has.
func (o *CheckUpgradeOptions) Validate() error { return o.Usage.config().Validate() }

// Run reads the release, checks every CRD of it against one cluster or
// every context of a fleet run, prints the report and returns
// *FindingsError when a CRD would be rejected or has error-level findings
// (or, in a fleet run, the answer is not yes).
func (o *CheckUpgradeOptions) Run(ctx context.Context) error {
	if o.From != "" {
		return o.runOffline(ctx)
	}
	docs, err := o.read()
	if err != nil {
		return err
	}
	if len(o.Contexts) > 0 {
		return o.runFleet(ctx, docs)
	}
	r, err := o.check(ctx, o.getter, o.conn, docs)
	if err != nil {
		return err
	}
	o.acknowledge(r)
	if o.annotate {
		if err := cireport.Annotations(o.ErrOut, r, o.locator()); err != nil {
			return err
		}
	}
	return printFindings(o.Out, o.print, r, r.Summary)
}

// acknowledge marks what --allow acknowledges in r, and warns of each
// --allow that matched nothing.
func (o *CheckUpgradeOptions) acknowledge(r *report.UpgradeCheck) {
	if len(o.Allows) > 0 {
		r.Acknowledge(o.Allows)
		warnUnmatched(o.ErrOut, o.Allows)
	}
}

// source names the release in the report: the files or the chart as
// given.
func (o *CheckUpgradeOptions) source() string {
	if o.From != "" {
		return o.From + " -> " + o.To
	}
	if o.Chart != "" {
		return o.Chart
	}
	return strings.Join(o.Filenames, ", ")
}

// helmTemplateName is the release name helm template renders a chart for
// when none is given.
const helmTemplateName = "release-name"

// read reads the release's CRDs: the chart's, rendered for the release
// (helm template's name when none is given), or the files'. Files may
// hold no CRD when a Helm release is named: the check is then of the
// CRDs the release drops.
func (o *CheckUpgradeOptions) read() ([]manifest.CRDDoc, error) {
	if o.Chart != "" {
		release := o.Helm.Name
		if release == "" {
			release = helmTemplateName
		}
		c, err := helmchart.Load(o.Chart, helmchart.Options{ValueFiles: o.ValueFiles, Release: release, Namespace: o.Helm.Namespace})
		if err != nil {
			return nil, err
		}
		if len(c.CRDs) == 0 && o.Helm.Name == "" {
			return nil, fmt.Errorf("chart %s holds no CustomResourceDefinition (give --release NAME to check which installed CRDs of the release it drops)", o.Chart)
		}
		return c.CRDs, nil
	}
	if o.Helm != nil && o.Helm.Name != "" {
		return manifest.ReadCRDsOf(o.Filenames, o.Recursive)
	}
	return upgrade.ReadRelease(o.Filenames, o.Recursive)
}

// applyOf is the command that applies one CRD of a chart: a crds/ file
// with kubectl apply (helm upgrade never applies it; in an archive the
// file is a placeholder to extract first), a template with helm upgrade
// of the release.
func (o *CheckUpgradeOptions) applyOf(d manifest.CRDDoc) lifecycle.Command {
	file, _, _ := strings.Cut(d.Source, "#")
	if d.HelmOrigin == manifest.HelmCRDsDir {
		if fi, err := os.Stat(o.Chart); err == nil && !fi.IsDir() {
			file = "<" + strings.TrimPrefix(file, o.Chart+":") + ">"
		}
		return lifecycle.Kubectl("apply").With("server-side", "").With("f", file)
	}
	release := o.Helm.Name
	if release == "" {
		release = helmTemplateName
	}
	c := lifecycle.Helm("upgrade", release, o.Chart).With("n", o.Helm.Namespace)
	for _, v := range o.ValueFiles {
		c = c.With("f", v)
	}
	return c
}

// check is the check of every CRD of docs against the cluster getter
// connects to; conn are the connection flags of the printed commands.
func (o *CheckUpgradeOptions) check(ctx context.Context, getter genericclioptions.RESTClientGetter, conn []lifecycle.Flag, docs []manifest.CRDDoc) (*report.UpgradeCheck, error) {
	c, err := cluster.New(getter)
	if err != nil {
		return nil, err
	}
	checker := &upgrade.Checker{Cluster: c, ServerDryRun: o.ServerDryRun, FieldManager: FieldManager, PageSize: cluster.ChunkSize,
		Apply: upgrade.ApplyCommand(o.Filenames, o.Recursive), Conn: conn, Helm: o.Helm, Rules: o.Rules}
	if o.Chart != "" {
		checker.ApplyOf = o.applyOf
	}
	plans, err := checker.Check(ctx, docs)
	if err != nil {
		return nil, err
	}
	if err := o.judgeRemovals(ctx, c, docs, plans); err != nil {
		return nil, err
	}
	r := &report.UpgradeCheck{Source: o.source(), Helm: o.helmSource(), Rules: o.rulesName()}
	for _, p := range plans {
		r.Add(p)
	}
	return r, nil
}

// measureSlack is the time the usage check's reads take besides its
// window.
const measureSlack = 5 * time.Second

// judgeRemovals measures the client usage of every served version the
// plans' applies would remove, in one window for all of them, from the
// usage check's sources (unserve's), and records each verdict on its plan
// (upgrade.Plan.JudgeRemovals); with --skip-usage-check it records that
// they were not checked. The permissions the sources need are asked for
// first.
func (o *CheckUpgradeOptions) judgeRemovals(ctx context.Context, c *cluster.Client, docs []manifest.CRDDoc, plans []upgrade.Plan) error {
	type target struct {
		plan    *upgrade.Plan
		version string
	}
	targets := map[schema.GroupVersionResource]target{}
	var gvrs []schema.GroupVersionResource
	var crds []*apiextensionsv1.CustomResourceDefinition
	for i := range plans {
		p := &plans[i]
		vs := p.UsageTargets()
		if len(vs) == 0 {
			continue
		}
		if o.Usage.SkipUsageCheck {
			p.RemovalsNotChecked("--skip-usage-check")
			continue
		}
		for _, d := range docs {
			if d.CRD.Name != p.Name {
				continue
			}
			crds = append(crds, d.CRD)
			for _, v := range vs {
				gvr := cluster.GVR(d.CRD, v)
				targets[gvr] = target{p, v}
				gvrs = append(gvrs, gvr)
			}
		}
	}
	if len(gvrs) == 0 {
		return nil
	}
	u, err := preflight.NewUsage(c, o.Usage.config(), nil)
	if err != nil {
		return err
	}
	var needs []access.Need
	for _, crd := range crds {
		needs = append(needs, u.Needs(crd)...)
	}
	unmeasured := func(why string) {
		done := map[*upgrade.Plan]bool{}
		for _, t := range targets {
			if !done[t.plan] {
				done[t.plan] = true
				t.plan.RemovalsUnmeasured(why)
			}
		}
	}
	if missing, _ := c.Missing(ctx, needs); len(missing) > 0 {
		// What cannot be read is unknown, not a failed check: the rest
		// of the report stands.
		unmeasured((&access.MissingError{Operation: "the usage check", CRD: crds[0].Name, Missing: missing}).Error())
		return nil
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < o.Usage.UsageWindow+measureSlack {
		// A fleet run gives each cluster --cluster-timeout: a window that
		// does not fit would make the whole cluster unreachable.
		unmeasured(fmt.Sprintf("the --usage-window of %s does not fit in the %s left for this cluster (--cluster-timeout)", o.Usage.UsageWindow, time.Until(deadline).Round(time.Second)))
		return nil
	}
	if len(o.Contexts) == 0 {
		names := make([]string, len(gvrs))
		for i, g := range gvrs {
			names[i] = g.GroupVersion().String() + " " + g.Resource
		}
		fmt.Fprintf(o.ErrOut, "The release removes served versions; measuring the client usage of %s from %s…\n", strings.Join(names, ", "), u.Describe())
		if term.IsTerminal(o.ErrOut) {
			u.Waiting = waitProgress(o.ErrOut, o.Usage.UsageWindow)
		}
	}
	as, err := u.Measure(ctx, gvrs...)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		unmeasured(err.Error())
		return nil
	}
	byPlan := map[*upgrade.Plan]map[string]usage.Assessment{}
	for gvr, t := range targets {
		if byPlan[t.plan] == nil {
			// A target the measurement has no answer for is unknown.
			byPlan[t.plan] = map[string]usage.Assessment{}
		}
		if a, ok := as[gvr]; ok {
			byPlan[t.plan][t.version] = a
		}
	}
	for p, m := range byPlan {
		p.JudgeRemovals(m)
	}
	return nil
}

// rulesName names the rulebook that judged besides crdversion's own, for
// the report; empty without one.
func (o *CheckUpgradeOptions) rulesName() string {
	if o.Rules == nil {
		return ""
	}
	return o.Rules.Name
}

// helmSource is the report's account of the Helm release checked; nil
// without --chart or --release.
func (o *CheckUpgradeOptions) helmSource() *report.HelmSource {
	if o.Helm == nil {
		return nil
	}
	return &report.HelmSource{Chart: o.Chart, Release: o.Helm.Name, Namespace: o.Helm.Namespace, DeletionsChecked: o.Helm.Name != ""}
}

// locator finds the release's files and lines for the CI outputs; a
// finding of a CRD that no document holds points at the chart's
// Chart.yaml, or the first file given.
func (o *CheckUpgradeOptions) locator() *cireport.Locator {
	l := &cireport.Locator{Chart: o.Chart}
	switch {
	case o.Chart != "":
		l.Fallback = o.Chart
		if fi, err := os.Stat(o.Chart); err == nil && fi.IsDir() {
			l.Fallback = filepath.Join(o.Chart, "Chart.yaml")
		}
	case len(o.Filenames) > 0:
		l.Fallback = o.Filenames[0]
	default:
		l.Fallback = o.To
	}
	if fi, err := os.Stat(l.Fallback); err == nil && fi.IsDir() && o.Chart == "" {
		// Code scanning places findings in files: a directory's first
		// manifest stands for it.
		for _, pattern := range []string{"*.yaml", "*.yml", "*.json"} {
			if m, _ := filepath.Glob(filepath.Join(l.Fallback, pattern)); len(m) > 0 {
				l.Fallback = m[0]
				break
			}
		}
	}
	return l
}

// ciPrinter prints the report as SARIF or JUnit.
func (o *CheckUpgradeOptions) ciPrinter(format string) printers.ResourcePrinterFunc {
	return humanPrinter(func(w io.Writer, r *report.UpgradeCheck) error {
		if format == "sarif" {
			return cireport.SARIF(w, r, o.locator(), version.Get().Version)
		}
		return cireport.JUnit(w, r, o.locator())
	})
}

// isChart tells whether path is a Helm chart: an archive (.tgz,
// .tar.gz) or a directory with a Chart.yaml.
func isChart(path string) bool {
	if strings.HasSuffix(path, ".tgz") || strings.HasSuffix(path, ".tar.gz") {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "Chart.yaml"))
	return err == nil
}

// releaseNamespace is the Helm release's namespace: -n, else the
// kubeconfig's; offline, without a kubeconfig, "default".
func releaseNamespace(f cmdutil.Factory, cmd *cobra.Command, offline bool) (string, error) {
	if offline {
		if ns, _ := cmd.Flags().GetString("namespace"); ns != "" {
			return ns, nil
		}
	}
	ns, _, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil && offline {
		return "default", nil
	}
	return ns, err
}

// readRelease reads the CRDs of one release of an offline check: a
// chart's (rendered for the release) or the manifests'.
func (o *CheckUpgradeOptions) readRelease(path string, values []string) ([]manifest.CRDDoc, error) {
	if isChart(path) {
		release := helmTemplateName
		if o.Helm.Name != "" {
			release = o.Helm.Name
		}
		c, err := helmchart.Load(path, helmchart.Options{ValueFiles: values, Release: release, Namespace: o.Helm.Namespace})
		if err != nil {
			return nil, err
		}
		return c.CRDs, nil
	}
	return manifest.ReadCRDsOf([]string{path}, false)
}

// runOffline checks --to against --from without a cluster: the previous
// release stands for the installed CRDs (upgrade.Offline), every verdict
// is predicted, and no server dry run is sent.
func (o *CheckUpgradeOptions) runOffline(ctx context.Context) error {
	old, err := o.readRelease(o.From, o.FromValueFiles)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	if len(old) == 0 {
		// A wrong base path must not pass every CRD as new.
		return fmt.Errorf("--from: no CustomResourceDefinition in %s (a first release has nothing to compare with: check it against a cluster with -f)", o.From)
	}
	docs, err := o.readRelease(o.To, o.ValueFiles)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	if len(docs) == 0 && (o.Helm == nil || o.Helm.Name == "") {
		return fmt.Errorf("no CustomResourceDefinition in %s", o.To)
	}
	checker := &upgrade.Checker{Cluster: upgrade.NewOffline(old, o.Helm), Offline: true, FieldManager: FieldManager, PageSize: cluster.ChunkSize,
		Apply: upgrade.ApplyCommand([]string{o.To}, false), Conn: o.conn, Helm: o.Helm, Rules: o.Rules}
	if o.Chart != "" {
		checker.ApplyOf = o.applyOf
	}
	plans, err := checker.Check(ctx, docs)
	if err != nil {
		return err
	}
	for i := range plans {
		plans[i].RemovalsNotChecked("offline: no cluster to ask; check-upgrade -f against the cluster measures it")
	}
	r := &report.UpgradeCheck{Source: o.source(), Helm: o.helmSource(), Rules: o.rulesName()}
	for _, p := range plans {
		r.Add(p)
	}
	o.acknowledge(r)
	if o.annotate {
		if err := cireport.Annotations(o.ErrOut, r, o.locator()); err != nil {
			return err
		}
	}
	return printFindings(o.Out, o.print, r, r.Summary)
}
