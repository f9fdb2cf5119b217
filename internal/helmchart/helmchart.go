// Package helmchart reads the CustomResourceDefinitions of a Helm chart
// the way Helm applies them: the files of the chart's crds/ directory (and
// its subcharts'), which Helm creates on install when absent and never
// updates, deletes or templates; and the CRDs among the chart's rendered
// templates, which every helm upgrade applies (see manifest.HelmOrigin;
// the rules that follow from it are upgrade's).
//
// Rendering uses Helm's own SDK (helm.sh/helm/v4) as `helm template` does:
// client-only, with Helm's default capabilities, no cluster contacted.
package helmchart

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"

	"github.com/crdversion/kubectl-crdversion/internal/manifest"
)

// Chart is a chart's CRDs as one release of it applies them.
type Chart struct {
	// Name and Version are the chart's (Chart.yaml).
	Name, Version string
	// Path is the chart directory or archive as given; Dir is true for
	// a directory (a crds/ CRD's Source is then its file's path, else
	// "ARCHIVE:crds/FILE").
	Path string
	Dir  bool
	// Release and Namespace are the release name and namespace the
	// templates were rendered for.
	Release, Namespace string
	// CRDs are the chart's CRDs, those of crds/ first; each has its
	// HelmOrigin set.
	CRDs []manifest.CRDDoc
}

// Options are the inputs of rendering a chart, as helm template takes them.
type Options struct {
	// ValueFiles are the values files, later ones overriding earlier
	// ones (helm -f).
	ValueFiles []string
	// Release and Namespace are the release's name and namespace.
	Release, Namespace string
}

// Load loads the chart at path (a directory or a .tgz archive) and renders
// its templates with the values of the chart and o.ValueFiles for release
// o.Release in o.Namespace. Errors: a path that is no chart, a values file
// that cannot be read, a template that fails to render, a CRD that cannot
// be decoded or is named twice (Helm would apply the last).
func Load(path string, o Options) (*Chart, error) {
	if o.Release == "" || o.Namespace == "" {
		return nil, errors.New("helmchart: a release name and namespace are required")
	}
	chrt, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("--chart %s: %w", path, err)
	}
	vals, err := valuesOf(o.ValueFiles)
	if err != nil {
		return nil, err
	}
	out := &Chart{Name: chrt.Name(), Version: chrt.Metadata.Version, Path: path, Release: o.Release, Namespace: o.Namespace}
	seen := map[string]string{}
	add := func(d manifest.CRDDoc) error {
		if prev, ok := seen[d.CRD.Name]; ok {
			return fmt.Errorf("--chart %s: CRD %s is in both %s and %s", path, d.CRD.Name, prev, d.Source)
		}
		seen[d.CRD.Name] = d.Source
		out.CRDs = append(out.CRDs, d)
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		out.Dir = true
	}
	for _, f := range chrt.CRDObjects() {
		// f.Filename is the chart's name (a subchart's "parent/charts/
		// sub") and the file: the file's path in the directory given, or
		// its member in the archive.
		_, inChart, _ := strings.Cut(filepath.ToSlash(f.Filename), "/")
		file := path + ":" + inChart
		if out.Dir {
			file = filepath.Join(path, filepath.FromSlash(inChart))
		}
		docs, err := manifest.ParseCRDs(f.File.Data)
		if err != nil {
			return nil, fmt.Errorf("--chart %s: %s: %w", path, file, err)
		}
		for _, d := range docs {
			d.Source, d.HelmOrigin = file+d.Source, manifest.HelmCRDsDir
			if err := add(d); err != nil {
				return nil, err
			}
		}
	}
	rendered, err := render(chrt, vals, o)
	if err != nil {
		// Helm's template errors span lines; one line says it all.
		return nil, fmt.Errorf("--chart %s: %s", path, strings.Join(strings.Fields(err.Error()), " "))
	}
	for _, t := range rendered {
		docs, err := manifest.ParseCRDs([]byte(t.content))
		if err != nil {
			return nil, fmt.Errorf("--chart %s: %s: %w", path, t.source, err)
		}
		for _, d := range docs {
			d.Source, d.HelmOrigin = t.source, manifest.HelmTemplates
			if err := add(d); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// template is one rendered template document: its source ("chart/
// templates/x.yaml") and content.
type template struct{ source, content string }

// values reads the values files in order, each merged over the ones
// before it, as helm -f A -f B merges them.
func valuesOf(files []string) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range files {
		v, err := common.ReadValuesFile(f)
		if err != nil {
			return nil, fmt.Errorf("--values %s: %w", f, err)
		}
		out = loader.MergeMaps(out, v)
	}
	return out, nil
}

// render renders chrt's templates as helm template does, client-only
// with Helm's default capabilities, for an upgrade of release o.Release
// (.Release.IsUpgrade true), and returns the documents of the release's
// manifest in Helm's install order. Hooks are left out: Helm neither
// tracks them in the release nor deletes them with it.
func render(chrt *chartv2.Chart, vals map[string]any, o Options) ([]template, error) {
	if err := chartutil.ProcessDependencies(chrt, vals); err != nil {
		return nil, err
	}
	caps := common.DefaultCapabilities.Copy()
	opts := common.ReleaseOptions{Name: o.Release, Namespace: o.Namespace, Revision: 2, IsUpgrade: true}
	toRender, err := commonutil.ToRenderValuesWithSchemaValidation(chrt, vals, opts, caps, false)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(chrt, toRender)
	if err != nil {
		return nil, err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	out := make([]template, 0, len(manifests))
	for _, m := range manifests {
		out = append(out, template{source: m.Name, content: m.Content})
	}
	return out, nil
}
