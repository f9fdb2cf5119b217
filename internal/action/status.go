package action

import (
	"context"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/managedfields"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/svm"
)

// StatusCluster is what status reads from the cluster.
type StatusCluster interface {
	ResolveCRD(ctx context.Context, arg string) (*apiextensionsv1.CustomResourceDefinition, error)
	// CountObjects counts the objects read at version (a paged,
	// metadata-only list of pageSize per page, in all namespaces).
	CountObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, pageSize int64) (int, error)
}

// Status reads the CRD arg names and analyses it (lifecycle.Analyze); with
// count it also counts its objects, through the list version, and with
// Webhook conversion once more through another served version, which makes
// the API server call the webhook. A list the API server refuses becomes a
// finding; other errors are returned.
func Status(ctx context.Context, c StatusCluster, arg string, count bool, chunkSize int64, o lifecycle.Options) (*report.Status, error) {
	crd, err := c.ResolveCRD(ctx, arg)
	if err != nil {
		return nil, err
	}
	if err := lifecycle.CheckVersionOrder(crd, o.VersionOrder); err != nil {
		return nil, err
	}
	r := &report.Status{Analysis: lifecycle.AnalyzeWith(crd, o)}
	if !count {
		return r, nil
	}
	r.Objects = &report.ObjectCount{Version: lifecycle.ListVersion(crd)}
	if r.Objects.Version == "" {
		r.Objects.Error = "no version is served"
		return r, nil
	}
	n, err := c.CountObjects(ctx, crd, r.Objects.Version, chunkSize)
	if _, answered := err.(apierrors.APIStatus); err != nil && !answered {
		return nil, err
	}
	r.Objects.Count = n
	if err != nil {
		r.Objects.Error = err.Error()
		r.AddFinding(lifecycle.UnreadableObjects(r.Analysis, r.Objects.Version, err.Error(), forbidden(err)))
		return r, nil
	}
	r.ObjectsReadable(r.Objects.Version)
	// A StorageVersionMigration of the resource that Succeeded while
	// storedVersions still lists older versions is no proof of a
	// migration (case 34); Failed and untaken ones mislead too.
	if m, ok := c.(storageMigrations); ok {
		ms, served, err := m.Migrations(ctx)
		if _, answered := err.(apierrors.APIStatus); err != nil && !answered {
			return nil, err
		}
		if served || err != nil {
			for _, f := range svm.FindingsOr(crd, ms, err, time.Now()) {
				r.AddFinding(f)
			}
		}
	}
	// Before retire is advised, ask which objects' managedFields still
	// name the version it removes: retire refuses until they are rewritten.
	if m, ok := c.(staleManagedFields); ok && r.State == lifecycle.StateS5 && n > 0 {
		stale, err := m.StaleManagedFields(ctx, crd, r.OldVersion, chunkSize)
		if err != nil {
			if _, answered := err.(apierrors.APIStatus); !answered {
				return nil, err
			}
		} else {
			r.ManagedFieldsNaming(r.OldVersion, len(stale))
		}
	}
	// Listed at the storage version, objects stored there need no
	// conversion: list them once more through another served version, as
	// clients using it (and the namespace controller, which uses the
	// preferred version) do, to exercise the webhook.
	if probe := lifecycle.ConversionProbeVersion(crd, r.Objects.Version); probe != "" && n > 0 {
		if _, err := c.CountObjects(ctx, crd, probe, chunkSize); err != nil {
			if _, answered := err.(apierrors.APIStatus); !answered {
				return nil, err
			}
			r.AddFinding(lifecycle.UnreadableObjects(r.Analysis, probe, err.Error(), forbidden(err)))
		}
	}
	return r, nil
}

// staleManagedFields is the part of a cluster that lists the objects whose
// managedFields name a version (cluster.Client).
type staleManagedFields interface {
	StaleManagedFields(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, pageSize int64) ([]managedfields.ObjectRef, error)
}

// storageMigrations is the part of a cluster that lists the
// StorageVersionMigrations (svm.Runner).
type storageMigrations interface {
	Migrations(ctx context.Context) ([]svm.Migration, bool, error)
}

func forbidden(err error) bool { return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) }
