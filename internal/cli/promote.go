package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

var promoteLong = templates.LongDesc(`
	Make a version the storage version of a CustomResourceDefinition.

	Objects written from then on are stored at the new version, and the API
	server adds it to status.storedVersions. Existing objects are not rewritten:
	run kubectl crdversion migrate next.

	Preflight: the version exists and is served; every existing object can be
	read at it (the API server converts each one, so a failing conversion
	webhook is caught); every object (or --sample of them) passes its schema and
	validation rules, checked with a server-side dry-run create; with
	conversion strategy None, no field is pruned between the schemas. With a
	conversion webhook behind a Service, first the checks of add-version: the
	caBundle, the Service and its port, a ready endpoint, and (when reachable
	from this client) the serving certificate and a sample conversion. Failures
	name the objects and quote the API server.`)

var promoteExample = templates.Examples(`
	# Make v2 the storage version
	kubectl crdversion promote-storage crontabs.stable.example.com v2

	# Check only the first 200 objects against v2's schema
	kubectl crdversion promote-storage crontabs.stable.example.com v2 --sample 200

	# Run every check, write nothing
	kubectl crdversion promote-storage crontabs.stable.example.com v2 --dry-run=server`)

// PromoteOptions are the inputs of promote-storage beyond EditOptions.
type PromoteOptions struct {
	*EditOptions
	// Sample limits the objects validated at the new version; 0 is all.
	Sample         int
	ChunkSize      int64
	AllowPruning   bool
	WebhookTimeout time.Duration
}

// NewCmdPromoteStorage returns the promote-storage command.
func NewCmdPromoteStorage(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &PromoteOptions{EditOptions: newEditOptions("promote-storage", streams), ChunkSize: 500, WebhookTimeout: 10 * time.Second}
	cmd := &cobra.Command{
		Use:                   "promote-storage CRD_NAME VERSION [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Make a version the storage version of a CRD, after checking every object against it",
		Long:                  promoteLong,
		Example:               promoteExample,
		ValidArgsFunction:     versionCompletion(f),
		RunE: o.runE(f, func(*cobra.Command) error { return o.Validate() }, func(ctx context.Context, _ *cobra.Command) error {
			return o.Run(ctx)
		}),
	}
	o.addFlags(cmd)
	cmd.Flags().IntVar(&o.Sample, "sample", o.Sample, "Validate at most this many objects at the new version (0: all). Every object is still read at it.")
	cmd.Flags().Int64Var(&o.ChunkSize, "chunk-size", o.ChunkSize, "Objects per page when reading them.")
	cmd.Flags().BoolVar(&o.AllowPruning, "allow-pruning", false, "Accept conversion strategy None between schemas that prune fields; the fields are listed and lost.")
	cmd.Flags().DurationVar(&o.WebhookTimeout, "webhook-timeout", o.WebhookTimeout, "How long to wait for the conversion webhook's answer in the preflight, when it is behind a Service whose endpoints this client reaches.")
	return cmd
}

// Validate checks the flags of promote-storage.
func (o *PromoteOptions) Validate() error {
	if o.Sample < 0 {
		return fmt.Errorf("--sample must be 0 (all) or positive, got %d", o.Sample)
	}
	if o.ChunkSize <= 0 {
		return fmt.Errorf("--chunk-size must be positive, got %d", o.ChunkSize)
	}
	return nil
}

// Run reads the CRD, runs the preflight and writes the new storage version.
func (o *PromoteOptions) Run(ctx context.Context) error {
	crd, err := o.load(ctx)
	if err != nil {
		return err
	}
	r := edit.PromoteStorage(crd, o.Version, o.AllowPruning)
	if !r.NoOp && len(r.Checks.Failed()) == 0 && (o.file == nil || o.live != nil) {
		target := crd
		if o.live != nil {
			target = o.live
		}
		if conv := r.Edited.Spec.Conversion; conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter && conv.Webhook != nil && conv.Webhook.ClientConfig != nil && conv.Webhook.ClientConfig.Service != nil {
			r.Checks = append(r.Checks, o.serviceChecks(ctx, crd, conv.Webhook)...)
		}
		switch v := lifecycle.FindVersion(target, o.Version); {
		case len(r.Checks.Failed()) > 0:
			// The API server cannot call the webhook: reading the objects
			// at the new version would only repeat that.
		case v == nil || !v.Served:
			r.Checks = append(r.Checks, edit.Check{Name: "ObjectsValid", Outcome: edit.Skip,
				Message: fmt.Sprintf("objects not checked at %s: the cluster does not serve it yet", o.Version)})
		default:
			found, err := o.client.CheckObjectsAt(ctx, target, o.Version, o.Sample, o.ChunkSize)
			if err != nil {
				return err
			}
			r.Checks = append(r.Checks, objectChecks(found, o.Version)...)
		}
	}
	return o.apply(ctx, r)
}

// serviceChecks checks a conversion webhook behind a Service (see
// serviceWebhookChecker), with a ConversionReview converting a minimal
// object from the storage version to the new one when an endpoint is
// reachable from this client.
func (o *PromoteOptions) serviceChecks(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, conv *apiextensionsv1.WebhookConversion) edit.Checks {
	probe := &conversionProbe{desired: crd.Spec.Group + "/" + o.Version, sample: sampleObject(crd, lifecycle.StorageVersion(crd), "crdversion-preflight-sample")}
	return newServiceWebhookChecker(o.client, o.WebhookTimeout).checks(ctx, conv, probe)
}
