package action

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/gitrev"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
)

// DiffVersions compares two versions of the live CRD that arg names: what
// objects written at from meet when read at to (schemadiff.Versions).
func DiffVersions(ctx context.Context, r Reader, arg, from, to string) (*report.Diff, error) {
	crd, err := r.ResolveCRD(ctx, arg)
	if err != nil {
		return nil, err
	}
	fs, err := schemadiff.Versions(crd, from, to)
	if err != nil {
		return nil, err
	}
	return report.NewDiff(crd.Name+"/"+from, crd.Name+"/"+to, report.CRDDiff{Name: crd.Name, From: from, To: to, Findings: fs}), nil
}

// ManifestDiff is what DiffManifests compares.
type ManifestDiff struct {
	// Old and New are files and directories, read the way kubectl apply
	// -f A -f B reads them (every path, in order; a CRD named twice on one
	// side is an error). An Old of the form git:REF[:PATH] is read at that
	// revision of the current git repository (gitrev.Read; without PATH,
	// New's paths).
	Old, New  []string
	Recursive bool
	// Rules judges each CRD's update (Rulebook.Compare); nil is
	// crdversion's own rules.
	Rules *schemadiff.Rulebook
}

// DiffManifests compares the CRDs of two manifests: per CRD in both, the
// rulebook's findings; a CRD on one side only is a finding of its own. It
// fails when a side has no CRD (a wrong path would make every CRD added or
// removed), and when a revision cannot be read.
func DiffManifests(ctx context.Context, in ManifestDiff) (*report.Diff, error) {
	olds, news, recursive := in.Old, in.New, in.Recursive
	for _, n := range news {
		if gitrev.Is(n) {
			return nil, fmt.Errorf("--new %s: a git revision is read with --old only; --new is the work tree", n)
		}
	}
	var oldPaths []string
	// A revision's files are read from a temporary directory; errors
	// name them as git:REF:PATH.
	var named []string
	for _, o := range olds {
		if !gitrev.Is(o) {
			oldPaths = append(oldPaths, o)
			continue
		}
		tree, err := gitrev.Read(ctx, o, news)
		if err != nil {
			return nil, fmt.Errorf("--old %w", err)
		}
		defer func() { _ = tree.Remove() }()
		oldPaths = append(oldPaths, tree.Paths...)
		named = append(named, tree.Dir+string(filepath.Separator), gitrev.Prefix+tree.Ref+":")
	}
	oldDocs, err := manifest.ReadCRDsOf(oldPaths, recursive)
	if err != nil {
		return nil, fmt.Errorf("--old: %s", strings.NewReplacer(named...).Replace(err.Error()))
	}
	newDocs, err := manifest.ReadCRDsOf(news, recursive)
	if err != nil {
		return nil, fmt.Errorf("--new: %w", err)
	}
	oldName, newName := strings.Join(olds, ", "), strings.Join(news, ", ")
	switch {
	case len(oldDocs) == 0 && len(newDocs) == 0:
		return nil, fmt.Errorf("no CustomResourceDefinition in %s or %s", oldName, newName)
	case len(oldDocs) == 0:
		// Every CRD would be "added": a wrong path, not a comparison.
		return nil, fmt.Errorf("no CustomResourceDefinition in --old %s", oldName)
	case len(newDocs) == 0:
		return nil, fmt.Errorf("no CustomResourceDefinition in --new %s", newName)
	}
	byName := map[string]manifest.CRDDoc{}
	for _, d := range oldDocs {
		byName[d.CRD.Name] = d
	}
	var crds []report.CRDDiff
	for _, n := range newDocs {
		od, ok := byName[n.CRD.Name]
		delete(byName, n.CRD.Name)
		if !ok {
			crds = append(crds, report.CRDDiff{Name: n.CRD.Name, Findings: []schemadiff.Finding{{
				Code: schemadiff.CodeCRDAdded, Severity: lifecycle.SeverityInfo, Path: ".",
				Message: fmt.Sprintf("new CRD (versions %s)", strings.Join(lifecycle.VersionNames(n.CRD), ", "))}}})
			continue
		}
		crds = append(crds, report.CRDDiff{Name: n.CRD.Name, Findings: in.Rules.Compare(od.CRD, n.CRD)})
	}
	for _, od := range oldDocs {
		if _, gone := byName[od.CRD.Name]; gone {
			crds = append(crds, report.CRDDiff{Name: od.CRD.Name, Findings: []schemadiff.Finding{{
				Code: schemadiff.CodeCRDRemoved, Severity: lifecycle.SeverityWarning, Path: ".",
				Message: "not in the new manifest: applying it leaves the CRD as it is, and deleting the CRD deletes all its objects"}}})
		}
	}
	r := report.NewDiff(oldName, newName, crds...)
	if in.Rules != nil {
		r.Rules = in.Rules.Name
	}
	return r, nil
}
