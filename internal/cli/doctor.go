package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/rest"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/fleet"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/webhook"
)

var doctorLong = templates.LongDesc(`
	Check the health of CustomResourceDefinitions across the cluster.

	For each CRD (those named, or every CRD with --all): its lifecycle state
	and the findings of status, and beyond them: objects that cannot be listed
	at any served version (for example objects stored at a version no longer
	in spec.versions, which the API server answers with "request to convert
	CR from an invalid group/version"), a conversion webhook that does not
	answer (a URL is sent a ConversionReview; a Service must exist, expose the
	webhook's port with a ready endpoint and, when an endpoint is reachable
	from this client, serve a certificate the caBundle verifies and convert),
	and status.storedVersions entries ready to trim (no object left that could
	be stored at them).

	Cost: one CRD list, then per CRD a metadata-only object list (pages of
	--chunk-size), one list per other served version when the first fails,
	and two reads for a Service-referenced webhook. The output states how many
	API requests were made.

	Exit codes: 0 no error-level finding, 1 error-level findings, 2 the check
	failed.`)

var doctorExample = templates.Examples(`
	# Check every CRD of the cluster
	kubectl crdversion doctor --all

	# Check two CRDs, as JSON
	kubectl crdversion doctor certificates.cert-manager.io issuers.cert-manager.io -o json`)

// DeprecatedUsageFunc reports, for one CRD, the deprecated versions that
// still receive requests (findings of code
// lifecycle.CodeDeprecatedVersionInUse), from the API server's metrics
// (apiserver_requested_deprecated_apis, apiserver_request_total).
type DeprecatedUsageFunc func(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) ([]lifecycle.Finding, error)

// DoctorOptions are the inputs of doctor.
type DoctorOptions struct {
	PrintFlags     *genericclioptions.PrintFlags
	All            bool
	ChunkSize      int64
	WebhookTimeout time.Duration
	// DeprecatedUsage is the check of "deprecated versions still receiving
	// requests"; Run sets it from the API server's metrics (read once, or
	// twice --usage-window apart) unless --skip-usage-check.
	DeprecatedUsage DeprecatedUsageFunc
	UsageFlags
	// Fleet runs doctor in several contexts at once.
	Fleet    *FleetFlags
	contexts []string
	// services checks Service-referenced webhooks; one per cluster run.
	services *serviceWebhookChecker

	Names    []string
	client   *cluster.Client
	requests *requestCounter
	printer  printers.ResourcePrinter
	genericiooptions.IOStreams
}

// NewCmdDoctor returns the doctor command.
func NewCmdDoctor(f cmdutil.Factory, streams genericiooptions.IOStreams, conn *genericclioptions.ConfigFlags) *cobra.Command {
	o := &DoctorOptions{
		Fleet:      newFleetFlags(conn, 5*time.Minute),
		PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme),
		ChunkSize:  500, WebhookTimeout: 5 * time.Second, IOStreams: streams,
	}
	cmd := &cobra.Command{
		Use:                   "doctor (CRD_NAME... | --all) [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Check the health of CRDs: state, findings, unreadable objects, webhooks, storedVersions",
		Long:                  doctorLong,
		Example:               doctorExample,
		ValidArgsFunction:     completeArgs(f, argCRDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, cmd, args); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.PrintFlags.AddFlags(cmd)
	cmd.Flags().BoolVar(&o.All, "all", false, "Check every CRD of the cluster.")
	cmd.Flags().Int64Var(&o.ChunkSize, "chunk-size", o.ChunkSize, "Objects per page when listing them.")
	cmd.Flags().DurationVar(&o.WebhookTimeout, "webhook-timeout", o.WebhookTimeout, "How long to wait for a conversion webhook's answer.")
	o.UsageFlags.addFlags(cmd, 0)
	o.Fleet.addFlags(cmd)
	return checkCommand(cmd)
}

// requestCounter counts the requests of every client built from a
// rest.Config it wraps (wrap is for rest.Config.Wrap).
type requestCounter struct{ n atomic.Int64 }

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return countingTransport{n: &c.n, rt: rt}
}

type countingTransport struct {
	n  *atomic.Int64
	rt http.RoundTripper
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.rt.RoundTrip(r)
}

// Complete checks the arguments and builds a client whose requests are
// counted.
func (o *DoctorOptions) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	switch {
	case o.All && len(args) > 0:
		return usageErrorf(cmd, "name CRDs or give --all, not both")
	case !o.All && len(args) == 0:
		return usageErrorf(cmd, "name at least one CRD, or give --all")
	case o.ChunkSize <= 0:
		return fmt.Errorf("--chunk-size must be positive, got %d", o.ChunkSize)
	}
	o.Names = args
	if err := positiveDuration("--webhook-timeout", o.WebhookTimeout); err != nil {
		return err
	}
	if err := o.UsageFlags.validate(); err != nil {
		return err
	}
	var err error
	if o.printer, err = plainReportPrinter(o.PrintFlags); err != nil {
		return err
	}
	if o.Fleet.enabled() {
		o.contexts, err = o.Fleet.resolve()
		return err
	}
	counter := &requestCounter{}
	c, err := cluster.New(f, func(cfg *rest.Config) { cfg.Wrap(counter.wrap) })
	o.client, o.requests = c, counter
	return err
}

// Run lists the CRDs, checks each, prints the report and returns
// *FindingsError when a finding is an error.
func (o *DoctorOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.Fleet.enabled() {
		return o.runFleet(ctx)
	}
	r, err := o.doctor(ctx)
	if err != nil {
		return err
	}
	return finishReport(o.Out, o.printer, r, func(w io.Writer) error { return printDoctor(w, r) }, r.Summary)
}

// doctor is the report of one cluster (o.client).
func (o *DoctorOptions) doctor(ctx context.Context) (*report.Doctor, error) {
	list, err := o.client.CRDs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	crds, err := o.selected(list.Items)
	if err != nil {
		return nil, err
	}
	if o.DeprecatedUsage == nil && !o.SkipUsageCheck {
		first, second, err := o.client.MetricsSamples(ctx, o.UsageWindow)
		var me *cluster.MetricsError
		switch {
		case errors.As(err, &me):
			o.DeprecatedUsage = unknownUsage(me)
		case err != nil:
			return nil, err
		default:
			o.DeprecatedUsage = deprecatedUsage(first, second)
		}
	}
	r := &report.Doctor{CRDs: []report.DoctorCRD{}}
	for _, crd := range crds {
		d, err := o.check(ctx, crd)
		if err != nil {
			return nil, err
		}
		for _, f := range d.Findings {
			r.Summary.Add(f.Severity)
		}
		r.CRDs = append(r.CRDs, d)
	}
	r.Requests = o.requests.n.Load()
	return r, nil
}

// runFleet is doctor in every context at once: a summary per cluster, then
// each cluster's findings.
func (o *DoctorOptions) runFleet(ctx context.Context) error {
	start := time.Now()
	clusters := eachCluster(ctx, o.Fleet, o.contexts, func(ctx context.Context, name string, getter *genericclioptions.ConfigFlags) (res report.FleetDoctorCluster) {
		t0 := time.Now()
		res = report.FleetDoctorCluster{Context: name, Server: o.Fleet.server(name)}
		one := *o
		one.DeprecatedUsage = nil
		one.services = nil
		one.requests = &requestCounter{}
		c, err := cluster.New(getter, func(cfg *rest.Config) { cfg.Wrap(one.requests.wrap) })
		if err == nil {
			one.client = c
			res.Doctor, err = one.doctor(ctx)
		}
		res.Reach = reachOf(err)
		if err != nil {
			if res.Reach == fleet.NotInstalled {
				res.Reach = fleet.Failed
			}
			res.Error = err.Error()
		}
		res.Seconds = time.Since(t0).Seconds()
		return res
	})
	r := &report.FleetDoctor{Clusters: clusters, Seconds: time.Since(start).Seconds()}
	for _, c := range clusters {
		if c.Doctor == nil {
			r.Summary.Incompatible = true // a cluster that could not be checked is not healthy
			continue
		}
		r.Summary.Errors += c.Doctor.Summary.Errors
		r.Summary.Warnings += c.Doctor.Summary.Warnings
		r.Summary.Infos += c.Doctor.Summary.Infos
		r.Summary.Incompatible = r.Summary.Incompatible || c.Doctor.Summary.Incompatible
	}
	return finishReport(o.Out, o.printer, r, func(w io.Writer) error {
		tw := printers.GetNewTabWriter(w)
		fmt.Fprintln(tw, "CONTEXT	CRDS	ERRORS	WARNINGS	REQUESTS	TIME	PROBLEM")
		for _, c := range clusters {
			if c.Doctor == nil {
				fmt.Fprintf(tw, "%s	-	-	-	-	%.1fs	%s: %s\n", c.Context, c.Seconds, strings.ToLower(string(c.Reach)), firstLine(c.Error))
				continue
			}
			fmt.Fprintf(tw, "%s	%d	%d	%d	%d	%.1fs	-\n", c.Context, len(c.Doctor.CRDs), c.Doctor.Summary.Errors, c.Doctor.Summary.Warnings, c.Doctor.Requests, c.Seconds)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "%d cluster(s) in %.1fs\n", len(clusters), r.Seconds)
		for _, c := range clusters {
			if c.Doctor != nil && (c.Doctor.Summary.Errors > 0 || c.Doctor.Summary.Warnings > 0) {
				fmt.Fprintf(w, "\n=== %s\n", c.Context)
				if err := printDoctor(w, c.Doctor); err != nil {
					return err
				}
			}
		}
		return nil
	}, r.Summary)
}

// selected returns every CRD (--all) or those the names match, in name
// order; a name that matches none or several is an error.
func (o *DoctorOptions) selected(all []apiextensionsv1.CustomResourceDefinition) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	if o.All {
		for i := range all {
			out = append(out, &all[i])
		}
	}
	for _, n := range o.Names {
		var matches []*apiextensionsv1.CustomResourceDefinition
		for i := range all {
			if all[i].Name == n {
				matches = []*apiextensionsv1.CustomResourceDefinition{&all[i]}
			}
		}
		if len(matches) == 0 {
			matches = cluster.MatchCRDs(all, n)
		}
		switch len(matches) {
		case 0:
			return nil, &cluster.NotACRDError{Arg: n}
		case 1:
			out = append(out, matches[0])
		default:
			var names []string
			for _, m := range matches {
				names = append(names, m.Name)
			}
			return nil, &cluster.AmbiguousError{Arg: n, Matches: names}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// check is one CRD: Analyze, the objects, the webhook, storedVersions.
func (o *DoctorOptions) check(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (report.DoctorCRD, error) {
	a := lifecycle.Analyze(crd)
	d := report.DoctorCRD{Name: crd.Name, State: a.State, StorageVersion: a.StorageVersion, StoredVersions: a.StoredVersions, Conversion: a.Conversion.Strategy}
	if n, listed, err := o.objects(ctx, crd, &a); err != nil {
		return d, err
	} else if listed {
		d.Objects = &n
		if f := lifecycle.ReadyToTrim(a, n); f != nil {
			a.AddFinding(*f)
		}
	}
	for _, f := range o.webhook(ctx, crd) {
		a.AddFinding(f)
	}
	if o.DeprecatedUsage != nil {
		fs, err := o.DeprecatedUsage(ctx, crd)
		if err != nil {
			return d, err
		}
		for _, f := range fs {
			a.AddFinding(f)
		}
	}
	d.Findings = a.Findings
	return d, nil
}

// objects counts the CRD's objects at its list version. When the API
// server cannot list them there, each other served version is tried with
// one request: the finding says whether any version lists them.
func (o *DoctorOptions) objects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, a *lifecycle.Analysis) (int, bool, error) {
	version := cluster.ListVersion(crd)
	if version == "" {
		return 0, false, nil // NoServedVersion says so
	}
	n, err := o.client.CountObjects(ctx, crd, version, o.ChunkSize)
	if err == nil {
		return n, true, nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return 0, false, err
	}
	forbidden := apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
	f := lifecycle.UnreadableObjects(*a, version, err.Error(), forbidden)
	if !forbidden {
		var listable []string
		for _, v := range crd.Spec.Versions {
			if !v.Served || v.Name == version {
				continue
			}
			if _, err := o.client.Metadata.Resource(cluster.GVR(crd, v.Name)).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
				listable = append(listable, v.Name)
			}
		}
		if len(listable) == 0 {
			f.Code = lifecycle.CodeObjectsUnlistable
			f.Message = "objects cannot be listed at any served version: " + f.Message
		} else {
			f.Message += fmt.Sprintf(" (they can be listed at %s)", strings.Join(listable, ", "))
		}
	}
	a.AddFinding(f)
	return 0, false, nil
}

// webhook checks a Webhook conversion's target: a URL is sent a
// ConversionReview for a minimal object; a Service is checked as the
// preflights of add-version and promote-storage check it
// (serviceWebhookChecker). It returns no finding when the target answers
// or there is none.
func (o *DoctorOptions) webhook(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) []lifecycle.Finding {
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return nil // Analyze reports an incomplete configuration
	}
	storage := lifecycle.StorageVersion(crd)
	desired := storage
	for _, v := range crd.Spec.Versions {
		if v.Served && v.Name != storage {
			desired = v.Name
			break
		}
	}
	sample := sampleObject(crd, storage, "crdversion-doctor-sample")
	if conv.Webhook.ClientConfig.Service != nil {
		if o.services == nil {
			o.services = newServiceWebhookChecker(o.client, o.WebhookTimeout)
		}
		return webhookFindings(o.services.checks(ctx, conv.Webhook, &conversionProbe{sample: sample, desired: crd.Spec.Group + "/" + desired}))
	}
	if err := webhook.Verify(ctx, conv.Webhook, sample, crd.Spec.Group+"/"+desired, o.WebhookTimeout); err != nil {
		return []lifecycle.Finding{webhookUnreachable(fmt.Sprintf("the conversion webhook %s does not convert: %v", *conv.Webhook.ClientConfig.URL, err))}
	}
	return nil
}

func webhookUnreachable(message string) lifecycle.Finding {
	return lifecycle.Finding{Code: lifecycle.CodeWebhookUnreachable, Severity: lifecycle.SeverityError,
		Message: message + ": reads, lists, writes and deletes of objects at a version other than the stored one fail",
		Fix:     "start or repair the conversion webhook, or, when every version shares one schema, set spec.conversion.strategy: None"}
}

// webhookFindings turns the checks of a Service-referenced webhook into
// doctor findings: the failed checks into one error (the API server cannot
// call the webhook), a headless Service into a warning, checks that could
// not run (no permission, endpoints not reachable from this client) into
// information.
func webhookFindings(cs edit.Checks) []lifecycle.Finding {
	var out []lifecycle.Finding
	if failed := cs.Failed(); len(failed) > 0 {
		var msgs []string
		for _, c := range failed {
			msgs = append(msgs, c.Message)
		}
		out = append(out, webhookUnreachable(strings.Join(msgs, "; ")))
	}
	for _, c := range cs {
		switch {
		case c.Outcome == edit.Warn && c.Name == checkWebhookService:
			out = append(out, lifecycle.Finding{Code: lifecycle.CodeWebhookUnreachable, Severity: lifecycle.SeverityWarning, Message: c.Message,
				Fix: "give the Service a cluster IP, or run the API server with --enable-aggregator-routing"})
		case c.Outcome == edit.Skip && c.Name != checkWebhookConverts, c.Outcome == edit.Warn:
			out = append(out, lifecycle.Finding{Code: lifecycle.CodeWebhookNotChecked, Severity: lifecycle.SeverityInfo, Message: c.Message})
		}
	}
	return out
}

func printDoctor(out io.Writer, r *report.Doctor) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "CRD\tSTATE\tSTORAGE\tSTORED VERSIONS\tCONVERSION\tOBJECTS\tERRORS\tWARNINGS")
	for _, c := range r.CRDs {
		objects := "?"
		if c.Objects != nil {
			objects = fmt.Sprint(*c.Objects)
		}
		var s report.Summary
		for _, f := range c.Findings {
			s.Add(f.Severity)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t[%s]\t%s\t%s\t%d\t%d\n", c.Name, c.State, dash(c.StorageVersion), strings.Join(c.StoredVersions, ","), c.Conversion, objects, s.Errors, s.Warnings)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, c := range r.CRDs {
		header := false
		for _, f := range c.Findings {
			if f.Severity == lifecycle.SeverityInfo {
				continue
			}
			if !header {
				fmt.Fprintf(out, "\n%s:\n", c.Name)
				header = true
			}
			fmt.Fprintf(out, "  %s: %s\n", strings.ToUpper(string(f.Severity)), f.Message)
			if f.Fix != "" {
				fmt.Fprintf(out, "    fix: %s\n", f.Fix)
			}
		}
	}
	fmt.Fprintf(out, "\n%s checked with %s; %s\n", plural(len(r.CRDs), "CRD"), plural(int(r.Requests), "API request"), summaryText(r.Summary))
	return nil
}
