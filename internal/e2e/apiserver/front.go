package apiserver

import (
	"io"
	"net"
	"sync"
)

// front is a TCP forwarder on a fixed loopback address in front of the
// current kube-apiserver of a Restartable server: what a load balancer is
// to a control plane. While no API server is routed, connections are
// accepted and closed at once.
type front struct {
	ln net.Listener

	mu      sync.Mutex
	backend string // host:port of the current kube-apiserver, or ""
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

func newFront() (*front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &front{ln: ln, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

func (f *front) addr() string { return f.ln.Addr().String() }

// route sends new connections to backend (host:port).
func (f *front) route(backend string) {
	f.mu.Lock()
	f.backend = backend
	f.mu.Unlock()
}

// cut stops routing and closes every open connection, both sides.
func (f *front) cut() {
	f.mu.Lock()
	f.backend = ""
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
}

func (f *front) close() {
	_ = f.ln.Close()
	f.cut()
	f.wg.Wait()
}

func (f *front) serve() {
	defer f.wg.Done()
	for {
		client, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		backend := f.backend
		f.mu.Unlock()
		if backend == "" {
			_ = client.Close()
			continue
		}
		server, err := net.Dial("tcp", backend)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !f.track(client, server) {
			continue
		}
		f.wg.Add(2)
		go f.pipe(server, client)
		go f.pipe(client, server)
	}
}

// track registers both ends of a forwarded connection unless the route was
// cut meanwhile (then both are closed and track reports false).
func (f *front) track(client, server net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.backend == "" {
		_ = client.Close()
		_ = server.Close()
		return false
	}
	f.conns[client], f.conns[server] = struct{}{}, struct{}{}
	return true
}

func (f *front) pipe(dst, src net.Conn) {
	defer f.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	f.mu.Lock()
	delete(f.conns, dst)
	delete(f.conns, src)
	f.mu.Unlock()
}
