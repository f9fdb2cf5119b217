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

	"github.com/crdversion/kubectl-crdversion/internal/action"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
)

var addVersionLong = templates.LongDesc(`
	Add a version to a CustomResourceDefinition.

	The new version copies the schema, subresources, printer columns and
	selectable fields of --from (default: the storage version); with
	--schema-file it takes its schema from the file and keeps the rest of
	--from; with --preserve-unknown-fields its schema keeps every field
	(x-kubernetes-preserve-unknown-fields at the root), which is how a
	version removed while objects were still stored at it is restored
	without pruning what only it declared. It is served unless
	--served=false, and never the storage version: promote-storage does
	that once clients can use it.

	Preflight: the name is a DNS-1035 label not yet in spec.versions (a
	warning when it is not in Kubernetes version form); with conversion
	strategy None, no field is pruned between the new schema and the other
	versions' (--allow-pruning accepts the loss, listing it); with Webhook
	conversion, the configuration is complete and the webhook converts a sample
	object to the new version. A webhook behind a Service is checked as the API
	server reaches it: the caBundle holds certificates, the Service exists and
	exposes the port (default 443) with a ready endpoint (EndpointSlices), and,
	when an endpoint is reachable from this client, its serving certificate
	verifies for NAME.NAMESPACE.svc against the caBundle and it converts the
	sample; an endpoint this client cannot reach is a warning (not verified).
	The output says how kubectl's default version changes.`)

var addVersionExample = templates.Examples(`
	# Add v2 with the schema of the storage version
	kubectl crdversion add-version crontabs.stable.example.com v2

	# Add v2 with its own schema, converted by a webhook
	kubectl crdversion add-version crontabs.stable.example.com v2 --schema-file v2-schema.yaml \
	  --conversion Webhook --webhook-service crontab-system/conversion:443/convert --ca-bundle-file ca.crt

	# Restore a version still listed in status.storedVersions, unserved,
	# keeping every field its objects hold
	kubectl crdversion add-version crontabs.stable.example.com v1 --preserve-unknown-fields --served=false

	# ... or with the schema it had in the release that still shipped it
	kubectl crdversion add-version crontabs.stable.example.com v1 --schema-file old-release/crd.yaml --served=false`)

// AddVersionFlags are the flags of add-version.
type AddVersionFlags struct {
	*EditFlags
	From               string
	SchemaFile         string
	PreserveUnknown    bool
	Served             bool
	Deprecated         bool
	DeprecationWarning string
	Conversion         string
	WebhookURL         string
	WebhookService     string
	CABundleFile       string
	ReviewVersions     []string
	AllowPruning       pruningFlag
	WebhookTimeout     time.Duration
}

// AddVersionOptions are the inputs of add-version.
type AddVersionOptions struct {
	*EditOptions
	Spec           edit.AddVersionSpec
	WebhookTimeout time.Duration
}

// NewCmdAddVersion returns the add-version command.
func NewCmdAddVersion(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	fl := &AddVersionFlags{EditFlags: NewEditFlags(), Served: true, ReviewVersions: []string{"v1"}, WebhookTimeout: 10 * time.Second}
	cmd := &cobra.Command{
		Use:                   "add-version CRD_NAME NEW_VERSION [--from VERSION] [--schema-file FILE] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Add a version to a CRD, with its schema copied or from a file",
		Long:                  addVersionLong,
		Example:               addVersionExample,
		ValidArgsFunction:     completeArgs(f, argCRD, argNew),
		RunE: runE(func(cmd *cobra.Command, args []string) (*AddVersionOptions, error) {
			return fl.ToOptions(f, cmd, args, streams)
		}),
	}
	fl.EditFlags.AddFlags(cmd)
	c := cmd.Flags()
	c.StringVar(&fl.From, "from", "", "Copy schema, subresources, printer columns and selectable fields from this version (default: the storage version); with --schema-file, all but the schema.")
	c.StringVar(&fl.SchemaFile, "schema-file", "", "YAML or JSON file with the new version's openAPIV3Schema: the schema itself, {openAPIV3Schema: …}, or a CustomResourceDefinition manifest (such as the release's) whose version NEW_VERSION gives it.")
	c.BoolVar(&fl.PreserveUnknown, "preserve-unknown-fields", false, "Give the new version a schema that keeps every field (type: object, x-kubernetes-preserve-unknown-fields: true), to restore a version objects are still stored at without pruning them.")
	c.BoolVar(&fl.Served, "served", fl.Served, "Serve the new version.")
	c.BoolVar(&fl.Deprecated, "deprecated", false, "Mark the new version deprecated.")
	c.StringVar(&fl.DeprecationWarning, "deprecation-warning", "", "The deprecationWarning of the new version (implies --deprecated).")
	c.StringVar(&fl.Conversion, "conversion", "", "Set the conversion strategy: None or Webhook (default: keep the CRD's).")
	c.StringVar(&fl.WebhookURL, "webhook-url", "", "URL of the conversion webhook (https://…).")
	c.StringVar(&fl.WebhookService, "webhook-service", "", "Service of the conversion webhook: NAMESPACE/NAME[:PORT][/PATH].")
	c.StringVar(&fl.CABundleFile, "ca-bundle-file", "", "PEM file with the CA that signed the webhook's serving certificate.")
	c.StringSliceVar(&fl.ReviewVersions, "conversion-review-versions", fl.ReviewVersions, "ConversionReview versions the webhook accepts, in order of preference.")
	addPruningFlag(c, &fl.AllowPruning, "Accept conversion strategy None between schemas that prune fields: alone, every such field; with schema paths (--allow-pruning=.spec.color,.spec.ports[*].name), those and what is under them, while the others still refuse. The fields are listed and lost.")
	c.DurationVar(&fl.WebhookTimeout, "webhook-timeout", fl.WebhookTimeout, "How long to wait for the conversion webhook's answer in the preflight.")
	completeVersionFlag(f, cmd, "from")
	cmdutil.CheckErr(cmd.RegisterFlagCompletionFunc("conversion", cobra.FixedCompletions([]string{"None", "Webhook"}, cobra.ShellCompDirectiveNoFileComp)))
	return cmd
}

// ToOptions turns the flags into the version to add; it reads the schema
// and CA files.
func (fl *AddVersionFlags) ToOptions(f cmdutil.Factory, cmd *cobra.Command, args []string, streams genericiooptions.IOStreams) (*AddVersionOptions, error) {
	eo, err := fl.EditFlags.toOptions(f, cmd, args, "add-version", streams)
	if err != nil {
		return nil, err
	}
	if fl.From != "" {
		if err := checkVersionNames("--from", fl.From); err != nil {
			return nil, err
		}
	}
	o := &AddVersionOptions{EditOptions: eo, WebhookTimeout: fl.WebhookTimeout,
		Spec: edit.AddVersionSpec{Name: eo.Version, From: fl.From, Served: fl.Served, Deprecated: fl.Deprecated, Pruning: fl.AllowPruning.pruning()}}
	if cmd.Flags().Changed("deprecation-warning") {
		o.Spec.Deprecated = true
		o.Spec.DeprecationWarning = &fl.DeprecationWarning
	}
	if fl.PreserveUnknown {
		if fl.SchemaFile != "" {
			return nil, fmt.Errorf("--preserve-unknown-fields and --schema-file both give the schema: use one")
		}
		o.Spec.Schema = edit.PreserveUnknownSchema()
	}
	if fl.SchemaFile != "" {
		if o.Spec.Schema, err = manifest.ReadSchemaFile(fl.SchemaFile, eo.CRD, eo.Version); err != nil {
			return nil, err
		}
	}
	webhookFlags := fl.WebhookURL != "" || fl.WebhookService != "" || fl.CABundleFile != "" || cmd.Flags().Changed("conversion-review-versions")
	switch fl.Conversion {
	case "":
		if webhookFlags {
			return nil, fmt.Errorf("webhook flags need --conversion Webhook (also to change the webhook of a CRD that already uses Webhook conversion)")
		}
	case string(apiextensionsv1.NoneConverter):
		if webhookFlags {
			return nil, fmt.Errorf("webhook flags cannot be used with --conversion None")
		}
		o.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	case string(apiextensionsv1.WebhookConverter):
		if o.Spec.Conversion, err = edit.WebhookConversion(fl.WebhookURL, fl.WebhookService, fl.ReviewVersions); err != nil {
			return nil, err
		}
		if fl.CABundleFile != "" {
			if o.Spec.Conversion.Webhook.ClientConfig.CABundle, err = manifest.ReadFile(fl.CABundleFile); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("--conversion must be None or Webhook, got %q", fl.Conversion)
	}
	return o, nil
}

// Validate checks the flags of add-version.
func (o *AddVersionOptions) Validate() error {
	if err := o.EditOptions.Validate(); err != nil {
		return err
	}
	return positiveDuration("--webhook-timeout", o.WebhookTimeout)
}

// Run reads the CRD, runs the preflight (with the webhook check) and writes.
func (o *AddVersionOptions) Run(ctx context.Context) error {
	r, err := o.load(ctx)
	if err != nil {
		return err
	}
	res := action.AddVersion(ctx, clusterAs[action.AddVersionCluster](o.client), r.target, action.AddVersionOptions{Spec: o.Spec, WebhookTimeout: o.WebhookTimeout})
	return r.finish(ctx, res)
}
