package apiserver

import (
	"sync"

	"k8s.io/apiserver/pkg/storage/etcd3/metrics"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	storagefactory "k8s.io/apiserver/pkg/storage/storagebackend/factory"
)

// The metrics registry of kube-apiserver is global to the process, and so
// is its one apiserver_storage_size_bytes collector: every kube-apiserver
// started in the process points it at a monitor cache of its own, which
// dials etcd at the first /metrics read. A kube-apiserver stopped before
// any read leaves behind an empty cache that never closes (k8s.io/apiserver
// server/options.monitorCache closes only a filled one): from then on
// every /metrics read of every other kube-apiserver in the process dials
// the stopped server's etcd and waits out the 20 s dial timeout. While the
// e2e tests' own servers ran in the test process, that made each read of
// the usage check through the shared API server take 20 s once a test had
// stopped one, and time out at the plugin's 30 s under load.
//
// So when a kube-apiserver stops, the collector is pointed at the etcd of
// each server still running.

// storageMonitors are the etcd monitors of the running servers, by
// server.
var storageMonitors = struct {
	sync.Mutex
	of map[*Server]metrics.Monitor
}{of: map[*Server]metrics.Monitor{}}

// monitorStorage adds s, whose kube-apiserver stores in storage, to the
// servers the collector may report, until s stops.
func (s *Server) monitorStorage(storage storagebackend.Config) error {
	m, err := storagefactory.CreateMonitor(storage)
	if err != nil {
		return err
	}
	storageMonitors.Lock()
	storageMonitors.of[s] = m
	storageMonitors.Unlock()
	s.tb.Cleanup(func() {
		storageMonitors.Lock()
		delete(storageMonitors.of, s)
		storageMonitors.Unlock()
		pointStorageMonitor()
		_ = m.Close()
	})
	return nil
}

// pointStorageMonitor points the process's storage size collector at the
// etcd of every running server; call it after a kube-apiserver stopped.
func pointStorageMonitor() {
	storageMonitors.Lock()
	live := make([]metrics.Monitor, 0, len(storageMonitors.of))
	for _, m := range storageMonitors.of {
		live = append(live, m)
	}
	storageMonitors.Unlock()
	metrics.SetStorageMonitorGetter(func() ([]metrics.Monitor, error) { return live, nil })
}
