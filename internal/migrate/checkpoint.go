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
// only valid for the same CRD (uid) and the same storage version: objects
// migrated before a storage version change would have to be migrated again.
type checkpoint struct {
	CRD            string    `json:"crd"`
	CRDUID         types.UID `json:"crdUID"`
	StorageVersion string    `json:"storageVersion"`
	// Continue is the list continue token after the last page whose objects
	// were all handled. The API server keeps these for a few minutes (etcd
	// compaction); an expired token restarts the list from the beginning,
	// where already current objects cost a no-op write each.
	Continue string    `json:"continue"`
	Counts   Counts    `json:"counts"`
	Updated  time.Time `json:"updated"`
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
	if cp.CRDUID != crd.UID || cp.StorageVersion != storage {
		// Another CRD, or the storage version changed since: start over.
		return nil, nil
	}
	return &cp, nil
}

func (r *run) saveCheckpoint(next string) error {
	r.mu.Lock()
	cp := checkpoint{CRD: r.res.CRD, StorageVersion: r.res.StorageVersion, Continue: next, Counts: r.counts, Updated: time.Now().UTC()}
	r.mu.Unlock()
	cp.CRDUID = r.crdUID
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
