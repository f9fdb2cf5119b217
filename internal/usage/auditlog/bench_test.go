package auditlog

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BenchmarkReadFile reads a generated audit log of CRDVERSION_AUDIT_BENCH_MB
// megabytes (default 32; 1024 for the 1 GB measurement of docs/usage.md):
// Metadata-level events shaped like kube-apiserver's, one in ten about the
// resource measured, from 50 clients. It reports MB/s and the peak heap
// (live and unswept objects) while reading, sampled every 5 ms, which must not grow with the
// file.
func BenchmarkReadFile(b *testing.B) {
	mb := 32
	if s := os.Getenv("CRDVERSION_AUDIT_BENCH_MB"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("CRDVERSION_AUDIT_BENCH_MB: %v", err)
		}
		mb = n
	}
	path := filepath.Join(b.TempDir(), "audit.log")
	size := generateLog(b, path, int64(mb)<<20)
	targets := []schema.GroupVersionResource{gvr}
	b.SetBytes(size)
	b.ReportAllocs()
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	runtime.GC()
	wg.Go(func() { samplePeakHeap(&peak, stop) })
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		s, err := ReadFile(path, targets, func(string) bool { return false })
		if err != nil {
			b.Fatal(err)
		}
		if s.Malformed != 0 || len(s.Use[gvr].Clients) == 0 {
			b.Fatalf("malformed %d, clients %d", s.Malformed, len(s.Use[gvr].Clients))
		}
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	// On a shared machine the wall-clock MB/s depends on the load; the
	// CPU time the reads took does not.
	b.ReportMetric(float64(size)*float64(b.N)/(1<<20)/cpu.Seconds(), "MiB/cpu-s")
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// samplePeakHeap records the largest heap (bytes of live and unswept
// objects, runtime/metrics; no stop-the-world) every 5 ms until stop.
func samplePeakHeap(peak *atomic.Uint64, stop <-chan struct{}) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	for {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
		select {
		case <-stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// generateLog writes at least size bytes of audit events to path and
// returns the size written.
func generateLog(b *testing.B, path string, size int64) int64 {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	var written int64
	for i := 0; written < size; i++ {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		var line string
		switch i % 10 {
		case 0:
			line = event(strconv.Itoa(i), "ResponseComplete", "list", fmt.Sprintf("system:serviceaccount:team-%d:app", i%50), fmt.Sprintf("app-%d/1.0 (linux/amd64)", i%50), gvr.Group, gvr.Version, gvr.Resource, "team", "", at)
		case 1:
			line = event(strconv.Itoa(i), "ResponseComplete", "update", "system:apiserver", "kube-apiserver/v1.37.2 (linux/amd64) kubernetes/abc", "coordination.k8s.io", "v1", "leases", "kube-system", "apiserver-abc", at)
		default:
			line = event(strconv.Itoa(i), "ResponseComplete", "get", "system:node:node-1", "kubelet/v1.37.2 (linux/amd64) kubernetes/abc", "", "v1", "pods", "default", fmt.Sprintf("pod-%d", i%1000), at)
		}
		n, err := w.WriteString(line + "\n")
		if err != nil {
			b.Fatal(err)
		}
		written += int64(n)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	return written
}
