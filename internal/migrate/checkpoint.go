package migrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
)

var (
	syscallECONNREFUSED = syscall.ECONNREFUSED
	syscallECONNRESET   = syscall.ECONNRESET
)

// checkpoint is the file a run writes after each completed page. It is
// only valid for the same CRD (uid) at the same generation: objects handled
// before a spec change (a storage version change, even one undone since)
// may be stored at another version and are migrated again.
type checkpoint struct {
	CRD    string    `json:"crd"`
	CRDUID types.UID `json:"crdUID"`
	// Generation is the CRD's metadata.generation: any spec change since
	// (a storage flip and back included) makes the checkpoint stale.
	Generation     int64  `json:"generation"`
	StorageVersion string `json:"storageVersion"`
	// Continue is the list continue token after the last page whose objects
	// were all handled. The API server keeps these for a few minutes (etcd
	// compaction); an expired token restarts the list from the beginning,
	// where already current objects cost a no-op write each.
	Continue string    `json:"continue"`
	Counts   Counts    `json:"counts"`
	Updated  time.Time `json:"updated"`
}

// CheckCheckpointPath fails early when path cannot be written, before any
// object is touched.
func CheckCheckpointPath(path string) error {
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("--checkpoint %s: %w", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".crdversion-checkpoint-probe-")
	if err != nil {
		return fmt.Errorf("--checkpoint %s: %w", path, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

func loadCheckpoint(path string, crd *apiextensionsv1.CustomResourceDefinition, storage string) (*checkpoint, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cp checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %v", path, err)
	}
	if cp.CRDUID != crd.UID || cp.StorageVersion != storage || cp.Generation != crd.Generation {
		// Another CRD, or its spec changed since: start over.
		return nil, nil
	}
	return &cp, nil
}

// saveCheckpoint records p, the next page in list order whose every object
// is done, and the counts of the pages recorded so far.
func (r *run) saveCheckpoint(p *page) error {
	next := p.next
	r.mu.Lock()
	r.saved.Plus(p.counts)
	cp := checkpoint{CRD: r.res.CRD, StorageVersion: r.res.StorageVersion, Continue: next, Counts: r.saved, Updated: time.Now().UTC()}
	r.mu.Unlock()
	cp.CRDUID = r.crdUID
	cp.Generation = r.generation
	if next == "" {
		return nil // the last page: the run completes and removes the file
	}
	data, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return err
	}
	tmp := r.opts.Checkpoint + ".tmp"
	if err := os.MkdirAll(filepath.Dir(r.opts.Checkpoint), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, r.opts.Checkpoint)
}

func removeCheckpoint(path string) { _ = os.Remove(path) }
