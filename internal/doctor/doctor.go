// Package doctor checks the health of the CustomResourceDefinitions of one
// cluster: the lifecycle findings of each CRD (lifecycle.Analyze) and what
// only the cluster shows — lists of its objects that the API server cannot
// answer at a served version, and the objects that break them; a conversion
// webhook that does not convert; status.storedVersions entries ready to
// trim; deprecated versions that clients still use; owner references and
// scale targets that name a version a CRD does not serve;
// StorageVersionMigrations that mislead (Succeeded while storedVersions
// still lists older versions, Failed, never taken up).
//
// It reads the cluster through narrow interfaces (Reader, WebhookChecker,
// UsageSource), which cluster.Client, preflight.Webhooks and ClientUsage
// implement, and reports progress through an event sink (Doctor.Progress)
// that the command renders.
package doctor

import (
	"context"
	"fmt"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/svm"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// Reader reads the CRDs and their objects (see cluster.Client). Errors are
// the API server's, unchanged, so that doctor can tell a refusal
// (apierrors.APIStatus) from a failure to reach the server.
type Reader interface {
	// ListCRDs lists every CRD of the cluster.
	ListCRDs(ctx context.Context) ([]apiextensionsv1.CustomResourceDefinition, error)
	// EachObject lists crd's objects through version, metadata only,
	// pageSize per request, calling each with every object's namespace
	// ("" when cluster-scoped) and name; an error from each stops the
	// list and is returned.
	EachObject(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, pageSize int64, each func(namespace, name string) error) error
	// ReadObject reads one of crd's objects through version, metadata
	// only.
	ReadObject(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version, namespace, name string) error
}

// WebhookChecker checks a conversion webhook from the client as the API
// server calls it (see preflight.Webhooks, which remembers for one run the
// endpoints it could not reach).
type WebhookChecker interface {
	Check(ctx context.Context, conv *apiextensionsv1.WebhookConversion, probe *preflight.Probe, skipped string) edit.Checks
}

// UsageSource says which versions of a CRD clients still use (see
// ClientUsage): findings of code lifecycle.CodeDeprecatedVersionInUse, and
// the assessments they come from. Prepare, called once with every CRD of
// the run before the first Findings, lets it measure them all at once.
type UsageSource interface {
	Prepare(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition) error
	Findings(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) ([]lifecycle.Finding, []usage.Assessment, error)
}

// Event is a progress report of a list of objects: Objects listed so far
// through Version of the CRD named CRD, and Done on the last event of the
// list.
type Event struct {
	CRD     string
	Version string
	Objects int
	Done    bool
}

// progressEvery is how many objects a list reports progress after.
const progressEvery = 250

// Doctor is one run of doctor against one cluster. Build one per cluster;
// it is not safe for concurrent use.
type Doctor struct {
	Reader Reader
	// Webhooks checks conversion webhooks; nil leaves them unchecked.
	Webhooks WebhookChecker
	// Usage is the check of deprecated versions that still receive
	// requests; nil leaves it out.
	Usage UsageSource
	// Requests, when set, is the number of API requests made so far, for
	// the report.
	Requests func() int64
	// ChunkSize is the number of objects per list request (> 0).
	ChunkSize int64
	// Conn are the connection flags that the printed commands repeat.
	Conn []lifecycle.Flag
	// Progress, when set, receives an Event every progressEvery objects
	// of a list and at its end.
	Progress func(Event)
	// References, when set, finds the references that name a
	// version a CRD of the run does not serve: one inventory of the
	// cluster per run (Run), whose findings Check adds.
	References ReferenceFinder
	// Migrations, when set, lists the cluster's StorageVersionMigrations
	// (svm.Runner): once per run, whose findings (svm.Findings) Check
	// adds.
	Migrations MigrationLister
	// Admission, when set, lists the admission webhook and policy rules
	// once per run (cluster.Client.AdmissionRules); Check reports those
	// of each CRD that see no request (references.Blind).
	Admission AdmissionLister

	refs          *references.Inventory
	admission     []references.AdmissionRule
	admissionErr  error
	migrations    []svm.Migration
	migrationsErr error
}

// AdmissionLister lists the rules of the cluster's admission webhooks and
// policies.
type AdmissionLister interface {
	AdmissionRules(ctx context.Context) ([]references.AdmissionRule, error)
}

// MigrationLister lists the StorageVersionMigrations of the cluster;
// served is false when the cluster does not serve the API.
type MigrationLister interface {
	Migrations(ctx context.Context) (ms []svm.Migration, served bool, err error)
}

// Run lists the CRDs of the cluster, selects those names match (every CRD
// with all; see Select) and checks each, in name order. The error is the
// first that kept a CRD from being checked (the cluster could not be
// read); findings are in the report.
func (d *Doctor) Run(ctx context.Context, names []string, all bool) (*report.Doctor, error) {
	list, err := d.Reader.ListCRDs(ctx)
	if err != nil {
		return nil, err
	}
	crds, err := Select(list, names, all)
	if err != nil {
		return nil, err
	}
	if d.Usage != nil {
		if err := d.Usage.Prepare(ctx, crds); err != nil {
			return nil, err
		}
	}
	if d.References != nil {
		if d.refs, err = brokenReferences(ctx, d.References, crds); err != nil {
			return nil, fmt.Errorf("finding references: %w", err)
		}
	}
	if d.Migrations != nil {
		d.migrations, _, d.migrationsErr = d.Migrations.Migrations(ctx)
	}
	if d.Admission != nil {
		d.admission, d.admissionErr = d.Admission.AdmissionRules(ctx)
	}
	r := &report.Doctor{CRDs: []report.DoctorCRD{}}
	for _, crd := range crds {
		c, err := d.Check(ctx, crd)
		if err != nil {
			return nil, err
		}
		r.Add(c)
	}
	if d.Requests != nil {
		r.Requests = d.Requests()
	}
	return r, nil
}

// Check is the health of one CRD: Analyze's findings, every list of its
// objects that fails (see objects), storedVersions ready to trim, its
// conversion webhook and the clients of its deprecated versions. Fixes are
// rendered with d.Conn.
func (d *Doctor) Check(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (report.DoctorCRD, error) {
	a := lifecycle.Analyze(crd)
	c := report.DoctorCRD{Name: crd.Name, State: a.State, StorageVersion: a.StorageVersion, StoredVersions: a.StoredVersions, Conversion: a.Conversion.Strategy}
	objs, err := d.objects(ctx, crd)
	if err != nil {
		return c, err
	}
	c.Lists = objs.lists
	c.Objects = objs.count
	for _, f := range objs.findings(a) {
		a.AddFinding(f)
	}
	if objs.count != nil {
		if f := lifecycle.ReadyToTrim(a, *objs.count); f != nil {
			a.AddFinding(*f)
		}
	}
	for _, f := range d.webhook(ctx, crd) {
		a.AddFinding(f)
	}
	if d.refs != nil {
		for _, f := range referenceFindings(crd, d.refs) {
			a.AddFinding(f)
		}
	}
	if d.Admission != nil {
		for _, f := range admissionFindings(crd, d.admission, d.admissionErr) {
			a.AddFinding(f)
		}
	}
	for _, f := range svm.FindingsOr(crd, d.migrations, d.migrationsErr, time.Now()) {
		a.AddFinding(f)
	}
	if d.Usage != nil {
		fs, as, err := d.Usage.Findings(ctx, crd)
		if err != nil {
			return c, err
		}
		c.Usage = as
		for _, f := range fs {
			a.AddFinding(f)
		}
	}
	c.Findings = lifecycle.Rendered(a.Findings, d.Conn)
	return c, nil
}

// Select returns every CRD of list (all) and those names match, in name
// order: a name matches the CRD of that name, else what lifecycle.MatchCRDs
// matches (resource, short name, kind). A name that matches none is a
// *cluster.NotACRDError, one that matches several a *cluster.AmbiguousError.
func Select(list []apiextensionsv1.CustomResourceDefinition, names []string, all bool) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	seen := map[string]bool{}
	add := func(crd *apiextensionsv1.CustomResourceDefinition) {
		if !seen[crd.Name] {
			seen[crd.Name] = true
			out = append(out, crd)
		}
	}
	if all {
		for i := range list {
			add(&list[i])
		}
	}
	for _, n := range names {
		n, err := lifecycle.CRDArg(n)
		if err != nil {
			return nil, err
		}
		var matches []*apiextensionsv1.CustomResourceDefinition
		for i := range list {
			if list[i].Name == n {
				matches = []*apiextensionsv1.CustomResourceDefinition{&list[i]}
			}
		}
		if len(matches) == 0 {
			matches = lifecycle.MatchCRDs(list, n)
		}
		switch len(matches) {
		case 0:
			return nil, &cluster.NotACRDError{Arg: n}
		case 1:
			add(matches[0])
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
