package action

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
)

// Manifest is the file a step edits in manifest mode (-f): its documents,
// with the one that holds the CRD, edited in place by Apply.
type Manifest struct {
	// Path is where the file was read from; "-" is standard input.
	Path string
	// arg names the CRD in the file (as FindCRD takes it); doc is the
	// index of its document.
	arg  string
	file *manifest.File
	doc  int
}

// LoadFile reads the manifest at path ("-": all of in, named "standard
// input" in errors; at most manifest.MaxFileBytes) and returns the CRD that
// arg names in it as the target, with the live CRD beside it as
// LoadManifest reads it (r nil: no cluster configured, noCluster says why),
// and the file for Apply. A file without that CRD is an error prefixed
// with path.
func LoadFile(ctx context.Context, r Reader, arg, path string, in io.Reader, noCluster string) (*Target, *Manifest, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = manifest.ReadAll(in, "standard input")
	} else {
		data, err = manifest.ReadFile(path)
	}
	if err != nil {
		return nil, nil, err
	}
	m := &Manifest{Path: path, arg: arg, file: manifest.Parse(data)}
	i, crd, err := m.file.FindCRD(arg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	m.doc = i
	return LoadManifest(ctx, r, crd, noCluster), m, nil
}

// Apply rewrites the CRD's document so that it holds edited, changing only
// the lines of what the edit changed (see manifest.File.Apply).
// normalized is true when the document had to be re-serialized instead
// (its versions in flow style). An edit the file cannot take is an error
// prefixed with Path.
func (m *Manifest) Apply(edited *apiextensionsv1.CustomResourceDefinition) (normalized bool, err error) {
	_, original, err := m.file.FindCRD(m.arg)
	if err != nil {
		return false, err
	}
	applied, err := m.file.Apply(m.doc, original, edited)
	if err != nil {
		return false, fmt.Errorf("%s: %w", m.Path, err)
	}
	return applied.Normalized, nil
}

// Bytes is the file's content, with the edits applied so far.
func (m *Manifest) Bytes() []byte { return m.file.Bytes() }

// WriteBack writes Bytes to Path, keeping the file's permission bits
// (--in-place). Standard input cannot be written back: os.Stat("-") fails
// unless a file of that name exists.
func (m *Manifest) WriteBack() error {
	info, err := os.Stat(m.Path)
	if err != nil {
		return err
	}
	return os.WriteFile(m.Path, m.file.Bytes(), info.Mode().Perm())
}

// LiveChecks says which checks manifest mode skipped for lack of live
// state (t.Live nil: a Skip naming t.LiveSkip), or, with live state,
// whether the cluster would accept the edited file: every version in the
// live status.storedVersions must stay in edited's spec.versions (a Warn
// naming the missing ones and what clears them (missingStoredMessage), else a
// Pass).
func LiveChecks(t *Target, edited *apiextensionsv1.CustomResourceDefinition) edit.Checks {
	if t.Live == nil {
		return edit.Checks{{Name: "LiveState", Outcome: edit.Skip,
			Message: "checks of live state (status.storedVersions, objects) skipped: " + t.LiveSkip}}
	}
	var missing []string
	for _, v := range t.Live.Status.StoredVersions {
		if lifecycle.FindVersion(edited, v) == nil {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return edit.Checks{{Name: "LiveStoredVersions", Outcome: edit.Warn,
			Message: missingStoredMessage(t.Live, missing)}}
	}
	return edit.Checks{{Name: "LiveStoredVersions", Outcome: edit.Pass,
		Message: fmt.Sprintf("every version in the cluster's status.storedVersions [%s] is in the file", strings.Join(t.Live.Status.StoredVersions, ", "))}}
}

// missingStoredMessage says why a file lacking the versions missing of
// live's status.storedVersions cannot be applied yet, and what clears
// them: migrate trims status.storedVersions to the storage version, so it
// never removes the storage version itself, which must change first.
func missingStoredMessage(live *apiextensionsv1.CustomResourceDefinition, missing []string) string {
	msg := fmt.Sprintf("the cluster's status.storedVersions lists %s, which this file's spec.versions lacks: applying the file will be rejected until ", strings.Join(missing, ", "))
	storage := lifecycle.StorageVersion(live)
	if !slices.Contains(missing, storage) {
		return msg + fmt.Sprintf("kubectl crdversion migrate %s rewrites the objects and trims status.storedVersions to the storage version %s", live.Name, storage)
	}
	return msg + fmt.Sprintf("a version this file keeps is the cluster's storage version (kubectl crdversion promote-storage) and kubectl crdversion migrate %s has then trimmed status.storedVersions to it: %s is the storage version now, which migrate never trims", live.Name, storage)
}
