package apiserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
)

// fatal is the panic value processTB uses for Fatal/FailNow; Start recovers it.
type fatal string

// processTB lets the kube-apiserver and etcd test servers, whose constructors
// take a testing.TB, run outside a test: in TestMain and in the sandbox
// binary. Logs go to a writer, cleanups run in reverse order on
// runCleanups, and Fatal/FailNow panic with a fatal value.
//
// testing.TB has an unexported method, so the interface is embedded (nil);
// every exported method is implemented below, so the nil value is never used.
type processTB struct {
	testing.TB

	name string
	log  io.Writer

	mu       sync.Mutex
	cleanups []func()
	failed   bool
	ctx      context.Context
	cancel   context.CancelFunc
}

func newProcessTB(name string, log io.Writer) *processTB {
	ctx, cancel := context.WithCancel(context.Background())
	return &processTB{name: name, log: log, ctx: ctx, cancel: cancel}
}

func (p *processTB) runCleanups() {
	p.cancel()
	for {
		p.mu.Lock()
		n := len(p.cleanups)
		if n == 0 {
			p.mu.Unlock()
			return
		}
		f := p.cleanups[n-1]
		p.cleanups = p.cleanups[:n-1]
		p.mu.Unlock()
		f()
	}
}

func (p *processTB) Cleanup(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cleanups = append(p.cleanups, f)
}

func (p *processTB) Log(args ...any) { fmt.Fprintln(p.log, args...) }
func (p *processTB) Logf(format string, args ...any) {
	fmt.Fprintf(p.log, format+"\n", args...)
}

func (p *processTB) Error(args ...any) {
	p.setFailed()
	p.Log(args...)
}

func (p *processTB) Errorf(format string, args ...any) {
	p.setFailed()
	p.Logf(format, args...)
}

func (p *processTB) Fatal(args ...any) {
	p.setFailed()
	panic(fatal(fmt.Sprint(args...)))
}

func (p *processTB) Fatalf(format string, args ...any) {
	p.setFailed()
	panic(fatal(fmt.Sprintf(format, args...)))
}

func (p *processTB) Fail() { p.setFailed() }
func (p *processTB) FailNow() {
	p.setFailed()
	panic(fatal("FailNow called"))
}

func (p *processTB) setFailed() {
	p.mu.Lock()
	p.failed = true
	p.mu.Unlock()
}

func (p *processTB) Failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

func (p *processTB) Helper()                       {}
func (p *processTB) Name() string                  { return p.name }
func (p *processTB) Attr(string, string)           {}
func (p *processTB) Output() io.Writer             { return p.log }
func (p *processTB) Context() context.Context      { return p.ctx }
func (p *processTB) Skip(args ...any)              { p.Fatal(append([]any{"skip: "}, args...)...) }
func (p *processTB) Skipf(format string, a ...any) { p.Fatalf("skip: "+format, a...) }
func (p *processTB) SkipNow()                      { p.Fatal("skip") }
func (p *processTB) Skipped() bool                 { return false }

func (p *processTB) Setenv(key, value string) {
	old, had := os.LookupEnv(key)
	os.Setenv(key, value)
	p.Cleanup(func() {
		if had {
			os.Setenv(key, old)
		} else {
			os.Unsetenv(key)
		}
	})
}

func (p *processTB) Chdir(dir string) {
	old, err := os.Getwd()
	if err != nil {
		p.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		p.Fatal(err)
	}
	p.Cleanup(func() { _ = os.Chdir(old) })
}

func (p *processTB) TempDir() string {
	dir, err := os.MkdirTemp("", "crdversion-apiserver-")
	if err != nil {
		p.Fatal(err)
	}
	p.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (p *processTB) ArtifactDir() string { return p.TempDir() }
